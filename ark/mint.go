package ark

import (
	"crypto/rand"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"strings"
)

// DefaultBladeLength is the number of random betanumerics arkhe draws per
// blade, before the check character: 29^8 ≈ 5.0 × 10^11 names per shoulder.
const DefaultBladeLength = 8

// betaLetters are the 19 betanumeric letters, the characters of a shoulder
// before its final digit (draft-kunze-ark §2).
const betaLetters = "bcdfghjkmnpqrstvwxz"

// BladeSource draws random blades. Implementations need not be safe for
// concurrent use; give each worker its own.
type BladeSource interface {
	// Blade fills all of dst with characters of Alphabet. It returns an
	// error when the source fails or cannot supply a blade of len(dst).
	Blade(dst []byte) error
}

// drawBufSize is how many random octets a drawer reads at a time, so that a
// blade costs no system call: one refill serves many blades.
const drawBufSize = 8 << 10

// drawer turns a stream of uniform random octets into uniform betanumerics by
// rejection sampling: an octet below 232 (= 8 × 29) maps to Alphabet[v % 29],
// any other is discarded, so there is no modulo bias.
type drawer struct {
	read func([]byte) error
	buf  []byte
	pos  int
}

func newDrawer(read func([]byte) error) drawer {
	return drawer{read: read, buf: make([]byte, drawBufSize), pos: drawBufSize}
}

func (d *drawer) draw(dst []byte) error {
	for i := 0; i < len(dst); {
		if d.pos >= len(d.buf) {
			if err := d.read(d.buf); err != nil {
				return fmt.Errorf("drawing blade: reading random octets: %w", err)
			}
			d.pos = 0
		}
		buf := d.buf[d.pos:]
		j := 0
		for j < len(buf) && i < len(dst) {
			v := buf[j]
			j++
			if v < 232 {
				dst[i] = Alphabet[v%29]
				i++
			}
		}
		d.pos += j
	}
	return nil
}

// RandomBlades is the BladeSource arkhe mints with: uniform betanumerics from
// crypto/rand, read in 8 KiB chunks and turned into characters by rejection
// sampling (octets ≥ 232 discarded; draft-kunze-ark §2). It is NOT safe for
// concurrent use: give each worker its own (NewRandomBlades is cheap).
type RandomBlades struct{ d drawer }

// NewRandomBlades returns a RandomBlades reading crypto/rand.
func NewRandomBlades() *RandomBlades {
	return newRandomBladesFrom(rand.Reader)
}

// newRandomBladesFrom reads r instead of crypto/rand (tests).
func newRandomBladesFrom(r io.Reader) *RandomBlades {
	return &RandomBlades{d: newDrawer(func(p []byte) error {
		_, err := io.ReadFull(r, p)
		return err
	})}
}

// Blade fills dst with uniform random betanumerics. The error wraps the
// random reader's error (crypto/rand does not fail on supported systems).
func (b *RandomBlades) Blade(dst []byte) error { return b.d.draw(dst) }

// SeededBlades is a deterministic BladeSource (ChaCha8 from math/rand/v2)
// for fixtures and benchmarks that must repeat: the same seed gives the same
// blades. It is not for minting real ARKs. It is NOT safe for concurrent use.
type SeededBlades struct{ d drawer }

// NewSeededBlades returns a SeededBlades drawing from ChaCha8 seeded by seed.
func NewSeededBlades(seed [32]byte) *SeededBlades {
	rng := mrand.NewChaCha8(seed)
	return &SeededBlades{d: newDrawer(func(p []byte) error {
		_, err := rng.Read(p)
		return err
	})}
}

// Blade fills dst with betanumerics from the seeded stream; it never fails.
func (b *SeededBlades) Blade(dst []byte) error { return b.d.draw(dst) }

// ScriptedBlades is a BladeSource that returns given blades in order and
// then starts over, so tests can force collisions (the same blade twice) and
// exercise the redraw path (draft-kunze-ark §2). It is NOT safe for concurrent
// use.
type ScriptedBlades struct {
	script []string
	draws  int
}

// NewScriptedBlades returns a ScriptedBlades cycling through blades.
func NewScriptedBlades(blades ...string) *ScriptedBlades {
	return &ScriptedBlades{script: blades}
}

// Blade copies the next scripted blade into dst. It returns an error when the
// script is empty, when the blade's length is not len(dst), or when it holds a
// character outside Alphabet.
func (s *ScriptedBlades) Blade(dst []byte) error {
	if len(s.script) == 0 {
		return fmt.Errorf("scripted blades: empty script")
	}
	b := s.script[s.draws%len(s.script)]
	s.draws++
	if len(b) != len(dst) {
		return fmt.Errorf("scripted blade %q is %d characters; %d wanted", b, len(b), len(dst))
	}
	for i := 0; i < len(b); i++ {
		if !betanumeric[b[i]] {
			return fmt.Errorf("scripted blade %q: character %q at offset %d is not betanumeric", b, b[i], i)
		}
	}
	copy(dst, b)
	return nil
}

