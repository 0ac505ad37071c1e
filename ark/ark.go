package ark

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Octet limits of the NAAN, the assigned name and the ledger key (draft-kunze-ark §2.3
// and §3.1).
const (
	// MaxNAAN is the longest NAAN arkhe accepts, in octets: receivers must
	// accept at least 16 (draft-kunze-ark §2.3); arkhe stores varchar(16).
	MaxNAAN = 16
	// MaxName is the longest assigned name (shoulder + blade + check character
	// + qualifier, normalized) in octets (draft-kunze-ark §3.1; varchar(255)).
	MaxName = 255
	// MaxKey is the longest ledger key "NAAN/Name" in octets
	// (varchar(272) = 16 + 1 + 255).
	MaxKey = MaxNAAN + 1 + MaxName
)

// Values of LimitError.What, naming the limit that was exceeded.
const (
	// LimitNAAN names the NAAN limit MaxNAAN.
	LimitNAAN = "NAAN"
	// LimitName names the assigned-name limit MaxName.
	LimitName = "assigned name"
	// LimitKey names the ledger-key limit MaxKey.
	LimitKey = "ledger key"
)

// ErrNotARK is matched (errors.Is) by the *SyntaxError Parse returns when the
// input carries no "ark:" label at all, e.g. "doi:10.1234/x5" or an empty
// string (draft-kunze-ark §3.2 table, last row).
var ErrNotARK = errors.New("not an ARK")

// SyntaxError reports input that is not a valid ARK under draft-kunze-ark §2, §3.2.
// Parse and its relatives return it as *SyntaxError; use errors.As to branch.
type SyntaxError struct {
	// Input is the string given to Parse, verbatim.
	Input string
	// Offset is the byte offset in Input of the offending character, or -1
	// when the fault is not tied to one character (e.g. a missing Name).
	Offset int
	// Reason says what is wrong, citing the rule.
	Reason string
	// Err is an underlying sentinel (ErrNotARK) or nil.
	Err error
}

// Error returns `invalid ARK "<input>": <reason>`, the input shortened to
// 120 octets.
func (e *SyntaxError) Error() string {
	in := e.Input
	if len(in) > 120 {
		in = in[:120] + "..."
	}
	return fmt.Sprintf("invalid ARK %q: %s", in, e.Reason)
}

// Unwrap returns Err, so errors.Is(err, ErrNotARK) works.
func (e *SyntaxError) Unwrap() error { return e.Err }

// LimitError reports a NAAN, assigned name or ledger key longer than its
// octet limit. Values are refused with it, never
// truncated. Parse returns it as *LimitError; use errors.As to branch.
type LimitError struct {
	// What names the limit: LimitNAAN, LimitName or LimitKey.
	What string
	// Octets is the length of the normalized value, in octets.
	Octets int
	// Max is the limit, in octets.
	Max int
}

// Error returns e.g. "assigned name is 300 octets; the limit is 255
// (draft-kunze-ark §3.1)".
func (e *LimitError) Error() string {
	src := "NAAN, \"/\" and assigned name; draft-kunze-ark §2.3, §3.1"
	switch e.What {
	case LimitNAAN:
		src = "draft-kunze-ark §2.3"
	case LimitName:
		src = "draft-kunze-ark §3.1"
	}
	return fmt.Sprintf("%s is %d octets; the limit is %d (%s)", e.What, e.Octets, e.Max, src)
}

// Options change how ParseWith normalizes.
type Options struct {
	// Import removes the hyphen-likes U+2010–U+2015 from NAAN and Name, as
	// it removes "-"; without it they are rejected (mint input).
	// draft-kunze-ark §3.2 removes "-"; the hyphen-likes are arkhe's rule.
	Import bool
}

// ARK is a parsed, normalized ARK (draft-kunze-ark §2). The zero value is not a
// valid ARK.
//
// Invariants for an ARK returned by Parse: NAAN is 1–16 lowercase
// betanumerics; Name is non-empty, at most 255 octets, and equals
// Shoulder + Blade + Qualifier; BaseName() == Shoulder + Blade.
type ARK struct {
	// NAAN is the Name Assigning Authority Number, lowercased, hyphens
	// removed. It is a string: "099999" is not "99999".
	NAAN string
	// Name is the whole assigned name after "NAAN/": shoulder, blade, check
	// character and any qualifier, normalized.
	Name string
	// Shoulder is the primordinal (first-digit) shoulder in bare form,
	// e.g. "x9", matching ^[bcdfghjkmnpqrstvwxz]+[0-9]; "" when the base
	// name does not start with one (draft-kunze-ark §2). See the package
	// documentation for the stored form "/x9".
	Shoulder string
	// Blade is the rest of the base name after Shoulder, including the check
	// character when the shoulder has one (whether it has one is a property
	// of the shoulder, not of the string; NCDA).
	Blade string
	// Qualifier is the part of Name from its first "/" or "." on ("" when
	// none). Never minted, never covered by the check character.
	Qualifier string
	// Inflection is the query string removed from the input, from its first
	// "?" on: "?", "??", "?info" or any other query; "" when none
	// (draft-kunze-ark §3.2). It is not part of the identity.
	Inflection string
	// Original is the input given to Parse, verbatim.
	Original string
}

// String returns the printed form "ark:NAAN/Name" with the modern label
// (arkhe prints every ARK with the modern label).
func (a ARK) String() string { return "ark:" + a.NAAN + "/" + a.Name }

// Key returns the ledger key "NAAN/Name" (the ark.ark column, at most 272
// octets).
func (a ARK) Key() string { return a.NAAN + "/" + a.Name }

// BaseName returns Name without its qualifier: shoulder + blade (+ check
// character), the part the check character covers (draft-kunze-ark §2).
func (a ARK) BaseName() string { return strings.TrimSuffix(a.Name, a.Qualifier) }

// OriginalDiffers reports whether Original is spelled differently from the
// normalized ARK beyond the label form ("ark:" / "ark:/", any case), the NMA
// and the inflection; that is, whether hyphens, NAAN case, %-escape case or
// structural "/" and "." were changed. The ledger keeps the original spelling
// only when this is true.
func (a ARK) OriginalDiffers() bool {
	rest, _, ok := cutLabel(a.Original)
	if !ok {
		return a.Original != ""
	}
	if q := strings.IndexByte(rest, '?'); q >= 0 {
		rest = rest[:q]
	}
	return rest != a.Key()
}

// Parse parses and normalizes an ARK with the default (mint-input) options;
// it is ParseWith(s, Options{}). See ParseWith.
func Parse(s string) (ARK, error) { return ParseWith(s, Options{}) }

// Normalize returns the normalized printed form "ark:NAAN/Name" of s, without
// any inflection, under the default options (draft-kunze-ark §3.2). Errors are
// those of Parse.
func Normalize(s string) (string, error) {
	a, err := Parse(s)
	if err != nil {
		return "", err
	}
	return a.String(), nil
}

// ParseKey parses a ledger key "NAAN/Name" (no label) and requires it to be
// normalized already: ParseKey(k).Key() == k. It returns a *SyntaxError for a
// key that is not normalized and the errors of Parse otherwise.
func ParseKey(key string) (ARK, error) {
	a, err := Parse("ark:" + key)
	if err != nil {
		var se *SyntaxError
		if errors.As(err, &se) {
			se.Input = key
			if se.Offset >= 0 {
				se.Offset -= len("ark:")
			}
		}
		return ARK{}, err
	}
	a.Original = key
	if a.Key() != key {
		return ARK{}, &SyntaxError{Input: key, Offset: -1,
			Reason: fmt.Sprintf("ledger key is not normalized (normalized: %q; draft-kunze-ark §3.2)", a.Key())}
	}
	return a, nil
}

// ParseWith parses s and normalizes it by draft-kunze-ark §3.2 steps 1–8, in order:
//
//  1. everything before the first "/ark:" (the NMA: scheme, host, path) is
//     removed; the label is matched case-insensitively;
//  2. the query from the first "?" on is removed and kept in Inflection;
//  3. the label "ark:/" or "ark:" becomes "ark:";
//  4. the NAAN is lowercased; the case of the Name is kept;
//  5. the two hex digits after every "%" are uppercased; a "%" not followed
//     by two hex digits is rejected (arkhe does not decode %HH);
//  6. every "-" is removed from NAAN and Name; the hyphen-likes
//     U+2010–U+2015 are removed when o.Import, rejected otherwise;
//  7. structural "/" and "." after "NAAN/" are trimmed at both ends and each
//     run of them collapses to its first character ("//"→"/", "./"→".");
//  8. a "." followed anywhere later by "/" (a variant before a component,
//     "x54.v2/c3") is rejected.
//
// The NAAN must then be 1–16 betanumerics; the Name must be non-empty and use
// only ASCII letters, digits, "= ~ * + @ _ $ % . /" (anything else must be
// %-encoded as %HH). The Name is split into Shoulder, Blade and Qualifier
// (draft-kunze-ark §2).
//
// Errors: *SyntaxError (wrapping ErrNotARK when there is no "ark:" label) or
// *LimitError (NAAN over 16, Name over 255, key over 272 octets). ParseWith
// never panics.
func ParseWith(s string, o Options) (ARK, error) {
	rest, off, ok := cutLabel(s)
	if !ok {
		return ARK{}, &SyntaxError{Input: s, Offset: -1, Reason: `no "ark:" label`, Err: ErrNotARK}
	}
	var infl string
	if q := strings.IndexByte(rest, '?'); q >= 0 {
		infl = rest[q:]
		rest = rest[:q]
	}
	naanRaw, nameRaw, hasSlash := strings.Cut(rest, "/")
	naan, err := normNAAN(s, naanRaw, off, o)
	if err != nil {
		return ARK{}, err
	}
	if !hasSlash {
		return ARK{}, &SyntaxError{Input: s, Offset: -1, Reason: "no Name after the NAAN (expected ark:NAAN/Name; draft-kunze-ark §2)"}
	}
	name, err := normName(s, nameRaw, off+len(naanRaw)+1, o)
	if err != nil {
		return ARK{}, err
	}
	if n := len(naan) + 1 + len(name); n > MaxKey {
		return ARK{}, &LimitError{What: LimitKey, Octets: n, Max: MaxKey}
	}
	a := ARK{NAAN: naan, Name: name, Inflection: infl, Original: s}
	base := name
	if q := strings.IndexAny(name, "/."); q >= 0 {
		base, a.Qualifier = name[:q], name[q:]
	}
	a.Shoulder = PrimordinalShoulder(base)
	a.Blade = base[len(a.Shoulder):]
	return a, nil
}

// PrimordinalShoulder returns the first-digit (primordinal) shoulder at the
// start of name in bare form: the run of betanumeric letters plus the first
// digit after them, matching ^[bcdfghjkmnpqrstvwxz]+[0-9] (draft-kunze-ark §2).
// It returns "" when name does not start with such a shoulder.
func PrimordinalShoulder(name string) string {
	i := 0
	for i < len(name) && isBetaLetter(name[i]) {
		i++
	}
	if i == 0 || i == len(name) || !isDigit(name[i]) {
		return ""
	}
	return name[:i+1]
}

// cutLabel finds the label: at the start of s, or after the first "/ark:"
// (case-insensitive; everything before it is the NMA, draft-kunze-ark §3.2).
// It returns what follows "ark:" or "ark:/" and its offset in s.
func cutLabel(s string) (rest string, off int, ok bool) {
	at := -1
	if hasLabelAt(s, 0) {
		at = 0
	} else {
		for i := 0; i < len(s); i++ {
			if s[i] == '/' && hasLabelAt(s, i+1) {
				at = i + 1
				break
			}
		}
	}
	if at < 0 {
		return "", 0, false
	}
	off = at + len("ark:")
	if off < len(s) && s[off] == '/' {
		off++
	}
	return s[off:], off, true
}

func hasLabelAt(s string, i int) bool {
	return len(s)-i >= 4 && s[i]|0x20 == 'a' && s[i+1]|0x20 == 'r' && s[i+2]|0x20 == 'k' && s[i+3] == ':'
}

// normNAAN applies steps 4 and 6 to the NAAN and checks it is betanumeric.
// off is the offset of raw in s.
func normNAAN(s, raw string, off int, o Options) (string, error) {
	if raw == "" {
		return "", &SyntaxError{Input: s, Offset: off, Reason: "no NAAN (expected ark:NAAN/Name; draft-kunze-ark §2)"}
	}
	var buf [32]byte
	out := buf[:0]
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '-':
			i++
			continue
		case c == 0xE2 && isHyphenLike(raw, i):
			if !o.Import {
				return "", hyphenLikeError(s, raw, i, off)
			}
			i += 3
			continue
		}
		lc := c
		if c >= 'A' && c <= 'Z' {
			lc = c + ('a' - 'A')
		}
		if !IsBetanumeric(lc) {
			return "", &SyntaxError{Input: s, Offset: off + i,
				Reason: fmt.Sprintf("NAAN character %s at offset %d is not betanumeric (0-9 and bcdfghjkmnpqrstvwxz; draft-kunze-ark §2.3)", quoteAt(raw, i), off+i)}
		}
		out = append(out, lc)
		i++
	}
	if len(out) == 0 {
		return "", &SyntaxError{Input: s, Offset: off, Reason: "NAAN is empty after removing hyphens (draft-kunze-ark §3.2)"}
	}
	if len(out) > MaxNAAN {
		return "", &LimitError{What: LimitNAAN, Octets: len(out), Max: MaxNAAN}
	}
	if string(out) == raw {
		return raw, nil
	}
	return string(out), nil
}

