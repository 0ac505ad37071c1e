package legacy

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/arkhe-ledger/arkhe/textin"
	"github.com/ulikunitz/xz"
)

// crOnly turns LF and CRLF line ends into bare CRs (classic Mac OS text).
func crOnly(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r")
}

// lineFixtures are inline exports of every line-oriented format, with LF line ends.
var lineFixtures = []struct {
	format Format
	text   string
}{
	{N2TDump, n2tDump},
	{EZIDANVL, ezidANVL},
	{EZIDCSV, ezidCSV},
	{ArkletCSV, frickCSV},
	{ArkletJSON, upstreamDump},
	{ArkletJSON, "{\"model\": \"ark.ark\", \"pk\": \"12345/x6b4dp12wkm\", \"fields\": {\"url\": \"https://a.example.org/1\"}}\n\n" +
		"{\"model\": \"ark.ark\", \"pk\": \"12345/x63cm1j612q\", \"fields\": {\"url\": \"\"}}\n"},
	{NAANANVL, registryANVL},
	{ShoulderListN2TANVL, ":: ark:/87938/m2\ntype: shoulder\nname: One\n\n:: ark:/87938/m3\ntype: shoulder\nname: Two\n"},
	{ShoulderListEZIDCSV, "ark:/87940/m4,UCSB Writing Program,https://n2t.net/a/ezid/m/ark/87940/m4\nark:/87940/m5,Two,\"\"\n"},
	{ShoulderListEZIDLog, "shoulder.py:83 shoulder impl.nog_sql.shoulder INFO     shoulder - ark:/13030/bn        ?1?\n" +
		"shoulder.py:83 shoulder impl.nog_sql.shoulder INFO     shoulder - ark:/13030/c8        Two\n"},
}

// TestCROnlyLineEnds: each line-oriented reader reads a file with CR-only line ends exactly as
// the same file with LF line ends: the same items, values and locations, detected alike.
func TestCROnlyLineEnds(t *testing.T) {
	t.Parallel()
	for _, fx := range lineFixtures {
		lf := readString(t, fx.text, fx.format)
		if len(lf.order) < 2 {
			t.Fatalf("%s: the LF fixture yields %v", fx.format, lf.order)
		}
		cr := crOnly(fx.text)
		if strings.IndexByte(cr, '\n') >= 0 {
			t.Fatalf("%s: the CR-only text holds an LF", fx.format)
		}
		if got := readString(t, cr, fx.format); !reflect.DeepEqual(got, lf) {
			t.Errorf("%s: CR-only reads %v, LF reads %v", fx.format, got.order, lf.order)
		}
		if got := readString(t, cr, ""); !reflect.DeepEqual(got, lf) {
			t.Errorf("%s: CR-only, format detected: %v, LF reads %v", fx.format, got.order, lf.order)
		}
	}
}

