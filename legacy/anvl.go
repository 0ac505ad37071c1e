package legacy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/arkhe-ledger/arkhe/textin"
)

// anvlElem is one `name: value` element, percent-decoded and trimmed.
type anvlElem struct {
	name, value string
	line        int
}

// anvlBlock is one ANVL record: an optional `:: id` line and its elements,
// up to a blank line.
type anvlBlock struct {
	id     string // the `::` line's text as given (never decoded)
	hasID  bool
	line   int // first line of the block
	last   int // last line of the block
	elems  []anvlElem
	size   int
	err    *textin.RowError
	raw    strings.Builder
	rawCut bool
	cut    bool // the file ended inside the block's last line
}

func (b *anvlBlock) addRaw(s []byte) {
	if b.rawCut {
		return
	}
	if b.raw.Len()+len(s)+1 > maxRaw {
		b.rawCut = true
		return
	}
	b.raw.Write(s)
	b.raw.WriteByte('\n')
}

// setID takes the `:: id` line read on line n.
func (b *anvlBlock) setID(text []byte, n int) {
	b.addRaw(text)
	b.hasID, b.id = true, strings.TrimSpace(string(text[2:]))
	if !utf8.ValidString(b.id) {
		b.fail("::", fmt.Sprintf("identifier on line %d is not valid UTF-8 (kept raw for the reject file)", n), nil)
	}
}

// failBOM rejects the block for a byte order mark at the start of line n.
func (b *anvlBlock) failBOM(n int) {
	b.fail("line", fmt.Sprintf("line %d starts with a byte order mark (U+FEFF), which belongs only at the very start of a file (were files joined together?)", n), nil)
}

func (b *anvlBlock) fail(field, reason string, err error) {
	if b.err == nil {
		b.err = &textin.RowError{Field: field, Reason: reason, Err: err}
	}
}

// anvlMapper turns a block into an Item; skip reports a block that is not a
// record (the registry's `erc:` file header).
type anvlMapper func(b *anvlBlock, loc textin.Location) (it Item, skip bool, err error)

// anvlReader reads ANVL blocks: `#` lines are comments, a line starting
// with blank space continues the previous value (joined by one space), a
// blank line ends a block, names and values are split on the first colon,
// trimmed, and percent-decoded (`%hh`; EZID impl/anvl.py). The `::` line is
// kept as given.
type anvlReader struct {
	name    string
	lr      *lineReader
	mapper  anvlMapper
	records int
	// strictEnd: a last line without its newline means the block was cut
	// (EZID writes a newline after every element).
	strictEnd bool
	held      []byte // a `::` line that started the next block
	heldLine  int
	heldOK    bool
	heldBOM   bool // the held line had a byte order mark before it
	eof       bool
	queue     []result
}

func newANVLReader(name string, br *bufio.Reader, m anvlMapper) *anvlReader {
	return &anvlReader{name: name, lr: newLineReader(br), mapper: m}
}

func (r *anvlReader) step() (Item, error) {
	for {
		if len(r.queue) > 0 {
			q := r.queue[0]
			r.queue = r.queue[1:]
			return q.it, q.err
		}
		if r.eof {
			return Item{}, io.EOF
		}
		b, err := r.block()
		if err != nil {
			return Item{}, err
		}
		if b == nil {
			r.eof = true
			continue
		}
		if len(b.elems) == 0 && !b.hasID && b.err == nil {
			continue
		}
		if b.cut {
			r.records++
			r.eof = true
			what := "the last record"
			if b.hasID {
				what = b.id
			}
			return Item{}, &TruncatedError{Loc: textin.Location{File: r.name, Line: b.last, Record: r.records},
				Reason: fmt.Sprintf("file ends inside line %d without its newline; %s may be cut and is not yielded", b.last, what)}
		}
		loc := textin.Location{File: r.name, Line: b.line, Record: r.records + 1}
		if b.err != nil {
			r.records++
			e := *b.err
			e.Loc, e.Raw = loc, b.raw.String()
			if b.hasID {
				e.ID = validOr(b.id)
			}
			return Item{}, &e
		}
		it, skip, err := r.mapper(b, loc)
		if skip {
			continue
		}
		r.records++
		if re, ok := textin.AsRowError(err); ok {
			re.Loc, re.Raw = loc, b.raw.String()
			if re.ID == "" && b.hasID {
				re.ID = validOr(b.id)
			}
		}
		return it, err
	}
}

