package report

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/arkhe-ledger/arkhe/fixtures/duckdb"
)

func sp(s string) *string { return &s }

func tp(t time.Time) *time.Time { return &t }

// changeFixture covers NULL before_url, empty after_url, NULL after_url,
// NULL by, sub-second microseconds, a non-UTC input zone, nanoseconds that
// must be truncated, and a URL needing CSV quoting.
func changeFixture() []changeRow {
	jst := time.FixedZone("JST", 9*3600)
	return []changeRow{
		{ARK: "ark:99999/x9aaa1", NAAN: "99999", Shoulder: "/x9", At: tp(time.Date(2024, 3, 1, 12, 34, 56, 123456789, jst)),
			Action: "update", BeforeURL: nil, AfterURL: sp("https://example.org/a"), By: sp("client-a")},
		{ARK: "ark:99999/x9bbb2", NAAN: "99999", Shoulder: "/x9", At: tp(time.Date(2024, 3, 2, 0, 0, 0, 1000, time.UTC)),
			Action: "update", BeforeURL: sp("https://example.org/a"), AfterURL: sp(""), By: nil},
		{ARK: "ark:12345/bc7ccc3", NAAN: "12345", Shoulder: "/bc7", At: tp(time.Date(1999, 12, 31, 23, 59, 59, 999999999, time.UTC)),
			Action: "tombstone", BeforeURL: sp(`https://example.org/?q="a,b"`), AfterURL: nil, By: sp("client-b")},
	}
}

// changeFixtureAt holds the fixture's times as written: UTC, microseconds.
var changeFixtureAt = []string{
	"2024-03-01T03:34:56.123456Z",
	"2024-03-02T00:00:00.000001Z",
	"1999-12-31T23:59:59.999999Z",
}

