package legacy

import (
	"strings"
	"testing"
	"time"
)

// ezidANVL is a synthetic EZID ANVL batch download (4 records).
const ezidANVL = `:: ark:/99999/fk4mmd171kf
_created: 1577836800
_export: yes
_owner: exampleuser
_ownergroup: examplegroup
_profile: erc
_status: public
_target: https://repo.example.org/items/1
_updated: 1704067200
erc.what: Field notebook: no. 7
erc.when: 1923
erc.who: Doe, Jane

:: ark:/99999/fk4x49f4k3g
_created: 1600000000
_export: no
_owner: exampleuser
_ownergroup: examplegroup
_profile: erc
_status: reserved
_target: https://ezid.cdlib.org/id/ark:/99999/fk4x49f4k3g
_updated: 1600000000

:: ark:/99999/fk4m9kwq53d
_created: 1500000000
_export: yes
_owner: otheruser
_ownergroup: examplegroup
_profile: dc
_status: unavailable | withdrawn by depositor
_target: https://data.example.org/set/3
_updated: 1650000000
dc.creator: Example Survey Office
dc.title: Survey tables%0Asecond line

:: ark:/12345/b2r2m1n61/page/2
_created: 1400000000
_export: yes
_owner: exampleuser
_ownergroup: examplegroup
_profile: erc
_status: public
_target: https://viewer.example.org/b2r2m1n61?p=2
_updated: 1400000000
`

func TestEZIDANVLDoc(t *testing.T) {
	t.Parallel()
	c := readString(t, ezidANVL, "")
	if len(c.records) != 4 || len(c.errs) != 0 || c.truncated != nil {
		t.Fatalf("%d records, %v, %v", len(c.records), c.errs, c.truncated)
	}
	a, r, u, q := c.records[0], c.records[1], c.records[2], c.records[3]
	if a.ID != "ark:/99999/fk4mmd171kf" || a.Status != StatusPublic || a.Owner != "exampleuser" ||
		str(a.What) != "Field notebook: no. 7" || str(a.Who) != "Doe, Jane" || str(a.When) != "1923" ||
		!a.Created.Equal(time.Unix(1577836800, 0)) || !a.Updated.Equal(time.Unix(1704067200, 0)) ||
		a.Metadata["_ownergroup"] != "examplegroup" || a.Metadata["_export"] != "yes" || a.Metadata["_profile"] != "erc" ||
		a.Source.Line != 1 || a.Source.Record != 1 {
		t.Errorf("1: %+v %v", a, a.Metadata)
	}
	if _, ok := a.Metadata["erc.who"]; ok {
		t.Error("erc.who kept twice")
	}
	// reserved keeps EZID's default self-reference, flagged.
	if r.Status != StatusReserved || r.Target != "https://ezid.cdlib.org/id/ark:/99999/fk4x49f4k3g" || !r.TargetIsDefault || r.Source.Line != 14 {
		t.Errorf("reserved: %+v", r)
	}
	// tombstone: reason and real target kept; %0A decoded once.
	if u.Status != StatusUnavailable || u.StatusReason != "withdrawn by depositor" || u.Target != "https://data.example.org/set/3" ||
		u.TargetIsDefault || u.Metadata["dc.title"] != "Survey tables\nsecond line" || u.Owner != "otheruser" || u.Who != nil {
		t.Errorf("unavailable: %+v %v", u, u.Metadata)
	}
	if q.ID != "ark:/12345/b2r2m1n61/page/2" || q.Source.Record != 4 || q.Source.Line != 36 {
		t.Errorf("qualifier: %+v", q)
	}
}

func TestEZIDANVLEdges(t *testing.T) {
	t.Parallel()
	in := utf8BOM + "# a comment before the first record\r\n" +
		":: ark:12345/x6B4-dp%7d\r\n" + // new label, hyphen, case, %-escape: the id is never decoded
		"_target: https://a.example.org/a%2541\r\n" + // %25 decoded once: %41 stays
		"_status: public\r\n" +
		"_created: 2020-01-01T00:00:00Z\r\n" +
		"erc: who: Unknown%0Awhat: Photograph of El Encanto%0Awhen: Unknown%0Awhere: ark:/13030/c8251g4t%0Awhere: CMP_060\r\n" +
		"dc.subject: maps\r\n" +
		"dc.subject: tables\r\n" +
		"dc.description: first part\r\n" +
		"  continued here\r\n" +
		"\r\n" +
		":: ark:/12345/x6bad\r\n_created: yesterday\r\n\r\n" +
		":: ark:/12345/x6bad2\r\n_status: gone\r\n\r\n" +
		":: ark:/12345/x6bad3\r\n_target: https://a.example.org/%zz\r\n\r\n" +
		":: doi:10.5072/FK2TEST\r\n_target: https://doi.example.org\r\n" +
		":: ark:/12345/x6nogap\r\n_target: \r\n" // no blank line before it; empty target
	c := readString(t, in, EZIDANVL)
	if got := strings.Join(c.order, ""); got != "REEERR" {
		t.Fatalf("order %s: %v", got, c.errs)
	}
	a := c.records[0]
	if a.ID != "ark:12345/x6B4-dp%7d" || a.Target != "https://a.example.org/a%41" || a.Source.Line != 2 ||
		!a.Created.Equal(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)) ||
		str(a.Who) != "Unknown" || str(a.What) != "Photograph of El Encanto" || str(a.When) != "Unknown" ||
		a.Metadata["dc.subject"] != "maps ; tables" || a.Metadata["dc.description"] != "first part continued here" ||
		!strings.HasPrefix(a.Metadata["erc"], "who: Unknown\nwhat:") {
		t.Errorf("edges: %+v %v", a, a.Metadata)
	}
	if e := c.errs[0]; e.Field != "_created" || e.ID != "ark:/12345/x6bad" || e.Loc.Line != 12 || e.Loc.Record != 2 ||
		!strings.Contains(e.Raw, "yesterday") {
		t.Errorf("bad time: %v", e)
	}
	if e := c.errs[1]; e.Field != "_status" || !strings.Contains(e.Err.Error(), "gone") {
		t.Errorf("bad status: %v", e)
	}
	if e := c.errs[2]; e.Field != "_target" || !strings.Contains(e.Reason, "%-escape") {
		t.Errorf("bad escape: %v", e)
	}
	if d := c.records[1]; d.Kind != "doi" || d.ID != "doi:10.5072/FK2TEST" {
		t.Errorf("doi: %+v", d)
	}
	if n := c.records[2]; n.ID != "ark:/12345/x6nogap" || n.HasTarget || n.Source.Line != 23 || n.Source.Record != 6 {
		t.Errorf("no gap / empty target: %+v", n)
	}
}