// block reads the next block; nil at end of input.
func (r *anvlReader) block() (*anvlBlock, error) {
	var b *anvlBlock
	start := func(n int) {
		if b == nil {
			b = &anvlBlock{line: n}
		}
		b.last = n
	}
	if r.heldOK {
		r.heldOK = false
		start(r.heldLine)
		if r.heldBOM {
			r.heldBOM = false
			b.failBOM(r.heldLine)
		}
		b.setID(r.held, r.heldLine)
	}
	for {
		text, n, terminated, err := r.lr.next()
		if err == io.EOF {
			return b, nil
		}
		if err == errLineTooLong {
			start(n)
			b.fail("line", fmt.Sprintf("line %d longer than %d octets", n, MaxLineBytes), err)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", r.name, n, err)
		}
		if r.strictEnd && !terminated && len(text) > 0 {
			start(n)
			b.cut = true
			return b, nil
		}
		if isBlank(text) {
			if b != nil {
				return b, nil
			}
			continue
		}
		// A line behind a byte order mark (files joined together) is read without it, and its
		// record is rejected naming the line.
		bom := n > 1 && bytes.HasPrefix(text, []byte(utf8BOM))
		if bom {
			text = text[len(utf8BOM):]
			if len(text) >= 2 && text[0] == ':' && text[1] == ':' && b != nil && (b.hasID || len(b.elems) > 0) {
				r.held, r.heldLine, r.heldOK, r.heldBOM = append(r.held[:0], text...), n, true, true
				return b, nil
			}
			start(n)
			b.failBOM(n)
			if isBlank(text) {
				continue
			}
		}
		switch {
		case text[0] == '#':
			continue
		case text[0] == ' ' || text[0] == '\t':
			start(n)
			b.addRaw(text)
			if len(b.elems) == 0 {
				b.fail("line", fmt.Sprintf("continuation line %d has no element before it", n), nil)
				continue
			}
			v, derr := percentDecode(strings.TrimSpace(string(text)))
			if derr != nil {
				b.fail(b.elems[len(b.elems)-1].name, fmt.Sprintf("bad %%-escape on line %d", n), derr)
				continue
			}
			if !utf8.ValidString(v) {
				b.fail(b.elems[len(b.elems)-1].name, fmt.Sprintf("line %d is not valid UTF-8 (kept raw for the reject file)", n), nil)
				continue
			}
			if v != "" {
				e := &b.elems[len(b.elems)-1]
				if e.value == "" {
					e.value = v
				} else {
					e.value += " " + v
				}
				b.size += len(v) + 1
			}
		case len(text) >= 2 && text[0] == ':' && text[1] == ':':
			if b != nil && (b.hasID || len(b.elems) > 0) {
				// A new record without the blank line between: hold it.
				r.held, r.heldLine, r.heldOK = append(r.held[:0], text...), n, true
				return b, nil
			}
			start(n)
			b.setID(text, n)
		default:
			start(n)
			b.addRaw(text)
			name, value, ok := strings.Cut(string(text), ":")
			if !ok {
				b.fail("line", fmt.Sprintf("line %d has no colon (ANVL name: value)", n), nil)
				continue
			}
			dn, err1 := percentDecode(strings.TrimSpace(name))
			dv, err2 := percentDecode(strings.TrimSpace(value))
			if err1 != nil || err2 != nil {
				b.fail(strings.TrimSpace(name), fmt.Sprintf("bad %%-escape on line %d", n), errors.Join(err1, err2))
				continue
			}
			if dn == "" {
				b.fail("line", fmt.Sprintf("line %d has an empty element name", n), nil)
				continue
			}
			if !utf8.ValidString(dn) || !utf8.ValidString(dv) {
				b.fail(validOr(dn), fmt.Sprintf("line %d is not valid UTF-8 (kept raw for the reject file)", n), nil)
				continue
			}
			b.size += len(dn) + len(dv)
			if b.size > maxGroupBytes {
				b.fail(dn, fmt.Sprintf("record exceeds %d octets", maxGroupBytes), nil)
				continue
			}
			b.elems = append(b.elems, anvlElem{name: dn, value: dv, line: n})
		}
	}
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' {
			return false
		}
	}
	return true
}

