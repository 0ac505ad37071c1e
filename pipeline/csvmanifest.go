package pipeline

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// csvManifest reads a CSV manifest (RFC 4180 via encoding/csv): a header line
// naming the columns, a UTF-8 BOM and CRLF line ends tolerated, quoted fields
// with embedded newlines. A record whose field count differs from the
// header's, or whose quoting is broken, is a *RowError; a file cut off inside
// a quoted field yields its complete records, then a *RowError naming the
// line where the cut record starts and the line where the file stops.
type csvManifest struct {
	path   string
	closer io.Closer
	cr     *csv.Reader
	lim    *limitReader
	cols   [NumFields]int // column index per Field, -1 when not mapped or absent
	width  int            // number of header columns
	names  [NumFields]string
	rec    int   // records returned so far (data records, header excluded)
	err    error // sticky: io.EOF or a fatal error
	closed bool

	// lookahead, filled after a quote error to tell a truncated file from a
	// stray quote in mid-file.
	pending    bool
	pendFields []string
	pendErr    error
}

// limitReader counts the bytes handed to encoding/csv and fails once more
// than max bytes were read since mark, so an open quote cannot make the
// reader buffer the rest of a huge file.
type limitReader struct {
	r    io.Reader
	n    int64 // total bytes read
	mark int64 // n at the start of the current record
	max  int64
}

// Read implements io.Reader.
func (l *limitReader) Read(p []byte) (int, error) {
	if l.n-l.mark > l.max {
		return 0, ErrRecordTooLong
	}
	k, err := l.r.Read(p)
	l.n += int64(k)
	return k, err
}

func newCSVManifest(path string, src io.Reader, closer io.Closer, m Mapping) (*csvManifest, error) {
	lim := &limitReader{r: src, max: MaxRecordBytes}
	// encoding/csv reuses a *bufio.Reader of at least 4 KiB as is. The BOM
	// is dropped before encoding/csv sees it, else a quoted first header
	// ("\ufeff\"UUID\"") would be a bare-quote error.
	br := bufio.NewReaderSize(lim, 64<<10)
	if b, _ := br.Peek(3); string(b) == "\ufeff" {
		_, _ = br.Discard(3)
	}
	cr := csv.NewReader(br)
	cr.ReuseRecord = true
	cr.FieldsPerRecord = -1 // we check the count against the header ourselves
	r := &csvManifest{path: path, closer: closer, cr: cr, lim: lim}
	header, err := cr.Read()
	if err != nil {
		loc := Location{File: path, Line: 1}
		if errors.Is(err, io.EOF) {
			return nil, &ManifestError{Loc: loc, Op: "header", Err: ErrNoHeader}
		}
		return nil, &ManifestError{Loc: loc, Op: "header", Err: err}
	}
	r.width = len(header)
	for f := range Field(NumFields) {
		r.cols[f] = -1
		name := m.Source(f)
		r.names[f] = name
		if name == "" {
			if f == FieldRequestID {
				return nil, &ManifestError{Loc: Location{File: path, Line: 1}, Op: "header",
					Err: fmt.Errorf("%w: request_id is not mapped", ErrMissingColumn)}
			}
			continue
		}
		for i, h := range header {
			if h == name {
				r.cols[f] = i
				break
			}
		}
		if r.cols[f] < 0 && (f == FieldRequestID || m.Explicit(f)) {
			return nil, &ManifestError{Loc: Location{File: path, Line: 1}, Op: "header",
				Err: fmt.Errorf("%w: no column %q for %s (header has %d columns)", ErrMissingColumn, name, f, len(header))}
		}
	}
	return r, nil
}

// read returns the next raw record, consuming the lookahead first.
func (r *csvManifest) read() ([]string, error) {
	if r.pending {
		r.pending = false
		return r.pendFields, r.pendErr
	}
	r.lim.mark = r.lim.n
	return r.cr.Read()
}

// Next implements Reader.
func (r *csvManifest) Next(ctx context.Context) (Record, error) {
	if r.err != nil {
		return Record{}, r.err
	}
	if err := ctx.Err(); err != nil {
		return Record{}, err
	}
	fields, err := r.read()
	if err != nil {
		err = r.readError(err)
		var re *RowError
		if errors.As(err, &re) {
			return Record{Source: re.Loc}, err
		}
		return Record{}, err
	}
	r.rec++
	line, _ := r.cr.FieldPos(0)
	loc := Location{File: r.path, Line: line, Record: r.rec}
	rec := Record{Source: loc}
	if len(fields) != r.width {
		// Keep the request ID, when the row reaches it, for the reject file.
		if c := r.cols[FieldRequestID]; c < len(fields) && fields[c] != "" {
			rec.Set(FieldRequestID, fields[c])
		}
		return rec, &RowError{Loc: loc,
			Reason: "has " + strconv.Itoa(len(fields)) + " fields, header has " + strconv.Itoa(r.width)}
	}
	for f, c := range r.cols {
		if c >= 0 && fields[c] != "" {
			rec.Set(Field(f), fields[c])
		}
	}
	return rec, nil
}

// readError turns an error from encoding/csv into io.EOF, a *RowError (and
// the reader continues) or a sticky fatal *ManifestError.
func (r *csvManifest) readError(err error) error {
	if errors.Is(err, io.EOF) {
		r.err = io.EOF
		return io.EOF
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) && !errors.Is(err, ErrRecordTooLong) {
		r.rec++
		loc := Location{File: r.path, Line: pe.StartLine, Record: r.rec}
		reason := "malformed CSV"
		if errors.Is(pe.Err, csv.ErrQuote) {
			// Look ahead: if nothing follows, the file was cut off inside
			// this record's quoted field.
			r.lim.mark = r.lim.n
			f, nextErr := r.cr.Read()
			if errors.Is(nextErr, io.EOF) {
				r.err = io.EOF
				return &RowError{Loc: loc, Reason: "file ends inside a quoted field (record starts on line " +
					strconv.Itoa(pe.StartLine) + ", file stops on line " + strconv.Itoa(pe.Line) + ")", Err: pe}
			}
			r.pending, r.pendFields, r.pendErr = true, f, nextErr
			reason = "unbalanced quote"
		} else if errors.Is(pe.Err, csv.ErrBareQuote) {
			reason = "quote inside an unquoted field"
		}
		return &RowError{Loc: loc, Reason: reason, Err: pe}
	}
	// Location of the last good record: the failing one has no position.
	loc := Location{File: r.path, Record: r.rec}
	if errors.Is(err, ErrRecordTooLong) {
		err = fmt.Errorf("%w: a record after record %d exceeds %d bytes (unclosed quote?)", ErrRecordTooLong, r.rec, r.lim.max)
	}
	r.err = &ManifestError{Loc: loc, Op: "read", Err: err}
	return r.err
}

// Close implements Reader.
func (r *csvManifest) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	if r.err == nil {
		r.err = &ManifestError{Loc: Location{File: r.path}, Op: "read", Err: errors.New("reader closed")}
	}
	return r.closer.Close()
}
