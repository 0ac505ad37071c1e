package pipeline

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxRequestIDOctets is the longest request ID accepted, in octets (the same
// bound as an assigned name).
const MaxRequestIDOctets = 255

// byteOrderMark is U+FEFF in UTF-8.
const byteOrderMark = "\ufeff"

// Default limits on values.
const (
	DefaultMaxURL = 2048     // octets in a target URL
	DefaultMaxERC = 64 << 10 // octets in one ERC field (64 KiB)
)

// Limits are the configurable bounds on values. A zero or
// negative MaxURL or MaxERC, or an empty Schemes, means the default.
type Limits struct {
	// MaxURL is the longest target URL in octets (default 2,048).
	MaxURL int
	// MaxERC is the longest value of each ERC field — who, what, when,
	// commitment — in octets (default 65,536).
	MaxERC int
	// Schemes are the URL schemes a target may use, compared case
	// insensitively (default http, https).
	Schemes []string
}

// DefaultLimits returns the default limits: URL at most 2,048
// octets with scheme http or https, each ERC field at most 64 KiB.
func DefaultLimits() Limits {
	return Limits{MaxURL: DefaultMaxURL, MaxERC: DefaultMaxERC, Schemes: []string{"http", "https"}}
}

// Validate checks one record before it goes near COPY and returns a *RowError naming the first field at
// fault and why, with r.Source as its location, or nil when the record is
// good. The checks, in order:
//
//   - request_id is present, not empty, at most MaxRequestIDOctets octets;
//   - no field contains a NUL byte (PostgreSQL text cannot hold one), every
//     field is valid UTF-8, and no field holds U+FEFF, the byte order mark:
//     invisible, it is allowed only at the start of a file, and met inside a
//     value it is the seam of files joined together (a request ID "\ufeffr5"
//     would never match "r5");
//   - the target URL, when present, is at most lim.MaxURL octets, has no
//     space or control character, uses a scheme in lim.Schemes, and for
//     http/https has a "//", a non-empty host and no userinfo (CheckTarget).
//     An absent or empty URL is allowed (the ARK then resolves to its
//     description);
//   - who, what, when and commitment are each at most lim.MaxERC octets.
func Validate(r *Record, lim Limits) *RowError {
	if lim.MaxURL <= 0 {
		lim.MaxURL = DefaultMaxURL
	}
	if lim.MaxERC <= 0 {
		lim.MaxERC = DefaultMaxERC
	}
	if len(lim.Schemes) == 0 {
		lim.Schemes = []string{"http", "https"}
	}
	bad := func(f Field, reason string) *RowError {
		return &RowError{Loc: r.Source, Field: f.String(), Reason: reason}
	}
	if r.Has&HasRequestID == 0 || r.RequestID == "" {
		return bad(FieldRequestID, "missing request ID")
	}
	if n := len(r.RequestID); n > MaxRequestIDOctets {
		return bad(FieldRequestID, "request ID is "+strconv.Itoa(n)+" octets, limit "+strconv.Itoa(MaxRequestIDOctets))
	}
	for f := range Field(NumFields) {
		v, ok := r.Value(f)
		if !ok {
			continue
		}
		if i := strings.IndexByte(v, 0); i >= 0 {
			return bad(f, "NUL byte at octet "+strconv.Itoa(i+1))
		}
		if !utf8.ValidString(v) {
			return bad(f, "invalid UTF-8 at octet "+strconv.Itoa(invalidUTF8At(v)+1))
		}
		if i := strings.Index(v, byteOrderMark); i >= 0 {
			return bad(f, "byte order mark (U+FEFF) at octet "+strconv.Itoa(i+1)+
				": it belongs only at the very start of a file (were files joined together?)")
		}
	}
	if r.Has&HasURL != 0 {
		if reason := CheckTarget(r.URL, lim); reason != "" {
			return bad(FieldURL, reason)
		}
	}
	for f := FieldWho; f <= FieldCommitment; f++ {
		if v, ok := r.Value(f); ok && len(v) > lim.MaxERC {
			return bad(f, "value is "+strconv.Itoa(len(v))+" octets, limit "+strconv.Itoa(lim.MaxERC))
		}
	}
	return nil
}

// invalidUTF8At returns the offset of the first invalid UTF-8 sequence in s.
func invalidUTF8At(s string) int {
	for i := 0; i < len(s); {
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(s)
}

// CheckTarget returns why u is not an acceptable target URL, or "" when it is: at most
// lim.MaxURL octets (0: DefaultMaxURL), no space or control character, an RFC 3986 scheme in
// lim.Schemes (none: http and https), and for http and https a "//" authority with a host and
// without userinfo. Userinfo ("user:password@host") is refused, never stored: a target is
// public, resolved for anyone and shown in every report, and a password in it is a leaked
// password (RFC 3986 §3.2.1 deprecates it). The empty string is acceptable (no target: the ARK
// resolves to its description). Mint and import apply the same rule.
func CheckTarget(u string, lim Limits) string {
	if lim.MaxURL <= 0 {
		lim.MaxURL = DefaultMaxURL
	}
	if len(lim.Schemes) == 0 {
		lim.Schemes = []string{"http", "https"}
	}
	if u == "" {
		return "" // an empty target is allowed: the ARK resolves to its description
	}
	if len(u) > lim.MaxURL {
		return "target URL is " + strconv.Itoa(len(u)) + " octets, limit " + strconv.Itoa(lim.MaxURL)
	}
	for i := 0; i < len(u); i++ {
		if c := u[i]; c <= ' ' || c == 0x7f {
			return "target URL has a space or control character at octet " + strconv.Itoa(i+1)
		}
	}
	colon := strings.IndexByte(u, ':')
	if colon <= 0 || !validScheme(u[:colon]) {
		return "target URL has no scheme (want " + strings.Join(lim.Schemes, " or ") + ")"
	}
	scheme := u[:colon]
	allowed := false
	for _, s := range lim.Schemes {
		if strings.EqualFold(s, scheme) {
			allowed = true
			break
		}
	}
	if !allowed {
		return "target URL scheme " + strconv.Quote(scheme) + " is not allowed (want " + strings.Join(lim.Schemes, " or ") + ")"
	}
	if strings.EqualFold(scheme, "http") || strings.EqualFold(scheme, "https") {
		rest := u[colon+1:]
		if !strings.HasPrefix(rest, "//") || len(rest) == 2 || rest[2] == '/' || rest[2] == '?' || rest[2] == '#' {
			return "target URL has no host"
		}
		authority := rest[2:]
		if end := strings.IndexAny(authority, "/?#"); end >= 0 {
			authority = authority[:end]
		}
		if strings.Contains(authority, "@") {
			return "target URL carries userinfo (user:password@) before its host: a target is public, so it is refused and never stored; give the URL without it"
		}
	}
	return ""
}

// validScheme reports whether s is an RFC 3986 §3.1 scheme:
// ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ).
func validScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return s != ""
}
