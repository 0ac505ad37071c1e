package textin

// The lexical pieces of JSON (RFC 8259) that arkhe's two hand-written JSON scanners share: the
// JSON Lines manifest scanner of package pipeline and the Django dumpdata parser of package
// legacy. What they do not share is deliberate:
//
//   - the manifest scanner is driven by the mapping: it decodes only the values a mapped path
//     names, straight into the record's field buffers, and skips the rest checking syntax
//     only; the dumpdata parser decodes a flat object once and keeps every field value as a
//     substring of the record's text (no copy).
//   - strings: the manifest scanner refuses a \u escape that is a lone UTF-16 surrogate (a mint
//     never substitutes a character) and passes invalid UTF-8 through for Validate to reject
//     with the field's name; the dumpdata parser decodes as encoding/json does (a lone surrogate
//     becomes U+FFFD), which its fuzz test checks against encoding/json, and the dumpdata reader
//     refuses a record that is not valid UTF-8 before parsing it.
//
// Both are generic over string and []byte so that neither copies its input.

// MaxJSONDepth bounds the nesting of arrays and objects either scanner accepts, so that hostile
// input cannot exhaust the stack; deeper input is a syntax error naming the bound.
const MaxJSONDepth = 1000

// JSONSpaceEnd returns the offset of the first byte at or after i that is not JSON white space
// (space, tab, CR, LF), or len(b).
func JSONSpaceEnd[T ~string | ~[]byte](b T, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// JSONNumberEnd scans the JSON number that starts at b[i] (RFC 8259 §6: an optional minus, an
// integer part without leading zeros, an optional fraction, an optional exponent) and returns
// the offset just after it and true. When the text from i is not a number it returns the offset
// of the first byte that breaks the grammar (len(b) when the input ends first) and false.
func JSONNumberEnd[T ~string | ~[]byte](b T, i int) (end int, ok bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i++; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		}
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		j := i
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		}
		if i == j {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := i
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		}
		if i == j {
			return i, false
		}
	}
	return i, true
}