func writeAll[T any](t *testing.T, path string, f Format, rows []T) {
	t.Helper()
	w, err := Create[T](path, f)
	if err != nil {
		t.Fatalf("Create(%s, %v): %v", path, f, err)
	}
	defer w.Abort()
	if err := w.Write(rows...); err != nil {
		t.Fatalf("Write: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := w.Rows(); got != int64(len(rows)) {
		t.Fatalf("Rows() = %d, want %d", got, len(rows))
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestChangeRowParquetDuckDB(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "changes.parquet")
	rows := changeFixture()
	writeAll(t, path, Parquet, rows)

	r := duckdb.Read(t, path, `SELECT ark, naan, shoulder,
		strftime("at", '%Y-%m-%dT%H:%M:%S.%fZ') AS at_text, epoch_us("at")::VARCHAR AS at_us, "at"::VARCHAR AS at_str,
		action, before_url, after_url, "by",
		before_url IS NULL AS before_null, after_url IS NULL AS after_null, after_url = '' AS after_empty
		FROM t ORDER BY "at" DESC`)
	t.Logf("read back with DuckDB %s", r.DuckDB)
	if r.Count != 3 {
		t.Errorf("DuckDB count = %d, want 3", r.Count)
	}
	wantTypes := map[string]string{
		"ark": "VARCHAR", "naan": "VARCHAR", "shoulder": "VARCHAR", "at": "TIMESTAMP WITH TIME ZONE",
		"action": "VARCHAR", "before_url": "VARCHAR", "after_url": "VARCHAR", "by": "VARCHAR",
	}
	if got := r.Types(); !reflect.DeepEqual(got, wantTypes) {
		t.Errorf("DuckDB column types = %v, want %v", got, wantTypes)
	}
	var order []string
	for _, d := range r.Describe {
		order = append(order, d.Name)
	}
	if got := strings.Join(order, ","); got != "ark,naan,shoulder,at,action,before_url,after_url,by" {
		t.Errorf("column order = %s", got)
	}
	want := []map[string]any{
		{"ark": "ark:99999/x9bbb2", "naan": "99999", "shoulder": "/x9", "at_text": changeFixtureAt[1],
			"at_us": "1709337600000001", "at_str": "2024-03-02 00:00:00.000001+00", "action": "update",
			"before_url": "https://example.org/a", "after_url": "", "by": nil,
			"before_null": false, "after_null": false, "after_empty": true},
		{"ark": "ark:99999/x9aaa1", "naan": "99999", "shoulder": "/x9", "at_text": changeFixtureAt[0],
			"at_us": "1709264096123456", "at_str": "2024-03-01 03:34:56.123456+00", "action": "update",
			"before_url": nil, "after_url": "https://example.org/a", "by": "client-a",
			"before_null": true, "after_null": false, "after_empty": false},
		{"ark": "ark:12345/bc7ccc3", "naan": "12345", "shoulder": "/bc7", "at_text": changeFixtureAt[2],
			"at_us": "946684799999999", "at_str": "1999-12-31 23:59:59.999999+00", "action": "tombstone",
			"before_url": `https://example.org/?q="a,b"`, "after_url": nil, "by": "client-b",
			"before_null": false, "after_null": true, "after_empty": nil},
	}
	if !reflect.DeepEqual(r.Rows, want) {
		t.Errorf("DuckDB rows:\n got %v\nwant %v", r.Rows, want)
	}
	for i, row := range rows {
		if got, want := fmt.Sprint(row.At.UnixMicro()), []string{"1709264096123456", "1709337600000001", "946684799999999"}[i]; got != want {
			t.Errorf("fixture %d: Go UnixMicro %s, DuckDB expectation %s", i, got, want)
		}
	}

	// The schema as DuckDB sees it in the file: UTC-adjusted micros, OPTIONAL
	// only for the nullable columns, zstd everywhere.
	s := duckdb.Read(t, path, fmt.Sprintf(`SELECT name, logical_type, converted_type, repetition_type
		FROM parquet_schema('%s') WHERE name <> 'changeRow' ORDER BY name`, path))
	for _, row := range s.Rows {
		name := row["name"].(string)
		wantRep := "REQUIRED"
		if name == "at" || name == "before_url" || name == "after_url" || name == "by" {
			wantRep = "OPTIONAL"
		}
		if row["repetition_type"] != wantRep {
			t.Errorf("%s repetition = %v, want %s", name, row["repetition_type"], wantRep)
		}
		if name == "at" {
			lt, _ := row["logical_type"].(string)
			if !strings.Contains(lt, "isAdjustedToUTC=1") || !strings.Contains(lt, "MICROS=MicroSeconds()") || row["converted_type"] != "TIMESTAMP_MICROS" {
				t.Errorf("at logical type = %v / %v, want TIMESTAMP(isAdjustedToUTC=true, unit=MICROS)", lt, row["converted_type"])
			}
		} else if row["converted_type"] != "UTF8" {
			t.Errorf("%s converted type = %v, want UTF8", name, row["converted_type"])
		}
	}
	if len(s.Rows) != 8 {
		t.Errorf("parquet_schema leaf columns = %d, want 8", len(s.Rows))
	}
	m := duckdb.Read(t, path, fmt.Sprintf(`SELECT DISTINCT compression FROM parquet_metadata('%s')`, path))
	if len(m.Rows) != 1 || m.Rows[0]["compression"] != "ZSTD" {
		t.Errorf("compression = %v, want only ZSTD", m.Rows)
	}
}

func TestChangeRowParquetGo(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "changes.parquet")
	rows := changeFixture()
	writeAll(t, path, Parquet, rows)

	got, err := parquet.ReadFile[changeRow](path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rows) {
		t.Fatalf("read %d rows, want %d", len(got), len(rows))
	}
	for i := range rows {
		want := rows[i]
		wantAt := want.At.Truncate(time.Microsecond)
		g := got[i]
		if g.At == nil || !g.At.Equal(wantAt) || g.At.UTC().Format(layoutMicros) != changeFixtureAt[i] {
			t.Errorf("row %d at = %v, want %v", i, g.At, wantAt)
		}
		g.At, want.At = nil, nil
		if !reflect.DeepEqual(g, want) {
			t.Errorf("row %d = %+v, want %+v", i, g, want)
		}
	}
	if got[1].AfterURL == nil || *got[1].AfterURL != "" || got[0].BeforeURL != nil {
		t.Errorf("NULL / empty string not kept: before_url[0]=%v after_url[1]=%v", got[0].BeforeURL, got[1].AfterURL)
	}

	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	pf, err := parquet.OpenFile(f, fi.Size())
	if err != nil {
		t.Fatal(err)
	}
	md := pf.Metadata()
	var sawAt bool
	for _, el := range md.Schema {
		if el.Name != "at" {
			continue
		}
		sawAt = true
		ts, ok := el.LogicalType.Value.(*format.TimestampType)
		if !ok || !ts.IsAdjustedToUTC || ts.Unit.Value == nil || ts.Unit.Value.Duration() != time.Microsecond {
			t.Errorf("at logical type = %v, want TIMESTAMP(isAdjustedToUTC=true, unit=MICROS)", el.LogicalType.String())
		}
	}
	if !sawAt {
		t.Error("no at column in the schema")
	}
	for _, rg := range md.RowGroups {
		for _, c := range rg.Columns {
			if c.MetaData.Codec != format.Zstd {
				t.Errorf("column %v codec %v, want ZSTD", c.MetaData.PathInSchema, c.MetaData.Codec)
			}
		}
	}
}

const changeCSV = `ark,naan,shoulder,at,action,before_url,after_url,by
ark:99999/x9aaa1,99999,/x9,2024-03-01T03:34:56.123456Z,update,,https://example.org/a,client-a
ark:99999/x9bbb2,99999,/x9,2024-03-02T00:00:00.000001Z,update,https://example.org/a,"",
ark:12345/bc7ccc3,12345,/bc7,1999-12-31T23:59:59.999999Z,tombstone,"https://example.org/?q=""a,b""",,client-b
`

const changeJSONL = `{"ark":"ark:99999/x9aaa1","naan":"99999","shoulder":"/x9","at":"2024-03-01T03:34:56.123456Z","action":"update","before_url":null,"after_url":"https://example.org/a","by":"client-a"}
{"ark":"ark:99999/x9bbb2","naan":"99999","shoulder":"/x9","at":"2024-03-02T00:00:00.000001Z","action":"update","before_url":"https://example.org/a","after_url":"","by":null}
{"ark":"ark:12345/bc7ccc3","naan":"12345","shoulder":"/bc7","at":"1999-12-31T23:59:59.999999Z","action":"tombstone","before_url":"https://example.org/?q=\"a,b\"","after_url":null,"by":"client-b"}
`

func TestChangeRowTextExact(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		f    Format
		want string
	}{{CSV, changeCSV}, {JSONL, changeJSONL}} {
		t.Run(tc.f.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "changes"+tc.f.Extension())
			writeAll(t, path, tc.f, changeFixture())
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("%s output:\n%s\nwant:\n%s", tc.f, got, tc.want)
			}
			// DuckDB reads the text back with NULL and "" kept apart.
			r := duckdb.Read(t, path, `SELECT ark, before_url IS NULL AS bn, after_url IS NULL AS an, after_url, "by" IS NULL AS byn FROM t`)
			if r.Count != 3 {
				t.Errorf("DuckDB count = %d, want 3", r.Count)
			}
			want := []map[string]any{
				{"ark": "ark:99999/x9aaa1", "bn": true, "an": false, "after_url": "https://example.org/a", "byn": false},
				{"ark": "ark:99999/x9bbb2", "bn": false, "an": false, "after_url": "", "byn": true},
				{"ark": "ark:12345/bc7ccc3", "bn": false, "an": true, "after_url": nil, "byn": false},
			}
			if !reflect.DeepEqual(r.Rows, want) {
				t.Errorf("DuckDB rows:\n got %v\nwant %v", r.Rows, want)
			}
		})
	}
}

