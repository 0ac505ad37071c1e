package pipeline

import (
	"strings"
	"testing"

	"github.com/arkhe-ledger/arkhe/textin"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	base := func() Record {
		var r Record
		r.Set(FieldRequestID, "A00001")
		r.Set(FieldURL, "http://www.tate.org.uk/art/artworks/a00001")
		r.Set(FieldWho, "Robert Blake")
		r.Source = textin.Location{File: "tate.jsonl.gz", Line: 1, Record: 1}
		return r
	}
	cases := []struct {
		name   string
		edit   func(r *Record)
		lim    textin.Limits
		field  string
		reason string
	}{
		{name: "good"},
		{name: "no url", edit: func(r *Record) { r.Clear(FieldURL) }},
		{name: "empty url", edit: func(r *Record) { r.Set(FieldURL, "") }},
		{name: "HTTPS upper case", edit: func(r *Record) { r.Set(FieldURL, "HTTPS://example.org") }},
		{name: "missing request ID", edit: func(r *Record) { r.Clear(FieldRequestID) },
			field: "request_id", reason: "missing request ID"},
		{name: "empty request ID", edit: func(r *Record) { r.Set(FieldRequestID, "") },
			field: "request_id", reason: "missing request ID"},
		{name: "long request ID", edit: func(r *Record) { r.Set(FieldRequestID, strings.Repeat("x", 256)) },
			field: "request_id", reason: "request ID is 256 octets, limit 255"},
		{name: "NUL in who", edit: func(r *Record) { r.Set(FieldWho, "Robert\x00Blake") },
			field: "who", reason: "NUL byte at octet 7"},
		{name: "NUL in request ID", edit: func(r *Record) { r.Set(FieldRequestID, "\x00") },
			field: "request_id", reason: "NUL byte at octet 1"},
		{name: "invalid UTF-8 in what", edit: func(r *Record) { r.Set(FieldWhat, "Blank \xe2\x80") },
			field: "what", reason: "invalid UTF-8 at octet 7"},
		{name: "latin-1 in when", edit: func(r *Record) { r.Set(FieldWhen, "1852\x961911") },
			field: "when", reason: "invalid UTF-8 at octet 5"},
		{name: "invalid UTF-8 in commitment", edit: func(r *Record) { r.Set(FieldCommitment, "\xff") },
			field: "commitment", reason: "invalid UTF-8 at octet 1"},
		{name: "ftp", edit: func(r *Record) { r.Set(FieldURL, "ftp://example.org/x") },
			field: "url", reason: `target URL scheme "ftp" is not allowed (want http or https)`},
		{name: "ftp allowed", edit: func(r *Record) { r.Set(FieldURL, "ftp://example.org/x") },
			lim: textin.Limits{Schemes: []string{"ftp"}}},
		{name: "javascript", edit: func(r *Record) { r.Set(FieldURL, "javascript:alert(1)") },
			field: "url", reason: `target URL scheme "javascript" is not allowed (want http or https)`},
		{name: "relative", edit: func(r *Record) { r.Set(FieldURL, "/art/a00001") },
			field: "url", reason: "target URL has no scheme (want http or https)"},
		{name: "no host", edit: func(r *Record) { r.Set(FieldURL, "http:///x") },
			field: "url", reason: "target URL has no host"},
		{name: "no slashes", edit: func(r *Record) { r.Set(FieldURL, "http:example.org") },
			field: "url", reason: "target URL has no host"},
		{name: "userinfo", edit: func(r *Record) { r.Set(FieldURL, "https://user:secret@example.org/x") },
			field: "url", reason: "target URL carries userinfo (user:password@) before its host: a target is public, so it is refused and never stored; give the URL without it"},
		{name: "user only", edit: func(r *Record) { r.Set(FieldURL, "http://scanner@example.org") },
			field: "url", reason: "target URL carries userinfo (user:password@) before its host: a target is public, so it is refused and never stored; give the URL without it"},
		{name: "@ in the path", edit: func(r *Record) { r.Set(FieldURL, "https://example.org/people/@kunze?x=a@b#c@d") }},
		{name: "space", edit: func(r *Record) { r.Set(FieldURL, "http://e.org/a b") },
			field: "url", reason: "target URL has a space or control character at octet 15"},
		{name: "newline", edit: func(r *Record) { r.Set(FieldURL, "http://e.org/\r\nSet-Cookie: x") },
			field: "url", reason: "target URL has a space or control character at octet 14"},
		{name: "url 2048", edit: func(r *Record) { r.Set(FieldURL, "https://e.org/"+strings.Repeat("a", 2048-14)) }},
		{name: "url 2049", edit: func(r *Record) { r.Set(FieldURL, "https://e.org/"+strings.Repeat("a", 2049-14)) },
			field: "url", reason: "target URL is 2049 octets, limit 2048"},
		{name: "url limit 100", edit: func(r *Record) { r.Set(FieldURL, "https://e.org/"+strings.Repeat("a", 100)) },
			lim: textin.Limits{MaxURL: 100}, field: "url", reason: "target URL is 114 octets, limit 100"},
		{name: "what 64 KiB", edit: func(r *Record) { r.Set(FieldWhat, strings.Repeat("é", 32<<10)) }},
		{name: "what 64 KiB + 1", edit: func(r *Record) { r.Set(FieldWhat, strings.Repeat("a", 64<<10+1)) },
			field: "what", reason: "value is 65537 octets, limit 65536"},
		{name: "commitment limit", edit: func(r *Record) { r.Set(FieldWho, "1234"); r.Set(FieldCommitment, "12345") },
			lim: textin.Limits{MaxERC: 4}, field: "commitment", reason: "value is 5 octets, limit 4"},
	}
	for _, c := range cases {
		r := base()
		if c.edit != nil {
			c.edit(&r)
		}
		lim := textin.DefaultLimits()
		if c.lim.MaxURL != 0 || c.lim.MaxERC != 0 || c.lim.Schemes != nil {
			lim = c.lim
		}
		err := Validate(&r, lim)
		if c.reason == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: accepted, want field %s: %s", c.name, c.field, c.reason)
			continue
		}
		if err.Field != c.field || err.Reason != c.reason || err.Loc != r.Source {
			t.Errorf("%s: got {%v %q %q}, want field %q reason %q", c.name, err.Loc, err.Field, err.Reason, c.field, c.reason)
		}
	}
}

