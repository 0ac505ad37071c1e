package legacy

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // EZIDLinkCheckZone must load on hosts without a time zone database
	"unicode/utf8"

	"github.com/arkhe-ledger/arkhe/linkcheck"
	"github.com/arkhe-ledger/arkhe/textin"
)

// LinkCheckRecord is one identifier's link-check state from a legacy link
// checker (EZID's proc-link-checker): what it last learnt about the target,
// judged by arkhe's rules (see EZIDLinkCheck for the mapping).
type LinkCheckRecord struct {
	// ID is the identifier exactly as spelled in the source ("ark:/13030/c8251g4t").
	ID string
	// Kind is the identifier scheme from IdentifierKind ("ark", "doi", ...).
	Kind string
	// Target is the target URL the source checked, as given.
	Target string
	// TargetIsDefault reports that Target is EZID's default self-reference
	// "http(s)://ezid.cdlib.org/id/<ID>", which EZID stores when no target
	// was given and which an import keeps as "no target".
	TargetIsDefault bool
	// Checked is false when the source never checked the target (EZID
	// lastCheckTime 0, a TSV returnCode NULL): there is no state to keep.
	Checked bool
	// State is the state the record gives, when Checked: State.Target is
	// Target, State.Last the last check, State.Broken the source's verdict.
	// The fields a legacy checker does not record are left at their "unknown"
	// values: Last.FinalURL "", Last.Duration 0, GoodHost "" (so the first
	// check by arkhe sets what "content changed" compares with).
	State linkcheck.State
	// Failures is the source's consecutive-failure count as given; -1 when
	// the source left it empty.
	Failures int
	// Source locates the record.
	Source textin.Location
}

// EZIDLinkCheckZone is the time zone in which EZID's link-checker TSV
// (linkchecker_test_id_url_v0.tsv) writes its zoneless times ("4/12/23
// 15:43", US month/day/two-digit year, or "2023-04-12 19:31:47"): US Pacific. The file itself shows it:
// EZID's "never checked" time, Unix 0, is written 12/31/69 16:00, which is
// 1970-01-01T00:00Z eight hours behind UTC; MySQL's from_unixtime rendered it
// in the database session's zone, California's.
const EZIDLinkCheckZone = "America/Los_Angeles"

// ezidLinkErrorRules is the table that maps the text of an EZID link-check
// error (a Python exception rendered by str(), e.g. "URLError: <urlopen error
// [Errno 111] Connection refused>") to arkhe's error class: the first rule
// with a fragment the text contains (ignoring case) wins; a non-empty text
// no rule matches is ErrOther. The text is all a legacy export keeps, so
// matching its wording is the only way to classify it.
func ezidLinkErrorRules() []struct {
	class     linkcheck.ErrorClass
	fragments []string
} {
	return []struct {
		class     linkcheck.ErrorClass
		fragments []string
	}{
		{linkcheck.ErrTimeout, []string{"timed out", "timeout"}},
		{linkcheck.ErrDNS, []string{"name or service not known", "errno -2]", "errno -3]", "errno -5]",
			"temporary failure in name resolution", "nodename nor servname", "getaddrinfo failed", "no address associated"}},
		{linkcheck.ErrRefused, []string{"connection refused", "errno 111]"}},
		{linkcheck.ErrUnreachable, []string{"no route to host", "network is unreachable", "errno 113]", "errno 101]"}},
		{linkcheck.ErrReset, []string{"connection reset", "errno 104]", "remotedisconnected", "badstatusline",
			"incompleteread", "connection aborted", "broken pipe", "errno 32]"}},
		{linkcheck.ErrTLS, []string{"certificate", "ssl"}},
		{linkcheck.ErrRedirectLoop, []string{"redirect loop", "infinite loop"}},
		{linkcheck.ErrTooManyRedirects, []string{"too many redirects", "exceeded 30 redirects"}},
	}
}