// findingFixture exercises every escaping rule of the text formats.
func findingFixture() []findingRow {
	return []findingRow{
		{Check: "change_chain", Severity: "error", ARK: nil, Detail: "line1\nline2\t\"q\" é\u2028"},
		{Check: "check_character", Severity: "warning", ARK: sp("ark:99999/x9q"), Detail: " lead"},
		{Check: "pg_marker", Severity: "info", ARK: sp(""), Detail: `\.`},
		{Check: "ctl", Severity: "info", ARK: nil, Detail: "a\x01b\r\nc<&>"},
		{Check: "empty", Severity: "info", ARK: nil, Detail: ""},
	}
}

const findingCSV = "check,severity,ark,detail\n" +
	"change_chain,error,,\"line1\nline2\t\"\"q\"\" é\u2028\"\n" +
	"check_character,warning,ark:99999/x9q,\" lead\"\n" +
	"pg_marker,info,\"\",\"\\.\"\n" +
	"ctl,info,,\"a\x01b\r\nc<&>\"\n" +
	"empty,info,,\"\"\n"

const findingJSONL = `{"check":"change_chain","severity":"error","ark":null,"detail":"line1\nline2\t\"q\" é\u2028"}
{"check":"check_character","severity":"warning","ark":"ark:99999/x9q","detail":" lead"}
{"check":"pg_marker","severity":"info","ark":"","detail":"\\."}
{"check":"ctl","severity":"info","ark":null,"detail":"a\u0001b\r\nc<&>"}
{"check":"empty","severity":"info","ark":null,"detail":""}
`

