package ark

import "testing"

// BenchmarkMintName: the check character and the name string for one blade.
func BenchmarkMintName(b *testing.B) {
	blade := []byte("3gt2q7bc")
	b.ReportAllocs()
	for b.Loop() {
		if MintName("13030", "xf9", blade) == "" {
			b.Fatal("empty")
		}
	}
}

// BenchmarkMinterNext: draw a random blade (crypto/rand) and build the name,
// the whole per-name cost of minting.
func BenchmarkMinterNext(b *testing.B) {
	m, err := NewMinter("99999", "fk4", DefaultBladeLength, NewRandomBlades())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Next(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMinterAppendNext: as BenchmarkMinterNext into a reused buffer.
func BenchmarkMinterAppendNext(b *testing.B) {
	m, err := NewMinter("99999", "fk4", DefaultBladeLength, NewRandomBlades())
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		if buf, err = m.AppendNext(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRandomBlades: one 8-character blade from crypto/rand.
func BenchmarkRandomBlades(b *testing.B) {
	rb := NewRandomBlades()
	dst := make([]byte, DefaultBladeLength)
	b.ReportAllocs()
	for b.Loop() {
		if err := rb.Blade(dst); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParse: already-normal, classic-label and URL-with-hyphens inputs.
func BenchmarkParse(b *testing.B) {
	for _, bc := range []struct{ name, in string }{
		{"modern", "ark:13030/xf93gt2q"},
		{"classic_qualifier", "ark:/13030/xf93gt2q/c3.pdf"},
		{"url_hyphens", "https://n2t.net/ark:/13030/xf93-gt2q?info"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(bc.in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkVerify: the naan_name check of one parsed ARK.
func BenchmarkVerify(b *testing.B) {
	a, err := Parse("ark:13030/xf93gt2q")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if !Verify(a, ZoneNAANName) {
			b.Fatal("does not verify")
		}
	}
}
