package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
)

// importNoInternalKey fails when an output shows an internal key (pgtest starts every sequence at
// 7,000,000,000,001).
func importNoInternalKey(t *testing.T, what, s string) {
	t.Helper()
	if strings.Contains(s, "7000000000") || strings.Contains(s, "7,000,000,000") {
		t.Errorf("%s shows an internal key:\n%s", what, s)
	}
}

// TestImportCommandRealFiles runs the migration example of docs/import.md on the real files: the
// NAAN registry, the EZID records, the N2T dump (which has no end marker: exit 1).
func TestImportCommandRealFiles(t *testing.T) {
	data := fixtures.SharedData(t)
	url := pgtest.URL(t)
	t.Chdir(t.TempDir())

	code, out, errOut := arkhe(t, url, "", "import", filepath.Join(data, "jkunze-naan", "naan_registry.txt"),
		filepath.Join(data, "naan_reg_public", "naan_records.json"))
	if code != 1 { // the 2024 registry differs from the 2020 one for some NAANs: reported, left alone
		t.Fatalf("registry: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"registry     2,015 NAAN and 368 shoulder records", "created      1,434 NAANs, 368 shoulders", "rejects      naan_registry.rejects.csv"} {
		if !strings.Contains(out, want) {
			t.Errorf("registry summary lacks %q:\n%s", want, out)
		}
	}
	importNoInternalKey(t, "registry summary", out)

	// EZID's link-check results before its identifiers: named for what they are, exit 1 with the
	// reject file, and the command to run first
	links := filepath.Join(data, "ezid", "db.linkchecker.jsonl")
	code, out, errOut = arkhe(t, url, "", "import", links)
	for _, want := range []string{"link state   2,129 link-check results of a legacy link checker: 0 kept",
		"1,550 whose ARK is not in the ledger: not kept, listed in the reject file; import the identifiers first " +
			"(EZID's identifier export, e.g. `arkhe import db.identifier.jsonl`), then this file again",
		"rejected     0 bad records", "rejects      db.linkchecker.rejects.csv (1,550 rows)"} {
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("link-check results first: exit %d, summary lacks %q:\n%s\n%s", code, want, out, errOut)
		}
	}
	if strings.Contains(out, "credentials") {
		t.Errorf("link-check results called credentials:\n%s", out)
	}
	// read as identifiers, they are refused as what they are, naming the format that imports them
	code, out, errOut = arkhe(t, url, "", "import", "--dry-run", "--input-format", "ezid-db", links)
	for _, want := range []string{"refused      2,129 of model ezidapp.linkchecker: link-check results, not imported",
		"`arkhe import --input-format ezid-linkcheck FILE` keeps them as the ARKs' link state", "(2,129 rows)"} {
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("link-check results as identifiers: exit %d, summary lacks %q:\n%s\n%s", code, want, out, errOut)
		}
	}

	code, out, errOut = arkhe(t, url, "", "import", filepath.Join(data, "ezid", "db.identifier.jsonl"))
	if code != 0 {
		t.Fatalf("EZID: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"arkhe import: done\n", "read         2,724 records", "imported     2,611 ARKs", "skipped      31 non-ARK (doi 31)",
		"81 reserved (--include-reserved imports them), 1 test NAAN 99999", "rejected     0 bad records"} {
		if !strings.Contains(out, want) {
			t.Errorf("EZID summary lacks %q:\n%s", want, out)
		}
	}
	importNoInternalKey(t, "EZID summary", out)
	if _, err := os.Stat("db.identifier.rejects.csv"); !os.IsNotExist(err) {
		t.Errorf("a reject file after a clean import: %v", err)
	}
	// again: a no-op
	code, out, _ = arkhe(t, url, "", "import", filepath.Join(data, "ezid", "db.identifier.jsonl"))
	if code != 0 || !strings.Contains(out, "imported     0 ARKs") || !strings.Contains(out, "unchanged    2,611") {
		t.Errorf("re-import: exit %d\n%s", code, out)
	}

	// then the link-check results land, and nothing is left for a reject file
	code, out, errOut = arkhe(t, url, "", "import", links)
	if code != 0 || !strings.Contains(out, "1,550 kept as link state (10 broken)") || strings.Contains(out, "rejects ") {
		t.Errorf("link-check results after the identifiers: exit %d\n%s\n%s", code, out, errOut)
	}

	code, out, errOut = arkhe(t, url, "", "import", filepath.Join(data, "arklet", "sample_noid_output.txt"))
	if code != 1 {
		t.Fatalf("N2T sample: exit %d (want 1: truncated)\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"(n2t-dump, sha256:", "imported     8 ARKs", "sample_noid_output.txt:98 (record 8): truncated", "done with findings"} {
		if !strings.Contains(out, want) {
			t.Errorf("N2T summary lacks %q:\n%s", want, out)
		}
	}
}

// TestImportCommandArkletAndReconcile: an arklet dump with its edge cases imports with rejects
// (exit 1, the credential records refused by name); --dry-run writes nothing; a changed export
// is reported by import and reconcile and applied only by reconcile --apply.
func TestImportCommandArkletAndReconcile(t *testing.T) {
	url := pgtest.URL(t)
	dir := t.TempDir()
	t.Chdir(dir)
	var b bytes.Buffer
	if err := fixtures.ArkletJSON(&b, 100, 11); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("dump.json", b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := arkhe(t, url, "", "import", "--dry-run", "dump.json")
	if code != 1 || !strings.Contains(out, "dry run: nothing was written") || !strings.Contains(out, "imported     94 ARKs") {
		t.Fatalf("dry run: exit %d\n%s\n%s", code, out, errOut)
	}
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	var n int64
	if err := conn.QueryRow(t.Context(), `select (select count(*) from ark) + (select count(*) from import_run)`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("dry run wrote %d rows (%v)", n, err)
	}
	code, out, errOut = arkhe(t, url, "", "import", "dump.json", "--rejects", "bad.csv")
	if code != 1 {
		t.Fatalf("import: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"imported     94 ARKs", "rejected     5 bad records",
		"refused      1 of model ark.user: credentials (password hashes or API tokens), never imported",
		"             1 of model ark.key: credentials (password hashes or API tokens), never imported",
		"1 test NAAN 99999", "created      2 NAANs, 2 shoulders", "rejects      bad.csv"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	rej, err := os.ReadFile("bad.csv")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rej), "the limit is 255") || strings.Contains(string(rej), "argon2") {
		t.Errorf("reject file:\n%s", rej)
	}
	importNoInternalKey(t, "reject file", string(rej))

	// a changed export: one target differs
	changed := ":: ark:/54321/x6aa1\n_target: https://e.org/new\n\n"
	base := ":: ark:/54321/x6aa1\n_target: https://e.org/old\n\n"
	if err := os.WriteFile("base.anvl", []byte(base), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("changed.anvl", []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := arkhe(t, url, "", "import", "base.anvl"); code != 0 {
		t.Fatalf("base: exit %d\n%s", code, out)
	}
	code, out, _ = arkhe(t, url, "", "import", "changed.anvl")
	if code != 1 || !strings.Contains(out, "differences  1") {
		t.Errorf("changed: exit %d\n%s", code, out)
	}
	code, out, errOut = arkhe(t, url, "", "reconcile", "changed.anvl", "--format", "csv")
	if code != 1 || !strings.Contains(out, "target_differs   1") || !strings.Contains(out, "report           changed.diff.csv") ||
		!strings.Contains(out, "nothing applied") {
		t.Errorf("reconcile: exit %d\n%s\n%s", code, out, errOut)
	}
	importNoInternalKey(t, "reconcile summary", out)
	diff, err := os.ReadFile("changed.diff.csv")
	if err != nil || !strings.Contains(string(diff), "target_differs,ark:54321/x6aa1,target,https://e.org/new,https://e.org/old,changed.anvl:1") {
		t.Errorf("report %s: %v", diff, err)
	}
	code, out, errOut = arkhe(t, url, "", "reconcile", "--apply", "changed.anvl")
	if code != 1 || !strings.Contains(out, "applied          1 repointed, 0 status/metadata changes") {
		t.Errorf("apply: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat("changed.diff.parquet"); err != nil {
		t.Errorf("default Parquet report: %v", err)
	}
	code, out, _ = arkhe(t, url, "", "reconcile", "--apply", "changed.anvl", "-o", "again.jsonl")
	if code != 0 || !strings.Contains(out, "no differences") || !strings.Contains(out, "applied          0 repointed, 0") {
		t.Errorf("second apply: exit %d\n%s", code, out)
	}
	if err := conn.QueryRow(t.Context(), `select count(*) from ark_change where by_text like 'arkhe reconcile --apply sha256:% changed.anvl'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("%d ARK_CHANGE rows after two applies, want 1 (%v)", n, err)
	}
	if code, out, _ = arkhe(t, url, "", "import", "--input-format", "nope", "x"); code != 2 {
		t.Errorf("bad format: exit %d\n%s", code, out)
	}
	if code, out, _ = arkhe(t, url, "", "reconcile"); code != 2 {
		t.Errorf("no export: exit %d\n%s", code, out)
	}

	// reserved and test ARKs: a default import leaves them out, so a default reconcile does too
	mixed := ":: ark:/54321/x7aa2\n_target: https://e.org/2\n\n" +
		":: ark:/54321/x7aa3\n_status: reserved\n_target: https://e.org/3\n\n" +
		":: ark:/99999/fk4aa4\n_target: https://e.org/4\n\n"
	if err := os.WriteFile("mixed.anvl", []byte(mixed), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := arkhe(t, url, "", "import", "mixed.anvl"); code != 0 {
		t.Fatalf("import mixed: exit %d\n%s", code, out)
	}
	code, out, errOut = arkhe(t, url, "", "reconcile", "mixed.anvl", "-o", "mixed.csv")
	for _, want := range []string{"no differences", "1 reserved (--include-reserved reports them), 1 test NAAN 99999",
		"only_in_ledger covers the 1 shoulder the exports touch", "(0 rows)", "3 records, 1 ARK compared"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("default reconcile lacks %q: exit %d\n%s\n%s", want, code, out, errOut)
		}
	}
	code, out, errOut = arkhe(t, url, "", "reconcile", "mixed.anvl", "-o", "mixed.csv", "--include-reserved", "--include-test")
	if code != 1 || !strings.Contains(out, "only_in_export   2") || !strings.Contains(out, "(2 rows)") {
		t.Errorf("reconcile --include-*: exit %d\n%s\n%s", code, out, errOut)
	}
	if b, err := os.ReadFile("mixed.csv"); err != nil || !strings.Contains(string(b), "only_in_export,ark:54321/x7aa3,target,https://e.org/3,,") ||
		!strings.Contains(string(b), ",reserved in the export (arkhe import leaves it out without --include-reserved)") {
		t.Errorf("only_in_export rows do not say why: %v\n%s", err, b)
	}

	// a dump whose only record that does not land is a refused API key: the reject file lists
	// it, so the import exits 1 (done with rejects), not 0
	keyOnly := `[
{"model": "ark.naan", "pk": 54321, "fields": {"name": "Example", "description": "", "url": "https://x.example"}},
{"model": "ark.shoulder", "pk": 1, "fields": {"shoulder": "/x8", "naan": 54321, "name": "", "description": ""}},
{"model": "ark.key", "pk": "8e1c1b5a-9a0b-4c7e-9a53-0f1e2d3c4b5a", "fields": {"naan": 54321, "active": true}},
{"model": "ark.ark", "pk": "54321/x8bb1", "fields": {"naan": 54321, "shoulder": "/x8", "assigned_name": "bb1", "url": "https://e.org/b"}}
]`
	if err := os.WriteFile("keyonly.json", []byte(keyOnly), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = arkhe(t, url, "", "import", "keyonly.json")
	for _, want := range []string{"imported     1 ARK\n", "rejected     0 bad records",
		"refused      1 of model ark.key: credentials (password hashes or API tokens), never imported",
		"rejects      keyonly.rejects.csv (1 row)"} {
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("refused key only: exit %d (want 1), summary lacks %q:\n%s\n%s", code, want, out, errOut)
		}
	}
}