// EZIDLinkErrorClass classifies the error text of an EZID link-check record
// by this table, first match wins:
// timeouts ("timed out", "timeout") first, since EZID wraps a read timeout
// on a TLS connection in an SSLError; then DNS failures ("Name or service
// not known", Errno -2/-3/-5), refused connections ("Connection refused",
// Errno 111), unreachable networks (Errno 101/113), resets (Errno 104,
// RemoteDisconnected, BadStatusLine, IncompleteRead, broken pipe), TLS
// ("certificate", "SSL"), redirect loops and too many redirects; anything
// else non-empty is ErrOther, and "" is ErrNone.
func EZIDLinkErrorClass(text string) linkcheck.ErrorClass {
	t := strings.ToLower(strings.TrimSpace(text))
	if t == "" {
		return linkcheck.ErrNone
	}
	for _, r := range ezidLinkErrorRules() {
		for _, f := range r.fragments {
			if strings.Contains(t, f) {
				return r.class
			}
		}
	}
	return linkcheck.ErrOther
}

// ezidLinkFields are the values of one EZID link-check record, parsed.
type ezidLinkFields struct {
	id, target string
	checked    time.Time // zero: never checked
	code       int       // HTTP status; 0 none (EZID -1 or null)
	hasCode    bool      // a returnCode was given (not null / NULL)
	errText    string
	failures   int // -1: not given
	bad        bool
	mime       string
	size       int64 // -1 unknown
	hash       string
}

// ezidLinkRecord applies the mapping rules (see EZIDLinkCheck) to f.
func ezidLinkRecord(f ezidLinkFields, loc textin.Location) (*LinkCheckRecord, error) {
	rec := &LinkCheckRecord{ID: f.id, Kind: IdentifierKind(f.id), Target: f.target, Failures: f.failures, Source: loc,
		TargetIsDefault: ezidDefaultTarget(f.id, f.target)}
	fail := func(field, reason string) error {
		return &textin.RowError{Loc: loc, ID: f.id, Field: field, Reason: reason}
	}
	if f.target == "" {
		return nil, fail("target", "empty target: a link-check record is about a target")
	}
	if f.checked.IsZero() {
		if f.hasCode && f.code != 0 {
			return nil, fail("lastCheckTime", fmt.Sprintf("no check time (never checked) but return code %d", f.code))
		}
		return rec, nil
	}
	rec.Checked = true
	c := linkcheck.Check{Time: f.checked, Target: f.target, Status: f.code, MIME: f.mime, Size: f.size}
	c.Error = EZIDLinkErrorClass(f.errText)
	if f.code == 0 && c.Error == linkcheck.ErrNone {
		c.Error = linkcheck.ErrOther // checked, no HTTP answer, no error text
	}
	if f.hash != "" {
		b, err := hex.DecodeString(f.hash)
		if err != nil || len(b) != 16 {
			return nil, fail("hash", fmt.Sprintf("%q is not an MD5 digest (32 hex digits)", clip(f.hash, 40)))
		}
		c.BodyHash, c.HashAlg = strings.ToLower(f.hash), "md5"
	}
	c.Outcome = linkcheck.OutcomeOf(c)
	s := linkcheck.State{Target: f.target, Last: c, GoodSize: -1, Broken: f.bad}
	switch c.Outcome {
	case linkcheck.OutcomeGood:
		// a good check ends a run of failures (EZID resets numFailures on success)
		s.LastSuccess = f.checked
		if f.bad {
			return nil, fail("isBad", "marked bad although its last check was good")
		}
	case linkcheck.OutcomeFailed:
		// the count as given; an empty count is the one failure the record shows
		s.ConsecutiveFailures = max(f.failures, 1)
		// the only failure time the record proves is its last check
		s.FirstFailure = f.checked
	case linkcheck.OutcomeInconclusive:
		s.ConsecutiveFailures = max(f.failures, 0)
		if s.ConsecutiveFailures > 0 {
			s.FirstFailure = f.checked
		}
	}
	rec.State = s
	return rec, nil
}

