// Package legacy reads the exports of the systems arkhe replaces — arklet
// (Django dumpdata JSON and ark_ark CSV), N2T egg binders (db_dump -p),
// EZID (ANVL and CSV batch downloads, database dumps) and the NAAN registry
// (ANVL, 2023 JSON, 2024 JSON with shoulder records, shoulder lists) — and
// yields their records one at a time with the file, line and record number
// each came from.
//
// Readers stream: memory is bounded by the largest single record, never by
// the file. They keep every value exactly as the source spelled it — an ARK
// string is not normalized by a reader; times keep their zone and an unknown
// time stays nil.
// A bad record is reported as a *textin.RowError and reading continues; a file
// that ends in the middle of a record yields every complete record and then
// one *TruncatedError, then io.EOF.
//
// NormalizeRecord then maps a record onto the ledger's columns (a [Row]), and
// a [ShoulderIndex] assigns its shoulder: pure functions, no database, shared
// by `arkhe import` and `arkhe reconcile` so both read an export the same way.
package legacy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/arkhe-ledger/arkhe/textin"
)

// Status is an identifier's publication status in the source system, in
// EZID's vocabulary (unavailable is a tombstone; the ARK stays). Systems with no
// status (arklet, N2T binders without `_is`) yield StatusPublic.
type Status string

// The three statuses found in legacy systems.
const (
	// StatusPublic: registered with resolvers (EZID `public`, the default).
	StatusPublic Status = "public"
	// StatusReserved: minted but never published (EZID `reserved`).
	StatusReserved Status = "reserved"
	// StatusUnavailable: a tombstone; the real target is kept in Record.Target
	// and the reason in Record.StatusReason (EZID `unavailable | reason`).
	StatusUnavailable Status = "unavailable"
)

// Record is one identifier read from an export. Identity and target fields
// are kept exactly as in the source; the importer normalizes.
type Record struct {
	// ID is the identifier exactly as spelled in the source:
	// "ark:/13030/c8251g4t" (EZID, N2T), "12345/x6b4dp12wkm" (arklet stores no
	// label), "doi:10.5063/AA/CONNOLLY.132.4".
	ID string
	// Kind is the identifier scheme from IdentifierKind: "ark", "doi",
	// "uuid", ...; the importer imports "ark" and counts the rest as skipped.
	Kind string
	// Target is the target URL as given, without an N2T leading redirect
	// code; "" when the source has none. For EZID non-public records it is
	// the real stored target, not the tombstone/default URL.
	Target string
	// HasTarget reports whether the source carries a non-empty target.
	HasTarget bool
	// TargetIsDefault reports that Target is EZID's default self-reference
	// "http(s)://ezid.cdlib.org/id/<ID>", which EZID stores when no target
	// was given; the importer may treat it as
	// "no target".
	TargetIsDefault bool
	// RedirectCode is the HTTP code N2T keeps in front of a `_t` value
	// ("303 https://…"), or 0.
	RedirectCode int
	// Who, What, When are the ERC kernel elements; Commitment the arklet
	// commitment (or Frick `rights`). nil means absent, never "" invented.
	Who, What, When, Commitment *string
	// Metadata keeps every other element under its source name (e.g.
	// "_profile", "dc.title", "datacite", "arklet.metadata", "_,ep"). A name
	// that repeats has its values joined by " ; " in source order, as EZID's
	// anvl.parseConcatenate does. nil when there is nothing else.
	Metadata map[string]string
	// Status and StatusReason ("Object in restricted Merritt collection.").
	Status       Status
	StatusReason string
	// Created and Updated are the times as given, in the zone given (Unix
	// times in UTC); nil when the source has none.
	Created, Updated *time.Time
	// Owner is who holds the identifier in the source system, as given: an
	// EZID username (downloads), an agent PID (N2T `_o`), the decimal user
	// key (EZID database dump: the user table is not exported); "" if unknown.
	Owner string
	// Source locates the record.
	Source textin.Location
}

