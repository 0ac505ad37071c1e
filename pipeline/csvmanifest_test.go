package pipeline

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/textin"
)

// nyplCSVMapping is the NYPL mapping documented in MAPPINGS.md.
const nyplCSVMapping = "request_id=UUID,url=Digital Collections URL,who=Contributor,what=Title,when=Date"

func TestCSVNYPL(t *testing.T) {
	t.Parallel()
	r := mustOpen(t, fixtures.SharedData(t, "nypl-publicdomain/pd_collections.csv"), nyplCSVMapping)
	recs, bad := drainManifest(t, r)
	if len(recs) != 932 || len(bad) != 0 {
		t.Fatalf("read %d records, %d bad; want 932, 0 (first bad: %v)", len(recs), len(bad), bad)
	}
	first := recs[0]
	if first.RequestID != "5cd94760-c52a-012f-bcd4-3c075448cc4b" ||
		first.What != "Maps of North America." ||
		first.URL != "http://digitalcollections.nypl.org/collections/5cd94760-c52a-012f-bcd4-3c075448cc4b" {
		t.Errorf("record 1 = %+v", first)
	}
	// Empty Contributor and Date cells are absent, not "".
	if first.Has != HasRequestID|HasURL|HasWhat {
		t.Errorf("record 1 Has = %06b, want request_id|url|what", first.Has)
	}
	if first.Source != (textin.Location{File: r.(*csvManifest).path, Line: 2, Record: 1}) {
		t.Errorf("record 1 Source = %+v", first.Source)
	}
	second := recs[1]
	if second.RequestID != "b50ab6f0-c52b-012f-5986-58d385a7bc34" || second.What != "Cigarette cards" || second.When != "1900" {
		t.Errorf("record 2 = %+v", second)
	}
	// "No newlines inside fields": record N is on line N+1.
	if last := recs[931].Source; last.Line != 933 || last.Record != 932 {
		t.Errorf("last record Source = %+v, want line 933 record 932", last)
	}
	noContributor := 0
	for i := range recs {
		if recs[i].Has&HasWho == 0 {
			noContributor++
		}
		if err := Validate(&recs[i], textin.DefaultLimits()); err != nil {
			t.Errorf("NYPL record fails validation: %v", err)
		}
	}
	if noContributor != 271 { // SOURCES.md: Contributor is empty in 271 rows
		t.Errorf("%d records without who, want 271", noContributor)
	}
}

func TestCSVBOMAndCRLF(t *testing.T) {
	t.Parallel()
	// artist_data.csv starts with a UTF-8 BOM (header "\ufeffid") and uses CRLF.
	p := fixtures.SharedData(t, "tategallery-collection/artist_data.csv")
	r := mustOpen(t, p, "request_id=id,who=name,when=dates,url=url")
	recs, bad := drainManifest(t, r)
	if len(recs) != 3532 || len(bad) != 0 {
		t.Fatalf("read %d records, %d bad; want 3532, 0", len(recs), len(bad))
	}
	want := Record{
		RequestID: "10093", Who: "Abakanowicz, Magdalena", When: "born 1930",
		URL: "http://www.tate.org.uk/art/artists/magdalena-abakanowicz-10093",
		Has: HasRequestID | HasWho | HasWhen | HasURL, Source: textin.Location{File: p, Line: 2, Record: 1},
	}
	if recs[0] != want {
		t.Errorf("record 1 = %+v\nwant       %+v", recs[0], want)
	}
	if recs[1].RequestID != "0" || recs[1].When != "1852–1911" {
		t.Errorf("record 2 = %+v", recs[1])
	}
	for _, rec := range recs {
		if strings.ContainsAny(rec.URL, "\r\n") {
			t.Fatalf("%s: URL keeps a line end: %q", rec.Source, rec.URL)
		}
	}
}

func TestCSVBOMQuotedHeader(t *testing.T) {
	t.Parallel()
	p := writeTemp(t, "bom.csv", "\ufeff\"UUID\",\"Title\"\r\n\"u1\",\"T\"\r\n")
	recs, bad := drainManifest(t, mustOpen(t, p, "request_id=UUID,what=Title"))
	if len(recs) != 1 || len(bad) != 0 || recs[0].RequestID != "u1" || recs[0].What != "T" {
		t.Errorf("records %+v, bad %v", recs, bad)
	}
}

