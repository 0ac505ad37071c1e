package legacy

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/arkhe-ledger/arkhe/textin"
)

// Metadata keys under which arklet readers keep the columns that are not
// Record fields. The importer uses them to
// check `ark == naan + shoulder + assigned_name` and flag NAANs that only
// match after int() (arklet stores the NAAN as an integer).
const (
	// MetaArkletNAAN: `naan` / `naan_id`, the integer NAAN key as decimal text.
	MetaArkletNAAN = "arklet.naan"
	// MetaArkletShoulder: upstream's `shoulder` text, e.g. "/x6".
	MetaArkletShoulder = "arklet.shoulder"
	// MetaArkletShoulderID: the Frick fork's `shoulder_id` (a key into
	// ark.shoulder; see ShoulderRecord.SourceID).
	MetaArkletShoulderID = "arklet.shoulder_id"
	// MetaArkletAssignedName: `assigned_name`, blade + check character
	// without the shoulder; "" for `mintarks` test rows.
	MetaArkletAssignedName = "arklet.assigned_name"
	// MetaArkletMetadata: the free-text `metadata` (may be a Python repr).
	MetaArkletMetadata = "arklet.metadata"
	// MetaArkletCreatedRaw: the text of a created_at that had no zone (the
	// time itself is read as UTC).
	MetaArkletCreatedRaw = "arklet.created_at"
	// MetaArkletUpdatedRaw: the text of an updated_at that had no zone.
	MetaArkletUpdatedRaw = "arklet.updated_at"
)

// isSecretModel reports Django models that hold credentials: arklet users
// (password hashes), legacy keys (plaintext tokens) and API keys (hashes).
func isSecretModel(model string) bool {
	switch strings.ToLower(model) {
	case "ark.user", "ark.key", "ark.apikey", "auth.user", "ezidapp.user", "ezidapp.storeuser", "ezidapp.searchuser":
		return true
	}
	return false
}

// otherModels names the Django models a reader meets in a dump of another kind: what their
// records hold and the format that imports them.
var otherModels = map[string]struct {
	what   string
	format Format
}{
	"ezidapp.identifier":       {"identifier records", EZIDDB},
	"ezidapp.storeidentifier":  {"identifier records", EZIDDB},
	"ezidapp.searchidentifier": {"identifier records", EZIDDB},
	"ezidapp.shoulder":         {"shoulder records", EZIDDBShoulders},
	"ezidapp.linkchecker":      {"link-check results", EZIDLinkCheck},
	"ark.ark":                  {"arklet ARK records", ArkletJSON},
	"ark.naan":                 {"arklet NAAN records", ArkletJSON},
	"ark.shoulder":             {"arklet shoulder records", ArkletJSON},
}

// refuse builds the Refused item for a model the reader does not import: named by what its
// records are, with the format that imports them when there is one. Nothing of a
// secret-bearing record (not even its key, which for ark.key is the token itself) is kept.
func refuse(model string, loc textin.Location) Item {
	r := &Refused{Model: model, Source: loc, What: "records arkhe does not import"}
	key := strings.ToLower(model)
	switch other, known := otherModels[key]; {
	case isSecretModel(model):
		r.What, r.Secret = "credentials (password hashes or API tokens)", true
		r.Reason = fmt.Sprintf("model %q holds credentials (password hashes or API tokens) and is never imported; "+
			"dump with --exclude ark.user --exclude ark.key --exclude ark.apikey", model)
	case known && other.format == EZIDLinkCheck:
		r.What = other.what
		r.Reason = fmt.Sprintf("model %q holds link-check results, not identifiers: `arkhe import --input-format %s FILE` "+
			"keeps them as the ARKs' link state, once the identifiers are imported", model, other.format)
	case known:
		r.What = other.what
		r.Reason = fmt.Sprintf("model %q holds %s, which this format does not read: import them with "+
			"`arkhe import --input-format %s FILE`", model, other.what, other.format)
	default:
		r.Reason = fmt.Sprintf("model %q is not an ARK, NAAN, shoulder or link-check record; skipped", model)
	}
	return Item{Refused: r}
}

// arkletObject maps one dumpdata object: ark.ark → Record, ark.naan →
// NAANRecord, ark.shoulder → ShoulderRecord, anything else → Refused.
func arkletObject(o *djangoObject, loc textin.Location) (Item, error) {
	switch o.Model {
	case "ark.ark":
	case "ark.naan":
		return arkletNAAN(o, loc)
	case "ark.shoulder":
		return arkletShoulder(o, loc)
	default:
		return refuse(o.Model, loc), nil
	}
	id, null, err := jsonText(o.PK)
	if err != nil || null || id == "" {
		if v := o.Fields.get("ark"); v != "" {
			id, _, err = jsonText(v)
		}
		if err != nil || id == "" {
			return Item{}, &textin.RowError{Field: "pk", Reason: "ark.ark record has no ARK (pk)", Err: err}
		}
	}
	var buf [24]kv // records have a dozen columns: no allocation
	cols := buf[:0]
	for _, f := range o.Fields {
		k, raw := f.key, f.raw
		s, null, err := jsonText(raw)
		if err != nil {
			return Item{}, &textin.RowError{ID: id, Field: k, Reason: "not a JSON value", Err: err}
		}
		if null {
			continue
		}
		if k == "shoulder" && len(raw) > 0 && raw[0] != '"' {
			k = "shoulder_id" // Frick fork: FK to ark.shoulder
		}
		cols = append(cols, kv{k, s})
	}
	rec, err := arkletRecord(id, loc, cols)
	if err != nil {
		return Item{}, err
	}
	return Item{Record: rec}, nil
}

