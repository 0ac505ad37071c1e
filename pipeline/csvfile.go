package pipeline

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/arkhe-ledger/arkhe/report"
)

// CSVFile is an output CSV file with a header that appears only if a record is written: it is
// created lazily, on the first Write, as PATH.tmp (report.OpenTemp: locked while written, a
// killed run's taken over, a live run's refused) and renamed to PATH by Close, so a run with
// nothing to write leaves no file. When nothing was written, Close removes the PATH.tmp a killed
// run left and a file left at PATH by an earlier run — only if its first line is this file's
// header — so a stale file never passes for this run's. Reject files of mint and import are
// CSVFiles. Errors are sticky and wrap the I/O error. Not safe for concurrent use.
type CSVFile struct {
	path   string
	header []string
	f      *os.File
	bw     *bufio.Writer
	cw     *csv.Writer
	n      int64
	err    error
	closed bool
}

// CSVMark is a position in a CSVFile, for Rewind.
type CSVMark struct {
	off int64 // -1: the file did not exist yet
	n   int64
}

// NewCSVFile returns the file at path with header; nothing is created until the first Write.
func NewCSVFile(path string, header []string) *CSVFile {
	return &CSVFile{path: path, header: header}
}

// Path returns the file's final path.
func (w *CSVFile) Path() string { return w.path }

// Count returns the records written (the header not counted).
func (w *CSVFile) Count() int64 { return w.n }

// Write appends one record, creating PATH.tmp with the header first if needed.
func (w *CSVFile) Write(rec []string) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return fmt.Errorf("%s: write after close", w.path)
	}
	if w.f == nil {
		f, err := report.OpenTemp(w.path + ".tmp")
		if err != nil {
			w.err = fmt.Errorf("create %s: %w", w.path, err)
			return w.err
		}
		w.f, w.bw = f, bufio.NewWriterSize(f, 64<<10)
		w.cw = csv.NewWriter(w.bw)
		if err := w.cw.Write(w.header); err != nil {
			w.err = fmt.Errorf("write %s: %w", w.path, err)
			return w.err
		}
	}
	if err := w.cw.Write(rec); err != nil {
		w.err = fmt.Errorf("write %s: %w", w.path, err)
		return w.err
	}
	w.n++
	return nil
}

// flush writes buffered records to the file.
func (w *CSVFile) flush() error {
	w.cw.Flush()
	err := w.cw.Error()
	if err == nil {
		err = w.bw.Flush()
	}
	if err != nil {
		w.err = fmt.Errorf("write %s: %w", w.path, err)
	}
	return w.err
}

// Mark returns the current end of the file, for Rewind.
func (w *CSVFile) Mark() (CSVMark, error) {
	if w.err != nil {
		return CSVMark{}, w.err
	}
	m := CSVMark{off: -1, n: w.n}
	if w.f == nil {
		return m, nil
	}
	if err := w.flush(); err != nil {
		return m, err
	}
	off, err := w.f.Seek(0, io.SeekCurrent)
	if err != nil {
		w.err = fmt.Errorf("write %s: %w", w.path, err)
		return m, w.err
	}
	m.off = off
	return m, nil
}

// Rewind drops every record written after m.
func (w *CSVFile) Rewind(m CSVMark) error {
	if w.err != nil {
		return w.err
	}
	w.n = m.n
	if w.f == nil {
		return nil
	}
	if err := w.flush(); err != nil {
		return err
	}
	off := m.off
	if off < 0 {
		off = 0 // created after the mark: start again from the header
	}
	if err := w.f.Truncate(off); err == nil {
		_, err = w.f.Seek(off, io.SeekStart)
		if err != nil {
			w.err = fmt.Errorf("rewind %s: %w", w.path, err)
		}
	} else {
		w.err = fmt.Errorf("rewind %s: %w", w.path, err)
	}
	if w.err == nil && off == 0 {
		if err := w.cw.Write(w.header); err != nil {
			w.err = fmt.Errorf("write %s: %w", w.path, err)
		}
	}
	return w.err
}

// Close flushes, syncs and renames PATH.tmp to PATH, and reports whether the file was written.
// With no record it writes nothing (a PATH.tmp left empty by a rewind is removed, as is one a
// killed run left) and removes a stale file of this header at PATH. Calling Close again returns
// the first result.
func (w *CSVFile) Close() (written bool, err error) {
	if w.closed {
		return w.f != nil && w.n > 0, w.err
	}
	w.closed = true
	if w.f != nil && w.n == 0 {
		_ = w.f.Close()
		_ = os.Remove(w.path + ".tmp")
		w.f = nil
	}
	if w.f == nil {
		if w.err != nil {
			return false, w.err
		}
		report.RemoveStaleTemp(w.path + ".tmp")
		w.err = removeStale(w.path, w.header)
		return false, w.err
	}
	if w.err == nil {
		_ = w.flush()
	}
	err = w.err
	if err == nil {
		err = w.f.Sync()
	}
	if err == nil {
		// renamed while still open and locked, so no other run takes PATH.tmp over in between
		err = os.Rename(w.path+".tmp", w.path)
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("close %s: %w", w.path, err)
	}
	return w.err == nil, w.err
}

// removeStale removes path if its first line is header.
func removeStale(path string, header []string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check stale %s: %w", path, err)
	}
	want := strings.Join(header, ",") + "\n"
	head := make([]byte, len(want)+1)
	n, err := io.ReadFull(f, head)
	_ = f.Close()
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return fmt.Errorf("check stale %s: %w", path, err)
	}
	if !bytes.HasPrefix(head[:n], []byte(want)) {
		return nil
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove stale %s: %w", path, err)
	}
	return nil
}
