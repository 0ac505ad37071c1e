package report

import (
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzCSVField: every field appendCSVField writes reads back unchanged with
// encoding/csv, and only NULL is written as nothing.
func FuzzCSVField(f *testing.F) {
	for _, s := range []string{"", "a", `\.`, " lead", "trail\t", "a,b", `q"q`, "l1\nl2", "cr\rx", "crlf\r\n", "é\u2028", "\xff"} {
		f.Add(s, false)
	}
	f.Add("", true)
	f.Fuzz(func(t *testing.T, s string, null bool) {
		line := appendCSVField(nil, s, null)
		if null && len(line) != 0 {
			t.Fatalf("NULL written as %q", line)
		}
		if !null && len(line) == 0 {
			t.Fatalf("%q written as nothing, indistinguishable from NULL", s)
		}
		line = append(append(line, ",x"...), '\n')
		rec, err := csv.NewReader(strings.NewReader(string(line))).Read()
		if err != nil {
			t.Fatalf("encoding/csv cannot read %q: %v", line, err)
		}
		want := s
		if null {
			want = ""
		}
		// encoding/csv turns \r\n inside a quoted field into \n.
		want = strings.ReplaceAll(want, "\r\n", "\n")
		if len(rec) != 2 || rec[0] != want || rec[1] != "x" {
			t.Fatalf("field %q written as %q read back as %q", s, line, rec)
		}
	})
}

// FuzzJSONString: AppendJSONString writes valid JSON that decodes to the
// input, with no raw control characters, U+2028 or U+2029.
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{"", "a", `"\`, "\x00\x01\x1f\x7f", "\n\r\t", "é\u2028\u2029", "<&>", "日本語"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return // Write refuses invalid UTF-8 before encoding
		}
		out := AppendJSONString(nil, s)
		var got string
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%q encoded as %q: %v", s, out, err)
		}
		if got != s {
			t.Fatalf("%q encoded as %q decodes to %q", s, out, got)
		}
		for _, r := range string(out) {
			if r < 0x20 || r == '\u2028' || r == '\u2029' {
				t.Fatalf("%q encoded as %q holds raw %U", s, out, r)
			}
		}
	})
}

// FuzzParseFormat: ParseFormat accepts exactly the three names (any case,
// surrounding space) and round-trips through String.
func FuzzParseFormat(f *testing.F) {
	for _, s := range []string{"parquet", "CSV", " jsonl ", "", "json", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseFormat(s)
		if err != nil {
			if got != 0 {
				t.Fatalf("ParseFormat(%q) = %v with error %v", s, got, err)
			}
			return
		}
		if !strings.EqualFold(strings.TrimSpace(s), got.String()) {
			t.Fatalf("ParseFormat(%q) = %v", s, got)
		}
		if again, err := ParseFormat(got.String()); err != nil || again != got {
			t.Fatalf("ParseFormat(%q) does not round-trip: %v, %v", got.String(), again, err)
		}
	})
}
