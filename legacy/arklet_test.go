package legacy

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// upstreamDump is a synthetic upstream-arklet dumpdata plus the
// user and key records a careless export contains.
const upstreamDump = `[
 {"model": "ark.naan", "pk": 12345, "fields": {"name": "Example Museum", "description": "test NAAN", "url": "https://ark.example.org"}},
 {"model": "ark.shoulder", "pk": 1, "fields": {"shoulder": "/x6", "naan": 12345, "name": "Photographs", "description": ""}},
 {"model": "ark.ark", "pk": "12345/x6b4dp12wkm", "fields": {"naan": 12345, "shoulder": "/x6", "assigned_name": "b4dp12wkm", "url": "https://collections.example.org/objects/1001", "metadata": "", "commitment": "", "created_at": "2025-03-04T10:11:12.345Z", "updated_at": "2025-03-05T08:00:00.001Z"}},
 {"model": "ark.ark", "pk": "12345/x63cm1j612q", "fields": {"naan": 12345, "shoulder": "/x6", "assigned_name": "3cm1j612q", "url": "", "metadata": "{'title': 'Untitled'}", "commitment": "", "created_at": null, "updated_at": null}},
 {"model": "ark.ark", "pk": "12345/x6kq82mzt0bw4rn7dx9c2b", "fields": {"naan": 12345, "shoulder": "/x6", "assigned_name": "", "url": "", "metadata": "", "commitment": "", "created_at": "2024-12-01T00:00:00Z", "updated_at": "2024-12-01T00:00:00Z"}},
 {"model": "ark.user", "pk": 1, "fields": {"password": "argon2$argon2id$SECRET-HASH", "username": "admin", "naan": 12345}},
 {"model": "ark.key", "pk": "c0ffee00-0000-4000-8000-5ec12e7t0ken", "fields": {"naan": 12345, "active": true}},
 {"model": "ark.apikey", "pk": 3, "fields": {"key": "5ec12e7hashhashhash", "key_prefix": "c0ffee", "naan": 12345, "name": "ci", "is_active": true}}
]
`

func TestArkletJSONUpstream(t *testing.T) {
	t.Parallel()
	c := readString(t, upstreamDump, ArkletJSON)
	if got := strings.Join(c.order, ""); got != "NSRRRXXX" {
		t.Fatalf("yield order %s (errors %v)", got, c.errs)
	}
	n := c.naans[0]
	if n.NAAN != "12345" || n.Name != "Example Museum" || n.Description != "test NAAN" || n.Where != "https://ark.example.org" || n.Source.Line != 2 {
		t.Errorf("naan: %+v", n)
	}
	s := c.shoulders[0]
	if s.Shoulder != "/x6" || s.NAAN != "12345" || s.SourceID != "1" || s.Name != "Photographs" || s.Kind != "ark" {
		t.Errorf("shoulder: %+v", s)
	}
	a := c.records[0]
	wantCreated := time.Date(2025, 3, 4, 10, 11, 12, 345e6, time.UTC)
	if a.ID != "12345/x6b4dp12wkm" || a.Kind != "ark" || a.Target != "https://collections.example.org/objects/1001" ||
		!a.HasTarget || a.Created == nil || !a.Created.Equal(wantCreated) || a.Updated.Nanosecond() != 1e6 ||
		a.Status != StatusPublic || a.Commitment != nil || a.Source.Line != 4 || a.Source.Record != 3 ||
		a.Metadata[MetaArkletNAAN] != "12345" || a.Metadata[MetaArkletShoulder] != "/x6" || a.Metadata[MetaArkletAssignedName] != "b4dp12wkm" {
		t.Errorf("ark 1: %+v %v", a, a.Metadata)
	}
	// empty target, NULL time before 2024-11, Python repr metadata.
	b := c.records[1]
	if b.HasTarget || b.Target != "" || b.Created != nil || b.Updated != nil || b.Metadata[MetaArkletMetadata] != "{'title': 'Untitled'}" {
		t.Errorf("ark 2: %+v", b)
	}
	// mintarks row: empty assigned_name, no check character; kept as is.
	m := c.records[2]
	if m.ID != "12345/x6kq82mzt0bw4rn7dx9c2b" || m.Metadata[MetaArkletAssignedName] != "" {
		t.Errorf("mintarks row: %+v", m)
	}
	if _, ok := m.Metadata[MetaArkletAssignedName]; !ok {
		t.Error("empty assigned_name dropped")
	}
	for i, want := range []string{"ark.user", "ark.key", "ark.apikey"} {
		r := c.refused[i]
		if r.Model != want || !strings.Contains(r.Reason, "credentials") || r.Source.Record != 6+i {
			t.Errorf("refused %d: %+v", i, r)
		}
	}
	// Nothing secret leaks into any item.
	all := fmt.Sprintf("%+v %+v %+v %+v %+v", c.naans, c.shoulders, c.records, c.refused, c.errs)
	for _, secret := range []string{"SECRET", "5ec12e7", "c0ffee", "admin"} {
		if strings.Contains(all, secret) {
			t.Errorf("secret %q leaked: %s", secret, all)
		}
	}
}

