package legacy

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/arkhe-ledger/arkhe/textin"
)

// N2T binder element names mapped onto Record fields (N2T's own and
// those EZID wrote into binders); every other element goes to Record.Metadata under its own name.
const (
	n2tTarget     = "_t"  // target, optional leading redirect code
	n2tRealTarget = "_t1" // EZID legacy form: real target of a non-public id
	n2tOwner      = "_o"  // owner agent PID
	n2tStatus     = "_is" // EZID status; absent = public
	n2tUpdated    = "_u"  // EZID update time, Unix seconds
)

// n2tCreated lists the creation-time elements in order of preference: egg's
// `_,ec`, the interim `_.ec`, old binders' `__mc`, EZID's `_c`.
var n2tCreated = [...]string{"_,ec", "_.ec", "__mc", "_c"}

type n2tElem struct {
	name, value string
}

type n2tGroup struct {
	id     string
	line   int
	rec    int
	elems  []n2tElem
	size   int
	err    *textin.RowError // first problem found in the group
	raw    strings.Builder
	rawCut bool
}

func (g *n2tGroup) addRaw(key, value []byte) {
	if g.rawCut {
		return
	}
	if g.raw.Len()+len(key)+len(value)+4 > maxRaw {
		g.rawCut = true
		return
	}
	g.raw.WriteByte(' ')
	g.raw.Write(key)
	g.raw.WriteString("\n ")
	g.raw.Write(value)
	g.raw.WriteByte('\n')
}

type n2tState int

const (
	n2tHeader n2tState = iota
	n2tData
	n2tAfterData
	n2tDone
)

// n2tReader reads `db_dump -p` output: header lines up to HEADER=END, then
// key/value line pairs each starting with one space, until DATA=END.
// Consecutive keys `id|element` with the same id form one Record.
type n2tReader struct {
	name     string
	lr       *lineReader
	state    n2tState
	hex      bool // format=bytevalue: lines are hex pairs
	header   int  // header lines seen in the current section
	cur      *n2tGroup
	records  int
	queue    []result
	fatalErr error
}

type result struct {
	it  Item
	err error
}

func newN2TReader(name string, br *bufio.Reader) *n2tReader {
	return &n2tReader{name: name, lr: newLineReader(br)}
}

func (r *n2tReader) step() (Item, error) {
	for {
		if len(r.queue) > 0 {
			q := r.queue[0]
			r.queue = r.queue[1:]
			return q.it, q.err
		}
		if r.fatalErr != nil {
			return Item{}, r.fatalErr
		}
		if r.state == n2tDone {
			return Item{}, io.EOF
		}
		r.advance()
	}
}

func (r *n2tReader) loc(line int) textin.Location {
	return textin.Location{File: r.name, Line: line, Record: r.records}
}

func (r *n2tReader) push(it Item, err error) { r.queue = append(r.queue, result{it, err}) }

// flush turns the current group into a Record or textin.RowError.
func (r *n2tReader) flush() {
	if r.cur == nil {
		return
	}
	g := r.cur
	r.cur = nil
	rec, err := g.record(r.name)
	if err != nil {
		r.push(Item{}, err)
		return
	}
	r.push(Item{Record: rec}, nil)
}

func (r *n2tReader) truncated(line int, rec int, reason string) {
	r.push(Item{}, &TruncatedError{Loc: textin.Location{File: r.name, Line: line, Record: rec}, Reason: reason})
	r.state = n2tDone
}