// arkletRecord maps arklet ark_ark columns (upstream and Frick) onto a
// Record: url → Target (empty = none), commitment (or Frick `rights`) →
// Commitment, Frick `title` → What, other Frick Dublin Core columns →
// "dc.<name>", created_at/updated_at kept with their zone (NULL → nil).
// arklet has no status: every row is public.
func arkletRecord(id string, loc textin.Location, cols []kv) (*Record, error) {
	rec := &Record{ID: id, Kind: IdentifierKind(id), Status: StatusPublic, Source: loc}
	var rights string
	for _, c := range cols {
		switch c.k {
		case "ark":
		case "naan", "naan_id":
			rec.Metadata = addMeta(rec.Metadata, MetaArkletNAAN, c.v)
		case "shoulder":
			rec.Metadata = addMeta(rec.Metadata, MetaArkletShoulder, c.v)
		case "shoulder_id":
			rec.Metadata = addMeta(rec.Metadata, MetaArkletShoulderID, c.v)
		case "assigned_name":
			rec.Metadata = addMeta(rec.Metadata, MetaArkletAssignedName, c.v)
		case "url":
			rec.Target = c.v
		case "metadata":
			if c.v != "" {
				rec.Metadata = addMeta(rec.Metadata, MetaArkletMetadata, c.v)
			}
		case "commitment":
			if c.v != "" {
				rec.Commitment = strPtr(c.v)
			}
		case "rights":
			rights = c.v
		case "title":
			if c.v != "" {
				rec.What = strPtr(c.v)
			}
		case "type", "identifier", "format", "relation", "source":
			if c.v != "" {
				rec.Metadata = addMeta(rec.Metadata, "dc."+c.k, c.v)
			}
		case "created_at", "updated_at":
			if c.v == "" {
				continue
			}
			t, naive, err := parseTimestamp(c.v)
			if err != nil {
				return nil, &textin.RowError{Loc: loc, ID: id, Field: c.k, Reason: "bad time stamp", Err: err}
			}
			if c.k == "created_at" {
				rec.Created = &t
			} else {
				rec.Updated = &t
			}
			if naive {
				rec.Metadata = addMeta(rec.Metadata, "arklet."+c.k, c.v)
			}
		default:
			if c.v != "" {
				rec.Metadata = addMeta(rec.Metadata, "arklet."+c.k, c.v)
			}
		}
	}
	if rights != "" {
		if rec.Commitment == nil {
			rec.Commitment = strPtr(rights)
		} else {
			rec.Metadata = addMeta(rec.Metadata, "dc.rights", rights)
		}
	}
	rec.HasTarget = rec.Target != ""
	return rec, nil
}

func arkletNAAN(o *djangoObject, loc textin.Location) (Item, error) {
	naan, null, err := jsonText(o.PK)
	if err != nil || null || naan == "" {
		return Item{}, &textin.RowError{Field: "pk", Reason: "ark.naan record has no NAAN (pk)", Err: err}
	}
	n := &NAANRecord{NAAN: naan, Source: loc}
	for _, f := range o.Fields {
		k := f.key
		v, _, err := jsonText(f.raw)
		if err != nil {
			return Item{}, &textin.RowError{ID: naan, Field: k, Reason: "not a JSON value", Err: err}
		}
		switch k {
		case "name":
			n.Name = v
		case "description":
			n.Description = v
		case "url":
			n.Where = v
		default:
			if v != "" {
				n.Metadata = addMeta(n.Metadata, "arklet."+k, v)
			}
		}
	}
	return Item{NAAN: n}, nil
}

func arkletShoulder(o *djangoObject, loc textin.Location) (Item, error) {
	s := &ShoulderRecord{Kind: "ark", Source: loc}
	s.SourceID, _, _ = jsonText(o.PK)
	for _, f := range o.Fields {
		k := f.key
		v, _, err := jsonText(f.raw)
		if err != nil {
			return Item{}, &textin.RowError{Field: k, Reason: "not a JSON value", Err: err}
		}
		switch k {
		case "shoulder":
			s.Shoulder = v
		case "naan":
			s.NAAN = v
		case "name":
			s.Name = v
		case "description":
			s.Description = v
		default:
			if v != "" {
				s.Metadata = addMeta(s.Metadata, "arklet."+k, v)
			}
		}
	}
	if s.Shoulder == "" {
		return Item{}, &textin.RowError{ID: s.SourceID, Field: "shoulder", Reason: "ark.shoulder record has no shoulder"}
	}
	return Item{Shoulder: s}, nil
}

// arkletCSVReader reads `COPY ark_ark TO … CSV HEADER` (upstream or Frick
// columns, any order). Empty cells are NULL or empty strings
// (CSV cannot tell them apart; both mean "none" for every ark_ark column).
type arkletCSVReader struct{ *keyedCSV }

func newArkletCSVReader(name string, br *bufio.Reader) (*arkletCSVReader, error) {
	k, err := openKeyedCSV(name, br, "ark_ark CSV", "ark", "COPY ark_ark … CSV HEADER expected", true)
	if err != nil {
		return nil, err
	}
	return &arkletCSVReader{k}, nil
}

func (r *arkletCSVReader) step() (Item, error) {
	f, loc, id, err := r.row()
	if err != nil {
		return Item{}, err
	}
	rec, err := arkletRecord(id, loc, r.cells(f, false))
	return recordItem(rec, err, f)
}
