package pipeline

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/arkhe-ledger/arkhe/textin"
)

// rejectHeader is the reject file's header line (where the row came
// from, the field at fault and why).
var rejectHeader = []string{"file", "line", "record", "request_id", "field", "reason"}

// RejectWriter writes the reject file: a CSV with the header
// file,line,record,request_id,field,reason and one row per rejected manifest
// row (rows over the daily quota
// come here too). line and record are empty when unknown (0).
//
// The file is created lazily, on the first Write, as PATH.tmp, and renamed to
// PATH by Close, so a run with no rejects leaves no reject file, and a crashed
// run leaves only PATH.tmp (the re-run finds the same rejects again). When a
// run has no rejects, Close also removes a reject file left at PATH by an
// earlier run — only if its first line is the reject header above — so a
// stale reject file never passes for this run's.
//
// A RejectWriter is not safe for concurrent use: one goroutine writes.
type RejectWriter struct {
	file *CSVFile
	rec  [6]string
}

// NewRejectWriter returns a writer for the reject file at path. Nothing is
// created until the first Write.
func NewRejectWriter(path string) *RejectWriter {
	return &RejectWriter{file: NewCSVFile(path, rejectHeader)}
}

// Path returns the reject file's final path.
func (w *RejectWriter) Path() string { return w.file.Path() }

// Count returns the number of rejects written so far.
func (w *RejectWriter) Count() int { return int(w.file.Count()) }

// Write appends one reject: e's location, field and reason (with e.Err's text
// after ": " when set), and requestID ("" when unknown). A request ID that is
// not valid UTF-8 or holds a control character is written Go-quoted
// (strconv.Quote, with its surrounding double quotes), so the reject file
// stays valid UTF-8 text. Errors wrap the underlying I/O error and are
// sticky.
func (w *RejectWriter) Write(e textin.RowError, requestID string) error {
	reason := e.Reason
	if e.Err != nil {
		if reason != "" {
			reason += ": "
		}
		reason += e.Err.Error()
	}
	w.rec = [6]string{e.Loc.File, itoaOrEmpty(e.Loc.Line), itoaOrEmpty(e.Loc.Record), printable(requestID), e.Field, printable(reason)}
	return w.file.Write(w.rec[:])
}

func itoaOrEmpty(n int) string {
	if n <= 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// printable returns s, or its Go-quoted form when s is not valid UTF-8 or
// contains a control character other than tab and newline.
func printable(s string) string {
	if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool {
		return r < 0x20 && r != '\t' && r != '\n' || r == 0x7f
	}) {
		return strconv.Quote(s)
	}
	return s
}

// Close flushes and syncs the reject file and renames PATH.tmp to PATH. With
// no rejects it writes nothing and removes a stale reject file at PATH (see
// RejectWriter). Calling Close again is a no-op.
func (w *RejectWriter) Close() error {
	_, err := w.file.Close()
	return err
}
