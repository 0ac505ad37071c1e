package legacy

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/report"
	"github.com/arkhe-ledger/arkhe/textin"
)

// Limits on imported values, in octets. A longer value is refused
// with a *textin.RowError naming the limit, never truncated.
const (
	// MaxTarget is the longest target URL the ledger stores (ark.url varchar(2048)).
	MaxTarget = 2048
	// MaxERC is the longest ERC kernel value or commitment (64 KiB).
	MaxERC = 64 << 10
)

// Row is one legacy identifier record normalized for the ledger. NormalizeRecord builds it; the importer writes it and reconcile compares
// it with the ledger, so both read an export the same way.
type Row struct {
	// ARK is the parsed, normalized ARK; ARK.Key() is the ledger key "NAAN/name" (qualifier kept,
	// case kept; draft-kunze-ark §3.2).
	ARK ark.ARK
	// Original is the identifier exactly as the source spelled it, kept only when it differs from
	// the normalized key beyond the label form and the NMA host; nil otherwise.
	Original *string
	// Target is the target URL; nil when the source has none: absent, empty (arklet url ''), or
	// EZID's default self-reference. At most MaxTarget octets.
	Target *string
	// Status is "public", "reserved" or "unavailable" (a tombstone); Reason the tombstone
	// reason of an unavailable ARK, nil when none was given.
	Status string
	Reason *string
	// Who, What, When are the ERC kernel elements and Commitment the persistence statement;
	// nil when absent (never invented). Each at most MaxERC octets.
	Who, What, When, Commitment *string
	// Metadata is a JSON object (keys sorted) of every other element the source carried
	// (Record.Metadata without arklet's structural columns, plus "owner",
	// "redirect_code", and "created_at_given"/"updated_at_given" for times given in a zone
	// other than UTC); nil when there is none.
	Metadata []byte
	// Created and Updated are the times as given; nil when unknown.
	Created, Updated *time.Time
	// Source locates the record in its export.
	Source textin.Location
	// Refused lists the values of the record that were refused and left out (a target that is
	// not http(s), carries userinfo or is over MaxTarget; an ERC value over MaxERC; a value that
	// is not valid UTF-8 or holds a NUL byte; an unknown status), each naming its field and the
	// reason. A record with a refused value keeps its name: its Status is "reserved", so the ARK
	// lands in the ledger without the value and the name can never be minted again.
	Refused []textin.RowError

	key string // ARK.Key(), computed once
}

// Key returns the ledger key "NAAN/name".
func (r *Row) Key() string {
	if r.key == "" {
		r.key = r.ARK.Key()
	}
	return r.key
}

// SameContent reports whether r and o carry the same target, status, tombstone reason, ERC
// kernel, commitment and metadata: the values the importer compares with the ledger (times and
// spelling are not compared).
func (r *Row) SameContent(o *Row) bool {
	return SameText(r.Target, o.Target) && r.Status == o.Status && SameText(r.Reason, o.Reason) &&
		SameText(r.Who, o.Who) && SameText(r.What, o.What) && SameText(r.When, o.When) &&
		SameText(r.Commitment, o.Commitment) && string(r.Metadata) == string(o.Metadata) &&
		(r.Metadata == nil) == (o.Metadata == nil)
}

