package pipeline

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/arkhe-ledger/arkhe/textin"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// parquetManifest reads a Parquet manifest row by row (parquet-go), one row
// group at a time, so memory depends on the row group's page size, not the
// file's. Mapped sources are leaf columns named by their path (dots for
// nested groups) that do not repeat. Text comes from BYTE_ARRAY columns as
// is; INT32/INT64 become decimal text (unsigned when annotated so), BOOLEAN
// "true"/"false", FLOAT/DOUBLE the shortest decimal, a UUID column its
// canonical 8-4-4-4-12 form. NULL and "" are absent. Location.Line is 0.
type parquetManifest struct {
	path   string
	f      *os.File
	pf     *parquet.File
	groups []parquet.RowGroup
	group  int
	rows   parquet.Rows
	buf    []parquet.Row
	cols   [NumFields]int // leaf column index per Field, -1 when absent
	conv   [NumFields]parquetConv
	rec    int
	err    error
	closed bool
	vals   []byte
}

// parquetConv says how a leaf column's values become text.
type parquetConv uint8

const (
	convBytes parquetConv = iota
	convSigned
	convUnsigned
	convBool
	convFloat
	convUUID
)

func openParquetManifest(path string, m Mapping) (*parquetManifest, error) {
	fail := func(op string, err error) error {
		return &ManifestError{Loc: textin.Location{File: path}, Op: op, Err: err}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fail("open", err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, fail("open", err)
	}
	if err := checkParquetFooter(f, st.Size()); err != nil {
		_ = f.Close()
		return nil, fail("open", err)
	}
	var pf *parquet.File
	err = parquetCall(func() (err error) {
		pf, err = parquet.OpenFile(f, st.Size(), parquet.SkipBloomFilters(true), parquet.SkipPageIndex(true))
		return err
	})
	if err != nil {
		_ = f.Close()
		return nil, fail("open", fmt.Errorf("parquet: %w", err))
	}
	r := &parquetManifest{path: path, f: f, pf: pf, groups: pf.RowGroups(), buf: make([]parquet.Row, 1)}
	for fl := range Field(NumFields) {
		r.cols[fl] = -1
		name := m.Source(fl)
		if name == "" {
			if fl == FieldRequestID {
				_ = f.Close()
				return nil, fail("schema", fmt.Errorf("%w: request_id is not mapped", ErrMissingColumn))
			}
			continue
		}
		leaf, ok := pf.Schema().Lookup(strings.Split(name, ".")...)
		if !ok {
			if fl == FieldRequestID || m.Explicit(fl) {
				_ = f.Close()
				return nil, fail("schema", fmt.Errorf("%w: no leaf column %q for %s", ErrMissingColumn, name, fl))
			}
			continue
		}
		if leaf.MaxRepetitionLevel > 0 {
			_ = f.Close()
			return nil, fail("schema", fmt.Errorf("column %q for %s repeats (a list); only single-valued columns are supported", name, fl))
		}
		conv, err := parquetConversion(leaf.Node.Type())
		if err != nil {
			_ = f.Close()
			return nil, fail("schema", fmt.Errorf("column %q for %s: %w", name, fl, err))
		}
		r.cols[fl], r.conv[fl] = leaf.ColumnIndex, conv
	}
	return r, nil
}

// parquetRowCount returns the number of rows a Parquet file's footer states, reading only the
// footer, with the checks of openParquetManifest.
func parquetRowCount(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if err := checkParquetFooter(f, st.Size()); err != nil {
		return 0, err
	}
	var rows int64
	err = parquetCall(func() error {
		pf, err := parquet.OpenFile(f, st.Size(), parquet.SkipBloomFilters(true), parquet.SkipPageIndex(true))
		if err == nil {
			rows = pf.NumRows()
		}
		return err
	})
	return rows, err
}

// parquetPanic is a panic of parquet-go on a damaged file, turned into an error.
type parquetPanic struct{ value any }

func (p *parquetPanic) Error() string {
	return fmt.Sprintf("parquet: the file is damaged (the Parquet reader failed: %v)", p.value)
}

// parquetCall runs f, turning a panic of parquet-go (it panics on some damaged pages, e.g. a
// compressed page that ends early) into a *parquetPanic, so a hostile file is an error naming
// the file and record, never a crash.
func parquetCall(f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &parquetPanic{value: v}
		}
	}()
	return f()
}

// checkParquetFooter checks the end of a Parquet file of size bytes before it is opened: the
// magic "PAR1" and a footer length that fits in the file. parquet-go allocates a buffer of the
// stated length before it reads the footer, so a damaged or hostile length (up to 4 GiB in a
// file of a few hundred bytes) would be allocated first and refused only after.
func checkParquetFooter(f io.ReaderAt, size int64) error {
	var tail [8]byte
	if size < 12 {
		return fmt.Errorf("parquet: file of %d bytes is too short to be Parquet (truncated?)", size)
	}
	if _, err := f.ReadAt(tail[:], size-8); err != nil {
		return fmt.Errorf("parquet: reading the footer: %w", err)
	}
	if string(tail[4:]) != "PAR1" {
		return fmt.Errorf("parquet: the file does not end with PAR1 (truncated, or not Parquet)")
	}
	if n := int64(binary.LittleEndian.Uint32(tail[:4])); n > size-12 {
		return fmt.Errorf("parquet: footer length %d exceeds the file's %d bytes (truncated, or not Parquet)", n, size)
	}
	return nil
}

