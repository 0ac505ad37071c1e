package loader

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/arkhe-ledger/arkhe/textin"
)

// The errors of a bulk write: those that stop a mint run (ReachError, FaultError) and those that
// reject one row of it into the reject file (CollisionError, ReceiptConflictError,
// FirstRejectedError, QuotaError, ServerRefusalError), with the predicates callers branch on.

// IsReachRefused reports whether err is or wraps a *ReachError: the run's client may not mint
// where it asked, by its registration (reach comes from the client's registration only, and the
// ledger refuses a batch outside it, SQLSTATE AK004). Nothing the refusal concerns was written.
func IsReachRefused(err error) bool {
	var re *ReachError
	return errors.As(err, &re)
}

// SafeToRerun reports whether running the same command again completes the job err stopped: a
// *FaultError, a batch that kept failing on faults past RetryPolicy.For. What was committed
// stays, and the rerun replays it by its receipts instead of minting it again.
func SafeToRerun(err error) bool {
	var fe *FaultError
	return errors.As(err, &fe)
}

// ReachError is a refusal of a mint run naming the rule; nothing was written.
// Err is the database's refusal when the ledger's own reach trigger (SQLSTATE AK004) refused a
// batch during the run.
type ReachError struct {
	ClientID string
	Shoulder string // "NAAN/x9" form when known
	Rule     string
	Err      error
}

// Error renders "mint refused for client C[ in shoulder S]: RULE[: ERR]".
func (e *ReachError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "mint refused for client %q", e.ClientID)
	if e.Shoulder != "" {
		b.WriteString(" in shoulder " + e.Shoulder)
	}
	b.WriteString(": " + e.Rule)
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the database error, if any.
func (e *ReachError) Unwrap() error { return e.Err }

// CollisionError is a row that drew MaxDraws blades, each of which named an ARK that exists (or
// was drawn for another row of its batch): the row is rejected, never minted over an existing
// ARK. A rising count is the sign a shoulder is filling up.
type CollisionError struct {
	Shoulder string // "NAAN/x9"
	Draws    int
	Last     string // the last name drawn, printed form
}

// Error says how many draws collided and suggests a longer blade.
func (e *CollisionError) Error() string {
	return fmt.Sprintf("no free name after %d draws in shoulder %s (last %s): every draw named an existing ARK; the namespace is filling up, use a shoulder with longer blades",
		e.Draws, e.Shoulder, e.Last)
}

// ReceiptConflictError is a request ID that already has a receipt, or an earlier occurrence in
// the same manifest, with a different payload: the row is rejected and
// the ledger is untouched. ARK is the ARK the request ID got (printed form); First is the
// location of the earlier occurrence in this run, zero when the receipt predates the run.
//
// Fields names the manifest fields ("url", "who", "what", "when", "commitment") whose values
// differ from the existing ARK's current values, when the receipt predates the run; it is empty
// when none differs (the ARK was changed since it was minted: only the payload digest tells).
type ReceiptConflictError struct {
	RequestID string
	ARK       string
	First     textin.Location
	Fields    []string
}

// Error names the existing ARK.
func (e *ReceiptConflictError) Error() string {
	if e.First.File != "" {
		return fmt.Sprintf("request ID %q occurs earlier (%s) with a different payload; the first occurrence got %s", e.RequestID, e.First, e.ARK)
	}
	if len(e.Fields) > 0 {
		verb := "differ"
		if len(e.Fields) == 1 {
			verb = "differs"
		}
		return fmt.Sprintf("request ID %q was minted before as %s with a different payload (%s %s from the ARK's); a request ID is never reused", e.RequestID, e.ARK, strings.Join(e.Fields, ", "), verb)
	}
	return fmt.Sprintf("request ID %q was minted before as %s with a different payload (its payload digest differs from the receipt's; the ARK was changed since); a request ID is never reused", e.RequestID, e.ARK)
}

// FirstRejectedError is a later occurrence of a request ID whose first occurrence in the
// manifest was rejected: it is rejected too (only the first occurrence mints).
type FirstRejectedError struct {
	RequestID string
	First     textin.Location
}

// Error names the first occurrence.
func (e *FirstRejectedError) Error() string {
	return fmt.Sprintf("request ID %q: its first occurrence (%s) was rejected, so this one is not minted either", e.RequestID, e.First)
}

// QuotaError is a row not minted because its manager's daily quota is used up;
// the same command mints it the next UTC day.
type QuotaError struct {
	Manager string
	Quota   int64
}

// Error names the quota.
func (e *QuotaError) Error() string {
	return fmt.Sprintf("daily quota of %d new ARKs for manager %q reached (new mints per manager per UTC day, replays excluded); re-run the same command after 00:00 UTC to mint the rest", e.Quota, e.Manager)
}

// ServerRefusalError is a row the server refused during COPY although it passed validation
// (e.g. SQLSTATE 22021 bad encoding, 22P05 untranslatable character, 54000 a value too large to
// index). The row is rejected and the rest of its batch re-sent.
type ServerRefusalError struct {
	Code    string
	Message string
	Column  string
}

// Error renders the SQLSTATE and the server's message.
func (e *ServerRefusalError) Error() string {
	s := "the server refused the row: SQLSTATE " + e.Code + ": " + e.Message
	if e.Column != "" {
		s += " (column " + e.Column + ")"
	}
	return s
}

// quotaExceeded is returned by a batch commit when the quota counter passed the quota (a
// concurrent run used part of it); the batch is rolled back and retried with fewer rows.
type quotaExceeded struct{ minted int64 }

// Error implements error.
func (e *quotaExceeded) Error() string {
	return fmt.Sprintf("quota counter reached %d", e.minted)
}

// FaultError stops a run whose batch kept failing on faults for RetryPolicy.For. What was
// committed stays; running the same command again completes the job.
type FaultError struct {
	Cause    string
	Err      error
	Attempts int
	For      time.Duration // the retry limit
}

// Error names the fault, the retries and what to do.
func (e *FaultError) Error() string {
	if e.For < 0 {
		return fmt.Sprintf("%s: %v (retries are off); what was committed stays, and the same command completes the job", e.Cause, e.Err)
	}
	return fmt.Sprintf("%s: %v; gave up after %d attempts in %s (the retry limit); what was committed stays, and the same command completes the job",
		e.Cause, e.Err, e.Attempts, e.For)
}

// Unwrap returns the last attempt's error.
func (e *FaultError) Unwrap() error { return e.Err }

// errCopyClosed is what a Read after close returns.
var errCopyClosed = errors.New("copy source closed")

// unexplainedWorkerError is a batch Citus refused with a worker's error (XX000) that no row of
// the batch explains: the batch conflicted with nothing, the client's reach is unchanged, and
// every row, re-sent alone, is taken. What ended it was the worker's session (terminated,
// restarted), not the data, so the batch is retried as after a fault (faultOf).
type unexplainedWorkerError struct {
	Err *pgconn.PgError // the batch's error as the coordinator reported it
}

func (e *unexplainedWorkerError) Error() string {
	return fmt.Sprintf("mint batch: a Citus worker refused it, and no row alone: %v", e.Err)
}

func (e *unexplainedWorkerError) Unwrap() error { return e.Err }
