package legacy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// djangoObject is one object of a Django dumpdata stream:
// {"model": "ark.ark", "pk": …, "fields": {…}} (legacy-formats.md §1.6).
type djangoObject struct {
	Model  string
	PK     json.RawMessage
	Fields fieldList
}

// jsonField is one member of an object: its decoded key and raw value.
type jsonField struct {
	key string
	raw json.RawMessage
}

// fieldList holds an object's members in source order, keys unique (a
// repeated key keeps its last value, as encoding/json does). Records have a
// dozen fields, so a slice beats a map.
type fieldList []jsonField

// get returns the raw value of key, nil if absent.
func (l fieldList) get(key string) json.RawMessage {
	for i := range l {
		if l[i].key == key {
			return l[i].raw
		}
	}
	return nil
}

// set adds or replaces key.
func (l fieldList) set(key string, raw json.RawMessage) fieldList {
	for i := range l {
		if l[i].key == key {
			l[i].raw = raw
			return l
		}
	}
	return append(l, jsonField{key, raw})
}

// djangoMapper turns one object into an Item or a *RecordError (whose Loc
// the mapper fills from loc).
type djangoMapper func(o *djangoObject, loc Location) (Item, error)

// djangoReader streams Django dumpdata output: a top-level JSON array split
// into elements by arrayFramer (never the whole array at once), or
// JSON Lines (one object per line, `dumpdata --format jsonl`, EZID's
// db.*.jsonl). The mode is chosen by the first non-blank byte.
type djangoReader struct {
	name    string
	br      *bufio.Reader
	mapper  djangoMapper
	mode    byte // '[' array, '{' lines, 0 undecided
	fr      *arrayFramer
	lr      *lineReader
	records int
	done    bool
}

func newDjangoReader(name string, br *bufio.Reader, m djangoMapper) *djangoReader {
	return &djangoReader{name: name, br: br, mapper: m}
}

func (r *djangoReader) start() error {
	c, err := firstNonSpace(r.br)
	if err != nil {
		if err == io.EOF {
			return &TruncatedError{Loc: Location{File: r.name, Line: 1}, Reason: "empty file: no JSON array or JSON Lines"}
		}
		return err
	}
	switch c {
	case '[':
		r.mode = '['
		r.fr = newArrayFramer(r.br)
	case '{':
		r.mode = '{'
		r.lr = newLineReader(r.br)
	default:
		return fmt.Errorf("%s: starts with %q, not a JSON array or JSON Lines of Django objects: %w", r.name, c, ErrUnknownFormat)
	}
	return nil
}

// firstNonSpace peeks (without consuming) at the first byte that is not
// JSON white space within the reader's buffer (64 KiB).
func firstNonSpace(br *bufio.Reader) (byte, error) {
	for i := 1; ; i++ {
		b, err := br.Peek(i)
		if len(b) < i {
			if err == nil || err == bufio.ErrBufferFull {
				err = errors.New("no JSON value within the first 64 KiB")
			}
			return 0, err
		}
		switch c := b[i-1]; c {
		case ' ', '\t', '\r', '\n':
		default:
			return c, nil
		}
	}
}