func TestFindingRowTextExact(t *testing.T) {
	t.Parallel()
	rows := findingFixture()
	for _, tc := range []struct {
		f    Format
		want string
	}{{CSV, findingCSV}, {JSONL, findingJSONL}} {
		t.Run(tc.f.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "findings"+tc.f.Extension())
			writeAll(t, path, tc.f, rows)
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("%s output:\n%q\nwant:\n%q", tc.f, got, tc.want)
			}
			r := duckdb.Read(t, path, `SELECT "check", ark, ark IS NULL AS ark_null, detail FROM t`)
			if len(r.Rows) != len(rows) {
				t.Fatalf("DuckDB rows = %d, want %d", len(r.Rows), len(rows))
			}
			for i, row := range rows {
				var wantARK any
				if row.ARK != nil {
					wantARK = *row.ARK
				}
				g := r.Rows[i]
				if g["check"] != row.Check || g["ark"] != wantARK || g["ark_null"] != (row.ARK == nil) || g["detail"] != row.Detail {
					t.Errorf("DuckDB row %d = %q, want check=%q ark=%v detail=%q", i, g, row.Check, wantARK, row.Detail)
				}
			}
		})
	}
}

// TestFindingRowParquetDuckDB: NULL and "" stay apart and awkward text survives in Parquet, as
// DuckDB reads it. (The row types of arkhe's reports are checked the same way where they are
// declared together with the writer: cmd/arkhe's TestReportRowTypesParquetDuckDB.)
func TestFindingRowParquetDuckDB(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	findings := filepath.Join(dir, "findings.parquet")
	writeAll(t, findings, Parquet, findingFixture())
	r := duckdb.Read(t, findings, `SELECT count(*) FILTER (ark IS NULL) AS nulls, count(*) FILTER (ark = '') AS empties,
		string_agg(detail, '|' ORDER BY "check") AS details FROM t`)
	if got := r.Types(); !reflect.DeepEqual(got, map[string]string{"check": "VARCHAR", "severity": "VARCHAR", "ark": "VARCHAR", "detail": "VARCHAR"}) {
		t.Errorf("FindingRow types = %v", got)
	}
	wantF := map[string]any{"nulls": "3", "empties": "1",
		"details": "line1\nline2\t\"q\" é\u2028|" + " lead|a\x01b\r\nc<&>||" + `\.`}
	if r.Count != 5 || !reflect.DeepEqual(r.Rows[0], wantF) {
		t.Errorf("FindingRow (count %d) = %q, want %q", r.Count, r.Rows[0], wantF)
	}

}

func TestEmptyReport(t *testing.T) {
	t.Parallel()
	for _, f := range []Format{Parquet, CSV, JSONL} {
		t.Run(f.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "empty"+f.Extension())
			writeAll[changeRow](t, path, f, nil)
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			switch f {
			case CSV:
				if string(got) != "ark,naan,shoulder,at,action,before_url,after_url,by\n" {
					t.Errorf("empty CSV = %q, want the header only", got)
				}
			case JSONL:
				if len(got) != 0 {
					t.Errorf("empty JSONL = %q, want nothing", got)
				}
			case Parquet:
				r := duckdb.Read(t, path, `SELECT count(*)::VARCHAR AS n FROM t`)
				if r.Count != 0 || r.Types()["at"] != "TIMESTAMP WITH TIME ZONE" || len(r.Describe) != 8 {
					t.Errorf("empty Parquet: count %d, types %v", r.Count, r.Types())
				}
			}
		})
	}
}

