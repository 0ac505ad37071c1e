package api

import (
	"bytes"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ANVL (A Name-Value Language), as EZID's API reads and writes it: one element a line,
// "name: value". Reading a request body: lines end in LF, CR LF or CR; a line starting with "#"
// is a comment; a line starting with blank space continues the previous element's value (joined
// by one space; after a blank line there is no previous element); a blank line separates
// nothing else; any other line is split on its first colon. Name and value are then
// percent-decoded (%hh, either case, is the character U+00hh, as EZID's server and the
// unescape its API documentation gives read it, so %E9 is "é" and %C3%A9 is "Ã©"; a "%" not
// followed by two hex digits is refused) and trimmed of blank space. An empty name, a repeated
// name, a line without a colon and a continuation without an element are refused. Writing: in a name, "%", ":", CR and LF are
// written %25, %3A, %0D and %0A; in a value "%", CR and LF (EZID's API documentation, the same
// rule in both directions). A name starting with "#" is written with that "#" as %23, so that
// it is not read back as a comment.

// anvlElem is one element of an ANVL body, decoded: its name, value and the line it starts on
// (1-based).
type anvlElem struct {
	name, value string
	line        int
}

// anvlError is an ANVL body refused: the line (1-based) and the rule, in EZID's words where it
// has them ("no colon in line", "empty label", "repeated label", "no previous label for
// continuation line", "percent-decode error").
type anvlError struct {
	line   int
	reason string
}

// Error returns "line N: REASON".
func (e *anvlError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.reason) }

// parseANVL reads body (UTF-8; anything else is refused on the line it is on) as one ANVL
// record, its elements in order. A refusal is an *anvlError.
func parseANVL(body []byte) ([]anvlElem, error) {
	var elems []anvlElem
	seen := map[string]bool{}
	cur := -1 // index of the element a continuation line extends; -1 for none
	for n, rest := 1, body; len(rest) > 0 || n == 1; n++ {
		i := bytes.IndexAny(rest, "\r\n")
		line := rest
		if i < 0 {
			rest = nil
		} else {
			line = rest[:i]
			if rest[i] == '\r' && i+1 < len(rest) && rest[i+1] == '\n' {
				i++
			}
			rest = rest[i+1:]
		}
		if !utf8.Valid(line) {
			return nil, &anvlError{line: n, reason: "character decoding error: the body is not UTF-8"}
		}
		r, _ := utf8.DecodeRune(line)
		switch {
		case len(line) == 0:
			cur = -1
		case line[0] == '#':
		case unicode.IsSpace(r):
			if cur < 0 {
				return nil, &anvlError{line: n, reason: "no previous label for continuation line"}
			}
			v, err := anvlDecode(line, n)
			if err != nil {
				return nil, err
			}
			if v = strings.TrimSpace(v); v != "" {
				if elems[cur].value == "" {
					elems[cur].value = v
				} else {
					elems[cur].value += " " + v
				}
			}
		default:
			c := bytes.IndexByte(line, ':')
			if c < 0 {
				return nil, &anvlError{line: n, reason: "no colon in line"}
			}
			k, err := anvlDecode(line[:c], n)
			if err != nil {
				return nil, err
			}
			v, err := anvlDecode(line[c+1:], n)
			if err != nil {
				return nil, err
			}
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			switch {
			case k == "":
				return nil, &anvlError{line: n, reason: "empty label"}
			case seen[k]:
				return nil, &anvlError{line: n, reason: fmt.Sprintf("repeated label %q", k)}
			}
			seen[k] = true
			elems = append(elems, anvlElem{name: k, value: v, line: n})
			cur = len(elems) - 1
		}
		if i < 0 {
			break
		}
	}
	return elems, nil
}

// anvlDecode percent-decodes s (of line n, UTF-8): every %hh becomes the character U+00hh.
func anvlDecode(s []byte, n int) (string, error) {
	if bytes.IndexByte(s, '%') < 0 {
		return string(s), nil
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			out = append(out, s[i])
			continue
		}
		if i+2 >= len(s) || !isHexDigit(s[i+1]) || !isHexDigit(s[i+2]) {
			return "", &anvlError{line: n, reason: "percent-decode error: a % not followed by two hex digits"}
		}
		out = utf8.AppendRune(out, rune(hexVal(s[i+1])<<4|hexVal(s[i+2])))
		i += 2
	}
	return string(out), nil
}

func isHexDigit(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hexVal(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// appendANVL appends the element "name: value" and a LF to b, percent-encoded (see the rule
// above).
func appendANVL(b []byte, name, value string) []byte {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '%' || c == ':' || c == '\r' || c == '\n' || (i == 0 && c == '#') {
			b = appendEscape(b, c)
		} else {
			b = append(b, c)
		}
	}
	b = append(b, ':', ' ')
	for i := 0; i < len(value); i++ {
		c := value[i]
		if c == '%' || c == '\r' || c == '\n' {
			b = appendEscape(b, c)
		} else {
			b = append(b, c)
		}
	}
	return append(b, '\n')
}

// appendEscape appends %HH (upper-case hex) of c.
func appendEscape(b []byte, c byte) []byte {
	const hex = "0123456789ABCDEF"
	return append(b, '%', hex[c>>4], hex[c&15])
}
