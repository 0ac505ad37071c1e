package legacy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/textin"
)

// fuzzRead drains a reader over data and checks the Reader contract: no
// panic, termination, at most one TruncatedError and only EOF after it,
// locations that never go backwards, valid UTF-8 in every yielded string.
func fuzzRead(t *testing.T, data []byte, f Format) {
	r, err := NewReader(bytes.NewReader(data), "fuzz", f)
	if err != nil {
		return // a CSV without the required header column
	}
	ctx := context.Background()
	truncated := false
	lastRec := 0
	for n := 0; n < 1_000_000; n++ {
		it, err := r.Next(ctx)
		if err == io.EOF {
			return
		}
		if truncated {
			t.Fatalf("%s: %v after TruncatedError", f, err)
		}
		var re *textin.RowError
		var te *TruncatedError
		switch {
		case errors.As(err, &re):
			if re.Loc.Record < lastRec {
				t.Fatalf("%s: record number went back: %v", f, re)
			}
			lastRec = re.Loc.Record
			continue
		case errors.As(err, &te):
			truncated = true
			continue
		case err != nil:
			if _, again := r.Next(ctx); again != err {
				t.Fatalf("%s: fatal error not sticky: %v then %v", f, err, again)
			}
			return
		}
		loc := it.Loc()
		if loc.Record < lastRec || loc.Record == 0 && f != NAANJSON2024 || loc.File != "fuzz" {
			t.Fatalf("%s: bad location %v after record %d", f, loc, lastRec)
		}
		lastRec = loc.Record
		if rec := it.Record; rec != nil {
			if rec.ID == "" || !utf8.ValidString(rec.ID) || !utf8.ValidString(rec.Target) {
				t.Fatalf("%s: bad record %+v", f, rec)
			}
			for k, v := range rec.Metadata {
				if !utf8.ValidString(k) || !utf8.ValidString(v) {
					t.Fatalf("%s: invalid UTF-8 in metadata %q", f, k)
				}
			}
		}
	}
	t.Fatalf("%s: reader does not end", f)
}

// addSharedSeeds adds the first 8 KiB of each shared data file as a seed; a missing file fails
// the test (fixtures.SharedData).
func addSharedSeeds(f *testing.F, files ...string) {
	for _, name := range files {
		b, err := os.ReadFile(fixtures.SharedData(f, name))
		if err != nil {
			f.Fatal(err)
		}
		if len(b) > 8192 {
			b = b[:8192]
		}
		f.Add(b)
	}
}

// FuzzN2TDump: the db_dump reader never panics on any input.
func FuzzN2TDump(f *testing.F) {
	f.Add([]byte(n2tDump))
	f.Add([]byte(n2tDump[:200]))
	f.Add([]byte("VERSION=3\nformat=bytevalue\nHEADER=END\n 6161\n 62\nDATA=END\n"))
	f.Add([]byte("VERSION=3\nHEADER=END\n a|b\n \\zz\n :/x\n"))
	addSharedSeeds(f, "arklet/sample_noid_output.txt")
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzRead(t, data, N2TDump)
	})
}

// FuzzANVL: the three ANVL readers never panic on any input.
func FuzzANVL(f *testing.F) {
	f.Add([]byte(ezidANVL))
	f.Add([]byte(registryANVL))
	f.Add([]byte(":: x\n a\n%\n\n::\n:y\n"))
	f.Add([]byte(":: ark:/1/a\n_target: x\n:: ark:/1/b\xe9\n_target: y\n")) // held :: line with invalid UTF-8 (was yielded)
	f.Add([]byte("naa:\nwhat: ark:/1\nwhen: 2020.13.01\n"))
	addSharedSeeds(f, "legacy-samples/n2t_master_shoulders.anvl.txt", "jkunze-naan/naan_registry.txt")
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, fm := range []Format{EZIDANVL, NAANANVL, ShoulderListN2TANVL} {
			fuzzRead(t, data, fm)
		}
	})
}

// FuzzReaders: every other format never panics on any input.
func FuzzReaders(f *testing.F) {
	f.Add([]byte(upstreamDump))
	f.Add([]byte(frickCSV))
	f.Add([]byte(ezidCSV))
	f.Add([]byte(`{"metadata": {}, "data": [{"what": "1", "rtype": "PublicNAAN"}]}`))
	f.Add([]byte(`{"12345": {"what": "12345", "target": "x"}}`))
	f.Add([]byte("shoulder - ark:/1/x y\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, fm := range []Format{ArkletJSON, ArkletCSV, EZIDCSV, EZIDDB, EZIDDBShoulders, NAANJSON2023, NAANJSON2024,
			ShoulderListEZIDCSV, ShoulderListEZIDLog} {
			fuzzRead(t, data, fm)
		}
		_, _ = DetectFormat("fuzz", data)
	})
}

