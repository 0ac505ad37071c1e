package importer

import (
	"strconv"
	"sync"

	"github.com/arkhe-ledger/arkhe/pipeline"
	"github.com/arkhe-ledger/arkhe/textin"
)

// The kinds of line in an import's reject file: every source record that did not become a
// ledger row of its own, with why.
const (
	// KindRejected: a bad record (unreadable, not a valid ARK, over a limit, outside the
	// client's reach); the rest of the file lands.
	KindRejected = "rejected"
	// KindRefused: a record of a model the file's format does not import: an arklet user/key
	// record, which holds credentials and is never imported, or one another format imports
	// (the reason names it).
	KindRefused = "refused"
	// KindConflict: two or more rows of one file normalize to the same ARK with different
	// values; neither is imported.
	KindConflict = "conflict"
	// KindCollapsed: a row identical to an earlier one of the same ARK; both are one ARK.
	KindCollapsed = "collapsed"
	// KindDifference: the ARK (or NAAN, shoulder) is in the ledger with a different value in
	// field; the ledger is left alone until `arkhe reconcile --apply`.
	KindDifference = "difference"
	// KindKeptReserved: a value of the record was refused (field, reason) and left out; the
	// ARK is imported reserved without it (KeptReservedNote).
	KindKeptReserved = "kept reserved"
	// KindTruncated: the file ends mid-record (field "file"); the records read before that
	// point were imported, and the import exits 1.
	KindTruncated = "truncated"
)

// KeptReservedNote follows the reason of a refused value in the reject file.
const KeptReservedNote = "the value was left out and the ARK imported reserved, so that its name is never reissued"

// TruncatedNote follows a truncation's reason wherever it is reported (reject file, summary).
const TruncatedNote = "the records read before that point were imported"

// RejectHeader returns the header of the reject file `arkhe import` writes: the source file,
// line and record number, the identifier as the source spelled it, the canonical ARK
// ("ark:NAAN/name", empty when it could not be parsed), the kind (KindRejected, …), the field
// at fault, the reason, the export's and the ledger's values for differences, and the record's
// raw source text for records that could not be read (bytes kept as read, valid UTF-8 or not).
func RejectHeader() []string {
	return []string{"file", "line", "record", "identifier", "ark", "kind", "field", "reason",
		"export_value", "ledger_value", "raw"}
}

// rejectFile writes the reject file, a pipeline.CSVFile (created lazily as PATH.tmp, renamed
// into place by close; a run with nothing to report writes no file and removes a stale one of
// ours). A pass that is run again (see importFile) rewinds to a mark. With path "" it only
// counts. Safe for concurrent use.
type rejectFile struct {
	mu   sync.Mutex
	file *pipeline.CSVFile // nil: count only
	n    int64
}

type rejectMark struct {
	file pipeline.CSVMark
	n    int64
}

func newRejectFile(path string) *rejectFile {
	w := &rejectFile{}
	if path != "" {
		w.file = pipeline.NewCSVFile(path, RejectHeader())
	}
	return w
}

func (w *rejectFile) write(kind string, loc textin.Location, id, canonical, field, reason string, exp, led *string, raw string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	if w.file == nil {
		return nil
	}
	return w.file.Write([]string{loc.File, itoa(loc.Line), itoa(loc.Record), id, canonical, kind, field, reason, deref(exp), deref(led), raw})
}

func itoa(n int) string {
	if n <= 0 {
		return ""
	}
	return strconv.Itoa(n)
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// count returns the rows written (or counted) so far.
func (w *rejectFile) count() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// mark returns the current end of the file, for rewind.
func (w *rejectFile) mark() (rejectMark, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := rejectMark{n: w.n}
	if w.file == nil {
		return m, nil
	}
	var err error
	m.file, err = w.file.Mark()
	return m, err
}

// rewind drops everything written after m.
func (w *rejectFile) rewind(m rejectMark) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n = m.n
	if w.file == nil {
		return nil
	}
	return w.file.Rewind(m.file)
}

// close renames the file into place and returns its path, or "" when nothing was written (a
// stale reject file of ours at the path is then removed, so it never passes for this run's).
func (w *rejectFile) close() (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.file == nil {
		return "", nil
	}
	written, err := w.file.Close()
	if err != nil || !written {
		return "", err
	}
	return w.file.Path(), nil
}