// NAANRecord is one Name Assigning Authority from the NAAN registry (ANVL,
// 2023 and 2024 JSON) or an arklet `ark.naan` row.
type NAANRecord struct {
	// NAAN exactly as given, as a string: "12345", "b5060". For arklet
	// it is the decimal text of the integer key (leading zeros already lost).
	NAAN string
	// Name is the organisation's name; NameNative its native-language name
	// and Acronym its acronym (ANVL `who: Native (=) Name (=) ACRONYM`).
	Name, NameNative, Acronym string
	// Where is the base URL (ANVL/JSON `where`, arklet `url`) without a
	// leading HTTP code; Target the resolver template ("…/$arkpid" in 2023,
	// target.url with ${content}/${pid}/${value} in 2024) or "".
	Where, Target string
	// RedirectCode is target.http_code (2024) or the code in front of
	// `where` ("303 https://…"), else 0.
	RedirectCode int
	// When is the registration/last-change date as given (ANVL yyyy.mm.dd is
	// read as that day at 00:00 UTC); nil when absent.
	When *time.Time
	// OrgType, Policy, Tenure, PolicyURL are the parts of ANVL
	// `how: NP | NR, OP, CC | 2002 | URL` or 2023/2024 `na_policy`.
	OrgType, Policy, Tenure, PolicyURL string
	// Description is arklet's free-text description.
	Description string
	// TestIdentifier, ServiceProvider, Purpose are 2024 JSON fields.
	TestIdentifier, ServiceProvider, Purpose string
	// Metadata keeps every other element (ANVL `!contact`, …); nil if none.
	Metadata map[string]string
	// Source locates the record.
	Source textin.Location
}

// ShoulderRecord is one shoulder from a shoulder list (EZID CSV, EZID
// database, N2T master shoulders, EZID log), a 2024 registry shoulder
// record, a registry ANVL shoulder block or an arklet `ark.shoulder` row.
type ShoulderRecord struct {
	// Prefix is the whole prefix exactly as given ("ark:/87940/m4",
	// "doi:10.7939/DVN", "ark:/87286/", 2024 `what` "99166/w6"); "" for
	// arklet, which stores NAAN and shoulder apart.
	Prefix string
	// Kind is "ark" or "doi" (see IdentifierKind).
	Kind string
	// NAAN as a string ("13030", "b5060"); for DOIs the DOI prefix ("10.7939").
	NAAN string
	// Shoulder exactly as in the source, after NAAN and its slash: "m4",
	// "s6.caida", "" for a NAAN-wide shoulder; arklet keeps its leading
	// slash ("/x6"). The importer matches without the slash.
	Shoulder string
	// Name of the shoulder's owner or project ("?1?" occurs).
	Name, Acronym string
	// Minter is the minter URL, "" when the shoulder has none.
	Minter string
	// Target is the resolver template and RedirectCode its HTTP code (2024
	// registry), Where the base URL.
	Target       string
	RedirectCode int
	Where        string
	// Redirect is EZID's shoulder `redirect` field.
	Redirect string
	// Type is EZID's type ("ARK", "DOI", N2T "shoulder"), Manager "ezid"/"other".
	Type, Manager, Datacenter string
	// Status is "active" or "inactive" where the source says (EZID database);
	// "" otherwise.
	Status string
	// IsSupershoulder and IsTest as flagged by the source.
	IsSupershoulder, IsTest bool
	// Date is the registration date as given (nil when absent).
	Date *time.Time
	// SourceID is the source's own key (arklet/EZID primary key) as text, so
	// that Frick `shoulder_id` references can be resolved; "" if none.
	SourceID string
	// Description is arklet's free-text description.
	Description string
	// Metadata keeps every other element; nil if none.
	Metadata map[string]string
	// Source locates the record.
	Source textin.Location
}