func (r *n2tReader) advance() {
	text, n, _, err := r.lr.next()
	if err != nil && err != errLineTooLong {
		if err != io.EOF {
			r.fatalErr = fmt.Errorf("%s:%d: %w", r.name, n, err)
			return
		}
		switch r.state {
		case n2tHeader:
			r.truncated(n, r.records, fmt.Sprintf("file ends inside a db_dump header after line %d (no HEADER=END)", n))
		case n2tData:
			last := ""
			rec := r.records
			if r.cur != nil {
				last = r.cur.id
			}
			r.flush()
			reason := fmt.Sprintf("file ends after line %d without DATA=END", n)
			if last != "" {
				reason += fmt.Sprintf("; the last identifier %s (record %d) was read as far as the file goes and may be incomplete", last, rec)
			}
			r.truncated(n, rec, reason)
		default:
			r.state = n2tDone
		}
		return
	}
	switch r.state {
	case n2tHeader:
		if err == errLineTooLong {
			r.fatalErr = fmt.Errorf("%s:%d: db_dump header line: %w", r.name, n, err)
			return
		}
		r.headerLine(string(text), n)
	case n2tAfterData:
		if err == errLineTooLong {
			r.push(Item{}, &textin.RowError{Loc: r.loc(n), Field: "line", Reason: "line after DATA=END longer than the limit", Err: err})
			return
		}
		s := string(text)
		switch {
		case strings.TrimSpace(s) == "":
		case strings.HasPrefix(s, "VERSION="), strings.HasPrefix(s, utf8BOM+"VERSION="):
			if strings.HasPrefix(s, utf8BOM) {
				// Dumps joined together: the next one is read, and the seam is reported.
				r.push(Item{}, &textin.RowError{Loc: r.loc(n), Field: "line", Raw: clipRaw(s),
					Reason: fmt.Sprintf("line %d starts with a byte order mark (U+FEFF), which belongs only at the very start of a file: "+
						"files joined together? the db_dump section it starts is read", n)})
				s = s[len(utf8BOM):]
			}
			r.state = n2tHeader
			r.header = 0
			r.hex = false
			r.headerLine(s, n)
		default:
			r.push(Item{}, &textin.RowError{Loc: r.loc(n), Field: "line", Reason: "text after DATA=END is not a new db_dump section", Raw: clipRaw(s)})
		}
	case n2tData:
		if err == errLineTooLong {
			// The key is unknown; skip its value line too so pairs stay aligned.
			r.lr.next()
			r.flush()
			r.records++
			r.push(Item{}, &textin.RowError{Loc: r.loc(n), Field: "key", Reason: fmt.Sprintf("key line longer than %d octets", MaxLineBytes), Err: err})
			return
		}
		if k, ok := bytes.CutPrefix(text, []byte(utf8BOM)); ok && len(k) > 0 && k[0] == ' ' && !bytes.HasPrefix(k[1:], []byte(":/")) {
			// A key line behind a byte order mark (dumps joined together): its identifier is
			// rejected whole, and the pairs stay aligned.
			r.pair(append([]byte(nil), k[1:]...), n)
			if r.cur != nil && r.cur.err == nil {
				r.cur.err = &textin.RowError{Field: "key", Reason: fmt.Sprintf("key line %d starts with a byte order mark (U+FEFF), "+
					"which belongs only at the very start of a file (were files joined together?)", n)}
			}
			return
		}
		if len(text) == 0 || text[0] != ' ' {
			if string(text) == "DATA=END" {
				r.flush()
				r.state = n2tAfterData
				return
			}
			r.flush()
			r.records++
			r.push(Item{}, &textin.RowError{Loc: r.loc(n), Field: "line",
				Reason: "data line does not start with a space (db_dump -p key/value line expected)", Raw: clipRaw(string(text))})
			return
		}
		rawKey := append([]byte(nil), text[1:]...)
		r.pair(rawKey, n)
	}
}

func (r *n2tReader) headerLine(s string, n int) {
	if s == "HEADER=END" {
		r.state = n2tData
		return
	}
	k, v, ok := strings.Cut(s, "=")
	if !ok || strings.HasPrefix(s, " ") {
		r.fatalErr = fmt.Errorf("%s:%d: %q is not a db_dump header line (key=value before HEADER=END): %w", r.name, n, clip(s, 80), ErrUnknownFormat)
		return
	}
	r.header++
	if k == "format" {
		switch v {
		case "print":
			r.hex = false
		case "bytevalue":
			r.hex = true
		default:
			r.fatalErr = fmt.Errorf("%s:%d: db_dump format %q is neither print nor bytevalue", r.name, n, v)
		}
	}
}

