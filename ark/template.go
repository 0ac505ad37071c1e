package ark

import (
	"fmt"
	"strings"
)

// Template is the form of the blades a shoulder mints, one class per position, without the
// check character: 'e' an extended digit (any of the 29 betanumerics of Alphabet) and 'd' a
// digit (0-9), as in a NOID minter's mask (NOID manual: "e", "d"; "k", the check character,
// is a property of the shoulder's check zone, not of the template). "eed" draws names such as
// "xq9"; "eeeeeeee" is arkhe's default 8-character blade.
type Template string

// MaxTemplate is the longest template, in positions: the longest blade a shoulder records
// (its blade_length, 1-64).
const MaxTemplate = 64

// Betanumerics returns the template of n positions of class 'e': a blade of n random
// betanumerics, what arkhe mints by default ("eeeeeeee" for 8).
func Betanumerics(n int) Template { return Template(strings.Repeat("e", max(n, 0))) }

// ParseTemplate returns s as a Template: 1 to MaxTemplate characters, each 'e' or 'd'.
func ParseTemplate(s string) (Template, error) {
	if s == "" || len(s) > MaxTemplate {
		return "", fmt.Errorf("blade template %q: want 1-%d characters, each e (betanumeric) or d (digit)", s, MaxTemplate)
	}
	for i := 0; i < len(s); i++ {
		if s[i] != 'e' && s[i] != 'd' {
			return "", fmt.Errorf("blade template %q: character %q at offset %d is neither e (betanumeric) nor d (digit)", s, s[i], i)
		}
	}
	return Template(s), nil
}

// ParseNOIDMask reads a NOID minter's mask (NOID manual): an optional generator type (r random,
// s sequential, z unlimited sequential), then the blade's classes 'e' and 'd', then an optional
// 'k' (a check character, computed by NCDA over "NAAN/shoulder" + blade). "eedk" gives the
// template "eed" and check true; "reedeedk" gives "eedeed" and true. Any other character, a
// 'k' before the end or a mask without a blade position is an error naming it.
func ParseNOIDMask(mask string) (t Template, check bool, err error) {
	body, prefix := mask, 0
	if body != "" && strings.IndexByte("rsz", body[0]) >= 0 {
		body, prefix = body[1:], 1
	}
	if strings.HasSuffix(body, "k") {
		body, check = body[:len(body)-1], true
	}
	if body == "" {
		return "", false, fmt.Errorf("NOID mask %q: no blade position (e or d)", mask)
	}
	for i := 0; i < len(body); i++ {
		if body[i] != 'e' && body[i] != 'd' {
			return "", false, fmt.Errorf("NOID mask %q: character %q at offset %d is not e (betanumeric) or d (digit); k (check character) may only end it", mask, body[i], prefix+i)
		}
	}
	if len(body) > MaxTemplate {
		return "", false, fmt.Errorf("NOID mask %q: %d blade positions; at most %d", mask, len(body), MaxTemplate)
	}
	return Template(body), check, nil
}

// Len returns the number of positions, the blade's length without the check character.
func (t Template) Len() int { return len(t) }

// Digits reports whether t has a position of class 'd' (a blade drawn from it needs
// TemplateBlades; one of only 'e' positions is what any BladeSource draws).
func (t Template) Digits() bool { return strings.IndexByte(string(t), 'd') >= 0 }

// Space returns how many blades t allows: 29 per 'e' position times 10 per 'd' position
// (8,410 for "eed"; 29^8 ≈ 5.0 × 10^11 for "eeeeeeee").
func (t Template) Space() float64 {
	s := 1.0
	for i := 0; i < len(t); i++ {
		if t[i] == 'd' {
			s *= 10
		} else {
			s *= 29
		}
	}
	return s
}

// Fits reports whether blade (without check character) has t's length and each of its
// characters belongs to its position's class.
func (t Template) Fits(blade string) bool {
	if len(blade) != len(t) {
		return false
	}
	for i := 0; i < len(blade); i++ {
		if t[i] == 'd' && !isDigit(blade[i]) || !betanumeric[blade[i]] {
			return false
		}
	}
	return true
}

// templateMaxRounds bounds the draws TemplateBlades makes for the digit positions of one blade:
// with a uniform source a draw of n characters holds no digit with probability (19/29)^n, so
// a source that yields none for this long is not uniform.
const templateMaxRounds = 1000

// TemplateBlades is a BladeSource that draws blades of a Template from another source without
// bias: a blade is drawn from the source; each position of class 'e' keeps its character; each
// position of class 'd' that got a letter is filled, in order, with the digits of further
// blades drawn from the source (letters are discarded). Every character the source yields is
// uniform over the 29 betanumerics, so a kept digit is uniform over the 10 digits. With a
// scripted source, a scripted blade that fits the template is returned as is. It is NOT safe
// for concurrent use.
type TemplateBlades struct {
	src     BladeSource
	t       Template
	scratch []byte
	pending []int
}

// NewTemplateBlades returns a TemplateBlades drawing blades of t from src.
func NewTemplateBlades(src BladeSource, t Template) *TemplateBlades {
	return &TemplateBlades{src: src, t: t, scratch: make([]byte, len(t))}
}

// Blade fills dst, whose length must be the template's, with a blade of the template. The error
// wraps the source's, or says that the source yields no digits.
func (b *TemplateBlades) Blade(dst []byte) error {
	if len(dst) != len(b.t) {
		return fmt.Errorf("template %s: a blade of %d characters asked for; the template has %d", b.t, len(dst), len(b.t))
	}
	if err := b.src.Blade(dst); err != nil {
		return err
	}
	b.pending = b.pending[:0]
	for i, c := range dst {
		if b.t[i] == 'd' && !isDigit(c) {
			b.pending = append(b.pending, i)
		}
	}
	next := 0
	for round := 0; next < len(b.pending); round++ {
		if round == templateMaxRounds {
			return fmt.Errorf("template %s: the blade source gave no digit in %d blades", b.t, templateMaxRounds)
		}
		if err := b.src.Blade(b.scratch); err != nil {
			return err
		}
		for _, c := range b.scratch {
			if next == len(b.pending) {
				break
			}
			if isDigit(c) {
				dst[b.pending[next]] = c
				next++
			}
		}
	}
	return nil
}
