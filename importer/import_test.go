package importer_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/importer"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/legacy"
	"github.com/arkhe-ledger/arkhe/report"
)

// impLedger returns a ledger on a fresh test database.
func impLedger(t *testing.T) (*ledger.Ledger, *pgxpool.Pool) {
	t.Helper()
	pool := pgtest.New(t)
	return &ledger.Ledger{Pool: pool}, pool
}

// impWriteFixture writes gen's output for n records to a file in dir.
func impWriteFixture(t *testing.T, dir, name string, gen func(w *bytes.Buffer) error) string {
	t.Helper()
	var b bytes.Buffer
	if err := gen(&b); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func impWriteText(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func impRun(t *testing.T, l *ledger.Ledger, cfg importer.Config) importer.Report {
	t.Helper()
	rep, err := importer.Run(context.Background(), l, cfg)
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	return rep
}

// impRejectLines reads a reject file into records keyed by nothing: the rows after the header.
func impRejectLines(t *testing.T, path string) [][]string {
	t.Helper()
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 || strings.Join(rows[0], ",") != strings.Join(importer.RejectHeader(), ",") {
		t.Fatalf("reject file header %v", rows[:1])
	}
	return rows[1:]
}

func impKinds(lines [][]string) map[string]int {
	m := map[string]int{}
	for _, l := range lines {
		m[l[5]]++
	}
	return m
}

func impScalar[T any](t *testing.T, pool *pgxpool.Pool, sql string, args ...any) T {
	t.Helper()
	var v T
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&v); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return v
}

func TestImportArkletJSONFixture(t *testing.T) {
	t.Parallel()
	l, pool := impLedger(t)
	dir := t.TempDir()
	const n = 300
	in := impWriteFixture(t, dir, "arklet.json", func(b *bytes.Buffer) error { return fixtures.ArkletJSON(b, n, 7) })
	rejects := filepath.Join(dir, "rejects.csv")
	rep := impRun(t, l, importer.Config{Inputs: []string{in}, RejectsPath: rejects, BatchSize: 64})
	c := rep.Total
	t.Logf("%+v", c)
	// per 100 records: 10 naan-form, 11 long-name, 12 and 13 duplicates of the long name are
	// rejected, 22 is not UTF-8 (the reader's reject), 21 is a test ARK
	if c.Imported != 3*94 || c.Rejected != 3*5 || c.TestSkipped != 3 || c.Refused != fixtures.ArkletJSONRefused ||
		c.NAANRecords != 2 || c.ShoulderRecords != 2 || c.Read != int64(n+6) || c.Unchanged != 0 || c.Differences != 0 {
		t.Errorf("counts %+v", c)
	}
	if c.NAANsCreated != 2 || c.ShouldersCreated != 2 { // 12345, 99999; /x6, /fk4 from the dump
		t.Errorf("created %d NAANs, %d shoulders; want 2 and 2", c.NAANsCreated, c.ShouldersCreated)
	}
	if got := impScalar[int64](t, pool, `select count(*) from ark`); got != c.Imported {
		t.Errorf("%d ARKs in the ledger, report says %d", got, c.Imported)
	}
	lines := impRejectLines(t, rep.Rejects)
	if k := impKinds(lines); k[importer.KindRejected] != 15 || k[importer.KindRefused] != 2 || len(k) != 2 {
		t.Errorf("reject impKinds %v", k)
	}
	var long, naanForm bool
	for _, l := range lines {
		if l[6] == "id" && strings.Contains(l[7], "the limit is 255") {
			long = true
		}
		if l[6] == "naan" && strings.Contains(l[7], "int()") && strings.HasPrefix(l[3], "012345/") {
			naanForm = true
		}
	}
	if !long || !naanForm {
		t.Errorf("long-name (%v) or NAAN-form (%v) reject missing: %v", long, naanForm, lines)
	}
	// check verdicts: /x6 comes from the arklet dump, so its zone is naan_name
	// failures: upper case, %-escape and the 20-character blade without check character
	if c.CheckFailed != 9 || c.CheckVerified+c.CheckFailed != c.Imported || c.CheckNone != 0 {
		t.Errorf("verdicts %d+%d+%d for %d imported", c.CheckVerified, c.CheckFailed, c.CheckNone, c.Imported)
	}
	// edge cases as stored
	type arkRow struct {
		original *string
		url      *string
		created  bool
		checkOK  *bool
		meta     *string
	}
	get := func(where string, args ...any) arkRow {
		t.Helper()
		var r arkRow
		if err := pool.QueryRow(t.Context(), `select original, url, created_at is not null, check_ok, metadata::text from ark where `+where, args...).
			Scan(&r.original, &r.url, &r.created, &r.checkOK, &r.meta); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		return r
	}
	if r := get(`assigned_name like '%/page/2'`); r.original != nil || r.checkOK == nil || !*r.checkOK {
		t.Errorf("qualifier ARK: original %v check %v (check zone is the base name)", r.original, r.checkOK)
	}
	if r := get(`original like '%-%' and original not like '%‐%' order by seq limit 1`); r.checkOK == nil || !*r.checkOK {
		t.Errorf("hyphenated ARK: check %v", r.checkOK)
	}
	if r := get(`original like '%‐%' order by seq limit 1`); r.checkOK == nil || !*r.checkOK {
		t.Errorf("U+2010 ARK: check %v", r.checkOK)
	}
	if r := get(`assigned_name like '%\%7D%' order by seq limit 1`); r.original == nil || !strings.Contains(*r.original, "%7d") {
		t.Errorf("%%-escape ARK: original %v", r.original)
	}
	if got := impScalar[int64](t, pool, `select count(*) from ark where url is null`); got != 3 {
		t.Errorf("%d ARKs without target, want 3 (no-target)", got)
	}
	if got := impScalar[int64](t, pool, `select count(*) from ark where created_at is null`); got != 3 {
		t.Errorf("%d ARKs without creation time, want 3 (no-time)", got)
	}
	if got := impScalar[int64](t, pool, `select count(*) from ark where assigned_name ~ '^x6[0-9A-Z]+$' and assigned_name ~ '[A-Z]'`); got != 3 {
		t.Errorf("%d upper-case ARKs kept in upper case, want 3", got)
	}
	if got := impScalar[int64](t, pool, `select count(*) from ark where metadata->>'arklet.metadata' = '{''title'': ''Untitled''}'`); got != 3 {
		t.Errorf("%d Python-repr metadata kept, want 3", got)
	}
	if got := impScalar[int64](t, pool, `select count(*) from ark where import_run_id is null`); got != 0 {
		t.Errorf("%d ARKs without import run", got)
	}
	runs := impScalar[int64](t, pool, `select count(*) from import_run where digest like 'sha256:%' and finished_at is not null and (counts->>'imported')::int = $1`, c.Imported)
	if runs != 1 {
		t.Errorf("%d finished import runs with the counts, want 1", runs)
	}
	// provenance: the file by absolute path; finished when it finished, not when it started
	runs = impScalar[int64](t, pool, `select count(*) from import_run where source_file = $1 and finished_at > started_at`, in)
	if runs != 1 || !filepath.IsAbs(in) {
		t.Errorf("%d import runs of %s finished after they started, want 1", runs, in)
	}

	// re-import: a no-op
	before := impScalar[int64](t, pool, `select count(*) from ark`)
	rep2 := impRun(t, l, importer.Config{Inputs: []string{in}, RejectsPath: rejects, BatchSize: 64})
	c2 := rep2.Total
	if c2.Imported != 0 || c2.Unchanged != c.Imported || c2.Differences != 0 || c2.Rejected != c.Rejected || c2.ShouldersCreated != 0 || c2.NAANsCreated != 0 || c2.RegistryUnchanged != 4 {
		t.Errorf("re-import counts %+v", c2)
	}
	if after := impScalar[int64](t, pool, `select count(*) from ark`); after != before {
		t.Errorf("re-import changed the ledger: %d → %d ARKs", before, after)
	}
	if got := impScalar[int64](t, pool, `select count(*) from ark_change`); got != 0 {
		t.Errorf("%d ARK_CHANGE rows after import", got)
	}
	_ = ark.ZoneNone
	_ = legacy.ArkletJSON
}

// TestImportRealFiles imports the real registry, shoulder lists, EZID records and the N2T sample
// in the order a migration would, and checks what each brought.
func TestImportRealFiles(t *testing.T) {
	t.Parallel()
	l, pool := impLedger(t)
	d := fixtures.SharedData(t)
	dir := t.TempDir()
	imp := func(f string, cfg importer.Config) importer.Counts {
		t.Helper()
		cfg.Inputs = []string{filepath.Join(d, f)}
		cfg.RejectsPath = filepath.Join(dir, "r.csv")
		rep, err := importer.Run(t.Context(), l, cfg)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if f != "arklet/sample_noid_output.txt" && rep.Truncated() {
			t.Errorf("%s: truncated", f)
		}
		return rep.Total
	}
	// the NAAN registry, legacy ANVL then the 2024 JSON with shoulder records
	c := imp("jkunze-naan/naan_registry.txt", importer.Config{})
	if c.NAANRecords != 583 || c.NAANsCreated != 583 || c.Rejected != 0 {
		t.Errorf("naan_registry.txt: %+v", c)
	}
	if got := impScalar[string](t, pool, `select name || ' | ' || who || ' | ' || erc_where || ' | ' || na_policy || ' | ' || to_char(registered_at, 'YYYY-MM-DD') from naan where naan = '12025'`); got != "US National Library of Medicine | US National Library of Medicine (=) USNLM | http://www.nlm.nih.gov | NP | (:unkn) unknown | 2001 |  | 2001-03-08" {
		t.Errorf("NAAN 12025: %q", got)
	}
	c = imp("naan_reg_public/naan_records.json", importer.Config{})
	if c.NAANRecords != 1432 || c.ShoulderRecords != 368 || c.NAANsCreated+c.RegistryFilled+c.RegistryUnchanged+c.RegistryDifferences != 1432+368-c.ShouldersCreated ||
		c.ShouldersCreated != 368 || c.Rejected != 0 {
		t.Errorf("naan_records.json: %+v", c)
	}
	t.Logf("naan_records.json: %d NAANs created, %d filled, %d unchanged, %d differ", c.NAANsCreated, c.RegistryFilled, c.RegistryUnchanged, c.RegistryDifferences)
	if got := impScalar[int64](t, pool, `select count(*) from naan`); got != 583+c.NAANsCreated {
		t.Errorf("%d NAANs", got)
	}
	if got := impScalar[string](t, pool, `select redirect from naan where naan = 'b5060'`); got != "https://doi.org/10.5060/${value}" {
		t.Errorf("b5060 redirect %q", got)
	}
	// shoulder lists; a shoulder already registered is compared, never changed
	for _, f := range []string{"ezid/ezidapp_shoulder.csv", "legacy-samples/n2t_master_shoulders.anvl.txt", "ezid/db.shoulder.jsonl", "naan_reg_public/shoulder-list.txt"} {
		c := imp(f, importer.Config{})
		t.Logf("%s: %d records, %d created, %d filled, %d unchanged, %d differ, skipped %v", f, c.ShoulderRecords, c.ShouldersCreated,
			c.RegistryFilled, c.RegistryUnchanged, c.RegistryDifferences, c.SkippedNonARK)
		if c.Rejected != 0 || c.ShoulderRecords == 0 {
			t.Errorf("%s: %+v", f, c)
		}
	}
	if got := impScalar[int64](t, pool, `select count(*) from shoulder where status <> 'reserved'`); got != 0 {
		t.Errorf("%d imported shoulders are not reserved", got)
	}
	if got := impScalar[int64](t, pool, `select count(*) from shoulder where naan = '87286' and shoulder = '/'`); got != 1 {
		t.Error("the NAAN-wide shoulder ark:/87286/ was not imported as /")
	}
	shoulders := impScalar[int64](t, pool, `select count(*) from shoulder`)

	// EZID identifiers: DOIs skipped, reserved and test ARKs only on request, tombstones kept
	c = imp("ezid/db.identifier.jsonl", importer.Config{})
	if c.Read != 2724 || c.SkippedNonARK["doi"] != 31 || c.ReservedSkipped != 81 || c.TestSkipped != 1 ||
		c.Imported != 2693-81-1 || c.Rejected != 0 || c.CheckVerified+c.CheckFailed+c.CheckNone != c.Imported {
		t.Errorf("db.identifier.jsonl: %+v", c)
	}
	t.Logf("db.identifier.jsonl: imported %d, shoulders created %d, check verified %d failed %d none %d", c.Imported, c.ShouldersCreated, c.CheckVerified, c.CheckFailed, c.CheckNone)
	if got := impScalar[int64](t, pool, `select count(*) from ark where status = 'unavailable'`); got != 175 {
		t.Errorf("%d tombstoned ARKs, want 175", got)
	}
	// a public ARK stores its status as NULL, as a minted one does
	if got := impScalar[string](t, pool, `select count(*) filter (where a.status is null) || ' ' || count(*) filter (where a.status = 'public')
		from ark a join import_run r on r.id = a.import_run_id where r.source_file like '%/db.identifier.jsonl'`); got != "2436 0" {
		t.Errorf("EZID's 2,436 public ARKs: %s stored as NULL and as 'public', want 2436 0", got)
	}
	if got := impScalar[int64](t, pool, `select count(*) from ark where status = 'unavailable' and tombstone_reason is not null and tombstoned_at is null`); got != 173 {
		t.Errorf("%d tombstones with their reason and no invented time, want 173", got)
	}
	if got := impScalar[string](t, pool, `select url from ark where ark = '13030/k6jq14d1'`); got != "http://merritt.cdlib.org/m/ark%3A%2F13030%2Fk6jq14d1" {
		t.Errorf("tombstoned ARK keeps its real target: %q", got)
	}
	if got := impScalar[string](t, pool, `select s.shoulder || ' ' || a.assigned_name from ark a join shoulder s on s.id = a.shoulder_id where a.ark = '87602/m4/M3174'`); got != "/m4 m4/M3174" {
		t.Errorf("qualifier ARK: %q", got)
	}
	if got := impScalar[string](t, pool, `select to_char(created_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS') from ark where ark = '13030/c8251g4t'`); got != "2011-04-06 23:57:50" {
		t.Errorf("created_at as given: %q", got)
	}
	if got := impScalar[int64](t, pool, `select count(*) from shoulder`) - shoulders; got != c.ShouldersCreated {
		t.Errorf("%d shoulders added, report says %d", got, c.ShouldersCreated)
	}
	// reserved ones on request; the rest is unchanged
	c = imp("ezid/db.identifier.jsonl", importer.Config{IncludeReserved: true})
	if c.Imported != 81 || c.Unchanged != 2611 || c.ReservedSkipped != 0 {
		t.Errorf("with --include-reserved: %+v", c)
	}
	// the N2T sample: 8 ARKs, no end marker
	n2tRejects := filepath.Join(t.TempDir(), "n2t.rejects.csv")
	rep, err := importer.Run(t.Context(), l, importer.Config{Inputs: []string{filepath.Join(d, "arklet/sample_noid_output.txt")}, RejectsPath: n2tRejects})
	if err != nil {
		t.Fatal(err)
	}
	f := rep.Files[0]
	if f.Counts.Imported != 8 || f.Truncated == nil || f.Truncated.Loc.Line != 98 || f.Format != legacy.N2TDump {
		t.Errorf("N2T sample: %+v truncated %v", f.Counts, f.Truncated)
	}
	// the truncation is on file too: one line, where the file ends, naming the last identifier
	if lines := impRejectLines(t, rep.Rejects); len(lines) != 1 || lines[0][5] != importer.KindTruncated ||
		lines[0][1] != "98" || lines[0][2] != "8" || lines[0][6] != "file" || !strings.Contains(lines[0][7], "ark:/13960/t00000075 (record 8)") {
		t.Errorf("N2T sample reject lines %q", lines)
	}
	if got := impScalar[int64](t, pool, `select count(*) from ark where naan = '13960' and created_at is not null and updated_at is null`); got != 8 {
		t.Errorf("%d N2T ARKs with creation time and no update time, want 8", got)
	}
	// every run recorded
	if got := impScalar[int64](t, pool, `select count(*) from import_run where finished_at is not null and digest ~ '^sha256:[0-9a-f]{64}$'`); got != 9 {
		t.Errorf("%d import runs recorded, want 9", got)
	}
}

// TestImportFixtureFormats imports every generated export format with its edge cases, plain and
// with a BOM and CRLF line ends.
func TestImportFixtureFormats(t *testing.T) {
	t.Parallel()
	const n = 200
	type gen func(w *bytes.Buffer) error
	cases := []struct {
		name   string
		format legacy.Format
		gen    gen
		// per 100 records
		imported, rejected, reserved int64
	}{
		// N2T: 11-13 (long name and its two duplicates) and 22 (Latin-1) rejected, 21 test
		{"n2t.dump", legacy.N2TDump, func(b *bytes.Buffer) error { return fixtures.N2TDump(b, n, 3) }, 95, 4, 0},
		// EZID: 16 is reserved as well
		{"ezid.anvl", legacy.EZIDANVL, func(b *bytes.Buffer) error { return fixtures.EZIDANVL(b, n, 3) }, 94, 4, 1},
		{"ezid.csv", legacy.EZIDCSV, func(b *bytes.Buffer) error { return fixtures.EZIDCSV(b, n, 3) }, 94, 4, 1},
		// arklet: 10 (NAAN 012345 vs naan_id 12345) rejected too
		{"arklet.csv", legacy.ArkletCSV, func(b *bytes.Buffer) error { return fixtures.ArkletCSV(b, n, 3) }, 94, 5, 0},
	}
	for _, tc := range cases {
		for _, variant := range []string{"plain", "bom-crlf"} {
			t.Run(tc.name+"/"+variant, func(t *testing.T) {
				l, pool := impLedger(t)
				dir := t.TempDir()
				in := impWriteFixture(t, dir, tc.name, func(b *bytes.Buffer) error {
					if variant == "plain" {
						return tc.gen(b)
					}
					b.WriteString(fixtures.BOM)
					var raw bytes.Buffer
					if err := tc.gen(&raw); err != nil {
						return err
					}
					_, err := fixtures.CRLFWriter(b).Write(raw.Bytes())
					return err
				})
				rep := impRun(t, l, importer.Config{Inputs: []string{in}, RejectsPath: filepath.Join(dir, "r.csv"), BatchSize: 50})
				c := rep.Total
				if f := rep.Files[0].Format; f != tc.format {
					t.Errorf("detected %s, want %s", f, tc.format)
				}
				if c.Imported != 2*tc.imported || c.Rejected != 2*tc.rejected || c.ReservedSkipped != 2*tc.reserved || c.TestSkipped != 2 ||
					c.Conflicts != 0 || rep.Truncated() {
					t.Errorf("counts %+v", c)
				}
				if got := impScalar[int64](t, pool, `select count(*) from ark`); got != c.Imported {
					t.Errorf("%d ARKs, report %d", got, c.Imported)
				}
				// each long name is refused naming the limit
				lines := impRejectLines(t, rep.Rejects)
				long := 0
				for _, l := range lines {
					if strings.Contains(l[7], "the limit is 255 (draft-kunze-ark §3.1)") {
						long++
					}
				}
				if long != 6 {
					t.Errorf("%d long-name rejects, want 6: %v", long, lines)
				}
				if tc.format == legacy.N2TDump || tc.format == legacy.EZIDANVL || tc.format == legacy.EZIDCSV {
					// b5060 (letter NAAN) lands under a NAAN and shoulder created for it
					if got := impScalar[int64](t, pool, `select count(*) from ark a join shoulder s on s.id = a.shoulder_id where a.naan = 'b5060' and s.shoulder = '/x6' and s.check_zone = 'none'`); got != 2 {
						t.Errorf("%d ARKs of NAAN b5060, want 2", got)
					}
					if got := impScalar[int64](t, pool, `select count(*) from ark where status = 'unavailable' and tombstone_reason = 'withdrawn by depositor' and url like 'https://collections.example.org/objects/%'`); got != 2 {
						t.Errorf("%d tombstones with reason and real target, want 2", got)
					}
				}
				if tc.format == legacy.N2TDump {
					if got := impScalar[int64](t, pool, `select count(*) from ark where metadata->>'redirect_code' = '303' and url not like '303 %'`); got != 2 {
						t.Errorf("%d redirect codes kept apart from the target, want 2", got)
					}
				}
				// labels and NMA are not a spelling difference; hyphens, %-case, trailing slash are
				if got := impScalar[int64](t, pool, `select count(*) from ark where original is not null`); got < 2*4 {
					t.Errorf("%d originals kept", got)
				}
				if got := impScalar[int64](t, pool, `select count(*) from ark where original ~* '^(ark:|https://n2t)' and original !~ '[-‐%]|/$'`); got != 0 {
					t.Errorf("%d label-only differences kept as original spellings", got)
				}
			})
		}
	}
}

// TestImportDuplicates: identical rows for one ARK collapse; differing ones are a conflict and
// neither lands, also when the rows are in different batches (the file is then read twice).
func TestImportDuplicates(t *testing.T) {
	t.Parallel()
	l, pool := impLedger(t)
	dir := t.TempDir()
	rec := func(id, target string) string {
		return ":: " + id + "\n_status: public\n_target: " + target + "\n\n"
	}
	text := rec("ark:/12345/x6aa1", "https://e.org/a") + // 1: A
		rec("ark:12345/x6-aa1", "https://e.org/a") + // 2: A again, identical: collapsed
		rec("ark:/12345/x6bb1", "https://e.org/b1") + // 3: B
		rec("ark:/12345/x6bb1", "https://e.org/b2") + // 4: B, other target: conflict (same batch)
		rec("ark:/12345/x6cc1", "https://e.org/c1") + // 5: C
		rec("ark:/12345/x6dd1", "https://e.org/d") + // 6
		rec("ark:/12345/x6ee1", "https://e.org/e") + // 7
		rec("ark:/12345/x6cc1", "https://e.org/c2") + // 8: C, other target, two batches later
		rec("ark:/12345/x6ff1", "https://e.org/f") + // 9
		// after the first conflict across batches the pass only detects: G is never inserted
		rec("ark:/12345/x6gg1", "https://e.org/g1") + // 10
		rec("ark:/12345/x6hh1", "https://e.org/h") + // 11
		rec("ark:/12345/x6ii1", "https://e.org/i") + // 12
		rec("ark:/12345/x6gg1", "https://e.org/g2") + // 13: G, other target
		rec("ark:/12345/x6jj1", "https://e.org/j") // 14
	in := impWriteText(t, dir, "dups.anvl", text)
	rep := impRun(t, l, importer.Config{Inputs: []string{in}, RejectsPath: filepath.Join(dir, "r.csv"), BatchSize: 3})
	c := rep.Total
	if c.Imported != 7 || c.Collapsed != 1 || c.Conflicts != 6 || c.ConflictARKs != 3 || rep.Files[0].Passes != 2 {
		t.Errorf("counts %+v passes %d", c, rep.Files[0].Passes)
	}
	for _, k := range []string{"12345/x6bb1", "12345/x6cc1", "12345/x6gg1"} {
		if got := impScalar[int64](t, pool, `select count(*) from ark where ark = $1`, k); got != 0 {
			t.Errorf("conflicting ARK %s landed", k)
		}
	}
	if got := impScalar[int64](t, pool, `select count(*) from ark`); got != 7 {
		t.Errorf("%d ARKs, want 7 (aa1, dd1, ee1, ff1, hh1, ii1, jj1)", got)
	}
	lines := impRejectLines(t, rep.Rejects)
	var conflictLines []string
	for _, l := range lines {
		if l[5] == importer.KindConflict {
			conflictLines = append(conflictLines, l[1]+" "+l[4])
		}
	}
	if got := strings.Join(conflictLines, ", "); got != "9 ark:12345/x6bb1, 13 ark:12345/x6bb1, 17 ark:12345/x6cc1, 29 ark:12345/x6cc1, 37 ark:12345/x6gg1, 49 ark:12345/x6gg1" {
		t.Errorf("conflict lines %q", got)
	}
	if k := impKinds(lines); k[importer.KindCollapsed] != 1 || len(lines) != 7 {
		t.Errorf("reject impKinds %v", k)
	}
	if got := impScalar[int64](t, pool, `select count(*) from import_run`); got != 1 {
		t.Errorf("%d import runs after a second pass, want 1", got)
	}
}

// TestImportDryRun: everything is counted and reported, nothing is written.
func TestImportDryRun(t *testing.T) {
	t.Parallel()
	l, pool := impLedger(t)
	dir := t.TempDir()
	in := impWriteFixture(t, dir, "arklet.json", func(b *bytes.Buffer) error { return fixtures.ArkletJSON(b, 100, 5) })
	rep := impRun(t, l, importer.Config{Inputs: []string{in}, DryRun: true, RejectsPath: filepath.Join(dir, "r.csv")})
	if rep.Total.Imported != 94 || rep.Total.ShouldersCreated != 2 || rep.Total.NAANsCreated != 2 || !rep.DryRun || rep.Rejects == "" {
		t.Errorf("dry run counts %+v", rep.Total)
	}
	for _, table := range []string{"ark", "naan", "shoulder", "import_run"} {
		if got := impScalar[int64](t, pool, `select count(*) from `+table); got != 0 {
			t.Errorf("dry run wrote %d rows into %s", got, table)
		}
	}
}

// TestImportClient: the client must hold ark:import; a NAAN client imports only its NAAN.
func TestImportClient(t *testing.T) {
	t.Parallel()
	l, pool := impLedger(t)
	ctx := t.Context()
	if _, err := l.AddNAAN(ctx, ledger.NAAN{NAAN: "12345", Name: "examples"}); err != nil {
		t.Fatal(err)
	}
	exp := time.Now().Add(time.Hour)
	for _, c := range []ledger.Client{
		{ClientID: "importer", NAAN: "12345", Authority: "naan", Scopes: []string{"ark:import"}, ExpiresAt: &exp},
		{ClientID: "minter", NAAN: "12345", Authority: "naan", Scopes: []string{"ark:mint"}, ExpiresAt: &exp},
	} {
		if err := l.AddClient(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	in := impWriteText(t, dir, "two.anvl", ":: ark:/12345/x6aa1\n_target: https://e.org/a\n\n:: ark:/b5060/x6aa1\n_target: https://e.org/b\n")
	if _, err := importer.Run(ctx, l, importer.Config{Inputs: []string{in}, ClientID: "minter"}); err == nil || !strings.Contains(err.Error(), "ark:import") {
		t.Errorf("client without ark:import: %v", err)
	}
	if _, err := importer.Run(ctx, l, importer.Config{Inputs: []string{in}, ClientID: "nobody"}); err == nil {
		t.Error("unregistered client accepted")
	}
	rep := impRun(t, l, importer.Config{Inputs: []string{in}, ClientID: "importer", RejectsPath: filepath.Join(dir, "r.csv")})
	if rep.Total.Imported != 1 || rep.Total.Rejected != 1 {
		t.Errorf("counts %+v", rep.Total)
	}
	if got := impScalar[int64](t, pool, `select count(*) from ark a join client c on c.id = a.created_by where c.client_id = 'importer'`); got != 1 {
		t.Errorf("created_by not the client: %d", got)
	}
	if got := impScalar[int64](t, pool, `select count(*) from import_run r join client c on c.id = r.client_pk where c.client_id = 'importer'`); got != 1 {
		t.Errorf("run without its client: %d", got)
	}
	lines := impRejectLines(t, rep.Rejects)
	if len(lines) != 1 || !strings.Contains(lines[0][7], "outside the reach of client importer") {
		t.Errorf("rejects %v", lines)
	}
}

// TestImportDifferenceLeftAlone: an ARK in the ledger with another target is reported and left
// alone; its ledger value and the export's are in the reject file.
func TestImportDifferenceLeftAlone(t *testing.T) {
	t.Parallel()
	l, pool := impLedger(t)
	dir := t.TempDir()
	a := impWriteText(t, dir, "a.anvl", ":: ark:/12345/x6aa1\n_target: https://e.org/old\nerc.who: Doe\n\n:: ark:/12345/x6bb1\n_target: https://e.org/b\n")
	b := impWriteText(t, dir, "b.anvl", ":: ark:/12345/x6aa1\n_target: https://e.org/new\nerc.who: Doe\n\n:: ark:/12345/x6bb1\n_target: https://e.org/b\n")
	impRun(t, l, importer.Config{Inputs: []string{a}})
	rep := impRun(t, l, importer.Config{Inputs: []string{b}, RejectsPath: filepath.Join(dir, "r.csv")})
	if c := rep.Total; c.Differences != 1 || c.Unchanged != 1 || c.Imported != 0 || !c.Findings() {
		t.Errorf("counts %+v", c)
	}
	if got := impScalar[string](t, pool, `select url from ark where ark = '12345/x6aa1'`); got != "https://e.org/old" {
		t.Errorf("target changed to %q", got)
	}
	lines := impRejectLines(t, rep.Rejects)
	if len(lines) != 1 || lines[0][5] != importer.KindDifference || lines[0][6] != "target" || lines[0][8] != "https://e.org/new" || lines[0][9] != "https://e.org/old" || lines[0][4] != "ark:12345/x6aa1" {
		t.Errorf("difference line %v", lines)
	}
}

// TestImportTruncatedAndCompressed: a dump cut in the middle of a record imports every complete
// record and reports the line where it ends; a gzip'd export imports like the plain one.
func TestImportTruncatedAndCompressed(t *testing.T) {
	t.Parallel()
	l, pool := impLedger(t)
	dir := t.TempDir()
	var b bytes.Buffer
	if err := fixtures.ArkletJSON(&b, 40, 9); err != nil {
		t.Fatal(err)
	}
	full := b.Bytes()
	cut := full[:bytes.LastIndex(full, []byte(`"url": `))] // inside the last ark.ark object
	lines := bytes.Count(cut, []byte("\n")) + 1
	in := filepath.Join(dir, "cut.json")
	if err := os.WriteFile(in, cut, 0o644); err != nil {
		t.Fatal(err)
	}
	rep := impRun(t, l, importer.Config{Inputs: []string{in}})
	f := rep.Files[0]
	// records 0..38 are complete: 10-13 rejected, 21 test, 22 not UTF-8
	if f.Truncated == nil || f.Truncated.Loc.Line != lines || f.Counts.Imported != 39-6 {
		t.Fatalf("truncated %v at line %d (file has %d), imported %d", f.Truncated, f.Truncated.Loc.Line, lines, f.Counts.Imported)
	}
	if got := impScalar[int64](t, pool, `select count(*) from ark`); got != 33 {
		t.Errorf("%d ARKs", got)
	}

	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if err := fixtures.EZIDANVL(zw, 100, 10); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	gzPath := filepath.Join(dir, "ezid.anvl.gz")
	if err := os.WriteFile(gzPath, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	rep = impRun(t, l, importer.Config{Inputs: []string{gzPath}})
	if rep.Files[0].Format != legacy.EZIDANVL || rep.Total.Imported != 94 || rep.Truncated() {
		t.Errorf("gzip'd EZID download: %s %+v", rep.Files[0].Format, rep.Total)
	}
}

// TestImportNAANWideShoulder: a name with no primordinal shoulder lands under the NAAN-wide
// shoulder "/", created reserved; a nested registered shoulder wins by longest prefix.
func TestImportNAANWideShoulder(t *testing.T) {
	t.Parallel()
	l, pool := impLedger(t)
	ctx := t.Context()
	if _, err := l.AddNAAN(ctx, ledger.NAAN{NAAN: "12345", Name: "examples"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"/x6", "/x6b"} {
		if _, err := l.AddShoulder(ctx, ledger.Shoulder{NAAN: "12345", Shoulder: s, Status: "reserved", CheckZone: "none"}, 0); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	in := impWriteText(t, dir, "w.anvl", ":: ark:/12345/Qabc\n_target: https://e.org/q\n\n:: ark:/12345/x6bcd\n_target: https://e.org/b\n\n:: ark:/12345/x6ccd\n_target: https://e.org/c\n")
	rep := impRun(t, l, importer.Config{Inputs: []string{in}})
	if rep.Total.Imported != 3 || rep.Total.ShouldersCreated != 1 || rep.Total.NAANsCreated != 0 {
		t.Errorf("counts %+v", rep.Total)
	}
	got := impScalar[string](t, pool, `select string_agg(a.assigned_name || ' ' || s.shoulder || ' ' || s.status, ', ' order by a.assigned_name)
		from ark a join shoulder s on s.id = a.shoulder_id`)
	if got != "Qabc / reserved, x6bcd /x6b reserved, x6ccd /x6 reserved" {
		t.Errorf("shoulders: %s", got)
	}
}

// TestImportBatchShoulders: a batch's new shoulders are created together, each once, before the
// rows under them: rows land under shoulders the ledger held before the import, under those an
// earlier batch of the file created, and (single node) under one another session created while
// the batch was being read; the counts and the audit records are those of one shoulder at a time.
// A shoulder the server refuses fails the import, which names it; nothing of the file is kept.
func TestImportBatchShoulders(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l, pool, ctx := &ledger.Ledger{Pool: db.Pool}, db.Pool, t.Context()
		if _, err := l.AddNAAN(ctx, ledger.NAAN{NAAN: "12345", Name: "examples"}); err != nil {
			t.Fatal(err)
		}
		if _, err := l.AddShoulder(ctx, ledger.Shoulder{NAAN: "12345", Shoulder: "/b1", Status: "reserved", CheckZone: "none"}, 0); err != nil {
			t.Fatal(err)
		}
		const cons = "bcdfghjkmnpqrstvwxz"
		var text strings.Builder
		want := map[string]string{} // NAAN/name -> NAAN + the shoulder it lands under
		add := func(naan, name, shoulder string) {
			fmt.Fprintf(&text, ":: ark:/%s/%s\n_status: public\n_target: https://e.org/%s\n\n", naan, name, name)
			want[naan+"/"+name] = naan + shoulder
		}
		// batch 1 (1,500 records): 600 new shoulders of 12345 with two names each, 10 of the new
		// NAAN 23456 with five, 250 names under the registered /b1
		newShoulder := func(i int) string {
			return "x" + string(cons[i/361]) + string(cons[i/19%19]) + string(cons[i%19]) + "4"
		}
		for i := range 600 {
			add("12345", newShoulder(i)+"a", "/"+newShoulder(i))
			add("12345", newShoulder(i)+"b", "/"+newShoulder(i))
		}
		for i := range 50 {
			add("23456", "z"+string(cons[i/5])+fmt.Sprintf("5n%d", i), "/z"+string(cons[i/5])+"5")
		}
		for i := range 250 {
			add("12345", fmt.Sprintf("b1n%d", i), "/b1")
		}
		// batch 2 (600): 200 names under /c2, 300 under shoulders batch 1 created, 100 under /b1
		for i := range 200 {
			add("12345", fmt.Sprintf("c2n%d", i), "/c2")
		}
		for i := range 300 {
			add("12345", newShoulder(i)+"c", "/"+newShoulder(i))
		}
		for i := range 100 {
			add("12345", fmt.Sprintf("b1m%d", i), "/b1")
		}
		dir := t.TempDir()
		in := impWriteText(t, dir, "many.anvl", text.String())
		cfg := importer.Config{Inputs: []string{in}, BatchSize: 1500, RejectsPath: filepath.Join(dir, "r.csv")}
		created, byLedger := int64(611), int64(1) // shoulders created by the import, by the test
		if !db.Citus() {
			// Progress reports after 2,048 records, while batch 2 is still being filled: another
			// session creates /c2 then (on Citus its write would wait for the import's reference
			// table writes), so the import finds it taken and reads its ID instead
			created, byLedger = 610, 2
			done := false
			cfg.Progress = func(p importer.Progress) {
				if done {
					return
				}
				done = true
				if _, err := l.AddShoulder(ctx, ledger.Shoulder{NAAN: "12345", Shoulder: "/c2", Status: "reserved", CheckZone: "none"}, 0); err != nil {
					t.Error(err)
				}
			}
		}
		rep := impRun(t, l, cfg)
		if c := rep.Total; c.Imported != 2100 || c.Rejected != 0 || c.ShouldersCreated != created || c.NAANsCreated != 1 {
			t.Errorf("counts %+v; want 2100 imported, %d shoulders and 1 NAAN created", c, created)
		}
		rows, err := pool.Query(ctx, `select a.ark, s.naan || s.shoulder from ark a join shoulder s on s.id = a.shoulder_id`)
		if err != nil {
			t.Fatal(err)
		}
		n, wrong := 0, 0
		for rows.Next() {
			var key, under string
			if err := rows.Scan(&key, &under); err != nil {
				t.Fatal(err)
			}
			if n++; want[key] != under {
				if wrong++; wrong <= 5 {
					t.Errorf("%s landed under %s, want %s", key, under, want[key])
				}
			}
		}
		if rows.Close(); rows.Err() != nil {
			t.Fatal(rows.Err())
		}
		if n != 2100 || wrong != 0 {
			t.Errorf("%d ARKs, %d under the wrong shoulder; want 2100 and 0", n, wrong)
		}
		run := impScalar[int64](t, pool, `select max(id) from import_run`)
		if got := impScalar[int64](t, pool, `select count(*) from shoulder where import_run_id = $1 and status = 'reserved'
			and note like 'legacy shoulder created by arkhe import for imported ARKs%' and minter is null and redirect is null`, run); got != created {
			t.Errorf("%d legacy shoulders of the run, want %d", got, created)
		}
		if got := impScalar[int64](t, pool, `select count(*) from shoulder`); got != created+byLedger {
			t.Errorf("%d shoulders, want %d", got, created+byLedger)
		}
		// one shoulder.add record per shoulder, holding its row
		if got := impScalar[int64](t, pool, `select count(*) from audit_event where action = 'shoulder.add'`); got != created+byLedger {
			t.Errorf("%d shoulder.add records, want %d", got, created+byLedger)
		}
		if got := impScalar[int64](t, pool, `select count(*) from shoulder s join audit_event a on a.action = 'shoulder.add'
			and a.target = 'ark:' || s.naan || s.shoulder and a.detail->'before' = 'null'::jsonb
			and a.detail->'after' = arkhe_audit_row('shoulder', to_jsonb(s))`); got != created+byLedger {
			t.Errorf("%d shoulders with their shoulder.add record, want %d", got, created+byLedger)
		}
		if got := impScalar[string](t, pool, `select string_agg(target, ' ' order by target) from audit_event where action = 'naan.add'`); got != "12345 23456" {
			t.Errorf("naan.add records for %s", got)
		}

		// a shoulder the server refuses (a constraint the importer knows nothing of), 6th of 19 new ones
		if _, err := pool.Exec(ctx, `alter table shoulder add constraint test_refuse check (shoulder <> '/xqq9')`); err != nil {
			t.Fatal(err)
		}
		text.Reset()
		for i := range 19 {
			name := "xq" + string(cons[(i+6)%19]) + "9a"
			fmt.Fprintf(&text, ":: ark:/12345/%s\n_status: public\n_target: https://e.org/%d\n\n", name, i)
		}
		in = impWriteText(t, dir, "refused.anvl", text.String())
		_, err = importer.Run(ctx, l, importer.Config{Inputs: []string{in}, RejectsPath: filepath.Join(dir, "r2.csv")})
		if err == nil || ledger.SQLState(err) != "23514" || !strings.Contains(err.Error(), "create shoulder /xqq9 of NAAN 12345:") {
			t.Fatalf("import error %v (SQLSTATE %q), want the refusal of shoulder /xqq9", err, ledger.SQLState(err))
		}
		if got := impScalar[int64](t, pool, `select count(*) from shoulder`); got != created+byLedger {
			t.Errorf("%d shoulders after a failed import, want %d", got, created+byLedger)
		}
		if got := impScalar[int64](t, pool, `select count(*) from import_run`); got != 1 {
			t.Errorf("%d import runs after a failed import, want 1", got)
		}
	})
}

// TestImportServerRefusalInFlight: a batch's COPY runs while the next batch is encoded; when the
// server refuses it, the import fails naming the batch, and nothing of the file (no ARK, no run
// record) is committed. A re-run after the cause is gone imports everything.
func TestImportServerRefusalInFlight(t *testing.T) {
	t.Parallel()
	l, pool := impLedger(t)
	dir := t.TempDir()
	var text strings.Builder
	for i := range 40 {
		fmt.Fprintf(&text, ":: ark:/12345/x6r%03d\n_status: public\n_target: https://e.org/%d\n\n", i, i)
	}
	in := impWriteText(t, dir, "refused.anvl", text.String())
	// a constraint the importer knows nothing of: the server refuses the ARK of record 23 (batch 3 of 4)
	if _, err := pool.Exec(t.Context(), `alter table ark add constraint test_refuse check (ark <> '12345/x6r022')`); err != nil {
		t.Fatal(err)
	}
	_, err := importer.Run(t.Context(), l, importer.Config{Inputs: []string{in}, RejectsPath: filepath.Join(dir, "r.csv"), BatchSize: 10})
	if err == nil || ledger.SQLState(err) != "23514" || !strings.Contains(err.Error(), "insert the batch ending at line 117") {
		t.Fatalf("import error %v (SQLSTATE %q), want the refusal of the batch whose last record starts on line 117", err, ledger.SQLState(err))
	}
	if got := impScalar[int64](t, pool, `select count(*) from ark`); got != 0 {
		t.Errorf("%d ARKs committed by a failed import", got)
	}
	if got := impScalar[int64](t, pool, `select count(*) from import_run`); got != 0 {
		t.Errorf("%d import runs recorded by a failed import", got)
	}
	if _, err := pool.Exec(t.Context(), `alter table ark drop constraint test_refuse`); err != nil {
		t.Fatal(err)
	}
	rep := impRun(t, l, importer.Config{Inputs: []string{in}, RejectsPath: filepath.Join(dir, "r.csv"), BatchSize: 10})
	if rep.Total.Imported != 40 {
		t.Errorf("re-run imported %d, want 40", rep.Total.Imported)
	}
	if got := impScalar[int64](t, pool, `select count(*) from ark`); got != 40 {
		t.Errorf("%d ARKs after the re-run, want 40", got)
	}
}

// TestImportProbeIsIndexLookups: the classification probe is one primary-key lookup per key in
// any session, even one that prefers hash joins (the importer once forced nested loops with
// session settings, which also forced them on the ark triggers' joins during every COPY).
func TestImportProbeIsIndexLookups(t *testing.T) {
	t.Parallel()
	_, pool := impLedger(t)
	ctx := t.Context()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `set enable_nestloop = on; set enable_hashjoin = on; set enable_mergejoin = on`); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, "explain "+importer.ProbeSQL, []string{"12345/x6a", "12345/x6b"}, int64(1))
	if err != nil {
		t.Fatal(err)
	}
	var plan strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	p := plan.String()
	if !strings.Contains(p, "Index Scan using ark_pkey on ark") || strings.Contains(p, "Seq Scan on ark") ||
		strings.Contains(p, "Hash Join") {
		t.Errorf("probe plan is not one index lookup per key:\n%s", p)
	}
}

// TestImportCancelMidFile: cancelling while batches are in flight returns context.Canceled and
// commits nothing (no ARK, no run); the re-run imports the whole file.
func TestImportCancelMidFile(t *testing.T) {
	t.Parallel()
	l, pool := impLedger(t)
	dir := t.TempDir()
	in := impWriteFixture(t, dir, "dump.json", func(w *bytes.Buffer) error { return fixtures.ArkletJSON(w, 5000, 3) })
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	_, err := importer.Run(ctx, l, importer.Config{Inputs: []string{in}, RejectsPath: filepath.Join(dir, "r.csv"), BatchSize: 200,
		Progress: func(p importer.Progress) {
			if p.Read >= 1000 {
				cancel()
			}
		}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("import error %v, want context.Canceled", err)
	}
	if got := impScalar[int64](t, pool, `select count(*) from ark`); got != 0 {
		t.Errorf("%d ARKs committed by a cancelled import", got)
	}
	if got := impScalar[int64](t, pool, `select count(*) from import_run`); got != 0 {
		t.Errorf("%d import runs recorded by a cancelled import", got)
	}
	rep := impRun(t, l, importer.Config{Inputs: []string{in}, RejectsPath: filepath.Join(dir, "r.csv"), BatchSize: 200})
	if got := impScalar[int64](t, pool, `select count(*) from ark`); got != rep.Total.Imported || got < 4000 {
		t.Errorf("%d ARKs after the re-run, which imported %d", got, rep.Total.Imported)
	}
}

// TestSourcePath: a relative input is recorded by its absolute path (the run's provenance must
// name the file wherever the command ran); an absolute one as given.
func TestSourcePath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if got, want := importer.SourcePath("exports/ark.json"), filepath.Join(dir, "exports", "ark.json"); got != want {
		t.Errorf("SourcePath(relative) = %q, want %q", got, want)
	}
	if got := importer.SourcePath("/data/n2t.txt"); got != "/data/n2t.txt" {
		t.Errorf("SourcePath(absolute) = %q", got)
	}
}

// TestImportEZIDOnBoth imports the real EZID identifier export into an empty ledger, on the single
// node and on Citus, in batches small enough that later batches create shoulders and NAANs
// (reference tables on Citus) after earlier batches were COPYed into ark in the same
// transaction; then again with --include-reserved (every key probed in the ledger), and
// reconciles the export against the ledger: nothing differs.
func TestImportEZIDOnBoth(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l := &ledger.Ledger{Pool: db.Pool}
		in := fixtures.SharedData(t, "ezid", "db.identifier.jsonl")
		dir := t.TempDir()
		rep := impRun(t, l, importer.Config{Inputs: []string{in}, BatchSize: 700, RejectsPath: filepath.Join(dir, "r.csv")})
		c := rep.Total
		if c.Read != 2724 || c.SkippedNonARK["doi"] != 31 || c.ReservedSkipped != 81 || c.TestSkipped != 1 ||
			c.Imported != 2611 || c.Rejected != 0 || c.NAANsCreated != 32 || c.ShouldersCreated != 969 || c.CheckNone != 2611 {
			t.Fatalf("db.identifier.jsonl: %+v", c)
		}
		if got := impScalar[int64](t, db.Pool, `select count(*) from ark where status = 'unavailable'`); got != 175 {
			t.Errorf("%d tombstoned ARKs, want 175", got)
		}
		if got := impScalar[int64](t, db.Pool, `select count(*) from shoulder`); got != 969 {
			t.Errorf("%d shoulders, want 969", got)
		}
		if got := impScalar[string](t, db.Pool, `select url from ark where ark = '13030/k6jq14d1'`); got != "http://merritt.cdlib.org/m/ark%3A%2F13030%2Fk6jq14d1" {
			t.Errorf("tombstoned ARK keeps its real target: %q", got)
		}
		rep = impRun(t, l, importer.Config{Inputs: []string{in}, IncludeReserved: true, BatchSize: 700})
		if c := rep.Total; c.Imported != 81 || c.Unchanged != 2611 || c.ReservedSkipped != 0 || c.Differences != 0 {
			t.Errorf("with --include-reserved: %+v", c)
		}
		if got := impScalar[int64](t, db.Pool, `select count(*) from ark`); got != 2692 {
			t.Errorf("%d ARKs, want 2692", got)
		}
		sum, err := importer.Reconcile(context.Background(), l, importer.ReconcileConfig{Exports: []string{in},
			Out: filepath.Join(dir, "diff.csv"), OutFormat: report.CSV, IncludeReserved: true, Apply: true})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Compared != 2692 || sum.Repointed+sum.Changed != 0 || sum.Kinds[importer.DiffTargetDiffers]+sum.Kinds[importer.DiffStatusDiffers]+
			sum.Kinds[importer.DiffMetadataDiffers]+sum.Kinds[importer.DiffOnlyInExport]+sum.Kinds[importer.DiffOnlyInLedger] != 0 {
			t.Errorf("reconcile of the imported export: %+v", sum)
		}
		if got := impScalar[int64](t, db.Pool, `select count(*) from import_run where finished_at is not null`); got != 3 {
			t.Errorf("%d finished runs, want 3", got)
		}
	})
}

