package legacy

import (
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arkhe-ledger/arkhe/textin"
)

func TestDetectFormatInline(t *testing.T) {
	t.Parallel()
	for head, want := range map[string]Format{
		upstreamDump:                         ArkletJSON,
		"[{\"model\":\"ezidapp.identifier\"": EZIDDB,
		"{\"model\":\"ezidapp.shoulder\",":   EZIDDBShoulders,
		frickCSV:                             ArkletCSV,
		n2tDump:                              N2TDump,
		ezidANVL:                             EZIDANVL,
		ezidCSV:                              EZIDCSV,
		registryANVL:                         NAANANVL,
		"naa:\nwho: x\n":                     NAANANVL,
		"{\"12025\": {\"what\": \"12025\"}}": NAANJSON2023,
		"{\n \"metadata\": {}":               NAANJSON2024,
		"ark:/87940/m4,UCSB Writing Program,https://n2t.net/a/ezid/m/ark/87940/m4\n":                   ShoulderListEZIDCSV,
		":: ark:/87938/m2\ntype: shoulder\n":                                                           ShoulderListN2TANVL,
		"shoulder.py:83 shoulder impl.nog_sql.shoulder INFO     shoulder - ark:/13030/bn        ?1?\n": ShoulderListEZIDLog,
		utf8BOM + "\r\n" + ezidCSV:                                                                     EZIDCSV,
	} {
		got, err := DetectFormat("x", []byte(head))
		if got != want || err != nil {
			t.Errorf("DetectFormat(%.40q) = %q, %v; want %s", head, got, err, want)
		}
	}
	for _, head := range []string{"", "hello world\n", "{\"a\": 1}", "id,name\n1,2\n"} {
		if f, err := DetectFormat("odd.txt", []byte(head)); !errors.Is(err, ErrUnknownFormat) || f != "" ||
			!strings.Contains(err.Error(), "odd.txt") {
			t.Errorf("DetectFormat(%q) = %q, %v", head, f, err)
		}
	}
}

func TestParseFormat(t *testing.T) {
	t.Parallel()
	if f, err := ParseFormat(" N2T-Dump "); f != N2TDump || err != nil {
		t.Errorf("ParseFormat: %q %v", f, err)
	}
	if _, err := ParseFormat("csv"); !errors.Is(err, ErrUnknownFormat) || !strings.Contains(err.Error(), "arklet-json") {
		t.Errorf("unknown: %v", err)
	}
	if len(Formats()) != 15 {
		t.Errorf("%d formats", len(Formats()))
	}
	if _, err := NewReader(strings.NewReader(""), "x", "bogus"); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("NewReader bogus: %v", err)
	}
}

func TestIdentifierKind(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]string{
		"ark:/13030/c8251g4t": "ark", "ark:13030/c8": "ark", "ARK:/13030/x": "ark", "Ark:13030/x": "ark",
		"https://n2t.net/ark:/13030/x": "ark", "http://example.org/ARK:12345/x": "ark", "12345/x6b4dp12wkm": "ark",
		"doi:10.5063/AA/CONNOLLY.132.4": "doi", "DOI:10.1/x": "doi", "uuid:1234-5678": "uuid",
		"": "unknown", "x6b4dp": "unknown", "https://example.org/x": "https", "1:2/3": "unknown",
	} {
		if got := IdentifierKind(id); got != want {
			t.Errorf("IdentifierKind(%q) = %q, want %q", id, got, want)
		}
	}
}