func TestAtomicRename(t *testing.T) {
	t.Parallel()
	for _, f := range []Format{Parquet, CSV, JSONL} {
		t.Run(f.String(), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "changes"+f.Extension())
			w, err := Create[changeRow](path, f)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Abort()
			if err := w.Write(changeFixture()...); err != nil {
				t.Fatal(err)
			}
			names := dirNames(t, dir)
			if len(names) != 1 || !strings.HasPrefix(names[0], ".changes"+f.Extension()+".tmp-") {
				t.Fatalf("before Close the directory holds %q, want one .changes%s.tmp-* file", names, f.Extension())
			}
			if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("final file exists before Close: %v", err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if names := dirNames(t, dir); len(names) != 1 || names[0] != "changes"+f.Extension() {
				t.Fatalf("after Close the directory holds %q", names)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o644 {
				t.Errorf("mode = %v, want 0644", fi.Mode().Perm())
			}
			if err := w.Abort(); err != nil {
				t.Errorf("Abort after Close = %v, want nil", err)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("Abort after Close removed the report: %v", err)
			}
			if err := w.Close(); !errors.Is(err, ErrClosed) {
				t.Errorf("second Close = %v, want ErrClosed", err)
			}
			if err := w.Write(changeFixture()...); !errors.Is(err, ErrClosed) {
				t.Errorf("Write after Close = %v, want ErrClosed", err)
			}
		})
	}
}

func TestAbort(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "changes.parquet")
	if err := os.WriteFile(path, []byte("old report"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := Create[changeRow](path, Parquet)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(changeFixture()...); err != nil {
		t.Fatal(err)
	}
	if err := w.Abort(); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	if names := dirNames(t, dir); len(names) != 1 || names[0] != "changes.parquet" {
		t.Errorf("after Abort the directory holds %q, want only the old report", names)
	}
	if got, _ := os.ReadFile(path); string(got) != "old report" {
		t.Errorf("Abort changed the existing report: %q", got)
	}
	if err := w.Abort(); err != nil {
		t.Errorf("second Abort = %v, want nil", err)
	}
	if err := w.Write(changeFixture()...); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Abort = %v, want ErrClosed", err)
	}
	if err := w.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("Close after Abort = %v, want ErrClosed", err)
	}

	// A successful run replaces the old report.
	writeAll(t, path, Parquet, changeFixture())
	if r := duckdb.Read(t, path, `SELECT 1 AS one`); r.Count != 3 {
		t.Errorf("replaced report count = %d, want 3", r.Count)
	}
}

func TestFailedWriteLeavesNothing(t *testing.T) {
	t.Parallel()
	bad := changeFixture()
	bad[1].BeforeURL = sp("https://example.org/\xff")
	zero := changeFixture()
	zero[2].At = &time.Time{}
	for _, f := range []Format{Parquet, CSV, JSONL} {
		for _, tc := range []struct {
			name   string
			rows   []changeRow
			row    int64
			column string
		}{{"utf8", bad, 5, "before_url"}, {"zero_time", zero, 6, "at"}} {
			t.Run(f.String()+"/"+tc.name, func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, "changes"+f.Extension())
				if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
					t.Fatal(err)
				}
				w, err := Create[changeRow](path, f)
				if err != nil {
					t.Fatal(err)
				}
				if err := w.Write(changeFixture()...); err != nil {
					t.Fatal(err)
				}
				err = w.Write(tc.rows...)
				var ve *ValueError
				if !errors.As(err, &ve) || ve.Row != tc.row || ve.Column != tc.column || ve.Path != path {
					t.Fatalf("Write = %v, want a ValueError at row %d column %s", err, tc.row, tc.column)
				}
				if err2 := w.Write(changeFixture()...); !errors.Is(err2, err) {
					t.Errorf("Write after failure = %v, want the first error", err2)
				}
				if err := w.Close(); !errors.As(err, &ve) {
					t.Errorf("Close after failed Write = %v, want the ValueError", err)
				}
				if names := dirNames(t, dir); len(names) != 1 {
					t.Errorf("after a failed run the directory holds %q, want only the old file", names)
				}
				if got, _ := os.ReadFile(path); string(got) != "old" {
					t.Errorf("failed run changed the existing file: %q", got)
				}
			})
		}
	}
}

