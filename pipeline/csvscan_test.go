package pipeline

import (
	"os"
	"strings"
	"testing"

	"github.com/arkhe-ledger/arkhe/textin"
)

// openCSVMax opens the CSV manifest at path with the default mapping and a record bound of max
// bytes.
func openCSVMax(t testing.TB, path string, max int) Reader {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	src, err := textin.NewTextReader(f, textin.CompressionNone)
	if err != nil {
		t.Fatal(err)
	}
	r, err := newCSVManifest(path, src, f, Mapping{}, max)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// ids returns the request IDs of recs.
func ids(recs []Record) string {
	s := make([]string, len(recs))
	for i := range recs {
		s[i] = recs[i].RequestID
	}
	return strings.Join(s, " ")
}

// TestCSVOverlongLine: a line longer than the bound is rejected alone and the rows after it are
// read; so is a line longer than the bound inside a quoted field.
func TestCSVOverlongLine(t *testing.T) {
	t.Parallel()
	p := writeTemp(t, "long.csv", "request_id,what\nr1,one\nr2,"+strings.Repeat("x", 100)+"\nr3,three\n")
	recs, bad := drainManifest(t, openCSVMax(t, p, 100))
	if ids(recs) != "r1 r3" || len(bad) != 1 {
		t.Fatalf("records %q, row errors %v", ids(recs), bad)
	}
	if bad[0].Loc != (textin.Location{File: p, Line: 3, Record: 2}) || bad[0].Reason != "line longer than 100 bytes on line 3" {
		t.Errorf("row error %+v", bad[0])
	}
	// A line of exactly the bound is a record.
	p = writeTemp(t, "edge.csv", "request_id,what\nr1,"+strings.Repeat("y", 97)+"\r\nr2,two\n")
	recs, bad = drainManifest(t, openCSVMax(t, p, 100))
	if ids(recs) != "r1 r2" || len(bad) != 0 || len(recs[0].What) != 97 {
		t.Errorf("at the bound: %q %v", ids(recs), bad)
	}
	// Inside a quoted field: the record is rejected, its lines are read again: r3 is a
	// record, the long line is rejected alone, r4 is a record.
	p = writeTemp(t, "q.csv", "request_id,what\nr1,one\nr2,\"open\nr3,three\n"+strings.Repeat("z", 200)+"\nr4,four\n")
	recs, bad = drainManifest(t, openCSVMax(t, p, 100))
	if ids(recs) != "r1 r3 r4" || len(bad) != 2 {
		t.Fatalf("records %q, row errors %v", ids(recs), bad)
	}
	if bad[0].Loc != (textin.Location{File: p, Line: 3, Record: 2}) ||
		bad[0].Reason != "record longer than 100 bytes (record starts on line 3, breaks on line 5); lines 4 to 5 are read again, one record per line" {
		t.Errorf("row error 1 %+v", bad[0])
	}
	if bad[1].Loc != (textin.Location{File: p, Line: 5, Record: 4}) || bad[1].Reason != "line longer than 100 bytes on line 5" {
		t.Errorf("row error 2 %+v", bad[1])
	}
	if recs[1].Source != (textin.Location{File: p, Line: 4, Record: 3}) || recs[2].Source != (textin.Location{File: p, Line: 6, Record: 5}) {
		t.Errorf("locations %+v %+v", recs[1].Source, recs[2].Source)
	}
}

// TestCSVUnterminatedQuote: a quote opened and never closed costs its own record only: the
// lines it swallowed are read again, one record per line.
func TestCSVUnterminatedQuote(t *testing.T) {
	t.Parallel()
	p := writeTemp(t, "open.csv", "request_id,what\nr1,one\nr2,\"never closed\nr3,three\n\nr4,four\n")
	recs, bad := drainManifest(t, mustOpen(t, p, ""))
	if ids(recs) != "r1 r3 r4" || len(bad) != 1 {
		t.Fatalf("records %q, row errors %v", ids(recs), bad)
	}
	if bad[0].Loc != (textin.Location{File: p, Line: 3, Record: 2}) || bad[0].Reason != "quoted field not closed at the end of the file "+
		"(record starts on line 3, file stops on line 6); lines 4 to 6 are read again, one record per line" {
		t.Errorf("row error %+v", bad[0])
	}
	if recs[1].Source != (textin.Location{File: p, Line: 4, Record: 3}) || recs[2].Source != (textin.Location{File: p, Line: 6, Record: 4}) {
		t.Errorf("locations %+v %+v", recs[1].Source, recs[2].Source)
	}

	// The stray quote "closes" on a later line and is followed by text: the record breaks
	// there, and the lines in between are read again alone (r3's bare quote is its own
	// reject). After them reading goes on as usual: r5's quoted field spans two lines.
	p = writeTemp(t, "stray.csv", "request_id,what\nr1,\"oops\nr2,two\nr3,x\"y\nr4,a\nr5,\"c\nd\"\nr6,six\n")
	recs, bad = drainManifest(t, mustOpen(t, p, ""))
	if ids(recs) != "r2 r4 r5 r6" || len(bad) != 2 {
		t.Fatalf("records %q, row errors %v", ids(recs), bad)
	}
	if recs[2].What != "c\nd" || recs[2].Source != (textin.Location{File: p, Line: 6, Record: 5}) {
		t.Errorf("records %+v", recs)
	}
	want := []struct {
		line   int
		reason string
	}{
		{2, "unbalanced quote: a closing quote is followed by text (record starts on line 2, breaks on line 4, column 6); lines 3 to 4 are read again, one record per line"},
		{4, "quote inside an unquoted field on line 4, column 5"},
	}
	for i, w := range want {
		if bad[i].Loc.Line != w.line || bad[i].Reason != w.reason {
			t.Errorf("row error %d: %+v\nwant line %d %q", i, bad[i], w.line, w.reason)
		}
	}

	// A line read again whose quoted field does not close on it is rejected alone.
	p = writeTemp(t, "again.csv", "request_id,what\nr1,\"a\nr2,\"b\nr3,c\"d\n")
	recs, bad = drainManifest(t, mustOpen(t, p, ""))
	if ids(recs) != "" || len(bad) != 3 || bad[1].Loc.Line != 3 ||
		bad[1].Reason != "quoted field not closed (a line read again after a broken record must hold its whole record) on line 3, column 6" {
		t.Errorf("records %q, row errors %v", ids(recs), bad)
	}
}