// bigExports returns, per format, an export of n records with linesPer lines per record.
func bigExports(n int) []struct {
	format   Format
	text     string
	linesPer int
} {
	var anvl, n2t, ezcsv, arcsv, jsonl, array, log strings.Builder
	n2t.WriteString("VERSION=3\nformat=print\ntype=btree\nduplicates=1\nHEADER=END\n")
	ezcsv.WriteString("_id,_target\n")
	arcsv.WriteString("ark,url\n")
	array.WriteString("[\n")
	// Targets carry hex digits, which compress to about half, so that an xz stream has many
	// LZMA2 chunks (at most 64 KiB compressed each) and a cut one still holds whole ones.
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 1; i <= n; i++ {
		i := fmt.Sprintf("%d/%016x%016x", i, rng.Uint64(), rng.Uint64())
		fmt.Fprintf(&anvl, ":: ark:/54321/x6r%s\n_target: https://example.org/%s\n_profile: erc\n\n", i, i)
		fmt.Fprintf(&n2t, " ark:/54321/x6r%s|_t\n https://example.org/%s\n ark:/54321/x6r%s|_u\n 1600000000\n", i, i, i)
		fmt.Fprintf(&ezcsv, "ark:/54321/x6r%s,https://example.org/%s\n", i, i)
		fmt.Fprintf(&arcsv, "54321/x6r%s,https://example.org/%s\n", i, i)
		fmt.Fprintf(&jsonl, "{\"model\": \"ark.ark\", \"pk\": \"54321/x6r%s\", \"fields\": {\"url\": \"https://example.org/%s\"}}\n", i, i)
		sep := ","
		if strings.HasPrefix(i, fmt.Sprint(n)+"/") {
			sep = ""
		}
		fmt.Fprintf(&array, " {\"model\": \"ark.ark\", \"pk\": \"54321/x6r%s\", \"fields\": {\"url\": \"https://example.org/%s\"}}%s\n", i, i, sep)
		fmt.Fprintf(&log, "shoulder.py:83 shoulder impl.nog_sql.shoulder INFO     shoulder - ark:/13030/r%s        Name %s\n", i, i)
	}
	n2t.WriteString("DATA=END\n")
	array.WriteString("]\n")
	return []struct {
		format   Format
		text     string
		linesPer int
	}{
		{EZIDANVL, anvl.String(), 4}, {N2TDump, n2t.String(), 4}, {EZIDCSV, ezcsv.String(), 1},
		{ArkletCSV, arcsv.String(), 1}, {ArkletJSON, jsonl.String(), 1}, {ArkletJSON, array.String(), 1},
		{ShoulderListEZIDLog, log.String(), 1},
	}
}

// compress returns data gzipped or xz'd.
func compress(t testing.TB, c string, data string) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w io.WriteCloser
	if c == "gzip" {
		w = gzip.NewWriter(&buf)
	} else {
		xw, err := xz.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		w = xw
	}
	if _, err := io.WriteString(w, data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// decodedPrefix decodes as much of a broken stream as its decoder gives.
func decodedPrefix(t testing.TB, c string, b []byte) []byte {
	t.Helper()
	var r io.Reader
	var err error
	if c == "gzip" {
		r, err = gzip.NewReader(bytes.NewReader(b))
	} else {
		r, err = xz.NewReader(bytes.NewReader(b))
	}
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	if err == nil {
		t.Fatal("the broken stream decodes without an error")
	}
	return got
}

// TestTruncatedCompressed: an export whose gzip or xz stream is cut yields every whole record
// before the cut, exactly as the whole file yields them, then one TruncatedError where the stream
// ends, naming the line and the last record, then io.EOF.
func TestTruncatedCompressed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []string{"gzip", "xz"} {
		n := 3000
		exports := bigExports(n)
		if c == "xz" {
			// One format is enough for the second decoder; it needs more data, since the xz
			// decoder hands on nothing of an LZMA2 chunk until the chunk is whole.
			n = 12000
			exports = bigExports(n)[:1]
		}
		for _, ex := range exports {
			whole := readString(t, ex.text, ex.format)
			all := yielded(whole)
			if whole.truncated != nil || len(whole.errs) != 0 || len(all) != n {
				t.Fatalf("%s: the whole export reads %d items, %v %v", ex.format, len(all), whole.errs, whole.truncated)
			}
			z := compress(t, c, ex.text)
			cut := z[:len(z)*2/3]
			lines := bytes.Count(decodedPrefix(t, c, cut), []byte{'\n'})
			p := filepath.Join(dir, fmt.Sprintf("%s.%s", ex.format, c))
			if err := os.WriteFile(p, cut, 0o644); err != nil {
				t.Fatal(err)
			}
			got := readFile(t, p, ex.format)
			items := yielded(got)
			n := len(items)
			if n == 0 || !reflect.DeepEqual(items, all[:n]) {
				t.Errorf("%s %s: %d items, not the first ones of the whole export", c, ex.format, n)
			}
			if max := lines / ex.linesPer; n > max || n < max-2 {
				t.Errorf("%s %s: %d records from %d whole lines (%d lines per record)", c, ex.format, n, lines, ex.linesPer)
			}
			te := got.truncated
			want := fmt.Sprintf("unexpected EOF in the %s stream after line %d (record %d): the file is truncated", c, lines, n)
			if te == nil || len(got.errs) != 0 || te.Loc != (textin.Location{File: p, Line: lines + 1, Record: n + 1}) ||
				!strings.HasPrefix(te.Reason, want) || got.order[len(got.order)-1] != "T" {
				t.Errorf("%s %s: truncation %v, errors %v\nwant %q", c, ex.format, te, got.errs, want)
			}
		}
	}
}

