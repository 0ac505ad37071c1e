package legacy

import (
	"strings"
	"testing"
)

// n2tDump is a synthetic N2T binder dump (4 identifiers).
const n2tDump = `VERSION=3
format=print
type=btree
duplicates=1
HEADER=END
 :/bindings_count
 10
 ark:/99999/fk4mmd171kf|_,ec
 1700000000
 ark:/99999/fk4mmd171kf|_,ep
 p:&P/1||76
 ark:/99999/fk4mmd171kf|_t
 https://repo.example.org/items/1
 ark:/99999/fk4x49f4k3g|__mc
 1262304000
 ark:/99999/fk4x49f4k3g|_t
 http://old.example.org/cgi-bin/show?id=2&lang=en
 ark:/99999/fk4m9kwq53d|_t
 303 https://data.example.org/set/3/
 ark:/99999/fk4m9kwq53d|what
 Survey tables, 1911\0a(second line)
 ark:/99999/fk4m9kwq53d|who
 (:unkn) Anonymous
 ark:/99999/fk4mmp6c3kz|how
 (:mtype text) letter
 ark:/99999/fk4mmp6c3kz|how
 (:mtype image) scan
DATA=END
`

func TestN2TDumpDoc(t *testing.T) {
	t.Parallel()
	c := readString(t, n2tDump, "")
	if len(c.records) != 4 || len(c.errs) != 0 || c.truncated != nil {
		t.Fatalf("%d records, %v, %v", len(c.records), c.errs, c.truncated)
	}
	a, b, r3, r4 := c.records[0], c.records[1], c.records[2], c.records[3]
	if a.ID != "ark:/99999/fk4mmd171kf" || a.Created.Unix() != 1700000000 || a.Target != "https://repo.example.org/items/1" ||
		a.Metadata["_,ep"] != "p:&P/1||76" || a.Source.Line != 8 || a.Source.Record != 1 {
		t.Errorf("1: %+v", a)
	}
	if b.Created.Unix() != 1262304000 || b.Target != "http://old.example.org/cgi-bin/show?id=2&lang=en" || b.Source.Line != 14 {
		t.Errorf("2: %+v", b)
	}
	// redirect code split off; \hh decoded once; no time → nil.
	if r3.RedirectCode != 303 || r3.Target != "https://data.example.org/set/3/" || str(r3.What) != "Survey tables, 1911\n(second line)" ||
		str(r3.Who) != "(:unkn) Anonymous" || r3.Created != nil || r3.Source.Line != 18 {
		t.Errorf("3: %+v what=%q", r3, str(r3.What))
	}
	// multi-valued element; metadata without a target.
	if r4.HasTarget || r4.Metadata["how"] != "(:mtype text) letter ; (:mtype image) scan" || r4.Source.Record != 4 {
		t.Errorf("4: %+v", r4)
	}
}

func TestN2TDumpEdges(t *testing.T) {
	t.Parallel()
	const head = "VERSION=3\nformat=print\ntype=btree\nHEADER=END\n"
	dump := head +
		// EZID legacy binder form: tombstone URL in _t, real target in _t1.
		" ark:/13030/m5tomb|_is\n unavailable | withdrawn by depositor\n" +
		" ark:/13030/m5tomb|_t\n https://ezid.cdlib.org/tombstone/id/ark:/13030/m5tomb\n" +
		" ark:/13030/m5tomb|_t1\n https://data.example.org/real\n" +
		" ark:/13030/m5tomb|_o\n ark:/99166/p9abc\n" +
		" ark:/13030/m5tomb|_c\n 1500000000\n" +
		" ark:/13030/m5tomb|_u\n 1650000000\n" +
		" ark:/13030/m5tomb|erc.who\n Doe, Jane\n" +
		// backslash escaped as \\; new label; hyphens; case; %-escape kept.
		" ark:12345/X6-B4dp%7d|_t\n https://a.example.org/back\\\\slash\n" +
		// Latin-1 byte: reported, raw kept.
		" ark:/12345/x6latin|who\n Caf\\e9\n" +
		" ark:/12345/x6latin|_t\n https://a.example.org/l\n" +
		// bad escape
		" ark:/12345/x6esc|_t\n https://a.example.org/\\zz\n" +
		// key without |
		" ark:/12345/x6nobar\n value\n" +
		// a data line without its leading space
		"ark:/12345/x6nospace|_t\n" +
		" ark:/12345/x6ok|_t\n https://a.example.org/ok\n" +
		"DATA=END\n"
	c := readString(t, dump, N2TDump)
	if got := strings.Join(c.order, ""); got != "RREEEER" {
		t.Fatalf("order %s: %v", got, c.errs)
	}
	tomb := c.records[0]
	if tomb.Status != StatusUnavailable || tomb.StatusReason != "withdrawn by depositor" || tomb.Target != "https://data.example.org/real" ||
		tomb.Metadata["_t"] != "https://ezid.cdlib.org/tombstone/id/ark:/13030/m5tomb" || tomb.Owner != "ark:/99166/p9abc" ||
		tomb.Created.Unix() != 1500000000 || tomb.Updated.Unix() != 1650000000 || str(tomb.Who) != "Doe, Jane" {
		t.Errorf("tombstone: %+v %v", tomb, tomb.Metadata)
	}
	odd := c.records[1]
	if odd.ID != "ark:12345/X6-B4dp%7d" || odd.Kind != "ark" || odd.Target != `https://a.example.org/back\slash` {
		t.Errorf("spelling: %+v", odd)
	}
	if e := c.errs[0]; e.ID != "ark:/12345/x6latin" || e.Field != "who" || !strings.Contains(e.Reason, "UTF-8") ||
		!strings.Contains(e.Raw, `Caf\e9`) || e.Loc.Line != 21 {
		t.Errorf("latin-1: %v raw=%q", e, e.Raw)
	}
	if e := c.errs[1]; e.Field != "_t" || !strings.Contains(e.Err.Error(), "bad \\ escape") {
		t.Errorf("bad escape: %v", e)
	}
	if e := c.errs[2]; e.Field != "key" || !strings.Contains(e.Err.Error(), "no |") {
		t.Errorf("no bar: %v", e)
	}
	if e := c.errs[3]; e.Field != "line" || e.Loc.Line != 29 || e.Loc.Record != 6 {
		t.Errorf("no space: %v", e)
	}
	if last := c.records[2]; last.ID != "ark:/12345/x6ok" || last.Target != "https://a.example.org/ok" || last.Source.Record != 7 {
		t.Errorf("after the bad lines: %+v", last)
	}
}

