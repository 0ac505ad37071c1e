package ark

import (
	"errors"
	"strings"
	"testing"
)

// TestNormalizeTable is the normalization table of draft-kunze-ark §3.2, row by
// row, plus the parts each row splits into.
func TestNormalizeTable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want                               string
		shoulder, blade, qualifier, inflection string
	}{
		{"ark:/12345/x54xz321", "ark:12345/x54xz321", "x5", "4xz321", "", ""},
		{"ARK:/12345/x54xz321", "ark:12345/x54xz321", "x5", "4xz321", "", ""},
		{"https://n2t.net/ark:/12345/x54xz321", "ark:12345/x54xz321", "x5", "4xz321", "", ""},
		{"ark:12345/x5-4-xz-321", "ark:12345/x54xz321", "x5", "4xz321", "", ""},
		{"ark:123-45/x54xz321", "ark:12345/x54xz321", "x5", "4xz321", "", ""},
		{"ark:12345/x54xz321?info", "ark:12345/x54xz321", "x5", "4xz321", "", "?info"},
		{"ark:12345/x54/xz/321/", "ark:12345/x54/xz/321", "x5", "4", "/xz/321", ""},
		{"ark:12345//x54//xz", "ark:12345/x54/xz", "x5", "4", "/xz", ""},
		{"ark:12345/x54..pdf", "ark:12345/x54.pdf", "x5", "4", ".pdf", ""},
		{"ark:12345/x5%7dab", "ark:12345/x5%7Dab", "x5", "%7Dab", "", ""},
		{"ark:B1234/x5wf6789", "ark:b1234/x5wf6789", "x5", "wf6789", "", ""},
		{"ark:12345/X5WF6789", "ark:12345/X5WF6789", "", "X5WF6789", "", ""},
	}
	for _, tt := range tests {
		a, err := Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if got := a.String(); got != tt.want {
			t.Errorf("Parse(%q).String() = %q, want %q", tt.in, got, tt.want)
		}
		if a.Shoulder != tt.shoulder || a.Blade != tt.blade || a.Qualifier != tt.qualifier || a.Inflection != tt.inflection {
			t.Errorf("Parse(%q) parts = shoulder %q blade %q qualifier %q inflection %q; want %q %q %q %q",
				tt.in, a.Shoulder, a.Blade, a.Qualifier, a.Inflection, tt.shoulder, tt.blade, tt.qualifier, tt.inflection)
		}
		if a.Original != tt.in {
			t.Errorf("Parse(%q).Original = %q", tt.in, a.Original)
		}
		if got, err := Normalize(tt.in); err != nil || got != tt.want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	// Case is kept: X5WF6789 is not x5wf6789 (draft-kunze-ark §3.2: only the NAAN is lowercased;
	// names compare octet by octet).
	up, _ := Normalize("ark:12345/X5WF6789")
	low, _ := Normalize("ark:12345/x5wf6789")
	if up == low {
		t.Errorf("Normalize folded case: %q == %q", up, low)
	}
}

