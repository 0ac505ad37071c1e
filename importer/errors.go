package importer

import (
	"errors"
	"fmt"
)

// codeInternal is internal_error, which a Citus coordinator raises for an error a worker raised
// during COPY (the worker's SQLSTATE is not passed on).
const codeInternal = "XX000"

// FaultError is a file whose import stopped on a fault of the database or the connection (a
// server or a Citus worker restarted, a session ended, no answer in time: loader.FaultCause
// names it): its transaction was rolled back, so nothing of the file was imported, and the same
// command imports it whole once the database answers again. Earlier files of the run stay
// imported and are found unchanged by that command.
//
// Uncertain is set for internal_error (XX000) raised by a Citus coordinator for a worker's error
// during COPY: Citus passes the worker's message on but not its SQLSTATE, so a worker session
// that ended (a fault) cannot be told from a row the worker refused; the error then says the
// same command completes the job if the cluster had a fault.
type FaultError struct {
	Path      string // the file, as given
	Cause     string // what happened, in words (loader.FaultCause)
	Err       error  // the database or connection error
	Uncertain bool   // XX000 from a Citus worker's COPY: a fault or a refused row
}

// Error is the error (which names the file), the fault and what to do.
func (e *FaultError) Error() string {
	if e.Uncertain {
		return fmt.Sprintf("%v: %s; the file is one transaction, rolled back, so nothing of %s was imported: if a worker restarted or its session was ended, the same command completes the job",
			e.Err, e.Cause, e.Path)
	}
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
