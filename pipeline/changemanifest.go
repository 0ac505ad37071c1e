package pipeline

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"

	"github.com/arkhe-ledger/arkhe/textin"
)

// This file reads change manifests: CSV, JSON Lines and Parquet, the text formats optionally
// gzip- or xz-compressed, by the extensions mint reads (DetectFormat) plus .xz. Unlike
// a mint manifest, a present column with an empty value (an empty CSV cell, a JSON "" or null, a
// Parquet NULL or "") is kept as present and empty, because an update empties that value. Memory
// is bounded whatever the file: a CSV record and a JSON line are at most
// MaxRecordBytes (a longer one is a reject and reading goes on after it); Parquet is
// read one row at a time. A UTF-8 BOM at the start of a text file is dropped (one elsewhere
// stays). A broken row is a reject naming file, line and field: a CSV record whose field count
// differs from the header's, a value that is not valid UTF-8 (never replaced), a JSON line giving
// a key twice; a compressed file that breaks yields its whole rows, then one reject where it
// stops, then io.EOF. Only a file that cannot be read further stops the run (*ManifestError).

// changeFormat is a change manifest's format and compression, from its name.
func changeFormat(path string) (Format, textin.Compression) {
	name := strings.ToLower(path)
	if strings.HasSuffix(name, ".xz") {
		f, gz := DetectFormat(strings.TrimSuffix(name, ".xz"))
		if f == FormatParquet || gz {
			return FormatUnknown, textin.CompressionNone
		}
		return f, textin.CompressionXZ
	}
	f, gz := DetectFormat(name)
	if gz {
		return f, textin.CompressionGzip
	}
	return f, textin.CompressionNone
}

// ChangeReader streams the rows of one change manifest as named columns. Memory use is
// independent of the file's size. A ChangeReader is used by one goroutine at a time.
type ChangeReader struct {
	path   string
	f      *os.File
	m      map[string]string // column -> the manifest's column
	need   []string
	record int

	csv   *textin.CSVScanner
	cols  map[string]int // change column -> CSV column index
	width int            // the CSV header's number of columns
	done  bool           // a compressed stream broke: the rest is io.EOF

	js jscan // the JSON Lines lexer of the mint manifest reader

	lines *bufio.Reader
	line  int
	long  []byte

	pq *parquetChanges

	counted *countingReader // the text formats' octets read from the file
	size    int64
}

// OpenChangeManifest opens the change manifest at path. m renames columns: column name -> the
// manifest's name for it (a column m does not name is read under its own name). need lists
// columns of which the header (CSV) or schema (Parquet) must hold at least one; a JSON line
// lacking all of them is the reader's caller's to reject. Errors are *ManifestError (wrapping
// ErrUnknownFormat, ErrNoHeader, ErrMissingColumn, ErrDuplicateColumn, the *fs.PathError of an unreadable file, or
// the Parquet reader's error).
func OpenChangeManifest(path string, m map[string]string, need ...string) (*ChangeReader, error) {
	format, comp := changeFormat(path)
	if format == FormatUnknown {
		return nil, &ManifestError{Loc: textin.Location{File: path}, Op: "open",
			Err: fmt.Errorf("%w: want .csv, .jsonl, .ndjson or .json (each optionally .gz or .xz), or .parquet", ErrUnknownFormat)}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, &ManifestError{Loc: textin.Location{File: path}, Op: "open", Err: err}
	}
	r := &ChangeReader{path: path, f: f, m: m, need: need}
	fail := func(loc textin.Location, op string, err error) (*ChangeReader, error) {
		_ = f.Close()
		return nil, &ManifestError{Loc: loc, Op: op, Err: err}
	}
	if format == FormatParquet {
		pq, err := openParquetChanges(f, r.column)
		if err != nil {
			return fail(textin.Location{File: path}, "open", err)
		}
		r.pq = pq
		if err := r.checkNames(pq.cols); err != nil {
			_ = f.Close()
			return nil, err
		}
		return r, nil
	}
	if st, err := f.Stat(); err == nil {
		r.size = st.Size()
	}
	r.counted = &countingReader{r: f}
	src, err := textin.NewTextReader(r.counted, comp)
	if err != nil {
		return fail(textin.Location{File: path}, "open", err)
	}
	// A UTF-8 BOM at the start of the file is dropped before the scanner sees it, as the mint
	// manifest readers drop it (one elsewhere stays in its value).
	br := bufio.NewReaderSize(src, 64<<10)
	if b, _ := br.Peek(3); string(b) == "\ufeff" {
		_, _ = br.Discard(3)
	}
	if format == FormatJSONLines {
		r.lines = br
		return r, nil
	}
	r.csv = textin.NewCSVScanner(br, MaxRecordBytes, true)
	head, _, err := r.csv.Scan()
	if errors.Is(err, io.EOF) {
		return fail(textin.Location{File: path, Line: 1}, "read the header", ErrNoHeader)
	}
	if err != nil {
		return fail(textin.Location{File: path, Line: 1}, "read the header", err)
	}
	r.cols = map[string]int{}
	r.width = len(head)
	for i, h := range head {
		if !utf8.ValidString(h) {
			return fail(textin.Location{File: path, Line: 1}, "read the header",
				fmt.Errorf("column %d: invalid UTF-8 at octet %d", i+1, invalidUTF8At(h)+1))
		}
		h = strings.TrimSpace(h)
		c := r.column(h)
		if j, ok := r.cols[c]; ok {
			// which of the two values would count cannot be known: neither is chosen
			_ = f.Close()
			return nil, &ManifestError{Loc: textin.Location{File: path, Line: 1}, Op: "read the header",
				Err: fmt.Errorf("%w: columns %d and %d both give %s", ErrDuplicateColumn, j+1, i+1, c)}
		}
		r.cols[c] = i
	}
	if err := r.checkNames(r.cols); err != nil {
		_ = f.Close()
		return nil, err
	}
	return r, nil
}

