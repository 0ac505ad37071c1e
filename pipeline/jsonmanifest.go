package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/arkhe-ledger/arkhe/textin"
)

// jsonManifest reads a JSON Lines manifest: one JSON object per line, blank
// lines skipped, a UTF-8 BOM at the start of the file tolerated (one at the
// start of a later line is a *RowError), line ends by the rule of
// NewLineEndReader (LF, CRLF or CR-only). A compressed file that breaks
// (*DecodeError) yields its whole lines, then one *RowError where it breaks,
// then io.EOF. Each line is scanned once by
// a small hand-written scanner that checks the JSON syntax of the whole line
// and decodes only the values the mapping asks for (no map[string]any, no
// reflection). A line that is not valid JSON, not an object, longer than
// MaxRecordBytes, or whose mapped value is an object or array is a *RowError;
// so is a line where a key on a mapped path (request_id's key, or "who" and
// "name" for who=who[].name) is given twice in one object, naming the key. A
// repeated key that no mapping reads is ignored, like every unmapped key.
type jsonManifest struct {
	path   string
	closer io.Closer
	br     *bufio.Reader
	root   *jnode
	long   []byte // buffer for lines longer than br's buffer
	line   int    // physical lines read so far
	rec    int    // records (non-blank lines) read so far
	err    error  // sticky: io.EOF or a fatal error
	closed bool
	sc     jscan
	max    int // longest accepted line in bytes (MaxRecordBytes; tests lower it)
}

// jnode is one node of the compiled mapping: the JSON value at a path prefix.
type jnode struct {
	keys   []jchild // object members to descend into
	index  []jindex // array elements to descend into
	all    *jnode   // every array element ([])
	fields uint8    // bitmask of the Fields whose value is this node
}

type jchild struct {
	name string
	n    *jnode
}

type jindex struct {
	i int
	n *jnode
}

// compileJSONMapping builds the path tree of m. Errors are *ManifestError
// wrapping *MappingError.
func compileJSONMapping(path string, m Mapping) (*jnode, error) {
	root := &jnode{}
	for f := range Field(NumFields) {
		src := m.Source(f)
		if src == "" {
			if f == FieldRequestID {
				return nil, &ManifestError{Loc: textin.Location{File: path}, Op: "open",
					Err: &MappingError{Item: "request_id=", Reason: "request_id is not mapped"}}
			}
			continue
		}
		steps, err := parseJSONPath(src)
		if err != nil {
			return nil, &ManifestError{Loc: textin.Location{File: path}, Op: "open", Err: err}
		}
		n := root
		for _, st := range steps {
			n = n.child(st)
		}
		n.fields |= f.Bit()
	}
	return root, nil
}

// child returns (creating) the node reached from n by step st.
func (n *jnode) child(st pathStep) *jnode {
	switch {
	case st.isKey:
		for _, c := range n.keys {
			if c.name == st.key {
				return c.n
			}
		}
		c := &jnode{}
		n.keys = append(n.keys, jchild{st.key, c})
		return c
	case st.all:
		if n.all == nil {
			n.all = &jnode{}
		}
		return n.all
	default:
		for _, c := range n.index {
			if c.i == st.index {
				return c.n
			}
		}
		c := &jnode{}
		n.index = append(n.index, jindex{st.index, c})
		return c
	}
}

func newJSONManifest(path string, src io.Reader, closer io.Closer, m Mapping) (*jsonManifest, error) {
	root, err := compileJSONMapping(path, m)
	if err != nil {
		return nil, err
	}
	return &jsonManifest{path: path, closer: closer, br: bufio.NewReaderSize(src, 256<<10), root: root, max: MaxRecordBytes}, nil
}

// Next implements Reader.
func (r *jsonManifest) Next(ctx context.Context) (Record, error) {
	if r.err != nil {
		return Record{}, r.err
	}
	if err := ctx.Err(); err != nil {
		return Record{}, err
	}
	for {
		line, tooLong, err := r.readLine()
		if err != nil {
			var de *textin.DecodeError
			switch {
			case errors.Is(err, io.EOF):
				r.err = io.EOF
			case errors.As(err, &de):
				// The part of a line before the break is not a line: it is dropped.
				r.err = io.EOF
				r.rec++
				loc := textin.Location{File: r.path, Line: int(de.Lines) + 1, Record: r.rec}
				return Record{Source: loc}, &textin.RowError{Loc: loc, Reason: de.Finding(r.rec - 1)}
			default:
				r.err = &ManifestError{Loc: textin.Location{File: r.path, Line: r.line + 1}, Op: "read", Err: err}
			}
			return Record{}, r.err
		}
		r.line++
		if r.line == 1 {
			line = bytes.TrimPrefix(line, []byte(byteOrderMark))
		} else if bytes.HasPrefix(line, []byte(byteOrderMark)) {
			r.rec++
			loc := textin.Location{File: r.path, Line: r.line, Record: r.rec}
			return Record{Source: loc}, &textin.RowError{Loc: loc,
				Reason: "line starts with a byte order mark (U+FEFF): it belongs only at the very start of a file (were files joined together?)"}
		}
		if tooLong {
			r.rec++
			loc := textin.Location{File: r.path, Line: r.line, Record: r.rec}
			return Record{Source: loc}, &textin.RowError{Loc: loc, Reason: "line longer than " + strconv.Itoa(r.max) + " bytes"}
		}
		if isBlank(line) {
			continue
		}
		r.rec++
		loc := textin.Location{File: r.path, Line: r.line, Record: r.rec}
		rec, rerr := r.sc.record(line, r.root)
		rec.Source = loc
		if rerr != nil {
			rerr.Loc = loc
			return rec, rerr
		}
		return rec, nil
	}
}

