package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/localpg"
)

// withDB returns connection string u naming database name instead of its own.
func withDB(t *testing.T, u, name string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	p.Path = "/" + name
	return p.String()
}

// execOnNode runs sql in the "postgres" database of the server behind u.
func execOnNode(ctx context.Context, t *testing.T, u, sql string) error {
	t.Helper()
	conn, err := pgx.Connect(ctx, withDB(t, u, "postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// backupDatabase copies db's database, as it is now, to a new database named name on every
// node (CREATE DATABASE ... TEMPLATE: the copy a restored backup gives, cluster metadata, audit
// summaries and sequences included), and returns the copy's coordinator URL. The copy is
// dropped on every node when the test ends. The source's sessions are ended first, so db.Pool
// reconnects on its next use.
func backupDatabase(t *testing.T, db pgtest.DB, name string) string {
	t.Helper()
	ctx := t.Context()
	nodes := db.NodeURLs()
	src := pgx.Identifier{strings.TrimPrefix(mustParse(t, db.URL).Path, "/")}.Sanitize()
	dst := pgx.Identifier{name}.Sanitize()
	db.Pool.Reset()
	for _, u := range nodes {
		if err := execOnNode(ctx, t, u, "alter database "+src+" allow_connections false"); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, u := range nodes {
			if err := execOnNode(context.WithoutCancel(ctx), t, u, "alter database "+src+" allow_connections true"); err != nil {
				t.Error(err)
			}
		}
	}()
	for _, u := range nodes {
		if err := execOnNode(ctx, t, u, "select pg_terminate_backend(pid, 10000) from pg_stat_activity where datname = "+
			"'"+strings.Trim(src, `"`)+"' and pid <> pg_backend_pid()"); err != nil {
			t.Fatal(err)
		}
	}
	// the workers' copies first: the coordinator's maintenance daemon connects to them
	for i := len(nodes) - 1; i >= 0; i-- {
		if err := execOnNode(ctx, t, nodes[i], "create database "+dst+" template "+src); err != nil {
			t.Fatalf("copy %s to %s: %v", src, dst, err)
		}
	}
	t.Cleanup(func() {
		ctx := context.Background()
		for _, u := range nodes {
			var err error
			for range 20 { // Citus's maintenance daemon may reconnect before the drop takes its lock
				var pe *pgconn.PgError
				if err = execOnNode(ctx, t, u, "drop database if exists "+dst+" with (force)"); err == nil || !errors.As(err, &pe) || pe.Code != "55006" {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil {
				t.Errorf("drop the copy %s: %v", dst, err)
			}
		}
	})
	return withDB(t, db.URL, name)
}

// dumpDatabase backs db's database up with pg_dump (custom format) and restores the dump into
// a new database named name with pg_restore, as an operator of a single node would, and
// returns its URL. The copy is dropped when the test ends.
func dumpDatabase(t *testing.T, db pgtest.DB, name string) string {
	t.Helper()
	ctx := t.Context()
	bin, _, err := localpg.ServerBinaries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dump := filepath.Join(t.TempDir(), "ledger.dump")
	if out, err := exec.CommandContext(ctx, filepath.Join(bin, "pg_dump"), "--format", "custom", "--file", dump, "--dbname", db.URL).CombinedOutput(); err != nil {
		t.Fatalf("pg_dump: %v\n%s", err, out)
	}
	dst := pgx.Identifier{name}.Sanitize()
	if err := execOnNode(ctx, t, db.URL, "create database "+dst+" template template0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := execOnNode(context.Background(), t, db.URL, "drop database if exists "+dst+" with (force)"); err != nil {
			t.Errorf("drop the restored copy %s: %v", dst, err)
		}
	})
	u := withDB(t, db.URL, name)
	if out, err := exec.CommandContext(ctx, filepath.Join(bin, "pg_restore"), "--exit-on-error", "--dbname", u, dump).CombinedOutput(); err != nil {
		t.Fatalf("pg_restore: %v\n%s", err, out)
	}
	return u
}

func mustParse(t *testing.T, u string) *url.URL {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestVerifyBaselineRollback is the restore drill: mint, a clean audit writes the baseline
// file, the ledger is backed up, more is minted and audited, then the backup is restored. The
// restored ledger agrees with its own audit summary (restored with it), so only the baseline
// file outside the ledger shows that ARKs minted since the backup are gone: ledger.rollback
// names the shoulder and the counts, verify exits 1, and the file is left as it was.
func TestVerifyBaselineRollback(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		dir := t.TempDir()
		if code, out, errOut := arkhe(t, db.URL, "", "init", "--test-registration"); code != 0 {
			t.Fatalf("init: exit %d\n%s\n%s", code, out, errOut)
		}
		mintAs := func(u string, rows int, prefix, mapName string) string {
			t.Helper()
			in := filepath.Join(dir, prefix+"manifest.csv")
			if _, err := os.Stat(in); err != nil {
				if _, err := fixtures.CreateManifestCSV(in, fixtures.ManifestConfig{Rows: rows, Seed: 1, Prefix: prefix}); err != nil {
					t.Fatal(err)
				}
			}
			code, out, errOut := arkhe(t, u, "", "mint", "--client", "test-minter", "--out", filepath.Join(dir, mapName),
				"--rejects", filepath.Join(dir, prefix+"rej.csv"), in)
			if code != 0 {
				t.Fatalf("mint %s: exit %d\n%s\n%s", in, code, out, errOut)
			}
			return out
		}
		mint := func(u string, rows int, prefix string) { t.Helper(); mintAs(u, rows, prefix, prefix+"map.csv") }
		baseline := filepath.Join(dir, "arkhe_verify.baseline.json")
		metrics := filepath.Join(dir, "arkhe_verify.prom")
		verifyRun := func(u string, args ...string) (int, string) {
			t.Helper()
			args = append([]string{"verify", "--out", filepath.Join(dir, "findings.jsonl")}, args...)
			code, out, errOut := arkhe(t, u, "", args...)
			if code == 2 {
				t.Fatalf("verify: exit 2\n%s\n%s", out, errOut)
			}
			return code, out
		}
		readBaseline := func() ([]byte, map[string]any) {
			t.Helper()
			b, err := os.ReadFile(baseline)
			if err != nil {
				t.Fatal(err)
			}
			var f map[string]any
			if err := json.Unmarshal(b, &f); err != nil {
				t.Fatal(err)
			}
			return b, f
		}
		shoulder := func(f map[string]any) map[string]any {
			s, _ := f["shoulders"].(map[string]any)["99999/x9"].(map[string]any)
			return s
		}

		mint(db.URL, 30, "a-")
		// the baseline file defaults to a file beside the metrics file
		if code, out := verifyRun(db.URL, "--metrics-file", metrics); code != 0 || !strings.Contains(out, "no baseline file at "+baseline+" yet") {
			t.Fatalf("first audit: exit %d\n%s", code, out)
		}
		_, f := readBaseline()
		if s := shoulder(f); f["arks"] != 30.0 || s == nil || s["arks"] != 30.0 || s["draws"].(float64) < 30 || !strings.HasPrefix(f["newest_ark"].(string), "ark:99999/x9") {
			t.Fatalf("first baseline file: %v", f)
		}
		// the backup: pg_dump on one node; on Citus a copy of every node's database (what
		// restoring every node to one restore point gives)
		var backup string
		if db.Citus() {
			backup = backupDatabase(t, db, strings.TrimPrefix(mustParse(t, db.URL).Path, "/")+"_bak")
		} else {
			backup = dumpDatabase(t, db, strings.TrimPrefix(mustParse(t, db.URL).Path, "/")+"_bak")
		}
		mint(db.URL, 20, "b-")
		if code, out := verifyRun(db.URL, "--baseline", baseline); code != 0 {
			t.Fatalf("audit after the second mint: exit %d\n%s", code, out)
		}
		after, f := readBaseline()
		s := shoulder(f)
		if f["arks"] != 50.0 || s["arks"] != 50.0 {
			t.Fatalf("second baseline file: %v", f)
		}
		draws := s["draws"].(float64)

		// the restored ledger: its own audit summary agrees with it, the baseline file does not
		code, out := verifyRun(backup, "--baseline", baseline)
		if code != 1 {
			t.Fatalf("restored ledger: exit %d, want 1\n%s", code, out)
		}
		t.Logf("verify of the restored ledger:\n%s", out)
		if !containsAll(out, "note: ledger.rollback: the ledger was rolled back", "(shoulder 99999/x9 50 ARKs then, 30 now)") {
			t.Errorf("the summary does not say the ledger was rolled back, naming the shoulder and counts:\n%s", out)
		}
		var line string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "ledger.rollback") {
				line = l
			}
		}
		if fs := strings.Fields(line); len(fs) < 4 || fs[1] != "error" || fs[2] != "3" || !strings.Contains(line, "shoulder 99999/x9") {
			t.Errorf("summary line %q, want ledger.rollback error 3 (shoulder, ledger, high-water mark)\n%s", line, out)
		}
		b, err := os.ReadFile(filepath.Join(dir, "findings.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var details []string
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var row struct{ Check, Detail string }
			if err := json.Unmarshal([]byte(l), &row); err != nil {
				t.Fatal(err)
			}
			if row.Check != "ledger.rollback" {
				t.Errorf("restored ledger: unexpected finding %s: %s", row.Check, row.Detail)
				continue
			}
			details = append(details, row.Detail)
		}
		want := "shoulder 99999/x9: 50 ARKs and " + jsonInt(draws) + " draws recorded in baseline file " + baseline
		if len(details) != 3 || !containsAll(strings.Join(details, "\n"),
			want, "30 ARKs and", "the ledger was rolled back", "ledger: 50 ARKs recorded", "high-water mark:", "is not in the ledger") {
			t.Errorf("restored ledger's findings, want %q among them:\n%s", want, strings.Join(details, "\n"))
		}
		if again, _ := readBaseline(); string(again) != string(after) {
			t.Errorf("an audit that found a rollback rewrote the baseline file:\n%s\nwas\n%s", again, after)
		}
		// the ledger itself is clean and keeps its file
		if code, out := verifyRun(db.URL, "--baseline", baseline); code != 0 {
			t.Errorf("the ledger that was not rolled back: exit %d\n%s", code, out)
		}

		// recovery: the mint maps put back what the restored ledger forgot, the baseline file
		// raises its counters; the first map's ARKs are there already
		code, out, errOut := arkhe(t, backup, "", "import", "--input-format", "mint-map", "--client", "test-minter",
			"--baseline", baseline, "--rejects", filepath.Join(dir, "recover.rejects.csv"),
			filepath.Join(dir, "a-map.csv"), filepath.Join(dir, "b-map.csv"))
		t.Logf("recovery:\n%s", out)
		if code != 0 || !containsAll(out, "recovered    20 ARKs", "present      30 ", "rejected     0 rows", "raised       ark.seq ", "shoulder 99999/x9 ") {
			t.Fatalf("recovery: exit %d\n%s\n%s", code, out, errOut)
		}
		if _, err := os.Stat(filepath.Join(dir, "recover.rejects.csv")); err == nil {
			t.Errorf("a clean recovery wrote a reject file")
		}
		// the later manifest again: every row replays its ARK, none is drawn anew
		rerun := mintAs(backup, 20, "b-", "b-rerun-map.csv")
		t.Logf("re-run of the later manifest:\n%s", rerun)
		if !containsAll(rerun, "minted      0", "replayed    20") {
			t.Errorf("re-run after the recovery:\n%s", rerun)
		}
		before, after2 := readMintMap(t, filepath.Join(dir, "b-map.csv")), readMintMap(t, filepath.Join(dir, "b-rerun-map.csv"))
		if len(before) != 21 || len(after2) != 21 {
			t.Fatalf("mint maps of %d and %d lines, want 21", len(before), len(after2))
		}
		for i := 1; i < len(before); i++ {
			if before[i][0] != after2[i][0] || before[i][1] != after2[i][1] || after2[i][2] != "replayed" {
				t.Errorf("request ID %s: %s before the loss, %s %s after the recovery", before[i][0], before[i][1], after2[i][1], after2[i][2])
			}
		}
		// and the audit against the baseline file is clean again
		code, out = verifyRun(backup, "--baseline", baseline)
		t.Logf("verify of the recovered ledger:\n%s", out)
		if code != 0 {
			t.Errorf("the recovered ledger: exit %d, want 0\n%s", code, out)
		}
	})
}

func jsonInt(f float64) string {
	b, _ := json.Marshal(int64(f))
	return string(b)
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