// TestArkletJSONFrick: the Frick fork's shoulder FK, `rights` instead of
// `commitment`, Dublin Core columns and no time stamps.
func TestArkletJSONFrick(t *testing.T) {
	t.Parallel()
	const dump = `[{"model": "ark.ark", "pk": "12345/x6ff272kf1m", "fields": {"naan": 12345, "shoulder": 1, "assigned_name": "ff272kf1m", "url": "https://collections.example.org/objects/77", "metadata": "", "rights": "NR OP", "title": "Study of a horse", "type": "image", "identifier": "FRL-0077", "format": "image/tiff", "relation": "", "source": ""}},
{"model": "ark.ark", "pk": "12345/x6wm37ppm1v", "fields": {"naan": 12345, "shoulder": 1, "assigned_name": "wm37ppm1v", "url": "('https://google.com?q=1',)", "commitment": "C", "rights": "R", "title": ""}}]`
	c := readString(t, dump, ArkletJSON)
	if len(c.records) != 2 || len(c.errs) != 0 || c.truncated != nil {
		t.Fatalf("%d records %v %v", len(c.records), c.errs, c.truncated)
	}
	a := c.records[0]
	if str(a.Commitment) != "NR OP" || str(a.What) != "Study of a horse" || a.Metadata["dc.type"] != "image" ||
		a.Metadata["dc.identifier"] != "FRL-0077" || a.Metadata["dc.format"] != "image/tiff" ||
		a.Metadata[MetaArkletShoulderID] != "1" || a.Metadata[MetaArkletShoulder] != "" || a.Created != nil {
		t.Errorf("frick 1: %+v %v", a, a.Metadata)
	}
	if _, ok := a.Metadata["dc.relation"]; ok {
		t.Error("empty Frick column kept")
	}
	b := c.records[1]
	// commitment and rights both present: commitment wins, rights kept; the
	// tuple-repr url is kept verbatim for the importer to judge.
	if str(b.Commitment) != "C" || b.Metadata["dc.rights"] != "R" || b.Target != "('https://google.com?q=1',)" || b.What != nil || b.Source.Line != 2 {
		t.Errorf("frick 2: %+v %v", b, b.Metadata)
	}
}

// TestArkletJSONLines: dumpdata --format jsonl.
func TestArkletJSONLines(t *testing.T) {
	t.Parallel()
	const dump = "{\"model\": \"ark.ark\", \"pk\": \"12345/x6b4dp12wkm\", \"fields\": {\"url\": \"https://a.example.org/1\"}}\n\n" +
		"{\"model\": \"ark.ark\", \"pk\": \"12345/x63cm1j612q\", \"fields\": {\"url\": \"\"}}\n"
	c := readString(t, dump, ArkletJSON)
	if len(c.records) != 2 || c.records[1].Source.Line != 3 || c.records[1].Source.Record != 2 {
		t.Fatalf("jsonl: %+v", c.records)
	}
	cut := dump[:len(dump)-20]
	c = readString(t, cut, ArkletJSON)
	if len(c.records) != 1 || c.truncated == nil || c.truncated.Loc.Line != 3 || c.truncated.Loc.Record != 2 {
		t.Fatalf("jsonl cut: %d records, %v", len(c.records), c.truncated)
	}
}