// ezidLinkCheckObject maps one ezidapp.linkchecker object of a Django dump
// (shared/data/ezid/db.linkchecker.jsonl): identifier, target, lastCheckTime
// (Unix seconds, 0 never checked), numFailures, isBad, returnCode (null when
// never checked, -1 when there was no HTTP answer), error, mimeType, size,
// hash (hex MD5 of the body read). Other models are refused.
func ezidLinkCheckObject(o *djangoObject, loc textin.Location) (Item, error) {
	if o.Model != "ezidapp.linkchecker" {
		return refuse(o.Model, loc), nil
	}
	var f ezidLinkFields
	text := func(k string) (string, bool, error) {
		v, null, err := jsonText(o.Fields.get(k))
		if err != nil {
			return "", false, &textin.RowError{ID: f.id, Field: k, Reason: "not a JSON scalar", Err: err}
		}
		return v, null, nil
	}
	integer := func(k string) (int64, bool, error) {
		v, null, err := text(k)
		if err != nil || null {
			return 0, null, err
		}
		n, perr := strconv.ParseInt(v, 10, 64)
		if perr != nil {
			return 0, false, &textin.RowError{ID: f.id, Field: k, Reason: fmt.Sprintf("%q is not an integer", clip(v, 40))}
		}
		return n, false, nil
	}
	var err error
	if f.id, _, err = text("identifier"); err != nil {
		return Item{}, err
	}
	if f.id == "" {
		return Item{}, &textin.RowError{Field: "identifier", Reason: "empty identifier"}
	}
	if f.target, _, err = text("target"); err != nil {
		return Item{}, err
	}
	t, null, err := integer("lastCheckTime")
	if err != nil {
		return Item{}, err
	}
	if !null && t != 0 {
		if f.checked, err = parseUnix(strconv.FormatInt(t, 10)); err != nil {
			return Item{}, &textin.RowError{ID: f.id, Field: "lastCheckTime", Reason: err.Error()}
		}
	}
	code, null, err := integer("returnCode")
	if err != nil {
		return Item{}, err
	}
	if f.code, err = ezidReturnCode(code, null); err != nil {
		return Item{}, &textin.RowError{ID: f.id, Field: "returnCode", Reason: err.Error()}
	}
	f.hasCode = !null
	n, null, err := integer("numFailures")
	if err != nil {
		return Item{}, err
	}
	f.failures = -1
	if !null {
		if n < 0 || n > 1<<31-1 {
			return Item{}, &textin.RowError{ID: f.id, Field: "numFailures", Reason: fmt.Sprintf("%d is not a count", n)}
		}
		f.failures = int(n)
	}
	bad, _, err := text("isBad")
	if err != nil {
		return Item{}, err
	}
	switch bad {
	case "true":
		f.bad = true
	case "false", "":
	default:
		return Item{}, &textin.RowError{ID: f.id, Field: "isBad", Reason: fmt.Sprintf("%q is not true or false", clip(bad, 20))}
	}
	if f.errText, _, err = text("error"); err != nil {
		return Item{}, err
	}
	if f.mime, _, err = text("mimeType"); err != nil {
		return Item{}, err
	}
	size, null, err := integer("size")
	if err != nil {
		return Item{}, err
	}
	f.size = -1
	if !null {
		if size < 0 {
			return Item{}, &textin.RowError{ID: f.id, Field: "size", Reason: fmt.Sprintf("%d is not a size", size)}
		}
		f.size = size
	}
	if f.hash, _, err = text("hash"); err != nil {
		return Item{}, err
	}
	rec, err := ezidLinkRecord(f, loc)
	if err != nil {
		return Item{}, err
	}
	return Item{LinkCheck: rec}, nil
}

