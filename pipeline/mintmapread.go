package pipeline

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/textin"
)

// MintMapEntry is one row read back from a mint map by OpenMintMap: the row as written
// (MintMapRow, its payload pointers nil for a value the row did not hold), whether the map
// records payloads at all, and where the row is.
type MintMapEntry struct {
	MintMapRow
	// PayloadKnown is false for a mint map written before mint maps recorded the payload (the
	// columns request_id, ark and status only): the payload pointers are then nil because
	// nothing is known of the payload, not because the payload was empty.
	PayloadKnown bool
	// Source is where the row is: File, Line (0 for Parquet) and Record.
	Source textin.Location
}

// Record returns the entry's payload as the manifest Record it was minted from: request ID,
// the payload fields present exactly where the entry holds a value, Source kept. Its
// PayloadDigest is the digest of the mint's receipt when PayloadKnown.
func (e *MintMapEntry) Record() Record {
	r := Record{Source: e.Source}
	r.Set(FieldRequestID, e.RequestID)
	for _, f := range []struct {
		f Field
		v *string
	}{{FieldURL, e.URL}, {FieldWho, e.Who}, {FieldWhat, e.What}, {FieldWhen, e.When}, {FieldCommitment, e.Commitment}} {
		if f.v != nil && *f.v != "" {
			r.Set(f.f, *f.v)
		}
	}
	return r
}

// MintMapReader streams the rows of one mint map. Not safe for concurrent use.
type MintMapReader struct {
	path    string
	payload Reader // request_id and the payload columns (the default mapping)
	names   Reader // ark and status, read as request_id and url
	known   bool
	closed  bool
}

// namesMapping reads a mint map's ark column as FieldRequestID and its status column as
// FieldURL; every other field is unmapped.
var namesMapping = Mapping{}.With(FieldRequestID, "ark").With(FieldURL, "status").With(FieldWho, "").
	With(FieldWhat, "").With(FieldWhen, "").With(FieldCommitment, "")

// OpenMintMap opens the mint map at path, in the format its extension names as CreateMintMap
// does (.csv, .jsonl or .ndjson, optionally .gz, or .parquet; DetectFormat). The columns request_id, ark and
// status are required; url, who, what, when and commitment are the payload, present in every
// mint map this arkhe writes and absent from those written before (MintMapEntry.PayloadKnown).
// Columns are found by name, so their order does not matter. An empty value (an empty CSV
// cell, a JSON null or "", a Parquet NULL) reads as absent, as the manifest readers read it.
// Errors are *ManifestError: an unknown extension (ErrUnknownFormat), an unreadable file, a
// missing header or a missing required column (ErrMissingColumn, naming it).
func OpenMintMap(path string) (*MintMapReader, error) {
	format, gz := DetectFormat(path)
	if format == FormatUnknown {
		return nil, &ManifestError{Loc: textin.Location{File: path}, Op: "open",
			Err: fmt.Errorf("mint map: %w: want .csv, .jsonl, .ndjson (optionally .gz) or .parquet", ErrUnknownFormat)}
	}
	known, err := mintMapHasPayload(path, format, gz)
	if err != nil {
		return nil, err
	}
	payload, err := OpenManifest(path, Mapping{})
	if err != nil {
		return nil, err
	}
	names, err := OpenManifest(path, namesMapping)
	if err != nil {
		_ = payload.Close()
		var me *ManifestError
		if errors.As(err, &me) && errors.Is(err, ErrMissingColumn) {
			me.Err = fmt.Errorf("%w: a mint map needs the columns request_id, ark and status", ErrMissingColumn)
		}
		return nil, err
	}
	return &MintMapReader{path: path, payload: payload, names: names, known: known}, nil
}

