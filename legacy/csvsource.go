package legacy

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// tailTracker remembers whether its reader reached the end and the last
// byte it passed, so a CSV reader can tell a final line without its line end
// (a file cut mid-record) from a complete one.
type tailTracker struct {
	r    io.Reader
	eof  bool
	last byte
}

func (t *tailTracker) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		t.last = p[n-1]
	}
	if err == io.EOF {
		t.eof = true
	}
	return n, err
}

type csvRow struct {
	fields []string
	line   int
	err    error
}

// csvSource reads CSV rows with one row of look-ahead, so that the last row
// can be checked for its line end: PostgreSQL COPY and Python's csv module
// end every row with one, so a final row without it was cut.
type csvSource struct {
	name    string
	cr      *csv.Reader
	trk     *tailTracker
	la      csvRow
	started bool
	records int
	done    bool
}

func newCSVSource(name string, br *bufio.Reader) *csvSource {
	trk := &tailTracker{r: br}
	cr := csv.NewReader(trk)
	cr.FieldsPerRecord = -1
	return &csvSource{name: name, cr: cr, trk: trk}
}

func (c *csvSource) read() csvRow {
	f, err := c.cr.Read()
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return csvRow{line: pe.StartLine, err: err}
		}
		return csvRow{err: err}
	}
	line, _ := c.cr.FieldPos(0)
	return csvRow{fields: f, line: line}
}

// row returns the next row and its location. Errors: io.EOF at the end; a
// *RecordError for a malformed row; a *TruncatedError for a final row
// without its line end or an unterminated quote at the end of input; any
// other error is an I/O error.
func (c *csvSource) row() ([]string, Location, error) {
	if c.done {
		return nil, Location{}, io.EOF
	}
	if !c.started {
		c.started = true
		c.la = c.read()
	}
	cur := c.la
	if cur.err == io.EOF {
		c.done = true
		return nil, Location{}, io.EOF
	}
	if cur.err != nil && !isParseError(cur.err) {
		return nil, Location{}, fmt.Errorf("%s: %w", c.name, cur.err)
	}
	c.la = c.read()
	c.records++
	loc := Location{File: c.name, Line: cur.line, Record: c.records}
	atEnd := c.la.err == io.EOF
	if cur.err != nil {
		var pe *csv.ParseError
		errors.As(cur.err, &pe)
		if atEnd && c.trk.eof && errors.Is(pe.Err, csv.ErrQuote) {
			c.done = true
			return nil, loc, &TruncatedError{Loc: Location{File: c.name, Line: pe.Line, Record: c.records},
				Reason: fmt.Sprintf("file ends inside a quoted field of the row that starts on line %d; that row is not yielded", cur.line)}
		}
		return nil, loc, &RecordError{Loc: loc, Field: fmt.Sprintf("column %d", pe.Column), Reason: "malformed CSV row", Err: pe.Err}
	}
	if atEnd && c.trk.eof && c.trk.last != '\n' && c.trk.last != '\r' {
		c.done = true
		return nil, loc, &TruncatedError{Loc: loc,
			Reason: fmt.Sprintf("the last row (line %d) has no line end: the file was cut; that row is not yielded", cur.line)}
	}
	for i, f := range cur.fields {
		if !utf8.ValidString(f) {
			return nil, loc, &RecordError{Loc: loc, Field: fmt.Sprintf("column %d", i+1),
				Reason: "value is not valid UTF-8 (kept raw for the reject file)", Raw: clipRaw(strings.Join(cur.fields, ","))}
		}
	}
	return cur.fields, loc, nil
}

func isParseError(err error) bool {
	var pe *csv.ParseError
	return errors.As(err, &pe)
}

// rawRow renders a row back as one CSV line for RecordError.Raw.
func rawRow(fields []string) string {
	var b strings.Builder
	w := csv.NewWriter(&b)
	_ = w.Write(fields)
	w.Flush()
	return clipRaw(strings.TrimRight(b.String(), "\n"))
}
