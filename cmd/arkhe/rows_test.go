package main

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/arkhe-ledger/arkhe/fixtures/duckdb"
	"github.com/arkhe-ledger/arkhe/importer"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/report"
)

// writeRows writes rows to the Parquet file path with the one tabular writer.
func writeRows[T any](t *testing.T, path string, rows []T) {
	t.Helper()
	w, err := report.Create[T](path, report.Parquet)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if err := w.Write(rows...); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func strp(s string) *string { return &s }

// TestReportRowTypesParquetDuckDB: the row types of `arkhe report arks` (ledger.ARKRow) and of
// `arkhe reconcile` (importer.DiffRow), written to Parquet, read back by DuckDB with the column
// types and the NULL / "" distinction their documentation promises; an ARK's metadata is JSON
// text that DuckDB's JSON functions read.
func TestReportRowTypesParquetDuckDB(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	created := time.Date(2020, 1, 2, 3, 4, 5, 6000, time.UTC)

	arks := filepath.Join(dir, "arks.parquet")
	writeRows(t, arks, []ledger.ARKRow{
		{ARK: "ark:99999/x9aaa1", NAAN: "99999", Shoulder: "/x9", Target: strp(""), Who: strp("(:unkn)"), What: strp("A title"),
			When: strp("2020"), Commitment: strp("Permanent: Stable Content"), Status: "public", CreatedAt: &created, UpdatedAt: &created,
			Metadata: strp(`{"dc.date": "2000-09-22", "ezid.owner": "432"}`)},
		{ARK: "ark:99999/x9bbb2", NAAN: "99999", Shoulder: "/x9", Status: "unavailable", TombstoneReason: strp("withdrawn")},
	})
	r := duckdb.Read(t, arks, `SELECT ark, target, target IS NULL AS tn, who, "when", status, tombstone_reason,
		created_at::VARCHAR AS c, updated_at IS NULL AS un,
		json_extract_string(metadata, '$."dc.date"') AS md, metadata IS NULL AS mn FROM t ORDER BY ark`)
	wantTypes := map[string]string{
		"ark": "VARCHAR", "naan": "VARCHAR", "shoulder": "VARCHAR", "target": "VARCHAR", "who": "VARCHAR",
		"what": "VARCHAR", "when": "VARCHAR", "commitment": "VARCHAR", "status": "VARCHAR",
		"tombstone_reason": "VARCHAR", "created_at": "TIMESTAMP WITH TIME ZONE", "updated_at": "TIMESTAMP WITH TIME ZONE",
		"metadata": "VARCHAR",
	}
	if got := r.Types(); !reflect.DeepEqual(got, wantTypes) {
		t.Errorf("ARKRow types = %v, want %v", got, wantTypes)
	}
	wantRows := []map[string]any{
		{"ark": "ark:99999/x9aaa1", "target": "", "tn": false, "who": "(:unkn)", "when": "2020", "status": "public",
			"tombstone_reason": nil, "c": "2020-01-02 03:04:05.000006+00", "un": false, "md": "2000-09-22", "mn": false},
		{"ark": "ark:99999/x9bbb2", "target": nil, "tn": true, "who": nil, "when": nil, "status": "unavailable",
			"tombstone_reason": "withdrawn", "c": nil, "un": true, "md": nil, "mn": true},
	}
	if r.Count != 2 || !reflect.DeepEqual(r.Rows, wantRows) {
		t.Errorf("ARKRow rows (count %d):\n got %v\nwant %v", r.Count, r.Rows, wantRows)
	}

	diffs := filepath.Join(dir, "diffs.parquet")
	writeRows(t, diffs, []importer.DiffRow{
		{Kind: "target_differs", ARK: "ark:99999/x9aaa1", Field: strp("target"), ExportValue: strp("https://old.example/"), LedgerValue: strp(""), Source: strp("ark_ark.csv:17")},
		{Kind: "only_in_ledger", ARK: "ark:99999/x9bbb2"},
		{Kind: "only_in_export", ARK: "ark:99999/x9ccc3", Field: strp("target"), ExportValue: strp("https://c.example/"), Source: strp("ark_ark.csv:18"), Note: strp("reserved in the export")},
	})
	r = duckdb.Read(t, diffs, `SELECT kind, field, ledger_value, ledger_value IS NULL AS ln, source, note FROM t`)
	if got := r.Types(); !reflect.DeepEqual(got, map[string]string{"kind": "VARCHAR", "ark": "VARCHAR", "field": "VARCHAR",
		"export_value": "VARCHAR", "ledger_value": "VARCHAR", "source": "VARCHAR", "note": "VARCHAR"}) {
		t.Errorf("DiffRow types = %v", got)
	}
	wantD := []map[string]any{
		{"kind": "target_differs", "field": "target", "ledger_value": "", "ln": false, "source": "ark_ark.csv:17", "note": nil},
		{"kind": "only_in_ledger", "field": nil, "ledger_value": nil, "ln": true, "source": nil, "note": nil},
		{"kind": "only_in_export", "field": "target", "ledger_value": nil, "ln": true, "source": "ark_ark.csv:18", "note": "reserved in the export"},
	}
	if r.Count != 3 || !reflect.DeepEqual(r.Rows, wantD) {
		t.Errorf("DiffRow rows:\n got %v\nwant %v", r.Rows, wantD)
	}
}