func TestJSONLNaN(t *testing.T) {
	t.Parallel()
	type row struct {
		X float64 `parquet:"x"`
	}
	dir := t.TempDir()
	w, err := Create[row](filepath.Join(dir, "x.jsonl"), JSONL)
	if err != nil {
		t.Fatal(err)
	}
	var ve *ValueError
	if err := w.Write(row{1.5}, row{nanFloat()}); !errors.As(err, &ve) || ve.Row != 2 || ve.Column != "x" {
		t.Errorf("Write NaN = %v, want ValueError row 2 column x", err)
	}
	if err := w.Close(); err == nil {
		t.Error("Close after NaN succeeded")
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Errorf("directory holds %q", names)
	}
}

func nanFloat() float64 { z := 0.0; return z / z }

func TestWriteSeq(t *testing.T) {
	t.Parallel()
	seqOf := func(n int, failAt int, failErr error) iter.Seq2[findingRow, error] {
		return func(yield func(findingRow, error) bool) {
			for i := range n {
				if i == failAt {
					yield(findingRow{}, failErr)
					return
				}
				if !yield(findingRow{Check: "c" + strconv.Itoa(i), Severity: "info", Detail: "d"}, nil) {
					return
				}
			}
		}
	}
	dir := t.TempDir()

	path := filepath.Join(dir, "ok.csv")
	w, err := Create[findingRow](path, CSV)
	if err != nil {
		t.Fatal(err)
	}
	n, err := w.WriteSeq(t.Context(), seqOf(2500, -1, nil))
	if err != nil || n != 2500 {
		t.Fatalf("WriteSeq = %d, %v; want 2500, nil", n, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if lines := bytes.Count(data, []byte("\n")); lines != 2501 || !bytes.HasSuffix(data, []byte("c2499,info,,d\n")) {
		t.Errorf("CSV has %d lines, ends %q", lines, data[max(0, len(data)-20):])
	}

	boom := errors.New("cursor broke")
	w, err = Create[findingRow](filepath.Join(dir, "broken.parquet"), Parquet)
	if err != nil {
		t.Fatal(err)
	}
	n, err = w.WriteSeq(t.Context(), seqOf(3000, 2100, boom))
	if !errors.Is(err, boom) || n != 2048 {
		t.Errorf("WriteSeq with a failing cursor = %d, %v; want 2048 rows written and the cursor error", n, err)
	}
	if err := w.Close(); !errors.Is(err, boom) {
		t.Errorf("Close after a failing cursor = %v, want it", err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	w, err = Create[findingRow](filepath.Join(dir, "cancelled.jsonl"), JSONL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteSeq(ctx, seqOf(10, -1, nil)); !errors.Is(err, context.Canceled) {
		t.Errorf("WriteSeq with a cancelled context = %v, want context.Canceled", err)
	}
	if err := w.Close(); !errors.Is(err, context.Canceled) {
		t.Errorf("Close after cancel = %v, want context.Canceled", err)
	}
	if names := dirNames(t, dir); len(names) != 1 || names[0] != "ok.csv" {
		t.Errorf("directory holds %q, want only ok.csv", names)
	}
}

func TestCreateErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := Create[changeRow](filepath.Join(dir, "x.parquet"), Format(0)); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("Create with Format(0) = %v, want ErrUnknownFormat", err)
	}
	if _, err := Create[changeRow](filepath.Join(dir, "missing", "x.parquet"), Parquet); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Create in a missing directory = %v, want fs.ErrNotExist", err)
	}
	if _, err := Create[changeRow](dir, Parquet); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("Create on a directory = %v", err)
	}

	type sliceField struct {
		A []string `parquet:"a"`
	}
	type mapField struct {
		A map[string]string `parquet:"a"`
	}
	type nested struct {
		A struct{ B string } `parquet:"a"`
	}
	type optionalTag struct {
		A string `parquet:"a,optional"`
	}
	type localTime struct {
		A time.Time `parquet:"a,timestamp(microsecond:local)"`
	}
	type intTimestamp struct {
		A int64 `parquet:"a,timestamp(microsecond)"`
	}
	type dupName struct {
		A string `parquet:"x"`
		B string `parquet:"x"`
	}
	type noColumns struct {
		A string `parquet:"-"`
		_ string
	}
	type badUnit struct {
		A time.Time `parquet:"a,timestamp(fortnight)"`
	}
	check := func(name, field string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: Create = %v, want an error naming %q", name, err, field)
		}
	}
	p := filepath.Join(dir, "x.csv")
	_, err := Create[sliceField](p, CSV)
	check("slice", "field A", err)
	_, err = Create[mapField](p, CSV)
	check("map", "field A", err)
	_, err = Create[nested](p, CSV)
	check("nested", "field A", err)
	_, err = Create[optionalTag](p, CSV)
	check("optional", "field A", err)
	_, err = Create[localTime](p, CSV)
	check("local", "must be UTC", err)
	_, err = Create[intTimestamp](p, CSV)
	check("int timestamp", "field A", err)
	_, err = Create[dupName](p, CSV)
	check("duplicate", `"x" used twice`, err)
	_, err = Create[noColumns](p, CSV)
	check("no columns", "no columns", err)
	_, err = Create[badUnit](p, CSV)
	check("bad unit", "fortnight", err)
	_, err = Create[string](p, CSV)
	check("not a struct", "not a struct", err)
	if names := dirNames(t, dir); len(names) != 0 {
		t.Errorf("failed Creates left %q", names)
	}
}