// Refused is a record the reader will not yield: arklet `ark.user`,
// `ark.key`, `ark.apikey` (they hold password hashes and API tokens, so
// neither their key nor their fields are kept) and
// any model the reader does not import (another format may: an EZID
// dump's link-check results, its shoulders).
type Refused struct {
	// Model is the source model name, e.g. "ark.key".
	Model string
	// What says what the model's records are, as a plural noun for a summary:
	// "credentials (password hashes or API tokens)", "link-check results",
	// "shoulder records", or "records arkhe does not import" for a model it does
	// not know.
	What string
	// Reason is a sentence for the operator, naming the command that imports
	// the records when one does.
	Reason string
	// Secret is set for records that hold credentials: no format imports them.
	Secret bool
	// Source locates the record.
	Source textin.Location
}

// Item holds exactly one of its fields: what the reader found next.
type Item struct {
	Record   *Record
	NAAN     *NAANRecord
	Shoulder *ShoulderRecord
	Refused  *Refused
	// LinkCheck is a legacy link checker's state for one identifier.
	LinkCheck *LinkCheckRecord
}

// Loc returns the location of whichever record the item holds.
func (it Item) Loc() textin.Location {
	switch {
	case it.Record != nil:
		return it.Record.Source
	case it.NAAN != nil:
		return it.NAAN.Source
	case it.Shoulder != nil:
		return it.Shoulder.Source
	case it.Refused != nil:
		return it.Refused.Source
	case it.LinkCheck != nil:
		return it.LinkCheck.Source
	}
	return textin.Location{}
}

// Reader yields the records of one export in file order.
//
// Next returns the next Item, or:
//   - a *textin.RowError for a bad record (the Item is empty; call Next again),
//   - a *TruncatedError once, after the last complete record, when the file
//     ends mid-record or without its end marker, or when its gzip or xz
//     stream breaks (cut short or corrupt: the reason then names the line and
//     the last record read before the break); io.EOF follows,
//   - io.EOF at the end,
//   - ctx.Err() when ctx is done (not sticky),
//   - any other error (I/O, a syntax error that loses the record
//     boundaries) is fatal and returned again by every later call.
type Reader interface {
	Next(ctx context.Context) (Item, error)
	// Close releases the file opened by Open; it is a no-op for NewReader.
	Close() error
}

// TruncatedError reports that the file ends in the middle of a record or
// without its end marker (N2T `DATA=END`, a JSON array's `]`). Loc.Line is
// the line on which the file ends; Loc.Record the record that was cut (or
// may be incomplete). Every complete record before it has been yielded.
type TruncatedError struct {
	Loc    textin.Location
	Reason string
}

// Error renders "FILE:LINE (record R): truncated: reason" (see textin.Location).
func (e *TruncatedError) Error() string {
	return e.Loc.String() + ": truncated: " + e.Reason
}

// ErrUnknownFormat is wrapped by DetectFormat, Open and NewReader when the
// format cannot be recognised or is not one of Formats().
var ErrUnknownFormat = errors.New("unknown legacy export format")

// ErrDuplicateColumn is wrapped by Open and NewReader when a CSV export's header names a column
// twice: which of its two values would be imported cannot be known, so the export is refused.
var ErrDuplicateColumn = errors.New("column named twice in the header")

// maxRaw bounds textin.RowError.Raw.
const maxRaw = 64 << 10

func clipRaw(s string) string {
	if len(s) > maxRaw {
		return s[:maxRaw]
	}
	return s
}

// IdentifierKind returns the scheme of an identifier as it appears in an
// export: "ark" for `ark:`/`ARK:` labels, an NMA URL containing "/ark:", or
// arklet's unlabelled "NAAN/name"; otherwise the lower-cased text before the
// first ":" ("doi", "uuid", …), or "unknown".
func IdentifierKind(id string) string {
	s := strings.TrimSpace(id)
	if strings.IndexByte(s, ':') < 0 {
		if i := strings.IndexByte(s, '/'); i > 0 {
			return "ark" // arklet's stored form: NAAN/name
		}
		return "unknown"
	}
	if len(s) >= 4 && strings.EqualFold(s[:4], "ark:") {
		return "ark"
	}
	if i := indexFold(s, "/ark:"); i >= 0 && strings.Contains(s[:i], "://") {
		return "ark"
	}
	if i := strings.IndexByte(s, ':'); i > 0 {
		scheme := strings.ToLower(s[:i])
		if isSchemeName(scheme) {
			return scheme
		}
	}
	if i := strings.IndexByte(s, '/'); i > 0 && !strings.ContainsAny(s[:i], ":.") {
		return "ark" // arklet's stored form: NAAN/name
	}
	return "unknown"
}