// TestRejectTable is the rejected rows of the draft-kunze-ark §3.2 table, with the
// reason each must give.
func TestRejectTable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in     string
		reason string // substring of SyntaxError.Reason
		offset int    // SyntaxError.Offset
	}{
		{"ark:12345/x54.v2/c3", "variant before component", -1},
		{"ark:12a45/x5", `NAAN character "a" (U+0061) at offset 6 is not betanumeric`, 6},
		{"ark:12345", "no Name", -1},
		{"ark:12345/", "no Name", -1},
		{"ark:12345/x5#frag", `character "#" (U+0023) at offset 12 must be %-encoded`, 12},
		{"ark:12345/x5 wf", `character " " (U+0020) at offset 12 must be %-encoded`, 12},
		{"ark:12345/x5é", `character "é" (U+00E9) at offset 12 must be %-encoded`, 12},
		{"ark:12345/x5%zz", `malformed %-escape "%zz" at offset 12`, 12},
		{"doi:10.1234/x5", `no "ark:" label`, -1},
	}
	for _, tt := range tests {
		a, err := Parse(tt.in)
		if err == nil {
			t.Errorf("Parse(%q) = %v, want error", tt.in, a)
			continue
		}
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q) error %T %v, want *SyntaxError", tt.in, err, err)
			continue
		}
		if !strings.Contains(se.Reason, tt.reason) || se.Offset != tt.offset || se.Input != tt.in {
			t.Errorf("Parse(%q) = %+v; want reason containing %q at offset %d", tt.in, se, tt.reason, tt.offset)
		}
		if _, err := Normalize(tt.in); err == nil {
			t.Errorf("Normalize(%q) accepted it", tt.in)
		}
	}
	_, err := Parse("doi:10.1234/x5")
	if !errors.Is(err, ErrNotARK) {
		t.Errorf("Parse(doi) error %v does not match ErrNotARK", err)
	}
	_, err = Parse("ark:12a45/x5")
	if errors.Is(err, ErrNotARK) {
		t.Errorf("Parse(ark:12a45/x5) error %v matches ErrNotARK; it has an ARK label", err)
	}
	want := `invalid ARK "ark:12345/x5#frag": character "#" (U+0023) at offset 12 must be %-encoded as %HH (draft-kunze-ark §2 character repertoire)`
	if _, err := Parse("ark:12345/x5#frag"); err == nil || err.Error() != want {
		t.Errorf("error text = %v, want %s", err, want)
	}
}

// TestParseMore covers the steps of draft-kunze-ark §3.2 beyond the table.
func TestParseMore(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want, inflection string }{
		{"ark:12345/x5?", "ark:12345/x5", "?"},
		{"ark:12345/x5??", "ark:12345/x5", "??"},
		{"ark:12345/x5?q=1&r=2", "ark:12345/x5", "?q=1&r=2"},
		{"https://n2t.net/ARK:/12345/x5", "ark:12345/x5", ""},
		{"http://example.org/a/b/ark:12345/x5/c", "ark:12345/x5/c", ""},
		{"Ark:12345/x5", "ark:12345/x5", ""},
		{"ark:099999/x5", "ark:099999/x5", ""},                 // a NAAN is a string
		{"ark:12345/./x5/.", "ark:12345/x5", ""},               // leading and trailing structural
		{"ark:12345/x5./c", "ark:12345/x5.c", ""},              // "./" → "."
		{"ark:12345/x5/.c", "ark:12345/x5/c", ""},              // "/." → "/"
		{"ark:12345/x5/-/c", "ark:12345/x5/c", ""},             // hyphens go before collapse (step 6, 7)
		{"ark:12345/x5%7d%2fQ", "ark:12345/x5%7D%2FQ", ""},     // only hex after % is uppercased
		{"ark:12345/a=~*+@_$Z", "ark:12345/a=~*+@_$Z", ""},     // repertoire
		{"ark:--12345/x5", "ark:12345/x5", ""},                 // hyphens in NAAN
		{"ark:12345/x5.pdf.gz", "ark:12345/x5.pdf.gz", ""},     // variants only
		{"ark:12345/x5/c1/c2.v1", "ark:12345/x5/c1/c2.v1", ""}, // component before variant
	}
	for _, tt := range tests {
		a, err := Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if a.String() != tt.want || a.Inflection != tt.inflection {
			t.Errorf("Parse(%q) = %q + %q, want %q + %q", tt.in, a.String(), a.Inflection, tt.want, tt.inflection)
		}
	}
	rejects := []struct{ in, reason string }{
		{"", `no "ark:" label`},
		{"12345/x5", `no "ark:" label`},
		{"xark:12345/x5", `no "ark:" label`},
		{"ark:", "no NAAN"},
		{"ark:/12345", "no Name"},
		{"ark://12345/x5", "no NAAN"},
		{"ark:12345/./", "no Name"},
		{"ark:---/x5", "NAAN is empty"},
		{"ark:12l45/x5", `NAAN character "l"`},
		{"ark:12L45/x5", `NAAN character "L"`},
		{"ark:12345/x5%", "malformed %-escape"},
		{"ark:12345/x5%7", "malformed %-escape"},
		{"ark:12345/x5%-7d", "malformed %-escape"}, // step 5 comes before step 6
		{"ark:12345/x5,y", `character ","`},
		{"ark:12345/x5:y", `character ":"`},
		{"ark:12345/x5\"y", `character "\""`},
		{"ark:12345/x5\x00", `character "\x00"`},
		{"ark:12345/x5\xff", "byte 0xFF"},
		{"ark:12345/x5.v1/c", "variant before component"},
		{"ark:12345/x5..v1//c", "variant before component"},
		{"ark:12345/x5\u2010y", "hyphen-like U+2010"},
		{"ark:123\u201545/x5", "hyphen-like U+2015"},
	}
	for _, tt := range rejects {
		_, err := Parse(tt.in)
		var se *SyntaxError
		if !errors.As(err, &se) || !strings.Contains(se.Reason, tt.reason) {
			t.Errorf("Parse(%q) error = %v, want *SyntaxError with %q", tt.in, err, tt.reason)
		}
	}
}

