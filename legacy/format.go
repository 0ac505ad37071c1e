package legacy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
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
	dr, err := decompress(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	br := raw
	if dr != io.Reader(raw) {
		br = bufio.NewReaderSize(dr, 64<<10)
	}
	skipBOM(br)
	if format == "" {
		head, _ := br.Peek(headBytes)
		format, err = DetectFormat(name, head)
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
	return &reader{s: s, closer: closer}, nil
}

// stepper is the format-specific part of a Reader: step returns the next
// item or error; the wrapper makes fatal errors sticky.
type stepper interface {
	step() (Item, error)
}

type reader struct {
	s      stepper
	closer io.Closer
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
		return it, nil
	}
	var re *RecordError
	var te *TruncatedError
	switch {
	case errors.As(err, &re):
	case errors.As(err, &te):
		r.done = io.EOF
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
