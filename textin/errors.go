package textin

import (
	"encoding/csv"
	"errors"
	"io"
	"strconv"
	"strings"
)

// The errors of reading text input: a bad record (RowError), a broken CSV record (CSVError), a
// compressed stream that breaks before its end (DecodeError), and the sentinels they wrap.

// ErrRecordTooLong: one record or line is longer than its reader's bound; the record is
// rejected alone (a *RowError or a *CSVError) and reading goes on.
var ErrRecordTooLong = errors.New("record too long")

// ErrQuoteNotClosed: a quoted CSV field is still open at the end of the input, or, on a line
// read again after a broken record, at the end of its line.
var ErrQuoteNotClosed = errors.New("quoted field not closed")

// RowError reports one bad record of a manifest or a legacy export; reading continues after
// it. Manifest readers return it from Next for that row only (the next call continues with
// the following row), pipeline.Validate returns it for a record that breaks a limit, and the legacy
// readers return it for a record they cannot read.
//
// Loc says where the record is. ID is the record's identifier when it could be read (a legacy
// record's ARK; manifest readers leave it "" and return the request ID in the Record). Field
// names the field, element or column at fault ("request_id", "url", "_created") or is "" when
// the record as a whole is bad (a CSV field-count mismatch, broken JSON). Reason is a short
// lowercase explanation naming the limit or the rule. Raw holds the record's source text for
// the reject file (at most 64 KiB, bytes as read, invalid UTF-8 included), or "". Err is an
// underlying error if there is one (e.g. a *csv.ParseError), nil otherwise.
type RowError struct {
	Loc    Location
	ID     string
	Field  string
	Reason string
	Raw    string
	Err    error
}