// normName applies steps 5–8 and the repertoire check to the Name. off is the
// offset of raw in s.
func normName(s, raw string, off int, o Options) (string, error) {
	var buf [256]byte
	out := buf[:0]
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '%':
			if i+2 >= len(raw) || !isHex(raw[i+1]) || !isHex(raw[i+2]) {
				end := min(i+3, len(raw))
				return "", &SyntaxError{Input: s, Offset: off + i,
					Reason: fmt.Sprintf("malformed %%-escape %q at offset %d: %% must be followed by two hex digits (draft-kunze-ark §3.2)", raw[i:end], off+i)}
			}
			out = append(out, '%', upperHex(raw[i+1]), upperHex(raw[i+2]))
			i += 3
		case c == '-':
			i++
		case c == '/' || c == '.':
			if len(out) > 0 && !isStructural(out[len(out)-1]) {
				out = append(out, c)
			}
			i++
		case c < utf8.RuneSelf && isNameChar(c):
			out = append(out, c)
			i++
		case c == 0xE2 && isHyphenLike(raw, i):
			if !o.Import {
				return "", hyphenLikeError(s, raw, i, off)
			}
			i += 3
		default:
			return "", &SyntaxError{Input: s, Offset: off + i,
				Reason: fmt.Sprintf("character %s at offset %d must be %%-encoded as %%HH (draft-kunze-ark §2 character repertoire)", quoteAt(raw, i), off+i)}
		}
	}
	if n := len(out); n > 0 && isStructural(out[n-1]) {
		out = out[:n-1]
	}
	if len(out) == 0 {
		return "", &SyntaxError{Input: s, Offset: -1, Reason: "no Name after the NAAN (expected ark:NAAN/Name; draft-kunze-ark §2)"}
	}
	if len(out) > MaxName {
		return "", &LimitError{What: LimitName, Octets: len(out), Max: MaxName}
	}
	if dot := indexByte(out, '.'); dot >= 0 {
		if sl := indexByte(out[dot:], '/'); sl >= 0 {
			return "", &SyntaxError{Input: s, Offset: -1,
				Reason: fmt.Sprintf("variant before component: %q has \".\" before \"/\" (draft-kunze-ark §3.2)", string(out))}
		}
	}
	if string(out) == raw {
		return raw, nil
	}
	return string(out), nil
}