func TestValidateErrorText(t *testing.T) {
	t.Parallel()
	var r Record
	r.Set(FieldRequestID, "A00001")
	r.Set(FieldWho, "a\x00b")
	r.Source = textin.Location{File: "tate.jsonl.gz", Line: 17, Record: 17}
	err := Validate(&r, textin.DefaultLimits())
	if got := err.Error(); got != "tate.jsonl.gz:17 (record 17): field who: NUL byte at octet 2" {
		t.Errorf("Error() = %q", got)
	}
}

func TestValidateRealManifestRows(t *testing.T) {
	t.Parallel()
	// A NUL byte and an invalid UTF-8 byte reject their row only:
	// the reader delivers them, Validate names the field.
	p := writeTemp(t, "m.csv", "request_id,url,who,what\n"+
		"r1,https://example.org/1,Ann,One\n"+
		"r2,https://example.org/2,B\x00b,Two\n"+
		"r3,https://example.org/3,Cat,Thr\xe9e\n"+
		"r4,https://example.org/4,Dan,Four\n")
	recs, bad := drainManifest(t, mustOpen(t, p, ""))
	if len(recs) != 4 || len(bad) != 0 {
		t.Fatalf("records %d, bad %v", len(recs), bad)
	}
	var good []string
	var rejected []string
	for i := range recs {
		if err := Validate(&recs[i], textin.DefaultLimits()); err != nil {
			rejected = append(rejected, err.Error())
		} else {
			good = append(good, recs[i].RequestID)
		}
	}
	want := []string{
		p + ":3 (record 2): field who: NUL byte at octet 2",
		p + ":4 (record 3): field what: invalid UTF-8 at octet 4",
	}
	if strings.Join(good, ",") != "r1,r4" || strings.Join(rejected, "\n") != strings.Join(want, "\n") {
		t.Errorf("good %v\nrejected %q", good, rejected)
	}
}
