package importer_test

import (
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/importer"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/legacy"
	"github.com/arkhe-ledger/arkhe/report"
)

// reconcileANVL renders one EZID download record.
func reconcileANVL(id string, els ...string) string {
	return ":: " + id + "\n" + strings.Join(els, "\n") + "\n\n"
}

const reconcileBase = `:: ark:/12345/x6aaa1
_status: public
_target: https://example.org/1
erc.who: Doe, Jane

:: ark:/12345/x6aaa2
_status: public
_target: https://example.org/2

:: ark:/12345/x6aaa3
_status: public
_target: https://example.org/3
erc.what: Third

:: ark:/12345/x6aaa4
_status: public
_target: https://example.org/4

:: ark:/12345/x6aaa5
_status: public
_target: https://example.org/5

`

// reconcileChanged differs from reconcileBase: aaa1 repointed, aaa2 tombstoned, aaa3 has another
// title, aaa4 is spelled with a hyphen, aaa5 is missing, bbb1 is new; aaa4 also appears twice
// identically under another spelling.
const reconcileChanged = `:: ark:/12345/x6aaa1
_status: public
_target: https://example.org/one
erc.who: Doe, Jane

:: ark:/12345/x6aaa2
_status: unavailable | withdrawn by depositor
_target: https://example.org/2

:: ark:/12345/x6aaa3
_status: public
_target: https://example.org/3
erc.what: Third, revised

:: ark:/12345/x6-aaa4
_status: public
_target: https://example.org/4

:: ark:/12345/x6bbb1
_status: public
_target: https://example.org/new

`

func reconcileReadCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rows[0], ",") != "kind,ark,field,export_value,ledger_value,source,note" {
		t.Fatalf("header %v", rows[0])
	}
	return rows[1:]
}