func TestCSVTruncated(t *testing.T) {
	t.Parallel()
	// Cut off inside a quoted field of record 2,135, which starts on line 2,634.
	p := fixtures.SharedData(t, "tategallery-collection/2013-10-11_40526a2/artwork_data.csv")
	r := mustOpen(t, p, "request_id=accession_number,who=artist,what=title,when=dateText,url=thumbnailUrl")
	recs, bad := drainManifest(t, r)
	if len(recs) != 2134 {
		t.Fatalf("read %d complete records, want 2134", len(recs))
	}
	last := recs[2133]
	if last.RequestID != "AR00396" || last.What != "Reigning Queens" || last.Who != "Warhol, Andy" {
		t.Errorf("last complete record = %+v", last)
	}
	// The record is rejected, and the one line it had read after its first is read again
	// alone: it is not a whole record either.
	if len(bad) != 2 {
		t.Fatalf("%d row errors, want 2: %v", len(bad), bad)
	}
	e := bad[0]
	if e.Loc != (textin.Location{File: p, Line: 2634, Record: 2135}) {
		t.Errorf("row error at %+v, want line 2634 record 2135", e.Loc)
	}
	if e.Reason != "quoted field not closed at the end of the file (record starts on line 2634, file stops on line 2635); line 2635 is read again, as a record" {
		t.Errorf("reason = %q", e.Reason)
	}
	if e := bad[1]; e.Loc != (textin.Location{File: p, Line: 2635, Record: 2136}) || e.Reason != "quote inside an unquoted field on line 2635, column 165" {
		t.Errorf("second row error %+v", e)
	}
	// Records with CRLF inside quoted fields keep their start line: the
	// embedded line ends are normalised to "\n" by encoding/csv.
	if _, err := r.Next(t.Context()); !errors.Is(err, io.EOF) {
		t.Errorf("after the end: %v, want io.EOF", err)
	}
}

func TestCSVBadRows(t *testing.T) {
	t.Parallel()
	content := "request_id,url,who,what\r\n" +
		"r1,https://example.org/1,Ann,One\r\n" +
		"r2,https://example.org/2,Bob\r\n" + // 3 fields: bad row
		"r3,https://example.org/3,,\"Three\nlines\n\"\r\n" + // embedded newlines; empty who
		"r4,https://example.org/4,C\"d,Four\r\n" + // bare quote: bad row
		"\r\n" + // blank line: skipped
		"r5,,Eve,Five\r\n"
	p := writeTemp(t, "m.csv", content)
	r := mustOpen(t, p, "")
	recs, bad := drainManifest(t, r)
	if len(recs) != 3 || len(bad) != 2 {
		t.Fatalf("records %d, row errors %d; want 3, 2: %v", len(recs), len(bad), bad)
	}
	if bad[0].Loc != (textin.Location{File: p, Line: 3, Record: 2}) || bad[0].Reason != "has 3 fields, header has 4" {
		t.Errorf("bad[0] = %+v", bad[0])
	}
	if bad[1].Loc != (textin.Location{File: p, Line: 7, Record: 4}) || bad[1].Reason != "quote inside an unquoted field on line 7, column 27" {
		t.Errorf("bad[1] = %+v", bad[1])
	}
	if recs[1].What != "Three\nlines\n" || recs[1].Has&HasWho != 0 || recs[1].Source.Line != 4 || recs[1].Source.Record != 3 {
		t.Errorf("record r3 = %+v", recs[1])
	}
	if recs[2].RequestID != "r5" || recs[2].Has&HasURL != 0 || recs[2].Source != (textin.Location{File: p, Line: 9, Record: 5}) {
		t.Errorf("record r5 = %+v", recs[2])
	}
}

func TestCSVStrayQuoteContinues(t *testing.T) {
	t.Parallel()
	// A quoted field closed and followed by text is a bad row; reading goes on.
	p := writeTemp(t, "q.csv", "request_id,what\na,\"x\"y\nb,ok\n")
	recs, bad := drainManifest(t, mustOpen(t, p, ""))
	if len(bad) != 1 || bad[0].Reason != "unbalanced quote: a closing quote is followed by text on line 2, column 6" || bad[0].Loc.Record != 1 {
		t.Fatalf("row errors = %v", bad)
	}
	if len(recs) != 1 || recs[0].RequestID != "b" || recs[0].Source.Record != 2 || recs[0].Source.Line != 3 {
		t.Errorf("records = %+v", recs)
	}
}

func TestCSVHeaderErrors(t *testing.T) {
	t.Parallel()
	m, _ := ParseMapping("request_id=id,who=creator")
	_, err := OpenManifest(writeTemp(t, "h.csv", "id,name\n1,x\n"), m)
	if !errors.Is(err, ErrMissingColumn) || !strings.Contains(err.Error(), `no column "creator" for who`) {
		t.Errorf("explicit missing column: %v", err)
	}
	_, err = OpenManifest(writeTemp(t, "h.csv", "id,name\n1,x\n"), Mapping{})
	if !errors.Is(err, ErrMissingColumn) || !strings.Contains(err.Error(), `no column "request_id"`) {
		t.Errorf("missing request_id column: %v", err)
	}
	_, err = OpenManifest(writeTemp(t, "e.csv", ""), Mapping{})
	if !errors.Is(err, ErrNoHeader) {
		t.Errorf("empty file: %v", err)
	}
	// Default columns that are absent (who, when, ...) are fine.
	r, err := OpenManifest(writeTemp(t, "ok.csv", "request_id\nz\n"), Mapping{})
	if err != nil {
		t.Fatal(err)
	}
	recs, _ := drainManifest(t, r)
	_ = r.Close()
	if len(recs) != 1 || recs[0].Has != HasRequestID {
		t.Errorf("records = %+v", recs)
	}
}