func TestArkletJSONBadRecords(t *testing.T) {
	t.Parallel()
	const dump = "[\n" +
		`{"model": "ark.ark", "pk": "12345/x6b4dp12wkm", "fields": {"url": "https://a.example.org/1", "created_at": "yesterday"}},` + "\n" +
		`{"model": "ark.ark", "pk": null, "fields": {"url": "x"}},` + "\n" +
		"{\"model\": \"ark.ark\", \"pk\": \"12345/x6\xe9\", \"fields\": {\"url\": \"x\"}},\n" +
		`{"model": "ark.ark", "pk": "12345/x6ok", "fields": {"url": "y", "created_at": "2025-03-04T10:11:12"}},` + "\n" +
		`{"model": "ark.ark", "pk": "12345/x6bad", "fields": {"url": tru}},` + "\n" +
		`{"model": "auth.permission", "pk": 9, "fields": {}},` + "\n" +
		`{"model": "ark.ark", "pk": "12345/x6last", "fields": {"url": "z"}}` + "\n]\n"
	c := readString(t, dump, ArkletJSON)
	if got := strings.Join(c.order, ""); got != "EEEREXR" {
		t.Fatalf("order %s: %v", got, c.errs)
	}
	if e := c.errs[0]; e.Field != "created_at" || e.ID != "12345/x6b4dp12wkm" || e.Loc.Line != 2 || e.Loc.Record != 1 ||
		!strings.Contains(e.Raw, "yesterday") {
		t.Errorf("bad time: %v / %q", e, e.Raw)
	}
	if e := c.errs[1]; e.Field != "pk" || e.Loc.Line != 3 {
		t.Errorf("no pk: %v", e)
	}
	if e := c.errs[2]; !strings.Contains(e.Reason, "UTF-8") || !strings.Contains(e.Raw, "\xe9") || e.Loc.Line != 4 {
		t.Errorf("non-UTF-8: %v", e)
	}
	// A time without zone is read as UTC and its text kept.
	ok := c.records[0]
	if ok.ID != "12345/x6ok" || ok.Created.Location() != time.UTC || ok.Metadata[MetaArkletCreatedRaw] != "2025-03-04T10:11:12" {
		t.Errorf("naive time: %+v", ok)
	}
	if e := c.errs[3]; e.Loc.Line != 6 || e.Field != "object" {
		t.Errorf("syntax error inside a record: %v", e)
	}
	if c.refused[0].Model != "auth.permission" || strings.Contains(c.refused[0].Reason, "credentials") {
		t.Errorf("refused: %+v", c.refused[0])
	}
	if last := c.records[1]; last.ID != "12345/x6last" || last.Source.Line != 8 || last.Source.Record != 7 {
		t.Errorf("reading did not continue: %+v", last)
	}
}

// TestArkletJSONTruncated: a dump cut inside a record, and one whose array
// is never closed.
func TestArkletJSONTruncated(t *testing.T) {
	t.Parallel()
	cut := upstreamDump[:strings.Index(upstreamDump, `"12345/x63cm1j612q"`)+30]
	c := readString(t, cut, ArkletJSON)
	if got := strings.Join(c.order, ""); got != "NSRT" {
		t.Fatalf("order %s", got)
	}
	if te := c.truncated; te.Loc.Line != 5 || te.Loc.Record != 4 || !strings.Contains(te.Reason, "record 4") {
		t.Errorf("truncated: %v", te)
	}
	unclosed := strings.TrimSuffix(strings.TrimSpace(upstreamDump), "]")
	c = readString(t, unclosed, ArkletJSON)
	if len(c.records) != 3 || c.truncated == nil || c.truncated.Loc.Record != 8 || c.truncated.Loc.Line != 9 ||
		!strings.Contains(c.truncated.Reason, "not closed") {
		t.Errorf("unclosed array: %d records, %v", len(c.records), c.truncated)
	}
	c = readString(t, "", ArkletJSON)
	if c.truncated == nil || len(c.records) != 0 {
		t.Errorf("empty file: %+v", c)
	}
}

// fricksCSV is a synthetic Frick COPY … CSV HEADER,
// with a quoted newline in the last title.
const frickCSV = `ark,shoulder_id,assigned_name,url,metadata,commitment,naan_id,format,identifier,relation,source,title,type
12345/x6ff272kf1m,1,ff272kf1m,https://collections.example.org/objects/77,,,12345,image/tiff,FRL-0077,https://ark.example.org/ark:/12345/x6wm37ppm1v,,Study of a horse,image
12345/x6wm37ppm1v,1,wm37ppm1v,https://collections.example.org/series/3,,NR OP,12345,,,,,Photoarchive series 3,collection
12345/x63cm1j612q,1,3cm1j612q,,,,12345,,,,,"Letter, 1911
(two pages)",text
`

