package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
)

func readMintMap(t *testing.T, path string) [][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestMintNYPLTwice mints the 932 NYPL public-domain collections, then runs the same command
// again: the second run mints nothing, replays all 932 with the same ARKs in the same order,
// and says so (issue 3 "Real input").
func TestMintNYPLTwice(t *testing.T) {
	nypl := filepath.Join(sharedDir(t), "data", "nypl-publicdomain", "pd_collections.csv")
	url := pgtest.URL(t)
	if code, out, errOut := arkhe(t, url, "", "init", "--test-registration"); code != 0 {
		t.Fatalf("init: exit %d\n%s\n%s", code, out, errOut)
	}
	const mapping = "request_id=UUID,url=Digital Collections URL,who=Contributor,what=Title,when=Date"
	dir := t.TempDir()
	t.Chdir(dir) // outputs default to the current directory, named after the manifest
	code, out, errOut := arkhe(t, url, "", "mint", "--client", "test-minter", "--map", mapping, nypl, "--batch", "200")
	if code != 0 {
		t.Fatalf("first mint: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{"read        932", "minted      932", "replayed    0", "rejected    0", "shoulder ark:99999/x9"} {
		if !strings.Contains(out, want) {
			t.Errorf("first summary lacks %q:\n%s", want, out)
		}
	}
	first := readMintMap(t, filepath.Join(dir, "pd_collections.mintmap.csv"))
	if len(first) != 933 {
		t.Fatalf("first mint map: %d lines, want 933", len(first))
	}
	if _, err := os.Stat(filepath.Join(dir, "pd_collections.rejects.csv")); !os.IsNotExist(err) {
		t.Fatalf("a reject file after a clean run: %v", err)
	}

	second := filepath.Join(dir, "again.csv")
	code, out, errOut = arkhe(t, url, "", "mint", "--client", "test-minter", "--map", mapping, "--out", second, "--workers", "3", nypl)
	if code != 0 {
		t.Fatalf("second mint: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{"minted      0", "replayed    932", "nothing new minted: all 932 ARKs replayed"} {
		if !strings.Contains(out, want) {
			t.Errorf("second summary lacks %q:\n%s", want, out)
		}
	}
	again := readMintMap(t, second)
	if len(again) != len(first) {
		t.Fatalf("second mint map: %d lines, want %d", len(again), len(first))
	}
	for i := 1; i < len(first); i++ {
		if first[i][0] != again[i][0] || first[i][1] != again[i][1] || first[i][2] != "minted" || again[i][2] != "replayed" {
			t.Fatalf("line %d: %q then %q", i, first[i], again[i])
		}
	}
	if first[1][0] != "5cd94760-c52a-012f-bcd4-3c075448cc4b" {
		t.Fatalf("the mint map does not follow the manifest: first row %q", first[1])
	}
	// the ledger: 932 ARKs with receipts, one audit event per run with its counts
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var arks, receipts, audits, replayed int64
	if err := conn.QueryRow(context.Background(), `select (select count(*) from ark), (select count(*) from mint_receipt),
		(select count(*) from audit_event where action = 'mint'),
		(select (detail->>'replayed')::bigint from audit_event where action = 'mint' order by id desc limit 1)`).Scan(&arks, &receipts, &audits, &replayed); err != nil {
		t.Fatal(err)
	}
	if arks != 932 || receipts != 932 || audits != 2 || replayed != 932 {
		t.Fatalf("ledger: %d ARKs, %d receipts, %d audit events (last replayed %d)", arks, receipts, audits, replayed)
	}
}

func TestMintCommandRefusalsAndRejects(t *testing.T) {
	url := pgtest.URL(t)
	if code, _, errOut := arkhe(t, url, "", "init", "--test-registration"); code != 0 {
		t.Fatalf("init: %s", errOut)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "objects.csv")
	if _, err := fixtures.CreateManifestCSV(in, fixtures.ManifestConfig{Rows: 20, Seed: 1, BadEvery: 10}); err != nil {
		t.Fatal(err)
	}
	mm, rej := filepath.Join(dir, "map.jsonl"), filepath.Join(dir, "rej.csv")
	// refusals: exit 2, nothing written
	for _, args := range [][]string{
		{"mint", "--client", "nobody", "--out", mm, "--rejects", rej, in},
		{"mint", "--client", "test-minter", "--shoulder", "/b5", "--out", mm, "--rejects", rej, in},
		{"mint", "--client", "test-minter", "--map", "request_id=", "--out", mm, in},
		{"mint", "--client", "test-minter", "--out", filepath.Join(dir, "map.txt"), in},
		{"mint", "--client", "test-minter"},
	} {
		code, out, errOut := arkhe(t, url, "", args...)
		if code != 2 || errOut == "" {
			t.Errorf("arkhe %s: exit %d, want 2\n%s\n%s", strings.Join(args, " "), code, out, errOut)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("a refused run wrote files: %v", entries)
	}
	// two bad rows: exit 1, the good rows land, JSON Lines mint map
	code, out, errOut := arkhe(t, url, "", "mint", "--client", "test-minter", "--out", mm, "--rejects", rej, in)
	if code != 1 || !strings.Contains(out, "minted      18") || !strings.Contains(out, "rejected    2") {
		t.Fatalf("mint with bad rows: exit %d\n%s\n%s", code, out, errOut)
	}
	b, err := os.ReadFile(mm)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 18 || !strings.HasPrefix(lines[0], `{"request_id":"obj-000000001","ark":"ark:99999/x9`) {
		t.Fatalf("JSON Lines mint map:\n%s", b)
	}
	rejects := readMintMap(t, rej)
	if len(rejects) != 3 || rejects[1][1] != "11" || rejects[1][4] != "what" || rejects[2][1] != "21" || rejects[2][4] != "who" {
		t.Fatalf("reject file %q", rejects)
	}
}