// SameText reports whether two values of a nullable text column are the same, as import and
// reconcile compare an export with the ledger: both NULL (nil), or both present and equal.
// NULL and "" differ: an empty value given is not a value missing.
func SameText(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// arkletStructural are the arklet columns that only restate the ARK;
// they are checked, not stored.
var arkletStructural = [...]string{MetaArkletNAAN, MetaArkletShoulder,
	MetaArkletShoulderID, MetaArkletAssignedName}

// ParseLegacyID parses an identifier as an export spells it: labelled ("ark:/13030/x",
// "ARK:13030/x"), behind an NMA ("https://n2t.net/ark:/13030/x") or arklet's unlabelled stored
// form "13030/x" (to which the label is added). Hyphen-likes are removed
// (ark.Options.Import). The returned ARK's Original is id exactly. Errors are those of
// ark.ParseWith (*ark.SyntaxError, *ark.LimitError).
func ParseLegacyID(id string) (ark.ARK, error) {
	a, err := ark.ParseWith(id, ark.Options{Import: true})
	if err != nil && errors.Is(err, ark.ErrNotARK) && IdentifierKind(id) == "ark" {
		a, err = ark.ParseWith("ark:"+id, ark.Options{Import: true})
	}
	return a, err
}

// NormalizeRecord maps one legacy record onto the ledger's columns: the
// identifier is parsed with ParseLegacyID and its spelling kept where it differs;
// arklet's naan_id must equal the ARK's NAAN as a string (a NAAN that matches only after
// int() is refused); EZID's default self-referential target and empty targets become "no
// target"; status and reason are kept; times are kept as given; every
// other element goes to Metadata. It does not decide about reserved or test ARKs, shoulders or
// check characters. The caller passes only records of kind "ark".
//
// A value that cannot be kept (a target refused by textin.CheckTarget, the rule mint applies:
// not http(s), userinfo, over MaxTarget; an ERC value over MaxERC; invalid UTF-8 or a NUL byte
// in any field; an unknown status) does not lose the name: the value is left out, listed in
// Row.Refused, and the row becomes reserved.
//
// Errors, when the record names no ARK the ledger can hold, are *textin.RowError with the
// record's location and identifier, naming the field: "id" (not an ARK, or the name over 255
// octets — the reason names the limit) or "naan".
func NormalizeRecord(rec *Record) (Row, error) {
	row, p := normalizeRecord(rec)
	if p != nil {
		p.Loc, p.ID = rec.Source, rec.ID
		return row, p
	}
	return row, nil
}

// normalizeRecord is NormalizeRecord; its error names the field and the reason only.
func normalizeRecord(rec *Record) (Row, *textin.RowError) {
	row := Row{Source: rec.Source}
	a, err := ParseLegacyID(rec.ID)
	if err != nil {
		var le *ark.LimitError
		if errors.As(err, &le) {
			return row, &textin.RowError{Field: "id", Reason: "ARK refused: " + le.Error()}
		}
		return row, &textin.RowError{Field: "id", Reason: "not a valid ARK", Err: err}
	}
	row.ARK = a
	row.ARK.Original = rec.ID
	if a.OriginalDiffers() {
		row.Original = &row.ARK.Original
	}
	if n := rec.Metadata[MetaArkletNAAN]; n != "" && n != a.NAAN {
		return row, &textin.RowError{Field: "naan", Reason: fmt.Sprintf(
			"the ARK's NAAN %q differs from arklet's naan_id %s; a NAAN is a string and one that matches only after int() is not the same NAAN",
			a.NAAN, n)}
	}
	refuse := func(field, reason string) {
		row.Refused = append(row.Refused, textin.RowError{Loc: rec.Source, ID: rec.ID, Field: field, Reason: reason})
	}
	if rec.HasTarget && !rec.TargetIsDefault && rec.Target != "" {
		if reason := textin.CheckTarget(rec.Target, textin.Limits{MaxURL: MaxTarget}); reason != "" {
			refuse("target", reason)
		} else {
			t := rec.Target
			row.Target = &t
		}
	}
	switch rec.Status {
	case "", StatusPublic:
		row.Status = "public"
	case StatusReserved:
		row.Status = "reserved"
	case StatusUnavailable:
		row.Status = "unavailable"
		if rec.StatusReason != "" {
			r := rec.StatusReason
			row.Reason = &r
		}
	default:
		refuse("status", fmt.Sprintf("status %q is not public, reserved or unavailable", rec.Status))
	}
	for _, f := range []struct {
		name string
		src  *string
		dst  **string
	}{{"who", rec.Who, &row.Who}, {"what", rec.What, &row.What}, {"when", rec.When, &row.When}, {"commitment", rec.Commitment, &row.Commitment}} {
		if f.src == nil {
			continue
		}
		if len(*f.src) > MaxERC {
			refuse(f.name, fmt.Sprintf("value is %d octets; the limit is %d", len(*f.src), MaxERC))
			continue
		}
		v := *f.src
		*f.dst = &v
	}
	row.Created, row.Updated = rec.Created, rec.Updated
	var meta map[string]string
	for k, v := range rec.Metadata {
		if isStructural(k) {
			continue
		}
		if meta == nil {
			meta = make(map[string]string, len(rec.Metadata)+2)
		}
		meta[k] = v
	}
	add := func(k, v string) {
		if meta == nil {
			meta = map[string]string{}
		}
		meta[k] = v
	}
	if rec.Owner != "" {
		add("owner", rec.Owner)
	}
	if rec.RedirectCode != 0 {
		add("redirect_code", strconv.Itoa(rec.RedirectCode))
	}
	for _, t := range []struct {
		name string
		t    *time.Time
	}{{"created_at_given", rec.Created}, {"updated_at_given", rec.Updated}} {
		if t.t != nil {
			if _, off := t.t.Zone(); off != 0 {
				add(t.name, t.t.Format(time.RFC3339Nano))
			}
		}
	}
	// every text value must survive PostgreSQL text and jsonb: valid UTF-8, no NUL (one such byte aborts a whole COPY)
	for _, f := range []struct {
		name string
		v    **string
	}{{"target", &row.Target}, {"status reason", &row.Reason}, {"who", &row.Who}, {"what", &row.What},
		{"when", &row.When}, {"commitment", &row.Commitment}} {
		if *f.v != nil {
			if p := CheckText(f.name, **f.v); p != nil {
				refuse(p.Field, p.Reason)
				*f.v = nil
			}
		}
	}
	for k, v := range meta {
		p := CheckText("metadata key", k)
		if p == nil {
			p = CheckText(k, v)
		}
		if p != nil {
			refuse(p.Field, p.Reason)
			delete(meta, k)
		}
	}
	if len(row.Refused) > 0 {
		// the name stays taken: the ARK lands reserved, without what was refused
		row.Status, row.Reason = "reserved", nil
	}
	if len(meta) > 0 {
		b, err := metaJSON(meta)
		if err != nil {
			return row, &textin.RowError{Field: "metadata", Reason: "cannot encode as JSON", Err: err}
		}
		row.Metadata = b
	}
	return row, nil
}

func isStructural(k string) bool {
	for _, s := range arkletStructural {
		if k == s {
			return true
		}
	}
	return false
}

// CheckText refuses a value PostgreSQL text cannot hold, invalid UTF-8 or a NUL byte (either
// would abort a whole COPY): it returns a *textin.RowError naming the field and the reason
// (no location: the caller knows it), or nil.
func CheckText(field, s string) *textin.RowError {
	if !utf8.ValidString(s) {
		return &textin.RowError{Field: field, Reason: "value is not valid UTF-8"}
	}
	if strings.IndexByte(s, 0) >= 0 {
		return &textin.RowError{Field: field, Reason: "value holds a NUL byte, which PostgreSQL text cannot store"}
	}
	return nil
}

// metaJSON encodes m as a JSON object with sorted keys and no HTML escaping, so equal maps
// give equal bytes.
func metaJSON(m map[string]string) ([]byte, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b := make([]byte, 0, 64*len(m))
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = report.AppendJSONString(b, k)
		b = append(b, ':')
		b = report.AppendJSONString(b, m[k])
	}
	return append(b, '}'), nil
}

// NormalizeNAAN returns a NAAN as the ledger stores it — lowercased, hyphens removed, 1–16
// betanumerics (draft-kunze-ark §2.3, §3.2) — or an error naming the rule.
func NormalizeNAAN(s string) (string, error) {
	a, err := ark.ParseWith("ark:"+s+"/x", ark.Options{Import: true})
	if err != nil {
		var le *ark.LimitError
		if errors.As(err, &le) {
			return "", fmt.Errorf("NAAN %q refused: %s", s, le.Error())
		}
		return "", fmt.Errorf("NAAN %q is not 1-16 betanumerics (draft-kunze-ark §2.3)", s)
	}
	if a.Name != "x" {
		return "", fmt.Errorf("NAAN %q is not 1-16 betanumerics (draft-kunze-ark §2.3)", s)
	}
	return a.NAAN, nil
}
