// Package pipeline holds arkhe's record type, the manifest readers (CSV, JSON
// Lines, Parquet), validation of manifest rows, the reject file, the mint map
// and the streaming run that ties them together.
//
// This file defines the shapes shared by every reader: Record, Field, Location,
// the per-row RowError and the fatal ManifestError, the Reader interface and
// OpenManifest, which picks a reader by file extension.
package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/arkhe-ledger/arkhe/textin"
)

// Field names one of the six manifest fields. Its value is also the
// bit position of the field in Record.Has.
type Field uint8

// The manifest fields, in canonical order (`request_id`, `url`, `who`,
// `what`, `when`, `commitment`). url is the target (ERC where); who,
// what, when are ERC fields; commitment is the ERC persistence statement.
const (
	FieldRequestID Field = iota
	FieldURL
	FieldWho
	FieldWhat
	FieldWhen
	FieldCommitment
)

// NumFields is the number of manifest fields (FieldRequestID..FieldCommitment).
const NumFields = 6

// fieldNames are the default source names and the canonical spelling of each
// Field, indexed by Field.
var fieldNames = [NumFields]string{"request_id", "url", "who", "what", "when", "commitment"}

// String returns the field's manifest name ("request_id", "url", "who",
// "what", "when", "commitment"), or "field(N)" for an out-of-range value.
func (f Field) String() string {
	if int(f) < NumFields {
		return fieldNames[f]
	}
	return "field(" + strconv.Itoa(int(f)) + ")"
}

// Bit returns the field's bit in Record.Has (1 << f).
func (f Field) Bit() uint8 { return 1 << f }

// Presence bits of Record.Has, one per Field.
const (
	HasRequestID  uint8 = 1 << FieldRequestID
	HasURL        uint8 = 1 << FieldURL
	HasWho        uint8 = 1 << FieldWho
	HasWhat       uint8 = 1 << FieldWhat
	HasWhen       uint8 = 1 << FieldWhen
	HasCommitment uint8 = 1 << FieldCommitment
)

// Record is one manifest row mapped to the six manifest fields.
//
// Missing and empty are distinct: Has holds one bit per Field (HasURL, ...).
// A field whose bit is clear is absent — stored as NULL, never invented
// — and its string is "". A field whose bit is set is
// present, possibly with an empty value. A bitmask was chosen over *string
// because it keeps Record free of extra pointers and allocations (one string
// allocation per record in the CSV and JSON readers).
//
// The readers set a field present only when the source holds a non-empty
// value: an empty CSV cell, a JSON null, "", [] or a missing key, and a
// Parquet NULL or "" all leave it absent, so CSV and JSON exports of one
// collection give the same records (MAPPINGS.md).
type Record struct {
	RequestID, URL, Who, What, When, Commitment string
	// Has is the presence bitmask, bit Field.Bit() per field.
	Has uint8
	// Source is where the record came from.
	Source textin.Location
}

// Value returns field f's value and whether it is present. An out-of-range f
// reports ("", false).
func (r *Record) Value(f Field) (string, bool) {
	present := r.Has&(1<<f) != 0
	switch f {
	case FieldRequestID:
		return r.RequestID, present
	case FieldURL:
		return r.URL, present
	case FieldWho:
		return r.Who, present
	case FieldWhat:
		return r.What, present
	case FieldWhen:
		return r.When, present
	case FieldCommitment:
		return r.Commitment, present
	}
	return "", false
}

// Set stores v as field f's value and marks it present (even when v is "").
// An out-of-range f is ignored.
func (r *Record) Set(f Field, v string) {
	switch f {
	case FieldRequestID:
		r.RequestID = v
	case FieldURL:
		r.URL = v
	case FieldWho:
		r.Who = v
	case FieldWhat:
		r.What = v
	case FieldWhen:
		r.When = v
	case FieldCommitment:
		r.Commitment = v
	default:
		return
	}
	r.Has |= 1 << f
}

