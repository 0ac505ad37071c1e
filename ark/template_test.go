package ark_test

import (
	"strings"
	"testing"

	"github.com/arkhe-ledger/arkhe/ark"
)

func TestParseNOIDMask(t *testing.T) {
	for _, c := range []struct {
		mask  string
		tmpl  ark.Template
		check bool
	}{
		{"eedk", "eed", true},        // the N2T minter of 77913/r7
		{"reedeedk", "eedeed", true}, // a generator type first
		{"zeedeedk", "eedeed", true},
		{"dddd", "dddd", false},
		{"e", "e", false},
	} {
		got, check, err := ark.ParseNOIDMask(c.mask)
		if err != nil || got != c.tmpl || check != c.check {
			t.Errorf("ParseNOIDMask(%q) = %q, %t, %v; want %q, %t", c.mask, got, check, err, c.tmpl, c.check)
		}
	}
	for mask, want := range map[string]string{
		"":      "no blade position",
		"k":     "no blade position",
		"r":     "no blade position",
		"ekd":   `character 'k' at offset 1`,
		"reexk": `character 'x' at offset 3`,
		"EEDK":  `character 'E' at offset 0`,
	} {
		_, _, err := ark.ParseNOIDMask(mask)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseNOIDMask(%q): %v, want an error containing %q", mask, err, want)
		}
	}
}

func TestTemplateSpaceAndFits(t *testing.T) {
	eed := ark.Template("eed")
	if got := eed.Space(); got != 8410 {
		t.Errorf("Space(eed) = %v, want 8410 (29 × 29 × 10, the N2T minter's total)", got)
	}
	if got, want := ark.Betanumerics(8).Space(), ark.BladeSpace(8); got != want {
		t.Errorf("Space(8 × e) = %v, want %v", got, want)
	}
	for blade, want := range map[string]bool{"2t0": true, "z38": true, "xq9": true, "xqb": false, "2t": false, "2t00": false, "2T0": false, "2l0": false} {
		if got := eed.Fits(blade); got != want {
			t.Errorf("eed.Fits(%q) = %t, want %t", blade, got, want)
		}
	}
	if _, err := ark.ParseTemplate("eedk"); err == nil {
		t.Error("ParseTemplate(eedk): the check character is not part of a blade template")
	}
	if tm, err := ark.ParseTemplate("eed"); err != nil || tm != eed || !tm.Digits() || ark.Betanumerics(3).Digits() {
		t.Errorf("ParseTemplate(eed) = %q, %v", tm, err)
	}
}

// TestTemplateBlades: a scripted blade that fits is returned as is; a letter drawn for a digit
// position is replaced by the next digit the source yields; over many seeded draws every digit
// position holds a digit and the ten digits come about equally often (no bias toward the
// digits that happen to come first).
func TestTemplateBlades(t *testing.T) {
	eed := ark.Template("eed")
	src := ark.NewTemplateBlades(ark.NewScriptedBlades("2t0", "bcd", "fgh", "x5z"), eed)
	dst := make([]byte, 3)
	for _, want := range []string{"2t0", "bc5"} {
		if err := src.Blade(dst); err != nil || string(dst) != want {
			t.Fatalf("Blade = %q, %v; want %q", dst, err, want)
		}
	}
	if err := src.Blade(make([]byte, 4)); err == nil {
		t.Error("a blade longer than the template: no error")
	}
	noDigits := ark.NewTemplateBlades(ark.NewScriptedBlades("bcd"), eed)
	if err := noDigits.Blade(dst); err == nil || !strings.Contains(err.Error(), "no digit") {
		t.Errorf("a source without digits: %v", err)
	}

	seeded := ark.NewTemplateBlades(ark.NewSeededBlades([32]byte{7}), ark.Template("dedd"))
	const n = 100_000
	var digits [10]int
	b := make([]byte, 4)
	letters := 0
	for range n {
		if err := seeded.Blade(b); err != nil {
			t.Fatal(err)
		}
		for i, c := range b {
			if i == 1 {
				if !ark.IsBetanumeric(c) {
					t.Fatalf("position 1 %q is not betanumeric", c)
				}
				if c > '9' {
					letters++
				}
				continue
			}
			if c < '0' || c > '9' {
				t.Fatalf("blade %q: position %d is not a digit", b, i)
			}
			digits[c-'0']++
		}
	}
	// 300,000 digits: each about 30,000, standard deviation about 164
	for d, got := range digits {
		if got < 29_000 || got > 31_000 {
			t.Errorf("digit %d drawn %d times in %d digit positions, want about 30,000", d, got, 3*n)
		}
	}
	// the 'e' position keeps the source's characters: 19 of 29 are letters (about 65,500)
	if letters < 64_000 || letters > 67_000 {
		t.Errorf("position e held a letter %d times of %d, want about 65,500", letters, n)
	}
}