// Draws returns how many blades s has handed out (including failed draws).
func (s *ScriptedBlades) Draws() int { return s.draws }

// MintName returns the assigned name shoulder + blade + check character, the
// check character computed by NCDA over "naan/" + shoulder + blade (zone
// naan_name; NCDA). shoulder is in bare form ("x9"); a stored form
// ("/x9") has its one leading slash stripped. MintName does not validate its
// inputs (NewMinter does); it allocates only the returned string.
func MintName(naan, shoulder string, blade []byte) string {
	shoulder = BareShoulder(shoulder)
	var sb strings.Builder
	sb.Grow(len(shoulder) + len(blade) + 1)
	sb.WriteString(shoulder)
	sb.Write(blade)
	sb.WriteByte(mintCheck(naan, shoulder, blade))
	return sb.String()
}

// AppendName appends the assigned name MintName(naan, shoulder, blade) to dst
// and returns the extended slice, without allocating when dst has room.
func AppendName(dst []byte, naan, shoulder string, blade []byte) []byte {
	shoulder = BareShoulder(shoulder)
	dst = append(dst, shoulder...)
	dst = append(dst, blade...)
	return append(dst, mintCheck(naan, shoulder, blade))
}

// mintCheck returns CheckChar(naan + "/" + shoulder + string(blade)) without
// building the zone.
func mintCheck(naan, shoulder string, blade []byte) byte {
	sum := ncdaSum(0, 0, naan)
	sum = ncdaSum(sum, len(naan)+1, shoulder)
	return Alphabet[ncdaSum(sum, len(naan)+1+len(shoulder), blade)]
}

// Minter draws assigned names for one NAAN and shoulder: shoulder + blade of
// a fixed length + check character over "NAAN/shoulder+blade" (zone
// naan_name; draft-kunze-ark §2; NCDA). It caches the NCDA sum of "NAAN/shoulder",
// so a name costs one blade draw and one allocation. It is NOT safe for
// concurrent use: one per worker.
type Minter struct {
	naan, shoulder string
	src            BladeSource
	blade          []byte
	sum            uint64 // NCDA sum of "NAAN/shoulder", mod 29
	pos            int    // len("NAAN/shoulder")
}

// NewMinter returns a Minter for naan (1–16 betanumerics) and shoulder (bare
// "x9" or stored "/x9"; it must be mintable, see IsMintableShoulder) drawing
// blades of bladeLength characters (DefaultBladeLength for arkhe's default)
// from src. It returns a *LimitError when shoulder + blade + check character
// would exceed MaxName octets, and an error for an invalid NAAN, shoulder,
// blade length or a nil src.
func NewMinter(naan, shoulder string, bladeLength int, src BladeSource) (*Minter, error) {
	if naan == "" || len(naan) > MaxNAAN {
		return nil, fmt.Errorf("minter: NAAN %q must be 1–%d betanumerics (draft-kunze-ark §2.3)", naan, MaxNAAN)
	}
	for i := 0; i < len(naan); i++ {
		if !betanumeric[naan[i]] {
			return nil, fmt.Errorf("minter: NAAN %q: character %q is not betanumeric (draft-kunze-ark §2.3)", naan, naan[i])
		}
	}
	bare := BareShoulder(shoulder)
	if !IsMintableShoulder(StoredShoulder(bare)) {
		return nil, fmt.Errorf("minter: shoulder %q does not match ^/[bcdfghjkmnpqrstvwxz]+[0-9]$", shoulder)
	}
	if bladeLength < 1 {
		return nil, fmt.Errorf("minter: blade length %d: must be at least 1", bladeLength)
	}
	if n := len(bare) + bladeLength + 1; n > MaxName {
		return nil, &LimitError{What: LimitName, Octets: n, Max: MaxName}
	}
	if src == nil {
		return nil, fmt.Errorf("minter: nil blade source")
	}
	m := &Minter{naan: naan, shoulder: bare, src: src, blade: make([]byte, bladeLength)}
	m.sum = ncdaSum(ncdaSum(0, 0, naan), len(naan)+1, bare)
	m.pos = len(naan) + 1 + len(bare)
	return m, nil
}

// NAAN returns the minter's NAAN.
func (m *Minter) NAAN() string { return m.naan }

// Shoulder returns the minter's shoulder in bare form ("x9").
func (m *Minter) Shoulder() string { return m.shoulder }

// BladeLength returns the number of random characters per blade, without
// the check character.
func (m *Minter) BladeLength() int { return len(m.blade) }

// ZoneLength returns the length in octets of the check zone of the names m
// mints, without the check character; at most NCDAGuaranteeOctets keeps the
// full NCDA guarantee.
func (m *Minter) ZoneLength() int { return m.pos + len(m.blade) }