// column returns the change column the manifest's column name stands for under the --map.
func (r *ChangeReader) column(name string) string {
	for k, v := range r.m {
		if v == name {
			return k
		}
	}
	return name
}

func (r *ChangeReader) checkNames(cols map[string]int) error {
	if len(r.need) == 0 {
		return nil
	}
	for _, n := range r.need {
		if _, ok := cols[n]; ok {
			return nil
		}
	}
	return &ManifestError{Loc: textin.Location{File: r.path, Line: 1}, Op: "read the header",
		Err: fmt.Errorf("%w: no column %s", ErrMissingColumn, strings.Join(r.need, " or "))}
}

// Close closes the manifest.
func (r *ChangeReader) Close() error { return r.f.Close() }

// Position returns how far reading has got, in octets of the file as stored (for Parquet, its
// size in proportion to the rows read), for a progress display; the file's size is its end.
func (r *ChangeReader) Position() int64 {
	if r.pq != nil {
		if r.pq.total <= 0 {
			return 0
		}
		return r.pq.size * int64(r.record) / r.pq.total
	}
	return r.counted.n
}

// ChangeRow is one row of a change manifest: where it is and its columns (name -> value, the
// columns it holds only, empty values included).
type ChangeRow struct {
	Loc  textin.Location
	Cols map[string]string
}

// Next returns the next row, or the row's location and the reason it cannot be read (a broken
// CSV record or one with the wrong field count, a bad JSON line or one giving a key twice, a
// value that is no string or null, invalid UTF-8 naming the field), as a *textin.RowError with
// the row, after which reading goes on; a compressed stream that breaks is one such reject at
// the line where it stops, then io.EOF; io.EOF at the end; any other error is fatal
// (*ManifestError).
func (r *ChangeReader) Next() (ChangeRow, *textin.RowError, error) {
	var row ChangeRow
	get := map[string]string{}
	if r.done {
		return row, nil, io.EOF
	}
	switch {
	case r.csv != nil:
		rec, line, err := r.csv.Scan()
		if errors.Is(err, io.EOF) {
			return row, nil, io.EOF
		}
		r.record++
		row.Loc = textin.Location{File: r.path, Line: line, Record: r.record}
		var ce *textin.CSVError
		if errors.As(err, &ce) {
			row.Loc.Line = ce.StartLine
			return row, &textin.RowError{Loc: row.Loc, Reason: "bad CSV", Err: err}, nil
		}
		if de, ok := textin.AsDecodeError(err); ok {
			return r.broken(de)
		}
		if err != nil {
			return row, nil, &ManifestError{Loc: row.Loc, Op: "read", Err: err}
		}
		if len(rec) != r.width {
			return row, &textin.RowError{Loc: row.Loc,
				Reason: "has " + strconv.Itoa(len(rec)) + " fields, header has " + strconv.Itoa(r.width)}, nil
		}
		for name, i := range r.cols {
			if !utf8.ValidString(rec[i]) {
				return row, &textin.RowError{Loc: row.Loc, Field: name,
					Reason: "invalid UTF-8 at octet " + strconv.Itoa(invalidUTF8At(rec[i])+1)}, nil
			}
			get[name] = rec[i]
		}
	case r.lines != nil:
		text, rerr, err := r.jsonLine()
		if de, ok := textin.AsDecodeError(err); ok {
			return r.broken(de)
		}
		if err != nil {
			return row, nil, err
		}
		r.record++
		row.Loc = textin.Location{File: r.path, Line: r.line, Record: r.record}
		if rerr != "" {
			return row, &textin.RowError{Loc: row.Loc, Reason: rerr}, nil
		}
		if re := r.js.columns(text, r.column, get); re != nil {
			re.Loc = row.Loc
			return row, re, nil
		}
	default:
		vals, err := r.pq.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return row, nil, io.EOF
			}
			return row, nil, &ManifestError{Loc: textin.Location{File: r.path, Record: r.record + 1}, Op: "read", Err: err}
		}
		r.record++
		row.Loc = textin.Location{File: r.path, Record: r.record}
		for name, v := range vals {
			if !utf8.ValidString(v) {
				return row, &textin.RowError{Loc: row.Loc, Field: name,
					Reason: "invalid UTF-8 at octet " + strconv.Itoa(invalidUTF8At(v)+1)}, nil
			}
		}
		get = vals
	}
	row.Cols = get
	return row, nil, nil
}