// TestImportKeepsRefusedNamesReserved: a record whose target mint would refuse (javascript:,
// data:, userinfo) or whose value cannot be kept still takes its name: the ARK lands reserved
// without the value, never stored, and the reject file says which value and why. Even without
// --include-reserved, and a second run changes nothing.
func TestImportKeepsRefusedNamesReserved(t *testing.T) {
	t.Parallel()
	l, pool := impLedger(t)
	dir := t.TempDir()
	rec := func(id, target, who string) string {
		return ":: " + id + "\n_status: public\n_target: " + target + "\nerc.who: " + who + "\n\n"
	}
	text := rec("ark:/12345/x6aa1", "https://e.org/a", "Ann") +
		rec("ark:/12345/x6js1", "javascript:alert(document.cookie)", "Bob") +
		rec("ark:/12345/x6da1", "data:text/html;base64,PHNjcmlwdD4=", "Cy") +
		rec("ark:/12345/x6pw1", "https://curator:hunter2@e.org/p", "Dee")
	in := impWriteText(t, dir, "hostile.anvl", text)
	rep := impRun(t, l, importer.Config{Inputs: []string{in}, RejectsPath: filepath.Join(dir, "r.csv")})
	if c := rep.Total; c.Imported != 4 || c.KeptReserved != 3 || c.Rejected != 0 || c.ReservedSkipped != 0 {
		t.Errorf("counts %+v, want 4 imported, 3 kept reserved", c)
	}
	got := impScalar[string](t, pool, `select string_agg(ark || ' ' || coalesce(status::text, 'public') || ' ' || coalesce(url, '-') || ' ' || coalesce(erc_who, '-'), ', ' order by ark) from ark`)
	if want := "12345/x6aa1 public https://e.org/a Ann, 12345/x6da1 reserved - Cy, 12345/x6js1 reserved - Bob, 12345/x6pw1 reserved - Dee"; got != want {
		t.Errorf("ledger: %s\nwant    %s", got, want)
	}
	if n := impScalar[int64](t, pool, `select count(*) from ark where url like '%hunter2%' or url like 'javascript:%' or metadata::text like '%hunter2%'`); n != 0 {
		t.Errorf("a refused value was stored (%d rows)", n)
	}
	lines := impRejectLines(t, rep.Rejects)
	var kept []string
	for _, l := range lines {
		if l[5] == importer.KindKeptReserved {
			kept = append(kept, l[1]+" "+l[4]+" "+l[6])
			if !strings.HasSuffix(l[7], importer.KeptReservedNote) {
				t.Errorf("reason %q lacks the note", l[7])
			}
		}
	}
	if got := strings.Join(kept, ", "); got != "6 ark:12345/x6js1 target, 11 ark:12345/x6da1 target, 16 ark:12345/x6pw1 target" {
		t.Errorf("kept-reserved lines %q (all lines %q)", got, lines)
	}
	again := impRun(t, l, importer.Config{Inputs: []string{in}, RejectsPath: filepath.Join(dir, "r.csv")})
	if c := again.Total; c.Imported != 0 || c.Unchanged != 4 {
		t.Errorf("second run %+v, want 4 unchanged", c)
	}
}

