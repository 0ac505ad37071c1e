package pipeline

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arkhe-ledger/arkhe/textin"
)

// gzipBytes compresses data as one gzip member.
func gzipBytes(t testing.TB, data string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// writeTempBytes writes content to name in a new temporary directory.
func writeTempBytes(t testing.TB, name string, content []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, content, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// numberedCSV returns a CSV manifest of n rows, "request_id,what" then "r1,what 1" ...
func numberedCSV(n int) string {
	var b strings.Builder
	b.WriteString("request_id,what\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "r%d,what %d\n", i, i)
	}
	return b.String()
}

// numberedJSONL returns n JSON lines {"request_id":"r1","what":"what 1"} ...
func numberedJSONL(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "{\"request_id\":\"r%d\",\"what\":\"what %d\"}\n", i, i)
	}
	return b.String()
}

// wholeLines decodes a broken gzip stream as far as it goes and counts its whole lines.
func wholeLines(t testing.TB, gz []byte) int {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	zr.Multistream(true)
	got, err := io.ReadAll(zr)
	if err == nil {
		t.Fatal("the broken stream decodes without an error")
	}
	return bytes.Count(got, []byte{'\n'})
}

// TestManifestTruncatedGzip: a manifest cut in the middle of its gzip stream yields every whole
// row, then one row error where the stream breaks, then io.EOF (for CSV and JSON Lines).
func TestManifestTruncatedGzip(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, data string
		header     int
	}{{"m.csv.gz", numberedCSV(10000), 1}, {"m.jsonl.gz", numberedJSONL(10000), 0}} {
		gz := gzipBytes(t, c.data)
		cut := gz[:len(gz)/2]
		lines := wholeLines(t, cut)
		p := writeTempBytes(t, c.name, cut)
		r := mustOpen(t, p, "")
		recs, bad := drainManifest(t, r)
		good := lines - c.header
		if len(recs) != good || len(bad) != 1 {
			t.Fatalf("%s: %d records, %d row errors; want %d, 1: %v", c.name, len(recs), len(bad), good, bad)
		}
		if last := recs[good-1]; last.RequestID != fmt.Sprintf("r%d", good) || last.What != fmt.Sprintf("what %d", good) {
			t.Errorf("%s: last record %+v", c.name, last)
		}
		e := bad[0]
		want := fmt.Sprintf("unexpected EOF in the gzip stream after line %d (record %d): the file is truncated; "+
			"every record before this point was read, the rest of the file cannot be", lines, good)
		if e.Loc != (textin.Location{File: p, Line: lines + 1, Record: good + 1}) || e.Reason != want {
			t.Errorf("%s: row error %+v\nwant reason %q", c.name, e, want)
		}
		if _, err := r.Next(t.Context()); !errors.Is(err, io.EOF) {
			t.Errorf("%s: after the finding: %v", c.name, err)
		}
	}
}

// TestManifestCorruptGzip: a second gzip member with a broken header, and a member whose CRC-32
// does not match its data, are findings where they are met.
func TestManifestCorruptGzip(t *testing.T) {
	t.Parallel()
	first := gzipBytes(t, numberedCSV(100))
	second := gzipBytes(t, "r101,what 101\nr102,what 102\n")
	second[0] = 0x1e // not the gzip magic
	p := writeTempBytes(t, "two.csv.gz", append(append([]byte(nil), first...), second...))
	recs, bad := drainManifest(t, mustOpen(t, p, ""))
	if len(recs) != 100 || len(bad) != 1 {
		t.Fatalf("broken member: %d records, %d row errors: %v", len(recs), len(bad), bad)
	}
	want := "gzip: invalid header in the gzip stream after line 101 (record 100): the stream is corrupt;"
	if bad[0].Loc != (textin.Location{File: p, Line: 102, Record: 101}) || !strings.HasPrefix(bad[0].Reason, want) {
		t.Errorf("broken member: %+v\nwant reason %q...", bad[0], want)
	}

	one := gzipBytes(t, numberedCSV(50))
	n := len(one)
	sum := crc32.ChecksumIEEE([]byte(numberedCSV(50)))
	one[n-8] = byte(sum) ^ 0xff // the trailer's CRC-32, little-endian
	p = writeTempBytes(t, "crc.csv.gz", one)
	recs, bad = drainManifest(t, mustOpen(t, p, ""))
	if len(recs) != 50 || len(bad) != 1 ||
		!strings.HasPrefix(bad[0].Reason, "gzip: invalid checksum in the gzip stream after line 51 (record 50): the stream is corrupt;") {
		t.Errorf("bad checksum: %d records, %v", len(recs), bad)
	}
}

