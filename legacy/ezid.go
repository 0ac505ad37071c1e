package legacy

import (
	"bufio"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/arkhe-ledger/arkhe/textin"
)

// kv is one element name and value in source order.
type kv struct{ k, v string }

// EZID element names mapped onto Record fields;
// every other element goes to Record.Metadata under its own name.
const (
	ezidTarget  = "_target"
	ezidStatus  = "_status"
	ezidCreated = "_created"
	ezidUpdated = "_updated"
	ezidOwner   = "_owner"
	ezidERC     = "erc" // the whole ERC record as one ANVL text
)

// ezidRecord maps EZID elements (download ANVL/CSV names) onto a Record.
// Empty values are absent (EZID: "absent element = empty cell"). ERC
// who/what/when come from erc.who/erc.what/erc.when, else from the `erc`
// ANVL text; dc.*, datacite.* etc. stay in Metadata.
func ezidRecord(id string, loc textin.Location, els []kv) (*Record, error) {
	rec := &Record{ID: id, Kind: IdentifierKind(id), Status: StatusPublic, Source: loc}
	fail := func(field, reason string, err error) error {
		return &textin.RowError{Loc: loc, ID: id, Field: field, Reason: reason, Err: err}
	}
	explicit := map[string][]string{}
	var blob *string
	seen := map[string]bool{}
	for _, e := range els {
		if e.v == "" {
			continue
		}
		first := !seen[e.k]
		seen[e.k] = true
		if first {
			switch e.k {
			case ezidTarget:
				rec.Target = e.v
				continue
			case ezidStatus:
				st, reason, err := parseEZIDStatus(e.v)
				if err != nil {
					return nil, fail(e.k, "bad status", err)
				}
				rec.Status, rec.StatusReason = st, reason
				continue
			case ezidCreated, ezidUpdated:
				t, err := parseUnixOrISO(e.v)
				if err != nil {
					return nil, fail(e.k, "bad time stamp", err)
				}
				if e.k == ezidCreated {
					rec.Created = &t
				} else {
					rec.Updated = &t
				}
				continue
			case ezidOwner:
				rec.Owner = e.v
				continue
			case ezidERC:
				blob = strPtr(e.v)
			}
		}
		switch e.k {
		case "erc.who", "erc.what", "erc.when":
			explicit[e.k[4:]] = append(explicit[e.k[4:]], e.v)
			continue
		}
		rec.Metadata = addMeta(rec.Metadata, e.k, e.v)
	}
	fromBlob := map[string][]string{}
	if blob != nil {
		for _, e := range ercText(*blob) {
			fromBlob[e.name] = append(fromBlob[e.name], e.value)
		}
	}
	pick := func(name string) *string {
		vals := explicit[name]
		if len(vals) == 0 {
			vals = fromBlob[name]
		}
		if len(vals) == 0 {
			return nil
		}
		return strPtr(strings.Join(vals, " ; "))
	}
	rec.Who, rec.What, rec.When = pick("who"), pick("what"), pick("when")
	rec.HasTarget = rec.Target != ""
	rec.TargetIsDefault = ezidDefaultTarget(id, rec.Target)
	return rec, nil
}

// ercText splits an ERC ANVL text ("who: Unknown\nwhat: Photograph…") into
// elements; continuation lines are joined with one space; names are
// lower-cased (ERC element names are case-insensitive).
func ercText(s string) []n2tElem {
	var out []n2tElem
	for _, line := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			if len(out) > 0 {
				if t := strings.TrimSpace(line); t != "" {
					out[len(out)-1].value = strings.TrimSpace(out[len(out)-1].value + " " + t)
				}
			}
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		out = append(out, n2tElem{name: strings.ToLower(strings.TrimSpace(name)), value: strings.TrimSpace(value)})
	}
	return out
}

// ezidCSVReader reads an EZID CSV download: a header of the requested
// column names (`_id` required), one identifier per row.
type ezidCSVReader struct{ *keyedCSV }

func newEZIDCSVReader(name string, br *bufio.Reader) (*ezidCSVReader, error) {
	k, err := openKeyedCSV(name, br, "EZID CSV", "_id", "request column=_id", false)
	if err != nil {
		return nil, err
	}
	return &ezidCSVReader{k}, nil
}

func (r *ezidCSVReader) step() (Item, error) {
	f, loc, id, err := r.row()
	if err != nil {
		return Item{}, err
	}
	rec, err := ezidRecord(id, loc, r.cells(f, true))
	return recordItem(rec, err, f)
}

// ezidDBColumns are the identifier columns (EZID
// ezidapp/models/identifier.py) mapped onto Record fields or dropped: `cm`
// is a zlib+base64 copy of `metadata` (dropped; metadata is read instead).
var ezidDBColumns = map[string]bool{"identifier": true, "target": true, "status": true,
	"unavailableReason": true, "createTime": true, "updateTime": true, "owner": true, "metadata": true, "cm": true}