// yielded renders every record and shoulder c holds with its values and location (the file
// left out).
func yielded(c collected) []string {
	var out []string
	for _, r := range c.records {
		out = append(out, fmt.Sprintf("%s %s %v %d %d", r.ID, r.Target, r.Updated, r.Source.Line, r.Source.Record))
	}
	for _, s := range c.shoulders {
		out = append(out, fmt.Sprintf("%s %s %d %d", s.Prefix, s.Name, s.Source.Line, s.Source.Record))
	}
	return out
}

// TestCorruptGzipMember: a second gzip member whose header is broken ends the file with a
// TruncatedError after the first member's records.
func TestCorruptGzipMember(t *testing.T) {
	t.Parallel()
	ex := bigExports(100)[0] // EZID ANVL
	first := compress(t, "gzip", ex.text)
	second := compress(t, "gzip", ":: ark:/54321/x6z1\n_target: https://example.org/z\n\n")
	second[1] = 0 // not the gzip magic
	p := filepath.Join(t.TempDir(), "two.anvl.gz")
	if err := os.WriteFile(p, append(first, second...), 0o644); err != nil {
		t.Fatal(err)
	}
	got := readFile(t, p, "")
	te := got.truncated
	if len(got.records) != 100 || te == nil || te.Loc.Record != 101 || te.Loc.Line != 401 ||
		!strings.HasPrefix(te.Reason, "gzip: invalid header in the gzip stream after line 400 (record 100): the stream is corrupt") {
		t.Errorf("%d records, truncation %v", len(got.records), te)
	}
}

// TestLegacyCSVOverlongLine: a CSV row longer than MaxLineBytes (16 MiB) is rejected alone and
// the rows after it are read; so is a quote left open.
func TestLegacyCSVOverlongLine(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "long.csv")
	if err := os.WriteFile(p, []byte("_id,_target\nark:/54321/x6a,https://e.org/a\nark:/54321/x6b,"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	off, err := f.Seek(MaxLineBytes, io.SeekEnd) // a hole of NUL bytes: nothing to write
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("\nark:/54321/x6c,https://e.org/c\n"), off); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got := readFile(t, p, EZIDCSV)
	if len(got.records) != 2 || got.records[1].ID != "ark:/54321/x6c" || len(got.errs) != 1 || got.truncated != nil {
		t.Fatalf("%d records, errors %v, truncation %v", len(got.records), got.errs, got.truncated)
	}
	e := got.errs[0]
	if e.Loc != (textin.Location{File: p, Line: 3, Record: 2}) || e.Error() != p+":3 (record 2): field row: malformed CSV row: line longer than 16777216 bytes on line 3" {
		t.Errorf("error %v", e)
	}

	c := readString(t, "_id,_target\nark:/1/a,\"https://e.org/a\nark:/1/b,https://e.org/b\nark:/1/c,https://e.org/c\n", EZIDCSV)
	if len(c.records) != 2 || c.records[0].ID != "ark:/1/b" || c.records[1].Source.Line != 4 || len(c.errs) != 1 ||
		!strings.HasSuffix(c.errs[0].Error(), "quoted field not closed at the end of the file (record starts on line 2, file stops on line 4); lines 3 to 4 are read again, one record per line") {
		t.Errorf("open quote: %v, %v", c.order, c.errs)
	}
}

