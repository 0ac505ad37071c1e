package ark

import (
	"errors"
	"strings"
	"testing"
)

// FuzzNormalize: Parse never panics; it fails only with *SyntaxError or
// *LimitError; a normalized ARK re-parses to itself (idempotence) with the
// same parts; the invariants of ARK hold.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{
		"ark:/12345/x54xz321", "ARK:/12345/x54xz321", "https://n2t.net/ark:/12345/x54xz321",
		"ark:12345/x5-4-xz-321", "ark:123-45/x54xz321", "ark:12345/x54xz321?info",
		"ark:12345/x54/xz/321/", "ark:12345//x54//xz", "ark:12345/x54..pdf", "ark:12345/x5%7dab",
		"ark:B1234/x5wf6789", "ark:12345/X5WF6789", "ark:12345/x54.v2/c3", "ark:12a45/x5",
		"ark:12345", "ark:12345/", "ark:12345/x5#frag", "ark:12345/x5 wf", "ark:12345/x5é",
		"ark:12345/x5%zz", "doi:10.1234/x5", "ark:12345/x5\u2010y", "ark:12345/./x5/.",
		"ark:12345/x5./c", "ark:12345/x5/-/c", "ark:12345/x5%-7d", "ark:12345/x5/.-.c",
		"ark:12345/" + strings.Repeat("b/", 128),
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, imp bool) {
		a, err := ParseWith(s, Options{Import: imp})
		if err != nil {
			var se *SyntaxError
			var le *LimitError
			if !errors.As(err, &se) && !errors.As(err, &le) {
				t.Fatalf("ParseWith(%q): error %T %v", s, err, err)
			}
			return
		}
		if len(a.NAAN) < 1 || len(a.NAAN) > MaxNAAN || a.Name == "" || len(a.Name) > MaxName || len(a.Key()) > MaxKey {
			t.Fatalf("ParseWith(%q) = %+v breaks the limits", s, a)
		}
		if a.Name != a.Shoulder+a.Blade+a.Qualifier || a.BaseName() != a.Shoulder+a.Blade {
			t.Fatalf("ParseWith(%q) parts %+v", s, a)
		}
		if strings.ContainsAny(a.BaseName(), "/.") || (a.Qualifier != "" && !strings.ContainsAny(a.Qualifier[:1], "/.")) {
			t.Fatalf("ParseWith(%q) qualifier split %+v", s, a)
		}
		if a.Original != s || (a.Inflection != "" && a.Inflection[0] != '?') {
			t.Fatalf("ParseWith(%q) original/inflection %+v", s, a)
		}
		for i := 0; i < len(a.NAAN); i++ {
			if !IsBetanumeric(a.NAAN[i]) {
				t.Fatalf("ParseWith(%q) NAAN %q", s, a.NAAN)
			}
		}
		if strings.Contains(a.Name, "-") || strings.HasSuffix(a.Name, "/") || strings.HasSuffix(a.Name, ".") {
			t.Fatalf("ParseWith(%q) name %q not normalized", s, a.Name)
		}
		n := a.String()
		b, err := Parse(n)
		if err != nil {
			t.Fatalf("normalized %q (from %q) does not re-parse: %v", n, s, err)
		}
		b.Original = a.Original
		b.Inflection = a.Inflection
		if b != a {
			t.Fatalf("re-parse of %q = %+v, want %+v", n, b, a)
		}
		if m, err := Normalize(n); err != nil || m != n {
			t.Fatalf("Normalize(%q) = %q, %v; not idempotent", n, m, err)
		}
		if k, err := ParseKey(a.Key()); err != nil || k.Key() != a.Key() {
			t.Fatalf("ParseKey(%q) = %v, %v", a.Key(), k, err)
		}
		if c, err := Parse("https://n2t.net/" + n + a.Inflection); err != nil || c.String() != n || c.Inflection != a.Inflection {
			t.Fatalf("URL form of %q = %v, %v", n, c, err)
		}
	})
}

// FuzzCheckChar: for a minted ARK whose zone stays within the NCDA guarantee
// (at most 27 octets), Verify accepts it and detects every single-character
// substitution within the alphabet and every adjacent transposition of
// different characters in the shoulder and blade (NCDA).
func FuzzCheckChar(f *testing.F) {
	f.Add([]byte("13030"), []byte("xf9"), []byte("3gt2"))
	f.Add([]byte("77913"), []byte("r7"), []byte("0xq9bcdf"))
	f.Add([]byte("b"), []byte("bcd0"), []byte("zzzzzzzzzzzzzzzzzzzz"))
	f.Add([]byte{200, 17, 3}, []byte{1}, []byte{9, 250, 33, 0})
	f.Fuzz(func(t *testing.T, naanRaw, shoulderRaw, bladeRaw []byte) {
		naan := mapTo(naanRaw, Alphabet, 12)
		if naan == "" {
			naan = "99999"
		}
		shoulder := "x9"
		if len(shoulderRaw) >= 2 {
			letters := mapTo(shoulderRaw[:len(shoulderRaw)-1], betaLetters, 3)
			shoulder = letters + string(rune('0'+shoulderRaw[len(shoulderRaw)-1]%10))
		}
		budget := NCDAGuaranteeOctets - len(naan) - 1 - len(shoulder)
		blade := mapTo(bladeRaw, Alphabet, budget)
		if blade == "" {
			blade = "0"
		}
		name := MintName(naan, shoulder, []byte(blade))
		a, err := Parse("ark:" + naan + "/" + name)
		if err != nil {
			t.Fatalf("minted %s/%s: %v", naan, name, err)
		}
		if !Verify(a, ZoneNAANName) {
			t.Fatalf("minted %s does not verify", a)
		}
		body := len(name) - 1 // shoulder + blade, without the check character
		for p := 0; p < len(name); p++ {
			for i := 0; i < len(Alphabet); i++ {
				c := Alphabet[i]
				if c == name[p] {
					continue
				}
				mutated := name[:p] + string(c) + name[p+1:]
				b, err := Parse("ark:" + naan + "/" + mutated)
				if err != nil {
					t.Fatalf("substituted %s/%s: %v", naan, mutated, err)
				}
				if Verify(b, ZoneNAANName) {
					t.Fatalf("substitution %q→%q at %d of %s/%s not detected (%s/%s verifies)", name[p], c, p, naan, name, naan, mutated)
				}
			}
			if p+1 < body && name[p] != name[p+1] {
				swapped := name[:p] + string(name[p+1]) + string(name[p]) + name[p+2:]
				b, err := Parse("ark:" + naan + "/" + swapped)
				if err != nil {
					t.Fatalf("transposed %s/%s: %v", naan, swapped, err)
				}
				if Verify(b, ZoneNAANName) {
					t.Fatalf("transposition at %d of %s/%s not detected", p, naan, name)
				}
			}
		}
	})
}

// mapTo maps each octet of raw onto set (uniform enough for fuzzing) and
// keeps at most max characters.
func mapTo(raw []byte, set string, max int) string {
	if len(raw) > max {
		raw = raw[:max]
	}
	out := make([]byte, len(raw))
	for i, v := range raw {
		out[i] = set[int(v)%len(set)]
	}
	return string(out)
}