func TestArkletCSV(t *testing.T) {
	t.Parallel()
	c := readString(t, frickCSV, ArkletCSV)
	if len(c.records) != 3 || len(c.errs) != 0 || c.truncated != nil {
		t.Fatalf("%d records %v %v", len(c.records), c.errs, c.truncated)
	}
	a, b, l := c.records[0], c.records[1], c.records[2]
	if a.ID != "12345/x6ff272kf1m" || a.Metadata[MetaArkletShoulderID] != "1" || a.Metadata[MetaArkletNAAN] != "12345" ||
		a.Metadata["dc.relation"] != "https://ark.example.org/ark:/12345/x6wm37ppm1v" || str(a.What) != "Study of a horse" ||
		a.Source.Line != 2 || a.Source.Record != 1 || a.Created != nil {
		t.Errorf("row 1: %+v %v", a, a.Metadata)
	}
	if str(b.Commitment) != "NR OP" || b.Metadata["dc.type"] != "collection" || b.Source.Line != 3 {
		t.Errorf("row 2: %+v", b)
	}
	if str(l.What) != "Letter, 1911\n(two pages)" || l.HasTarget || l.Source.Line != 4 || l.Source.Record != 3 {
		t.Errorf("row 3: %+v", l)
	}

	// Upstream columns, PostgreSQL time stamps with their zones, CRLF and a BOM.
	up := utf8BOM + "ark,shoulder,assigned_name,url,metadata,commitment,naan_id,created_at,updated_at\r\n" +
		"12345/x6b4dp12wkm,/x6,b4dp12wkm,https://a.example.org/1,,,12345,2025-03-04 10:11:12.345+00,2025-03-05 08:00:00+05:30\r\n" +
		"12345/x63cm1j612q,/x6,3cm1j612q,,,,12345,,\r\n"
	c = readString(t, up, "")
	if len(c.records) != 2 || len(c.errs) != 0 {
		t.Fatalf("upstream: %+v %v", c.records, c.errs)
	}
	r := c.records[0]
	if _, off := r.Updated.Zone(); off != 19800 || !r.Created.Equal(time.Date(2025, 3, 4, 10, 11, 12, 345e6, time.UTC)) ||
		r.Metadata[MetaArkletShoulder] != "/x6" {
		t.Errorf("zones: %v %v", r.Created, r.Updated)
	}
	if c.records[1].Created != nil || c.records[1].HasTarget {
		t.Errorf("NULL time / empty url: %+v", c.records[1])
	}

	// Cut inside the quoted title: the two complete rows, then truncation.
	cut := frickCSV[:strings.Index(frickCSV, "(two")]
	c = readString(t, cut, ArkletCSV)
	if len(c.records) != 2 || c.truncated == nil || c.truncated.Loc.Record != 3 || c.truncated.Loc.Line != 4 {
		t.Errorf("cut in quotes: %d records, %v", len(c.records), c.truncated)
	}
	// Cut at the end of a row without its line end.
	cut = strings.TrimSuffix(frickCSV, "\n")
	cut = cut[:len(cut)-2]
	c = readString(t, cut, ArkletCSV)
	if len(c.records) != 2 || c.truncated == nil || c.truncated.Loc.Line != 4 {
		t.Errorf("cut row: %d records, %v", len(c.records), c.truncated)
	}
	// A row with the wrong number of fields is reported; reading continues.
	c = readString(t, "ark,url\n12345/x6a,https://a\n12345/x6b\n12345/x6c,https://c\n", ArkletCSV)
	if len(c.records) != 2 || len(c.errs) != 1 || c.errs[0].Loc.Line != 3 || c.errs[0].Raw != "12345/x6b" {
		t.Errorf("short row: %+v %v", c.records, c.errs)
	}
	if _, err := NewReader(strings.NewReader("id,url\n"), "x.csv", ArkletCSV); err == nil {
		t.Error("header without ark column accepted")
	}
	// a column named twice: neither of its values is chosen
	_, err := NewReader(strings.NewReader("ark,url, URL\n12345/x6a,https://a,https://b\n"), "x.csv", ArkletCSV)
	if !errors.Is(err, ErrDuplicateColumn) || !strings.Contains(err.Error(), `x.csv:1: ark_ark CSV header names column "url" twice (columns 2 and 3)`) {
		t.Errorf("url twice: %v", err)
	}
}
