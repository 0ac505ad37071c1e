package legacy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/arkhe-ledger/arkhe/textin"
)

// jstr is a JSON scalar read as text: strings as is, numbers and booleans
// literally, null as "" (registry files mix "2001" and 2001 for tenure).
type jstr string

func (j *jstr) UnmarshalJSON(b []byte) error {
	s, _, err := jsonText(string(b))
	if err != nil {
		return err
	}
	if len(b) > 0 && (b[0] == '{' || b[0] == '[') {
		return fmt.Errorf("expected a string, got %s", clip(string(b), 40))
	}
	*j = jstr(s)
	return nil
}

// registryEntry is one NAAN or shoulder record of the 2023 or 2024 JSON
// registry.
type registryEntry struct {
	What   jstr            `json:"what"`
	Where  jstr            `json:"where"`
	Target json.RawMessage `json:"target"` // 2023: string; 2024: {url, http_code}
	When   jstr            `json:"when"`
	Who    struct {
		Name       jstr `json:"name"`
		NameNative jstr `json:"name_native"`
		Acronym    jstr `json:"acronym"`
	} `json:"who"`
	NAPolicy struct {
		OrgType   jstr `json:"orgtype"`
		Policy    jstr `json:"policy"`
		Tenure    jstr `json:"tenure"`
		PolicyURL jstr `json:"policy_url"`
	} `json:"na_policy"`
	TestIdentifier  jstr  `json:"test_identifier"`
	ServiceProvider jstr  `json:"service_provider"`
	Purpose         jstr  `json:"purpose"`
	RType           jstr  `json:"rtype"`
	Shoulder        *jstr `json:"shoulder"`
	NAAN            jstr  `json:"naan"`
}

// item maps the entry; key is the 2023 object key ("" for 2024).
func (e *registryEntry) item(key string, loc textin.Location) (Item, error) {
	var target string
	code := 0
	if t := bytes.TrimSpace(e.Target); len(t) > 0 && string(t) != "null" {
		if t[0] == '{' {
			var tt struct {
				URL      jstr `json:"url"`
				HTTPCode jstr `json:"http_code"`
			}
			if err := json.Unmarshal(t, &tt); err != nil {
				return Item{}, &textin.RowError{ID: string(e.What), Field: "target", Reason: "target is not {url, http_code}", Err: err}
			}
			target = string(tt.URL)
			if tt.HTTPCode != "" {
				n, err := strconv.Atoi(string(tt.HTTPCode))
				if err != nil {
					return Item{}, &textin.RowError{ID: string(e.What), Field: "target.http_code", Reason: "not an integer", Err: err}
				}
				code = n
			}
		} else {
			var s jstr
			if err := json.Unmarshal(t, &s); err != nil {
				return Item{}, &textin.RowError{ID: string(e.What), Field: "target", Reason: "target is not a string", Err: err}
			}
			target = string(s)
		}
	}
	whereCode, where := splitRedirectCode(string(e.Where))
	if code == 0 {
		code = whereCode
	}
	var when *time.Time
	if e.When != "" {
		t, err := parseDate(string(e.When))
		if err != nil {
			return Item{}, &textin.RowError{ID: string(e.What), Field: "when", Reason: "bad registration date", Err: err}
		}
		when = &t
	}
	isShoulder := e.RType == "PublicNAANShoulder" || (e.RType == "" && e.Shoulder != nil)
	switch e.RType {
	case "", "PublicNAAN", "PublicNAANShoulder":
	default:
		return Item{}, &textin.RowError{ID: string(e.What), Field: "rtype", Reason: fmt.Sprintf("rtype %q is neither PublicNAAN nor PublicNAANShoulder", e.RType)}
	}
	if isShoulder {
		s := &ShoulderRecord{Prefix: string(e.What), Kind: "ark", NAAN: string(e.NAAN), Name: string(e.Who.Name),
			Acronym: string(e.Who.Acronym), Target: target, RedirectCode: code, Where: where, Date: when, Source: loc}
		if e.Shoulder != nil {
			s.Shoulder = string(*e.Shoulder)
		}
		if s.NAAN == "" || s.Shoulder == "" && e.Shoulder == nil {
			_, n, sh := splitPrefix(string(e.What))
			if s.NAAN == "" {
				s.NAAN = n
			}
			if e.Shoulder == nil {
				s.Shoulder = sh
			}
		}
		if s.NAAN == "" {
			return Item{}, &textin.RowError{ID: string(e.What), Field: "naan", Reason: "shoulder record has no NAAN"}
		}
		s.Metadata = policyMeta(nil, string(e.NAPolicy.OrgType), string(e.NAPolicy.Policy), string(e.NAPolicy.Tenure),
			string(e.NAPolicy.PolicyURL), string(e.Who.NameNative))
		if e.TestIdentifier != "" {
			s.Metadata = addMeta(s.Metadata, "test_identifier", string(e.TestIdentifier))
		}
		return Item{Shoulder: s}, nil
	}
	naan := string(e.What)
	if naan == "" {
		naan = key
	}
	if naan == "" {
		return Item{}, &textin.RowError{Field: "what", Reason: "NAAN record has no what (the NAAN)"}
	}
	if key != "" && string(e.What) != "" && key != string(e.What) {
		return Item{}, &textin.RowError{ID: key, Field: "what", Reason: fmt.Sprintf("object key %q and what %q differ", key, e.What)}
	}
	return Item{NAAN: &NAANRecord{NAAN: naan, Name: string(e.Who.Name), NameNative: string(e.Who.NameNative),
		Acronym: string(e.Who.Acronym), Where: where, Target: target, RedirectCode: code, When: when,
		OrgType: string(e.NAPolicy.OrgType), Policy: string(e.NAPolicy.Policy), Tenure: string(e.NAPolicy.Tenure),
		PolicyURL: string(e.NAPolicy.PolicyURL), TestIdentifier: string(e.TestIdentifier),
		ServiceProvider: string(e.ServiceProvider), Purpose: string(e.Purpose), Source: loc}}, nil
}