// Error renders "LOC: ID: field F: REASON: ERR", leaving out empty parts, e.g.
// "dump.txt:98 (record 8): ark:/1/x: field _t: bad target: boom".
func (e *RowError) Error() string {
	var b strings.Builder
	b.WriteString(e.Loc.String())
	if e.ID != "" {
		b.WriteString(": ")
		b.WriteString(e.ID)
	}
	if e.Field != "" {
		b.WriteString(": field ")
		b.WriteString(e.Field)
	}
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the underlying error, if any.
func (e *RowError) Unwrap() error { return e.Err }

// CSVError is one broken CSV record, returned by CSVScanner.Scan. The scanner has skipped it
// already; the next Scan resumes by the rule of CSVScanner.
type CSVError struct {
	// StartLine is the line the broken record starts on; Line the line on which the break was
	// found; Column the 1-based byte in Line at fault (0 when the whole line is).
	StartLine, Line, Column int
	// Err is csv.ErrBareQuote (a quote inside an unquoted field), csv.ErrQuote (a closing quote
	// followed by something other than a comma or the line end), ErrQuoteNotClosed, or
	// ErrRecordTooLong (the record, or one line, is longer than the scanner's bound).
	Err error
	// Max is the scanner's bound in bytes, for ErrRecordTooLong.
	Max int
	// Reread is the number of lines after StartLine that the broken record had read and that
	// are read again, one record per line.
	Reread int
	// Cut reports a quoted field still open where the input ends, when the input's last line
	// has no line end or is the record's first: the file was cut inside this record, whose
	// lines are then not read again.
	Cut bool
}

// Error renders what broke, where, and where reading resumes, e.g. "quote inside an unquoted
// field on line 7, column 12", "quoted field not closed at the end of the file (record starts on
// line 5, file stops on line 9); lines 6 to 9 are read again, one record per line".
func (e *CSVError) Error() string {
	var b []byte
	num := func(n int) { b = strconv.AppendInt(b, int64(n), 10) }
	switch {
	case errors.Is(e.Err, ErrRecordTooLong) && e.StartLine == e.Line:
		b = append(b, "line longer than "...)
		num(e.Max)
		b = append(b, " bytes"...)
	case errors.Is(e.Err, ErrRecordTooLong):
		b = append(b, "record longer than "...)
		num(e.Max)
		b = append(b, " bytes"...)
	case errors.Is(e.Err, ErrQuoteNotClosed) && e.Column > 0:
		b = append(b, "quoted field not closed (a line read again after a broken record must hold its whole record)"...)
	case errors.Is(e.Err, ErrQuoteNotClosed) && e.Cut:
		b = append(b, "file ends inside a quoted field: the file is cut inside this record"...)
	case errors.Is(e.Err, ErrQuoteNotClosed):
		b = append(b, "quoted field not closed at the end of the file"...)
	case errors.Is(e.Err, csv.ErrBareQuote):
		b = append(b, "quote inside an unquoted field"...)
	case errors.Is(e.Err, csv.ErrQuote):
		b = append(b, "unbalanced quote: a closing quote is followed by text"...)
	default:
		b = append(b, e.Err.Error()...)
	}
	switch {
	case e.StartLine != e.Line && errors.Is(e.Err, ErrQuoteNotClosed):
		b = append(b, " (record starts on line "...)
		num(e.StartLine)
		b = append(b, ", file stops on line "...)
		num(e.Line)
		b = append(b, ')')
	case e.StartLine != e.Line:
		b = append(b, " (record starts on line "...)
		num(e.StartLine)
		b = append(b, ", breaks on line "...)
		num(e.Line)
		if e.Column > 0 {
			b = append(b, ", column "...)
			num(e.Column)
		}
		b = append(b, ')')
	case e.Column > 0:
		b = append(b, " on line "...)
		num(e.Line)
		b = append(b, ", column "...)
		num(e.Column)
	default:
		b = append(b, " on line "...)
		num(e.Line)
	}
	switch {
	case e.Reread == 1:
		b = append(b, "; line "...)
		num(e.StartLine + 1)
		b = append(b, " is read again, as a record"...)
	case e.Reread > 1:
		b = append(b, "; lines "...)
		num(e.StartLine + 1)
		b = append(b, " to "...)
		num(e.StartLine + e.Reread)
		b = append(b, " are read again, one record per line"...)
	}
	return string(b)
}

// Unwrap returns Err.
func (e *CSVError) Unwrap() error { return e.Err }

// DecodeError reports a compressed stream that breaks before its end: the file is truncated
// (Err is io.ErrUnexpectedEOF) or corrupt (a bad block, a wrong checksum, a bad member header).
// Everything decoded before the break was handed on; nothing after it can be read.
type DecodeError struct {
	// Compression is the stream's format.
	Compression Compression
	// Lines is the number of whole lines (line ends) decoded before the break.
	Lines int64
	// Err is the decoder's error.
	Err error
}

// Error renders "unexpected EOF in the gzip stream after line 9990".
func (e *DecodeError) Error() string {
	return e.Err.Error() + " in the " + e.Compression.String() + " stream after line " + strconv.FormatInt(e.Lines, 10)
}

// Unwrap returns the decoder's error.
func (e *DecodeError) Unwrap() error { return e.Err }

// Truncated reports whether the stream simply ends early (the file was cut), as opposed to
// holding bytes the decoder rejects.
func (e *DecodeError) Truncated() bool { return errors.Is(e.Err, io.ErrUnexpectedEOF) }

// Finding renders the break for a reject file or a summary, given the number of the last whole
// record read before it (0: none), e.g. "unexpected EOF in the gzip stream after line 9990
// (record 9989): the file is truncated; every record before this point was read, the rest of
// the file cannot be". A corrupt stream says so instead, and that the records before the break
// may hold bytes the checksum, checked only at the end of each gzip member, would have refused.
func (e *DecodeError) Finding(record int) string {
	s := e.Error() + " (record " + strconv.Itoa(record) + ")"
	if e.Truncated() {
		return s + ": the file is truncated; every record before this point was read, the rest of the file cannot be"
	}
	return s + ": the stream is corrupt; every record before this point was read, the rest of the file cannot be, " +
		"and the records read from the damaged part may differ from what was compressed"
}

// AsRowError returns the *RowError in err's chain, if any: a bad record that the reader has
// skipped, after which reading goes on.
func AsRowError(err error) (*RowError, bool) {
	var re *RowError
	ok := errors.As(err, &re)
	return re, ok
}

// AsDecodeError returns the *DecodeError in err's chain, if any: a compressed stream that breaks
// before its end, after which nothing more can be read.
func AsDecodeError(err error) (*DecodeError, bool) {
	var de *DecodeError
	ok := errors.As(err, &de)
	return de, ok
}

// IsRecordTooLong reports whether err is, or wraps, ErrRecordTooLong.
func IsRecordTooLong(err error) bool { return errors.Is(err, ErrRecordTooLong) }