func (r *djangoReader) step() (Item, error) {
	if r.done {
		return Item{}, io.EOF
	}
	if r.mode == 0 {
		if err := r.start(); err != nil {
			r.done = true
			return Item{}, err
		}
	}
	var raw []byte
	var loc Location
	if r.mode == '[' {
		b, line, err := r.fr.next()
		if err != nil {
			r.done = true
			switch {
			case err == io.EOF:
				return Item{}, io.EOF
			case err == errArrayUnclosed:
				return Item{}, &TruncatedError{Loc: Location{File: r.name, Line: r.fr.lastLine(), Record: r.records},
					Reason: fmt.Sprintf("JSON array not closed: file ends after record %d without ]", r.records)}
			case err == errJSONEOF:
				return Item{}, &TruncatedError{Loc: Location{File: r.name, Line: r.fr.lastLine(), Record: r.records + 1},
					Reason: fmt.Sprintf("file ends inside record %d (which starts on line %d); that record is not yielded", r.records+1, line)}
			}
			return Item{}, fmt.Errorf("%s: %w", r.name, err)
		}
		r.records++
		loc = Location{File: r.name, Line: line, Record: r.records}
		o, err := parseDumpObject(b)
		if err != nil {
			return Item{}, &RecordError{Loc: loc, Field: "object", Reason: "not a Django dumpdata object {model, pk, fields}", Raw: clipRaw(string(b)), Err: err}
		}
		return r.mapObject(o, loc, b)
	}
	{
		for {
			text, n, terminated, err := r.lr.next()
			if err == io.EOF {
				r.done = true
				return Item{}, io.EOF
			}
			if err == errLineTooLong {
				r.records++
				return Item{}, &RecordError{Loc: Location{File: r.name, Line: n, Record: r.records}, Field: "line",
					Reason: fmt.Sprintf("line longer than %d octets", MaxLineBytes), Err: err}
			}
			if err != nil {
				r.done = true
				return Item{}, fmt.Errorf("%s:line %d: %w", r.name, n, err)
			}
			if len(bytes.TrimSpace(text)) == 0 {
				continue
			}
			r.records++
			loc = Location{File: r.name, Line: n, Record: r.records}
			if !terminated && !json.Valid(text) {
				r.done = true
				return Item{}, &TruncatedError{Loc: loc, Reason: fmt.Sprintf("the last line (%d) is cut: incomplete JSON, no line end; that record is not yielded", n)}
			}
			raw = text
			break
		}
	}
	o, err := parseDumpObject(raw)
	if err != nil {
		return Item{}, &RecordError{Loc: loc, Field: "object", Reason: "not a Django dumpdata object {model, pk, fields}", Raw: clipRaw(string(raw)), Err: err}
	}
	return r.mapObject(o, loc, raw)
}

// mapObject checks the record's bytes and hands it to the mapper; raw is
// the record's source text. Nothing of a secret-bearing model is copied
// into an error.
func (r *djangoReader) mapObject(o *djangoObject, loc Location, raw []byte) (Item, error) {
	rawText := func() string {
		if isSecretModel(o.Model) {
			return ""
		}
		return clipRaw(string(raw))
	}
	if !utf8.Valid(raw) {
		// encoding/json would turn the bad bytes into U+FFFD silently (§6.7).
		return Item{}, &RecordError{Loc: loc, Field: "object", Reason: "record is not valid UTF-8 (kept raw for the reject file)", Raw: rawText()}
	}
	it, err := r.mapper(o, loc)
	if err != nil {
		var re *RecordError
		if errors.As(err, &re) {
			re.Loc = loc
			if re.Raw == "" {
				re.Raw = rawText()
			}
		}
		return Item{}, err
	}
	return it, nil
}

func noControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 {
			return false
		}
	}
	return true
}

// jsonText renders a JSON scalar as text: a string unquoted, a number or
// boolean literally ("12345", "true"), null as "" with null=true; an object
// or array is returned as its compact JSON text.
func jsonText(raw json.RawMessage) (s string, null bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", true, nil
	}
	switch raw[0] {
	case '"':
		if len(raw) >= 2 && raw[len(raw)-1] == '"' && bytes.IndexByte(raw[1:len(raw)-1], '\\') < 0 &&
			bytes.IndexByte(raw[1:len(raw)-1], '"') < 0 && utf8.Valid(raw) && noControl(raw) {
			return string(raw[1 : len(raw)-1]), false, nil
		}
		err = json.Unmarshal(raw, &s)
		return s, false, err
	case '{', '[':
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			return "", false, err
		}
		return b.String(), false, nil
	}
	if !json.Valid(raw) {
		return "", false, fmt.Errorf("invalid JSON value %q", clip(string(raw), 40))
	}
	return string(raw), false, nil
}
