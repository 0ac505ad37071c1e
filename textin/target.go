package textin

import (
	"strconv"
	"strings"
)

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
