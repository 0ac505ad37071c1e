package pipeline

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/arkhe-ledger/arkhe/textin"
)

// This file reads change manifests: CSV, JSON Lines and Parquet, the text formats optionally
// gzip- or xz-compressed, by the extensions mint reads (DetectFormat) plus .xz. Unlike
// a mint manifest, a present column with an empty value (an empty CSV cell, a JSON "" or null, a
// Parquet NULL or "") is kept as present and empty, because an update empties that value. Memory
// is bounded whatever the file: a CSV record and a JSON line are at most
// MaxRecordBytes (a longer one is a reject and reading goes on after it); Parquet is
// read one row at a time. A broken row is a reject naming file, line and field; only a file that
// cannot be read further stops the run (*ManifestError).

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

	csv  *textin.CSVScanner
	cols map[string]int // change column -> CSV column index

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
// ErrUnknownFormat, ErrNoHeader, ErrMissingColumn, the *fs.PathError of an unreadable file, or
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
	if format == FormatJSONLines {
		r.lines = bufio.NewReaderSize(src, 64<<10)
		return r, nil
	}
	r.csv = textin.NewCSVScanner(src, MaxRecordBytes, true)
	head, _, err := r.csv.Scan()
	if errors.Is(err, io.EOF) {
		return fail(textin.Location{File: path, Line: 1}, "read the header", ErrNoHeader)
	}
	if err != nil {
		return fail(textin.Location{File: path, Line: 1}, "read the header", err)
	}
	r.cols = map[string]int{}
	for i, h := range head {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		r.cols[r.column(h)] = i
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
// CSV record, a bad JSON line, a value that is no string or null), as a *textin.RowError with the
// row, after which reading goes on; io.EOF at the end; any other error is fatal (*ManifestError).
func (r *ChangeReader) Next() (ChangeRow, *textin.RowError, error) {
	var row ChangeRow
	get := map[string]string{}
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
		if err != nil {
			return row, nil, &ManifestError{Loc: row.Loc, Op: "read", Err: err}
		}
		for name, i := range r.cols {
			if i < len(rec) {
				get[name] = rec[i]
			}
		}
	case r.lines != nil:
		text, rerr, err := r.jsonLine()
		if err != nil {
			return row, nil, err
		}
		r.record++
		row.Loc = textin.Location{File: r.path, Line: r.line, Record: r.record}
		if rerr != "" {
			return row, &textin.RowError{Loc: row.Loc, Reason: rerr}, nil
		}
		var obj map[string]any
		if err := json.Unmarshal(text, &obj); err != nil {
			return row, &textin.RowError{Loc: row.Loc, Reason: "bad JSON (want one object per line)", Err: err}, nil
		}
		for k, v := range obj {
			switch v := v.(type) {
			case string:
				get[r.column(k)] = v
			case nil:
				get[r.column(k)] = ""
			default:
				return row, &textin.RowError{Loc: row.Loc, Field: k, Reason: "a value must be a string or null"}, nil
			}
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
		get = vals
	}
	row.Cols = get
	return row, nil, nil
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
// BYTE_ARRAY values are taken as text, INT32 and INT64 as decimal text. A NULL or "" value is
// present and empty.
type parquetChanges struct {
	groups []parquet.RowGroup
	group  int
	rows   parquet.Rows
	buf    []parquet.Row
	cols   map[string]int // change column -> leaf column index
	size   int64          // of the file
	total  int64          // rows, from the footer
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
	if st.Size() < 12 {
		return nil, fmt.Errorf("parquet: file of %d bytes is too short to be Parquet (truncated?)", st.Size())
	}
	pf, err := parquet.OpenFile(f, st.Size(), parquet.SkipBloomFilters(true), parquet.SkipPageIndex(true))
	if err != nil {
		return nil, fmt.Errorf("parquet: %w", err)
	}
	p = &parquetChanges{groups: pf.RowGroups(), buf: make([]parquet.Row, 1), cols: map[string]int{}, size: st.Size(), total: pf.NumRows()}
	for _, fl := range pf.Schema().Fields() {
		name := column(fl.Name())
		if !fl.Leaf() {
			continue
		}
		leaf, ok := pf.Schema().Lookup(fl.Name())
		if !ok || leaf.MaxRepetitionLevel > 0 {
			continue
		}
		if err := scalarLeaf(fl.Type()); err != nil {
			return nil, fmt.Errorf("parquet column %q: %w", fl.Name(), err)
		}
		switch fl.Type().Kind() {
		case parquet.ByteArray, parquet.Int32, parquet.Int64:
		default:
			return nil, fmt.Errorf("parquet column %q: %s columns are not supported (want strings or integers)", fl.Name(), fl.Type().Kind())
		}
		p.cols[name] = leaf.ColumnIndex
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
					switch v.Kind() {
					case parquet.Int32:
						vals[name] = strconv.FormatInt(int64(v.Int32()), 10)
					case parquet.Int64:
						vals[name] = strconv.FormatInt(v.Int64(), 10)
					default:
						vals[name] = string(v.ByteArray())
					}
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