// Clear makes field f absent (NULL) and empties its string.
func (r *Record) Clear(f Field) {
	if int(f) >= NumFields {
		return
	}
	r.Set(f, "")
	r.Has &^= 1 << f
}

// payloadDigestTag is the domain-separation prefix of PayloadDigest, version 1.
const payloadDigestTag = "arkhe payload v1\x00"

// PayloadDigest returns the receipt digest of the record's mapped payload: the first 16 bytes of SHA-256 over
//
//	"arkhe payload v1" 0x00
//	then for each of url, who, what, when, commitment in this order:
//	  0x00                                   if the field is absent (NULL), or
//	  0x01, uint64 big-endian length, bytes  if it is present
//
// so that NULL and "" differ and no two payloads share an encoding. The
// request ID and the source location are not part of the payload. The
// encoding is frozen: receipts store the digest, so changing it would make
// every replay look like a changed payload.
func PayloadDigest(r *Record) [16]byte {
	// One contiguous buffer, on the stack for ordinary payloads.
	buf := make([]byte, 0, 512)
	buf = append(buf, payloadDigestTag...)
	for f := FieldURL; f <= FieldCommitment; f++ {
		v, ok := r.Value(f)
		if !ok {
			buf = append(buf, 0)
			continue
		}
		buf = append(buf, 1)
		buf = binary.BigEndian.AppendUint64(buf, uint64(len(v)))
		buf = append(buf, v...)
	}
	sum := sha256.Sum256(buf)
	var d [16]byte
	copy(d[:], sum[:16])
	return d
}

// Sentinel causes wrapped by ManifestError; test with errors.Is.
var (
	// ErrUnknownFormat: the manifest's extension is none of .csv, .jsonl,
	// .ndjson, .json (each optionally + .gz) or .parquet.
	ErrUnknownFormat = errors.New("unknown manifest format")
	// ErrNoHeader: a CSV manifest has no header line.
	ErrNoHeader = errors.New("no header line")
	// ErrMissingColumn: the request ID column, or a column the mapping names
	// explicitly, is not in the CSV header or the Parquet schema.
	ErrMissingColumn = errors.New("mapped column not found")
	// ErrDuplicateColumn: a CSV header names a column the reader uses twice (or, in a change
	// manifest, two of its names stand for one column under the mapping); which of the two
	// values would count cannot be known, so the manifest is refused.
	ErrDuplicateColumn = errors.New("column named twice in the header")
)

// MaxRecordBytes bounds the raw size of one manifest record (one CSV record, one JSON line), so
// a reader's memory stays independent of the file's size even when a quote is left open. A
// longer JSON line, CSV line or CSV record is rejected as a *RowError and reading resumes after
// it (for a CSV record broken inside a quoted field, by the rule of CSVScanner).
const MaxRecordBytes = 64 << 20

// ManifestError is a fatal manifest error: the file cannot be opened or read
// further (unreadable file, bad gzip header, missing header or column, an
// unknown extension, a bad JSON path in the mapping). The run stops ("could
// not run", exit code 2, when nothing was read). Loc
// says how far reading got (File always set). Err is the cause, often a
// sentinel above, an *fs.PathError or a *MappingError.
type ManifestError struct {
	Loc textin.Location
	Op  string // "open", "read", "header", "schema"
	Err error
}

// Error renders "LOC: OP manifest: ERR".
func (e *ManifestError) Error() string {
	return e.Loc.String() + ": " + e.Op + " manifest: " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *ManifestError) Unwrap() error { return e.Err }

// Reader streams the records of one manifest. Memory use is independent of the
// file's size. A Reader is used by one goroutine at a time.
type Reader interface {
	// Next returns the next record. At the end it returns io.EOF. A bad row
	// yields a *RowError together with a Record that must not be minted: it
	// holds only Source and, when the reader got that far, the request ID
	// (for the reject file). The following call continues with the next row. Any other error is
	// fatal (*ManifestError, or ctx.Err() when ctx is done) and is returned
	// again by every later call.
	Next(ctx context.Context) (Record, error)
	// Close releases the file. It is safe to call more than once.
	Close() error
}

