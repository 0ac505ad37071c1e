package pipeline

import (
	"strconv"
	"strings"
)

// Mapping says which source field feeds each manifest field (a mapping
// renames them, including nested JSON paths).
//
// A source is a CSV header name, a Parquet column name (dots for nested
// groups) or a JSON path:
//
//	all_artists           the top-level key all_artists
//	dateRange.text        key text of the object under dateRange
//	contributors[0].name  name of the first element of contributors
//	contributors[].name   name of every element, non-empty values joined with "; "
//	contributor[]         every element of an array of scalars, joined with "; "
//
// The zero Mapping is the default: each field reads the source of its own
// name (request_id, url, who, what, when, commitment). Fields set explicitly
// are remembered, so a reader can tell a typo (an explicit column that is
// not there: an error) from an optional default column that is simply absent.
type Mapping struct {
	src      [NumFields]string
	explicit uint8 // bit Field.Bit() set when the field was given explicitly
}

// DefaultMapping returns the default mapping (the zero Mapping).
func DefaultMapping() Mapping { return Mapping{} }

// Source returns the source name for field f: the explicit one if set ("" =
// not mapped, field always absent), else the field's own name.
func (m Mapping) Source(f Field) string {
	if int(f) >= NumFields {
		return ""
	}
	if m.explicit&f.Bit() != 0 {
		return m.src[f]
	}
	return fieldNames[f]
}

// Explicit reports whether field f was given explicitly.
func (m Mapping) Explicit(f Field) bool { return int(f) < NumFields && m.explicit&f.Bit() != 0 }

// With returns a copy of m in which field f reads source ("" unmaps it).
// Unmapping request_id is allowed here but rejected by OpenManifest.
func (m Mapping) With(f Field, source string) Mapping {
	if int(f) < NumFields {
		m.src[f] = source
		m.explicit |= f.Bit()
	}
	return m
}

