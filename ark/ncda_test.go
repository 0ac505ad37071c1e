package ark

import (
	"errors"
	"testing"
)

// TestCheckCharVectors is the test-vector table of NCDA: the
// literal zone string (not normalized) → check character.
func TestCheckCharVectors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		zone string
		want byte
	}{
		{"13030/xf93gt2", 'q'},
		{"13030/f54x54g1", '1'},
		{"13030/tf5p30086", 'k'},
		{"77913/r7006", 't'},
		{"77913/r7xq9", 'k'},
		{"77913/r72t0", 'f'},
		{"77913/r74x54g1", 'd'},
		{"12345/x6np1wh8", 'k'},
		{"13030/c7x921j3", 'h'},
		{"13960/t5n960f7", 'n'},
		{"99166/w66d60p", '2'},
		{"bpt6k6535845", '4'}, // name-only zone
		{"13030/XF93GT2", 'c'},
		{"13030/xf93-gt2", '3'},
		{"ark:13030/xf93gt2", 'n'}, // wrong zone
		{"13030/xf93gt2/c3", '2'},  // wrong zone
		{"13030/%7D", 'k'},
		{"13030/%7d", '9'},
		{"13030/l1", 'x'},
		{"", '0'},
		{"13960/t0000001", '8'},
		{"13960/fk3ws8hp6", '7'},
	}
	for _, tt := range tests {
		if got := CheckChar(tt.zone); got != tt.want {
			t.Errorf("CheckChar(%q) = %q, want %q", tt.zone, got, tt.want)
		}
		if !VerifyZone(tt.zone + string(tt.want)) {
			t.Errorf("VerifyZone(%q) = false", tt.zone+string(tt.want))
		}
	}
	if VerifyZone("") {
		t.Errorf("VerifyZone(\"\") = true")
	}
}

// TestCheckCharLong: the sum is reduced as it goes, so a zone longer than the
// 64 KiB chunk gives the same answer as the plain formula.
func TestCheckCharLong(t *testing.T) {
	t.Parallel()
	b := make([]byte, 200_000)
	want := 0
	for i := range b {
		b[i] = Alphabet[(i*7+3)%29]
		want = (want + (i+1)*((i*7+3)%29)) % 29
	}
	if got := CheckChar(string(b)); got != Alphabet[want] {
		t.Errorf("CheckChar(200,000 octets) = %q, want %q", got, Alphabet[want])
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		zone Zone
		want bool
	}{
		{"ark:13030/xf93gt2q", ZoneNAANName, true},
		{"ark:/13030/xf93gt2q/c3.pdf?info", ZoneNAANName, true}, // qualifier not covered
		{"ark:13030/xf93-gt2q", ZoneNAANName, true},             // hyphens removed before the check
		{"ark:13030/xf93gt2x", ZoneNAANName, false},
		{"ark:13030/xf93gt2q", ZoneNameOnly, false},
		{"ark:13030/xf93gt2q", ZoneNone, true},
		{"ark:13030/anything", ZoneNone, true},
		{"ark:12148/bpt6k65358454", ZoneNameOnly, true},
		{"ark:12148/bpt6k65358454", ZoneNAANName, false},
		{"ark:13960/t00000018", ZoneNAANName, true},
		{"ark:13960/fk3ws8hp67", ZoneNAANName, true},
		{"ark:12345/x6np1wh8k", ZoneNAANName, true},
		// NCDA says 'c' for 13030/XF93GT2, but uppercase is outside the
		// alphabet: the character set check refuses it (NCDA).
		{"ark:13030/XF93GT2c", ZoneNAANName, false},
		{"ark:13030/x_1", ZoneNAANName, false},
		{"ark:13030/xf93gt2q", Zone("bogus"), false},
	}
	for _, tt := range tests {
		a, err := Parse(tt.in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.in, err)
		}
		if got := Verify(a, tt.zone); got != tt.want {
			t.Errorf("Verify(%q, %s) = %v, want %v", tt.in, tt.zone, got, tt.want)
		}
	}
	if CheckChar("13030/XF93GT2") != 'c' {
		t.Fatalf("vector for the uppercase case changed")
	}

	a, _ := Parse("ark:13030/xf93gt2x")
	err := VerifyDetail(a, ZoneNAANName)
	var ce *CheckError
	if !errors.As(err, &ce) || ce.Zone != "13030/xf93gt2x" || ce.Got != 'x' || ce.Want != 'q' || ce.Offset != -1 {
		t.Errorf("VerifyDetail mismatch = %+v", err)
	}
	a, _ = Parse("ark:13030/XF93GT2c")
	err = VerifyDetail(a, ZoneNAANName)
	if !errors.As(err, &ce) || ce.Offset != 6 || ce.Zone != "13030/XF93GT2c" {
		t.Errorf("VerifyDetail charset = %+v", err)
	}
	want := `check character does not verify in zone "13030/XF93GT2c": character 'X' at offset 6 is not betanumeric, so NCDA cannot verify it`
	if err.Error() != want {
		t.Errorf("text = %s\nwant   %s", err, want)
	}
	// A hand-built ARK with a bad NAAN is refused on the NAAN.
	err = VerifyDetail(ARK{NAAN: "13O30", Name: "x5"}, ZoneNAANName)
	if !errors.As(err, &ce) || ce.Offset != 2 {
		t.Errorf("VerifyDetail bad NAAN = %+v", err)
	}
	if Verify(ARK{NAAN: "13030"}, ZoneNAANName) {
		t.Errorf("empty base name verified")
	}
}

func TestCheckZone(t *testing.T) {
	t.Parallel()
	a, _ := Parse("ark:13030/xf93gt2q/c3")
	if z, ok := a.CheckZone(ZoneNAANName); !ok || z != "13030/xf93gt2q" {
		t.Errorf("naan_name zone = %q %v", z, ok)
	}
	if z, ok := a.CheckZone(ZoneNameOnly); !ok || z != "xf93gt2q" {
		t.Errorf("name_only zone = %q %v", z, ok)
	}
	if z, ok := a.CheckZone(ZoneNone); ok || z != "" {
		t.Errorf("none zone = %q %v", z, ok)
	}
}

func TestParseZone(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"naan_name", "name_only", "none"} {
		z, err := ParseZone(s)
		if err != nil || string(z) != s || !z.Valid() {
			t.Errorf("ParseZone(%q) = %q, %v", s, z, err)
		}
	}
	for _, s := range []string{"", "NAAN_NAME", "naan-name", "all"} {
		if z, err := ParseZone(s); err == nil {
			t.Errorf("ParseZone(%q) = %q, want error", s, z)
		}
	}
	if DefaultZone != ZoneNAANName {
		t.Errorf("DefaultZone = %q", DefaultZone)
	}
}
