package importer

import (
	"errors"
	"fmt"
)

// FaultError is a file whose import stopped on a fault of the database or the connection (a
// server or a Citus worker restarted, a session ended, no answer in time: loader.FaultCause
// names it): its transaction was rolled back, so nothing of the file was imported, and the same
// command imports it whole once the database answers again. Earlier files of the run stay
// imported and are found unchanged by that command.
type FaultError struct {
	Path  string // the file, as given
	Cause string // what happened, in words (loader.FaultCause)
	Err   error  // the database or connection error
}

// Error is the error (which names the file), the fault and what to do.
func (e *FaultError) Error() string {
	return fmt.Sprintf("%v: %s; the file is one transaction, rolled back, so nothing of %s was imported: the same command completes the job",
		e.Err, e.Cause, e.Path)
}

// Unwrap returns the database or connection error.
func (e *FaultError) Unwrap() error { return e.Err }

// IsFault reports whether err wraps a *FaultError: an import that a fault stopped, which the
// same command completes.
func IsFault(err error) bool {
	var fe *FaultError
	return errors.As(err, &fe)
}
