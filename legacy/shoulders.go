package legacy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/arkhe-ledger/arkhe/textin"
)

// shoulderCSVReader reads ezidapp_shoulder.csv: `prefix,name,minter_url`,
// no header; an empty minter is written `""` (shared/data/ezid).
type shoulderCSVReader struct {
	src *csvSource
}

func newShoulderCSVReader(name string, br *bufio.Reader) *shoulderCSVReader {
	return &shoulderCSVReader{src: newCSVSource(name, br)}
}

func (r *shoulderCSVReader) step() (Item, error) {
	f, loc, err := r.src.row()
	if err != nil {
		return Item{}, err
	}
	if len(f) != 3 {
		return Item{}, &textin.RowError{Loc: loc, Field: "row", Raw: rawRow(f),
			Reason: fmt.Sprintf("row has %d fields, want 3 (prefix,name,minter_url)", len(f))}
	}
	prefix := strings.TrimSpace(f[0])
	if prefix == "" {
		return Item{}, &textin.RowError{Loc: loc, Field: "prefix", Reason: "empty shoulder prefix", Raw: rawRow(f)}
	}
	s := &ShoulderRecord{Prefix: prefix, Name: f[1], Minter: f[2], Source: loc}
	s.Kind, s.NAAN, s.Shoulder = splitPrefix(prefix)
	return Item{Shoulder: s}, nil
}

// shoulderLogReader reads EZID shoulder-list log lines, e.g.
// `shoulder.py:83 shoulder impl.nog_sql.shoulder INFO     shoulder - ark:/13030/bn        ?1?`:
// the prefix follows "shoulder - ", the name the run of blanks after it.
type shoulderLogReader struct {
	name    string
	lr      *lineReader
	records int
}

func newShoulderLogReader(name string, br *bufio.Reader) *shoulderLogReader {
	return &shoulderLogReader{name: name, lr: newLineReader(br)}
}

const shoulderLogMark = " shoulder - "

func (r *shoulderLogReader) step() (Item, error) {
	for {
		text, n, _, err := r.lr.next()
		if err == io.EOF {
			return Item{}, io.EOF
		}
		if err != nil && err != errLineTooLong {
			return Item{}, fmt.Errorf("%s:%d: %w", r.name, n, err)
		}
		if err == nil && len(bytes.TrimSpace(text)) == 0 {
			continue
		}
		r.records++
		loc := textin.Location{File: r.name, Line: n, Record: r.records}
		if err != nil {
			return Item{}, &textin.RowError{Loc: loc, Field: "line", Reason: fmt.Sprintf("line longer than %d octets", MaxLineBytes), Err: err}
		}
		line := string(text)
		if !utf8.ValidString(line) {
			return Item{}, &textin.RowError{Loc: loc, Field: "line", Reason: "line is not valid UTF-8 (kept raw for the reject file)", Raw: clipRaw(line)}
		}
		i := strings.Index(line, shoulderLogMark)
		if i < 0 {
			return Item{}, &textin.RowError{Loc: loc, Field: "line", Reason: "no \"shoulder - <prefix> <name>\" in the line", Raw: clipRaw(line)}
		}
		rest := strings.TrimLeft(line[i+len(shoulderLogMark):], " \t")
		prefix, name, _ := strings.Cut(rest, " ")
		if j := strings.IndexByte(prefix, '\t'); j >= 0 {
			prefix, name = prefix[:j], prefix[j+1:]+" "+name
		}
		if prefix == "" {
			return Item{}, &textin.RowError{Loc: loc, Field: "prefix", Reason: "empty shoulder prefix", Raw: clipRaw(line)}
		}
		s := &ShoulderRecord{Prefix: prefix, Name: strings.TrimSpace(name), Source: loc}
		s.Kind, s.NAAN, s.Shoulder = splitPrefix(prefix)
		return Item{Shoulder: s}, nil
	}
}