func reconcileCount(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// TestReconcileReportsAndApplies runs on the single node and on Citus: the report of an export
// against the ledger, --apply through ark_repoint and ark_apply_export (one ARK_CHANGE row per
// changed ARK), and a second --apply that writes nothing.
func TestReconcileReportsAndApplies(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		ctx := context.Background()
		pool := db.Pool
		l := &ledger.Ledger{Pool: pool}
		dir := t.TempDir()
		base := filepath.Join(dir, "base.anvl")
		changed := filepath.Join(dir, "changed.anvl")
		if err := os.WriteFile(base, []byte(reconcileBase), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(changed, []byte(reconcileChanged), 0o644); err != nil {
			t.Fatal(err)
		}
		rep, err := importer.Run(ctx, l, importer.Config{Inputs: []string{base}, Format: legacy.EZIDANVL})
		if err != nil || rep.Total.Imported != 5 {
			t.Fatalf("import base: %+v %v", rep.Total, err)
		}
		// the changed export, imported: differences reported, nothing applied
		rejects := filepath.Join(dir, "changed.rejects.csv")
		rep, err = importer.Run(ctx, l, importer.Config{Inputs: []string{changed}, RejectsPath: rejects})
		if err != nil {
			t.Fatal(err)
		}
		if c := rep.Total; c.Imported != 1 || c.Differences != 3 || c.Unchanged != 1 {
			t.Errorf("import of the changed export: %+v (want 1 imported, 3 differences, 1 unchanged)", c)
		}
		if got := reconcileCount(t, pool, `select count(*) from ark where url = 'https://example.org/1' and ark = '12345/x6aaa1'`); got != 1 {
			t.Errorf("import changed a target")
		}
		if got := reconcileCount(t, pool, `select count(*) from ark_change`); got != 0 {
			t.Errorf("import wrote %d ARK_CHANGE rows", got)
		}

		out := filepath.Join(dir, "diff.csv")
		sum, err := importer.Reconcile(ctx, l, importer.ReconcileConfig{Exports: []string{changed}, Out: out, OutFormat: report.CSV})
		if err != nil {
			t.Fatal(err)
		}
		rows := reconcileReadCSV(t, out)
		var got []string
		for _, r := range rows {
			got = append(got, r[0]+" "+r[1]+" "+r[2]+" "+r[3]+" | "+r[4])
		}
		sort.Strings(got)
		want := []string{
			"metadata_differs ark:12345/x6aaa3 what Third, revised | Third",
			"only_in_ledger ark:12345/x6aaa5   | https://example.org/5",
			"spelling_only ark:12345/x6aaa4  ark:/12345/x6-aaa4 | 12345/x6aaa4",
			"status_differs ark:12345/x6aaa2 status unavailable | public",
			"status_differs ark:12345/x6aaa2 tombstone_reason withdrawn by depositor | ",
			"target_differs ark:12345/x6aaa1 target https://example.org/one | https://example.org/1",
		}
		// bbb1 was imported above, so it is in the ledger now
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("report rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if sum.Rows != int64(len(want)) || sum.Compared != 5 || sum.Covered != 1 || !sum.Findings() {
			t.Errorf("summary %+v", sum)
		}
		for _, r := range rows {
			if r[0] != importer.DiffOnlyInLedger && !strings.HasPrefix(r[5], changed+":") {
				t.Errorf("source %q does not name the export and line", r[5])
			}
		}

		// --apply: one ARK_CHANGE row per changed ARK (aaa1, aaa2, aaa3)
		sum, err = importer.Reconcile(ctx, l, importer.ReconcileConfig{Exports: []string{changed}, Out: out, OutFormat: report.CSV, Apply: true})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Repointed != 1 || sum.Changed != 2 || sum.NotApplied != 0 {
			t.Errorf("apply: %+v", sum)
		}
		if got := reconcileCount(t, pool, `select count(*) from ark_change`); got != 3 {
			t.Errorf("%d ARK_CHANGE rows, want 3", got)
		}
		if got := reconcileCount(t, pool, `select count(distinct ark) from ark_change where by_text like 'arkhe reconcile --apply sha256:%changed.anvl' and import_run_id is not null`); got != 3 {
			t.Errorf("%d ARK_CHANGE rows name the export", got)
		}
		if got := reconcileCount(t, pool, `select count(*) from ark_change where ark = '12345/x6aaa1' and action = 'update' and before_url = 'https://example.org/1' and after_url = 'https://example.org/one'`); got != 1 {
			t.Error("repoint row of aaa1 missing")
		}
		if got := reconcileCount(t, pool, `select count(*) from ark where ark = '12345/x6aaa2' and status = 'unavailable' and tombstone_reason = 'withdrawn by depositor' and url = 'https://example.org/2'`); got != 1 {
			t.Error("aaa2 not tombstoned with its reason and real target")
		}
		if got := reconcileCount(t, pool, `select count(*) from ark_change where ark = '12345/x6aaa2' and action = 'tombstone'`); got != 1 {
			t.Error("tombstone row of aaa2 missing")
		}
		if got := reconcileCount(t, pool, `select count(*) from ark_change where ark = '12345/x6aaa3' and action = 'metadata' and after_erc->>'what' = 'Third, revised'`); got != 1 {
			t.Error("metadata row of aaa3 missing")
		}
		if got := reconcileCount(t, pool, `select count(*) from import_run where command = 'reconcile' and digest like 'sha256:%'`); got != 1 {
			t.Errorf("%d reconcile runs recorded", got)
		}

		// a second --apply writes nothing; only spelling and the missing ARK remain
		sum, err = importer.Reconcile(ctx, l, importer.ReconcileConfig{Exports: []string{changed}, Out: out, OutFormat: report.CSV, Apply: true})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Repointed+sum.Changed != 0 || sum.Rows != 2 || sum.Kinds[importer.DiffSpellingOnly] != 1 || sum.Kinds[importer.DiffOnlyInLedger] != 1 {
			t.Errorf("second apply: %+v", sum)
		}
		if got := reconcileCount(t, pool, `select count(*) from ark_change`); got != 3 {
			t.Errorf("second apply: %d ARK_CHANGE rows, want still 3", got)
		}
		// importing the export again is a no-op now
		rep, err = importer.Run(ctx, l, importer.Config{Inputs: []string{changed}})
		if err != nil || rep.Total.Unchanged != 5 || rep.Total.Differences != 0 || rep.Total.Imported != 0 {
			t.Errorf("re-import after apply: %+v %v", rep.Total, err)
		}
		for _, q := range []string{`select count(*) from ark_change where by_text ~ '700000000'`, `select count(*) from import_run where source_file ~ '700000000'`} {
			if reconcileCount(t, pool, q) != 0 {
				t.Errorf("internal key in %s", q)
			}
		}
		b, _ := os.ReadFile(out)
		if strings.Contains(string(b), "7000000000") {
			t.Error("internal key in the report")
		}

		// an export that makes aaa2 public again restores it: the row stores public as NULL, and
		// ARK_CHANGE records 'public'; applying the export again finds nothing to change
		restore := filepath.Join(dir, "restore.anvl")
		if err := os.WriteFile(restore, []byte(reconcileANVL("ark:/12345/x6aaa2", "_status: public", "_target: https://example.org/2")), 0o644); err != nil {
			t.Fatal(err)
		}
		for round, want := range []int64{1, 0} {
			sum, err = importer.Reconcile(ctx, l, importer.ReconcileConfig{Exports: []string{restore}, Out: out, OutFormat: report.CSV, Apply: true})
			if err != nil || sum.Changed != want || sum.Kinds[importer.DiffStatusDiffers] != want {
				t.Fatalf("restore, apply %d: %+v %v; want %d status change", round+1, sum, err, want)
			}
		}
		if got := reconcileCount(t, pool, `select count(*) from ark where ark = '12345/x6aaa2' and status is null and tombstone_reason is null and tombstoned_at is null and change_seq = 2`); got != 1 {
			t.Error("aaa2 not restored to public (NULL) with its second change")
		}
		if got := reconcileCount(t, pool, `select count(*) from ark_change where ark = '12345/x6aaa2' and seq = 2 and action = 'restore' and before_status = 'unavailable' and after_status = 'public'`); got != 1 {
			t.Error("restore row of aaa2 missing")
		}
	})
}

