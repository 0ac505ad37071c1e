package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
)

// TestShoulderAdoptMigration runs docs/import.md's migration example on the real files: import the
// EZID export (its reserved names skipped: ark:21198/z1 cannot be adopted, the refusal names
// --include-reserved), import it again with --include-reserved, adopt ark:87281/t2, mint the
// NYPL CSV manifest into it, and audit: clean. A shoulder outside the first-digit convention
// stays reserved, with the reason; a minter state of another shoulder is refused.
func TestShoulderAdoptMigration(t *testing.T) {
	data := fixtures.SharedData(t)
	url := pgtest.URL(t)
	t.Chdir(t.TempDir())
	export := filepath.Join(data, "ezid", "db.identifier.jsonl")
	const jhu = "Johns Hopkins University Data Archive"
	steps := []struct {
		args []string
		code int
		want []string // in stdout, or in stderr when code is 2
	}{
		{[]string{"import", export}, 0, []string{"81 reserved (--include-reserved imports them)"}},
		{[]string{"manager", "add", "--naan", "21198", "UC"}, 0, nil},
		{[]string{"shoulder", "adopt", "/z1", "--naan", "21198", "--manager", "UC"}, 2, []string{
			"shoulder /z1 of NAAN 21198 not adopted: names the old system issued under it are not in the ledger",
			"30 names reserved in EZID (e.g. ark:21198/z1000fr4) were skipped by the import: import the export again with arkhe import --include-reserved",
			"Freeze the old minter first"}},
		{[]string{"import", "--include-reserved", export}, 0, []string{"imported     81 ARKs", "unchanged    2,611"}},
		{[]string{"manager", "add", "--naan", "87281", "--commitment", "Permanent: Stable Content", jhu}, 0, nil},
		{[]string{"shoulder", "adopt", "/t2", "--naan", "87281", "--manager", jhu}, 0, []string{
			`shoulder /t2 of NAAN 87281 adopted by manager "Johns Hopkins University Data Archive": active, new ARKs ark:87281/t2...`,
			"  ARKs         246 in the shoulder: 246 verify under naan_name, 11 under name_only, 0 under neither\n",
			"  check zone   naan_name (every existing ARK verifies under it); existing ARKs keep their recorded verdict\n",
			"  blade        5 betanumerics, 20,511,149 names (the length of the existing blades)\n",
			"  was          reserved, check zone none, blade 8 betanumerics\n"}},
		{[]string{"shoulder", "adopt", "/t2", "--naan", "87281", "--manager", jhu}, 0, []string{"is active under manager \"Johns Hopkins University Data Archive\" already (unchanged)"}},
		{[]string{"client", "add", "jhu-data-archive", "--naan", "87281", "--manager", jhu, "--shoulder", "/t2", "--scope", "ark:mint"}, 0, nil},
		{[]string{"mint", "--client", "jhu-data-archive", "--map", "request_id=UUID,url=Digital Collections URL,who=Contributor,what=Title,when=Date",
			"-o", "nypl.mintmap.csv", filepath.Join(data, "nypl-publicdomain", "pd_collections.csv")}, 0, []string{"new mints in ark:87281/t2", "minted      932"}},
		{[]string{"verify"}, 0, []string{"clean: no findings"}},
		{[]string{"shoulder", "list", "--naan", "87281"}, 0, []string{"/t2       Johns Hopkins University Data Archive  active  naan_name   5      1178"}},
		// refused: the shoulder stays reserved, with the reason
		{[]string{"manager", "add", "--naan", "88435", "Princeton"}, 0, nil},
		{[]string{"shoulder", "adopt", "/", "--naan", "88435", "--manager", "Princeton"}, 2, []string{
			"shoulder / of NAAN 88435 not adopted: / does not follow the first-digit convention", "it stays reserved"}},
		{[]string{"shoulder", "list", "--naan", "88435"}, 0, []string{"88435  /                  reserved  none        8      7"}},
		{[]string{"manager", "add", "--naan", "87278", "S6"}, 0, nil},
		{[]string{"shoulder", "adopt", "/s6", "--naan", "87278", "--manager", "S6", "--minter-state", filepath.Join(data, "ezid", "77913_r7.json")}, 2, []string{
			"is the minter of 77913/r7, not of 87278/s6"}},
		{[]string{"shoulder", "adopt", "/s6", "--naan", "87278", "--manager", "S6", "--check-zone", "ncda"}, 2, []string{`unknown check zone "ncda"`}},
	}
	for _, s := range steps {
		code, out, errOut := arkhe(t, url, "", s.args...)
		where := out
		if s.code == 2 {
			where = errOut
		}
		if code != s.code {
			t.Fatalf("arkhe %s: exit %d (want %d)\nstdout: %s\nstderr: %s", strings.Join(s.args, " "), code, s.code, out, errOut)
		}
		for _, w := range s.want {
			if !strings.Contains(where, w) {
				t.Errorf("arkhe %s: output lacks %q\nstdout: %s\nstderr: %s", strings.Join(s.args, " "), w, out, errOut)
			}
		}
		importNoInternalKey(t, "arkhe "+strings.Join(s.args, " "), out+errOut)
	}
	m := readMintMap(t, "nypl.mintmap.csv")
	if len(m) != 933 {
		t.Fatalf("mint map: %d lines, want 933", len(m))
	}
	for _, r := range m[1:] {
		a, err := ark.Parse(r[1])
		if err != nil || a.NAAN != "87281" || !strings.HasPrefix(a.Name, "t2") || len(a.Name) != 8 || !ark.Verify(a, ark.ZoneNAANName) || r[2] != "minted" {
			t.Errorf("mint map row %v: %v", r, err)
		}
	}
}
