package export_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/export"
	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/importer"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// loadEZID imports the real EZID identifiers (reserved and test ARKs included) and the N2T
// sample binder into l, and returns how many ARKs the ledger holds.
func loadEZID(t *testing.T, l *ledger.Ledger) int64 {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"ezid/db.identifier.jsonl", "arklet/sample_noid_output.txt"} {
		_, err := importer.Run(t.Context(), l, importer.Config{Inputs: []string{fixtures.SharedData(t, f)},
			RejectsPath: filepath.Join(dir, filepath.Base(f)+".rejects.csv"), IncludeReserved: true, IncludeTest: true})
		if err != nil {
			t.Fatalf("import %s: %v", f, err)
		}
	}
	return scalar[int64](t, l.Pool, `select count(*) from ark`)
}

func scalar[T any](t *testing.T, pool *pgxpool.Pool, q string, args ...any) T {
	t.Helper()
	var v T
	if err := pool.QueryRow(t.Context(), q, args...).Scan(&v); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return v
}

// arkState is what resolution depends on, per ARK, in key order.
func arkState(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(t.Context(), `select ark || ' ' || coalesce(url, '') || ' ' || ark_status_text(status) || ' ' ||
		coalesce(tombstone_reason, '') || ' ' || coalesce(erc_who, '-') || ' ' || coalesce(erc_what, '-') || ' ' || coalesce(erc_when, '-')
		from ark order by ark`)
	if err != nil {
		t.Fatal(err)
	}
	s, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func run(t *testing.T, l *ledger.Ledger, cfg export.Config) export.Result {
	t.Helper()
	res, err := export.Run(t.Context(), l, cfg)
	if err != nil {
		t.Fatalf("export %s: %v", cfg.Format, err)
	}
	return res
}

// TestExportBinderRoundTrip exports a ledger of real EZID and N2T ARKs as an N2T binder dump and
// imports it into a fresh ledger: every ARK comes back with its target, status, tombstone reason
// and ERC kernel.
func TestExportBinderRoundTrip(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l := &ledger.Ledger{Pool: db.Pool}
		n := loadEZID(t, l)
		if n < 2700 {
			t.Fatalf("%d ARKs imported, want the EZID set and the N2T sample", n)
		}
		path := filepath.Join(t.TempDir(), "arks.dump")
		res := run(t, l, export.Config{Format: export.N2TDump, Path: path})
		if res.ARKs != n {
			t.Errorf("exported %d ARKs, the ledger holds %d", res.ARKs, n)
		}
		t.Run("into a fresh ledger", func(t *testing.T) {
			fresh := pgtest.NewDB(t, db.Kind, pgtest.LedgerSchema())
			checkRoundTrip(t, db, fresh, path, n)
		})
	})
}

func checkRoundTrip(t *testing.T, db, fresh pgtest.DB, path string, n int64) {
	{
		l2 := &ledger.Ledger{Pool: fresh.Pool}
		rep, err := importer.Run(t.Context(), l2, importer.Config{Inputs: []string{path},
			RejectsPath: path + ".rejects.csv", IncludeReserved: true, IncludeTest: true})
		if err != nil {
			t.Fatal(err)
		}
		if c := rep.Files[0].Counts; c.Imported != n || c.Rejected != 0 {
			t.Errorf("import of the dump: %+v", c)
		}
		want, got := arkState(t, db.Pool), arkState(t, fresh.Pool)
		if len(want) != len(got) {
			t.Fatalf("%d ARKs after the round trip, want %d", len(got), len(want))
		}
		for i := range want {
			if want[i] != got[i] {
				t.Errorf("round trip changed an ARK:\n got %s\nwant %s", got[i], want[i])
			}
		}
		// a tombstone and a qualifier ARK are among them
		if !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "87602/m4/M3174 ") }) ||
			scalar[int64](t, fresh.Pool, `select count(*) from ark where status = 'unavailable'`) != 175 {
			t.Error("the round trip lost the qualifier ARK or tombstones")
		}
	}
}

// TestExportSince: an export's watermark given to the next export selects exactly the ARKs
// minted, imported, repointed or tombstoned after it.
func TestExportSince(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l := &ledger.Ledger{Pool: db.Pool}
		loadEZID(t, l)
		dir := t.TempDir()
		first := run(t, l, export.Config{Format: export.JSONL, Path: filepath.Join(dir, "all.jsonl")})
		// nothing changed: an empty export, and the same watermark
		again := run(t, l, export.Config{Format: export.JSONL, Path: filepath.Join(dir, "none.jsonl"), Since: &first.Watermark})
		if again.ARKs != 0 || again.Watermark != first.Watermark {
			t.Errorf("no change: %d ARKs, watermark %s after %s", again.ARKs, again.Watermark, first.Watermark)
		}
		// a repoint and a tombstone through the change path, and one newly imported ARK
		ctx := t.Context()
		if _, err := db.Pool.Exec(ctx, `select ark_repoint('13030/c8251g4t', 'https://example.org/moved', null, 'test', now(), null)`); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Pool.Exec(ctx, `select ark_tombstone('13960/t00000075', 'withdrawn', null, 'test', now())`); err != nil {
			t.Fatal(err)
		}
		in := filepath.Join(dir, "one.dump")
		if err := os.WriteFile(in, []byte("VERSION=3\nformat=print\ntype=btree\nHEADER=END\n ark:/13960/t1x2z3|_t\n https://archive.org/details/new\nDATA=END\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := importer.Run(ctx, l, importer.Config{Inputs: []string{in}, RejectsPath: in + ".rejects.csv"}); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "since.jsonl")
		res := run(t, l, export.Config{Format: export.JSONL, Path: out, Since: &first.Watermark})
		got := map[string]ledger.ARKRow{}
		for _, line := range readLines(t, out) {
			var r struct {
				ARK    string  `json:"ark"`
				Target *string `json:"target"`
				Status string  `json:"status"`
			}
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			got[r.ARK] = ledger.ARKRow{ARK: r.ARK, Target: r.Target, Status: r.Status}
		}
		if res.ARKs != 3 || len(got) != 3 {
			t.Fatalf("since %s: %d ARKs %v, want the 3 changed", first.Watermark, res.ARKs, got)
		}
		if r := got["ark:13030/c8251g4t"]; r.Target == nil || *r.Target != "https://example.org/moved" {
			t.Errorf("the repointed ARK: %+v", r)
		}
		if r := got["ark:13960/t00000075"]; r.Status != "unavailable" {
			t.Errorf("the tombstoned ARK: %+v", r)
		}
		if r := got["ark:13960/t1x2z3"]; r.Target == nil || *r.Target != "https://archive.org/details/new" {
			t.Errorf("the new ARK: %+v", r)
		}
		if res.Watermark.ARK <= first.Watermark.ARK || res.Watermark.Change < first.Watermark.Change+2 {
			t.Errorf("watermark %s after %s", res.Watermark, first.Watermark)
		}
	})
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestParseWatermark: what an export prints reads back; anything else is refused.
func TestParseWatermark(t *testing.T) {
	t.Parallel()
	w, err := export.ParseWatermark("69202:15")
	if err != nil || w != (export.Watermark{ARK: 69202, Change: 15}) || w.String() != "69202:15" {
		t.Errorf("69202:15 -> %+v %v", w, err)
	}
	for _, s := range []string{"", "12", "1:", ":1", "-1:2", "1:+2", "a:b", "1:2:3", "2026-01-01"} {
		if _, err := export.ParseWatermark(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}