// ezidDBObject maps one ezidapp.identifier object: status `P`/`R`/`U` with
// unavailableReason, createTime/updateTime Unix seconds, owner as the user
// key, metadata elements under their names, other columns as "ezid.<column>".
func ezidDBObject(o *djangoObject, loc textin.Location) (Item, error) {
	switch o.Model {
	case "ezidapp.identifier", "ezidapp.storeidentifier", "ezidapp.searchidentifier":
	default:
		return refuse(o.Model, loc), nil
	}
	text := func(k string) (string, error) {
		v, _, err := jsonText(o.Fields.get(k))
		if err != nil {
			return "", &textin.RowError{Field: k, Reason: "not a JSON scalar", Err: err}
		}
		return v, nil
	}
	id, err := text("identifier")
	if err != nil {
		return Item{}, err
	}
	if id == "" {
		return Item{}, &textin.RowError{Field: "identifier", Reason: "empty identifier"}
	}
	els := make([]kv, 0, 16)
	for _, c := range [...][2]string{{"target", ezidTarget}, {"createTime", ezidCreated}, {"updateTime", ezidUpdated}, {"owner", ezidOwner}} {
		v, err := text(c[0])
		if err != nil {
			return Item{}, err
		}
		els = append(els, kv{c[1], v})
	}
	var meta []kv // name, raw JSON value
	if m := strings.TrimSpace(o.Fields.get("metadata")); len(m) > 0 && m != "null" {
		if m[0] != '{' {
			return Item{}, &textin.RowError{ID: id, Field: "metadata", Reason: "metadata is not a JSON object"}
		}
		p := jsonParser{b: m}
		err := p.object(1, func(k, v string) error {
			for _, e := range meta {
				if e.k == k {
					return &dupKeyError{key: "fields.metadata." + k}
				}
			}
			meta = append(meta, kv{k, v})
			return nil
		})
		var dk *dupKeyError
		if errors.As(err, &dk) {
			return Item{}, &textin.RowError{ID: id, Field: dk.key,
				Reason: fmt.Sprintf("key %q given twice in the object; which value is meant cannot be known, so the record is not read", dk.key)}
		}
		if err != nil {
			return Item{}, &textin.RowError{ID: id, Field: "metadata", Reason: "metadata is not a JSON object", Err: err}
		}
	}
	sort.Slice(meta, func(i, j int) bool { return meta[i].k < meta[j].k }) // a deterministic order
	for _, e := range meta {
		s, _, err := jsonText(e.v)
		if err != nil {
			return Item{}, &textin.RowError{ID: id, Field: "metadata." + e.k, Reason: "not a JSON scalar", Err: err}
		}
		els = append(els, kv{e.k, s})
	}
	rec, err := ezidRecord(id, loc, els)
	if err != nil {
		return Item{}, err
	}
	status, err := text("status")
	if err != nil {
		return Item{}, err
	}
	reason, err := text("unavailableReason")
	if err != nil {
		return Item{}, err
	}
	switch status {
	case "P", "":
		rec.Status = StatusPublic
	case "R":
		rec.Status = StatusReserved
	case "U":
		rec.Status = StatusUnavailable
		rec.StatusReason = reason
	default:
		return Item{}, &textin.RowError{ID: id, Field: "status", Reason: fmt.Sprintf("status %q is not P, R or U", status)}
	}
	if status != "U" && reason != "" {
		rec.Metadata = addMeta(rec.Metadata, "ezid.unavailableReason", reason)
	}
	for _, f := range o.Fields {
		k := f.key
		if ezidDBColumns[k] {
			continue
		}
		s, null, err := jsonText(f.raw)
		if err != nil || null || s == "" {
			continue
		}
		rec.Metadata = addMeta(rec.Metadata, "ezid."+k, s)
	}
	if pk, null, err := jsonText(o.PK); err == nil && !null {
		rec.Metadata = addMeta(rec.Metadata, "ezid.pk", pk)
	}
	return Item{Record: rec}, nil
}

// ezidDBShoulderObject maps one ezidapp.shoulder object (EZID
// ezidapp/models/shoulder.py; shared/data/ezid/db.shoulder.jsonl).
func ezidDBShoulderObject(o *djangoObject, loc textin.Location) (Item, error) {
	if o.Model != "ezidapp.shoulder" {
		return refuse(o.Model, loc), nil
	}
	text := func(k string) (string, error) {
		s, _, err := jsonText(o.Fields.get(k))
		if err != nil {
			return "", &textin.RowError{Loc: loc, Field: k, Reason: "not a JSON scalar", Err: err}
		}
		return s, nil
	}
	prefix, err := text("prefix")
	if err != nil {
		return Item{}, err
	}
	if prefix == "" {
		return Item{}, &textin.RowError{Loc: loc, Field: "prefix", Reason: "empty shoulder prefix"}
	}
	s := &ShoulderRecord{Prefix: prefix, Source: loc}
	s.Kind, s.NAAN, s.Shoulder = splitPrefix(prefix)
	s.SourceID, _, _ = jsonText(o.PK)
	for _, f := range o.Fields {
		k := f.key
		v, err := text(k)
		if err != nil {
			return Item{}, err
		}
		switch k {
		case "prefix":
		case "type":
			s.Type = v
		case "name":
			s.Name = v
		case "minter":
			s.Minter = v
		case "datacenter":
			s.Datacenter = v
		case "manager":
			s.Manager = v
		case "redirect":
			s.Redirect = v
		case "active":
			s.Status = "inactive"
			if v == "true" {
				s.Status = "active"
			}
		case "isSupershoulder":
			s.IsSupershoulder = v == "true"
		case "isTest":
			s.IsTest = v == "true"
		case "date":
			if v != "" {
				t, err := parseDate(v)
				if err != nil {
					return Item{}, &textin.RowError{Loc: loc, ID: prefix, Field: "date", Reason: "bad shoulder date", Err: err}
				}
				s.Date = &t
			}
		default:
			if v != "" {
				s.Metadata = addMeta(s.Metadata, "ezid."+k, v)
			}
		}
	}
	return Item{Shoulder: s}, nil
}