// pair reads the value line for a key read on line n and adds the pair.
func (r *n2tReader) pair(rawKey []byte, n int) {
	key, kerr := r.decode(rawKey)
	var id, elem string
	admin := kerr == nil && bytes.HasPrefix(key, []byte(":/"))
	if kerr == nil && !admin {
		i := bytes.IndexByte(key, '|')
		if i < 0 {
			kerr = errors.New("key has no | between identifier and element")
			id = string(key)
		} else {
			id, elem = string(key[:i]), string(key[i+1:])
		}
	}
	if !admin && (r.cur == nil || r.cur.id != id || kerr != nil) {
		r.flush()
		r.records++
		r.cur = &n2tGroup{id: id, line: n, rec: r.records}
	}
	text, vn, terminated, err := r.lr.next()
	if err == io.EOF || (err == nil && !terminated) {
		what := "key " + string(rawKey)
		rec := r.records
		if admin {
			r.flush()
		} else {
			r.cur = nil // the cut identifier is incomplete: not yielded
		}
		line := vn
		r.truncated(line, rec, fmt.Sprintf("file ends after line %d inside the key/value pair of %s (its value is missing or cut); that identifier is not yielded", line, clip(what, 200)))
		return
	}
	if err != nil && err != errLineTooLong {
		r.fatalErr = fmt.Errorf("%s:%d: %w", r.name, vn, err)
		return
	}
	if admin {
		return
	}
	g := r.cur
	if err == errLineTooLong {
		if g.err == nil {
			g.err = &textin.RowError{Field: elem, Reason: fmt.Sprintf("value on line %d longer than %d octets", vn, MaxLineBytes), Err: err}
		}
		return
	}
	if len(text) == 0 || text[0] != ' ' {
		if g.err == nil {
			g.err = &textin.RowError{Field: elem, Reason: fmt.Sprintf("value line %d does not start with a space", vn)}
		}
		g.addRaw(rawKey, text)
		return
	}
	g.addRaw(rawKey, text[1:])
	if kerr != nil {
		if g.err == nil {
			g.err = &textin.RowError{Field: "key", Reason: "bad key on line " + fmt.Sprint(n), Err: kerr}
		}
		return
	}
	val, verr := r.decode(text[1:])
	if verr != nil {
		if g.err == nil {
			g.err = &textin.RowError{Field: elem, Reason: fmt.Sprintf("bad value on line %d", vn), Err: verr}
		}
		return
	}
	g.size += len(elem) + len(val)
	if g.size > maxGroupBytes {
		if g.err == nil {
			g.err = &textin.RowError{Field: elem, Reason: fmt.Sprintf("identifier's elements exceed %d octets", maxGroupBytes)}
		}
		return
	}
	g.elems = append(g.elems, n2tElem{name: elem, value: string(val)})
}

// decode undoes db_dump's escaping: in print format `\\` is a backslash and
// `\hh` a byte given in hex; in bytevalue
// format the whole line is hex pairs.
func (r *n2tReader) decode(b []byte) ([]byte, error) {
	if r.hex {
		out := make([]byte, hex.DecodedLen(len(b)))
		if _, err := hex.Decode(out, b); err != nil {
			return nil, fmt.Errorf("bytevalue line: %w", err)
		}
		return out, nil
	}
	return decodeDBPrint(b)
}

func decodeDBPrint(b []byte) ([]byte, error) {
	if bytes.IndexByte(b, '\\') < 0 {
		return b, nil
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		if i+1 < len(b) && b[i+1] == '\\' {
			out = append(out, '\\')
			i++
			continue
		}
		if i+2 < len(b) && isHex(b[i+1]) && isHex(b[i+2]) {
			out = append(out, unhex(b[i+1])<<4|unhex(b[i+2]))
			i += 2
			continue
		}
		return nil, fmt.Errorf("bad \\ escape at octet %d (want \\\\ or \\hh)", i+1)
	}
	return out, nil
}