// TestImportHyphenLikes: U+2010–U+2015 are removed on import, rejected
// otherwise (draft-kunze-ark §3.2); U+2016 is not a hyphen-like.
func TestImportHyphenLikes(t *testing.T) {
	t.Parallel()
	for r := '\u2010'; r <= '\u2015'; r++ {
		in := "ark:123" + string(r) + "45/x5" + string(r) + "4xz" + string(r) + "321"
		if _, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) accepted a hyphen-like on mint input", in)
		}
		a, err := ParseWith(in, Options{Import: true})
		if err != nil || a.String() != "ark:12345/x54xz321" {
			t.Errorf("ParseWith(%q, Import) = %q, %v; want ark:12345/x54xz321", in, a.String(), err)
		}
	}
	if _, err := ParseWith("ark:12345/x5\u2016", Options{Import: true}); err == nil {
		t.Errorf("U+2016 accepted as a hyphen-like")
	}
	// A truncated hyphen-like sequence is an ordinary bad character.
	if _, err := ParseWith("ark:12345/x5\xe2\x80", Options{Import: true}); err == nil {
		t.Errorf("truncated UTF-8 accepted")
	}
}

// TestLimits: NAAN 16, assigned name 255, in normalized form, errors naming
// the limit.
func TestLimits(t *testing.T) {
	t.Parallel()
	naan16 := "1234567890bcdfgh"
	if a, err := Parse("ark:" + naan16 + "/x5"); err != nil || a.NAAN != naan16 {
		t.Errorf("16-octet NAAN: %v, %v", a, err)
	}
	_, err := Parse("ark:" + naan16 + "j/x5")
	var le *LimitError
	if !errors.As(err, &le) || *le != (LimitError{What: LimitNAAN, Octets: 17, Max: 16}) {
		t.Errorf("17-octet NAAN: %v", err)
	}
	if err.Error() != "NAAN is 17 octets; the limit is 16 (draft-kunze-ark §2.3)" {
		t.Errorf("NAAN limit text: %v", err)
	}
	// Hyphens do not count: the limit is on the normalized form.
	if _, err := Parse("ark:" + strings.Repeat("-", 40) + naan16 + "/x5"); err != nil {
		t.Errorf("hyphenated 16-octet NAAN: %v", err)
	}

	name255 := "x5" + strings.Repeat("b", 253)
	a, err := Parse("ark:" + naan16 + "/" + name255)
	if err != nil || len(a.Name) != 255 || len(a.Key()) != MaxKey {
		t.Fatalf("255-octet name: %d %v", len(a.Name), err)
	}
	_, err = Parse("ark:12345/x5" + strings.Repeat("b", 298))
	if !errors.As(err, &le) || *le != (LimitError{What: LimitName, Octets: 300, Max: 255}) {
		t.Errorf("300-octet name: %v", err)
	}
	if err.Error() != "assigned name is 300 octets; the limit is 255 (draft-kunze-ark §3.1)" {
		t.Errorf("name limit text: %v", err)
	}
	if _, err := Parse("ark:12345/" + strings.Repeat("b-", 255)); err != nil {
		t.Errorf("510 octets with hyphens, 255 normalized: %v", err)
	}
	if a, err := Parse("ark:12345/" + strings.Repeat("b/", 128)); err != nil || len(a.Name) != 255 {
		t.Errorf("256 octets with a trailing slash, 255 normalized: %d, %v", len(a.Name), err)
	}
	k := &LimitError{What: LimitKey, Octets: 280, Max: MaxKey}
	if k.Error() != "ledger key is 280 octets; the limit is 272 (NAAN, \"/\" and assigned name; draft-kunze-ark §2.3, §3.1)" {
		t.Errorf("key limit text: %v", k)
	}
}

