package export

import (
	"errors"
	"fmt"
)

// ErrBadWatermark is wrapped by ParseWatermark for text that is not a watermark an export
// printed (two decimal counters joined by a colon, "A:C").
var ErrBadWatermark = errors.New("not an export watermark (A:C, as an export prints it)")

// ErrUnknownFormat is wrapped by ParseFormat for a name that is not one of the export formats.
var ErrUnknownFormat = errors.New("unknown export format (nginx, apache, n2t-dump or jsonl)")

// UnwritableError is returned when a value of an ARK cannot be written in a format without
// changing it (a target holding a line break, a space in an Apache map): the export stops and
// nothing is written, since a rule silently left out would stop that ARK resolving.
type UnwritableError struct {
	Format Format
	ARK    string // the ARK, ark:NAAN/name
	Field  string // the column: ark, target, redirect
	Reason string
}

// Error implements error: "export FORMAT: ARK: FIELD cannot be written: REASON".
func (e *UnwritableError) Error() string {
	return fmt.Sprintf("export %s: %s: %s cannot be written: %s", e.Format, e.ARK, e.Field, e.Reason)
}

// IsUnwritable reports whether err is (or wraps) an *UnwritableError.
func IsUnwritable(err error) bool {
	var u *UnwritableError
	return errors.As(err, &u)
}
