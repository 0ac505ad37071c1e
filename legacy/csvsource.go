package legacy

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/arkhe-ledger/arkhe/textin"
)

// csvSource reads CSV rows with textin.CSVScanner (RFC 4180; line ends by the rule of
// textInput), each row bounded by MaxLineBytes. A broken row is a *textin.RowError and reading
// resumes by the scanner's rule (after a quoted field that runs over lines and then breaks, the
// lines it read are read again, one row per line). PostgreSQL COPY and Python's csv module end
// every row with a line end, so a last row without one, or a quoted field still open where the
// file ends without one, means the file was cut: a *TruncatedError.
type csvSource struct {
	name    string
	sc      *textin.CSVScanner
	records int
	done    bool
}

func newCSVSource(name string, br *bufio.Reader) *csvSource {
	return &csvSource{name: name, sc: textin.NewCSVScanner(br, MaxLineBytes, false)}
}

// row returns the next row and its location. Errors: io.EOF at the end; a *textin.RowError for a
// malformed row; a *TruncatedError for a final row without its line end or an unterminated
// quote at the end of input; any other error is an I/O error (or a compressed stream that
// breaks, *textin.DecodeError).
func (c *csvSource) row() ([]string, textin.Location, error) {
	if c.done {
		return nil, textin.Location{}, io.EOF
	}
	f, line, err := c.sc.Scan()
	if err != nil {
		if err == io.EOF {
			c.done = true
			return nil, textin.Location{}, io.EOF
		}
		var ce *textin.CSVError
		if !errors.As(err, &ce) {
			return nil, textin.Location{}, fmt.Errorf("%s:%d: %w", c.name, line, err)
		}
		c.records++
		loc := textin.Location{File: c.name, Line: ce.StartLine, Record: c.records}
		if ce.Cut {
			c.done = true
			return nil, loc, &TruncatedError{Loc: textin.Location{File: c.name, Line: ce.Line, Record: c.records},
				Reason: fmt.Sprintf("file ends inside a quoted field of the row that starts on line %d; that row is not yielded", ce.StartLine)}
		}
		return nil, loc, &textin.RowError{Loc: loc, Field: "row", Reason: "malformed CSV row", Err: ce}
	}
	c.records++
	loc := textin.Location{File: c.name, Line: line, Record: c.records}
	if !c.sc.Terminated() {
		c.done = true
		return nil, loc, &TruncatedError{Loc: loc,
			Reason: fmt.Sprintf("the last row (line %d) has no line end: the file was cut; that row is not yielded", line)}
	}
	for i, v := range f {
		if !utf8.ValidString(v) {
			return nil, loc, &textin.RowError{Loc: loc, Field: fmt.Sprintf("column %d", i+1),
				Reason: "value is not valid UTF-8 (kept raw for the reject file)", Raw: clipRaw(strings.Join(f, ","))}
		}
	}
	return f, loc, nil
}

// rawRow renders a row back as one CSV line for textin.RowError.Raw.
func rawRow(fields []string) string {
	var b strings.Builder
	w := csv.NewWriter(&b)
	_ = w.Write(fields)
	w.Flush()
	return clipRaw(strings.TrimRight(b.String(), "\n"))
}

// keyedCSV reads a CSV export whose header names the columns and one named column holds the
// identifier: arklet's `COPY ark_ark … CSV HEADER` and EZID's CSV download.
type keyedCSV struct {
	src    *csvSource
	header []string
	key    int
	what   string // e.g. "ark_ark CSV", for messages
}

// openKeyedCSV reads the header of what; each name is trimmed (and lowercased when lower). key
// is the identifier column; hint says how an export gets it. A file without a header or without
// the key column is not this format (ErrUnknownFormat).
func openKeyedCSV(name string, br *bufio.Reader, what, key, hint string, lower bool) (*keyedCSV, error) {
	src := newCSVSource(name, br)
	h, _, err := src.row()
	if err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("%s: empty file, no %s header: %w", name, what, ErrUnknownFormat)
		}
		return nil, fmt.Errorf("%s: %s header: %w", name, what, err)
	}
	src.records = 0
	k := &keyedCSV{src: src, header: h, key: -1, what: what}
	for i := range h {
		h[i] = strings.TrimSpace(h[i])
		if lower {
			h[i] = strings.ToLower(h[i])
		}
		if h[i] == key && k.key < 0 {
			k.key = i
		}
	}
	if k.key < 0 {
		return nil, fmt.Errorf("%s:1: %s header %q has no %s column (%s): %w", name, what, clip(strings.Join(h, ","), 200), key, hint, ErrUnknownFormat)
	}
	// a column named twice: which of its two values would be imported cannot be known
	seen := make(map[string]int, len(h))
	for i, n := range h {
		if j, ok := seen[n]; ok && n != "" {
			return nil, fmt.Errorf("%s:1: %s header names column %q twice (columns %d and %d): %w", name, what, n, j+1, i+1, ErrDuplicateColumn)
		}
		seen[n] = i
	}
	return k, nil
}

// row returns the next row's cells, where it stands and its identifier. A row whose field count
// differs from the header's, or whose identifier is empty, is a *textin.RowError.
func (k *keyedCSV) row() (f []string, loc textin.Location, id string, err error) {
	f, loc, err = k.src.row()
	if err != nil {
		return nil, loc, "", err
	}
	if len(f) != len(k.header) {
		return nil, loc, "", &textin.RowError{Loc: loc, Field: "row", Raw: rawRow(f),
			Reason: fmt.Sprintf("row has %d fields, header has %d", len(f), len(k.header))}
	}
	id = f[k.key]
	if id == "" {
		return nil, loc, "", &textin.RowError{Loc: loc, Field: k.header[k.key], Reason: "empty identifier", Raw: rawRow(f)}
	}
	return f, loc, id, nil
}

// cells pairs the header's names with row f's values, without the identifier column when
// skipKey.
func (k *keyedCSV) cells(f []string, skipKey bool) []kv {
	out := make([]kv, 0, len(f))
	for i, v := range f {
		if !skipKey || i != k.key {
			out = append(out, kv{k.header[i], v})
		}
	}
	return out
}

// recordItem returns rec as an Item; a *textin.RowError from building it gets row f as its Raw.
func recordItem(rec *Record, err error, f []string) (Item, error) {
	if err != nil {
		if re, ok := err.(*textin.RowError); ok {
			re.Raw = rawRow(f)
		}
		return Item{}, err
	}
	return Item{Record: rec}, nil
}
