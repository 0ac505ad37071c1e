package ark

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestRandomBladesDistribution: every one of the 29 characters appears, no
// other does, and none is far from its expected share.
func TestRandomBladesDistribution(t *testing.T) {
	t.Parallel()
	const n = 29 * 2000
	b := make([]byte, n)
	if err := NewRandomBlades().Blade(b); err != nil {
		t.Fatal(err)
	}
	var counts [256]int
	for _, c := range b {
		counts[c]++
	}
	for c := 0; c < 256; c++ {
		in := strings.IndexByte(Alphabet, byte(c)) >= 0
		switch {
		case !in && counts[c] != 0:
			t.Errorf("character %q drawn %d times; it is not betanumeric", byte(c), counts[c])
		case in && (counts[c] < 1700 || counts[c] > 2300): // expected 2000, σ ≈ 44
			t.Errorf("character %q drawn %d times of %d; expected about 2000", byte(c), counts[c], n)
		}
	}
}

// TestRejectionSampling feeds known octets: those below 232 map to
// Alphabet[v%29], those from 232 up are skipped.
func TestRejectionSampling(t *testing.T) {
	t.Parallel()
	src := make([]byte, drawBufSize)
	want := make([]byte, 0, 256)
	for i := range src {
		v := byte(i)
		src[i] = v
		if i < 256 && v < 232 {
			want = append(want, Alphabet[v%29])
		}
	}
	rb := newRandomBladesFrom(bytes.NewReader(src))
	got := make([]byte, 232)
	if err := rb.Blade(got); err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("first 232 characters = %q, want %q", got, want)
	}
	// The next draw starts after the 24 rejected octets 232..255: octet 256
	// is 0 again.
	one := make([]byte, 1)
	if err := rb.Blade(one); err != nil || one[0] != '0' {
		t.Errorf("draw after rejects = %q, %v; want '0'", one, err)
	}
	// A reader that runs dry is an error, wrapped.
	short := newRandomBladesFrom(bytes.NewReader([]byte{1, 2, 3}))
	if err := short.Blade(make([]byte, 8)); err == nil || !strings.Contains(err.Error(), "reading random octets") {
		t.Errorf("short reader: %v", err)
	}
}

func TestMinterLengthAndVerify(t *testing.T) {
	t.Parallel()
	for _, length := range []int{1, 4, DefaultBladeLength, 12, 17} {
		m, err := NewMinter("99999", "/fk4", length, NewRandomBlades())
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for i := 0; i < 200; i++ {
			name, err := m.Next()
			if err != nil {
				t.Fatal(err)
			}
			if len(name) != len("fk4")+length+1 || !strings.HasPrefix(name, "fk4") {
				t.Fatalf("length %d: name %q", length, name)
			}
			a, err := Parse("ark:99999/" + name)
			if err != nil {
				t.Fatalf("minted %q does not parse: %v", name, err)
			}
			if a.Shoulder != "fk4" || a.Qualifier != "" || !Verify(a, ZoneNAANName) {
				t.Fatalf("minted %+v does not verify", a)
			}
			if got := MintName("99999", "fk4", []byte(a.Blade[:length])); got != name {
				t.Fatalf("MintName = %q, Minter gave %q", got, name)
			}
			seen[name] = true
		}
		if length >= 4 && len(seen) < 195 {
			t.Errorf("length %d: only %d distinct names of 200", length, len(seen))
		}
		if m.ZoneLength() != len("99999/fk4")+length || m.BladeLength() != length || m.Shoulder() != "fk4" || m.NAAN() != "99999" {
			t.Errorf("minter accessors: %d %d %q %q", m.ZoneLength(), m.BladeLength(), m.Shoulder(), m.NAAN())
		}
	}
}