// readLine returns the next line without its line end. tooLong reports a line
// over MaxRecordBytes, which was consumed and discarded. err is io.EOF at the
// end, or the read error.
func (r *jsonManifest) readLine() (line []byte, tooLong bool, err error) {
	line, err = r.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		r.long = append(r.long[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = r.br.ReadSlice('\n')
			if tooLong || len(r.long)+len(line) > r.max {
				tooLong = true
				r.long = r.long[:0]
				continue
			}
			r.long = textin.AppendDoubling(r.long, line, r.max+2)
		}
		line = r.long
		if cap(r.long) > 4<<20 {
			r.long = nil // do not keep a huge buffer after one huge line
		}
	}
	switch {
	case err == nil:
	case errors.Is(err, io.EOF):
		if len(line) == 0 && !tooLong {
			return nil, false, io.EOF
		}
		// The last line has no line end: a record all the same.
	default:
		return nil, false, err
	}
	line = bytes.TrimSuffix(line, []byte{'\n'})
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if len(line) > r.max {
		tooLong = true
	}
	return line, tooLong, nil
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// Close implements Reader.
func (r *jsonManifest) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	if r.err == nil {
		r.err = &ManifestError{Loc: textin.Location{File: r.path}, Op: "read", Err: errors.New("reader closed")}
	}
	return r.closer.Close()
}

// jscan scans one JSON line. Its buffers are reused between lines.
type jscan struct {
	data  []byte
	pos   int
	depth int
	vals  [NumFields][]byte
	has   uint8
	key   []byte // scratch for keys with escapes
}

// jsonError is a scan failure: a syntax error (field "") or a mapped value of
// the wrong shape (field set).
type jsonError struct {
	field  string
	reason string
}

// record scans line with the mapping tree root and returns the record, or a
// *RowError without its location.
func (s *jscan) record(line []byte, root *jnode) (Record, *textin.RowError) {
	s.data, s.pos, s.depth, s.has = line, 0, 0, 0
	for f := range s.vals {
		s.vals[f] = s.vals[f][:0]
	}
	s.ws()
	if s.pos >= len(s.data) || s.data[s.pos] != '{' {
		return Record{}, &textin.RowError{Reason: "line is not a JSON object"}
	}
	if je := s.object(root); je != nil {
		return s.partial(), je.rowError()
	}
	s.ws()
	if s.pos != len(s.data) {
		return s.partial(), (&jsonError{reason: s.at("data after the JSON object")}).rowError()
	}
	// One allocation for all values of the record.
	total := 0
	for f := range s.vals {
		total += len(s.vals[f])
	}
	var b strings.Builder
	b.Grow(total)
	for f := range s.vals {
		b.Write(s.vals[f])
	}
	all := b.String()
	var rec Record
	off := 0
	for f := range Field(NumFields) {
		n := len(s.vals[f])
		if s.has&f.Bit() != 0 {
			rec.Set(f, all[off:off+n])
		}
		off += n
	}
	return rec, nil
}

// partial returns a record holding only the request ID, if it was decoded
// before the line turned out bad (for the reject file).
func (s *jscan) partial() Record {
	var rec Record
	if s.has&HasRequestID != 0 {
		rec.Set(FieldRequestID, string(s.vals[FieldRequestID]))
	}
	return rec
}

func (je *jsonError) rowError() *textin.RowError {
	return &textin.RowError{Field: je.field, Reason: je.reason}
}

// at formats reason with the current byte offset (1-based).
func (s *jscan) at(reason string) string {
	return "invalid JSON at byte " + strconv.Itoa(s.pos+1) + ": " + reason
}

func (s *jscan) syntax(reason string) *jsonError { return &jsonError{reason: s.at(reason)} }

func (s *jscan) ws() { s.pos = textin.JSONSpaceEnd(s.data, s.pos) }