// TestArrayElementTooLong: a dumpdata array element longer than the bound is rejected alone;
// the elements after it are read.
func TestArrayElementTooLong(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 300)
	in := "[\n" +
		" {\"model\": \"ark.ark\", \"pk\": \"12345/x6a\", \"fields\": {\"url\": \"https://e.org/a\"}},\n" +
		" {\"model\": \"ark.ark\", \"pk\": \"12345/x6b\", \"fields\": {\"url\": \"https://e.org/" + long + "\"}},\n" +
		" {\"model\": \"ark.ark\", \"pk\": \"12345/x6c\", \"fields\": {\"url\": \"https://e.org/c\"}}\n]\n"
	r, err := NewReader(strings.NewReader(in), "inline", ArkletJSON)
	if err != nil {
		t.Fatal(err)
	}
	d := r.(*reader).s.(*djangoReader)
	if err := d.start(); err != nil {
		t.Fatal(err)
	}
	d.fr.max, d.fr.noWhole = 200, true
	c := drain(t, r)
	if strings.Join(c.order, "") != "RER" || c.records[1].ID != "12345/x6c" || c.records[1].Source.Line != 4 ||
		c.errs[0].Loc != (textin.Location{File: "inline", Line: 3, Record: 2}) ||
		c.errs[0].Reason != "array element longer than 200 octets (skipped; reading goes on after it)" {
		t.Errorf("order %v, errors %v, records %+v", c.order, c.errs, c.records)
	}
}

// TestDuplicateJSONKeys: a JSON record with a key given twice is rejected naming the key, in
// dumpdata objects (top level, fields, EZID metadata) and registry records (at any depth); the
// records around it are read. A secret-bearing record's text stays out of the error.
func TestDuplicateJSONKeys(t *testing.T) {
	t.Parallel()
	ezid := func(fields string) string {
		return `{"model":"ezidapp.identifier","pk":1,"fields":{` + fields + `}}` + "\n"
	}
	cases := []struct {
		name, in string
		format   Format
		field    string
	}{
		{"identifier", ezid(`"identifier":"ark:/13030/a1","target":"https://e.org/1"`) +
			ezid(`"identifier":"ark:/13030/a2","target":"https://e.org/2","identifier":"ark:/13030/evil"`) +
			ezid(`"identifier":"ark:/13030/a3"`), EZIDDB, "fields.identifier"},
		{"metadata", ezid(`"identifier":"ark:/13030/a1"`) +
			ezid(`"identifier":"ark:/13030/a2","metadata":{"erc":"who: A","erc":"who: B"}`) +
			ezid(`"identifier":"ark:/13030/a3"`), EZIDDB, "fields.metadata.erc"},
		{"pk", `[{"model":"ark.ark","pk":"12345/x6a","fields":{}},` + "\n" +
			`{"model":"ark.ark","pk":"12345/x6b","pk":"12345/x6evil","fields":{}},` + "\n" +
			`{"model":"ark.ark","pk":"12345/x6c","fields":{}}]`, ArkletJSON, "pk"},
		{"escaped key", `{"model":"ark.ark","pk":"12345/x6a","fields":{}}` + "\n" +
			`{"model":"ark.ark","pk":"12345/x6b","fields":{"url":"https://e.org/1","\u0075rl":"https://e.org/2"}}` + "\n" +
			`{"model":"ark.ark","pk":"12345/x6c","fields":{}}` + "\n", ArkletJSON, "fields.url"},
		{"registry", `{"data":[{"rtype":"PublicNAAN","what":"12345","who":{"name":"A"}},` +
			`{"rtype":"PublicNAAN","what":"23456","who":{"name":"B","name":"C"}},` +
			`{"rtype":"PublicNAAN","what":"34567","who":{"name":"D"}}]}`, NAANJSON2024, "who.name"},
	}
	for _, c := range cases {
		got := readString(t, c.in, c.format)
		if len(got.errs) != 1 || len(got.records)+len(got.naans) != 2 || got.truncated != nil {
			t.Errorf("%s: order %v, errors %v", c.name, got.order, got.errs)
			continue
		}
		e := got.errs[0]
		want := fmt.Sprintf("key %q given twice in the object; which value is meant cannot be known, so the record is not read", c.field)
		if e.Field != c.field || e.Reason != want || e.Loc.Record != 2 || e.Raw == "" {
			t.Errorf("%s: error %+v", c.name, e)
		}
	}
	got := readString(t, `{"model":"ark.user","pk":1,"fields":{"password":"argon2$SECRET","password":"x"}}`+"\n", ArkletJSON)
	if len(got.errs) != 1 || got.errs[0].Raw != "" || strings.Contains(got.errs[0].Error(), "SECRET") {
		t.Errorf("secret record: order %v, errors %v", got.order, got.errs)
	}
}