// jsonStream is the token-level plumbing shared by the registry readers.
type jsonStream struct {
	name    string
	lc      *lineCounter
	dec     *json.Decoder
	records int
}

func newJSONStream(name string, br *bufio.Reader) *jsonStream {
	lc := &lineCounter{r: br}
	return &jsonStream{name: name, lc: lc, dec: json.NewDecoder(lc)}
}

func (s *jsonStream) truncated(reason string) error {
	return &TruncatedError{Loc: textin.Location{File: s.name, Line: s.lc.lastLine(), Record: s.records}, Reason: reason}
}

// fail converts a decoder error: end of input is truncation, anything else
// is fatal (record boundaries are lost).
func (s *jsonStream) fail(err error, where string) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return s.truncated(fmt.Sprintf("file ends %s after record %d", where, s.records))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("%s:%d: JSON syntax error (reading stops): %w", s.name, s.lc.lineAt(se.Offset), err)
	}
	return fmt.Errorf("%s: %w", s.name, err)
}

func (s *jsonStream) delim(want json.Delim, where string) error {
	tok, err := s.dec.Token()
	if err != nil {
		return s.fail(err, where)
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("%s:%d: expected %v %s, found %v: %w", s.name, s.lc.lineAt(s.dec.InputOffset()), want, where, tok, ErrUnknownFormat)
	}
	return nil
}

// value decodes the next value raw and returns it with its location.
func (s *jsonStream) value(where string) (json.RawMessage, textin.Location, error) {
	var m json.RawMessage
	if err := s.dec.Decode(&m); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			s.records++
			return nil, textin.Location{}, s.truncated(fmt.Sprintf("file ends inside record %d %s; that record is not yielded", s.records, where))
		}
		return nil, textin.Location{}, s.fail(err, where)
	}
	s.records++
	start := s.dec.InputOffset() - int64(len(m))
	return m, textin.Location{File: s.name, Line: s.lc.lineAt(start), Record: s.records}, nil
}

func decodeEntry(raw json.RawMessage, key string, loc textin.Location) (Item, error) {
	if !utf8.Valid(raw) {
		return Item{}, &textin.RowError{Loc: loc, ID: validOr(key), Field: "record", Reason: "record is not valid UTF-8 (kept raw for the reject file)", Raw: clipRaw(string(raw))}
	}
	if k := dupJSONKey(raw); k != "" {
		return Item{}, &textin.RowError{Loc: loc, ID: key, Field: k, Raw: clipRaw(string(raw)),
			Reason: fmt.Sprintf("key %q given twice in the object; which value is meant cannot be known, so the record is not read", k)}
	}
	var e registryEntry
	if err := json.Unmarshal(raw, &e); err != nil {
		return Item{}, &textin.RowError{Loc: loc, ID: key, Field: "record", Reason: "registry record does not have the registry's shape", Raw: clipRaw(string(raw)), Err: err}
	}
	it, err := e.item(key, loc)
	if err != nil {
		if re, ok := textin.AsRowError(err); ok {
			re.Loc, re.Raw = loc, clipRaw(string(raw))
		}
		return Item{}, err
	}
	return it, nil
}

// naan2023Reader reads naans_public.json: one object keyed by NAAN whose
// values are records.
type naan2023Reader struct {
	s       *jsonStream
	started bool
	done    bool
}

func newNAAN2023Reader(name string, br *bufio.Reader) *naan2023Reader {
	return &naan2023Reader{s: newJSONStream(name, br)}
}