// percentDecode decodes every `%hh` (either case); a `%` not followed by two
// hex digits is an error (EZID impl/anvl.py `_decode`). ANVL escapes are one layer: the decoded text is not decoded again.
func percentDecode(s string) (string, error) {
	i := strings.IndexByte(s, '%')
	if i < 0 {
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for ; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			return "", fmt.Errorf("%% at octet %d is not followed by two hex digits", i+1)
		}
		b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
		i += 2
	}
	return b.String(), nil
}

// ezidANVLBlock maps an EZID download block (`:: id`, `_target`, `_status`,
// `_created`, …) onto a Record.
func ezidANVLBlock(b *anvlBlock, loc textin.Location) (Item, bool, error) {
	if !b.hasID {
		return Item{}, false, &textin.RowError{Field: "::", Reason: "record has no `:: identifier` line"}
	}
	if b.id == "" {
		return Item{}, false, &textin.RowError{Field: "::", Reason: "empty identifier after ::"}
	}
	els := make([]kv, 0, len(b.elems))
	for _, e := range b.elems {
		els = append(els, kv{e.name, e.value})
	}
	rec, err := ezidRecord(b.id, loc, els)
	if err != nil {
		return Item{}, false, err
	}
	return Item{Record: rec}, false, nil
}

// naanANVLBlock maps a registry block. `naa:`
// blocks whose `what` is a NAAN become NAANRecords, those whose `what` is
// `ark:/NAAN/shoulder` ShoulderRecords; the `erc:` file header is skipped.
func naanANVLBlock(b *anvlBlock, loc textin.Location) (Item, bool, error) {
	if b.hasID || len(b.elems) == 0 {
		return Item{}, false, &textin.RowError{Field: "naa", Reason: "registry block does not start with naa:"}
	}
	kind := b.elems[0].name
	if kind == "erc" {
		return Item{}, true, nil
	}
	if kind != "naa" {
		return Item{}, false, &textin.RowError{Field: kind, Reason: fmt.Sprintf("registry block starts with %q, not naa:", kind+":")}
	}
	var n NAANRecord
	n.Source = loc
	var what *string
	for _, e := range b.elems[1:] {
		switch e.name {
		case "who":
			if n.Name == "" {
				n.NameNative, n.Name, n.Acronym = splitWho(e.value)
				continue
			}
		case "what":
			if what == nil {
				what = strPtr(e.value)
				continue
			}
		case "when":
			if n.When == nil && e.value != "" {
				t, err := parseDate(e.value)
				if err != nil {
					return Item{}, false, &textin.RowError{ID: deref(what), Field: "when", Reason: "bad registration date", Err: err}
				}
				n.When = &t
				continue
			}
		case "where":
			if n.Where == "" {
				n.RedirectCode, n.Where = splitRedirectCode(e.value)
				continue
			}
		case "how":
			if n.OrgType == "" && n.Policy == "" {
				n.OrgType, n.Policy, n.Tenure, n.PolicyURL = splitHow(e.value)
				continue
			}
		}
		n.Metadata = addMeta(n.Metadata, e.name, e.value)
	}
	if what == nil || *what == "" {
		return Item{}, false, &textin.RowError{Field: "what", Reason: "naa: block has no what: (the NAAN)"}
	}
	if strings.Contains(*what, "/") {
		s := &ShoulderRecord{Prefix: *what, Name: n.Name, Acronym: n.Acronym, Where: n.Where,
			RedirectCode: n.RedirectCode, Date: n.When, Metadata: n.Metadata, Source: loc}
		s.Kind, s.NAAN, s.Shoulder = splitPrefix(*what)
		s.Metadata = policyMeta(s.Metadata, n.OrgType, n.Policy, n.Tenure, n.PolicyURL, n.NameNative)
		return Item{Shoulder: s}, false, nil
	}
	n.NAAN = *what
	return Item{NAAN: &n}, false, nil
}

