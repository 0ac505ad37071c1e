package textin

import (
	"errors"
	"fmt"
	"io"
	"testing"
)

// TestPredicates: each predicate finds its error through wrapping and refuses another error.
func TestPredicates(t *testing.T) {
	t.Parallel()
	row := &RowError{Loc: Location{File: "m.csv", Line: 3, Record: 2}, Field: "url", Reason: "bad target"}
	if re, ok := AsRowError(fmt.Errorf("reading: %w", row)); !ok || re != row {
		t.Errorf("AsRowError(wrapped) = %v, %v; want the row error", re, ok)
	}
	if re, ok := AsRowError(io.EOF); ok || re != nil {
		t.Errorf("AsRowError(io.EOF) = %v, %v; want nil, false", re, ok)
	}
	if got, want := row.Error(), "m.csv:3 (record 2): field url: bad target"; got != want {
		t.Errorf("RowError.Error() = %q, want %q", got, want)
	}
	dec := &DecodeError{Compression: CompressionGzip, Lines: 9, Err: io.ErrUnexpectedEOF}
	if de, ok := AsDecodeError(fmt.Errorf("m.csv.gz: %w", dec)); !ok || de != dec || !de.Truncated() {
		t.Errorf("AsDecodeError(wrapped) = %v, %v; want the truncated decode error", de, ok)
	}
	if _, ok := AsDecodeError(row); ok {
		t.Error("AsDecodeError(row error) = true, want false")
	}
	long := &CSVError{StartLine: 4, Line: 4, Err: ErrRecordTooLong, Max: 40}
	if !IsRecordTooLong(fmt.Errorf("x: %w", long)) || IsRecordTooLong(errors.New("record too long")) {
		t.Error("IsRecordTooLong: want true for a wrapped CSVError of ErrRecordTooLong only")
	}
	if got, want := long.Error(), "line longer than 40 bytes on line 4"; got != want {
		t.Errorf("CSVError.Error() = %q, want %q", got, want)
	}
}