// TestImportProgressCountsOctetsAsRead imports the real EZID identifier export gzip-compressed:
// progress reports the file's compressed octets read against its size as stored, counts records
// as they are read (before the one batch of the file is written), and ends at the whole file.
func TestImportProgressCountsOctetsAsRead(t *testing.T) {
	t.Parallel()
	l, _ := impLedger(t)
	raw, err := os.ReadFile(fixtures.SharedData(t, "ezid", "db.identifier.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	in := impWriteText(t, t.TempDir(), "db.identifier.jsonl.gz", gz.String())
	var reports []importer.Progress
	rep := impRun(t, l, importer.Config{Inputs: []string{in}, Progress: func(p importer.Progress) { reports = append(reports, p) }})
	if rep.Total.Read != 2724 {
		t.Fatalf("read %d records, want 2,724", rep.Total.Read)
	}
	var early bool
	for i, p := range reports {
		if p.File != in || p.Pass != 1 || p.Size != int64(gz.Len()) || p.Octets > p.Size {
			t.Fatalf("report %d: %+v, want %s pass 1 of %d octets", i, p, in, gz.Len())
		}
		// 2,724 records fit one batch (20,000): a report before the end is one made while reading
		// counted while reading: the decompressor may already have read the whole (small)
		// compressed file by then, so the octets need not be short of the size
		if p.Read >= 2048 && p.Read < 2724 {
			early = true
		}
	}
	last := reports[len(reports)-1]
	if !early || last.Read != 2724 || last.Octets != int64(gz.Len()) {
		t.Fatalf("%d reports, one while reading %v, last %+v; want 2,724 records and %d octets", len(reports), early, last, gz.Len())
	}
}