func TestEZIDANVLTruncated(t *testing.T) {
	t.Parallel()
	cut := strings.TrimSuffix(ezidANVL, "\n")
	cut = cut[:len(cut)-3] // "_updated: 14000000" without line end
	c := readString(t, cut, EZIDANVL)
	if len(c.records) != 3 || c.truncated == nil || c.truncated.Loc.Line != 44 || c.truncated.Loc.Record != 4 ||
		!strings.Contains(c.truncated.Reason, "ark:/12345/b2r2m1n61/page/2") {
		t.Errorf("cut: %d, %v", len(c.records), c.truncated)
	}
}

// ezidCSV is a synthetic EZID CSV batch download (convertTimestamps=yes).
const ezidCSV = `_id,_status,_created,_target,erc.who
ark:/99999/fk4mmd171kf,public,2020-01-01T00:00:00Z,https://repo.example.org/items/1,"Doe, Jane"
ark:/99999/fk4x49f4k3g,reserved,2020-09-13T12:26:40Z,https://ezid.cdlib.org/id/ark:/99999/fk4x49f4k3g,
ark:/99999/fk4m9kwq53d,unavailable | withdrawn by depositor,2017-07-14T02:40:00Z,https://data.example.org/set/3,
`

func TestEZIDCSV(t *testing.T) {
	t.Parallel()
	c := readString(t, ezidCSV, "")
	if len(c.records) != 3 || len(c.errs) != 0 || c.truncated != nil {
		t.Fatalf("%+v %v %v", c.records, c.errs, c.truncated)
	}
	a, r, u := c.records[0], c.records[1], c.records[2]
	if str(a.Who) != "Doe, Jane" || !a.Created.Equal(time.Unix(1577836800, 0)) || a.Updated != nil || a.Source.Line != 2 {
		t.Errorf("1: %+v", a)
	}
	if r.Status != StatusReserved || !r.TargetIsDefault || r.Who != nil || !r.Created.Equal(time.Unix(1600000000, 0)) {
		t.Errorf("2: %+v", r)
	}
	if u.Status != StatusUnavailable || u.StatusReason != "withdrawn by depositor" || u.Created.Unix() != 1500000000 || u.Source.Record != 3 {
		t.Errorf("3: %+v", u)
	}
	// Columns in another order, no _status column at all (public), CRLF.
	c = readString(t, "_target,_id\r\nhttps://x.example.org,ark:/12345/x6a\r\n,ark:/12345/x6b\r\n", EZIDCSV)
	if len(c.records) != 2 || c.records[0].Status != StatusPublic || c.records[0].Target != "https://x.example.org" || c.records[1].HasTarget {
		t.Errorf("reordered: %+v", c.records)
	}
	// The last row cut without its line end.
	c = readString(t, strings.TrimSuffix(ezidCSV, "\n"), EZIDCSV)
	if len(c.records) != 2 || c.truncated == nil || c.truncated.Loc.Line != 4 || c.truncated.Loc.Record != 3 {
		t.Errorf("cut: %d %v", len(c.records), c.truncated)
	}
	if _, err := NewReader(strings.NewReader("_status,_target\npublic,x\n"), "dl.csv", EZIDCSV); err == nil ||
		!strings.Contains(err.Error(), "no _id column") {
		t.Errorf("missing _id: %v", err)
	}
	c = readString(t, "_id,_status\nark:/1/x,public,extra\nark:/1/y,public\n", EZIDCSV)
	if len(c.records) != 1 || len(c.errs) != 1 || c.errs[0].Loc.Line != 2 || c.errs[0].Field != "row" {
		t.Errorf("wrong field count: %v", c.errs)
	}
}
