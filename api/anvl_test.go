package api

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestANVLParse: the reading rules of EZID's API documentation and its server, each case with
// the elements it gives or the line and rule it is refused with.
func TestANVLParse(t *testing.T) {
	cases := []struct {
		in   string
		want []anvlElem // nil with err set: refused
		err  string
	}{
		{"", nil, ""},
		{"_target: https://example.org/a\nerc.who: Austen, Jane\n", []anvlElem{{"_target", "https://example.org/a", 1}, {"erc.who", "Austen, Jane", 2}}, ""},
		// CR LF and CR end lines too; values and names are trimmed
		{"a:  x \r\nb:y\rc :z", []anvlElem{{"a", "x", 1}, {"b", "y", 2}, {"c", "z", 3}}, ""},
		// the first colon splits; later ones are the value's
		{"_target: http://e.org:8080/x", []anvlElem{{"_target", "http://e.org:8080/x", 1}}, ""},
		// EZID's escaping: %25 %3A %0D %0A (either case of hex), decoded once
		{"erc.what: 100%25 a%0Ab%0d%0ac\nna%3Ame: v%253A", []anvlElem{{"erc.what", "100% a\nb\r\nc", 1}, {"na:me", "v%3A", 2}}, ""},
		// continuation lines join with one space; comments are skipped
		{"# comment\nerc.what: A\n  long\n\ttitle\n", []anvlElem{{"erc.what", "A long title", 2}}, ""},
		{"a:\n  b", []anvlElem{{"a", "b", 1}}, ""},
		{"a: b\n\n c", nil, "line 3: no previous label for continuation line"},
		{" a: b", nil, "line 1: no previous label for continuation line"},
		{"a: b\nno colon here", nil, "line 2: no colon in line"},
		{": b", nil, "line 1: empty label"},
		{"a: 1\nb: 2\na: 3", nil, `line 3: repeated label "a"`},
		{"a: 100%", nil, "line 1: percent-decode error: a % not followed by two hex digits"},
		{"a: %4", nil, "line 1: percent-decode error"},
		{"a: %zz", nil, "line 1: percent-decode error"},
		// %hh is the character U+00hh, as EZID reads it: not an octet of UTF-8
		{"a: %E9t%c3%A9", []anvlElem{{"a", "étÃ©", 1}}, ""},
		{"a: é%00", []anvlElem{{"a", "é\x00", 1}}, ""},
		{"a: \xff", nil, "line 1: character decoding error"},
	}
	for _, c := range cases {
		got, err := parseANVL([]byte(c.in))
		if c.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), c.err) {
				t.Errorf("parse %q: %v, %v; want the error %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("parse %q: %v", c.in, err)
			continue
		}
		if len(got) != len(c.want) {
			t.Errorf("parse %q: %+v, want %+v", c.in, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("parse %q: element %d is %+v, want %+v", c.in, i, got[i], c.want[i])
			}
		}
	}
}

// TestANVLFormat: writing escapes "%", ":", CR and LF in a name, "%", CR and LF in a value
// (upper-case hex), a leading "#" of a name, and nothing else.
func TestANVLFormat(t *testing.T) {
	cases := []struct{ name, value, want string }{
		{"_target", "http://e.org:80/a?b=c#d", "_target: http://e.org:80/a?b=c#d\n"},
		{"erc.what", "100% a\nb\r\nc", "erc.what: 100%25 a%0Ab%0D%0Ac\n"},
		{"na:me%", "v: w", "na%3Ame%25: v: w\n"},
		{"#x", "#y", "%23x: #y\n"},
		{"a#", "é", "a#: é\n"},
		{"success", "ark:/12345/t2x", "success: ark:/12345/t2x\n"},
	}
	for _, c := range cases {
		if got := string(appendANVL(nil, c.name, c.value)); got != c.want {
			t.Errorf("format %q %q: %q, want %q", c.name, c.value, got, c.want)
		}
	}
}

// FuzzANVL: the parser never panics; what it accepts is UTF-8 with names that are not empty,
// not repeated and trimmed; and writing what it read and reading that again gives the same
// elements (names, values, order).
func FuzzANVL(f *testing.F) {
	for _, s := range []string{"", "a: b\n", "_target: https://e.org/a\nerc.what: x%0Ay\n  more\n# c\n\nb:c", "a%3Ab: %25%0D\r\n",
		": x", "a: %zz", " x", "%23a: b", "a: %C3%A9\rb: \t", "a:\n\n\n b"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		elems, err := parseANVL(in)
		if err != nil {
			if _, ok := err.(*anvlError); !ok {
				t.Fatalf("parse %q: error %T %v, want an *anvlError", in, err, err)
			}
			return
		}
		seen := map[string]bool{}
		var out []byte
		for _, e := range elems {
			if e.name == "" || seen[e.name] || strings.TrimSpace(e.name) != e.name || strings.TrimSpace(e.value) != e.value {
				t.Fatalf("parse %q: element %+v (names seen %v)", in, e, seen)
			}
			if !utf8.ValidString(e.name) || !utf8.ValidString(e.value) {
				t.Fatalf("parse %q: element %+v is not UTF-8", in, e)
			}
			seen[e.name] = true
			out = appendANVL(out, e.name, e.value)
		}
		again, err := parseANVL(out)
		if err != nil {
			t.Fatalf("parse %q gave %+v; its ANVL %q does not parse: %v", in, elems, out, err)
		}
		if len(again) != len(elems) {
			t.Fatalf("parse %q gave %+v; its ANVL %q gives %+v", in, elems, out, again)
		}
		for i := range again {
			if again[i].name != elems[i].name || again[i].value != elems[i].value {
				t.Fatalf("parse %q gave %+v; its ANVL %q gives %+v", in, elems, out, again)
			}
		}
	})
}
