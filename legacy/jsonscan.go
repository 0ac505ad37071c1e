package legacy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/arkhe-ledger/arkhe/textin"
)

// This file holds a small JSON framer and parser for Django dumpdata
// streams. encoding/json needs several passes per record (find the end,
// validate, decode, re-decode fields); dumpdata objects are flat, so one
// framing pass (skipping over strings with IndexByte when the element is
// already buffered) plus one parsing pass is enough. The parser runs over
// one string per record, so every plain field value it yields is a
// substring of it, not a copy. It is strict JSON (RFC 8259) and is fuzzed
// against encoding/json (FuzzDumpObject); the two framing paths against
// each other (FuzzArrayFramer). Its white space, numbers and depth bound are
// textin's (JSONSpaceEnd, JSONNumberEnd, MaxJSONDepth), shared with the JSON
// Lines manifest scanner; textin/jsonlex.go says why the rest differs.

// errJSONEOF means the input ended inside a value.
var errJSONEOF = errors.New("input ends inside a JSON value")

// arrayFramer splits a top-level JSON array into its elements without
// parsing them: it tracks strings and nesting only. Lines are counted so
// each element's first line is known.
type arrayFramer struct {
	br      *bufio.Reader
	line    int  // current line, 1-based
	last    byte // last byte consumed
	buf     []byte
	started bool
	ended   bool
	noWhole bool // tests: frame byte by byte only (FuzzArrayFramer compares both paths)
	max     int  // longest element kept, in octets (maxGroupBytes; tests lower it)
}

// errArrayUnclosed: the input ended between elements, before `]`.
var errArrayUnclosed = errors.New("JSON array not closed")

// errElementTooLong: one array element is longer than the framer's bound; it was skipped to
// its end, and the next call frames the element after it.
var errElementTooLong = errors.New("array element too long")

func newArrayFramer(br *bufio.Reader) *arrayFramer {
	return &arrayFramer{br: br, line: 1, max: maxGroupBytes}
}

// lastLine is the number of the last line that has content.
func (f *arrayFramer) lastLine() int {
	if f.last == '\n' && f.line > 1 {
		return f.line - 1
	}
	return f.line
}

// skip consumes JSON white space (and commas, when commas is set), counting
// lines; it returns the next byte without consuming it.
func (f *arrayFramer) skip(commas bool) (byte, error) {
	for {
		c, err := f.br.ReadByte()
		if err != nil {
			return 0, err
		}
		switch c {
		case ' ', '\t', '\r', '\n':
		case ',':
			if !commas {
				_ = f.br.UnreadByte()
				return c, nil
			}
		default:
			_ = f.br.UnreadByte()
			return c, nil
		}
		f.last = c
		if c == '\n' {
			f.line++
		}
	}
}

// next returns the bytes of the next element (valid until the next call)
// and the line it starts on; io.EOF after `]`; errArrayUnclosed when input
// ends between elements; errJSONEOF when it ends inside one; errElementTooLong
// for an element longer than f.max octets, which is framed to its end without
// being kept (reading goes on after it); a syntax error when the stream is not
// an array.
func (f *arrayFramer) next() ([]byte, int, error) {
	if f.ended {
		return nil, f.line, io.EOF
	}
	if !f.started {
		c, err := f.skip(false)
		if err != nil {
			return nil, f.line, errArrayUnclosed
		}
		if c != '[' {
			return nil, f.line, fmt.Errorf("line %d: expected [ to open the array, found %q", f.line, c)
		}
		f.last, _ = f.br.ReadByte()
		f.started = true
	}
	c, err := f.skip(true)
	if err == io.EOF {
		return nil, f.line, errArrayUnclosed
	}
	if err != nil {
		return nil, f.line, err
	}
	if c == ']' {
		f.last, _ = f.br.ReadByte()
		f.ended = true
		return nil, f.line, io.EOF
	}
	start := f.line
	if !f.noWhole {
		if b := f.whole(); b != nil {
			return b, start, nil
		}
	}
	f.buf = f.buf[:0]
	var kind byte // '{' container, '"' string, 'l' literal
	depth, inStr, esc := 0, false, false
	tooLong := false
	emit := func(chunk []byte, n int) ([]byte, int, error) {
		if n > 0 {
			f.last = chunk[n-1]
		}
		if tooLong || len(f.buf)+n > f.max {
			_, _ = f.br.Discard(n)
			return nil, start, errElementTooLong
		}
		f.buf = append(f.buf, chunk[:n]...)
		_, _ = f.br.Discard(n)
		return f.buf, start, nil
	}
	for {
		if f.br.Buffered() == 0 {
			if _, perr := f.br.Peek(1); perr != nil {
				if perr == io.EOF {
					if kind == 'l' && !tooLong {
						return f.buf, start, nil
					}
					return nil, start, errJSONEOF
				}
				return nil, start, perr
			}
		}
		chunk, _ := f.br.Peek(f.br.Buffered())
		for i, c := range chunk {
			if c == '\n' {
				f.line++
			}
			if kind == 0 {
				switch c {
				case '{', '[':
					kind, depth = '{', 1
				case '"':
					kind, inStr = '"', true
				default:
					kind = 'l'
				}
				continue
			}
			if inStr {
				switch {
				case esc:
					esc = false
				case c == '\\':
					esc = true
				case c == '"':
					inStr = false
					if kind == '"' {
						return emit(chunk, i+1)
					}
				}
				continue
			}
			switch kind {
			case 'l':
				switch c {
				case ',', ']', '}', ' ', '\t', '\r', '\n':
					if c == '\n' {
						f.line--
					}
					return emit(chunk, i)
				}
			case '{':
				switch c {
				case '"':
					inStr = true
				case '{', '[':
					depth++
				case '}', ']':
					depth--
					if depth == 0 {
						return emit(chunk, i+1)
					}
				}
			}
		}
		if !tooLong {
			f.buf = append(f.buf, chunk...)
			if len(f.buf) > f.max {
				tooLong = true
				f.buf = nil // keep no huge buffer
			}
		}
		f.last = chunk[len(chunk)-1]
		_, _ = f.br.Discard(len(chunk))
	}
}

