package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/textin"
)

// The mappings documented in MAPPINGS.md.
const (
	tateMapping       = "request_id=acno,what=title,who=all_artists,when=dateText,url=url"
	cmoaMapping       = "request_id=id,url=web_url,who=creator[].full_name,what=title,when=creation_date"
	nyplNDJSONMapping = "request_id=UUID,url=digitalCollectionsURL,who=contributor[].contributorName,what=title,when=date[]"
)

func TestJSONTateFirstRecords(t *testing.T) {
	t.Parallel()
	p := fixtures.SharedData(t, "tategallery-collection/artworks.jsonl.gz")
	r := mustOpen(t, p, tateMapping)
	want := []Record{
		{
			RequestID: "A00001",
			URL:       "http://www.tate.org.uk/art/artworks/blake-a-figure-bowing-before-a-seated-old-man-with-his-arm-outstretched-in-benediction-a00001",
			Who:       "Robert Blake",
			What:      "A Figure Bowing before a Seated Old Man with his Arm Outstretched in Benediction. Verso: Indecipherable Sketch",
			When:      "date not known",
		},
		{
			RequestID: "A00002",
			URL:       "http://www.tate.org.uk/art/artworks/blake-two-drawings-of-frightened-figures-probably-for-the-approach-of-doom-a00002",
			Who:       "Robert Blake",
			What:      "Two Drawings of Frightened Figures, Probably for ‘The Approach of Doom’",
			When:      "date not known",
		},
		{
			RequestID: "A00003",
			URL:       "http://www.tate.org.uk/art/artworks/blake-the-preaching-of-warning-verso-an-old-man-enthroned-between-two-groups-of-figures-by-a00003",
			Who:       "Robert Blake",
			What:      "The Preaching of Warning. Verso: An Old Man Enthroned Between Two Groups of Figures, by ?William Blake",
			When:      "?c.1785",
		},
	}
	for i, w := range want {
		w.Has = HasRequestID | HasURL | HasWho | HasWhat | HasWhen
		w.Source = textin.Location{File: p, Line: i + 1, Record: i + 1}
		got, err := r.Next(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if got != w {
			t.Errorf("record %d:\n got %+v\nwant %+v", i+1, got, w)
		}
	}
	// The numeric id 1035 of A00001 becomes its literal text.
	r2 := mustOpen(t, p, "request_id=id,who=contributors[0].fc,when=contributors[0].birthYear,what=dateRange.text")
	got, err := r2.Next(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got.RequestID != "1035" || got.Who != "Robert Blake" || got.When != "1762" || got.Has&HasWhat != 0 {
		t.Errorf("record 1 with id/contributors mapping = %+v (dateRange is null: what must be absent)", got)
	}
	got, err = r2.Next(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got, err = r2.Next(t.Context())
	if err != nil || got.What != "?c.1785" {
		t.Errorf("record 3 dateRange.text = %q, %v; want ?c.1785", got.What, err)
	}
}

func TestJSONTateAll(t *testing.T) {
	t.Parallel()
	// 69,202 artworks, every one valid under the default limits.
	r := mustOpen(t, fixtures.SharedData(t, "tategallery-collection/artworks.jsonl.gz"), tateMapping)
	ctx := t.Context()
	n := 0
	for {
		rec, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("after %d records: %v", n, err)
		}
		n++
		if rec.Source.Record != n || rec.Source.Line != n {
			t.Fatalf("record %d has Source %+v", n, rec.Source)
		}
		if verr := Validate(&rec, textin.DefaultLimits()); verr != nil {
			t.Errorf("Tate record fails validation: %v", verr)
		}
	}
	if n != 69202 {
		t.Errorf("read %d Tate records, want 69202", n)
	}
}

func TestJSONCMOA(t *testing.T) {
	t.Parallel()
	p := fixtures.SharedData(t, "cmoa-collection/cmoa.jsonl.gz")
	r := mustOpen(t, p, cmoaMapping)
	recs, bad := drainManifest(t, r)
	if len(recs) != 28258 || len(bad) != 0 {
		t.Fatalf("read %d records, %d bad; want 28258, 0 (%v)", len(recs), len(bad), bad)
	}
	// Line 8: three creators, joined.
	if got := recs[7]; got.RequestID != "cmoa:things/0014c57c-472d-4ad7-b930-216b5f16cca5" ||
		got.Who != "John Hancock; John Hancock the elder; John Hancock , Jr." ||
		got.What != "Untitled (Roses and Lily-of-the-Valley)" || got.When != "c. 1825" ||
		got.URL != "http://collection.cmoa.org/CollectionDetail.aspx?item=1014767" {
		t.Errorf("line 8 = %+v", got)
	}
	// Line 179: "creator": null → who absent; the title keeps its quotes.
	if got := recs[178]; got.RequestID != "cmoa:things/01a7cc15-083b-4757-982a-9dbb87e1a10a" ||
		got.Has&HasWho != 0 || got.Who != "" ||
		got.What != `University; "Yale Art and Architecture Building," New Haven, CT; [exterior perspective]` {
		t.Errorf("line 179 = %+v", got)
	}
	counts := map[string]int{}
	for i := range recs {
		if recs[i].Has&HasWho == 0 {
			counts["no who"]++
		}
		if recs[i].Has&HasWhat == 0 {
			counts["no what"]++
		}
		if recs[i].Has&HasWhen == 0 {
			counts["no when"]++
		}
		if err := Validate(&recs[i], textin.DefaultLimits()); err != nil {
			t.Errorf("CMOA record fails validation: %v", err)
		}
	}
	// SOURCES.md: 18 null creator lists, 115 null titles, 1,586 null creation dates.
	if counts["no who"] != 18 || counts["no what"] != 115 || counts["no when"] != 1586 {
		t.Errorf("absent counts = %v, want who 18, what 115, when 1586", counts)
	}
}

func TestJSONCMOAEmbeddedNewline(t *testing.T) {
	t.Parallel()
	// Line 37's medium holds an escaped newline; the first creator by [0].
	p := fixtures.SharedData(t, "cmoa-collection/cmoa.jsonl.gz")
	r := mustOpen(t, p, "request_id=accession_number,what=medium,who=creator[0].cited_name,when=creation_date_earliest")
	var got Record
	for i := 0; i < 37; i++ {
		var err error
		if got, err = r.Next(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	want := Record{
		RequestID: "07.14.23",
		What:      "pastel on blue paper\nverso: printed program cover for Carnegie Institute Founder's Day 1902",
		Who:       "Hassam, Childe",
		When:      "1897-01-01",
		Has:       HasRequestID | HasWhat | HasWho | HasWhen,
		Source:    textin.Location{File: p, Line: 37, Record: 37},
	}
	if got != want {
		t.Errorf("line 37:\n got %+v\nwant %+v", got, want)
	}
}

func TestJSONTeenie(t *testing.T) {
	t.Parallel()
	r := mustOpen(t, fixtures.SharedData(t, "cmoa-collection/teenie.jsonl.gz"), cmoaMapping)
	recs, bad := drainManifest(t, r)
	if len(recs) != 59031 || len(bad) != 0 {
		t.Fatalf("read %d records, %d bad; want 59031, 0", len(recs), len(bad))
	}
	long := recs[39517]
	if long.RequestID != "cmoa:things/aad928fb-f7ab-4872-8d47-59a018f37031" || len(long.What) != 785 ||
		!strings.HasSuffix(long.What, `be as brave as you make believe you are"`) ||
		long.Who != `Charles "Teenie" Harris` {
		t.Errorf("line 39518: request %q, title %d chars, who %q", long.RequestID, len(long.What), long.Who)
	}
	if two := recs[21456]; two.Who != `Dewey Smith; Charles "Teenie" Harris` {
		t.Errorf("line 21457 who = %q", two.Who)
	}
}

func TestJSONNYPLMatchesCSV(t *testing.T) {
	t.Parallel()
	js, bad := drainManifest(t, mustOpen(t, fixtures.SharedData(t, "nypl-publicdomain/pd_collections.ndjson"), nyplNDJSONMapping))
	cs, _ := drainManifest(t, mustOpen(t, fixtures.SharedData(t, "nypl-publicdomain/pd_collections.csv"), nyplCSVMapping))
	if len(js) != 932 || len(bad) != 0 || len(cs) != 932 {
		t.Fatalf("ndjson %d (%d bad), csv %d; want 932 each", len(js), len(bad), len(cs))
	}
	for i := range js {
		j, c := js[i], cs[i]
		what := j.What
		if i == 700 {
			// The one real difference between the exports: record 701's
			// title has a newline in the NDJSON and the two characters
			// `\n` in the CSV.
			if !strings.Contains(what, "\n") {
				t.Errorf("record 701: NDJSON title has no newline: %q", what)
			}
			what = strings.ReplaceAll(what, "\n", `\n`)
		}
		if j.RequestID != c.RequestID || j.URL != c.URL || what != c.What || j.Has&HasWho != c.Has&HasWho {
			t.Fatalf("record %d differs:\nndjson %+v\ncsv    %+v", i+1, j, c)
		}
	}
	// "date": [1900] → "1900"; an empty array is absent.
	if js[1].When != "1900" || js[0].Has&HasWhen != 0 {
		t.Errorf("when: %q (has %v), %q", js[1].When, js[1].Has&HasWhen != 0, js[0].When)
	}
}

func TestJSONScanner(t *testing.T) {
	t.Parallel()
	const m = "request_id=id,who=a[].n,what=t,when=d.y,url=u,commitment=c[1]"
	cases := []struct {
		line   string
		want   Record // Source not compared
		field  string
		reason string
	}{
		{line: `{"id":7,"t":"x","a":[{"n":"A"},{"n":null},{"n":""},{"m":1},{"n":"B"}],"d":{"y":-1.5e3},"u":"http://e.org/","c":[true,false]}`,
			want: Record{RequestID: "7", What: "x", Who: "A; B", When: "-1.5e3", URL: "http://e.org/", Commitment: "false",
				Has: HasRequestID | HasWhat | HasWho | HasWhen | HasURL | HasCommitment}},
		{line: ` { "id" : "\u00e9\ud83d\ude00\"\\\/\n\t" , "t" : null , "a" : null, "d": "scalar", "c": [] } `,
			want: Record{RequestID: "é😀\"\\/\n\t", Has: HasRequestID}},
		{line: `{"id":"1","t":"","a":[],"zz":{"deep":[[[{"k":[1,2,{"q":"\u0000"}]}]]]}}`,
			want: Record{RequestID: "1", Has: HasRequestID}},
		{line: `{"id":"1","t":"\u0000"}`, want: Record{RequestID: "1", What: "\x00", Has: HasRequestID | HasWhat}},
		{line: "{\"id\":\"1\",\"t\":\"\xff\"}", want: Record{RequestID: "1", What: "\xff", Has: HasRequestID | HasWhat}},
		{line: `{"id":"1","t":{"x":1}}`, field: "what", reason: "value is an object, not text"},
		{line: `{"id":"1","u":["a"]}`, field: "url", reason: "value is an array, not text; map it as PATH[] (all, joined) or PATH[0] (first)"},
		{line: `{"id":"1","id":"2"}`, reason: `key "id" given twice`},
		{line: `{"id":"1","a":[{"n":"x","n":"y"}]}`, reason: `key "n" given twice`},
		{line: `{"id":"1",}`, reason: "invalid JSON at byte 11: want a string key"},
		{line: `{"id":"1"`, reason: "invalid JSON at byte 10: unexpected end of line in object"},
		{line: `{"id":"1"} x`, reason: "invalid JSON at byte 12: data after the JSON object"},
		{line: `["id"]`, reason: "line is not a JSON object"},
		{line: `{"id":01}`, reason: "invalid JSON at byte 8: want ',' or '}'"},
		{line: `{"id":-}`, reason: "invalid JSON at byte 8: invalid number"},
		{line: `{"id":1.}`, reason: "invalid JSON at byte 9: invalid number"},
		{line: `{"id":tru}`, reason: "invalid JSON at byte 7: invalid literal"},
		{line: `{"id":"a` + "\t" + `"}`, reason: "invalid JSON at byte 9: control character in string"},
		{line: `{"id":"\ud800x"}`, reason: "invalid JSON at byte 8: \\u escape is a lone UTF-16 surrogate"},
		{line: `{"id":"\x"}`, reason: "invalid JSON at byte 8: invalid escape \\x"},
		{line: `{"id":"\u12"}`, reason: "invalid JSON at byte 8: invalid \\u escape"},
		{line: `{"id":"abc`, reason: "invalid JSON at byte 11: unterminated string"},
		{line: `{"x":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}`, reason: "invalid JSON at byte 1005: nested deeper than 1000"},
	}
	mp, err := ParseMapping(m)
	if err != nil {
		t.Fatal(err)
	}
	root, err := compileJSONMapping("t", mp)
	if err != nil {
		t.Fatal(err)
	}
	var sc jscan
	for _, c := range cases {
		got, rerr := sc.record([]byte(c.line), root)
		if c.reason == "" {
			if rerr != nil {
				t.Errorf("%s: %v", c.line, rerr)
			} else if got != c.want {
				t.Errorf("%s:\n got %+v\nwant %+v", c.line, got, c.want)
			}
			continue
		}
		if rerr == nil || rerr.Reason != c.reason || rerr.Field != c.field {
			t.Errorf("%s: got %+v, want field %q reason %q", c.line, rerr, c.field, c.reason)
		}
	}
}

func TestJSONSamePathTwice(t *testing.T) {
	t.Parallel()
	// who and what read the same value; commitment and url read element 0
	// both by [] and by [0].
	mp, _ := ParseMapping("request_id=id,who=t,what=t,url=l[0],commitment=l[]")
	root, err := compileJSONMapping("t", mp)
	if err != nil {
		t.Fatal(err)
	}
	var sc jscan
	got, rerr := sc.record([]byte(`{"id":"1","t":"same","l":["http://a/","b"]}`), root)
	if rerr != nil || got.Who != "same" || got.What != "same" || got.URL != "http://a/" || got.Commitment != "http://a/; b" {
		t.Errorf("got %+v, %v", got, rerr)
	}
}

func TestJSONLines(t *testing.T) {
	t.Parallel()
	content := "\ufeff{\"request_id\":\"a\"}\r\n" +
		"\n" + // blank: not a record
		"   \t\n" +
		"{\"request_id\":\"b\",\"what\":\"x\"\n" + // broken: row error, reading goes on
		"{\"request_id\":\"c\"}" // no final newline
	p := writeTemp(t, "m.ndjson", content)
	recs, bad := drainManifest(t, mustOpen(t, p, ""))
	if len(recs) != 2 || len(bad) != 1 {
		t.Fatalf("records %+v, bad %v", recs, bad)
	}
	if recs[0].RequestID != "a" || recs[0].Source != (textin.Location{File: p, Line: 1, Record: 1}) {
		t.Errorf("record a = %+v", recs[0])
	}
	if bad[0].Loc != (textin.Location{File: p, Line: 4, Record: 2}) {
		t.Errorf("row error at %+v, want line 4 record 2", bad[0].Loc)
	}
	if recs[1].RequestID != "c" || recs[1].Source != (textin.Location{File: p, Line: 5, Record: 3}) {
		t.Errorf("record c = %+v", recs[1])
	}
}

func TestJSONLineTooLong(t *testing.T) {
	t.Parallel()
	long := `{"request_id":"big","what":"` + strings.Repeat("x", 600<<10) + `"}`
	p := writeTemp(t, "m.jsonl", `{"request_id":"1"}`+"\n"+long+"\n"+`{"request_id":"2","what":"`+strings.Repeat("y", 300<<10)+`"}`+"\n")
	r := mustOpen(t, p, "")
	r.(*jsonManifest).max = 500 << 10
	recs, bad := drainManifest(t, r)
	if len(bad) != 1 || bad[0].Loc.Line != 2 || bad[0].Reason != "line longer than 512000 bytes" {
		t.Errorf("row errors = %v", bad)
	}
	if len(recs) != 2 || recs[1].RequestID != "2" || len(recs[1].What) != 300<<10 || recs[1].Source.Line != 3 {
		t.Errorf("records: %d", len(recs))
	}
}

func TestJSONBadPathIsFatal(t *testing.T) {
	t.Parallel()
	m, _ := ParseMapping("who=a[x]")
	_, err := OpenManifest(writeTemp(t, "m.jsonl", "{}\n"), m)
	var me *MappingError
	if !errors.As(err, &me) || me.Item != "a[x]" {
		t.Errorf("err = %v, want *MappingError for a[x]", err)
	}
}

// FuzzJSONLManifest: any input yields records or row errors, never a panic.
func FuzzJSONLManifest(f *testing.F) {
	f.Add([]byte(`{"request_id":"a","who":[1],"url":"http://x/"}` + "\n"))
	f.Add([]byte(`{"request_id":"\ud83d\ude00","a":{"b":[null,true,{"c":"\u00e9"}]}}`))
	f.Add([]byte("{\"request_id\":1e5}\r\n\n{\"request_id\"\n[1,2]\n"))
	f.Add([]byte(`{"request_id":"x","what":"\ud800\u0041"}`))
	mp, _ := ParseMapping("request_id=request_id,who=a.b[].c,what=a.b[0],when=w[],url=url")
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := newJSONManifest("fuzz.jsonl", bytes.NewReader(data), io.NopCloser(nil), mp)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		prev := 0
		for calls := 0; ; calls++ {
			if calls > len(data)+2 {
				t.Fatalf("%d calls without the end", calls)
			}
			rec, err := r.Next(ctx)
			if errors.Is(err, io.EOF) {
				return
			}
			var re *textin.RowError
			switch {
			case err == nil:
				if rec.Source.Record != prev+1 {
					t.Fatalf("record %+v after %d", rec.Source, prev)
				}
				for fl := range Field(NumFields) {
					if v, ok := rec.Value(fl); ok && v == "" {
						t.Fatalf("%s present but empty", fl)
					}
				}
				prev++
			case errors.As(err, &re):
				if re.Loc.Record != prev+1 {
					t.Fatalf("row error %+v after %d", re.Loc, prev)
				}
				prev++
			default:
				t.Fatalf("unexpected error %T %v", err, err)
			}
		}
	})
}

// FuzzJSONScanner compares the scanner with encoding/json on single lines:
// whatever the scanner accepts, encoding/json accepts too, and the values
// agree (strings as decoded, numbers as written, null/""/missing absent).
// The scanner may refuse more: lone surrogates, a mapped key given twice,
// deep nesting, an object or array where text is mapped.
func FuzzJSONScanner(f *testing.F) {
	f.Add([]byte(`{"request_id":"a\u00e9","who":[{"n":"x"},{"n":2}],"what":1.5e-3,"when":true}`))
	f.Add([]byte(`{"request_id":null,"who":[],"what":"","when":false,"x":{"y":[1,{"z":null}]}}`))
	f.Add([]byte(`{"request_id":"\ud83d\ude00","what":"\/\b\f\n\r\t"}`))
	f.Add([]byte(`{"request_id":"1","request_id":"2"}`))
	mp, _ := ParseMapping("request_id=request_id,who=who[].n,what=what,when=when")
	root, err := compileJSONMapping("fuzz", mp)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var sc jscan
		rec, rerr := sc.record(line, root)
		if rerr != nil {
			return
		}
		if !json.Valid(line) {
			t.Fatalf("scanner accepted invalid JSON %q", line)
		}
		if !utf8.Valid(line) {
			return // encoding/json substitutes U+FFFD; the scanner keeps bytes for Validate
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			t.Fatalf("encoding/json: %v", err)
		}
		text := func(v any) (string, bool) {
			switch x := v.(type) {
			case string:
				return x, x != ""
			case json.Number:
				return string(x), true
			case bool:
				return strconv.FormatBool(x), true
			}
			return "", false
		}
		check := func(f Field, want string, wantOK bool) {
			got, ok := rec.Value(f)
			if got != want || ok != wantOK {
				t.Fatalf("%s = %q,%v; encoding/json says %q,%v (line %q)", f, got, ok, want, wantOK, line)
			}
		}
		for _, k := range []struct {
			f   Field
			key string
		}{{FieldRequestID, "request_id"}, {FieldWhat, "what"}, {FieldWhen, "when"}} {
			want, ok := text(obj[k.key])
			check(k.f, want, ok)
		}
		var parts []string
		if list, ok := obj["who"].([]any); ok {
			for _, el := range list {
				if m, ok := el.(map[string]any); ok {
					if s, ok := text(m["n"]); ok {
						parts = append(parts, s)
					}
				}
			}
		}
		check(FieldWho, strings.Join(parts, "; "), len(parts) > 0)
	})
}