// String renders the mapping in ParseMapping syntax, fields in canonical
// order, quoting sources that contain a comma, a double quote, or leading or
// trailing spaces. ParseMapping(m.String()) == m.
func (m Mapping) String() string {
	var b strings.Builder
	for f := range Field(NumFields) {
		if !m.Explicit(f) {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(f.String())
		b.WriteByte('=')
		s := m.src[f]
		if strings.ContainsAny(s, ",\"") || strings.TrimSpace(s) != s {
			b.WriteByte('"')
			b.WriteString(strings.ReplaceAll(s, `"`, `""`))
			b.WriteByte('"')
		} else {
			b.WriteString(s)
		}
	}
	return b.String()
}

// MappingError reports a malformed mapping string or JSON path. Item is the
// offending item ("who=x", or the JSON path), Reason says what is wrong.
type MappingError struct {
	Item   string
	Reason string
}

// Error renders `mapping "ITEM": REASON`.
func (e *MappingError) Error() string {
	return "mapping " + strconv.Quote(e.Item) + ": " + e.Reason
}

// fieldByName resolves a manifest field name; "where" is accepted as the ERC
// name of url.
func fieldByName(name string) (Field, bool) {
	for f, n := range fieldNames {
		if n == name {
			return Field(f), true
		}
	}
	if name == "where" {
		return FieldURL, true
	}
	return 0, false
}

// ParseMapping parses a mapping option such as
//
//	request_id=acno,what=title,who=all_artists,when=dateText,url=url
//
// Items are FIELD=SOURCE separated by commas. FIELD is one of request_id,
// url (alias where), who, what, when, commitment. SOURCE is taken verbatim
// after trimming surrounding spaces (so `url=Digital Collections URL` works);
// a source containing a comma or a double quote is written in double quotes
// with "" for a quote. An empty SOURCE unmaps the field (always absent).
// Fields not named keep their default source. The empty string yields the
// default mapping.
//
// Errors are *MappingError: an item without "=", an unknown or repeated
// field, an unmapped request_id, a bad quoted source. JSON path syntax is
// checked when a JSON manifest is opened, since a CSV header may contain
// "[" or ".".
func ParseMapping(s string) (Mapping, error) {
	var m Mapping
	if strings.TrimSpace(s) == "" {
		return m, nil
	}
	rest := s
	for {
		item, source, next, err := nextMappingItem(rest)
		if err != nil {
			return Mapping{}, err
		}
		name := strings.TrimSpace(item)
		f, ok := fieldByName(name)
		if !ok {
			return Mapping{}, &MappingError{Item: strings.TrimSpace(rest[:len(rest)-len(next)]),
				Reason: "unknown field " + strconv.Quote(name) + " (want request_id, url, who, what, when or commitment)"}
		}
		if m.explicit&f.Bit() != 0 {
			return Mapping{}, &MappingError{Item: name, Reason: "field given twice"}
		}
		if f == FieldRequestID && source == "" {
			return Mapping{}, &MappingError{Item: name + "=", Reason: "request_id cannot be unmapped"}
		}
		m = m.With(f, source)
		if next == "" {
			break
		}
		rest = next[1:] // skip the comma
	}
	return m, nil
}

// nextMappingItem splits the first FIELD=SOURCE item off s. It returns the
// field text, the unquoted source, and the remainder starting at the
// separating comma ("" at the end).
func nextMappingItem(s string) (field, source, rest string, err error) {
	eq := strings.IndexByte(s, '=')
	comma := strings.IndexByte(s, ',')
	if eq < 0 || (comma >= 0 && comma < eq) {
		item := s
		if comma >= 0 {
			item = s[:comma]
		}
		item = strings.TrimSpace(item)
		if item == "" {
			return "", "", "", &MappingError{Item: s, Reason: "empty item"}
		}
		return "", "", "", &MappingError{Item: item, Reason: `want FIELD=SOURCE`}
	}
	field = s[:eq]
	v := s[eq+1:]
	trimmed := strings.TrimLeft(v, " \t")
	if strings.HasPrefix(trimmed, `"`) {
		var b strings.Builder
		i := 1
		for {
			if i >= len(trimmed) {
				return "", "", "", &MappingError{Item: s, Reason: "unterminated quoted source"}
			}
			c := trimmed[i]
			if c == '"' {
				if i+1 < len(trimmed) && trimmed[i+1] == '"' {
					b.WriteByte('"')
					i += 2
					continue
				}
				i++
				break
			}
			b.WriteByte(c)
			i++
		}
		after := strings.TrimLeft(trimmed[i:], " \t")
		if after != "" && after[0] != ',' {
			return "", "", "", &MappingError{Item: s, Reason: "text after quoted source"}
		}
		if b.Len() == 0 {
			return "", "", "", &MappingError{Item: s[:eq+1+len(v)-len(after)], Reason: `empty quoted source; write FIELD= to unmap`}
		}
		return field, b.String(), after, nil
	}
	if c := strings.IndexByte(v, ','); c >= 0 {
		source, rest = v[:c], v[c:]
	} else {
		source = v
	}
	if strings.ContainsRune(source, '"') {
		return "", "", "", &MappingError{Item: s[:eq+1+len(source)], Reason: "a double quote is only allowed around the whole source"}
	}
	return field, strings.TrimSpace(source), rest, nil
}

// pathStep is one step of a JSON path: a key (key != "" or isKey), an index
// (index >= 0), or every element (all).
type pathStep struct {
	key   string
	index int
	all   bool
	isKey bool
}

// parseJSONPath parses a JSON path of the Mapping syntax: segments separated
// by ".", each a non-empty key followed by any number of "[N]" or "[]". Keys
// cannot contain ".", "[" or "]". Errors are *MappingError.
func parseJSONPath(p string) ([]pathStep, error) {
	if p == "" {
		return nil, &MappingError{Item: p, Reason: "empty JSON path"}
	}
	var steps []pathStep
	i := 0
	for {
		start := i
		for i < len(p) && p[i] != '.' && p[i] != '[' && p[i] != ']' {
			i++
		}
		if i == start {
			return nil, &MappingError{Item: p, Reason: "empty key at byte " + strconv.Itoa(start+1)}
		}
		steps = append(steps, pathStep{key: p[start:i], index: -1, isKey: true})
		for i < len(p) && p[i] == '[' {
			j := strings.IndexByte(p[i:], ']')
			if j < 0 {
				return nil, &MappingError{Item: p, Reason: "unclosed [ at byte " + strconv.Itoa(i+1)}
			}
			inner := p[i+1 : i+j]
			if inner == "" {
				steps = append(steps, pathStep{index: -1, all: true})
			} else {
				n, err := strconv.Atoi(inner)
				if err != nil || n < 0 || inner[0] == '+' || inner[0] == '-' {
					return nil, &MappingError{Item: p, Reason: "index " + strconv.Quote(inner) + " is not a non-negative integer"}
				}
				steps = append(steps, pathStep{index: n})
			}
			i += j + 1
		}
		if i == len(p) {
			return steps, nil
		}
		if p[i] != '.' {
			return nil, &MappingError{Item: p, Reason: "unexpected " + strconv.Quote(p[i:i+1]) + " at byte " + strconv.Itoa(i+1)}
		}
		i++
		if i == len(p) {
			return nil, &MappingError{Item: p, Reason: "path ends with ."}
		}
	}
}