// whole is next's fast path: when the element at the read position is an
// object or array that ends within the bytes already buffered, it consumes
// it and returns it (valid until the next read of br); otherwise it
// consumes nothing and returns nil, and next frames byte by byte. Both
// paths frame alike: nesting counted over {}[] outside strings, a string
// ending at the first quote not preceded by an odd run of backslashes.
func (f *arrayFramer) whole() []byte {
	chunk, _ := f.br.Peek(f.br.Buffered())
	if len(chunk) == 0 || chunk[0] != '{' && chunk[0] != '[' {
		return nil
	}
	n := containerEnd(chunk)
	if n < 0 {
		return nil
	}
	b := chunk[:n]
	f.line += bytes.Count(b, newline)
	f.last = b[n-1]
	_, _ = f.br.Discard(n)
	return b
}

var newline = []byte{'\n'}

// containerEnd returns the length of the object or array that b starts
// with, or -1 when b ends first. It frames only (strings and nesting);
// the parser validates.
func containerEnd(b []byte) int {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			j := i + 1
			for {
				k := bytes.IndexByte(b[j:], '"')
				if k < 0 {
					return -1
				}
				j += k
				bs := 0
				for m := j - 1; m > i && b[m] == '\\'; m-- {
					bs++
				}
				if bs%2 == 0 {
					break
				}
				j++
			}
			i = j
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}

// jsonParser parses one JSON value held in memory.
type jsonParser struct {
	b string
	i int
}

func (p *jsonParser) errf(format string, a ...any) error {
	return fmt.Errorf("JSON syntax error at octet %d: %s", p.i+1, fmt.Sprintf(format, a...))
}

func (p *jsonParser) ws() { p.i = textin.JSONSpaceEnd(p.b, p.i) }

// value validates the value at p.i and returns its text (a substring of p.b).
func (p *jsonParser) value(depth int) (string, error) {
	if depth > textin.MaxJSONDepth {
		return "", p.errf("nesting deeper than %d", textin.MaxJSONDepth)
	}
	p.ws()
	if p.i >= len(p.b) {
		return "", errJSONEOF
	}
	start := p.i
	var err error
	switch c := p.b[p.i]; {
	case c == '"':
		err = p.skipString()
	case c == '{':
		err = p.object(depth, nil)
	case c == '[':
		err = p.array(depth)
	case c == '-' || c >= '0' && c <= '9':
		err = p.number()
	case c == 't':
		err = p.literal("true")
	case c == 'f':
		err = p.literal("false")
	case c == 'n':
		err = p.literal("null")
	default:
		err = p.errf("unexpected %q", c)
	}
	if err != nil {
		return "", err
	}
	return p.b[start:p.i], nil
}

func (p *jsonParser) literal(w string) error {
	if len(p.b)-p.i < len(w) {
		return errJSONEOF
	}
	if p.b[p.i:p.i+len(w)] != w {
		return p.errf("bad literal")
	}
	p.i += len(w)
	return nil
}

func (p *jsonParser) number() error {
	end, ok := textin.JSONNumberEnd(p.b, p.i)
	p.i = end
	switch {
	case ok:
		return nil
	case end >= len(p.b):
		return errJSONEOF
	}
	return p.errf("bad number")
}

// skipString validates the string at p.i and moves past it.
func (p *jsonParser) skipString() error {
	b := p.b
	i := p.i + 1
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			p.i = i + 1
			return nil
		case c == '\\':
			if i+1 >= len(b) {
				return errJSONEOF
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return errJSONEOF
				}
				for k := i + 2; k < i+6; k++ {
					if !isHex(b[k]) {
						p.i = k
						return p.errf("bad \\u escape")
					}
				}
				i += 6
			default:
				p.i = i
				return p.errf("bad escape \\%c", b[i+1])
			}
		case c < 0x20:
			p.i = i
			return p.errf("control character in string")
		default:
			i++
		}
	}
	return errJSONEOF
}