// broken reports a compressed stream that breaks: one reject where it stops (after the whole
// rows before it), as the mint manifest readers report it; every later call returns io.EOF.
func (r *ChangeReader) broken(de *textin.DecodeError) (ChangeRow, *textin.RowError, error) {
	r.done = true
	if r.csv == nil { // the CSV branch has counted the record already
		r.record++
	}
	loc := textin.Location{File: r.path, Line: int(de.Lines) + 1, Record: r.record}
	return ChangeRow{Loc: loc}, &textin.RowError{Loc: loc, Reason: de.Finding(r.record - 1)}, nil
}

// columns scans line, one JSON object whose values are strings or null, into get (column(key)
// -> value, null as ""), by the lexer of the mint manifest reader: a key given twice, a value
// of another type, a lone UTF-16 surrogate, invalid UTF-8 in a key or a value (never replaced)
// or a syntax error is the reject (its Loc unset; Field the key, when known).
func (s *jscan) columns(line []byte, column func(string) string, get map[string]string) *textin.RowError {
	s.data, s.pos, s.depth = line, 0, 0
	s.ws()
	if s.pos >= len(s.data) || s.data[s.pos] != '{' {
		return &textin.RowError{Reason: "line is not a JSON object"}
	}
	s.pos++
	s.ws()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
	} else {
		for {
			s.ws()
			if s.pos >= len(s.data) || s.data[s.pos] != '"' {
				return s.syntax("want a string key").rowError()
			}
			key, je := s.str(nil, true)
			if je != nil {
				return je.rowError()
			}
			k := string(key)
			if !utf8.ValidString(k) {
				return &textin.RowError{Reason: "a key: invalid UTF-8 at octet " + strconv.Itoa(invalidUTF8At(k)+1)}
			}
			s.ws()
			if s.pos >= len(s.data) || s.data[s.pos] != ':' {
				return s.syntax("want ':' after key").rowError()
			}
			s.pos++
			s.ws()
			name := column(k)
			if _, dup := get[name]; dup {
				return &textin.RowError{Field: k, Reason: "key " + strconv.Quote(k) + " given twice"}
			}
			switch {
			case s.pos < len(s.data) && s.data[s.pos] == '"':
				v, je := s.str(nil, true)
				if je != nil {
					re := je.rowError()
					re.Field = k
					return re
				}
				if !utf8.Valid(v) {
					return &textin.RowError{Field: k, Reason: "invalid UTF-8 at octet " + strconv.Itoa(invalidUTF8At(string(v))+1)}
				}
				get[name] = string(v)
			case bytes.HasPrefix(s.data[s.pos:], []byte("null")):
				s.pos += 4
				get[name] = ""
			default:
				if je := s.value(nil); je != nil {
					return je.rowError()
				}
				return &textin.RowError{Field: k, Reason: "a value must be a string or null"}
			}
			s.ws()
			if s.pos >= len(s.data) {
				return s.syntax("unexpected end of line in object").rowError()
			}
			if s.data[s.pos] == '}' {
				s.pos++
				break
			}
			if s.data[s.pos] != ',' {
				return s.syntax("want ',' or '}'").rowError()
			}
			s.pos++
		}
	}
	s.ws()
	if s.pos != len(s.data) {
		return s.syntax("data after the JSON object").rowError()
	}
	return nil
}