// value scans one JSON value at s.pos. n is the mapping node for this value
// (nil: skip it, checking syntax only).
func (s *jscan) value(n *jnode) *jsonError {
	if s.pos >= len(s.data) {
		return s.syntax("unexpected end of line")
	}
	c := s.data[s.pos]
	switch {
	case c == '{':
		if n != nil && n.fields != 0 {
			return s.shape(n, "an object")
		}
		return s.object(n)
	case c == '[':
		if n != nil && n.fields != 0 {
			return s.shape(n, "an array")
		}
		return s.array(n)
	case c == '"':
		if n == nil || n.fields == 0 {
			_, err := s.str(nil, false)
			return err
		}
		// Decode into the first field's buffer, then copy to the others.
		var first Field
		for f := range Field(NumFields) {
			if n.fields&f.Bit() != 0 {
				first = f
				break
			}
		}
		buf := s.vals[first]
		mark := len(buf)
		if s.has&first.Bit() != 0 {
			buf = append(buf, "; "...)
		}
		vstart := len(buf)
		buf, err := s.str(buf, true)
		if err != nil {
			return err
		}
		if len(buf) == vstart { // empty string: absent
			s.vals[first] = buf[:mark]
			return nil
		}
		s.vals[first] = buf
		s.has |= first.Bit()
		if n.fields != first.Bit() {
			s.addOthers(n.fields&^first.Bit(), buf[vstart:])
		}
		return nil
	case c == '-' || (c >= '0' && c <= '9'):
		start := s.pos
		if err := s.number(); err != nil {
			return err
		}
		if n != nil && n.fields != 0 {
			s.addOthers(n.fields, s.data[start:s.pos])
		}
		return nil
	case c == 't':
		return s.literal("true", n)
	case c == 'f':
		return s.literal("false", n)
	case c == 'n':
		return s.literal("null", nil) // null: absent
	}
	return s.syntax("unexpected character " + strconv.QuoteRune(rune(c)))
}

// addOthers appends v as a value of every field in mask.
func (s *jscan) addOthers(mask uint8, v []byte) {
	for f := range Field(NumFields) {
		if mask&f.Bit() == 0 {
			continue
		}
		if s.has&f.Bit() != 0 {
			s.vals[f] = append(s.vals[f], "; "...)
		}
		s.vals[f] = append(s.vals[f], v...)
		s.has |= f.Bit()
	}
}

// shape reports a mapped value that is an object or array.
func (s *jscan) shape(n *jnode, what string) *jsonError {
	var f Field
	for f = range Field(NumFields) {
		if n.fields&f.Bit() != 0 {
			break
		}
	}
	reason := "value is " + what + ", not text"
	if what == "an array" {
		reason += "; map it as PATH[] (all, joined) or PATH[0] (first)"
	}
	return &jsonError{field: f.String(), reason: reason}
}

func (s *jscan) literal(word string, n *jnode) *jsonError {
	if len(s.data)-s.pos < len(word) || string(s.data[s.pos:s.pos+len(word)]) != word {
		return s.syntax("invalid literal")
	}
	if n != nil && n.fields != 0 {
		s.addOthers(n.fields, s.data[s.pos:s.pos+len(word)])
	}
	s.pos += len(word)
	return nil
}

// number scans a JSON number (RFC 8259 §6).
func (s *jscan) number() *jsonError {
	end, ok := textin.JSONNumberEnd(s.data, s.pos)
	s.pos = end
	if !ok {
		return s.syntax("invalid number")
	}
	return nil
}

// object scans an object at s.pos ('{'). A mapped key given twice is an
// error (RFC 8259 §4 leaves its meaning open; arkhe does not guess).
func (s *jscan) object(n *jnode) *jsonError {
	s.depth++
	if s.depth > textin.MaxJSONDepth {
		return s.syntax("nested deeper than " + strconv.Itoa(textin.MaxJSONDepth))
	}
	s.pos++         // '{'
	var seen uint64 // n.keys seen; a node has at most NumFields keys
	s.ws()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		s.depth--
		return nil
	}
	for {
		s.ws()
		if s.pos >= len(s.data) || s.data[s.pos] != '"' {
			return s.syntax("want a string key")
		}
		var child *jnode
		if n != nil && len(n.keys) > 0 {
			key, err := s.keyBytes()
			if err != nil {
				return err
			}
			for i, c := range n.keys {
				if string(key) == c.name {
					if seen&(1<<i) != 0 {
						return &jsonError{reason: "key " + strconv.Quote(c.name) + " given twice"}
					}
					seen |= 1 << i
					child = c.n
					break
				}
			}
		} else if _, err := s.str(nil, false); err != nil {
			return err
		}
		s.ws()
		if s.pos >= len(s.data) || s.data[s.pos] != ':' {
			return s.syntax("want ':' after key")
		}
		s.pos++
		s.ws()
		if err := s.value(child); err != nil {
			return err
		}
		s.ws()
		if s.pos >= len(s.data) {
			return s.syntax("unexpected end of line in object")
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
		case '}':
			s.pos++
			s.depth--
			return nil
		default:
			return s.syntax("want ',' or '}'")
		}
	}
}