func (r *naan2023Reader) step() (Item, error) {
	if r.done {
		return Item{}, io.EOF
	}
	if !r.started {
		r.started = true
		if err := r.s.delim('{', "at the start"); err != nil {
			r.done = true
			return Item{}, err
		}
	}
	if !r.s.dec.More() {
		r.done = true
		if err := r.s.delim('}', "at the end of the NAAN object"); err != nil {
			return Item{}, err
		}
		return Item{}, io.EOF
	}
	tok, err := r.s.dec.Token()
	if err != nil {
		r.done = true
		return Item{}, r.s.fail(err, "inside the NAAN object")
	}
	key, _ := tok.(string)
	raw, loc, err := r.s.value("for NAAN " + strconv.Quote(key))
	if err != nil {
		r.done = true
		return Item{}, err
	}
	return decodeEntry(raw, key, loc)
}

// naan2024Reader reads naan_records.json {"metadata": …, "data": [records]},
// a bare array of records, or a single record object.
type naan2024Reader struct {
	s      *jsonStream
	br     *bufio.Reader
	state  int // 0 start, 1 in container keys, 2 in data array, 3 in bare array, 4 done
	single map[string]json.RawMessage
	first  textin.Location
}

func newNAAN2024Reader(name string, br *bufio.Reader) *naan2024Reader {
	return &naan2024Reader{s: newJSONStream(name, br), br: br}
}

func (r *naan2024Reader) finish(err error) (Item, error) {
	r.state = 4
	return Item{}, err
}

func (r *naan2024Reader) step() (Item, error) {
	s := r.s
	for {
		switch r.state {
		case 4:
			return Item{}, io.EOF
		case 0:
			tok, err := s.dec.Token()
			if err != nil {
				return r.finish(s.fail(err, "at the start"))
			}
			switch tok {
			case json.Delim('{'):
				r.state = 1
				r.first = textin.Location{Line: s.lc.lineAt(s.dec.InputOffset() - 1)}
			case json.Delim('['):
				r.state = 3
			default:
				return r.finish(fmt.Errorf("%s: registry JSON starts with %v, not an object or array: %w", s.name, tok, ErrUnknownFormat))
			}
		case 1:
			if !s.dec.More() {
				if err := s.delim('}', "at the end of the registry object"); err != nil {
					return r.finish(err)
				}
				r.state = 4
				if r.single != nil {
					raw, err := json.Marshal(r.single)
					if err != nil {
						return r.finish(err)
					}
					s.records++
					loc := textin.Location{File: s.name, Line: r.first.Line, Record: s.records}
					return decodeEntry(raw, "", loc)
				}
				return Item{}, io.EOF
			}
			tok, err := s.dec.Token()
			if err != nil {
				return r.finish(s.fail(err, "inside the registry object"))
			}
			key, _ := tok.(string)
			switch key {
			case "data":
				if err := s.delim('[', "after \"data\":"); err != nil {
					return r.finish(err)
				}
				r.state = 2
			default:
				var m json.RawMessage
				if err := s.dec.Decode(&m); err != nil {
					return r.finish(s.fail(err, "inside "+strconv.Quote(key)))
				}
				if key != "metadata" {
					if r.single == nil {
						r.single = map[string]json.RawMessage{}
					}
					r.single[key] = m
				}
			}
		case 2, 3:
			if !s.dec.More() {
				if err := s.delim(']', "at the end of the records array"); err != nil {
					return r.finish(err)
				}
				if r.state == 3 {
					r.state = 4
					return Item{}, io.EOF
				}
				r.state = 1
				continue
			}
			raw, loc, err := s.value("in the records array")
			if err != nil {
				return r.finish(err)
			}
			return decodeEntry(raw, "", loc)
		}
	}
}

// dupJSONKey returns the path ("who.name") of the first key given twice in one object of the
// JSON value raw, at any depth, or "" when there is none (or raw is not valid JSON: the caller's
// decoder reports that).
func dupJSONKey(raw []byte) string {
	type level struct {
		obj     bool
		wantKey bool
		path    string // the path of this value
		last    string // the last key read (objects)
		keys    []string
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	var stack []level
	// value notes that a value was read in the innermost object: a key comes next.
	value := func() {
		if n := len(stack); n > 0 && stack[n-1].obj {
			stack[n-1].wantKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		n := len(stack)
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				path := ""
				if n > 0 {
					path = stack[n-1].path
					if stack[n-1].obj {
						path = joinPath(path, stack[n-1].last)
					}
				}
				value()
				stack = append(stack, level{obj: t == '{', wantKey: true, path: path})
			default:
				stack = stack[:n-1]
				if len(stack) == 0 {
					return ""
				}
			}
		case string:
			if n > 0 && stack[n-1].obj && stack[n-1].wantKey {
				l := &stack[n-1]
				for _, k := range l.keys {
					if k == t {
						return joinPath(l.path, t)
					}
				}
				l.keys = append(l.keys, t)
				l.last, l.wantKey = t, false
				continue
			}
			value()
		default:
			value()
		}
	}
}

// joinPath appends key to a dotted path.
func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