// Next draws a blade and returns the assigned name (shoulder + blade + check
// character; no NAAN, no label). The error wraps the blade source's.
func (m *Minter) Next() (string, error) {
	c, err := m.draw()
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	sb.Grow(len(m.shoulder) + len(m.blade) + 1)
	sb.WriteString(m.shoulder)
	sb.Write(m.blade)
	sb.WriteByte(c)
	return sb.String(), nil
}

// AppendNext draws a blade and appends the assigned name to dst, without
// allocating when dst has room. The error wraps the blade source's.
func (m *Minter) AppendNext(dst []byte) ([]byte, error) {
	c, err := m.draw()
	if err != nil {
		return dst, err
	}
	dst = append(dst, m.shoulder...)
	dst = append(dst, m.blade...)
	return append(dst, c), nil
}

// draw fills m.blade and returns its check character.
func (m *Minter) draw() (byte, error) {
	if err := m.src.Blade(m.blade); err != nil {
		return 0, fmt.Errorf("minting under %s/%s: %w", m.naan, m.shoulder, err)
	}
	for i, c := range m.blade {
		if !betanumeric[c] {
			return 0, fmt.Errorf("minting under %s/%s: blade source gave %q at offset %d, not betanumeric", m.naan, m.shoulder, c, i)
		}
	}
	return Alphabet[ncdaSum(m.sum, m.pos, m.blade)], nil
}

// IsMintableShoulder reports whether s is a shoulder arkhe may create and
// mint under: the stored form with its slash, matching
// ^/[bcdfghjkmnpqrstvwxz]+[0-9]$ (e.g. "/x9", "/fk4").
// The bare form "x9" is not accepted; convert it with StoredShoulder.
func IsMintableShoulder(s string) bool {
	n := len(s)
	if n < 3 || s[0] != '/' || !isDigit(s[n-1]) {
		return false
	}
	for i := 1; i < n-1; i++ {
		if !isBetaLetter(s[i]) {
			return false
		}
	}
	return true
}

// StoredShoulder returns the stored form of a shoulder, with one leading
// slash: "x9" → "/x9"; a value that already starts with "/" is returned as is.
func StoredShoulder(s string) string {
	if strings.HasPrefix(s, "/") {
		return s
	}
	return "/" + s
}

// BareShoulder returns a shoulder as it appears inside a Name, without its
// one leading slash: "/x9" → "x9", "x9" → "x9", and the NAAN-wide legacy
// shoulder "/" → "".
func BareShoulder(s string) string { return strings.TrimPrefix(s, "/") }

// ShoulderSpace returns how many primordinal shoulders of length characters
// (bare form, letters plus the final digit) a NAAN has: 19^(length−1) × 10,
// e.g. 190 for 2, 3,610 for 3, 68,590 for 4 (draft-kunze-ark §2); 0 for length
// below 2. Exact while the result is below 2^53 (length up to 12).
func ShoulderSpace(length int) float64 {
	if length < 2 {
		return 0
	}
	s := 10.0
	for i := 1; i < length; i++ {
		s *= 19
	}
	return s
}

// BladeSpace returns how many blades of length random betanumerics exist,
// 29^length (the check character adds none); 5.0 × 10^11 for the default 8
// (draft-kunze-ark §2). 0 for a negative length.
func BladeSpace(length int) float64 {
	if length < 0 {
		return 0
	}
	s := 1.0
	for i := 0; i < length; i++ {
		s *= 29
	}
	return s
}

// RandomShoulder returns a uniformly drawn mintable shoulder of length
// characters (2 to MaxName−1) in stored form, e.g. "/q7" for length 2: the
// letters from the 19 betanumeric letters, the last character a digit, drawn
// from crypto/rand by rejection sampling. The caller
// must still check the ledger for an existing shoulder of that name.
func RandomShoulder(length int) (string, error) {
	return randomShoulderFrom(rand.Reader, length)
}

func randomShoulderFrom(r io.Reader, length int) (string, error) {
	if length < 2 || length > MaxName-1 {
		return "", fmt.Errorf("random shoulder: length %d outside 2..%d", length, MaxName-1)
	}
	out := make([]byte, 1, length+1)
	out[0] = '/'
	var buf [64]byte
	for len(out) < length+1 {
		if _, err := io.ReadFull(r, buf[:]); err != nil {
			return "", fmt.Errorf("random shoulder: reading random octets: %w", err)
		}
		for _, v := range buf {
			if len(out) < length { // letters: 247 = 13 × 19
				if v < 247 {
					out = append(out, betaLetters[v%19])
				}
			} else if len(out) == length { // final digit: 250 = 25 × 10
				if v < 250 {
					out = append(out, '0'+v%10)
				}
			} else {
				break
			}
		}
	}
	return string(out), nil
}