// TestMidFileBOM: a byte order mark anywhere but at the start of the file rejects its record,
// naming the line and the field; the records around it are read, and joined N2T dumps stay
// aligned.
func TestMidFileBOM(t *testing.T) {
	t.Parallel()
	const bom = utf8BOM
	c := readString(t, ezidCSV+bom+"ark:/99999/fk4bom,public,2020-01-01T00:00:00Z,https://e.org/b,Who\nark:/99999/fk4end,public,,https://e.org/e,\n", EZIDCSV)
	if len(c.records) != 4 || len(c.errs) != 1 || c.errs[0].Field != "id" || c.errs[0].Loc != (textin.Location{File: "inline", Line: 5, Record: 4}) ||
		!strings.Contains(c.errs[0].Reason, "byte order mark (U+FEFF)") {
		t.Errorf("EZID CSV: order %v, errors %v", c.order, c.errs)
	}

	c = readString(t, ezidANVL+"\n"+bom+ezidANVL, EZIDANVL)
	lf := readString(t, ezidANVL, EZIDANVL)
	first := strings.Count(ezidANVL, "\n") + 2 // the line the second file starts on
	if len(c.records) != 2*len(lf.records)-1 || len(c.errs) != 1 || c.errs[0].Loc.Line != first ||
		c.errs[0].Reason != fmt.Sprintf("line %d starts with a byte order mark (U+FEFF), which belongs only at the very start of a file (were files joined together?)", first) ||
		c.errs[0].ID != lf.records[0].ID {
		t.Errorf("EZID ANVL joined: %d records (one file: %d), errors %v", len(c.records), len(lf.records), c.errs)
	}

	// Two N2T dumps joined: the seam is reported and the second dump is read.
	c = readString(t, n2tDump+bom+n2tDump, N2TDump)
	one := readString(t, n2tDump, N2TDump)
	if len(c.records) != 2*len(one.records) || len(c.errs) != 1 || c.errs[0].Field != "line" ||
		!strings.Contains(c.errs[0].Reason, "the db_dump section it starts is read") {
		t.Errorf("N2T joined: %d records (one dump: %d), errors %v", len(c.records), len(one.records), c.errs)
	}
	// A key line behind a BOM: its identifier is rejected whole, the pairs after it stay aligned.
	in := strings.Replace(n2tDump, " ark:/99999/fk4x49f4k3g|__mc", bom+" ark:/99999/fk4x49f4k3g|__mc", 1)
	c = readString(t, in, N2TDump)
	if len(c.records) != len(one.records)-1 || len(c.errs) != 1 || c.errs[0].ID != "ark:/99999/fk4x49f4k3g" || c.errs[0].Field != "key" ||
		!strings.HasPrefix(c.errs[0].Reason, "key line 14 starts with a byte order mark") || recByID(c, "ark:/99999/fk4m9kwq53d") == nil {
		t.Errorf("N2T key line: order %v, errors %v", c.order, c.errs)
	}
}
