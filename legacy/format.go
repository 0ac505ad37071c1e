package legacy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/arkhe-ledger/arkhe/textin"
)

// Format names one legacy export format. The string values are what a
// command line flag takes (`--format n2t-dump`).
type Format string

// The formats this package reads (docs/legacy.md describes each).
const (
	// ArkletJSON: `manage.py dumpdata ark` — a JSON array (or JSON Lines) of
	// {"model","pk","fields"} objects, models ark.ark / ark.naan /
	// ark.shoulder; ark.user / ark.key / ark.apikey are refused (they hold secrets).
	ArkletJSON Format = "arklet-json"
	// ArkletCSV: `COPY ark_ark TO … CSV HEADER`, upstream or Frick columns,
	// read by column name.
	ArkletCSV Format = "arklet-csv"
	// N2TDump: an egg binder printed by `db_dump -p` (or db_dump's default
	// bytevalue form).
	N2TDump Format = "n2t-dump"
	// EZIDANVL: an EZID batch download in ANVL, `:: id` blocks.
	EZIDANVL Format = "ezid-anvl"
	// EZIDCSV: an EZID batch download in CSV with the requested columns
	// as header; `_id` is required.
	EZIDCSV Format = "ezid-csv"
	// EZIDDB: ezidapp.identifier objects in Django dump shape, JSON Lines
	// or a JSON array (shared/data/ezid/db.identifier.jsonl).
	EZIDDB Format = "ezid-db"
	// EZIDDBShoulders: ezidapp.shoulder objects in Django dump shape
	// (shared/data/ezid/db.shoulder.jsonl).
	EZIDDBShoulders Format = "ezid-db-shoulders"
	// NAANANVL: the legacy ANVL registry naan_registry.txt.
	NAANANVL Format = "naan-anvl"
	// NAANJSON2023: naans_public.json, an object keyed by NAAN.
	NAANJSON2023 Format = "naan-json-2023"
	// NAANJSON2024: naan_records.json {"metadata","data":[…]} with
	// PublicNAAN and PublicNAANShoulder records, a bare array of them, or one
	// record (magic/*.json).
	NAANJSON2024 Format = "naan-json-2024"
	// ShoulderListEZIDCSV: ezidapp_shoulder.csv, `prefix,name,minter_url`,
	// no header.
	ShoulderListEZIDCSV Format = "shoulders-ezid-csv"
	// ShoulderListN2TANVL: N2T master_shoulders.txt, `:: prefix` blocks.
	ShoulderListN2TANVL Format = "shoulders-n2t-anvl"
	// EZIDLinkCheck: EZID's link-checker state, ezidapp.linkchecker objects
	// in Django dump shape (shared/data/ezid/db.linkchecker.jsonl); each
	// yields an Item.LinkCheck.
	EZIDLinkCheck Format = "ezid-linkcheck"
	// EZIDLinkCheckTSV: EZID's link-checker TSV, a header naming identifier,
	// url, returnCode, from_unixtime(lastChecktime) and numFailures, times
	// without a zone read in EZIDLinkCheckZone
	// (linkchecker_test_id_url_v0.tsv); each row yields an Item.LinkCheck.
	EZIDLinkCheckTSV Format = "ezid-linkcheck-tsv"
	// ShoulderListEZIDLog: EZID shoulder-list log lines
	// (`… shoulder - ark:/13030/bn        ?1?`, naan_reg_public magic/shoulder-list.txt).
	ShoulderListEZIDLog Format = "shoulders-ezid-log"
)

// Formats returns every Format this package reads, in a stable order.
func Formats() []Format {
	return []Format{ArkletJSON, ArkletCSV, N2TDump, EZIDANVL, EZIDCSV, EZIDDB, EZIDDBShoulders,
		EZIDLinkCheck, EZIDLinkCheckTSV, NAANANVL, NAANJSON2023, NAANJSON2024, ShoulderListEZIDCSV, ShoulderListN2TANVL, ShoulderListEZIDLog}
}

// ParseFormat returns the Format named s (case-insensitive), or an error
// wrapping ErrUnknownFormat that lists the valid names.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats() {
		if strings.EqualFold(string(f), strings.TrimSpace(s)) {
			return f, nil
		}
	}
	names := make([]string, 0, len(Formats()))
	for _, f := range Formats() {
		names = append(names, string(f))
	}
	return "", fmt.Errorf("%w: %q (known: %s)", ErrUnknownFormat, s, strings.Join(names, ", "))
}

// headBytes is how much of an input DetectFormat is shown by Open/NewReader.
const headBytes = 64 << 10