// n2tShoulderBlock maps a master_shoulders.txt block: `:: prefix`, `type`,
// `manager`, `name`, `date` (yyyy.mm.dd), `minter`, `datacenter`,
// `is_supershoulder` (legacy-samples/SOURCES.md).
func n2tShoulderBlock(b *anvlBlock, loc textin.Location) (Item, bool, error) {
	if !b.hasID || b.id == "" {
		return Item{}, false, &textin.RowError{Field: "::", Reason: "shoulder block has no `:: prefix` line"}
	}
	s := &ShoulderRecord{Prefix: b.id, Source: loc}
	s.Kind, s.NAAN, s.Shoulder = splitPrefix(b.id)
	seen := map[string]bool{}
	for _, e := range b.elems {
		if !seen[e.name] {
			seen[e.name] = true
			switch e.name {
			case "type":
				s.Type = e.value
				continue
			case "manager":
				s.Manager = e.value
				continue
			case "name":
				s.Name = e.value
				continue
			case "minter":
				s.Minter = e.value
				continue
			case "datacenter":
				s.Datacenter = e.value
				continue
			case "is_supershoulder":
				s.IsSupershoulder = strings.EqualFold(e.value, "true") || e.value == "1" || strings.EqualFold(e.value, "yes")
				continue
			case "date":
				if e.value == "" {
					continue
				}
				t, err := parseDate(e.value)
				if err != nil {
					return Item{}, false, &textin.RowError{ID: b.id, Field: "date", Reason: "bad shoulder date", Err: err}
				}
				s.Date = &t
				continue
			}
		}
		s.Metadata = addMeta(s.Metadata, e.name, e.value)
	}
	return Item{Shoulder: s}, false, nil
}

// splitWho splits `Native (=) Name (=) ACRONYM`:
// one part is a name, two are name and acronym, three or more end with name
// and acronym and begin with the native name(s).
func splitWho(v string) (native, name, acronym string) {
	parts := strings.Split(v, "(=)")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	switch len(parts) {
	case 1:
		return "", parts[0], ""
	case 2:
		return "", parts[0], parts[1]
	}
	k := len(parts)
	return strings.Join(parts[:k-2], " (=) "), parts[k-2], parts[k-1]
}

// splitHow splits `ORGTYPE | policy | tenure | policy-URL`.
func splitHow(v string) (orgType, policy, tenure, url string) {
	parts := strings.SplitN(v, "|", 4)
	get := func(i int) string {
		if i < len(parts) {
			return strings.TrimSpace(parts[i])
		}
		return ""
	}
	return get(0), get(1), get(2), get(3)
}

// policyMeta keeps registry policy parts of a shoulder in Metadata (a
// ShoulderRecord has no policy fields).
func policyMeta(m map[string]string, orgType, policy, tenure, url, native string) map[string]string {
	for _, p := range [...][2]string{{"orgtype", orgType}, {"policy", policy}, {"tenure", tenure}, {"policy_url", url}, {"name_native", native}} {
		if p[1] != "" {
			m = addMeta(m, p[0], p[1])
		}
	}
	return m
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
