package legacy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/arkhe-ledger/arkhe/textin"
)

// djangoObject is one object of a Django dumpdata stream:
// {"model": "ark.ark", "pk": …, "fields": {…}}.
type djangoObject struct {
	Model  string
	PK     string // raw JSON text of pk
	Fields fieldList
}

// jsonField is one member of an object: its decoded key and raw JSON text.
type jsonField struct {
	key string
	raw string
}

// fieldList holds an object's members in source order, keys unique (a
// repeated key makes the record a *textin.RowError: which of its values is meant
// cannot be known, and encoding/json's "the last one wins" would pick one
// silently). Records have a dozen fields, so a slice beats a map.
type fieldList []jsonField

// dupKeyError is a key given twice in a dumpdata object ("pk") or in its
// fields ("fields.identifier").
type dupKeyError struct{ key string }

func (e *dupKeyError) Error() string { return fmt.Sprintf("key %q given twice", e.key) }

// get returns the raw JSON text of key, "" if absent.
func (l fieldList) get(key string) string {
	for i := range l {
		if l[i].key == key {
			return l[i].raw
		}
	}
	return ""
}

// djangoMapper turns one object into an Item or a *textin.RowError (whose Loc
// the mapper fills from loc).
type djangoMapper func(o *djangoObject, loc textin.Location) (Item, error)

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
	obj     djangoObject // reused: mappers keep no reference to it
}

func newDjangoReader(name string, br *bufio.Reader, m djangoMapper) *djangoReader {
	return &djangoReader{name: name, br: br, mapper: m}
}

func (r *djangoReader) start() error {
	c, err := firstNonSpace(r.br)
	if err != nil {
		if err == io.EOF {
			return &TruncatedError{Loc: textin.Location{File: r.name, Line: 1}, Reason: "empty file: no JSON array or JSON Lines"}
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
	var loc textin.Location
	if r.mode == '[' {
		b, line, err := r.fr.next()
		if err == errElementTooLong {
			r.records++
			return Item{}, &textin.RowError{Loc: textin.Location{File: r.name, Line: line, Record: r.records}, Field: "object",
				Reason: fmt.Sprintf("array element longer than %d octets (skipped; reading goes on after it)", r.fr.max)}
		}
		if err != nil {
			r.done = true
			switch {
			case err == io.EOF:
				return Item{}, io.EOF
			case err == errArrayUnclosed:
				return Item{}, &TruncatedError{Loc: textin.Location{File: r.name, Line: r.fr.lastLine(), Record: r.records},
					Reason: fmt.Sprintf("JSON array not closed: file ends after record %d without ]", r.records)}
			case err == errJSONEOF:
				return Item{}, &TruncatedError{Loc: textin.Location{File: r.name, Line: r.fr.lastLine(), Record: r.records + 1},
					Reason: fmt.Sprintf("file ends inside record %d (which starts on line %d); that record is not yielded", r.records+1, line)}
			}
			return Item{}, fmt.Errorf("%s: %w", r.name, err)
		}
		r.records++
		loc = textin.Location{File: r.name, Line: line, Record: r.records}
		// one copy of the record: every field the mapper keeps is a substring of it
		return r.parseMap(string(b), loc)
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
				return Item{}, &textin.RowError{Loc: textin.Location{File: r.name, Line: n, Record: r.records}, Field: "line",
					Reason: fmt.Sprintf("line longer than %d octets", MaxLineBytes), Err: err}
			}
			if err != nil {
				r.done = true
				return Item{}, fmt.Errorf("%s:%d: %w", r.name, n, err)
			}
			if len(bytes.TrimSpace(text)) == 0 {
				continue
			}
			r.records++
			loc = textin.Location{File: r.name, Line: n, Record: r.records}
			if !terminated && !json.Valid(text) {
				r.done = true
				return Item{}, &TruncatedError{Loc: loc, Reason: fmt.Sprintf("the last line (%d) is cut: incomplete JSON, no line end; that record is not yielded", n)}
			}
			raw = text
			break
		}
	}
	return r.parseMap(string(raw), loc)
}

// parseMap parses one record's source text, checks it and hands it to the
// mapper. Nothing of a secret-bearing model is copied into an error.
func (r *djangoReader) parseMap(raw string, loc textin.Location) (Item, error) {
	o := &r.obj
	err := o.parse(raw)
	rawText := func() string {
		if isSecretModel(o.Model) {
			return ""
		}
		if m := modelRE.FindStringSubmatch(raw); err != nil && m != nil && isSecretModel(m[1]) {
			return "" // the parse stopped before "model": the text says which
		}
		return clipRaw(raw)
	}
	var dk *dupKeyError
	if errors.As(err, &dk) {
		return Item{}, &textin.RowError{Loc: loc, Field: dk.key, Raw: rawText(),
			Reason: fmt.Sprintf("key %q given twice in the object; which value is meant cannot be known, so the record is not read", dk.key)}
	}
	if err != nil {
		return Item{}, &textin.RowError{Loc: loc, Field: "object", Reason: "not a Django dumpdata object {model, pk, fields}", Raw: rawText(), Err: err}
	}
	if !utf8.ValidString(raw) {
		// encoding/json would turn the bad bytes into U+FFFD silently.
		return Item{}, &textin.RowError{Loc: loc, Field: "object", Reason: "record is not valid UTF-8 (kept raw for the reject file)", Raw: rawText()}
	}
	it, err := r.mapper(o, loc)
	if err != nil {
		if re, ok := textin.AsRowError(err); ok {
			re.Loc = loc
			if re.Raw == "" {
				re.Raw = rawText()
			}
		}
		return Item{}, err
	}
	return it, nil
}

func noControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 {
			return false
		}
	}
	return true
}

// jsonText renders a JSON scalar as text: a string unquoted, a number or
// boolean literally ("12345", "true"), null as "" with null=true; an object
// or array is returned as its compact JSON text.
//
// A plain string (no escapes, valid UTF-8, no control characters) or a
// literal is returned as a substring of raw, without a copy.
func jsonText(raw string) (s string, null bool, err error) {
	raw = strings.TrimSpace(raw)
	if len(raw) == 0 || raw == "null" {
		return "", true, nil
	}
	switch raw[0] {
	case '"':
		if len(raw) >= 2 && raw[len(raw)-1] == '"' {
			if in := raw[1 : len(raw)-1]; strings.IndexByte(in, '\\') < 0 && strings.IndexByte(in, '"') < 0 &&
				utf8.ValidString(in) && noControl(in) {
				return in, false, nil
			}
		}
		var u string // its own variable: s would escape on the fast path too
		err = json.Unmarshal([]byte(raw), &u)
		return u, false, err
	case '{', '[':
		var b bytes.Buffer
		if err := json.Compact(&b, []byte(raw)); err != nil {
			return "", false, err
		}
		return b.String(), false, nil
	}
	if !json.Valid([]byte(raw)) {
		return "", false, fmt.Errorf("invalid JSON value %q", clip(raw, 40))
	}
	return raw, false, nil
}