// indexFold is strings.Index for an ASCII lower-case sub, ignoring ASCII case.
func indexFold(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return i
		}
	}
	return -1
}

func isSchemeName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return s != ""
}

// splitPrefix splits a shoulder prefix as given ("ark:/13030/bn",
// "ark:13030/bn", "13030/bn", "doi:10.7939/DVN", "ark:/87286/") into its
// kind, NAAN (DOI prefix) and shoulder, without changing any character.
func splitPrefix(prefix string) (kind, naan, shoulder string) {
	s := prefix
	kind = "ark"
	if i := strings.IndexByte(s, ':'); i > 0 && isSchemeName(strings.ToLower(s[:i])) {
		kind = strings.ToLower(s[:i])
		s = s[i+1:]
	}
	s = strings.TrimPrefix(s, "/")
	if i := strings.IndexByte(s, '/'); i >= 0 {
		return kind, s[:i], s[i+1:]
	}
	return kind, s, ""
}

// addMeta adds name=value to m (allocating it), joining a repeated name's
// values with " ; " (EZID impl/anvl.py parseConcatenate).
func addMeta(m map[string]string, name, value string) map[string]string {
	if m == nil {
		m = make(map[string]string)
	}
	if old, ok := m[name]; ok {
		if value == "" {
			return m
		}
		if old != "" {
			value = old + " ; " + value
		}
	}
	m[name] = value
	return m
}

func strPtr(s string) *string { return &s }

// ezidDefaultTarget reports whether target is EZID's default self-reference
// for id ("https://ezid.cdlib.org/id/" + id; http also seen in real data).
func ezidDefaultTarget(id, target string) bool {
	for _, p := range [...]string{"https://ezid.cdlib.org/id/", "http://ezid.cdlib.org/id/"} {
		if strings.HasPrefix(target, p) && target[len(p):] == id {
			return true
		}
	}
	return false
}

// splitRedirectCode splits an optional leading HTTP code from a target or
// `where` value ("303 https://x" → 303, "https://x"): 3 digits in 300–399
// followed by blanks.
func splitRedirectCode(v string) (int, string) {
	if len(v) > 4 && v[0] == '3' && isDigit(v[1]) && isDigit(v[2]) && (v[3] == ' ' || v[3] == '\t') {
		code := int(v[0]-'0')*100 + int(v[1]-'0')*10 + int(v[2]-'0')
		return code, strings.TrimLeft(v[4:], " \t")
	}
	return 0, v
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// parseEZIDStatus reads EZID's external status: "public", "reserved",
// "unavailable" or "unavailable | reason". An empty
// value means public (EZID `_is` absent).
func parseEZIDStatus(v string) (Status, string, error) {
	s, reason, _ := strings.Cut(v, "|")
	s = strings.TrimSpace(s)
	reason = strings.TrimSpace(reason)
	switch strings.ToLower(s) {
	case "", "public":
		if reason != "" {
			return "", "", fmt.Errorf("status %q: only unavailable carries a reason", v)
		}
		return StatusPublic, "", nil
	case "reserved":
		if reason != "" {
			return "", "", fmt.Errorf("status %q: only unavailable carries a reason", v)
		}
		return StatusReserved, "", nil
	case "unavailable":
		return StatusUnavailable, reason, nil
	}
	return "", "", fmt.Errorf("status %q is not public, reserved or unavailable", v)
}
