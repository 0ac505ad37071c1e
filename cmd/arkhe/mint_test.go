package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/loader"
	"github.com/arkhe-ledger/arkhe/pipeline"
	"github.com/arkhe-ledger/arkhe/textin"
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
// and says so.
func TestMintNYPLTwice(t *testing.T) {
	nypl := fixtures.SharedData(t, "nypl-publicdomain", "pd_collections.csv")
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
	for _, want := range []string{"read        932", "minted      932", "replayed    0", "rejected    0", "new mints in ark:99999/x9"} {
		if !strings.Contains(out, want) {
			t.Errorf("first summary lacks %q:\n%s", want, out)
		}
	}
	first := readMintMap(t, filepath.Join(dir, "pd_collections.csv.mintmap.csv"))
	if len(first) != 933 {
		t.Fatalf("first mint map: %d lines, want 933", len(first))
	}
	if _, err := os.Stat(filepath.Join(dir, "pd_collections.csv.rejects.csv")); !os.IsNotExist(err) {
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
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	var arks, receipts, audits, replayed int64
	if err := conn.QueryRow(t.Context(), `select (select count(*) from ark), (select count(*) from mint_receipt),
		(select count(*) from audit_event where action = 'mint'),
		(select (detail->>'replayed')::bigint from audit_event where action = 'mint' order by id desc limit 1)`).Scan(&arks, &receipts, &audits, &replayed); err != nil {
		t.Fatal(err)
	}
	if arks != 932 || receipts != 932 || audits != 2 || replayed != 932 {
		t.Fatalf("ledger: %d ARKs, %d receipts, %d audit events (last replayed %d)", arks, receipts, audits, replayed)
	}
}

func TestMintCommandRefusalsAndRejects(t *testing.T) {
	t.Parallel()
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

// TestManifestName: the default outputs are named after the first manifest's file name with its
// extensions kept, so manifests that differ only in format get different outputs.
func TestManifestName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"../shared/data/nypl-publicdomain/pd_collections.csv":    "pd_collections.csv",
		"../shared/data/nypl-publicdomain/pd_collections.ndjson": "pd_collections.ndjson",
		"/data/artworks.jsonl.gz":                                "artworks.jsonl.gz",
		"objects.parquet":                                        "objects.parquet",
		"/":                                                      "manifest",
		"-":                                                      "manifest",
	} {
		if got := manifestName(in); got != want {
			t.Errorf("manifestName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestPrintMintSummary checks the summary's wording: the shoulder line names the shoulder of
// new mints (or why there are none), "all N ARKs replayed" only when every row replayed, and a
// stopped run's error is left to stderr.
func TestPrintMintSummary(t *testing.T) {
	t.Parallel()
	target := loader.MintTarget{ClientID: "c1", NAAN: "12345", Shoulder: "/b5"}
	cases := []struct {
		name   string
		rep    loader.MintReport
		err    error
		want   []string
		unwant []string
	}{
		{"all replayed", loader.MintReport{Target: target, MintMap: "m.csv", Summary: pipeline.Summary{Read: 9, Replayed: 9}}, nil,
			[]string{"new mints in ark:12345/b5", "nothing new minted: all 9 ARKs replayed"}, []string{"rejected)"}},
		{"replayed and rejected", loader.MintReport{Target: target, MintMap: "m.csv", Summary: pipeline.Summary{Read: 9, Replayed: 8, Rejected: 1}}, nil,
			[]string{"nothing new minted: 8 replayed, 1 rejected", "done with rejects"}, []string{"all 8"}},
		{"no new mints", loader.MintReport{Target: loader.MintTarget{ClientID: "c1", NAAN: "12345",
			NoNewMints: &loader.ReachError{Rule: "the shoulder is retired"}}, MintMap: "m.csv", Summary: pipeline.Summary{Read: 3, Replayed: 3}}, nil,
			[]string{"no new mints: the shoulder is retired", "all 3 ARKs replayed"}, []string{"new mints in"}},
		{"missing manifest", loader.MintReport{Target: target},
			&pipeline.ManifestError{Loc: textin.Location{File: "gone.csv"}, Op: "open", Err: errors.New("no such file")},
			[]string{"stopped", "fix the input"}, []string{"no such file", "re-run the same command", "nothing new minted"}},
		{"interrupted", loader.MintReport{Target: target, Summary: pipeline.Summary{Read: 5, Minted: 2}}, context.Canceled,
			[]string{"re-run the same command"}, []string{"fix the input"}},
	}
	for _, c := range cases {
		var b bytes.Buffer
		printMintSummary(&b, []string{"m.csv"}, c.rep, c.err)
		for _, w := range c.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: summary lacks %q:\n%s", c.name, w, b.String())
			}
		}
		for _, w := range c.unwant {
			if strings.Contains(b.String(), w) {
				t.Errorf("%s: summary has %q:\n%s", c.name, w, b.String())
			}
		}
	}
}

// TestMintHelpCitesNoInternalDocuments: the help of mint and bench mint states rules, not
// references to documents users do not have.
func TestMintHelpCitesNoInternalDocuments(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"mint", "--help"}, {"bench", "mint", "--help"}} {
		var out, errb bytes.Buffer
		run(t.Context(), append([]string{"arkhe"}, args...), strings.NewReader(""), &out, &errb)
		help := out.String() + errb.String()
		if !strings.Contains(help, "--client") && !strings.Contains(help, "--rows") {
			t.Fatalf("arkhe %s printed no help:\n%s", strings.Join(args, " "), help)
		}
		for _, bad := range []string{"decision", "issue \"", "ark-rules", "data-model", ".md"} {
			if strings.Contains(help, bad) {
				t.Errorf("arkhe %s help cites %q:\n%s", strings.Join(args, " "), bad, help)
			}
		}
		if m := regexp.MustCompile(`issue \d`).FindString(help); m != "" {
			t.Errorf("arkhe %s help cites %q:\n%s", strings.Join(args, " "), m, help)
		}
	}
}