// TestOtherColumnKinds covers the bool, integer, float, millisecond and
// default-nanosecond time columns of the generic writer.
func TestOtherColumnKinds(t *testing.T) {
	t.Parallel()
	type row struct {
		B  bool       `parquet:"b"`
		I  int32      `parquet:"i"`
		U  *uint64    `parquet:"u"`
		F  float64    `parquet:"f"`
		Ms time.Time  `parquet:"ms,timestamp(millisecond)"`
		Ns *time.Time `parquet:"ns"`
		S  string     `parquet:""`
	}
	u := uint64(18446744073709551615)
	ts := time.Date(2024, 1, 2, 3, 4, 5, 123456789, time.UTC)
	rows := []row{{B: true, I: -7, U: &u, F: 0.25, Ms: ts, Ns: &ts, S: "s"}, {Ms: ts}}
	dir := t.TempDir()
	for _, tc := range []struct {
		f    Format
		want string
	}{
		{CSV, "b,i,u,f,ms,ns,S\n" +
			"true,-7,18446744073709551615,0.25,2024-01-02T03:04:05.123Z,2024-01-02T03:04:05.123456789Z,s\n" +
			"false,0,,0,2024-01-02T03:04:05.123Z,,\"\"\n"},
		{JSONL, `{"b":true,"i":-7,"u":18446744073709551615,"f":0.25,"ms":"2024-01-02T03:04:05.123Z","ns":"2024-01-02T03:04:05.123456789Z","S":"s"}` + "\n" +
			`{"b":false,"i":0,"u":null,"f":0,"ms":"2024-01-02T03:04:05.123Z","ns":null,"S":""}` + "\n"},
	} {
		path := filepath.Join(dir, "kinds"+tc.f.Extension())
		writeAll(t, path, tc.f, rows)
		if got, _ := os.ReadFile(path); string(got) != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.f, got, tc.want)
		}
	}
	path := filepath.Join(dir, "kinds.parquet")
	writeAll(t, path, Parquet, rows)
	r := duckdb.Read(t, path, `SELECT b, i, u::VARCHAR AS u, f, ms::VARCHAR AS ms, ns::VARCHAR AS ns, "S" FROM t LIMIT 1`)
	want := map[string]any{"b": true, "i": float64(-7), "u": "18446744073709551615", "f": 0.25,
		"ms": "2024-01-02 03:04:05.123+00", "ns": "2024-01-02 03:04:05.123456+00", "S": "s"}
	if !reflect.DeepEqual(r.Rows[0], want) {
		t.Errorf("DuckDB row = %v, want %v", r.Rows[0], want)
	}
}