func TestMintNameVectors(t *testing.T) {
	t.Parallel()
	// Check characters from the NCDA vectors.
	for _, tt := range []struct{ naan, shoulder, blade, want string }{
		{"13030", "xf9", "3gt2", "xf93gt2q"},
		{"13030", "/xf9", "3gt2", "xf93gt2q"}, // stored form: slash stripped
		{"77913", "r7", "006", "r7006t"},
		{"13960", "t0", "000001", "t00000018"},
		{"13960", "fk3", "ws8hp6", "fk3ws8hp67"},
	} {
		if got := MintName(tt.naan, tt.shoulder, []byte(tt.blade)); got != tt.want {
			t.Errorf("MintName(%s, %s, %s) = %q, want %q", tt.naan, tt.shoulder, tt.blade, got, tt.want)
		}
		buf := make([]byte, 0, 32)
		if got := string(AppendName(append(buf, "ark:13030/"...), tt.naan, tt.shoulder, []byte(tt.blade))); got != "ark:13030/"+tt.want {
			t.Errorf("AppendName = %q", got)
		}
	}
}

// TestScriptedBladesCollision: a scripted source repeats a blade, so the
// minter gives the same name twice (the collision path).
func TestScriptedBladesCollision(t *testing.T) {
	t.Parallel()
	src := NewScriptedBlades("bbbbbbbb", "bbbbbbbb", "cccccccc")
	m, err := NewMinter("99999", "x9", 8, src)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := 0; i < 4; i++ {
		name, err := m.Next()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, name)
	}
	want := []string{
		MintName("99999", "x9", []byte("bbbbbbbb")),
		MintName("99999", "x9", []byte("bbbbbbbb")),
		MintName("99999", "x9", []byte("cccccccc")),
		MintName("99999", "x9", []byte("bbbbbbbb")), // cycles
	}
	if strings.Join(got, ",") != strings.Join(want, ",") || got[0] != got[1] || src.Draws() != 4 {
		t.Errorf("scripted names = %v (draws %d), want %v", got, src.Draws(), want)
	}
	if _, err := NewMinter("99999", "x9", 9, NewScriptedBlades("bbbbbbbb")); err != nil {
		t.Fatal(err)
	}
	m9, _ := NewMinter("99999", "x9", 9, NewScriptedBlades("bbbbbbbb"))
	if _, err := m9.Next(); err == nil || !strings.Contains(err.Error(), "9 wanted") {
		t.Errorf("wrong-length scripted blade: %v", err)
	}
	mL, _ := NewMinter("99999", "x9", 2, NewScriptedBlades("bl"))
	if _, err := mL.Next(); err == nil || !strings.Contains(err.Error(), "not betanumeric") {
		t.Errorf("non-betanumeric scripted blade: %v", err)
	}
	if err := NewScriptedBlades().Blade(make([]byte, 1)); err == nil {
		t.Errorf("empty script gave a blade")
	}
}

type badSource struct{}

func (badSource) Blade(dst []byte) error {
	for i := range dst {
		dst[i] = 'A'
	}
	return nil
}

func TestMinterRefuses(t *testing.T) {
	t.Parallel()
	bad := []struct {
		naan, shoulder string
		length         int
		src            BladeSource
	}{
		{"", "x9", 8, NewRandomBlades()},
		{"12a45", "x9", 8, NewRandomBlades()},
		{"1234567890bcdfghj", "x9", 8, NewRandomBlades()},
		{"99999", "x", 8, NewRandomBlades()},
		{"99999", "9", 8, NewRandomBlades()},
		{"99999", "/x9/", 8, NewRandomBlades()},
		{"99999", "xa9", 8, NewRandomBlades()},
		{"99999", "x99", 8, NewRandomBlades()},
		{"99999", "x9", 0, NewRandomBlades()},
		{"99999", "x9", 8, nil},
	}
	for _, tt := range bad {
		if m, err := NewMinter(tt.naan, tt.shoulder, tt.length, tt.src); err == nil {
			t.Errorf("NewMinter(%q, %q, %d) = %v, want error", tt.naan, tt.shoulder, tt.length, m)
		}
	}
	_, err := NewMinter("99999", "x9", 253, NewRandomBlades())
	var le *LimitError
	if !errors.As(err, &le) || le.Octets != 256 || le.What != LimitName {
		t.Errorf("over-long blade: %v", err)
	}
	if _, err := NewMinter("99999", "x9", 252, NewRandomBlades()); err != nil {
		t.Errorf("255-octet names refused: %v", err)
	}
	m, _ := NewMinter("99999", "x9", 4, badSource{})
	if _, err := m.Next(); err == nil || !strings.Contains(err.Error(), "not betanumeric") {
		t.Errorf("bad source accepted: %v", err)
	}
}