// Format is a manifest file format chosen by extension.
type Format uint8

// The manifest formats.
const (
	FormatUnknown Format = iota
	FormatCSV
	FormatJSONLines
	FormatParquet
)

// String returns "csv", "jsonl", "parquet" or "unknown".
func (f Format) String() string {
	switch f {
	case FormatCSV:
		return "csv"
	case FormatJSONLines:
		return "jsonl"
	case FormatParquet:
		return "parquet"
	}
	return "unknown"
}

// DetectFormat returns the manifest format of path from its extension, case
// insensitively, and whether it is gzip-compressed: .csv, .jsonl, .ndjson and
// .json (JSON Lines), each optionally followed by .gz, and .parquet (never
// gzipped: Parquet compresses inside).
func DetectFormat(path string) (Format, bool) {
	name := strings.ToLower(path)
	gz := strings.HasSuffix(name, ".gz")
	if gz {
		name = strings.TrimSuffix(name, ".gz")
	}
	switch {
	case strings.HasSuffix(name, ".csv"):
		return FormatCSV, gz
	case strings.HasSuffix(name, ".jsonl"), strings.HasSuffix(name, ".ndjson"), strings.HasSuffix(name, ".json"):
		return FormatJSONLines, gz
	case strings.HasSuffix(name, ".parquet") && !gz:
		return FormatParquet, false
	}
	return FormatUnknown, gz
}

// OpenManifest opens the manifest at path with mapping m (the zero Mapping is
// the default one) and returns a streaming Reader chosen by extension (see
// DetectFormat). CSV reads the header at once, so a missing header or column
// fails here; Parquet reads the footer here. Errors are *ManifestError
// (wrapping ErrUnknownFormat, ErrNoHeader, ErrMissingColumn, a *MappingError
// for a bad JSON path, or the *fs.PathError of an unreadable file).
func OpenManifest(path string, m Mapping) (Reader, error) {
	r, _, err := openManifest(path, m)
	return r, err
}

// openManifest is OpenManifest, with a function that tells how far the reader has got into its
// file, for Run's Extent: octets of the file as stored (a gzip file's compressed octets, counted
// as they are read from the file) for CSV and JSON Lines, rows read for Parquet. The function
// is called from the goroutine that calls Next.
func openManifest(path string, m Mapping) (Reader, func() int64, error) {
	format, gz := DetectFormat(path)
	if format == FormatUnknown {
		return nil, nil, &ManifestError{Loc: textin.Location{File: path}, Op: "open",
			Err: fmt.Errorf("%w: want .csv, .jsonl, .ndjson, .json (optionally .gz) or .parquet", ErrUnknownFormat)}
	}
	if format == FormatParquet {
		r, err := openParquetManifest(path, m)
		if err != nil {
			return nil, nil, err
		}
		return r, func() int64 { return int64(r.rec) }, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, &ManifestError{Loc: textin.Location{File: path}, Op: "open", Err: err}
	}
	c := textin.CompressionNone
	if gz {
		c = textin.CompressionGzip
	}
	counted := &countingReader{r: f}
	src, err := textin.NewTextReader(counted, c)
	if err != nil {
		_ = f.Close()
		return nil, nil, &ManifestError{Loc: textin.Location{File: path}, Op: "open", Err: err}
	}
	var r Reader
	if format == FormatCSV {
		r, err = newCSVManifest(path, src, f, m, MaxRecordBytes)
	} else {
		r, err = newJSONManifest(path, src, f, m)
	}
	if err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	return r, func() int64 { return counted.n }, nil
}

// countingReader counts the octets read through it.
type countingReader struct {
	r io.Reader
	n int64
}

// Read implements io.Reader.
func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