func TestHelpers(t *testing.T) {
	t.Parallel()
	loc := textin.Location{File: "dump.txt", Line: 98, Record: 8}
	if loc.String() != "dump.txt:98 (record 8)" {
		t.Errorf("textin.Location: %s", loc)
	}
	base := errors.New("boom")
	re := &textin.RowError{Loc: loc, ID: "ark:/1/x", Field: "_t", Reason: "bad", Err: base}
	if re.Error() != "dump.txt:98 (record 8): ark:/1/x: field _t: bad: boom" || !errors.Is(re, base) {
		t.Errorf("textin.RowError: %q", re.Error())
	}
	for in, want := range map[string][2]any{
		"303 https://x": {303, "https://x"}, "302\thttps://x": {302, "https://x"}, "200 https://x": {0, "200 https://x"},
		"https://x": {0, "https://x"}, "303": {0, "303"}, "3030 x": {0, "3030 x"},
	} {
		code, rest := splitRedirectCode(in)
		if code != want[0] || rest != want[1] {
			t.Errorf("splitRedirectCode(%q) = %d %q", in, code, rest)
		}
	}
	for in, want := range map[string][3]string{
		"Name": {"", "Name", ""}, "Name (=) ACR": {"", "Name", "ACR"},
		"Nat (=) Name (=) ACR": {"Nat", "Name", "ACR"}, "A (=) B (=) C (=) D": {"A (=) B", "C", "D"},
	} {
		a, b, c := splitWho(in)
		if [3]string{a, b, c} != want {
			t.Errorf("splitWho(%q) = %q %q %q", in, a, b, c)
		}
	}
	for in, want := range map[string][2]string{
		"public": {"public", ""}, "": {"public", ""}, "reserved": {"reserved", ""}, "unavailable": {"unavailable", ""},
		"unavailable | a | b": {"unavailable", "a | b"}, "Unavailable|x": {"unavailable", "x"},
	} {
		s, r, err := parseEZIDStatus(in)
		if err != nil || string(s) != want[0] || r != want[1] {
			t.Errorf("parseEZIDStatus(%q) = %s %q %v", in, s, r, err)
		}
	}
	for _, in := range []string{"public | x", "deleted", "reserved|y"} {
		if _, _, err := parseEZIDStatus(in); err == nil {
			t.Errorf("parseEZIDStatus(%q) accepted", in)
		}
	}
	if k, n, s := splitPrefix("ark:/13030/"); k != "ark" || n != "13030" || s != "" {
		t.Errorf("splitPrefix: %s %s %s", k, n, s)
	}
	if k, n, s := splitPrefix("ARK:12345/x6/y"); k != "ark" || n != "12345" || s != "x6/y" {
		t.Errorf("splitPrefix: %s %s %s", k, n, s)
	}
}

func TestContextAndOpen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "download.anvl.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	zw.Write([]byte(ezidANVL))
	zw.Close()
	f.Close()
	r, err := Open(t.Context(), path, "") // gzip + detection
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := r.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	c := drain(t, r) // cancellation is not sticky: reading resumes
	if len(c.records) != 4 || c.records[0].Source.File != path {
		t.Errorf("after cancel: %d records", len(c.records))
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := Open(t.Context(), filepath.Join(dir, "missing"), N2TDump); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := Open(ctx, path, ""); !errors.Is(err, context.Canceled) {
		t.Errorf("Open with cancelled ctx: %v", err)
	}
}

// TestLongValues: a 300-octet name passes through unchanged (the importer
// refuses it naming the limit); a line over MaxLineBytes is one
// textin.RowError and reading continues.
func TestLongValues(t *testing.T) {
	t.Parallel()
	name := "ark:/12345/x6" + strings.Repeat("b", 300)
	c := readString(t, ":: "+name+"\n_target: https://a\n", EZIDANVL)
	if len(c.records) != 1 || c.records[0].ID != name {
		t.Fatalf("long name: %+v", c.records)
	}
	huge := ":: ark:/12345/x6a\n_target: " + strings.Repeat("x", MaxLineBytes+1) + "\n\n:: ark:/12345/x6b\n_target: https://b\n"
	c = readString(t, huge, EZIDANVL)
	if len(c.errs) != 1 || len(c.records) != 1 || c.records[0].ID != "ark:/12345/x6b" || c.errs[0].Loc.Line != 1 ||
		!strings.Contains(c.errs[0].Reason, "longer than") {
		t.Errorf("huge line: %v %+v", c.errs, c.records)
	}
}
