package report

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"reflect"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

// Row groups of Parquet reports. A row group ends at RowGroupRows rows or
// when parquet-go's estimate of the group's buffered bytes (compressed pages
// plus the not yet compressed column buffers) reaches RowGroupBytes,
// whichever comes first. parquet-go holds the whole current row group in
// memory (a column chunk must be contiguous in the file), so these two
// numbers bound a Writer's memory: about RowGroupBytes plus one page buffer
// per column and the 256 KiB output buffer, whatever the number of rows.
//
// RowGroupRows is close to DuckDB's own row group size (122,880) so a reader
// gets one unit of parallel work per group, and large enough for zstd and
// column statistics to pay off. The byte budget only bites for rows with long
// values (ARKs with long ERC titles).
const (
	RowGroupRows  = 128 * 1024
	RowGroupBytes = 64 << 20
)

// outputBufferSize is the bufio buffer between the encoders and the file.
const outputBufferSize = 256 << 10

// parquetBatch is the most rows handed to parquet-go at once, so the byte
// budget is checked at least that often.
const parquetBatch = 4096

// seqBatch is how many rows [Writer.WriteSeq] gathers per Write.
const seqBatch = 1024

// ErrClosed is wrapped by the errors of Write, WriteSeq and Close on a
// Writer that was already closed or aborted.
var ErrClosed = errors.New("report writer already closed")

// Writer streams rows of struct type T to one report file in one [Format],
// atomically: rows go to a temporary file ".NAME.tmp-DIGITS" beside the final
// path ([CreateTemp]), and only a successful Close renames it to the final path
// (replacing any file there). A failed Write, WriteSeq or Close, or an Abort,
// removes the temporary file, so a failed run never leaves a file that looks
// complete, and a file already at the final path stays untouched; the temporary
// file of a killed run is removed by the next Create of the same path.
//
// Columns come from T's `parquet` struct tags (see the package documentation);
// CSV and JSON Lines use the same names, order and NULL-ability.
// After any error the Writer is failed: further Writes return that error and
// Close removes the temporary file and returns it.
//
// Methods take no context: writing a local file is not cancellable. Callers
// that stream from a database use [Writer.WriteSeq], which checks the
// context between batches, or check it themselves and call Abort.
// A Writer is not safe for concurrent use.
type Writer[T any] struct {
	path   string // final path
	tmp    string // temporary path in the same directory
	format Format
	cols   []column

	f   *os.File      // the temporary file; nil once closed
	out *bufio.Writer // buffers writes to f

	pq         *parquet.GenericWriter[T] // Parquet only
	groupRows  int64                     // rows in the current row group
	groupStart int64                     // pq.Size() when the current row group began

	rows    int64  // rows written so far
	line    []byte // CSV / JSON Lines record buffer, reused
	scratch []byte // CSV number and time text, reused
	err     error  // sticky: the first error of Write or WriteSeq
	done    bool   // closed or aborted
}

// Create starts a report of rows T at path in format f. The directory of path
// must exist; the temporary file is created there (mode 0600 while written,
// 0644 once in place). A CSV report's header line is written at once.
//
// Errors: an invalid f (wraps [ErrUnknownFormat]); a row type that is not a
// struct or has a field type the three formats cannot all carry (see
// the package documentation for the supported tags; the error names the field); path being
// a directory; the temporary file not creatable (wraps the *fs.PathError).
func Create[T any](path string, f Format) (*Writer[T], error) {
	if !f.valid() {
		return nil, fmt.Errorf("report: create %s: format %v: %w", path, f, ErrUnknownFormat)
	}
	cols, err := columnsOf(reflect.TypeFor[T]())
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("report: create %s: is a directory", path)
	}
	if _, base := filepath.Split(path); base == "" {
		return nil, fmt.Errorf("report: create %q: no file name", path)
	}
	tmp, err := CreateTemp(path)
	if err != nil {
		return nil, fmt.Errorf("report: create %s: %w", path, err)
	}
	w := &Writer[T]{
		path:   path,
		tmp:    tmp.Name(),
		format: f,
		cols:   cols,
		f:      tmp,
		out:    bufio.NewWriterSize(tmp, outputBufferSize),
	}
	switch f {
	case Parquet:
		w.pq, err = newParquetWriter[T](w.out)
		if err != nil {
			w.Abort()
			return nil, fmt.Errorf("report: create %s: %w", path, err)
		}
	case CSV:
		w.line = appendCSVHeader(w.line[:0], cols)
		if _, err := w.out.Write(w.line); err != nil {
			w.Abort()
			return nil, fmt.Errorf("report: create %s: %w", path, err)
		}
	}
	return w, nil
}