func isHex(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case isDigit(c):
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// record maps a group's elements onto a Record: `_t` (or `_t1`, the real target of a non-public EZID id), the
// creation time from `_,ec` / `_.ec` / `__mc` / `_c`, `_u`, `_o`, `_is`,
// ERC who/what/when (or erc.who/…); everything else into Metadata.
func (g *n2tGroup) record(file string) (*Record, error) {
	loc := textin.Location{File: file, Line: g.line, Record: g.rec}
	fail := func(field, reason string, err error) error {
		return &textin.RowError{Loc: loc, ID: validOr(g.id), Field: field, Reason: reason, Raw: g.raw.String(), Err: err}
	}
	if g.err != nil {
		e := *g.err
		e.Loc, e.ID, e.Raw = loc, validOr(g.id), g.raw.String()
		return nil, &e
	}
	if !utf8.ValidString(g.id) {
		return nil, fail("id", "identifier is not valid UTF-8 (a Latin-1 binder?); kept raw for the reject file", nil)
	}
	if g.id == "" {
		return nil, fail("id", "empty identifier before |", nil)
	}
	rec := &Record{ID: g.id, Kind: IdentifierKind(g.id), Status: StatusPublic, Source: loc}
	var target, realTarget, status *string
	created := map[string]string{}
	var who, what, when []n2tElem
	for _, e := range g.elems {
		if !utf8.ValidString(e.value) {
			return nil, fail(e.name, "value is not valid UTF-8 (a Latin-1 binder?); kept raw for the reject file", nil)
		}
		if !utf8.ValidString(e.name) {
			return nil, fail("element", "element name is not valid UTF-8", nil)
		}
		switch e.name {
		case n2tTarget:
			if target == nil {
				target = strPtr(e.value)
				continue
			}
		case n2tRealTarget:
			if realTarget == nil {
				realTarget = strPtr(e.value)
				continue
			}
		case n2tStatus:
			if status == nil {
				status = strPtr(e.value)
				continue
			}
		case n2tOwner:
			if rec.Owner == "" {
				rec.Owner = e.value
				continue
			}
		case n2tUpdated:
			if rec.Updated == nil {
				t, err := parseUnix(e.value)
				if err != nil {
					return nil, fail(e.name, "bad update time", err)
				}
				rec.Updated = &t
				continue
			}
		case "who", "erc.who":
			who = append(who, e)
			continue
		case "what", "erc.what":
			what = append(what, e)
			continue
		case "when", "erc.when":
			when = append(when, e)
			continue
		default:
			if isCreatedElem(e.name) {
				if _, ok := created[e.name]; !ok {
					created[e.name] = e.value
					continue
				}
			}
		}
		rec.Metadata = addMeta(rec.Metadata, e.name, e.value)
	}
	chosen := ""
	for _, name := range n2tCreated {
		v, ok := created[name]
		if !ok {
			continue
		}
		if chosen == "" {
			t, err := parseUnix(v)
			if err != nil {
				return nil, fail(name, "bad creation time", err)
			}
			rec.Created = &t
			chosen = v
			continue
		}
		if strings.TrimSpace(v) != strings.TrimSpace(chosen) {
			rec.Metadata = addMeta(rec.Metadata, name, v)
		}
	}
	rec.Who, rec.Metadata = ercField(who, "who", rec.Metadata)
	rec.What, rec.Metadata = ercField(what, "what", rec.Metadata)
	rec.When, rec.Metadata = ercField(when, "when", rec.Metadata)
	if status != nil {
		st, reason, err := parseEZIDStatus(*status)
		if err != nil {
			return nil, fail(n2tStatus, "bad status", err)
		}
		rec.Status, rec.StatusReason = st, reason
	}
	t := target
	if realTarget != nil {
		t = realTarget
		if target != nil {
			rec.Metadata = addMeta(rec.Metadata, n2tTarget, *target)
		}
	}
	if t != nil {
		rec.RedirectCode, rec.Target = splitRedirectCode(*t)
	}
	rec.HasTarget = rec.Target != ""
	rec.TargetIsDefault = ezidDefaultTarget(rec.ID, rec.Target)
	return rec, nil
}

func isCreatedElem(name string) bool {
	for _, c := range n2tCreated {
		if c == name {
			return true
		}
	}
	return false
}

// ercField picks the plain ERC element (`who`) over its EZID form
// (`erc.who`); repeated values are joined with " ; "; the form not chosen is
// kept in Metadata under its own name.
func ercField(es []n2tElem, plain string, meta map[string]string) (*string, map[string]string) {
	if len(es) == 0 {
		return nil, meta
	}
	pick := es[0].name
	for _, e := range es {
		if e.name == plain {
			pick = plain
			break
		}
	}
	var v *string
	for _, e := range es {
		if e.name != pick {
			meta = addMeta(meta, e.name, e.value)
			continue
		}
		if v == nil {
			v = strPtr(e.value)
		} else if e.value != "" {
			if *v == "" {
				*v = e.value
			} else {
				*v += " ; " + e.value
			}
		}
	}
	return v, meta
}

func validOr(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
