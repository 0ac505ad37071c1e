package ark

import "fmt"

// Alphabet is the betanumeric alphabet in NCDA ordinal order: the digits and
// the lowercase consonants without "l", 29 characters, ordinals 0..28
// (draft-kunze-ark §2; NCDA; NOID manual).
const Alphabet = "0123456789bcdfghjkmnpqrstvwxz"

// NCDAGuaranteeOctets is the longest check zone (without its check character)
// for which NCDA is guaranteed to detect every single-character substitution
// and adjacent transposition within the alphabet (NCDA). With a
// 5-digit NAAN, "/" and a 2–4 character shoulder, blades up to 17 characters
// stay inside it. Longer zones still get a check character, with a weaker
// guarantee.
const NCDAGuaranteeOctets = 27

// ordinal maps an octet to its NCDA weight: its position in Alphabet, or 0
// for any octet outside it (which still takes a position; NCDA).
// Immutable after initialization.
var ordinal = func() (t [256]uint8) {
	for i := 0; i < len(Alphabet); i++ {
		t[Alphabet[i]] = uint8(i)
	}
	return t
}()

// betanumeric marks the octets of Alphabet. Immutable after initialization.
var betanumeric = func() (t [256]bool) {
	for i := 0; i < len(Alphabet); i++ {
		t[Alphabet[i]] = true
	}
	return t
}()

// IsBetanumeric reports whether c is one of the 29 characters of Alphabet
// (draft-kunze-ark §2).
func IsBetanumeric(c byte) bool { return betanumeric[c] }

// CheckChar returns the NOID check character (NCDA) of the literal string
// zone, which must not include the check character itself:
// Alphabet[Σ position(1-based) × ordinal(zone[i]) mod 29], where an octet
// outside Alphabet weighs 0 but takes a position (NCDA). The input
// is not normalized: "13030/xf93-gt2" and "13030/xf93gt2" differ. CheckChar("")
// is '0'.
func CheckChar(zone string) byte {
	return Alphabet[ncdaSum(0, 0, zone)%29]
}

// ncdaSum adds the weighted ordinals of s, whose first octet is at 0-based
// position pos in the zone, to sum and returns it reduced mod 29.
func ncdaSum[T string | []byte](sum uint64, pos int, s T) uint64 {
	for len(s) > 0 {
		// Reduce every 64 KiB so the sum never overflows, however long s is.
		n := min(len(s), 1<<16)
		for i := 0; i < n; i++ {
			sum += uint64(pos+i+1) * uint64(ordinal[s[i]])
		}
		sum %= 29
		pos += n
		s = s[n:]
	}
	return sum % 29
}

// Zone says over which part of an ARK its check character is computed
// (NCDA). Each shoulder records one.
type Zone string

// The check zones: the string NCDA runs over, a property of the shoulder.
const (
	// ZoneNAANName: the check character covers "NAAN/" + base name. arkhe
	// mints with it; it is the default.
	ZoneNAANName Zone = "naan_name"
	// ZoneNameOnly: the check character covers the base name only (e.g.
	// NAAN 12148).
	ZoneNameOnly Zone = "name_only"
	// ZoneNone: the ARKs of the shoulder carry no check character.
	ZoneNone Zone = "none"
	// DefaultZone is the zone used when none is given.
	DefaultZone = ZoneNAANName
)

// ParseZone returns the Zone named s, which must be exactly "naan_name",
// "name_only" or "none"; any other value (including "") is an error.
func ParseZone(s string) (Zone, error) {
	z := Zone(s)
	if !z.Valid() {
		return "", fmt.Errorf("unknown check zone %q: want naan_name, name_only or none (NCDA)", s)
	}
	return z, nil
}

// Valid reports whether z is one of ZoneNAANName, ZoneNameOnly, ZoneNone.
func (z Zone) Valid() bool {
	return z == ZoneNAANName || z == ZoneNameOnly || z == ZoneNone
}

// String returns the zone's name as stored in shoulder.check_zone.
func (z Zone) String() string { return string(z) }