// TestMillionChangeRows writes a million ARK_CHANGE rows (a normal night after
// a host move), checks the heap stays bounded while streaming, and
// has DuckDB count them and check the row groups.
func TestMillionChangeRows(t *testing.T) {
	if testing.Short() {
		t.Skip("a million rows: the full suite (make test) runs it, -short does not")
	}
	const total = 1_000_000
	path := filepath.Join(t.TempDir(), "million.parquet")
	w, err := Create[changeRow](path, Parquet)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()

	base := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	batch := make([]changeRow, 1000)
	var peak uint64
	var ms runtime.MemStats
	for done := 0; done < total; done += len(batch) {
		for i := range batch {
			n := done + i
			name := "x9" + strconv.FormatInt(int64(n), 29)
			var before *string
			if n%10 != 0 { // every tenth change has no previous target
				before = sp("https://old.example.org/objects/" + name)
			}
			batch[i] = changeRow{
				ARK: "ark:99999/" + name, NAAN: "99999", Shoulder: "/x9",
				At:     tp(base.Add(time.Duration(n) * 1001 * time.Microsecond)),
				Action: "update", BeforeURL: before,
				AfterURL: sp("https://new.example.org/objects/" + name), By: sp("host-move"),
			}
		}
		if err := w.Write(batch...); err != nil {
			t.Fatal(err)
		}
		if done%(64*1000) == 0 {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
		if done == total/2 {
			// What the writer really holds half-way (garbage collected): a
			// row group's pages and zstd's history, about 25 MB, against
			// roughly 250 MB for half a million rows kept in memory.
			runtime.GC()
			runtime.ReadMemStats(&ms)
			t.Logf("live heap after %d rows: %.1f MB", done, float64(ms.HeapAlloc)/1e6)
			if ms.HeapAlloc > 100<<20 {
				t.Errorf("live heap %d bytes after %d rows, want < 100 MiB", ms.HeapAlloc, done)
			}
		}
	}
	runtime.ReadMemStats(&ms)
	peak = max(peak, ms.HeapAlloc)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	t.Logf("1,000,000 ChangeRows: %.1f MB file, peak sampled heap %.1f MB", float64(fi.Size())/1e6, float64(peak)/1e6)
	if peak > 200<<20 {
		t.Errorf("peak heap %d bytes while streaming a million rows, want < 200 MiB", peak)
	}

	r := duckdb.Read(t, path, `SELECT count(DISTINCT ark)::VARCHAR AS arks, count(*) FILTER (before_url IS NULL)::VARCHAR AS no_before,
		min(epoch_us("at"))::VARCHAR AS first_us, max(epoch_us("at"))::VARCHAR AS last_us FROM t`)
	if r.Count != total {
		t.Errorf("DuckDB count = %d, want %d", r.Count, total)
	}
	want := map[string]any{"arks": "1000000", "no_before": "100000",
		"first_us": strconv.FormatInt(base.UnixMicro(), 10),
		"last_us":  strconv.FormatInt(base.Add((total-1)*1001*time.Microsecond).UnixMicro(), 10)}
	if !reflect.DeepEqual(r.Rows[0], want) {
		t.Errorf("DuckDB aggregates = %v, want %v", r.Rows[0], want)
	}
	g := duckdb.Read(t, path, fmt.Sprintf(`SELECT count(DISTINCT row_group_id)::VARCHAR AS groups, max(row_group_num_rows)::VARCHAR AS most
		FROM parquet_metadata('%s')`, path))
	wantG := map[string]any{"groups": "8", "most": strconv.Itoa(RowGroupRows)}
	if !reflect.DeepEqual(g.Rows[0], wantG) {
		t.Errorf("row groups = %v, want %v", g.Rows[0], wantG)
	}
}