// TestReconcileAmbiguousAndParquet: an export that holds one ARK twice with different values is
// reported and never applied; the default Parquet report is written.
func TestReconcileAmbiguousAndParquet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.New(t)
	l := &ledger.Ledger{Pool: pool}
	dir := t.TempDir()
	base := filepath.Join(dir, "base.anvl")
	if err := os.WriteFile(base, []byte(reconcileBase), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := importer.Run(ctx, l, importer.Config{Inputs: []string{base}}); err != nil {
		t.Fatal(err)
	}
	twice := filepath.Join(dir, "twice.anvl")
	text := reconcileANVL("ark:/12345/x6aaa1", "_status: public", "_target: https://example.org/x") +
		reconcileANVL("ark:12345/x6aaa1", "_status: public", "_target: https://example.org/y")
	if err := os.WriteFile(twice, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "diff.parquet")
	sum, err := importer.Reconcile(ctx, l, importer.ReconcileConfig{Exports: []string{twice}, Out: out, OutFormat: report.Parquet, Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Ambiguous != 1 || sum.Repointed != 0 || sum.NotApplied != 1 || sum.Kinds[importer.DiffTargetDiffers] != 2 {
		t.Errorf("summary %+v", sum)
	}
	if got := reconcileCount(t, pool, `select count(*) from ark_change`); got != 0 {
		t.Errorf("%d ARK_CHANGE rows for an ambiguous export", got)
	}
	if fi, err := os.Stat(out); err != nil || fi.Size() == 0 {
		t.Errorf("parquet report: %v", err)
	}
	// only_in_ledger is limited to the shoulder the export touches (/x6 holds aaa2..aaa5)
	if sum.Kinds[importer.DiffOnlyInLedger] != 4 || sum.Covered != 1 {
		t.Errorf("only_in_ledger %d over %d shoulders", sum.Kinds[importer.DiffOnlyInLedger], sum.Covered)
	}
}

// TestReconcileSkipsReservedAndTest: after a default import, an export's reserved ARKs and ARKs
// of the test NAAN 99999 are skipped and counted, not reported as only_in_export, so the
// reconcile finds no differences; with --include-reserved/--include-test they are reported and
// say why. A status and its tombstone reason count as one status difference.
func TestReconcileSkipsReservedAndTest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.New(t)
	l := &ledger.Ledger{Pool: pool}
	dir := t.TempDir()
	export := filepath.Join(dir, "mixed.anvl")
	body := reconcileANVL("ark:/12345/x6ccc1", "_status: public", "_target: https://example.org/c1") +
		reconcileANVL("ark:/12345/x6ccc2", "_status: reserved", "_target: https://example.org/c2") +
		reconcileANVL("ark:/99999/fk4ccc3", "_status: public", "_target: https://example.org/c3")
	if err := os.WriteFile(export, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := importer.Run(ctx, l, importer.Config{Inputs: []string{export}, Format: legacy.EZIDANVL})
	if err != nil || rep.Total.Imported != 1 || rep.Total.ReservedSkipped != 1 || rep.Total.TestSkipped != 1 {
		t.Fatalf("import: %+v %v", rep.Total, err)
	}
	out := filepath.Join(dir, "diff.csv")
	sum, err := importer.Reconcile(ctx, l, importer.ReconcileConfig{Exports: []string{export}, Out: out, OutFormat: report.CSV})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Findings() || sum.Rows != 0 || sum.ReservedSkipped != 1 || sum.TestSkipped != 1 || sum.Compared != 1 {
		t.Errorf("default reconcile: rows %d, reserved skipped %d, test skipped %d, compared %d, findings %t",
			sum.Rows, sum.ReservedSkipped, sum.TestSkipped, sum.Compared, sum.Findings())
	}
	sum, err = importer.Reconcile(ctx, l, importer.ReconcileConfig{Exports: []string{export}, Out: out, OutFormat: report.CSV,
		IncludeReserved: true, IncludeTest: true})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Kinds[importer.DiffOnlyInExport] != 2 || sum.ReservedSkipped != 0 || sum.TestSkipped != 0 || sum.Compared != 3 {
		t.Errorf("included reconcile: %+v", sum)
	}
	rows := reconcileReadCSV(t, out)
	var got []string
	for _, r := range rows {
		got = append(got, r[0]+" "+r[1]+" "+r[2]+" "+r[3]+" ledger:"+r[4]+" | "+r[6])
	}
	sort.Strings(got)
	want := []string{
		"only_in_export ark:12345/x6ccc2 target https://example.org/c2 ledger: | reserved in the export (arkhe import leaves it out without --include-reserved)",
		"only_in_export ark:99999/fk4ccc3 target https://example.org/c3 ledger: | an ARK of the test NAAN 99999 (arkhe import leaves it out without --include-test)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// a tombstone with a reason: two report rows, one status difference
	tomb := filepath.Join(dir, "tomb.anvl")
	if err := os.WriteFile(tomb, []byte(reconcileANVL("ark:/12345/x6ccc1", "_status: unavailable | gone", "_target: https://example.org/c1")), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err = importer.Reconcile(ctx, l, importer.ReconcileConfig{Exports: []string{tomb}, Out: out, OutFormat: report.CSV})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Rows != 2 || sum.Kinds[importer.DiffStatusDiffers] != 1 {
		t.Errorf("tombstone: %d rows, status_differs %d (want 2 rows, 1 difference)", sum.Rows, sum.Kinds[importer.DiffStatusDiffers])
	}
}

// TestReconcileRejectNamesThePlace: a record reconcile cannot normalize is counted and named as
// every reject is, "FILE:LINE (record R): ID: field F: reason".
func TestReconcileRejectNamesThePlace(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	l := &ledger.Ledger{Pool: pgtest.New(t)}
	dir := t.TempDir()
	export := filepath.Join(dir, "bad.anvl")
	body := reconcileANVL("ark:/12345/x6eee1", "_status: public", "_target: https://example.org/e1") +
		reconcileANVL("ark:/12345/x6eee2", "_status: public", "_target: https://example.org/"+strings.Repeat("e", 2100))
	if err := os.WriteFile(export, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := importer.Reconcile(ctx, l, importer.ReconcileConfig{Exports: []string{export}, Out: filepath.Join(dir, "diff.csv"), OutFormat: report.CSV})
	if err != nil {
		t.Fatal(err)
	}
	want := export + ":5 (record 2): ark:/12345/x6eee2: field target: target URL is 2120 octets, limit 2048; " + importer.KeptReservedNote
	if sum.Rejected != 1 || len(sum.FirstRejects) != 1 || sum.FirstRejects[0] != want {
		t.Errorf("rejected %d, first rejects %q; want 1, %q", sum.Rejected, sum.FirstRejects, want)
	}
}