func TestARKForms(t *testing.T) {
	t.Parallel()
	a, err := Parse("https://n2t.net/ark:/13030/xf93gt2q/c3.pdf?info")
	if err != nil {
		t.Fatal(err)
	}
	if a.NAAN != "13030" || a.Name != "xf93gt2q/c3.pdf" || a.Shoulder != "xf9" || a.Blade != "3gt2q" ||
		a.Qualifier != "/c3.pdf" || a.Inflection != "?info" || a.BaseName() != "xf93gt2q" {
		t.Errorf("parts: %+v", a)
	}
	if a.String() != "ark:13030/xf93gt2q/c3.pdf" || a.Key() != "13030/xf93gt2q/c3.pdf" {
		t.Errorf("forms: %q %q", a.String(), a.Key())
	}
	noShoulder, _ := Parse("ark:12148/bpt6k6535845")
	if noShoulder.Shoulder != "bpt6" || noShoulder.Blade != "k6535845" {
		t.Errorf("bpt6: %+v", noShoulder)
	}
	for _, tt := range []struct{ name, want string }{
		{"x9abc", "x9"}, {"bc7x", "bc7"}, {"fk4", "fk4"}, {"99x", ""}, {"x", ""}, {"xyz", ""},
		{"lb1", ""}, {"X9", ""}, {"", ""}, {"b0", "b0"},
	} {
		if got := PrimordinalShoulder(tt.name); got != tt.want {
			t.Errorf("PrimordinalShoulder(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestOriginalDiffers(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want bool
	}{
		{"ark:12345/x54", false},
		{"ARK:/12345/x54", false},
		{"https://n2t.net/ark:/12345/x54?info", false},
		{"ark:12345/x5-4", true},
		{"ark:B1234/x54", true},
		{"ark:12345/x54/", true},
		{"ark:12345/x5%7d", true},
	} {
		a, err := Parse(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.OriginalDiffers(); got != tt.want {
			t.Errorf("OriginalDiffers(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestParseKey(t *testing.T) {
	t.Parallel()
	a, err := ParseKey("13030/xf93gt2q/c3")
	if err != nil || a.Key() != "13030/xf93gt2q/c3" || a.Original != "13030/xf93gt2q/c3" {
		t.Errorf("ParseKey: %+v %v", a, err)
	}
	for _, k := range []string{"13030/xf93-gt2q", "B1234/x5", "13030//x5", "ark:13030/x5", "13030/x5?info"} {
		if _, err := ParseKey(k); err == nil {
			t.Errorf("ParseKey(%q) accepted a key that is not normalized", k)
		}
	}
	_, err = ParseKey("12a45/x5")
	var se *SyntaxError
	if !errors.As(err, &se) || se.Input != "12a45/x5" || se.Offset != 2 {
		t.Errorf("ParseKey(12a45/x5) = %+v", err)
	}
}