func TestCSVGzip(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write([]byte("request_id,what\n1,a\n2,b\n"))
	_ = zw.Close()
	p := filepath.Join(t.TempDir(), "m.CSV.gz")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	recs, bad := drainManifest(t, mustOpen(t, p, ""))
	if len(recs) != 2 || len(bad) != 0 || recs[1].What != "b" {
		t.Errorf("records = %+v, bad = %v", recs, bad)
	}
}

func TestCSVContextCancelled(t *testing.T) {
	t.Parallel()
	r := mustOpen(t, writeTemp(t, "c.csv", "request_id\n1\n"), "")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := r.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// FuzzCSVManifest checks that any input yields, per call, a record, a
// *RowError, io.EOF or a *ManifestError — never a panic or an endless loop —
// and that record numbers grow by one per data record.
func FuzzCSVManifest(f *testing.F) {
	f.Add([]byte("request_id,url,who\nr1,https://e.org/1,Ann\n"))
	f.Add([]byte("\ufeffrequest_id,what\r\n1,\"a\r\nb\"\r\n2,c\r\n"))
	f.Add([]byte("request_id,what\n1,\"cut off"))
	f.Add([]byte("request_id,what\n1\n2,a,b\n3,x\"y\n\"4\"z,q\n"))
	f.Add([]byte("request_id\n\x00\n\xff\xfe\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := newCSVManifest("fuzz.csv", bytes.NewReader(data), io.NopCloser(nil), Mapping{}, 0)
		if err != nil {
			var me *ManifestError
			if !errors.As(err, &me) {
				t.Fatalf("open error %T %v, want *ManifestError", err, err)
			}
			return
		}
		ctx := context.Background()
		prev := 0
		for calls := 0; ; calls++ {
			if calls > len(data)+2 {
				t.Fatalf("more than %d calls without the end", calls)
			}
			rec, err := r.Next(ctx)
			if errors.Is(err, io.EOF) {
				return
			}
			var re *textin.RowError
			var me *ManifestError
			switch {
			case err == nil:
				if rec.Source.Record != prev+1 || rec.Source.Line < 2 {
					t.Fatalf("record %+v after record %d", rec.Source, prev)
				}
				if (rec.Has&HasRequestID != 0) != (rec.RequestID != "") {
					t.Fatalf("presence of request ID inconsistent: %+v", rec)
				}
				prev = rec.Source.Record
			case errors.As(err, &re):
				if re.Loc.Record != prev+1 {
					t.Fatalf("row error %+v after record %d", re.Loc, prev)
				}
				prev = re.Loc.Record
			case errors.As(err, &me):
				return
			default:
				t.Fatalf("unexpected error %T %v", err, err)
			}
		}
	})
}

// TestCSVHeaderDuplicateColumn: a header naming a column the reader uses twice is refused at
// line 1 with both positions (which value would count cannot be known); a column the mapping
// does not use may repeat.
func TestCSVHeaderDuplicateColumn(t *testing.T) {
	t.Parallel()
	_, err := OpenManifest(writeTemp(t, "d.csv", "request_id,url,what,url\na,https://a.example.org/,x,https://b.example.org/\n"), Mapping{})
	var me *ManifestError
	if !errors.As(err, &me) || !errors.Is(err, ErrDuplicateColumn) || me.Loc.Line != 1 || !strings.Contains(err.Error(), `columns 2 and 4 are both "url"`) {
		t.Fatalf("url twice: %v", err)
	}
	m, _ := ParseMapping("request_id=id")
	_, err = OpenManifest(writeTemp(t, "d2.csv", "id,note,id\na,x,b\n"), m)
	if !errors.Is(err, ErrDuplicateColumn) || !strings.Contains(err.Error(), `columns 1 and 3 are both "id" (request_id)`) {
		t.Fatalf("mapped request_id twice: %v", err)
	}
	recs, bad := drainManifest(t, mustOpen(t, writeTemp(t, "d3.csv", "request_id,note,note\na,x,y\n"), ""))
	if len(bad) != 0 || len(recs) != 1 || recs[0].RequestID != "a" {
		t.Fatalf("an unused column twice: records %+v, rejects %v", recs, bad)
	}
}