// TestTextReaderTruncatedXZ: an xz stream cut short is a *DecodeError after its whole lines.
// TestTextReaderSourceError: an I/O error of the file under the decompressor comes through as
// itself, not as a *DecodeError.
// TestManifestCROnly: CSV and JSON Lines manifests with CR-only line ends read every row, with
// the right line numbers; a line break in a quoted field reads as LF.
func TestManifestCROnly(t *testing.T) {
	t.Parallel()
	csvText := strings.ReplaceAll(numberedCSV(1000), "\n", "\r") + "r1001,\"two\rlines\"\rr1002,last\r"
	p := writeTempBytes(t, "mac.csv", []byte(csvText))
	recs, bad := drainManifest(t, mustOpen(t, p, ""))
	if len(recs) != 1002 || len(bad) != 0 {
		t.Fatalf("CSV: %d records, %d row errors: %v", len(recs), len(bad), bad)
	}
	if recs[999].RequestID != "r1000" || recs[999].Source != (textin.Location{File: p, Line: 1001, Record: 1000}) {
		t.Errorf("CSV record 1000: %+v", recs[999])
	}
	if recs[1000].What != "two\nlines" || recs[1001].Source.Line != 1004 {
		t.Errorf("CSV quoted line break: %+v, %+v", recs[1000], recs[1001])
	}
	p = writeTempBytes(t, "mac.jsonl.gz", gzipBytes(t, strings.ReplaceAll(numberedJSONL(1000), "\n", "\r")))
	recs, bad = drainManifest(t, mustOpen(t, p, ""))
	if len(recs) != 1000 || len(bad) != 0 || recs[999].Source != (textin.Location{File: p, Line: 1000, Record: 1000}) {
		t.Fatalf("JSON Lines: %d records, %d row errors: %v", len(recs), len(bad), bad)
	}
	// An LF file keeps a bare CR inside a field as data (Validate does not refuse it in who).
	p = writeTempBytes(t, "lf.csv", []byte("request_id,who\nr1,a\rb\n"))
	recs, _ = drainManifest(t, mustOpen(t, p, "request_id=request_id,who=who"))
	if len(recs) != 1 || recs[0].Who != "a\rb" {
		t.Errorf("LF file: %+v", recs)
	}
}

// readValidated reads a manifest to the end and validates each record as Run does: it returns
// the good records and every row error, the reader's and Validate's, in file order.
func readValidated(t *testing.T, path string) ([]Record, []*textin.RowError) {
	t.Helper()
	r := mustOpen(t, path, "")
	var good []Record
	var bad []*textin.RowError
	for {
		rec, err := r.Next(t.Context())
		if errors.Is(err, io.EOF) {
			return good, bad
		}
		var re *textin.RowError
		switch {
		case errors.As(err, &re):
			bad = append(bad, re)
		case err != nil:
			t.Fatalf("fatal: %v", err)
		default:
			if re := Validate(&rec, textin.DefaultLimits()); re != nil {
				bad = append(bad, re)
			} else {
				good = append(good, rec)
			}
		}
	}
}

// TestManifestMidFileBOM: a byte order mark anywhere but at the start of the file rejects its
// row, naming the line and the field: two CSV files joined (the second header and first row
// carry a BOM), a JSON line starting with one, a value holding one.
func TestManifestMidFileBOM(t *testing.T) {
	t.Parallel()
	const bom = "\ufeff"
	p := writeTemp(t, "joined.csv", bom+"request_id,what\nr1,one\n"+bom+"request_id,what\n"+bom+"r2,two\nr3,th"+bom+"ree\nr4,four\n")
	good, bad := readValidated(t, p)
	if ids(good) != "r1 r4" || len(bad) != 3 {
		t.Fatalf("records %q, row errors %v", ids(good), bad)
	}
	for i, want := range []struct {
		line  int
		field string
		octet int
	}{{3, "request_id", 1}, {4, "request_id", 1}, {5, "what", 3}} {
		e := bad[i]
		reason := fmt.Sprintf("byte order mark (U+FEFF) at octet %d: it belongs only at the very start of a file (were files joined together?)", want.octet)
		if e.Loc.Line != want.line || e.Field != want.field || e.Reason != reason {
			t.Errorf("row error %d: %+v", i, e)
		}
	}
	p = writeTemp(t, "joined.jsonl", bom+`{"request_id":"r1"}`+"\n"+bom+`{"request_id":"r2"}`+"\n"+`{"request_id":"\ufeffr3"}`+"\n"+`{"request_id":"r4"}`+"\n")
	good, bad = readValidated(t, p)
	if ids(good) != "r1 r4" || len(bad) != 2 || bad[0].Loc != (textin.Location{File: p, Line: 2, Record: 2}) ||
		bad[0].Reason != "line starts with a byte order mark (U+FEFF): it belongs only at the very start of a file (were files joined together?)" ||
		bad[1].Loc.Line != 3 || bad[1].Field != "request_id" {
		t.Errorf("JSON Lines: records %q, row errors %v", ids(good), bad)
	}
}

// TestTextReaderGzipCutInHeader: a .gz cut inside its header cannot be read at all; the error says
// the file is cut short, not only "unexpected EOF".
