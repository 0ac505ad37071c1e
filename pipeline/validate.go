package pipeline

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/arkhe-ledger/arkhe/textin"
)

// MaxRequestIDOctets is the longest request ID accepted, in octets (the same
// bound as an assigned name).
const MaxRequestIDOctets = 255

// byteOrderMark is U+FEFF in UTF-8.
const byteOrderMark = "\ufeff"

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
func Validate(r *Record, lim textin.Limits) *textin.RowError {
	if lim.MaxURL <= 0 {
		lim.MaxURL = textin.DefaultMaxURL
	}
	if lim.MaxERC <= 0 {
		lim.MaxERC = textin.DefaultMaxERC
	}
	if len(lim.Schemes) == 0 {
		lim.Schemes = []string{"http", "https"}
	}
	bad := func(f Field, reason string) *textin.RowError {
		return &textin.RowError{Loc: r.Source, Field: f.String(), Reason: reason}
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
		if reason := textin.CheckTarget(r.URL, lim); reason != "" {
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
