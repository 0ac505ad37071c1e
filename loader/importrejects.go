package loader

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"

	"github.com/arkhe-ledger/arkhe/legacy"
)

// The kinds of line in an import's reject file: every source record that did not become a
// ledger row of its own, with why (issue 4 "Semantics").
const (
	// ImportRejected: a bad record (unreadable, not a valid ARK, over a limit, outside the
	// client's reach); the rest of the file lands.
	ImportRejected = "rejected"
	// ImportRefused: an arklet user/key record, which holds credentials and is never imported.
	ImportRefused = "refused"
	// ImportConflict: two or more rows of one file normalize to the same ARK with different
	// values; neither is imported.
	ImportConflict = "conflict"
	// ImportCollapsed: a row identical to an earlier one of the same ARK; both are one ARK.
	ImportCollapsed = "collapsed"
	// ImportDifference: the ARK (or NAAN, shoulder) is in the ledger with a different value in
	// field; the ledger is left alone until `arkhe reconcile --apply`.
	ImportDifference = "difference"
)

// ImportRejectHeader returns the header of the reject file `arkhe import` writes: the source file,
// line and record number, the identifier as the source spelled it, the canonical ARK
// ("ark:NAAN/name", empty when it could not be parsed), the kind (ImportRejected, …), the field
// at fault, the reason, the export's and the ledger's values for differences, and the record's
// raw source text for records that could not be read (bytes kept as read, legacy-formats.md §6.7).
func ImportRejectHeader() []string {
	return []string{"file", "line", "record", "identifier", "ark", "kind", "field", "reason",
		"export_value", "ledger_value", "raw"}
}

// importRejects writes the reject file. It is created lazily as PATH.tmp and renamed into place
// by close; a run with nothing to report writes no file and removes a stale one of ours. A pass
// that is run again (see importFile) rewinds to a mark. Safe for concurrent use.
type importRejects struct {
	mu     sync.Mutex
	path   string // "" counts only
	f      *os.File
	bw     *bufio.Writer
	cw     *csv.Writer
	n      int64
	err    error
	closed bool
}

type importRejectMark struct {
	off int64
	n   int64
}

func newImportRejects(path string) *importRejects { return &importRejects{path: path} }

func (w *importRejects) write(kind string, loc legacy.Location, id, canonical, field, reason string, exp, led *string, raw string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.n++
	if w.path == "" {
		return nil
	}
	if w.f == nil {
		f, err := os.OpenFile(w.path+".tmp", os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o644)
		if err != nil {
			w.err = fmt.Errorf("create reject file: %w", err)
			return w.err
		}
		w.f, w.bw = f, bufio.NewWriterSize(f, 64<<10)
		w.cw = csv.NewWriter(w.bw)
		if err := w.cw.Write(ImportRejectHeader()); err != nil {
			w.err = fmt.Errorf("write reject file %s: %w", w.path, err)
			return w.err
		}
	}
	rec := []string{loc.File, importItoa(loc.Line), importItoa(loc.Record), id, canonical, kind, field, reason, importDeref(exp), importDeref(led), raw}
	if err := w.cw.Write(rec); err != nil {
		w.err = fmt.Errorf("write reject file %s: %w", w.path, err)
	}
	return w.err
}

func importItoa(n int) string {
	if n <= 0 {
		return ""
	}
	return strconv.Itoa(n)
}

func importDeref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// mark returns the current end of the file, for rewind.
func (w *importRejects) mark() (importRejectMark, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return importRejectMark{}, w.err
	}
	m := importRejectMark{n: w.n}
	if w.f == nil {
		m.off = -1
		return m, nil
	}
	w.cw.Flush()
	if err := w.cw.Error(); err != nil {
		w.err = err
		return m, err
	}
	if err := w.bw.Flush(); err != nil {
		w.err = err
		return m, err
	}
	off, err := w.f.Seek(0, io.SeekCurrent)
	if err != nil {
		w.err = err
		return m, err
	}
	m.off = off
	return m, nil
}

// rewind drops everything written after m.
func (w *importRejects) rewind(m importRejectMark) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.n = m.n
	if w.f == nil {
		return nil
	}
	w.cw.Flush()
	if err := w.bw.Flush(); err != nil {
		w.err = err
		return err
	}
	off := m.off
	if off < 0 {
		off = 0 // the file was created after the mark: keep only a header
		w.n = 0
	}
	if err := w.f.Truncate(off); err != nil {
		w.err = err
		return err
	}
	if _, err := w.f.Seek(off, io.SeekStart); err != nil {
		w.err = err
		return err
	}
	if off == 0 {
		if err := w.cw.Write(ImportRejectHeader()); err != nil {
			w.err = err
			return err
		}
	}
	return nil
}

// count returns the lines written (or counted, with no path).
func (w *importRejects) count() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// close renames the file into place and returns its path, or "" when nothing was written (a
// stale reject file of ours at the path is then removed, so it never passes for this run's).
func (w *importRejects) close() (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return "", w.err
	}
	w.closed = true
	if w.path == "" {
		return "", w.err
	}
	if w.f == nil || w.n == 0 {
		if w.f != nil {
			w.f.Close()
			os.Remove(w.path + ".tmp")
		}
		if w.err != nil {
			return "", w.err
		}
		return "", removeStaleImportRejects(w.path)
	}
	err := w.err
	if err == nil {
		w.cw.Flush()
		err = w.cw.Error()
	}
	if err == nil {
		err = w.bw.Flush()
	}
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(w.path+".tmp", w.path)
	}
	if err != nil {
		return "", fmt.Errorf("close reject file %s: %w", w.path, err)
	}
	return w.path, nil
}

// removeStaleImportRejects removes path if its first line is ImportRejectHeader.
func removeStaleImportRejects(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check stale reject file: %w", err)
	}
	first, err := csv.NewReader(bufio.NewReader(f)).Read()
	f.Close()
	if err != nil || len(first) != len(ImportRejectHeader()) {
		return nil
	}
	header := ImportRejectHeader()
	for i := range first {
		if first[i] != header[i] {
			return nil
		}
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove stale reject file: %w", err)
	}
	return nil
}