// TestMintMissingManifestErrorOnce: a missing manifest stops the run; the error is printed once
// (on stderr) and the summary says to fix the input.
func TestMintMissingManifestErrorOnce(t *testing.T) {
	url := pgtest.URL(t)
	if code, _, errOut := arkhe(t, url, "", "init", "--test-registration"); code != 0 {
		t.Fatalf("init: %s", errOut)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	gone := filepath.Join(dir, "gone.csv")
	code, out, errOut := arkhe(t, url, "", "mint", "--client", "test-minter", gone)
	if code != 2 {
		t.Fatalf("exit %d, want 2\n%s\n%s", code, out, errOut)
	}
	if n := strings.Count(out+errOut, "gone.csv: open manifest"); n != 1 {
		t.Errorf("the error appears %d times, want once:\nstdout:\n%s\nstderr:\n%s", n, out, errOut)
	}
	if !strings.Contains(out, "fix the input") {
		t.Errorf("summary does not say to fix the input:\n%s", out)
	}
}

// TestMintSeveralDatabaseURLs: --database-url given more than once names further entry nodes
// for mint; a ledger laid out for one node refuses them before reading anything.
func TestMintSeveralDatabaseURLs(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	if code, out, errOut := arkhe(t, url, "", "init", "--test-registration"); code != 0 {
		t.Fatalf("init: exit %d\n%s\n%s", code, out, errOut)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "m.csv")
	if err := os.WriteFile(in, []byte("request_id,url\nr1,https://example.org/1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runArkhe(t, "--database-url", url, "--database-url", url, "mint", "--client", "test-minter", in,
		"--out", filepath.Join(dir, "map.csv"))
	if code != exitCannot || !strings.Contains(errOut, "1 further entry nodes given, but the ledger is laid out for one node: several database URLs need a Citus ledger") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "map.csv")); !os.IsNotExist(err) {
		t.Errorf("a mint map was written: %v", err)
	}
}

