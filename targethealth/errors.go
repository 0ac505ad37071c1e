package targethealth

import (
	"errors"
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
