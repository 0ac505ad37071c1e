package pipeline

import (
	"errors"
	"reflect"
	"testing"
)

func TestParseMappingTate(t *testing.T) {
	t.Parallel()
	m, err := ParseMapping("request_id=acno,what=title,who=all_artists,when=dateText,url=url")
	if err != nil {
		t.Fatal(err)
	}
	want := map[Field]string{
		FieldRequestID: "acno", FieldURL: "url", FieldWho: "all_artists",
		FieldWhat: "title", FieldWhen: "dateText", FieldCommitment: "commitment",
	}
	for f, w := range want {
		if got := m.Source(f); got != w {
			t.Errorf("Source(%s) = %q, want %q", f, got, w)
		}
	}
	if m.Explicit(FieldCommitment) || !m.Explicit(FieldWho) {
		t.Errorf("Explicit: commitment %v who %v; want false true", m.Explicit(FieldCommitment), m.Explicit(FieldWho))
	}
	if got := m.String(); got != "request_id=acno,url=url,who=all_artists,what=title,when=dateText" {
		t.Errorf("String() = %q", got)
	}
}

func TestParseMappingForms(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want map[Field]string
	}{
		{"", map[Field]string{FieldRequestID: "request_id", FieldURL: "url"}},
		{"request_id=UUID, url = Digital Collections URL ,who=Contributor",
			map[Field]string{FieldRequestID: "UUID", FieldURL: "Digital Collections URL", FieldWho: "Contributor"}},
		{`who="Last, First",what="say ""hi"""`,
			map[Field]string{FieldWho: "Last, First", FieldWhat: `say "hi"`}},
		{"where=web_url,commitment=", map[Field]string{FieldURL: "web_url", FieldCommitment: ""}},
		{"who=creator[].full_name,when=contributors[0].date",
			map[Field]string{FieldWho: "creator[].full_name", FieldWhen: "contributors[0].date"}},
	}
	for _, c := range cases {
		m, err := ParseMapping(c.in)
		if err != nil {
			t.Errorf("ParseMapping(%q): %v", c.in, err)
			continue
		}
		for f, w := range c.want {
			if got := m.Source(f); got != w {
				t.Errorf("ParseMapping(%q).Source(%s) = %q, want %q", c.in, f, got, w)
			}
		}
		back, err := ParseMapping(m.String())
		if err != nil || back != m {
			t.Errorf("round trip of %q via %q: %+v, %v", c.in, m.String(), back, err)
		}
	}
}

func TestParseMappingErrors(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, item, reason string }{
		{"request_id", "request_id", "want FIELD=SOURCE"},
		{"who=a,,what=b", "", "empty item"},
		{"creator=x", "creator=x", `unknown field "creator" (want request_id, url, who, what, when or commitment)`},
		{"who=a,who=b", "who", "field given twice"},
		{"request_id=", "request_id=", "request_id cannot be unmapped"},
		{`who="abc`, `who="abc`, "unterminated quoted source"},
		{`who="a"b`, `who="a"b`, "text after quoted source"},
		{`who=a"b`, `who=a"b`, "a double quote is only allowed around the whole source"},
		{`who=""`, `who=""`, "empty quoted source; write FIELD= to unmap"},
		{"who=a,", "", "empty item"},
	}
	for _, c := range cases {
		_, err := ParseMapping(c.in)
		var me *MappingError
		if !errors.As(err, &me) {
			t.Errorf("ParseMapping(%q) err = %v, want *MappingError", c.in, err)
			continue
		}
		if me.Reason != c.reason || (c.item != "" && me.Item != c.item) {
			t.Errorf("ParseMapping(%q) = {Item %q Reason %q}, want {%q %q}", c.in, me.Item, me.Reason, c.item, c.reason)
		}
	}
}

func TestParseJSONPath(t *testing.T) {
	t.Parallel()
	got, err := parseJSONPath("contributors[0].name")
	want := []pathStep{{key: "contributors", index: -1, isKey: true}, {index: 0}, {key: "name", index: -1, isKey: true}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("contributors[0].name = %+v, %v", got, err)
	}
	got, err = parseJSONPath("a[][2]")
	want = []pathStep{{key: "a", index: -1, isKey: true}, {index: -1, all: true}, {index: 2}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("a[][2] = %+v, %v", got, err)
	}
	bad := map[string]string{
		"":         "empty JSON path",
		"a.":       "path ends with .",
		".a":       "empty key at byte 1",
		"a..b":     "empty key at byte 3",
		"a[":       "unclosed [ at byte 2",
		"a[x]":     `index "x" is not a non-negative integer`,
		"a[-1]":    `index "-1" is not a non-negative integer`,
		"a[0]b":    `unexpected "b" at byte 5`,
		"a]":       `unexpected "]" at byte 2`,
		"[0].a":    "empty key at byte 1",
		"a[0].[1]": "empty key at byte 6",
	}
	for in, reason := range bad {
		_, err := parseJSONPath(in)
		var me *MappingError
		if !errors.As(err, &me) || me.Reason != reason {
			t.Errorf("parseJSONPath(%q) = %v, want reason %q", in, err, reason)
		}
	}
}