// newParquetWriter builds parquet-go's writer for T: schema from T's tags,
// zstd (default level) on every column. parquet-go panics on tags it cannot
// map; that panic is turned into an error here.
func newParquetWriter[T any](out io.Writer) (pw *parquet.GenericWriter[T], err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("parquet schema of %v: %v", reflect.TypeFor[T](), r)
		}
	}()
	schema := parquet.SchemaOf(new(T))
	return parquet.NewGenericWriter[T](out, schema,
		parquet.Compression(&zstd.Codec{Level: zstd.SpeedDefault}),
	), nil
}

// Path returns the final path the report is renamed to by Close.
func (w *Writer[T]) Path() string { return w.path }

// Rows returns the number of rows written so far (not counting a CSV header).
func (w *Writer[T]) Rows() int64 { return w.rows }

// Write appends rows to the report. Each string must be valid UTF-8, no
// timestamp the zero time.Time, and in JSON Lines each float finite; otherwise Write returns a *[ValueError] naming
// the 1-based row and the column. Write errors (a *ValueError, an I/O error
// wrapping the *fs.PathError, [ErrClosed] after Close or Abort) leave the
// Writer failed: see [Writer]. Write with no rows does nothing.
func (w *Writer[T]) Write(rows ...T) error {
	if w.done {
		return fmt.Errorf("report: write %s: %w", w.path, ErrClosed)
	}
	if w.err != nil {
		return w.err
	}
	if err := w.write(rows); err != nil {
		w.err = err
		return err
	}
	return nil
}

// write encodes rows in the Writer's format.
func (w *Writer[T]) write(rows []T) error {
	if w.format == Parquet {
		return w.writeParquet(rows)
	}
	for i := range rows {
		rv := reflect.ValueOf(&rows[i]).Elem()
		n := w.rows + 1
		if err := checkRow(w.cols, rv, w.path, n); err != nil {
			return err
		}
		if w.format == CSV {
			w.line, w.scratch = appendCSVRow(w.line[:0], w.cols, rv, w.scratch)
		} else {
			var err error
			if w.line, err = appendJSONRow(w.line[:0], w.cols, rv, w.path, n); err != nil {
				return err
			}
		}
		if _, err := w.out.Write(w.line); err != nil {
			return fmt.Errorf("report: write %s: %w", w.path, err)
		}
		w.rows = n
	}
	return nil
}

// writeParquet hands rows to parquet-go in batches that never cross a row
// group boundary, ending the row group at RowGroupRows rows or RowGroupBytes
// buffered bytes.
func (w *Writer[T]) writeParquet(rows []T) error {
	for len(rows) > 0 {
		n := min(len(rows), parquetBatch, int(RowGroupRows-w.groupRows))
		batch := rows[:n]
		for i := range batch {
			if err := checkRow(w.cols, reflect.ValueOf(&batch[i]).Elem(), w.path, w.rows+int64(i)+1); err != nil {
				return err
			}
		}
		if _, err := w.pq.Write(batch); err != nil {
			return fmt.Errorf("report: write %s: %w", w.path, err)
		}
		w.rows += int64(n)
		w.groupRows += int64(n)
		rows = rows[n:]
		if w.groupRows >= RowGroupRows || w.pq.Size()-w.groupStart >= RowGroupBytes {
			if err := w.pq.Flush(); err != nil {
				return fmt.Errorf("report: write %s: row group: %w", w.path, err)
			}
			w.groupRows = 0
			w.groupStart = w.pq.Size()
		}
	}
	return nil
}

