package pipeline

import (
	"context"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arkhe-ledger/arkhe/textin"
)

// readAll drains a reader, returning the records and the row errors in
// order; it fails the test on a fatal error.
func drainManifest(t testing.TB, r Reader) ([]Record, []*textin.RowError) {
	t.Helper()
	ctx := context.Background()
	var recs []Record
	var bad []*textin.RowError
	for {
		rec, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			return recs, bad
		}
		var re *textin.RowError
		if errors.As(err, &re) {
			bad = append(bad, re)
			continue
		}
		if err != nil {
			t.Fatalf("fatal error after %d records: %v", len(recs), err)
		}
		recs = append(recs, rec)
	}
}

// open opens path with the mapping string ms, failing the test on error.
func mustOpen(t testing.TB, path, ms string) Reader {
	t.Helper()
	m, err := ParseMapping(ms)
	if err != nil {
		t.Fatal(err)
	}
	r, err := OpenManifest(path, m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// writeFile writes content to a fresh file named name in a temp dir.
func writeTemp(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRecordPresence(t *testing.T) {
	t.Parallel()
	var r Record
	r.Set(FieldWho, "")
	if v, ok := r.Value(FieldWho); !ok || v != "" {
		t.Errorf("after Set(who, \"\"): Value = %q, %v; want \"\", true", v, ok)
	}
	if r.Has != HasWho {
		t.Errorf("Has = %08b, want %08b", r.Has, HasWho)
	}
	r.Set(FieldURL, "https://example.org/x")
	r.Clear(FieldWho)
	if _, ok := r.Value(FieldWho); ok {
		t.Error("who still present after Clear")
	}
	if r.URL != "https://example.org/x" || r.Has != HasURL {
		t.Errorf("record = %+v", r)
	}
	if got := FieldCommitment.String(); got != "commitment" {
		t.Errorf("FieldCommitment.String() = %q", got)
	}
	if got := Field(9).String(); got != "field(9)" {
		t.Errorf("Field(9).String() = %q", got)
	}
}

func TestPayloadDigest(t *testing.T) {
	t.Parallel()
	var a Record
	a.Set(FieldRequestID, "A00001")
	a.Set(FieldURL, "http://www.tate.org.uk/art/artworks/a00001")
	a.Set(FieldWho, "Robert Blake")
	// Golden value: the encoding is frozen (receipts store it).
	if got := hex.EncodeToString(func() []byte { d := PayloadDigest(&a); return d[:] }()); got != goldenDigest {
		t.Errorf("PayloadDigest = %s, want %s", got, goldenDigest)
	}
	// The request ID and the location are not part of the payload.
	b := a
	b.RequestID = "other"
	b.Source = textin.Location{File: "x", Line: 3, Record: 3}
	if PayloadDigest(&a) != PayloadDigest(&b) {
		t.Error("digest depends on request ID or location")
	}
	// NULL differs from empty.
	c := a
	c.Set(FieldWhat, "")
	if PayloadDigest(&a) == PayloadDigest(&c) {
		t.Error("absent what and empty what give the same digest")
	}
	// Moving text between fields changes the digest.
	d := a
	d.Clear(FieldWho)
	d.Set(FieldWhat, "Robert Blake")
	if PayloadDigest(&a) == PayloadDigest(&d) {
		t.Error("who=X and what=X give the same digest")
	}
	// Length prefixes keep concatenations apart.
	e, f := Record{}, Record{}
	e.Set(FieldWho, "ab")
	e.Set(FieldWhat, "c")
	f.Set(FieldWho, "a")
	f.Set(FieldWhat, "bc")
	if PayloadDigest(&e) == PayloadDigest(&f) {
		t.Error("who=ab,what=c and who=a,what=bc collide")
	}
}

func TestDetectFormat(t *testing.T) {
	t.Parallel()
	cases := []struct {
		path string
		f    Format
		gz   bool
	}{
		{"a.csv", FormatCSV, false},
		{"A.CSV.GZ", FormatCSV, true},
		{"tate.jsonl.gz", FormatJSONLines, true},
		{"x.ndjson", FormatJSONLines, false},
		{"x.json", FormatJSONLines, false},
		{"x.parquet", FormatParquet, false},
		{"x.parquet.gz", FormatUnknown, true},
		{"x.tsv", FormatUnknown, false},
	}
	for _, c := range cases {
		f, gz := DetectFormat(c.path)
		if f != c.f || gz != c.gz {
			t.Errorf("DetectFormat(%q) = %v, %v; want %v, %v", c.path, f, gz, c.f, c.gz)
		}
	}
}

func TestOpenManifestFatal(t *testing.T) {
	t.Parallel()
	_, err := OpenManifest(filepath.Join(t.TempDir(), "missing.csv"), Mapping{})
	var me *ManifestError
	if !errors.As(err, &me) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: err = %v, want *ManifestError wrapping fs.ErrNotExist", err)
	}
	_, err = OpenManifest("manifest.xlsx", Mapping{})
	if !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("xlsx: err = %v, want ErrUnknownFormat", err)
	}
	p := writeTemp(t, "bad.jsonl.gz", "this is not gzip")
	_, err = OpenManifest(p, Mapping{})
	if !errors.As(err, &me) || !strings.Contains(err.Error(), "gzip") {
		t.Errorf("bad gzip: err = %v, want *ManifestError about gzip", err)
	}
}

// goldenDigest is PayloadDigest of TestPayloadDigest's record a, computed
// independently (Python hashlib) as the first 16 bytes of
//
//	sha256("arkhe payload v1\x00" + 01 u64be(len(url)) url + 01 u64be(len(who)) who + 00 00 00)
const goldenDigest = "51e13df5887e0a6f454c19835e7b42bb"

func TestRowErrorCarriesRequestID(t *testing.T) {
	t.Parallel()
	// For the reject file, a bad row still reports its request ID when the
	// reader got that far, and its Source equals the error's location.
	cases := []struct{ name, content, wantID string }{
		{"m.csv", "request_id,what\nr1,a,extra\n", "r1"},
		{"m.csv", "what,request_id\nonly\n", ""},
		{"m.jsonl", `{"request_id":"b","what":` + "\n", "b"},
		{"m.jsonl", `{"what":{},"request_id":"c"}` + "\n", ""},
	}
	for _, c := range cases {
		r := mustOpen(t, writeTemp(t, c.name, c.content), "")
		rec, err := r.Next(t.Context())
		var re *textin.RowError
		if !errors.As(err, &re) {
			t.Errorf("%q: err = %v, want *RowError", c.content, err)
			continue
		}
		if rec.RequestID != c.wantID || rec.Source != re.Loc || rec.Has&^HasRequestID != 0 {
			t.Errorf("%q: record %+v, error at %v; want request ID %q", c.content, rec, re.Loc, c.wantID)
		}
	}
}