func hyphenLikeError(s, raw string, i, off int) error {
	r, _ := utf8.DecodeRuneInString(raw[i:])
	return &SyntaxError{Input: s, Offset: off + i,
		Reason: fmt.Sprintf("hyphen-like %U at offset %d is removed only on import; on mint input it is rejected (draft-kunze-ark §3.2)", r, off+i)}
}

// quoteAt quotes the character at raw[i] for an error message: the whole
// UTF-8 sequence when valid, else the single byte.
func quoteAt(raw string, i int) string {
	r, n := utf8.DecodeRuneInString(raw[i:])
	if r == utf8.RuneError && n <= 1 {
		return fmt.Sprintf("byte 0x%02X", raw[i])
	}
	return fmt.Sprintf("%q (%U)", raw[i:i+n], r)
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// isHyphenLike reports whether raw[i:] starts with the UTF-8 encoding of one
// of U+2010–U+2015 (E2 80 90 … E2 80 95).
func isHyphenLike(raw string, i int) bool {
	return i+2 < len(raw) && raw[i] == 0xE2 && raw[i+1] == 0x80 && raw[i+2] >= 0x90 && raw[i+2] <= 0x95
}

func isStructural(c byte) bool { return c == '/' || c == '.' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHex(c byte) bool {
	return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f')
}

func upperHex(c byte) byte {
	if c >= 'a' && c <= 'f' {
		return c - ('a' - 'A')
	}
	return c
}

// isNameChar reports the non-reserved repertoire of a Name: ASCII letters,
// digits and "= ~ * + @ _ $" (draft-kunze-ark §2, §3.2).
func isNameChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', isDigit(c):
		return true
	}
	switch c {
	case '=', '~', '*', '+', '@', '_', '$':
		return true
	}
	return false
}

// isBetaLetter reports the 19 betanumeric letters bcdfghjkmnpqrstvwxz.
func isBetaLetter(c byte) bool {
	return c >= 'b' && c <= 'z' && ordinal[c] != 0
}