// TestN2TTruncated: cut inside a pair, inside the header, and inside a
// value line; and the end marker missing after a complete pair.
func TestN2TTruncated(t *testing.T) {
	t.Parallel()
	cut := n2tDump[:strings.Index(n2tDump, " (:unkn) Anonymous")] // key "…|who" read, value missing
	c := readString(t, cut, N2TDump)
	if got := strings.Join(c.order, ""); got != "RRT" {
		t.Fatalf("order %s", got)
	}
	if te := c.truncated; te.Loc.Line != 22 || te.Loc.Record != 3 || !strings.Contains(te.Reason, "fk4m9kwq53d|who") ||
		!strings.Contains(te.Reason, "not yielded") {
		t.Errorf("mid pair: %v", te)
	}
	cut = n2tDump[:strings.Index(n2tDump, "Survey")+6] // value line cut without newline
	c = readString(t, cut, N2TDump)
	if len(c.records) != 2 || c.truncated == nil || c.truncated.Loc.Line != 21 || c.truncated.Loc.Record != 3 {
		t.Errorf("mid value: %d, %v", len(c.records), c.truncated)
	}
	c = readString(t, "VERSION=3\nformat=print\n", N2TDump)
	if c.truncated == nil || c.truncated.Loc.Line != 2 || !strings.Contains(c.truncated.Reason, "HEADER=END") {
		t.Errorf("header: %v", c.truncated)
	}
	noEnd := strings.TrimSuffix(n2tDump, "DATA=END\n")
	c = readString(t, noEnd, N2TDump)
	if len(c.records) != 4 || c.truncated == nil || c.truncated.Loc.Line != 27 || c.truncated.Loc.Record != 4 {
		t.Errorf("no DATA=END: %d, %v", len(c.records), c.truncated)
	}
	// A key whose identifier starts a new record, cut before its value: the
	// previous identifier is complete and is yielded.
	cut = n2tDump[:strings.Index(n2tDump, " ark:/99999/fk4mmp6c3kz|how")+len(" ark:/99999/fk4mmp6c3kz|how\n")]
	c = readString(t, cut, N2TDump)
	if len(c.records) != 3 || c.truncated.Loc.Record != 4 {
		t.Errorf("new id cut: %d, %v", len(c.records), c.truncated)
	}
}

func TestN2TVariants(t *testing.T) {
	t.Parallel()
	// CRLF and a BOM.
	crlf := utf8BOM + strings.ReplaceAll(n2tDump, "\n", "\r\n")
	c := readString(t, crlf, "")
	if len(c.records) != 4 || c.truncated != nil || c.records[2].Target != "https://data.example.org/set/3/" {
		t.Fatalf("CRLF: %+v %v", c.records, c.truncated)
	}
	// db_dump without -p: bytevalue (hex) lines.
	hex := "VERSION=3\nformat=bytevalue\ntype=btree\nHEADER=END\n" +
		" 61726b3a2f31323334352f7836617c5f74\n 68747470733a2f2f612e6578616d706c652e6f7267\nDATA=END\n"
	c = readString(t, hex, N2TDump)
	if len(c.records) != 1 || c.records[0].ID != "ark:/12345/x6a" || c.records[0].Target != "https://a.example.org" {
		t.Errorf("bytevalue: %+v %v", c.records, c.errs)
	}
	// Two sections (a db_dump of several databases).
	two := n2tDump + "VERSION=3\nformat=print\nHEADER=END\n ark:/12345/x6z|_t\n https://z\nDATA=END\n"
	c = readString(t, two, N2TDump)
	if len(c.records) != 5 || c.records[4].ID != "ark:/12345/x6z" || c.records[4].Source.Line != 32 {
		t.Errorf("two sections: %d %+v", len(c.records), c.records[len(c.records)-1])
	}
	// Not a dump at all.
	if _, err := NewReader(strings.NewReader(" ark:/1/x|_t\n y\n"), "x", N2TDump); err != nil {
		t.Fatalf("NewReader: %v", err)
	}
	r, _ := NewReader(strings.NewReader("hello\n"), "x", N2TDump)
	c2 := func() error { _, err := r.Next(t.Context()); return err }()
	if c2 == nil || !strings.Contains(c2.Error(), "not a db_dump header") {
		t.Errorf("garbage: %v", c2)
	}
	if _, err := r.Next(t.Context()); err != c2 {
		t.Errorf("fatal error not sticky: %v", err)
	}
}