// jsonLine returns the next non-blank line of a JSON Lines manifest, or the reason it is
// rejected (longer than MaxRecordBytes: skipped to its end); io.EOF at the end.
func (r *ChangeReader) jsonLine() ([]byte, string, error) {
	for {
		r.long = r.long[:0]
		tooLong := false
		var err error
		for {
			var part []byte
			part, err = r.lines.ReadSlice('\n')
			if !tooLong {
				if len(r.long)+len(part) > MaxRecordBytes+1 {
					tooLong, r.long = true, r.long[:0]
				} else {
					r.long = textin.AppendDoubling(r.long, part, MaxRecordBytes+2)
				}
			}
			if !errors.Is(err, bufio.ErrBufferFull) {
				break
			}
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, "", &ManifestError{Loc: textin.Location{File: r.path, Line: r.line + 1}, Op: "read", Err: err}
		}
		if len(r.long) == 0 && !tooLong && errors.Is(err, io.EOF) {
			return nil, "", io.EOF
		}
		r.line++
		if tooLong {
			return nil, fmt.Sprintf("line longer than %d bytes", MaxRecordBytes), nil
		}
		text := bytes.TrimSpace(r.long)
		if len(text) == 0 {
			if errors.Is(err, io.EOF) {
				return nil, "", io.EOF
			}
			continue
		}
		if cap(r.long) > 4<<20 {
			text = bytes.Clone(text)
			r.long = nil // keep no huge buffer after one huge line
		}
		return text, "", nil
	}
}

// parquetChanges reads the change columns of a Parquet manifest one row at a time. A column is
// a top-level leaf column named as a change column (after the --map) that does not repeat;
// values become text by the mint manifest reader's conversions (parquetConversion: unsigned
// integers as unsigned, DECIMAL refused), and the footer is checked as it checks it
// (checkParquetFooter). A NULL or "" value is present and empty.
type parquetChanges struct {
	groups []parquet.RowGroup
	group  int
	rows   parquet.Rows
	buf    []parquet.Row
	cols   map[string]int // change column -> leaf column index
	conv   map[string]parquetConv
	size   int64 // of the file
	total  int64 // rows, from the footer
}

func openParquetChanges(f *os.File, column func(string) string) (p *parquetChanges, err error) {
	defer func() { // parquet-go panics on some damaged files
		if v := recover(); v != nil {
			err = fmt.Errorf("parquet: the file is damaged (the Parquet reader failed: %v)", v)
		}
	}()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := checkParquetFooter(f, st.Size()); err != nil {
		return nil, err
	}
	pf, err := parquet.OpenFile(f, st.Size(), parquet.SkipBloomFilters(true), parquet.SkipPageIndex(true))
	if err != nil {
		return nil, fmt.Errorf("parquet: %w", err)
	}
	p = &parquetChanges{groups: pf.RowGroups(), buf: make([]parquet.Row, 1), cols: map[string]int{}, conv: map[string]parquetConv{}, size: st.Size(), total: pf.NumRows()}
	for _, fl := range pf.Schema().Fields() {
		name := column(fl.Name())
		if !fl.Leaf() {
			continue
		}
		leaf, ok := pf.Schema().Lookup(fl.Name())
		if !ok || leaf.MaxRepetitionLevel > 0 {
			continue
		}
		conv, err := parquetConversion(fl.Type())
		if err != nil {
			return nil, fmt.Errorf("parquet column %q: %w", fl.Name(), err)
		}
		p.cols[name] = leaf.ColumnIndex
		p.conv[name] = conv
	}
	return p, nil
}

// next returns the present change columns of the next row; io.EOF at the end.
func (p *parquetChanges) next() (vals map[string]string, err error) {
	defer func() {
		if v := recover(); v != nil {
			p.rows = nil
			err = fmt.Errorf("parquet: the file is damaged (the Parquet reader failed: %v)", v)
		}
	}()
	for {
		if p.rows == nil {
			if p.group >= len(p.groups) {
				return nil, io.EOF
			}
			p.rows = p.groups[p.group].Rows()
			p.group++
		}
		n, err := p.rows.ReadRows(p.buf)
		if n == 1 {
			vals = make(map[string]string, len(p.cols))
			for name, c := range p.cols {
				vals[name] = ""
				for _, v := range p.buf[0] {
					if v.Column() != c || v.IsNull() {
						continue
					}
					vals[name] = string(appendParquetValue(nil, v, p.conv[name]))
					break
				}
			}
			return vals, nil
		}
		if err == nil {
			continue
		}
		_ = p.rows.Close()
		p.rows = nil
		if !errors.Is(err, io.EOF) {
			return nil, err
		}
	}
}