// TestRejectsBeside: the default reject file sits beside the mint map, named after it.
func TestRejectsBeside(t *testing.T) {
	t.Parallel()
	for out, want := range map[string]string{
		"objects.csv.mintmap.csv":   "objects.csv.rejects.csv", // the defaults pair up as before
		"maps/teenie.parquet":       "maps/teenie.rejects.csv",
		"/tmp/run 2/Map.JSONL":      "/tmp/run 2/Map.rejects.csv",
		"x.mintmap.parquet":         "x.rejects.csv",
		".csv":                      ".csv.rejects.csv",
		"dir/teenie.rejects.csv":    "dir/teenie.rejects.rejects.csv",
		"artworks.jsonl.gz.map.csv": "artworks.jsonl.gz.map.rejects.csv",
	} {
		if got := rejectsBeside(out); got != want {
			t.Errorf("rejectsBeside(%q) = %q, want %q", out, got, want)
		}
	}
}

// TestMintOutputsBesideOutAndNoStaleTemp: with -o the reject file goes beside the mint map (not
// over ./<manifest>.rejects.csv of another run), and the temporary files a killed mint leaves
// (the mint map's .NAME.tmp-DIGITS, the reject file's PATH.tmp) do not survive the next run of
// the same command, whether it has rejects to write or none.
func TestMintOutputsBesideOutAndNoStaleTemp(t *testing.T) {
	url := pgtest.URL(t)
	if code, _, errOut := arkhe(t, url, "", "init", "--test-registration"); code != 0 {
		t.Fatalf("init: %s", errOut)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	bad := filepath.Join(dir, "objects.csv")
	if _, err := fixtures.CreateManifestCSV(bad, fixtures.ManifestConfig{Rows: 20, Seed: 1, BadEvery: 10}); err != nil {
		t.Fatal(err)
	}
	clean := filepath.Join(dir, "clean.csv")
	if err := os.WriteFile(clean, []byte("request_id,url\nclean-1,https://example.org/1\nclean-2,https://example.org/2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	maps := filepath.Join(dir, "maps")
	if err := os.Mkdir(maps, 0o755); err != nil {
		t.Fatal(err)
	}
	// what a mint killed mid-run leaves (as `kill -9` of a real run left them)
	for name, body := range map[string]string{
		".teenie.parquet.tmp-2174837660": "",
		"teenie.rejects.csv.tmp":         "file,line,record,request_id,field,reason\nobjects.csv,3,2,obj-2,who,cut off",
		".clean.csv.tmp-977":             "request_id,ark,status\n",
		"clean.rejects.csv.tmp":          "file,line,record,request_id,field,reason\n",
	} {
		if err := os.WriteFile(filepath.Join(maps, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := arkhe(t, url, "", "mint", "--client", "test-minter", "-o", filepath.Join("maps", "teenie.parquet"), bad)
	if code != 1 || !strings.Contains(out, "rejects     maps/teenie.rejects.csv") {
		t.Fatalf("mint with rejects: exit %d\n%s\n%s", code, out, errOut)
	}
	if rej := readMintMap(t, filepath.Join(maps, "teenie.rejects.csv")); len(rej) != 3 || rej[1][1] != "11" || rej[2][1] != "21" {
		t.Errorf("reject file beside the map: %q", rej)
	}
	if _, err := os.Stat("objects.csv.rejects.csv"); !os.IsNotExist(err) {
		t.Errorf("the rejects went to ./objects.csv.rejects.csv, not beside -o: %v", err)
	}
	code, out, errOut = arkhe(t, url, "", "mint", "--client", "test-minter", "-o", filepath.Join("maps", "clean.csv"), clean)
	if code != 0 {
		t.Fatalf("clean mint: exit %d\n%s\n%s", code, out, errOut)
	}
	var names []string
	entries, err := os.ReadDir(maps)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if got, want := strings.Join(names, " "), "clean.csv teenie.parquet teenie.rejects.csv"; got != want {
		t.Errorf("maps/ holds %s, want %s (no temporary file of a killed run survives)", got, want)
	}
	// --rejects and -o naming one file is refused before anything is written
	code, _, errOut = arkhe(t, url, "", "mint", "--client", "test-minter", "-o", "same.csv", "--rejects", "./same.csv", clean)
	if code != 2 || !strings.Contains(errOut, "is the mint map's path too") {
		t.Errorf("one path for both: exit %d %s", code, errOut)
	}
}