// Open opens the export at path (gzip or xz compressed inputs are
// decompressed transparently) and returns a Reader for format. An empty
// format is detected with DetectFormat. Errors: *os.PathError, or one
// wrapping ErrUnknownFormat.
func Open(ctx context.Context, path string, format Format) (Reader, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r, err := newReader(f, path, format, f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return r, nil
}

// NewReader returns a Reader over r for format; name is used in locations
// and messages. r may be gzip or xz compressed. An empty format is detected
// with DetectFormat(name, head). Close on the result does not close r.
func NewReader(r io.Reader, name string, format Format) (Reader, error) {
	return newReader(r, name, format, nil)
}

func newReader(r io.Reader, name string, format Format, closer io.Closer) (Reader, error) {
	raw := bufio.NewReaderSize(r, 64<<10)
	text, err := textInput(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	br := bufio.NewReaderSize(text, 64<<10)
	skipBOM(br)
	if format == "" {
		head, perr := br.Peek(headBytes)
		format, err = DetectFormat(name, head)
		var de *textin.DecodeError
		if err != nil && errors.As(perr, &de) {
			return nil, fmt.Errorf("%s: %w", name, de) // the stream breaks before the format shows
		}
		if err != nil {
			return nil, err
		}
	}
	var s stepper
	switch format {
	case ArkletJSON:
		s = newDjangoReader(name, br, arkletObject)
	case EZIDDB:
		s = newDjangoReader(name, br, ezidDBObject)
	case EZIDDBShoulders:
		s = newDjangoReader(name, br, ezidDBShoulderObject)
	case EZIDLinkCheck:
		s = newDjangoReader(name, br, ezidLinkCheckObject)
	case EZIDLinkCheckTSV:
		s = newEZIDLinkTSVReader(name, br)
	case ArkletCSV:
		s, err = newArkletCSVReader(name, br)
	case EZIDCSV:
		s, err = newEZIDCSVReader(name, br)
	case ShoulderListEZIDCSV:
		s = newShoulderCSVReader(name, br)
	case N2TDump:
		s = newN2TReader(name, br)
	case EZIDANVL:
		a := newANVLReader(name, br, ezidANVLBlock)
		a.strictEnd = true // EZID ends every element with a newline
		s = a
	case NAANANVL:
		s = newANVLReader(name, br, naanANVLBlock)
	case ShoulderListN2TANVL:
		s = newANVLReader(name, br, n2tShoulderBlock)
	case NAANJSON2023:
		s = newNAAN2023Reader(name, br)
	case NAANJSON2024:
		s = newNAAN2024Reader(name, br)
	case ShoulderListEZIDLog:
		s = newShoulderLogReader(name, br)
	default:
		_, err := ParseFormat(string(format))
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	return &reader{s: s, closer: closer, name: name}, nil
}

// stepper is the format-specific part of a Reader: step returns the next
// item or error; the wrapper makes fatal errors sticky.
type stepper interface {
	step() (Item, error)
}

type reader struct {
	s      stepper
	closer io.Closer
	name   string
	last   int // the record number of the last item or record error yielded
	done   error
}

func (r *reader) Next(ctx context.Context) (Item, error) {
	if r.done != nil {
		return Item{}, r.done
	}
	if err := ctx.Err(); err != nil {
		return Item{}, err
	}
	it, err := r.s.step()
	if err == nil {
		r.last = max(r.last, it.Loc().Record)
		if field, id := bomField(it); field != "" {
			return Item{}, &textin.RowError{Loc: it.Loc(), ID: id, Field: field,
				Reason: "value holds a byte order mark (U+FEFF), which belongs only at the very start of a file (were files joined together?)"}
		}
		return it, nil
	}
	var re *textin.RowError
	var te *TruncatedError
	var de *textin.DecodeError
	switch {
	case errors.As(err, &re):
		r.last = max(r.last, re.Loc.Record)
	case errors.As(err, &te):
		r.done = io.EOF
	case errors.As(err, &de):
		// A compressed file that breaks is a truncated file: every whole record before the
		// break was yielded; the one being read is lost with the rest.
		r.done = io.EOF
		return Item{}, &TruncatedError{Loc: textin.Location{File: r.name, Line: int(de.Lines) + 1, Record: r.last + 1},
			Reason: de.Finding(r.last)}
	default:
		r.done = err
	}
	return Item{}, err
}

func (r *reader) Close() error {
	if r.closer == nil {
		return nil
	}
	c := r.closer
	r.closer = nil
	return c.Close()
}

// bomField returns the first field of the item whose name or value holds U+FEFF, the byte order
// mark (invisible, allowed only at the start of a file: inside a value it is the seam of files
// joined together, and an identifier "\ufeffark:/…" would not even be an ARK), and the
// identifier to report; "" when there is none.
func bomField(it Item) (field, id string) {
	has := func(s string) bool { return strings.Contains(s, utf8BOM) }
	hasPtr := func(p *string) bool { return p != nil && has(*p) }
	meta := func(m map[string]string) string {
		first := ""
		for k, v := range m {
			if (has(k) || has(v)) && (first == "" || k < first) {
				first = k
			}
		}
		return first
	}
	switch {
	case it.Record != nil:
		r := it.Record
		id = r.ID
		switch {
		case has(r.ID):
			return "id", id
		case has(r.Target):
			return "target", id
		case hasPtr(r.Who):
			return "who", id
		case hasPtr(r.What):
			return "what", id
		case hasPtr(r.When):
			return "when", id
		case hasPtr(r.Commitment):
			return "commitment", id
		case has(r.StatusReason):
			return "status reason", id
		case has(r.Owner):
			return "owner", id
		}
		if k := meta(r.Metadata); k != "" {
			return k, id
		}
	case it.NAAN != nil:
		n := it.NAAN
		for _, f := range [...]struct{ name, v string }{{"naan", n.NAAN}, {"name", n.Name}, {"name native", n.NameNative},
			{"acronym", n.Acronym}, {"where", n.Where}, {"target", n.Target}, {"org type", n.OrgType}, {"policy", n.Policy},
			{"tenure", n.Tenure}, {"policy url", n.PolicyURL}, {"description", n.Description}} {
			if has(f.v) {
				return f.name, n.NAAN
			}
		}
		if k := meta(n.Metadata); k != "" {
			return k, n.NAAN
		}
	case it.Shoulder != nil:
		s := it.Shoulder
		for _, f := range [...]struct{ name, v string }{{"prefix", s.Prefix}, {"naan", s.NAAN}, {"shoulder", s.Shoulder},
			{"name", s.Name}, {"acronym", s.Acronym}, {"minter", s.Minter}, {"target", s.Target}, {"where", s.Where}} {
			if has(f.v) {
				return f.name, s.Prefix
			}
		}
		if k := meta(s.Metadata); k != "" {
			return k, s.Prefix
		}
	}
	return "", ""
}