// keyBytes scans a key string and returns its decoded bytes, valid until the
// next call (a subslice of the line when it has no escapes).
func (s *jscan) keyBytes() ([]byte, *jsonError) {
	start := s.pos + 1
	i := start
	for i < len(s.data) && plainStringByte[s.data[i]] {
		i++
	}
	if i < len(s.data) && s.data[i] == '"' {
		s.pos = i + 1
		return s.data[start:i], nil
	}
	var err *jsonError
	s.key, err = s.str(s.key[:0], true)
	return s.key, err
}

// array scans an array at s.pos ('['), descending into the elements n asks
// for (by index, and all of them for []).
func (s *jscan) array(n *jnode) *jsonError {
	s.depth++
	if s.depth > textin.MaxJSONDepth {
		return s.syntax("nested deeper than " + strconv.Itoa(textin.MaxJSONDepth))
	}
	s.pos++ // '['
	s.ws()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
		s.depth--
		return nil
	}
	for i := 0; ; i++ {
		s.ws()
		var a, b *jnode
		if n != nil {
			a = n.all
			for _, c := range n.index {
				if c.i == i {
					if a == nil {
						a = c.n
					} else {
						b = c.n
					}
					break
				}
			}
		}
		if b != nil {
			// Two paths want this element: scan it once per path.
			start, depth := s.pos, s.depth
			if err := s.value(a); err != nil {
				return err
			}
			s.pos, s.depth = start, depth
			a = b
		}
		if err := s.value(a); err != nil {
			return err
		}
		s.ws()
		if s.pos >= len(s.data) {
			return s.syntax("unexpected end of line in array")
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
		case ']':
			s.pos++
			s.depth--
			return nil
		default:
			return s.syntax("want ',' or ']'")
		}
	}
}

// plainStringByte marks bytes that stand for themselves inside a JSON string.
var plainStringByte = func() (t [256]bool) {
	for i := range t {
		t[i] = i >= 0x20 && i != '"' && i != '\\'
	}
	return t
}()

// str scans a string at s.pos ('"'). With decode it appends the unescaped
// value to dst and returns it. Raw control characters and bad escapes are
// errors, as is a \u escape that is a lone UTF-16 surrogate (it has no UTF-8
// form, and arkhe never substitutes characters). Invalid UTF-8 bytes are
// passed through for Validate to reject with the field's name.
func (s *jscan) str(dst []byte, decode bool) ([]byte, *jsonError) {
	d := s.data
	i := s.pos + 1
	for {
		start := i
		for i < len(d) && plainStringByte[d[i]] {
			i++
		}
		if decode {
			dst = append(dst, d[start:i]...)
		}
		if i >= len(d) {
			s.pos = i
			return dst, s.syntax("unterminated string")
		}
		switch c := d[i]; {
		case c == '"':
			s.pos = i + 1
			return dst, nil
		case c < 0x20:
			s.pos = i
			return dst, s.syntax("control character in string")
		}
		// Backslash escape.
		if i+1 >= len(d) {
			s.pos = i
			return dst, s.syntax("unterminated escape")
		}
		e := d[i+1]
		i += 2
		var r byte
		switch e {
		case '"', '\\', '/':
			r = e
		case 'b':
			r = '\b'
		case 'f':
			r = '\f'
		case 'n':
			r = '\n'
		case 'r':
			r = '\r'
		case 't':
			r = '\t'
		case 'u':
			u, ok := hex4(d, i)
			if !ok {
				s.pos = i - 2
				return dst, s.syntax("invalid \\u escape")
			}
			i += 4
			ru := rune(u)
			if utf16.IsSurrogate(ru) {
				u2, ok2 := uint16(0), false
				if i+6 <= len(d) && d[i] == '\\' && d[i+1] == 'u' {
					u2, ok2 = hex4(d, i+2)
				}
				dec := utf16.DecodeRune(ru, rune(u2))
				if !ok2 || dec == utf8.RuneError {
					s.pos = i - 6
					return dst, s.syntax("\\u escape is a lone UTF-16 surrogate")
				}
				ru = dec
				i += 6
			}
			if decode {
				dst = utf8.AppendRune(dst, ru)
			}
			continue
		default:
			s.pos = i - 2
			return dst, s.syntax("invalid escape \\" + string(rune(e)))
		}
		if decode {
			dst = append(dst, r)
		}
	}
}

// hex4 parses four hex digits at d[i:].
func hex4(d []byte, i int) (uint16, bool) {
	if i+4 > len(d) {
		return 0, false
	}
	var v uint16
	for _, c := range d[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | uint16(c)
	}
	return v, true
}