func TestSeededBlades(t *testing.T) {
	t.Parallel()
	seed := [32]byte{1, 2, 3}
	a, b := NewSeededBlades(seed), NewSeededBlades(seed)
	x, y := make([]byte, 1000), make([]byte, 1000)
	_ = a.Blade(x)
	_ = b.Blade(y)
	if !bytes.Equal(x, y) {
		t.Errorf("same seed, different blades")
	}
	c := NewSeededBlades([32]byte{4})
	z := make([]byte, 1000)
	_ = c.Blade(z)
	if bytes.Equal(x, z) {
		t.Errorf("different seeds, same blades")
	}
	for _, ch := range x {
		if !IsBetanumeric(ch) {
			t.Fatalf("seeded blade holds %q", ch)
		}
	}
}

func TestShoulderHelpers(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		s    string
		want bool
	}{
		{"/x9", true}, {"/fk4", true}, {"/bc7", true}, {"/zzzz0", true},
		{"x9", false}, {"/", false}, {"/x", false}, {"/9", false}, {"/t", false}, {"/bn", false},
		{"/dsp01", false}, {"/s6.caida", false}, {"/l9", false}, {"/X9", false}, {"/x9a", false},
		{"//x9", false}, {"/x99", false}, {"", false},
	} {
		if got := IsMintableShoulder(tt.s); got != tt.want {
			t.Errorf("IsMintableShoulder(%q) = %v, want %v", tt.s, got, tt.want)
		}
	}
	if StoredShoulder("x9") != "/x9" || StoredShoulder("/x9") != "/x9" || BareShoulder("/x9") != "x9" ||
		BareShoulder("x9") != "x9" || BareShoulder("/") != "" {
		t.Errorf("shoulder forms")
	}
	for _, tt := range []struct {
		length int
		want   float64
	}{{0, 0}, {1, 0}, {2, 190}, {3, 3610}, {4, 68590}, {5, 1303210}} {
		if got := ShoulderSpace(tt.length); got != tt.want {
			t.Errorf("ShoulderSpace(%d) = %v, want %v", tt.length, got, tt.want)
		}
	}
	if BladeSpace(8) != 500246412961 || BladeSpace(0) != 1 || BladeSpace(-1) != 0 || BladeSpace(1) != 29 {
		t.Errorf("BladeSpace(8) = %v", BladeSpace(8))
	}
}

func TestRandomShoulder(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for i := 0; i < 300; i++ {
		s, err := RandomShoulder(2)
		if err != nil {
			t.Fatal(err)
		}
		if !IsMintableShoulder(s) || len(s) != 3 {
			t.Fatalf("RandomShoulder(2) = %q", s)
		}
		seen[s] = true
	}
	if len(seen) < 100 { // 190 possible; 300 draws cover ~150 on average
		t.Errorf("RandomShoulder(2) gave only %d distinct of 300", len(seen))
	}
	for _, n := range []int{3, 4, 10} {
		s, err := RandomShoulder(n)
		if err != nil || !IsMintableShoulder(s) || len(s) != n+1 {
			t.Errorf("RandomShoulder(%d) = %q, %v", n, s, err)
		}
	}
	for _, n := range []int{-1, 0, 1, 255} {
		if s, err := RandomShoulder(n); err == nil {
			t.Errorf("RandomShoulder(%d) = %q, want error", n, s)
		}
	}
	// Rejection sampling: 247..255 are skipped for letters, 250..255 for the digit.
	src := append([]byte{247, 250, 0, 18, 255, 250, 19}, make([]byte, 57)...)
	s, err := randomShoulderFrom(bytes.NewReader(src), 3)
	if err != nil || s != "/bz9" {
		t.Errorf("randomShoulderFrom = %q, %v; want /bz9", s, err)
	}
}