// ezidReturnCode reads EZID's returnCode: an HTTP status (100–999), -1 for
// "no HTTP answer" and null for "never checked", both of which give 0.
func ezidReturnCode(code int64, null bool) (int, error) {
	switch {
	case null, code == -1:
		return 0, nil
	case code >= 100 && code <= 999:
		return int(code), nil
	}
	return 0, fmt.Errorf("%d is neither an HTTP status nor -1", code)
}

// ezidLinkTSVReader reads EZID's link-checker TSV (linkchecker_test_id_url_v0.tsv): a header
// naming the columns (identifier, url, returnCode, the check time as
// from_unixtime(lastChecktime) or lastCheckTime, and optionally numFailures
// and isBad), then one tab-separated row per identifier.
type ezidLinkTSVReader struct {
	src  *tsvSource
	name string
	col  map[string]int
	// width is the header's number of fields
	width int
	zone  *time.Location
	err   error // a header error, returned by the first step
}

func newEZIDLinkTSVReader(name string, br *bufio.Reader) *ezidLinkTSVReader {
	r := &ezidLinkTSVReader{name: name, src: newTSVSource(name, br), col: map[string]int{}}
	zone, err := time.LoadLocation(EZIDLinkCheckZone)
	if err != nil {
		r.err = fmt.Errorf("%s: time zone %s: %w", name, EZIDLinkCheckZone, err)
		return r
	}
	r.zone = zone
	h, _, err := r.src.row()
	if err != nil {
		if err == io.EOF {
			r.err = fmt.Errorf("%s: empty file, no link-check TSV header: %w", name, ErrUnknownFormat)
		} else {
			r.err = fmt.Errorf("%s: link-check TSV header: %w", name, err)
		}
		return r
	}
	r.src.records = 0
	r.width = len(h)
	for i, c := range h {
		c = strings.ToLower(strings.TrimSpace(c))
		if strings.HasPrefix(c, "from_unixtime(") {
			c = "lastchecktime"
		}
		if _, dup := r.col[c]; !dup {
			r.col[c] = i
		}
	}
	for _, need := range []string{"identifier", "url", "returncode", "lastchecktime"} {
		if _, ok := r.col[need]; !ok {
			r.err = fmt.Errorf("%s:line 1: link-check TSV header %q has no %s column: %w", name, clip(strings.Join(h, "\t"), 200), need, ErrUnknownFormat)
			return r
		}
	}
	return r
}

func (r *ezidLinkTSVReader) step() (Item, error) {
	if r.err != nil {
		err := r.err
		r.err = io.EOF
		return Item{}, err
	}
	row, loc, err := r.src.row()
	if err != nil {
		return Item{}, err
	}
	get := func(c string) string {
		if i, ok := r.col[c]; ok && i < len(row) {
			return strings.TrimSpace(row[i])
		}
		return ""
	}
	var f ezidLinkFields
	f.id, f.target = get("identifier"), get("url")
	rowErr := func(field, reason string) error {
		return &textin.RowError{Loc: loc, ID: f.id, Field: field, Reason: reason, Raw: rawRow(row)}
	}
	// a spreadsheet drops trailing empty cells: a short row reads them as empty
	if len(row) > r.width {
		return Item{}, rowErr("row", fmt.Sprintf("row has %d fields, the header has %d", len(row), r.width))
	}
	if f.id == "" {
		return Item{}, rowErr("identifier", "empty identifier")
	}
	code := get("returncode")
	switch {
	case strings.EqualFold(code, "NULL") || code == "":
	default:
		n, err := strconv.ParseInt(code, 10, 64)
		if err == nil {
			f.code, err = ezidReturnCode(n, false)
		}
		if err != nil {
			return Item{}, rowErr("returnCode", fmt.Sprintf("%q is neither an HTTP status, -1 nor NULL", clip(code, 40)))
		}
		f.hasCode = true
	}
	if v := get("lastchecktime"); v != "" && !strings.EqualFold(v, "NULL") {
		t, err := parseUSMinute(v, r.zone)
		if err != nil {
			return Item{}, rowErr("lastCheckTime", err.Error())
		}
		if t.Unix() != 0 { // Unix 0 is EZID's "never checked"
			f.checked = t.UTC()
		}
	}
	f.failures = -1
	if v := get("numfailures"); v != "" && !strings.EqualFold(v, "NULL") {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return Item{}, rowErr("numFailures", fmt.Sprintf("%q is not a count", clip(v, 40)))
		}
		f.failures = n
	}
	switch v := strings.ToLower(get("isbad")); v {
	case "1", "true":
		f.bad = true
	case "", "0", "false", "null":
	default:
		return Item{}, rowErr("isBad", fmt.Sprintf("%q is not 0 or 1", clip(v, 20)))
	}
	f.size = -1
	rec, err := ezidLinkRecord(f, loc)
	if err != nil {
		if re, ok := err.(*textin.RowError); ok {
			re.Raw = rawRow(row)
		}
		return Item{}, err
	}
	return Item{LinkCheck: rec}, nil
}