// scalarLeaf refuses a leaf column type annotated MAP, LIST or VARIANT: such a leaf holds no
// single value, and parquet-go's Type.Kind panics on it, so it is checked before Kind is asked.
func scalarLeaf(t parquet.Type) error {
	if lt := t.LogicalType(); lt != nil {
		switch lt.Value.(type) {
		case *format.MapType, *format.ListType, *format.VariantType:
			return fmt.Errorf("a leaf column annotated %s holds no single value; store the value as text", lt.Value)
		}
	}
	return nil
}

// parquetConversion picks the text conversion for a leaf column type.
func parquetConversion(t parquet.Type) (parquetConv, error) {
	var logical format.LogicalTypeValue
	if lt := t.LogicalType(); lt != nil {
		logical = lt.Value
	}
	if _, ok := logical.(*format.DecimalType); ok {
		return 0, errors.New("DECIMAL columns are not supported; store the identifier as text")
	}
	if err := scalarLeaf(t); err != nil {
		return 0, err
	}
	switch t.Kind() {
	case parquet.ByteArray:
		return convBytes, nil
	case parquet.FixedLenByteArray:
		if _, ok := logical.(*format.UUIDType); ok {
			return convUUID, nil
		}
		return convBytes, nil
	case parquet.Int32, parquet.Int64:
		if it, ok := logical.(*format.IntType); ok && !it.IsSigned {
			return convUnsigned, nil
		}
		return convSigned, nil
	case parquet.Boolean:
		return convBool, nil
	case parquet.Float, parquet.Double:
		return convFloat, nil
	}
	return 0, fmt.Errorf("%s columns are not supported", t.Kind())
}

// Next implements Reader.
func (r *parquetManifest) Next(ctx context.Context) (Record, error) {
	if r.err != nil {
		return Record{}, r.err
	}
	if err := ctx.Err(); err != nil {
		return Record{}, err
	}
	for {
		if r.rows == nil {
			if r.group >= len(r.groups) {
				r.err = io.EOF
				return Record{}, io.EOF
			}
			r.rows = r.groups[r.group].Rows()
			r.group++
		}
		// One row per call: byte arrays point into page buffers that a
		// later read may reuse, so each row is copied out before the next.
		var n int
		err := parquetCall(func() (err error) {
			n, err = r.rows.ReadRows(r.buf)
			return err
		})
		var pe *parquetPanic
		if errors.As(err, &pe) {
			r.rows = nil // its state is unknown: not used again
			r.err = &ManifestError{Loc: textin.Location{File: r.path, Record: r.rec + 1}, Op: "read", Err: err}
			return Record{}, r.err
		}
		if n == 1 {
			r.rec++
			return r.record(r.buf[0]), nil
		}
		if err == nil {
			continue
		}
		_ = r.rows.Close()
		r.rows = nil
		if !errors.Is(err, io.EOF) {
			r.err = &ManifestError{Loc: textin.Location{File: r.path, Record: r.rec + 1}, Op: "read", Err: err}
			return Record{}, r.err
		}
	}
}

// record converts one Parquet row.
func (r *parquetManifest) record(row parquet.Row) Record {
	rec := Record{Source: textin.Location{File: r.path, Record: r.rec}}
	r.vals = r.vals[:0]
	var ends [NumFields]int
	var has uint8
	for fl := range Field(NumFields) {
		ends[fl] = len(r.vals)
		c := r.cols[fl]
		if c < 0 {
			continue
		}
		for _, v := range row {
			if v.Column() != c {
				continue
			}
			if v.IsNull() {
				break
			}
			start := len(r.vals)
			r.vals = appendParquetValue(r.vals, v, r.conv[fl])
			if len(r.vals) > start {
				has |= fl.Bit()
			}
			break
		}
		ends[fl] = len(r.vals)
	}
	all := string(r.vals)
	start := 0
	for fl := range Field(NumFields) {
		if has&fl.Bit() != 0 {
			rec.Set(fl, all[start:ends[fl]])
		}
		start = ends[fl]
	}
	return rec
}

// appendParquetValue appends the text of v per conv.
func appendParquetValue(dst []byte, v parquet.Value, conv parquetConv) []byte {
	switch conv {
	case convBytes:
		return append(dst, v.ByteArray()...)
	case convUUID:
		b := v.ByteArray()
		if len(b) != 16 {
			return append(dst, hex.EncodeToString(b)...)
		}
		h := hex.EncodeToString(b)
		return append(dst, h[0:8]+"-"+h[8:12]+"-"+h[12:16]+"-"+h[16:20]+"-"+h[20:]...)
	case convSigned:
		if v.Kind() == parquet.Int32 {
			return strconv.AppendInt(dst, int64(v.Int32()), 10)
		}
		return strconv.AppendInt(dst, v.Int64(), 10)
	case convUnsigned:
		if v.Kind() == parquet.Int32 {
			return strconv.AppendUint(dst, uint64(uint32(v.Int32())), 10)
		}
		return strconv.AppendUint(dst, uint64(v.Int64()), 10)
	case convBool:
		return strconv.AppendBool(dst, v.Boolean())
	case convFloat:
		if v.Kind() == parquet.Float {
			return strconv.AppendFloat(dst, float64(v.Float()), 'g', -1, 32)
		}
		return strconv.AppendFloat(dst, v.Double(), 'g', -1, 64)
	}
	return dst
}

// Close implements Reader.
func (r *parquetManifest) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	if r.rows != nil {
		_ = r.rows.Close()
		r.rows = nil
	}
	if r.err == nil {
		r.err = &ManifestError{Loc: textin.Location{File: r.path}, Op: "read", Err: errors.New("reader closed")}
	}
	return r.f.Close()
}