// str decodes the string at p.i; a string without escapes or non-ASCII
// octets is returned as a substring of p.b (no copy).
func (p *jsonParser) str() (string, error) {
	start := p.i
	if err := p.skipString(); err != nil {
		return "", err
	}
	return unquoteJSON(p.b[start:p.i]), nil
}

// unquoteJSON decodes a validated JSON string literal (quotes included).
// Invalid UTF-8 and lone surrogates become U+FFFD, as encoding/json does.
// A literal without escapes or non-ASCII octets yields a substring of q.
func unquoteJSON(q string) string {
	s := q[1 : len(q)-1]
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			out = utf8.AppendRune(out, r)
			i += size
			continue
		}
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		switch s[i+1] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := rune(hex4(s[i+2 : i+6]))
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
					r2 := rune(hex4(s[i+2 : i+6]))
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						out = utf8.AppendRune(out, d)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
			continue
		default: // " \ /
			out = append(out, s[i+1])
		}
		i += 2
	}
	return string(out)
}

func hex4(b string) int {
	n := 0
	for i := 0; i < len(b); i++ {
		n = n<<4 | int(unhex(b[i]))
	}
	return n
}

// object validates an object; fn, if set, receives each member.
func (p *jsonParser) object(depth int, fn func(key string, raw string) error) error {
	p.i++ // {
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return nil
	}
	for {
		p.ws()
		if p.i >= len(p.b) {
			return errJSONEOF
		}
		if p.b[p.i] != '"' {
			return p.errf("object key expected")
		}
		var key string
		var err error
		if fn != nil {
			key, err = p.str()
		} else {
			err = p.skipString()
		}
		if err != nil {
			return err
		}
		p.ws()
		if p.i >= len(p.b) {
			return errJSONEOF
		}
		if p.b[p.i] != ':' {
			return p.errf("':' expected")
		}
		p.i++
		raw, err := p.value(depth + 1)
		if err != nil {
			return err
		}
		if fn != nil {
			if err := fn(key, raw); err != nil {
				return err
			}
		}
		p.ws()
		if p.i >= len(p.b) {
			return errJSONEOF
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return nil
		default:
			return p.errf("',' or '}' expected")
		}
	}
}

func (p *jsonParser) array(depth int) error {
	p.i++ // [
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return nil
	}
	for {
		if _, err := p.value(depth + 1); err != nil {
			return err
		}
		p.ws()
		if p.i >= len(p.b) {
			return errJSONEOF
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return nil
		default:
			return p.errf("',' or ']' expected")
		}
	}
}

// parseDumpObject parses one dumpdata object {"model", "pk", "fields"}.
// Field values are substrings of b. A later duplicate key wins, as in
// encoding/json. Errors name the octet.
func parseDumpObject(b string) (*djangoObject, error) {
	o := &djangoObject{}
	if err := o.parse(b); err != nil {
		return nil, err
	}
	return o, nil
}

// parse fills o from the dumpdata object b (see parseDumpObject), reusing
// o's field slice.
func (o *djangoObject) parse(b string) error {
	o.Model, o.PK, o.Fields = "", "", o.Fields[:0]
	p := jsonParser{b: b}
	p.ws()
	if p.i >= len(b) {
		return errJSONEOF
	}
	if b[p.i] != '{' {
		return p.errf("a dumpdata record must be an object")
	}
	var seen uint8 // model, pk, fields
	once := func(key string, bit uint8) error {
		if seen&bit != 0 {
			return &dupKeyError{key: key}
		}
		seen |= bit
		return nil
	}
	err := p.object(0, func(key string, raw string) error {
		switch key {
		case "model":
			if err := once(key, 1); err != nil {
				return err
			}
			if raw[0] != '"' {
				if raw == "null" {
					o.Model = ""
					return nil
				}
				return fmt.Errorf("model is not a string")
			}
			o.Model = unquoteJSON(raw)
		case "pk":
			if err := once(key, 2); err != nil {
				return err
			}
			o.PK = raw
		case "fields":
			if err := once(key, 4); err != nil {
				return err
			}
			if raw[0] != '{' {
				if raw == "null" {
					return nil
				}
				return fmt.Errorf("fields is not an object")
			}
			fp := jsonParser{b: raw}
			return fp.object(1, func(k string, v string) error {
				if o.Fields.get(k) != "" {
					return &dupKeyError{key: "fields." + k}
				}
				o.Fields = append(o.Fields, jsonField{k, v})
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return err
	}
	p.ws()
	if p.i != len(b) {
		return p.errf("text after the object")
	}
	return nil
}