// FuzzDumpObject checks the dumpdata parser against encoding/json: both
// accept the same objects and agree on model, pk and every field, except that
// the parser refuses a key given twice (encoding/json keeps the last value).
func FuzzDumpObject(f *testing.F) {
	for _, line := range strings.Split(upstreamDump, "\n") {
		f.Add([]byte(strings.TrimSuffix(strings.TrimSpace(line), ",")))
	}
	f.Add([]byte(`{"model":"a\u00e9\ud83d\ude00","pk":-1.5e3,"fields":{"a":[1,{"b":null}],"a":"dup","c":"\"\\\/\b\f\n\r\t"}}`))
	f.Add([]byte(`{"model":null,"pk":"x","fields":null}`))
	f.Add([]byte(`{"fields":{"x":01}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parseDumpObject(string(data))
		var top map[string]json.RawMessage
		oracleErr := json.Unmarshal(data, &top)
		if oracleErr == nil && top == nil {
			oracleErr = errors.New("null is not an object") // Unmarshal accepts null into a map
		}
		var model string
		var fields map[string]json.RawMessage
		if oracleErr == nil {
			if m, ok := top["model"]; ok {
				oracleErr = json.Unmarshal(m, &model)
			}
		}
		if oracleErr == nil {
			if fr, ok := top["fields"]; ok {
				oracleErr = json.Unmarshal(fr, &fields)
			}
		}
		if err != nil {
			var dk *dupKeyError
			if oracleErr == nil && !strings.Contains(err.Error(), "nesting deeper") && !errors.As(err, &dk) && !topKeyTwice(data) {
				t.Fatalf("parser rejects what encoding/json accepts: %v", err)
			}
			return
		}
		if oracleErr != nil {
			t.Fatalf("parser accepts what encoding/json rejects (%v)", oracleErr)
		}
		if got.Model != model {
			t.Fatalf("model %q vs %q", got.Model, model)
		}
		if !bytes.Equal(bytes.TrimSpace([]byte(got.PK)), bytes.TrimSpace(top["pk"])) {
			t.Fatalf("pk %q vs %q", got.PK, top["pk"])
		}
		if len(got.Fields) != len(fields) {
			t.Fatalf("%d fields vs %d", len(got.Fields), len(fields))
		}
		for k, v := range fields {
			if g := got.Fields.get(k); !bytes.Equal(bytes.TrimSpace([]byte(g)), bytes.TrimSpace(v)) {
				t.Fatalf("field %q: %q vs %q", k, g, v)
			}
		}
		for _, fl := range got.Fields {
			s, _, err := jsonText(fl.raw)
			// UseNumber: a number past float64's range (1e999) is valid JSON,
			// and jsonText keeps it as its literal text.
			var want any
			dec := json.NewDecoder(strings.NewReader(fl.raw))
			dec.UseNumber()
			if derr := dec.Decode(&want); derr != nil || err != nil {
				t.Fatalf("field %q: jsonText %v, encoding/json %v", fl.key, err, derr)
			}
			if wn, ok := want.(json.Number); ok && string(wn) != s {
				t.Fatalf("field %q: number %q rendered %q", fl.key, wn, s)
			}
			if ws, ok := want.(string); ok && ws != s {
				t.Fatalf("field %q decodes to %q, encoding/json %q", fl.key, s, ws)
			}
		}
	})
}

// FuzzArrayFramer checks next's fast path (whole: an element that ends within the buffered bytes)
// against byte-by-byte framing: the same elements, start lines, errors and last line, with a
// large buffer (fast path taken) and a 16-octet one (taken only for tiny elements).
func FuzzArrayFramer(f *testing.F) {
	f.Add([]byte("[\n{\"a\": \"x\\\\\"}\", \"b\": [1, {\"c\": \"]\"}]},\n{\"d\": \"\\\\\\\\\"}\n]"))
	f.Add([]byte(`[{"a":1},{"b":"\"}"},"s",12,[1,2],{"c":"x`))
	f.Add([]byte("[ {\"a\":\n\"b\"}\n,\n{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		type step struct {
			elem string
			line int
			err  string
		}
		frame := func(size int, noWhole bool) ([]step, int) {
			fr := newArrayFramer(bufio.NewReaderSize(bytes.NewReader(data), size))
			fr.noWhole = noWhole
			var out []step
			for range 10_000 {
				b, line, err := fr.next()
				s := step{elem: string(b), line: line}
				if err != nil {
					s.err = err.Error()
				}
				out = append(out, s)
				if err != nil {
					break
				}
			}
			return out, fr.lastLine()
		}
		want, wantLast := frame(64<<10, true)
		for _, size := range []int{64 << 10, 16} {
			got, gotLast := frame(size, false)
			if len(got) != len(want) || gotLast != wantLast {
				t.Fatalf("buffer %d: %d steps, last line %d; byte by byte %d steps, last line %d", size, len(got), gotLast, len(want), wantLast)
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("buffer %d, element %d: %+v, byte by byte %+v", size, i, got[i], want[i])
				}
			}
		}
	})
}

// topKeyTwice reports whether the top-level object of data names a key twice: the parser refuses
// such an object (at the duplicate, or earlier at a first value it cannot take, as a "fields"
// that is not an object), while encoding/json keeps the last value.
func topKeyTwice(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return false
		}
		k, _ := t.(string)
		if seen[k] {
			return true
		}
		seen[k] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return false
		}
	}
	return false
}
