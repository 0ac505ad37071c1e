package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
)

// countRows counts the rows of table in the test's database.
func countRows(t *testing.T, url, table string) int64 {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int64
	if err := conn.QueryRow(context.Background(), "select count(*) from "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// ezidANVL returns n EZID ANVL records under NAAN 54321 (ark:/54321/x6r000001 ...).
func ezidANVL(n int, lineEnd string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, ":: ark:/54321/x6r%06d%s_target: https://example.org/%d%s_profile: erc%s%s", i, lineEnd, i, lineEnd, lineEnd, lineEnd)
	}
	return b.String()
}

// gzipCut gzips data and returns the first half of the compressed bytes, with the number of
// whole lines the cut stream still decodes to.
func gzipCut(t *testing.T, data []byte) ([]byte, int) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	cut := buf.Bytes()[:buf.Len()/2]
	zr, err := gzip.NewReader(bytes.NewReader(cut))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("the cut stream reads with %v, want io.ErrUnexpectedEOF", err)
	}
	return cut, bytes.Count(got, []byte{'\n'})
}

// TestMintImportCROnly: a manifest and a legacy export with CR-only line ends (classic Mac OS)
// are read line by line: every row lands.
func TestMintImportCROnly(t *testing.T) {
	url := pgtest.URL(t)
	if code, _, errOut := arkhe(t, url, "", "init", "--test-registration"); code != 0 {
		t.Fatalf("init: %s", errOut)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	var b bytes.Buffer
	if _, err := fixtures.WriteManifestCSV(&b, fixtures.ManifestConfig{Rows: 1000, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	cr := bytes.ReplaceAll(bytes.ReplaceAll(b.Bytes(), []byte("\r\n"), []byte("\n")), []byte("\n"), []byte("\r"))
	if bytes.IndexByte(cr, '\n') >= 0 {
		t.Fatal("the CR-only manifest holds an LF")
	}
	if err := os.WriteFile("mac.csv", cr, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := arkhe(t, url, "", "mint", "--client", "test-minter", "mac.csv")
	if code != 0 || !strings.Contains(out, "read        1,000") || !strings.Contains(out, "minted      1,000") {
		t.Fatalf("mint: exit %d\n%s\n%s", code, out, errOut)
	}
	if n := countRows(t, url, "ark"); n != 1000 {
		t.Fatalf("ledger holds %d ARKs after the mint, want 1000", n)
	}

	if err := os.WriteFile("mac.anvl", []byte(ezidANVL(1000, "\r")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = arkhe(t, url, "", "import", "mac.anvl")
	if code != 0 || !strings.Contains(out, "read         1,000 records") || !strings.Contains(out, "imported     1,000 ARKs") {
		t.Fatalf("import: exit %d\n%s\n%s", code, out, errOut)
	}
	if n := countRows(t, url, "ark"); n != 2000 {
		t.Fatalf("ledger holds %d ARKs after the import, want 2000", n)
	}
}

// TestMintImportTruncatedGzip: a .gz cut in half yields its whole rows (they land), then one
// finding where the stream ends; the run is done with findings (exit 1).
func TestMintImportTruncatedGzip(t *testing.T) {
	url := pgtest.URL(t)
	if code, _, errOut := arkhe(t, url, "", "init", "--test-registration"); code != 0 {
		t.Fatalf("init: %s", errOut)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	var b bytes.Buffer
	if _, err := fixtures.WriteManifestCSV(&b, fixtures.ManifestConfig{Rows: 10000, Seed: 8}); err != nil {
		t.Fatal(err)
	}
	cut, lines := gzipCut(t, b.Bytes())
	good := lines - 1 // the header
	if err := os.WriteFile("cut.csv.gz", cut, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := arkhe(t, url, "", "mint", "--client", "test-minter", "cut.csv.gz")
	if code != 1 || !strings.Contains(out, fmt.Sprintf("minted      %s", thousands(int64(good)))) || !strings.Contains(out, "rejected    1\n") {
		t.Fatalf("mint (%d whole rows): exit %d\n%s\n%s", good, code, out, errOut)
	}
	if n := countRows(t, url, "ark"); n != int64(good) {
		t.Fatalf("ledger holds %d ARKs, want %d", n, good)
	}
	t.Logf("mint of a 10,000-row manifest cut in half: %d whole rows minted, one finding", good)
	rej, err := os.ReadFile("cut.csv.gz.rejects.csv")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("cut.csv.gz,%d,%d,,,\"unexpected EOF in the gzip stream after line %d (record %d)", lines+1, good+1, lines, good)
	if !strings.Contains(string(rej), want) {
		t.Errorf("reject file lacks %q:\n%s", want, rej)
	}

	cut, lines = gzipCut(t, []byte(ezidANVL(2000, "\n")))
	if err := os.WriteFile("cut.anvl.gz", cut, 0o644); err != nil {
		t.Fatal(err)
	}
	whole := lines / 4 // four lines per record
	code, out, errOut = arkhe(t, url, "", "import", "cut.anvl.gz")
	if code != 1 || !strings.Contains(out, fmt.Sprintf("imported     %s ARKs", thousands(int64(whole)))) ||
		!strings.Contains(out, "unexpected EOF in the gzip stream after line") || !strings.Contains(out, "done with findings") {
		t.Fatalf("import (%d whole records): exit %d\n%s\n%s", whole, code, out, errOut)
	}
	if n := countRows(t, url, "ark"); n != int64(good+whole) {
		t.Fatalf("ledger holds %d ARKs, want %d", n, good+whole)
	}
	t.Logf("import of a 2,000-record export cut in half: %d whole records imported, one finding", whole)
}

// TestImportDuplicateKey: an EZID database record that names its identifier twice is rejected
// naming the key; the records around it land, and neither identifier of the bad one does.
func TestImportDuplicateKey(t *testing.T) {
	url := pgtest.URL(t)
	t.Chdir(t.TempDir())
	rec := func(fields string) string {
		return `{"model":"ezidapp.identifier","pk":1,"fields":{` + fields + `,"target":"https://example.org/x","status":"P"}}` + "\n"
	}
	dump := rec(`"identifier":"ark:/54321/x6a1"`) + rec(`"identifier":"ark:/54321/x6a2","identifier":"ark:/54321/x6evil"`) +
		rec(`"identifier":"ark:/54321/x6a3"`)
	if err := os.WriteFile("db.identifier.jsonl", []byte(dump), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := arkhe(t, url, "", "import", "db.identifier.jsonl")
	if code != 1 || !strings.Contains(out, "imported     2 ARKs") || !strings.Contains(out, "rejected     1 bad record") {
		t.Fatalf("import: exit %d\n%s\n%s", code, out, errOut)
	}
	rej, err := os.ReadFile("db.identifier.rejects.csv")
	if err != nil || !strings.Contains(string(rej), `key ""fields.identifier"" given twice`) {
		t.Errorf("reject file (%v):\n%s", err, rej)
	}
	if n := countRows(t, url, "ark"); n != 2 {
		t.Errorf("ledger holds %d ARKs, want 2", n)
	}
}

// TestMintImportMidFileBOM: files joined together carry a byte order mark in mid-file; the rows
// behind it are rejected naming line and field (before: mint kept it inside a request ID, import
// skipped the row as non-ARK, both exit 0).
func TestMintImportMidFileBOM(t *testing.T) {
	url := pgtest.URL(t)
	if code, _, errOut := arkhe(t, url, "", "init", "--test-registration"); code != 0 {
		t.Fatalf("init: %s", errOut)
	}
	t.Chdir(t.TempDir())
	const bom = "\ufeff"
	joined := bom + "request_id,what\nr1,one\n" + bom + "request_id,what\n" + bom + "r2,two\nr3,three\n"
	if err := os.WriteFile("joined.csv", []byte(joined), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := arkhe(t, url, "", "mint", "--client", "test-minter", "joined.csv")
	if code != 1 || !strings.Contains(out, "minted      2") || !strings.Contains(out, "rejected    2") {
		t.Fatalf("mint: exit %d\n%s\n%s", code, out, errOut)
	}
	rej, err := os.ReadFile("joined.csv.rejects.csv")
	if err != nil || !strings.Contains(string(rej), "joined.csv,3,2,") || !strings.Contains(string(rej), "joined.csv,4,3,") ||
		!strings.Contains(string(rej), ",request_id,byte order mark (U+FEFF) at octet 1") {
		t.Errorf("mint reject file (%v):\n%s", err, rej)
	}

	csv := "_id,_target\nark:/54321/x6b1,https://example.org/1\n" + bom + "ark:/54321/x6b2,https://example.org/2\nark:/54321/x6b3,https://example.org/3\n"
	if err := os.WriteFile("dl.csv", []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = arkhe(t, url, "", "import", "dl.csv")
	if code != 1 || !strings.Contains(out, "imported     2 ARKs") || !strings.Contains(out, "rejected     1 bad record") ||
		!strings.Contains(out, "skipped      0 non-ARK") {
		t.Fatalf("import: exit %d\n%s\n%s", code, out, errOut)
	}
	rej, err = os.ReadFile("dl.rejects.csv")
	if err != nil || !strings.Contains(string(rej), ",3,2,"+bom+"ark:/54321/x6b2,,rejected,id,\"value holds a byte order mark (U+FEFF), which belongs") {
		t.Errorf("import reject file (%v):\n%s", err, rej)
	}
}