// CheckZone returns the string whose last octet is a's check character and
// whose other octets it covers: "NAAN/" + BaseName() for ZoneNAANName,
// BaseName() for ZoneNameOnly (NCDA). It returns "", false for
// ZoneNone and for an invalid zone.
func (a ARK) CheckZone(z Zone) (string, bool) {
	switch z {
	case ZoneNAANName:
		return a.NAAN + "/" + a.BaseName(), true
	case ZoneNameOnly:
		return a.BaseName(), true
	}
	return "", false
}

// CheckError reports why an ARK's check character does not verify
// (NCDA). VerifyDetail returns it as *CheckError.
type CheckError struct {
	// Zone is the zone string checked, including the check character.
	Zone string
	// Offset is the octet offset in Zone of a character outside Alphabet,
	// or -1 when the fault is the check character itself.
	Offset int
	// Got is the check character found (the last octet of Zone) and Want
	// the one NCDA computes; both 0 when the fault is not a mismatch.
	Got, Want byte
	// Reason says what is wrong.
	Reason string
}

// Error returns "check character does not verify in zone "<zone>": <reason>".
func (e *CheckError) Error() string {
	return fmt.Sprintf("check character does not verify in zone %q: %s", e.Zone, e.Reason)
}

// VerifyZone reports whether the last octet of zone equals CheckChar of the
// octets before it. It checks the literal string only, not the character set;
// VerifyZone("") is false.
func VerifyZone(zone string) bool {
	n := len(zone)
	return n > 0 && zone[n-1] == CheckChar(zone[:n-1])
}

// Verify reports whether a's check character verifies over zone z
// (NCDA); it is VerifyDetail(a, z) == nil. ZoneNone always
// verifies; an invalid zone never does.
//
// Because NCDA weighs every octet outside Alphabet as 0 and so cannot tell
// "0" from "O" or "/" from "_", Verify also requires the character set: every
// octet of the zone must be betanumeric, except the one "/" after the NAAN in
// ZoneNAANName. An ARK whose base name holds uppercase letters, "_", "%" or
// other non-betanumerics therefore never verifies, even when the NCDA sum
// happens to match.
func Verify(a ARK, z Zone) bool { return VerifyDetail(a, z) == nil }

// VerifyDetail is Verify with the reason: nil when a's check character
// verifies over zone z (always for ZoneNone), else a *CheckError naming the
// zone string and the offending character or the expected check character.
func VerifyDetail(a ARK, z Zone) error {
	// The zone is naan + sep + base; it is built as a string only for errors.
	var naan, sep string
	switch z {
	case ZoneNone:
		return nil
	case ZoneNAANName:
		naan, sep = a.NAAN, "/"
	case ZoneNameOnly:
	default:
		return &CheckError{Offset: -1, Reason: fmt.Sprintf("unknown check zone %q (NCDA)", string(z))}
	}
	base := a.BaseName()
	off := len(naan) + len(sep) // offset of base in the zone
	if base == "" {
		return &CheckError{Zone: naan + sep, Offset: -1, Reason: "no base name to carry a check character"}
	}
	for i := 0; i < len(naan); i++ {
		if !betanumeric[naan[i]] {
			return notBetanumeric(naan+sep+base, i)
		}
	}
	for i := 0; i < len(base); i++ {
		if !betanumeric[base[i]] {
			return notBetanumeric(naan+sep+base, off+i)
		}
	}
	n := len(base)
	sum := ncdaSum(ncdaSum(0, 0, naan), off, base[:n-1]) // "/" weighs 0
	if got, want := base[n-1], Alphabet[sum]; got != want {
		return &CheckError{Zone: naan + sep + base, Offset: -1, Got: got, Want: want,
			Reason: fmt.Sprintf("check character is %q, NCDA gives %q", got, want)}
	}
	return nil
}

func notBetanumeric(zone string, i int) error {
	return &CheckError{Zone: zone, Offset: i,
		Reason: fmt.Sprintf("character %q at offset %d is not betanumeric, so NCDA cannot verify it", zone[i], i)}
}
