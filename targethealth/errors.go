package targethealth

import (
	"errors"

	"github.com/arkhe-ledger/arkhe/linkcheck"
)

// SelectionError reports a selection or an exclusion naming a manager or shoulder the
// ledger does not hold, or one that is ambiguous. Rule says which, in words.
type SelectionError struct {
	What string // e.g. `manager "m1"`
	Rule string
}

// Error returns "What: Rule".
func (e *SelectionError) Error() string { return e.What + ": " + e.Rule }

// ErrSinkClosed is returned by Record after Close.
var ErrSinkClosed = errors.New("link check sink is closed")

// BusyError reports that another link-check run holds the ledger's link-check lock.
type BusyError struct{}

// Error says what to do.
func (*BusyError) Error() string {
	return "another arkhe linkcheck run is working on this ledger; runs never overlap (each would count the other's failures): try again when it ends"
}

// RefusedBeforeRun reports whether err refused a run before any target was read or any check
// recorded: a *linkcheck.ConfigError, a *BusyError or a *SelectionError. Nothing of such a run
// is in the ledger, not even its audit event.
func RefusedBeforeRun(err error) bool {
	var ce *linkcheck.ConfigError
	var busy *BusyError
	var sel *SelectionError
	return errors.As(err, &ce) || errors.As(err, &busy) || errors.As(err, &sel)
}
