package legacy_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/legacy"
	"github.com/arkhe-ledger/arkhe/textin"
)

func TestNormalizeRecord(t *testing.T) {
	t.Parallel()
	str := func(s string) *string { return &s }
	zoned := time.Date(2025, 3, 4, 10, 11, 12, 0, time.FixedZone("", 5*3600+1800))
	cases := []struct {
		name     string
		rec      legacy.Record
		key      string
		original string // "" for none
		target   string // "-" for none
		status   string
		meta     string
		field    string // problem field, "" for none
	}{
		{"arklet stored form", legacy.Record{ID: "12345/x6b4dp12wkm", Kind: "ark", Target: "https://e.org/1", HasTarget: true,
			Metadata: map[string]string{legacy.MetaArkletNAAN: "12345", legacy.MetaArkletShoulder: "/x6", legacy.MetaArkletAssignedName: "b4dp12wkm"}},
			"12345/x6b4dp12wkm", "", "https://e.org/1", "public", "", ""},
		{"old label", legacy.Record{ID: "ark:/12345/x6b4", Kind: "ark"}, "12345/x6b4", "", "-", "public", "", ""},
		{"upper label and NMA", legacy.Record{ID: "https://n2t.net/ARK:/12345/x6b4", Kind: "ark"}, "12345/x6b4", "", "-", "public", "", ""},
		{"hyphens kept as original", legacy.Record{ID: "ark:/12345/x6-b4", Kind: "ark"}, "12345/x6b4", "ark:/12345/x6-b4", "-", "public", "", ""},
		{"unicode hyphen removed on import", legacy.Record{ID: "ark:/12345/x6\u2010b4", Kind: "ark"}, "12345/x6b4", "ark:/12345/x6\u2010b4", "-", "public", "", ""},
		{"case kept", legacy.Record{ID: "ark:/12345/X6B4", Kind: "ark"}, "12345/X6B4", "", "-", "public", "", ""},
		{"percent uppercased, original kept", legacy.Record{ID: "ark:/12345/x6%7d", Kind: "ark"}, "12345/x6%7D", "ark:/12345/x6%7d", "-", "public", "", ""},
		{"qualifier kept in the key", legacy.Record{ID: "ark:/87602/m4/M3174", Kind: "ark"}, "87602/m4/M3174", "", "-", "public", "", ""},
		{"letter NAAN", legacy.Record{ID: "ark:/b5060/d8bc75", Kind: "ark"}, "b5060/d8bc75", "", "-", "public", "", ""},
		{"EZID default target is none", legacy.Record{ID: "ark:/99999/fk4x", Kind: "ark", Target: "https://ezid.cdlib.org/id/ark:/99999/fk4x",
			HasTarget: true, TargetIsDefault: true, Status: legacy.StatusReserved}, "99999/fk4x", "", "-", "reserved", "", ""},
		{"tombstone keeps reason and target", legacy.Record{ID: "ark:/13030/k6", Kind: "ark", Target: "http://m.org/x", HasTarget: true,
			Status: legacy.StatusUnavailable, StatusReason: "restricted"}, "13030/k6", "", "http://m.org/x", "unavailable", "", ""},
		{"redirect code, owner and zone kept in metadata", legacy.Record{ID: "ark:/13960/t1", Kind: "ark", Target: "http://a.org", HasTarget: true,
			RedirectCode: 303, Owner: "ark:/99166/p9x", Created: &zoned, Metadata: map[string]string{"_,ep": "p:&P/1||76"}},
			"13960/t1", "", "http://a.org", "public", `{"_,ep":"p:&P/1||76","created_at_given":"2025-03-04T10:11:12+05:30","owner":"ark:/99166/p9x","redirect_code":"303"}`, ""},
		{"arklet NAAN that matches only after int()", legacy.Record{ID: "012345/x6b4", Kind: "ark", Metadata: map[string]string{legacy.MetaArkletNAAN: "12345"}},
			"", "", "", "", "", "naan"},
		{"name over 255 octets", legacy.Record{ID: "ark:/12345/x6" + strings.Repeat("b", 300), Kind: "ark"}, "", "", "", "", "", "id"},
		{"bad escape", legacy.Record{ID: "ark:/12345/x6%zz", Kind: "ark"}, "", "", "", "", "", "id"},
	}
	// a refused value keeps the name: the row is reserved, without the value, and says why
	refusedCases := []struct {
		name    string
		rec     legacy.Record
		refused string // the refused fields, in order
		reason  string // a part of the first reason
	}{
		{"NUL in who", legacy.Record{ID: "ark:/12345/x6b4", Kind: "ark", Who: str("a\x00b"), What: str("kept")}, "who", "NUL"},
		{"target over the limit", legacy.Record{ID: "ark:/12345/x6b4", Kind: "ark", Target: "https://e.org/" + strings.Repeat("a", 2048), HasTarget: true},
			"target", "limit 2048"},
		{"javascript target", legacy.Record{ID: "ark:/12345/x6b4", Kind: "ark", Target: "javascript:alert(1)", HasTarget: true, What: str("kept")},
			"target", `scheme "javascript" is not allowed`},
		{"data target", legacy.Record{ID: "ark:/12345/x6b4", Kind: "ark", Target: "data:text/html,<b>x</b>", HasTarget: true}, "target", `scheme "data"`},
		{"userinfo in the target", legacy.Record{ID: "ark:/12345/x6b4", Kind: "ark", Target: "https://curator:s3cret@e.org/1", HasTarget: true},
			"target", "userinfo"},
		{"unknown status, tombstone reason dropped", legacy.Record{ID: "ark:/12345/x6b4", Kind: "ark", Status: "withdrawn", StatusReason: "x"},
			"status", `"withdrawn"`},
		{"NUL in a metadata value, and a bad target", legacy.Record{ID: "ark:/12345/x6b4", Kind: "ark", Target: "ftp://e.org", HasTarget: true,
			Metadata: map[string]string{"note": "a\x00", "other": "kept"}}, "target note", "ftp"},
	}
	for _, tc := range refusedCases {
		t.Run(tc.name, func(t *testing.T) {
			row, err := legacy.NormalizeRecord(&tc.rec)
			if err != nil {
				t.Fatal(err)
			}
			var fields []string
			for _, r := range row.Refused {
				fields = append(fields, r.Field)
				if r.ID != tc.rec.ID {
					t.Errorf("refusal %+v does not name the record", r)
				}
			}
			if strings.Join(fields, " ") != tc.refused || !strings.Contains(row.Refused[0].Reason, tc.reason) {
				t.Fatalf("refused %+v, want fields %q, a reason with %q", row.Refused, tc.refused, tc.reason)
			}
			if row.Key() != "12345/x6b4" || row.Status != "reserved" || row.Target != nil || row.Reason != nil || row.Who != nil {
				t.Errorf("row %+v, want 12345/x6b4 reserved without the refused values", row)
			}
			if tc.rec.What != nil && impDeref(row.What) != "kept" {
				t.Errorf("what %v: a good value is kept", row.What)
			}
			if tc.rec.Metadata != nil && string(row.Metadata) != `{"other":"kept"}` {
				t.Errorf("metadata %s, want the good entry only", row.Metadata)
			}
		})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			row, err := legacy.NormalizeRecord(&tc.rec)
			if tc.field != "" {
				var p *textin.RowError
				if !errors.As(err, &p) || p.Field != tc.field {
					t.Fatalf("err %v, want a problem in field %s", err, tc.field)
				}
				if tc.field == "id" && strings.Contains(tc.name, "255") && !strings.Contains(p.Reason, "the limit is 255") {
					t.Errorf("reason %q does not name the limit", p.Reason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if row.Key() != tc.key {
				t.Errorf("key %q, want %q", row.Key(), tc.key)
			}
			if got := impDeref(row.Original); got != tc.original {
				t.Errorf("original %q, want %q", got, tc.original)
			}
			if got := impDeref(row.Target); (tc.target == "-") != (row.Target == nil) || (row.Target != nil && got != tc.target) {
				t.Errorf("target %v, want %q", row.Target, tc.target)
			}
			if row.Status != tc.status {
				t.Errorf("status %q", row.Status)
			}
			if string(row.Metadata) != tc.meta {
				t.Errorf("metadata %s, want %s", row.Metadata, tc.meta)
			}
		})
	}
}

func impDeref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func TestShoulderIndexAssign(t *testing.T) {
	t.Parallel()
	x := legacy.NewShoulderIndex()
	for _, e := range []*legacy.ShoulderEntry{
		{NAAN: "13030", Bare: "t", Zone: ark.ZoneNone, ID: 1},
		{NAAN: "13030", Bare: "x6", Zone: ark.ZoneNAANName, ID: 2},
		{NAAN: "13030", Bare: "x6b", Zone: ark.ZoneNAANName, ID: 3},
		{NAAN: "87286", Bare: "", Zone: ark.ZoneNone, ID: 4},
	} {
		x.Put(e)
	}
	parse := func(s string) ark.ARK {
		a, err := ark.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	cases := []struct {
		ark, stored string
		added       bool
	}{
		{"ark:13030/x6bcd", "/x6b", false},  // nested: the longer one wins
		{"ark:13030/x6ccd", "/x6", false},   // the shorter one
		{"ark:13030/t0000001", "/t", false}, // a registered legacy shoulder beats the primordinal t0
		{"ark:13030/c8251g4t", "/c8", true}, // unregistered primordinal: new legacy shoulder
		{"ark:13030/c8xyz", "/c8", false},   // now registered in the index
		{"ark:13030/bpt6k65358", "/bpt6", true},
		{"ark:13030/Qabc", "/", true},    // no primordinal shoulder: the NAAN-wide one
		{"ark:87286/x9abc", "/x9", true}, // a registered "/" does not swallow a primordinal shoulder
		{"ark:87286/Zabc", "/", false},   // but holds names without one
		{"ark:13030/x6b/page/2", "/x6b", false},
	}
	for _, tc := range cases {
		e, added := x.Assign(parse(tc.ark), ark.ZoneNone)
		if e.Stored() != tc.stored || added != tc.added {
			t.Errorf("%s: %s added=%v, want %s added=%v", tc.ark, e.Stored(), added, tc.stored, tc.added)
		}
	}
}

func TestNormalizeNAAN(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"12345": "12345", "B5060": "b5060", "123-45": "12345", "012345": "012345"} {
		if got, err := legacy.NormalizeNAAN(in); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "12a45", "10.7939", strings.Repeat("1", 17), "123/45"} {
		if got, err := legacy.NormalizeNAAN(in); err == nil {
			t.Errorf("%q accepted as %q", in, got)
		}
	}
}

// FuzzNormalizeRecord: any identifier either normalizes to a valid ledger key (whose spelling is
// kept only when it differs) or is refused with a *textin.RowError; never a panic.
func FuzzNormalizeRecord(f *testing.F) {
	for _, s := range []string{"ark:/12345/x6b4", "12345/x6-b4", "https://n2t.net/ark:/99999/fk4%7d", "ark:12345",
		"ark:/12345/x54.v2/c3", "ARK:/B5060/d8", "ark:/12345/x6\u2010b4/", "", "doi:10.1/x", "12345//x6"} {
		f.Add(s, "https://e.org/x", "who")
	}
	f.Fuzz(func(t *testing.T, id, target, who string) {
		rec := legacy.Record{ID: id, Kind: legacy.IdentifierKind(id), Target: target, HasTarget: target != "", Who: &who,
			Metadata: map[string]string{"k": who}}
		row, err := legacy.NormalizeRecord(&rec)
		if err != nil {
			var p *textin.RowError
			if !errors.As(err, &p) || p.Field == "" || p.Reason == "" {
				t.Fatalf("%q: error %v is not a *textin.RowError naming a field", id, err)
			}
			return
		}
		k := row.Key()
		if len(k) > ark.MaxKey {
			t.Fatalf("key %q over %d octets", k, ark.MaxKey)
		}
		if a, err := ark.ParseKey(k); err != nil || a.Key() != k {
			t.Fatalf("key %q does not parse back: %v", k, err)
		}
		if row.Original != nil && *row.Original != id {
			t.Fatalf("original %q is not the input %q", *row.Original, id)
		}
		var m map[string]string
		if err := json.Unmarshal(row.Metadata, &m); err != nil || m["k"] != who {
			t.Fatalf("metadata %q: %v", row.Metadata, err)
		}
	})
}