// WriteSeq writes every row of seq, the shape of a caller's iterator over a
// database cursor, checking ctx before each batch of 1024 rows. It returns the
// number of rows of seq written. An error from seq (returned as is), from ctx
// (wrapping ctx.Err()) or from Write leaves the Writer failed, so Close will
// not publish a partial report; the caller calls Abort (or Close, which
// aborts and returns the error).
func (w *Writer[T]) WriteSeq(ctx context.Context, seq iter.Seq2[T, error]) (int64, error) {
	if w.done {
		return 0, fmt.Errorf("report: write %s: %w", w.path, ErrClosed)
	}
	if w.err != nil {
		return 0, w.err
	}
	start := w.rows
	batch := make([]T, 0, seqBatch)
	fail := func(err error) (int64, error) {
		if w.err == nil {
			w.err = err
		}
		return w.rows - start, err
	}
	flush := func() error {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("report: write %s: %w", w.path, err)
		}
		err := w.Write(batch...)
		batch = batch[:0]
		return err
	}
	for row, err := range seq {
		if err != nil {
			return fail(err)
		}
		batch = append(batch, row)
		if len(batch) == seqBatch {
			if err := flush(); err != nil {
				return fail(err)
			}
		}
	}
	if err := flush(); err != nil {
		return fail(err)
	}
	return w.rows - start, nil
}

// Close finishes the report: the Parquet footer, flushing, fsync, mode 0644,
// and the rename of the temporary file to the final path (then an fsync of
// the directory). On any failure — including an earlier failed Write — the
// temporary file is removed and the error returned (wrapping the cause); the
// final path is then left as it was. A second Close returns an error wrapping
// [ErrClosed]. Only if the rename succeeded but the directory fsync failed is
// the (complete) file in place and an error still returned.
func (w *Writer[T]) Close() error {
	if w.done {
		return fmt.Errorf("report: close %s: %w", w.path, ErrClosed)
	}
	if w.err != nil {
		w.Abort()
		return fmt.Errorf("report: %s not written: %w", w.path, w.err)
	}
	if err := w.finish(); err != nil {
		w.Abort()
		return fmt.Errorf("report: %s not written: %w", w.path, err)
	}
	w.done = true
	w.pq = nil
	return syncDir(filepath.Dir(w.path))
}

// finish completes and closes the temporary file and renames it into place.
func (w *Writer[T]) finish() error {
	if w.pq != nil {
		if err := w.pq.Close(); err != nil {
			return fmt.Errorf("parquet footer: %w", err)
		}
	}
	if err := w.out.Flush(); err != nil {
		return err
	}
	if err := w.f.Chmod(0o644); err != nil {
		return err
	}
	if err := w.f.Sync(); err != nil {
		return err
	}
	// renamed while still open and locked, so no sweep of a concurrent Create takes it
	err := os.Rename(w.tmp, w.path)
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.f = nil
	return err
}

// syncDir fsyncs directory dir so a rename in it survives a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("report: sync directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("report: sync directory %s: %w", dir, err)
	}
	return nil
}

// Abort abandons the report: the temporary file is closed and removed and the
// final path is left as it was. Abort after Close or Abort does nothing and
// returns nil, so `defer w.Abort()` right after Create is the intended
// pattern. The error, if any, wraps the *fs.PathError of the removal.
func (w *Writer[T]) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	w.pq = nil
	err := os.Remove(w.tmp)
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("report: abort %s: %w", w.path, err)
	}
	return nil
}
