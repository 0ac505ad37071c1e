package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/fixtures/duckdb"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
)

// verifyInternalKey: every internal key of a test database starts with it (pgtest.FirstTestKey);
// no output may show one.
const verifyInternalKey = "7000000000"

func verifyNoInternalKey(t *testing.T, what string, b []byte) {
	t.Helper()
	if bytes.Contains(b, []byte(verifyInternalKey)) {
		t.Errorf("%s shows an internal key (%s...):\n%s", what, verifyInternalKey, b)
	}
}

func verifyExec(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func TestVerifyCommand(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	pool := pgtest.New(t)
	ctx := t.Context()
	if err := fixtures.FillLedger(ctx, pool, 300, 7, fixtures.FillOptions{ChangeEvery: 3}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	jsonl, parquet := filepath.Join(dir, "f.jsonl"), filepath.Join(dir, "f.parquet")

	code, out, errOut := arkhe(t, url, "", "verify", "--out", jsonl, "--out", parquet)
	if code != 0 || !strings.Contains(out, "clean: no findings") || !strings.Contains(out, "ledger.digest") {
		t.Fatalf("clean ledger: exit %d\n%s\n%s", code, out, errOut)
	}
	if b, err := os.ReadFile(jsonl); err != nil || len(b) != 0 {
		t.Errorf("clean findings.jsonl: %q, %v", b, err)
	}
	if r := duckdb.Read(t, parquet, `SELECT 1`); r.Count != 0 {
		t.Errorf("clean findings.parquet has %d rows", r.Count)
	}

	// Break the ledger in one way: an imported ARK whose check character does not verify.
	var run int64
	if err := pool.QueryRow(ctx, `insert into import_run (source_file, format) values ('x.csv', 'csv') returning id`).Scan(&run); err != nil {
		t.Fatal(err)
	}
	name := ark.MintName("99999", "x9", []byte("bcdfghjk"))
	bad := name[:len(name)-1] + map[bool]string{true: "0", false: "1"}[name[len(name)-1] != '0']
	verifyExec(t, pool, `insert into ark (ark, naan, shoulder_id, assigned_name, url, import_run_id)
		select '99999/' || $1::text, '99999', id, $1, 'https://example.org/bad', $2 from shoulder where shoulder = '/x9'`, bad, run)
	code, out, errOut = arkhe(t, url, "", "verify", "--out", jsonl, "--out", parquet)
	if code != 1 {
		t.Fatalf("broken ledger: exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "ark.check_character") {
			line = l
		}
	}
	if f := strings.Fields(line); len(f) < 4 || f[1] != "error" || f[2] != "1" || f[3] != "ark:99999/"+bad {
		t.Errorf("summary line %q, want check, error, 1, ark:99999/%s\n%s", line, bad, out)
	}
	b, err := os.ReadFile(jsonl)
	if err != nil {
		t.Fatal(err)
	}
	var f struct{ Check, Severity, ARK, Detail string }
	if err := json.Unmarshal(b, &f); err != nil || bytes.Count(b, []byte("\n")) != 1 {
		t.Fatalf("findings.jsonl %q: %v", b, err)
	}
	if f.Check != "ark.check_character" || f.Severity != "error" || f.ARK != "ark:99999/"+bad || f.Detail == "" {
		t.Errorf("finding %+v", f)
	}
	r := duckdb.Read(t, parquet, `SELECT "check", severity, ark FROM t`)
	if r.Count != 1 || r.Rows[0]["check"] != "ark.check_character" || r.Rows[0]["ark"] != "ark:99999/"+bad {
		t.Errorf("findings.parquet: %+v", r)
	}
	verifyNoInternalKey(t, "stdout", []byte(out))
	verifyNoInternalKey(t, "stderr", []byte(errOut))
	verifyNoInternalKey(t, "findings.jsonl", b)

	// Could not run: exit 2, and no findings file replaced.
	code, _, errOut = arkhe(t, "postgres://nobody@/none?host=/nonexistent-socket-dir", "", "verify", "--out", jsonl)
	if code != 2 {
		t.Errorf("unreachable ledger: exit %d, want 2 (%s)", code, errOut)
	}
	if b2, _ := os.ReadFile(jsonl); !bytes.Equal(b, b2) {
		t.Error("a failed run replaced the findings file")
	}
}

func TestReportChangesMillion(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a million ARK_CHANGE rows: the full suite (make test) runs it, -short does not")
	}
	url := pgtest.URL(t)
	pool := pgtest.New(t)
	ctx := t.Context()
	start := time.Now()
	// 100,000 ARKs, each repointed once, then nine more changes each: 1,000,000 ARK_CHANGE rows,
	// with NULL times (every 10th), NULL before targets, empty after targets, by_text and
	// NULL by.
	if err := fixtures.FillLedger(ctx, pool, 100_000, 9, fixtures.FillOptions{ChangeEvery: 1, Unchecked: true}); err != nil {
		t.Fatal(err)
	}
	t.Logf("filled: %v", time.Since(start))
	// The foreign key check of 900,000 rows is skipped (replica): every ark exists.
	verifyExec(t, pool, `set session_replication_role = replica; insert into ark_change (ark, seq, at, action, before_url, after_url, by_client, by_text)
		select c.ark, c.seq + g, case when g = 9 then null else c.at + g * interval '1 hour' end,
		       case when g = 8 then 'tombstone' else 'update' end,
		       case when g = 5 then null else c.after_url end,
		       case when g = 4 then '' else c.after_url end,
		       case when g % 2 = 0 then c.by_client end,
		       case when g = 3 then 'legacy editor' end
		from ark_change c, generate_series(1, 9) g; set session_replication_role = origin`)
	var want struct{ n, nullAt, nullBefore, emptyAfter, nullBy, legacy int64 }
	if err := pool.QueryRow(ctx, `select count(*), count(*) filter (where at is null), count(*) filter (where before_url is null),
		count(*) filter (where after_url = ''), count(*) filter (where by_client is null and by_text is null),
		count(*) filter (where by_text = 'legacy editor') from ark_change`).
		Scan(&want.n, &want.nullAt, &want.nullBefore, &want.emptyAfter, &want.nullBy, &want.legacy); err != nil {
		t.Fatal(err)
	}
	if want.n != 1_000_000 {
		t.Fatalf("fixture has %d changes", want.n)
	}
	t.Logf("fixture ready: %v", time.Since(start))
	dir := t.TempDir()
	path := filepath.Join(dir, "changes.parquet")
	code, out, errOut := arkhe(t, url, "", "report", "changes", "-o", path)
	t.Logf("report written: %v", time.Since(start))
	if code != 0 || !strings.Contains(out, "wrote 1,000,000 ARK_CHANGE rows") {
		t.Fatalf("report changes: exit %d\n%s\n%s", code, out, errOut)
	}
	r := duckdb.Read(t, path, `SELECT count(*) FILTER (WHERE "at" IS NULL)::VARCHAR AS null_at,
		count(*) FILTER (WHERE before_url IS NULL)::VARCHAR AS null_before,
		count(*) FILTER (WHERE after_url = '')::VARCHAR AS empty_after,
		count(*) FILTER (WHERE "by" IS NULL)::VARCHAR AS null_by,
		count(*) FILTER (WHERE "by" = 'legacy editor')::VARCHAR AS legacy,
		count(*) FILTER (WHERE "by" = 'fill-minter')::VARCHAR AS minter,
		count(*) FILTER (WHERE ark NOT LIKE 'ark:99999/x9%' OR naan <> '99999' OR shoulder <> '/x9')::VARCHAR AS odd,
		count(*) FILTER (WHERE ark LIKE '%7000000000%' OR "by" LIKE '%7000000000%')::VARCHAR AS internal,
		count(DISTINCT ark)::VARCHAR AS arks FROM t`)
	t.Logf("read back: %v", time.Since(start))
	if r.Count != want.n {
		t.Errorf("DuckDB counts %d rows, the ledger %d", r.Count, want.n)
	}
	got := r.Rows[0]
	for k, v := range map[string]int64{"null_at": want.nullAt, "null_before": want.nullBefore, "empty_after": want.emptyAfter,
		"null_by": want.nullBy, "legacy": want.legacy, "minter": want.n - want.nullBy - want.legacy, "odd": 0, "internal": 0, "arks": 100_000} {
		if got[k] != strconvI(v) {
			t.Errorf("%s = %v, want %d", k, got[k], v)
		}
	}
	types := map[string]string{}
	for _, d := range r.Describe {
		types[d.Name] = d.Type
	}
	if types["at"] != "TIMESTAMP WITH TIME ZONE" || types["ark"] != "VARCHAR" {
		t.Errorf("DuckDB types %v: at must be a UTC timestamp", types)
	}

	// Filters, and the text formats, on a small selection; then the ARKs.
	jl := filepath.Join(dir, "since.jsonl")
	code, out, errOut = arkhe(t, url, "", "report", "changes", "--since", "2024-01-03T03:04:05Z", "--until", "2024-01-03T03:04:06Z",
		"--naan", "99999", "--shoulder", "x9", "--format", "jsonl", "-o", jl)
	if code != 0 {
		t.Fatalf("report changes --since: exit %d\n%s\n%s", code, out, errOut)
	}
	b, _ := os.ReadFile(jl)
	// the first change of ARKs 0 to 999 (created 1 ms apart, repointed a day later)
	if n := bytes.Count(b, []byte("\n")); n != 1000 {
		t.Errorf("filtered report has %d rows", n)
	}
	if r := duckdb.Read(t, jl, `SELECT 1`); r.Count != 1000 {
		t.Errorf("DuckDB reads %d rows of the JSON Lines report, want 1000", r.Count)
	}
	verifyNoInternalKey(t, "changes JSON Lines", b)
	arksParquet := filepath.Join(dir, "arks.parquet")
	if code, out, errOut = arkhe(t, url, "", "report", "arks", "-o", arksParquet); code != 0 {
		t.Fatalf("report arks: exit %d\n%s\n%s", code, out, errOut)
	}
	r = duckdb.Read(t, arksParquet, `SELECT count(*) FILTER (WHERE commitment IS NULL)::VARCHAR AS no_commitment,
		count(*) FILTER (WHERE target LIKE '%/moved' AND status = 'public' AND who = 'Fixture, Fill')::VARCHAR AS moved,
		count(*) FILTER (WHERE ark LIKE '%7000000000%')::VARCHAR AS internal FROM t`)
	types = map[string]string{}
	for _, d := range r.Describe {
		types[d.Name] = d.Type
	}
	if r.Count != 100_000 || r.Rows[0]["no_commitment"] != "100000" || r.Rows[0]["moved"] != "100000" || r.Rows[0]["internal"] != "0" ||
		types["created_at"] != "TIMESTAMP WITH TIME ZONE" || types["updated_at"] != "TIMESTAMP WITH TIME ZONE" {
		t.Errorf("arks.parquet as DuckDB reads it: %d rows, %v, types %v", r.Count, r.Rows, types)
	}
	csvPath := filepath.Join(dir, "arks.csv")
	code, out, errOut = arkhe(t, url, "", "report", "arks", "--naan", "99999", "-o", csvPath)
	if code != 0 || !strings.Contains(out, "wrote 100,000 ARKs") {
		t.Fatalf("report arks: exit %d\n%s\n%s", code, out, errOut)
	}
	b, _ = os.ReadFile(csvPath)
	verifyNoInternalKey(t, "arks CSV", b)
	if r := duckdb.Read(t, csvPath, `SELECT count(*) FILTER (WHERE commitment IS NULL)::VARCHAR AS n FROM t`); r.Count != 100_000 || r.Rows[0]["n"] != "100000" {
		t.Errorf("DuckDB reads the arks CSV as %d rows, %v", r.Count, r.Rows)
	}
	if !bytes.HasPrefix(b, []byte("ark,naan,shoulder,target,who,what,when,commitment,status,tombstone_reason,created_at,updated_at,metadata\nark:99999/x9")) {
		t.Errorf("arks CSV starts %q", b[:min(len(b), 200)])
	}
	code, _, _ = arkhe(t, url, "", "report", "arks", "--format", "csv", "-o", filepath.Join(dir, "x.parquet"))
	if code != 2 {
		t.Errorf("contradicting --format and extension: exit %d, want 2", code)
	}
}

func strconvI(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestBenchVerifySmall(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a benchmark's end-to-end run: make test runs it, make test-short leaves it out")
	}
	url := pgtest.URL(t)
	code, out, errOut := arkhe(t, url, "", "bench", "verify", "--rows", "3000", "--repeat", "1")
	if code != 0 {
		t.Fatalf("bench verify: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"3,000 ARKs, 300 ARK_CHANGE rows, on ", "floor  COPY (SELECT ark, url FROM ark) TO STDOUT", "arkhe verify (full audit)", "x COPY (SELECT ark, url FROM ark) (ratio of medians; target <= 5x",
		"x the COPY of its columns (median of per-run ratios; target <= 2x", "arkhe verify --since (nothing changed)",
		"x the full audit (median of per-run ratios; target <= 0.1x", "columns floor: COPY (SELECT ark, shoulder_id", "server_version=", "kept database bench_verify_3000_1_"} {
		if !strings.Contains(out, want) {
			t.Errorf("bench output lacks %q:\n%s", want, out)
		}
	}
	// A second run reuses the filled database.
	if code, out, errOut = arkhe(t, url, "", "bench", "verify", "--rows", "3000", "--repeat", "1"); code != 0 || !strings.Contains(out, "(filled by an earlier run)") {
		t.Errorf("second bench verify: exit %d\n%s\n%s", code, out, errOut)
	}
}
