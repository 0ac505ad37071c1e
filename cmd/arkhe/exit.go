package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/loader"
)

// Exit codes, for every command.
const (
	exitDone     = 0 // done
	exitFindings = 1 // done with rejects or findings
	exitCannot   = 2 // could not run
)

// exitError carries an exit code out of a command action; exitStatus turns it into the process
// status.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// withFindings marks a command that finished but has rejects or findings (exit 1). msg may be "".
func withFindings(msg string) error {
	if msg == "" {
		return &exitError{code: exitFindings}
	}
	return &exitError{code: exitFindings, err: errors.New(msg)}
}

// usageErr is a command line arkhe cannot run: an unknown command or flag, a missing or bad
// argument. Its text names the command ("mint: missing --client").
type usageErr struct{ err error }

func (e *usageErr) Error() string { return e.err.Error() }
func (e *usageErr) Unwrap() error { return e.err }

// usagef returns a *usageErr with the formatted text (fmt.Errorf: %w wraps).
func usagef(format string, args ...any) error { return &usageErr{err: fmt.Errorf(format, args...)} }

// interruptedErr is a run stopped by a signal, with what became of its work (e.g. "what was
// committed stays, and the same command completes the job").
type interruptedErr struct {
	what string // "mint"
	kept string
	err  error
}

func (e *interruptedErr) Error() string {
	return fmt.Sprintf("%s interrupted (%v); %s", e.what, e.err, e.kept)
}
func (e *interruptedErr) Unwrap() error { return e.err }

// interrupted returns err as an *interruptedErr of what when ctx was cancelled (a signal), else
// err unchanged.
func interrupted(ctx context.Context, what, kept string, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	return &interruptedErr{what: what, kept: kept, err: err}
}

// exitRule is one row of exitStatus's table: the errors match selects get code, and hint (when
// not "") is added to their message.
type exitRule struct {
	match func(error) bool
	code  int
	hint  string
}

// exitRules is the table exitStatus reads, first match wins.
func exitRules() []exitRule {
	return []exitRule{
		// a server that cannot load its own files (undefined_file: a library of other binaries
		// than it runs, after a package upgrade under it)
		{match: func(err error) bool { return ledger.SQLState(err) == "58P01" }, code: exitCannot,
			hint: "were the PostgreSQL packages upgraded under the running server? `arkhe --version` compares the running and installed versions; " +
				"the embedded cluster restarts on the next command, a server of your own needs a restart"},
		{match: isUsage, code: exitCannot},
		{match: isRefusal, code: exitCannot},
	}
}

// isUsage reports whether err is a usage error.
func isUsage(err error) bool {
	var u *usageErr
	return errors.As(err, &u)
}

// isRefusal reports whether err is one of the ledger's refusals, each naming its rule: a
// registration, a mint out of reach, a schema this arkhe does not know, a missing role, a
// link-check run refused before it checked anything.
func isRefusal(err error) bool {
	var (
		reg    *ledger.RegistrationError
		schema *ledger.SchemaError
		role   *ledger.RoleError
	)
	return errors.As(err, &reg) || errors.As(err, &schema) || errors.As(err, &role) || isReach(err) || isLinkCheckRefusal(err)
}

// isReach reports whether err is a mint refused for the client's reach, scope or quota (the mint
// job's error type, named here only).
func isReach(err error) bool { return loader.IsReachRefused(err) }

// exitStatus maps what a command returned to the process's exit status and the one line it
// prints on stderr ("" for none, else without the "arkhe: " prefix run adds). It is the only
// place that picks an exit code:
//
//   - nil: 0.
//   - an *exitError (withFindings: 1, --version: 0): its code, and its error's text if any.
//   - a run stopped by a signal (ctx cancelled): 2, "interrupted: " before the text unless the
//     command said what became of its work (interrupted).
//   - an error exitRules matches: that rule's code, the error's text and the rule's hint.
//   - any other error: 2 (could not run), the error's text.
//
// Exit 2 means nothing of the run is to be trusted as done: a usage error, an input or output
// that cannot be opened, a ledger out of reach or refusing (a registration, a mint, a role), an
// interrupted run.
func exitStatus(ctx context.Context, err error) (int, string) {
	if err == nil {
		return exitDone, ""
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err == nil {
			return ee.code, ""
		}
		return ee.code, ee.err.Error()
	}
	var ie *interruptedErr
	if ctx.Err() != nil && !errors.As(err, &ie) {
		return exitCannot, "interrupted: " + err.Error()
	}
	for _, r := range exitRules() {
		if r.match(err) {
			msg := err.Error()
			if r.hint != "" && !strings.Contains(msg, r.hint) {
				msg += "; " + r.hint
			}
			return r.code, msg
		}
	}
	return exitCannot, err.Error()
}
