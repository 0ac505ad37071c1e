package importer_test

import (
	"context"
	"github.com/arkhe-ledger/arkhe/fixtures"
	"path/filepath"
	"testing"

	"github.com/arkhe-ledger/arkhe/importer"
	"github.com/arkhe-ledger/arkhe/legacy"
)

// TestImportEZIDLinkState imports EZID's real link-check records after its identifiers, with
// and without the reserved ones: every checked ARK's state lands (EZID's MD5 kept as md5), the
// never-checked ones and DOIs are counted, the TSV's ARKs (in no shared export) are rejected as
// not in the ledger, and a second import leaves the states alone.
func TestImportEZIDLinkState(t *testing.T) {
	t.Parallel()
	d := filepath.Join(fixtures.SharedDir(t), "data")
	for _, reserved := range []bool{false, true} {
		t.Run(map[bool]string{false: "public", true: "include-reserved"}[reserved], func(t *testing.T) {
			t.Parallel()
			importEZIDLinkState(t, d, reserved)
		})
	}
}

func importEZIDLinkState(t *testing.T, d string, reserved bool) {
	{
		l, pool := impLedger(t)
		dir := t.TempDir()
		rejects := filepath.Join(dir, "r.csv")
		run := func(f string) importer.FileResult {
			t.Helper()
			rep, err := importer.Run(context.Background(), l, importer.Config{Inputs: []string{filepath.Join(d, "ezid", f)},
				IncludeReserved: reserved, RejectsPath: rejects})
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			return rep.Files[0]
		}
		ids := run("db.identifier.jsonl")
		lc := run("db.linkchecker.jsonl")
		c := lc.Counts
		t.Logf("include-reserved %v: identifiers imported %d; linkchecker %+v", reserved, ids.Counts.Imported, c)
		if lc.Format != legacy.EZIDLinkCheck || c.Read != 2129 || c.LinkRecords != 2129 || c.SkippedNonARK["doi"] != 31 ||
			c.LinkNeverChecked != 530 || c.LinkDefaultTarget != 18 || c.LinkLoaded != 1550 || c.LinkBroken != 10 || c.Rejected != 0 || c.Differences != 0 ||
			c.LinkKept != 0 || c.Refused != 0 {
			t.Errorf("db.linkchecker.jsonl (include-reserved %v): %+v", reserved, c)
		}
		if got := impScalar[int64](t, pool, `select count(*) from link_state where hash_alg = 'md5' and length(body_hash) = 16 and import_run_id is not null`); got != 1540 {
			t.Errorf("md5 states: %d, want 1558", got)
		}
		if got := impScalar[string](t, pool, `select encode(body_hash, 'hex') || ' ' || size || ' ' || status_code || ' ' || outcome || ' ' ||
				to_char(checked_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' ' || to_char(due_at - checked_at, 'DD')
			from link_state where ark = '13030/c8251g4t'`); got != "29f541031daeb56d98029bce2900a9be 40027 200 good 2021-11-01 13:58:43 30" {
			t.Errorf("c8251g4t: %q", got)
		}
		if got := impScalar[int64](t, pool, `select count(*) from link_event e join link_state s using (ark)
			where e.kind = 'broken' and s.broken and e.at = s.checked_at and e.seq = 1 and s.event_seq = 1`); got != 10 {
			t.Errorf("broken events: %d, want 10", got)
		}
		if got := impScalar[string](t, pool, `select error_class || ' ' || consecutive_failures || ' ' || (first_failure_at = checked_at)
			from link_state where ark = '88435/d217qs60v'`); got != "timeout 521 true" {
			t.Errorf("d217qs60v: %q", got)
		}
		if reserved {
			return
		}
		tsv := run("linkchecker_test_id_url_v0.tsv")
		c = tsv.Counts
		t.Logf("TSV: %+v", c)
		if tsv.Format != legacy.EZIDLinkCheckTSV || c.LinkRecords != 65 || c.SkippedNonARK["doi"] != 10 || c.LinkNeverChecked != 4 ||
			c.Rejected != 0 || c.LinkNotInLedger != 51 || c.LinkLoaded != 0 {
			t.Errorf("TSV: %+v", c)
		}
		lines := impRejectLines(t, rejects)
		if len(lines) != 51 || lines[0][3] != "ark:/38305/f12j68s8" || lines[0][4] != "ark:38305/f12j68s8" ||
			lines[0][5] != importer.KindRejected || lines[0][7] != importer.LinkNotInLedgerReason || lines[0][1] != "2" {
			t.Errorf("TSV rejects: %d lines, first %q", len(lines), lines[:1])
		}
		// a second import keeps what is there
		c = run("db.linkchecker.jsonl").Counts
		if c.LinkKept != 1550 || c.LinkLoaded != 0 {
			t.Errorf("second import: %+v", c)
		}
		// a repoint resets the imported state like any other
		if _, err := pool.Exec(context.Background(), `select ark_repoint('13030/c8251g4t', 'https://example.org/moved', null, 'test')`); err != nil {
			t.Fatal(err)
		}
		if got := impScalar[int64](t, pool, `select count(*) from link_state where ark = '13030/c8251g4t' and checked_at is null and import_run_id is null`); got != 1 {
			t.Error("repoint did not reset the imported state")
		}
	}
}
