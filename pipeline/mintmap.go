package pipeline

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/arkhe-ledger/arkhe/report"
)

// Mint statuses of a mint map row (minted now, or replayed from its receipt).
const (
	StatusMinted   = "minted"
	StatusReplayed = "replayed"
)

// MintMapRow is one line of the mint map: the manifest's request ID, the ARK
// it got in printed form (`ark:NAAN/name`) and the status,
// StatusMinted or StatusReplayed, then the payload the row was minted (or
// replayed) with: url, who, what, when and commitment as the manifest row
// mapped them, nil (an empty CSV cell, a JSON null, a Parquet NULL) for a
// field the row did not hold. The payload makes a mint map a recovery source:
// a lost ARK can be put back whole, with a receipt whose digest is the one its
// mint wrote (PayloadDigest of MintMapEntry.Record). Columns are only ever
// appended, so a reader of the first three still reads them where they were.
// No internal key ever appears here. The struct tags name the columns of
// every format.
type MintMapRow struct {
	RequestID  string  `parquet:"request_id" json:"request_id"`
	ARK        string  `parquet:"ark" json:"ark"`
	Status     string  `parquet:"status,dict" json:"status"`
	URL        *string `parquet:"url,optional" json:"url"`
	Who        *string `parquet:"who,optional" json:"who"`
	What       *string `parquet:"what,optional" json:"what"`
	When       *string `parquet:"when,optional" json:"when"`
	Commitment *string `parquet:"commitment,optional" json:"commitment"`
}

// MintMapWriter writes a mint map. Rows appear in the order written. The
// output goes to a temporary file beside PATH and reaches PATH only through a
// successful Close, so a failed or killed run never leaves a complete-looking
// mint map; the re-run replays and writes it whole. Not safe for concurrent
// use.
type MintMapWriter interface {
	// Write appends one row. It fails for an empty request ID or ARK or an
	// unknown status, and on I/O errors (which are sticky).
	Write(MintMapRow) error
	// Close flushes, syncs and renames the temporary file to PATH. After an
	// earlier error it removes the temporary file instead and returns that
	// error. Close after Abort does nothing.
	Close() error
	// Abort removes the temporary file and leaves PATH untouched (for a
	// failed run).
	Abort() error
}

// CreateMintMap creates the mint map for path, in the format its extension
// names (case insensitively): .csv (header
// request_id,ark,status,url,who,what,when,commitment), .jsonl or .ndjson (one
// object per line with those keys, null for an absent payload field), or
// .parquet (those columns as UTF-8 strings, the payload's nullable,
// zstd-compressed). The
// file is written by report.Writer, which creates its temporary file at once
// in path's directory. Errors: an unknown extension (wraps ErrUnknownFormat),
// or the error of report.Create (wrapping the *fs.PathError of the create).
func CreateMintMap(path string) (MintMapWriter, error) {
	var f report.Format
	switch strings.ToLower(filepath.Ext(path)) {
	case ".csv":
		f = report.CSV
	case ".jsonl", ".ndjson":
		f = report.JSONL
	case ".parquet":
		f = report.Parquet
	default:
		return nil, fmt.Errorf("mint map %s: %w: want .csv, .jsonl, .ndjson or .parquet", path, ErrUnknownFormat)
	}
	w, err := report.Create[MintMapRow](path, f)
	if err != nil {
		return nil, fmt.Errorf("create mint map: %w", err)
	}
	return &mintMap{w: w}, nil
}

// checkMintMapRow validates a row before it is written.
func checkMintMapRow(r MintMapRow) error {
	switch {
	case r.RequestID == "":
		return errors.New("mint map row has no request ID")
	case r.ARK == "":
		return fmt.Errorf("mint map row for request ID %q has no ARK", r.RequestID)
	case r.Status != StatusMinted && r.Status != StatusReplayed:
		return fmt.Errorf("mint map row for request ID %q has status %q, want %q or %q", r.RequestID, r.Status, StatusMinted, StatusReplayed)
	}
	return nil
}

// mintMap is the MintMapWriter over a report.Writer.
type mintMap struct {
	w       *report.Writer[MintMapRow]
	one     [1]MintMapRow
	aborted bool
}

// Write implements MintMapWriter.
func (m *mintMap) Write(r MintMapRow) error {
	if err := checkMintMapRow(r); err != nil {
		return err
	}
	m.one[0] = r
	return m.w.Write(m.one[:]...)
}

// Close implements MintMapWriter.
func (m *mintMap) Close() error {
	if m.aborted {
		return nil
	}
	return m.w.Close()
}

// Abort implements MintMapWriter.
func (m *mintMap) Abort() error {
	m.aborted = true
	return m.w.Abort()
}

// Compile-time checks.
var (
	_ MintMapWriter = (*mintMap)(nil)
	_ io.Closer     = (*RejectWriter)(nil)
)
