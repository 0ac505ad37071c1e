package pipeline

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/arkhe-ledger/arkhe/textin"
)

// csvManifest reads a CSV manifest with a CSVScanner: a header line naming the columns, a UTF-8
// BOM at the start of the file tolerated (one elsewhere stays in its value, where Validate
// rejects it), line ends by the rule of NewLineEndReader (LF, CRLF or CR-only),
// quoted fields with embedded newlines. A record whose field count differs from the header's,
// or that the scanner finds broken (bad quoting, longer than the bound), is a *RowError and
// reading resumes by the scanner's rule; a compressed file that breaks (*DecodeError) yields its
// whole records, then one *RowError where it breaks, then io.EOF.
type csvManifest struct {
	path   string
	closer io.Closer
	sc     *textin.CSVScanner
	cols   [NumFields]int // column index per Field, -1 when not mapped or absent
	width  int            // number of header columns
	names  [NumFields]string
	rec    int   // records returned so far (data records, header excluded)
	err    error // sticky: io.EOF or a fatal error
	closed bool
}

// newCSVManifest reads the header of src (text with LF line ends: NewTextReader), whose records
// are bounded by max bytes (≤ 0: MaxRecordBytes).
func newCSVManifest(path string, src io.Reader, closer io.Closer, m Mapping, max int) (*csvManifest, error) {
	// The BOM is dropped before the scanner sees it, else a quoted first header
	// ("\ufeff\"UUID\"") would be a bare-quote error. The scanner reads on from br (a
	// *bufio.Reader of at least 64 KiB is used as it is).
	br := bufio.NewReaderSize(src, 64<<10)
	if b, _ := br.Peek(3); string(b) == "\ufeff" {
		_, _ = br.Discard(3)
	}
	sc := textin.NewCSVScanner(br, max, true)
	r := &csvManifest{path: path, closer: closer, sc: sc}
	header, line, err := sc.Scan()
	if err != nil {
		loc := textin.Location{File: path, Line: line}
		if loc.Line == 0 {
			loc.Line = 1
		}
		if errors.Is(err, io.EOF) {
			return nil, &ManifestError{Loc: loc, Op: "header", Err: ErrNoHeader}
		}
		return nil, &ManifestError{Loc: loc, Op: "header", Err: err}
	}
	header = append([]string(nil), header...)
	r.width = len(header)
	for f := range Field(NumFields) {
		r.cols[f] = -1
		name := m.Source(f)
		r.names[f] = name
		if name == "" {
			if f == FieldRequestID {
				return nil, &ManifestError{Loc: textin.Location{File: path, Line: line}, Op: "header",
					Err: fmt.Errorf("%w: request_id is not mapped", ErrMissingColumn)}
			}
			continue
		}
		for i, h := range header {
			if h != name {
				continue
			}
			if r.cols[f] >= 0 {
				// which of the two values would count cannot be known: neither is chosen
				return nil, &ManifestError{Loc: textin.Location{File: path, Line: line}, Op: "header",
					Err: fmt.Errorf("%w: columns %d and %d are both %q (%s)", ErrDuplicateColumn, r.cols[f]+1, i+1, name, f)}
			}
			r.cols[f] = i
		}
		if r.cols[f] < 0 && (f == FieldRequestID || m.Explicit(f)) {
			return nil, &ManifestError{Loc: textin.Location{File: path, Line: line}, Op: "header",
				Err: fmt.Errorf("%w: no column %q for %s (header has %d columns)", ErrMissingColumn, name, f, len(header))}
		}
	}
	return r, nil
}

// Next implements Reader.
func (r *csvManifest) Next(ctx context.Context) (Record, error) {
	if r.err != nil {
		return Record{}, r.err
	}
	if err := ctx.Err(); err != nil {
		return Record{}, err
	}
	fields, line, err := r.sc.Scan()
	if err != nil {
		err = r.readError(err)
		if re, ok := textin.AsRowError(err); ok {
			return Record{Source: re.Loc}, err
		}
		return Record{}, err
	}
	r.rec++
	loc := textin.Location{File: r.path, Line: line, Record: r.rec}
	rec := Record{Source: loc}
	if len(fields) != r.width {
		// Keep the request ID, when the row reaches it, for the reject file.
		if c := r.cols[FieldRequestID]; c < len(fields) && fields[c] != "" {
			rec.Set(FieldRequestID, fields[c])
		}
		return rec, &textin.RowError{Loc: loc,
			Reason: "has " + strconv.Itoa(len(fields)) + " fields, header has " + strconv.Itoa(r.width)}
	}
	for f, c := range r.cols {
		if c >= 0 && fields[c] != "" {
			rec.Set(Field(f), fields[c])
		}
	}
	return rec, nil
}

// readError turns a scanner error into io.EOF, a *RowError (and the reader continues), a
// *RowError for a compressed stream that breaks (then io.EOF), or a sticky fatal
// *ManifestError.
func (r *csvManifest) readError(err error) error {
	if errors.Is(err, io.EOF) {
		r.err = io.EOF
		return io.EOF
	}
	var ce *textin.CSVError
	if errors.As(err, &ce) {
		r.rec++
		return &textin.RowError{Loc: textin.Location{File: r.path, Line: ce.StartLine, Record: r.rec}, Reason: ce.Error()}
	}
	if de, ok := textin.AsDecodeError(err); ok {
		r.err = io.EOF
		r.rec++
		return &textin.RowError{Loc: textin.Location{File: r.path, Line: int(de.Lines) + 1, Record: r.rec}, Reason: de.Finding(r.rec - 1)}
	}
	r.err = &ManifestError{Loc: textin.Location{File: r.path, Line: r.sc.Line(), Record: r.rec}, Op: "read", Err: err}
	return r.err
}

// Close implements Reader.
func (r *csvManifest) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	if r.err == nil {
		r.err = &ManifestError{Loc: textin.Location{File: r.path}, Op: "read", Err: errors.New("reader closed")}
	}
	return r.closer.Close()
}