// mintMapHasPayload reports whether the mint map at path has the payload columns: the CSV
// header or the Parquet schema names url; the first JSON line has the key url (a mint map's
// rows all have the same keys).
func mintMapHasPayload(path string, format Format, gz bool) (bool, error) {
	if format != FormatJSONLines {
		r, err := OpenManifest(path, Mapping{}.With(FieldURL, "url"))
		if errors.Is(err, ErrMissingColumn) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		_ = r.Close()
		return true, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return false, &ManifestError{Loc: textin.Location{File: path}, Op: "open", Err: err}
	}
	defer f.Close()
	c := textin.CompressionNone
	if gz {
		c = textin.CompressionGzip
	}
	src, err := textin.NewTextReader(f, c)
	if err != nil {
		return false, &ManifestError{Loc: textin.Location{File: path}, Op: "open", Err: err}
	}
	sc := bufio.NewScanner(src)
	sc.Buffer(make([]byte, 0, 64<<10), MaxRecordBytes)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var keys map[string]json.RawMessage
		if json.Unmarshal([]byte(line), &keys) != nil {
			return false, nil // the row readers report the line
		}
		_, ok := keys["url"]
		return ok, nil
	}
	return false, nil
}

// Next returns the next row. At the end it returns io.EOF. A bad row returns a
// *textin.RowError naming the file, line (record, for Parquet) and field (request_id, ark,
// status or a payload column) and the rule: a value missing (request ID, ARK, status), an ARK
// that does not parse (ark.Parse), a status other than minted or replayed, or what the
// manifest readers refuse (a broken CSV record, invalid UTF-8, a line over MaxRecordBytes);
// the next call continues with the following row. Any other error is fatal (*ManifestError,
// or ctx.Err()) and is returned again by every later call.
func (m *MintMapReader) Next(ctx context.Context) (MintMapEntry, error) {
	if m.closed {
		return MintMapEntry{}, &ManifestError{Loc: textin.Location{File: m.path}, Op: "read", Err: errors.New("reader closed")}
	}
	p, perr := m.payload.Next(ctx)
	n, nerr := m.names.Next(ctx)
	if errors.Is(perr, io.EOF) && errors.Is(nerr, io.EOF) {
		return MintMapEntry{}, io.EOF
	}
	for _, err := range []error{perr, nerr} {
		if err != nil && !isRowError(err) {
			return MintMapEntry{}, err
		}
	}
	if perr == nil && nerr == nil && p.Source.Record != n.Source.Record {
		return MintMapEntry{}, &ManifestError{Loc: p.Source, Op: "read",
			Err: fmt.Errorf("mint map: the readers of its columns are at records %d and %d (a defect)", p.Source.Record, n.Source.Record)}
	}
	e := MintMapEntry{PayloadKnown: m.known, Source: p.Source}
	if perr != nil {
		return e, perr
	}
	if nerr != nil {
		re, _ := textin.AsRowError(nerr)
		re.Field = map[string]string{"request_id": "ark", "url": "status"}[re.Field]
		return e, re
	}
	bad := func(field, reason string) (MintMapEntry, error) {
		return e, &textin.RowError{Loc: e.Source, Field: field, Reason: reason}
	}
	e.RequestID, e.ARK = p.RequestID, n.RequestID
	e.Status = n.URL
	if m.known {
		e.URL = optional(p.Has&HasURL != 0, &p.URL)
		e.Who = optional(p.Has&HasWho != 0, &p.Who)
		e.What = optional(p.Has&HasWhat != 0, &p.What)
		e.When = optional(p.Has&HasWhen != 0, &p.When)
		e.Commitment = optional(p.Has&HasCommitment != 0, &p.Commitment)
	}
	switch {
	case p.Has&HasRequestID == 0:
		return bad("request_id", "no request ID")
	case n.Has&HasRequestID == 0:
		return bad("ark", "no ARK")
	case n.Has&HasURL == 0:
		return bad("status", "no status")
	case e.Status != StatusMinted && e.Status != StatusReplayed:
		return bad("status", fmt.Sprintf("status %q, want %q or %q", e.Status, StatusMinted, StatusReplayed))
	}
	if _, err := ark.Parse(e.ARK); err != nil {
		return e, &textin.RowError{Loc: e.Source, Field: "ark", Reason: "not an ARK", Err: err}
	}
	return e, nil
}

// isRowError reports whether err is a *textin.RowError.
func isRowError(err error) bool {
	_, ok := textin.AsRowError(err)
	return ok
}

// optional returns p when present, else nil.
func optional(present bool, p *string) *string {
	if !present {
		return nil
	}
	return p
}

// Close releases the file. It is safe to call more than once.
func (m *MintMapReader) Close() error {
	if m.closed {
		return nil
	}
	m.closed = true
	err := m.payload.Close()
	if e := m.names.Close(); err == nil {
		err = e
	}
	return err
}