// parseUSMinute reads a zoneless time in zone: "M/D/YY H:MM" (what a
// spreadsheet shows: "4/12/23 15:43", seconds optional, a four-digit year
// allowed) or MySQL's own "YYYY-MM-DD HH:MM:SS". A two-digit year is
// 1969–2068, the POSIX strptime %y rule (69–99 are 19xx, 00–68 are 20xx).
func parseUSMinute(v string, zone *time.Location) (time.Time, error) {
	for _, layout := range []string{"1/2/06 15:04", "1/2/06 15:04:05", "1/2/2006 15:04", "1/2/2006 15:04:05",
		"2006-01-02 15:04:05", "2006-01-02 15:04"} {
		if t, err := time.ParseInLocation(layout, v, zone); err == nil {
			return t, nil // Go reads "06" as 1969–2068, the POSIX rule
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a time M/D/YY H:MM or YYYY-MM-DD HH:MM:SS", clip(v, 40))
}

// tsvSource yields the tab-separated rows of a text file, one row a line: EZID's link-checker
// TSV quotes nothing, so a double quote is data and a tab always separates. An empty line is
// skipped; a line over MaxLineBytes is a *textin.RowError (reading goes on); a last line without its
// line end is a *TruncatedError (the file was cut), and is not yielded.
type tsvSource struct {
	name    string
	lr      *lineReader
	records int
	done    bool
}

func newTSVSource(name string, br *bufio.Reader) *tsvSource {
	return &tsvSource{name: name, lr: newLineReader(br)}
}

// row returns the next row and its location; io.EOF at the end.
func (s *tsvSource) row() ([]string, textin.Location, error) {
	for !s.done {
		text, n, term, err := s.lr.next()
		if err == io.EOF {
			s.done = true
			break
		}
		if errors.Is(err, errLineTooLong) {
			s.records++
			loc := textin.Location{File: s.name, Line: n, Record: s.records}
			return nil, loc, &textin.RowError{Loc: loc, Field: "row", Reason: fmt.Sprintf("line longer than %d octets", MaxLineBytes), Err: err}
		}
		if err != nil {
			return nil, textin.Location{}, fmt.Errorf("%s:line %d: %w", s.name, n, err)
		}
		if len(text) == 0 {
			continue
		}
		s.records++
		loc := textin.Location{File: s.name, Line: n, Record: s.records}
		if !term {
			s.done = true
			return nil, loc, &TruncatedError{Loc: loc,
				Reason: fmt.Sprintf("the last row (line %d) has no line end: the file was cut; that row is not yielded", n)}
		}
		if !utf8.Valid(text) {
			return nil, loc, &textin.RowError{Loc: loc, Field: "row", Reason: "line is not valid UTF-8 (kept raw for the reject file)", Raw: clipRaw(string(text))}
		}
		return strings.Split(string(text), "\t"), loc, nil
	}
	return nil, textin.Location{}, io.EOF
}
