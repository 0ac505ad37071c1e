package ledger_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// TestReportRows: `arkhe report changes` and `arkhe report arks` read the same rows on the single
// node and on Citus: changes by ARK and, per ARK, in the order they were made (through the
// coordinator and through a worker), each with its client's public client_id; ARKs filtered by
// shoulder.
func TestReportRows(t *testing.T) {
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l, ctx := registeredIn(t, db)
		nodes := nodesOf(t, db)
		ids := keys(t, l.Pool)
		var run int64
		must(t, l.Pool.QueryRow(ctx, `insert into import_run (source_file, format) values ('r.csv', 'csv') returning id`).Scan(&run))
		for _, name := range []string{"b5aaa", "x9aab"} {
			// imported ARKs (no reach check: b5 is reserved)
			exec(t, l.Pool, `insert into ark (ark, naan, shoulder_id, assigned_name, url, created_at, import_run_id)
				values ($1, '99999', $2, $3, $4, now(), $5)`, "99999/"+name, ids["s/"+name[:2]], name, "https://example.org/"+name, run)
		}
		// c1 mints only: the changes are made by c2, registered to repoint and tombstone
		must(t, l.AddClient(ctx, ledger.Client{ClientID: "c2", NAAN: "99999", Manager: "m1", Authority: "manager",
			Scopes: []string{"ark:update", "ark:tombstone"}}))
		c2 := keys(t, l.Pool)["cc2"]
		exec(t, nodes[0].pool, `select ark_repoint('99999/x9aab', 'https://example.org/two', $1, null)`, c2)
		exec(t, nodes[len(nodes)-1].pool, `select ark_repoint('99999/x9abc', 'https://example.org/b', null, 'by hand')`)
		exec(t, nodes[0].pool, `select ark_tombstone('99999/x9abc', 'gone', $1, null)`, c2)
		var got []string
		for r, err := range ledger.ChangeRows(ctx, l, ledger.ReportFilter{}) {
			must(t, err)
			got = append(got, r.ARK+" "+r.Shoulder+" "+r.Action+" "+*r.AfterURL+" "+*r.By)
		}
		want := "ark:99999/x9aab /x9 update https://example.org/two c2, " +
			"ark:99999/x9abc /x9 update https://example.org/b by hand, " +
			"ark:99999/x9abc /x9 tombstone https://example.org/b c2"
		if s := strings.Join(got, ", "); s != want {
			t.Errorf("changes:\n got %s\nwant %s", s, want)
		}
		got = got[:0]
		for r, err := range ledger.ARKRows(ctx, l, ledger.ReportFilter{NAAN: "99999", Shoulder: "x9"}) {
			must(t, err)
			got = append(got, r.ARK+" "+r.Status+" "+*r.Target)
		}
		// physical order differs between the layouts (and the shards): compare as a set
		slices.Sort(got)
		s := strings.Join(got, ", ")
		if want := "ark:99999/x9aab public https://example.org/two, ark:99999/x9abc unavailable https://example.org/b"; s != want {
			t.Errorf("arks in /x9:\n got %s\nwant %s", s, want)
		}
		n := 0
		for _, err := range ledger.ARKRows(context.Background(), l, ledger.ReportFilter{}) {
			must(t, err)
			n++
		}
		if n != 3 {
			t.Errorf("%d ARKs reported, want 3", n)
		}
	})
}

// TestReasonMetadataAndMicroseconds: what the ledger stores reaches the reports and `ark show`:
// a repoint's --reason (recorded in by_text after RepointNote) and a tombstone's reason in the
// changes' reason, an ARK's metadata as its JSON text, and times to the microsecond.
func TestReasonMetadataAndMicroseconds(t *testing.T) {
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l, ctx := registeredIn(t, db)
		ids := keys(t, l.Pool)
		var run int64
		must(t, l.Pool.QueryRow(ctx, `insert into import_run (source_file, format) values ('db.identifier.jsonl', 'ezid-db') returning id`).Scan(&run))
		exec(t, l.Pool, `insert into ark (ark, naan, shoulder_id, assigned_name, url, metadata, created_at, import_run_id)
			values ('99999/x9meta', '99999', $1, 'x9meta', 'https://example.org/m',
			        '{"dc.date": "2000-09-22", "ezid.owner": "432"}', '2026-12-01 10:00:00.123456+00', $2)`, ids["s/x9"], run)
		must(t, l.AddClient(ctx, ledger.Client{ClientID: "c2", NAAN: "99999", Manager: "m1", Authority: "manager",
			Scopes: []string{"ark:update", "ark:tombstone"}}))
		if _, err := l.RepointARK(ctx, "99999/x9meta", "https://example.org/n", "c2", "moved to the new site"); err != nil {
			t.Fatal(err)
		}
		if _, err := l.RepointARK(ctx, "99999/x9meta", "https://example.org/o", "c2", ""); err != nil {
			t.Fatal(err)
		}
		if _, err := l.TombstoneARK(ctx, "99999/x9meta", "withdrawn by depositor", "c2"); err != nil {
			t.Fatal(err)
		}
		var got []string
		for r, err := range ledger.ChangeRows(ctx, l, ledger.ReportFilter{}) {
			must(t, err)
			reason := "NULL"
			if r.Reason != nil {
				reason = *r.Reason
			}
			got = append(got, r.Action+": "+reason)
		}
		if s, want := strings.Join(got, ", "), "update: moved to the new site, update: NULL, tombstone: withdrawn by depositor"; s != want {
			t.Errorf("changes' reasons:\n got %s\nwant %s", s, want)
		}
		var meta []string
		for r, err := range ledger.ARKRows(ctx, l, ledger.ReportFilter{}) {
			must(t, err)
			if r.Metadata != nil {
				meta = append(meta, r.ARK+" "+*r.Metadata+" "+r.CreatedAt.UTC().Format("15:04:05.000000"))
			}
		}
		if s, want := strings.Join(meta, ", "), `ark:99999/x9meta {"dc.date": "2000-09-22", "ezid.owner": "432"} 10:00:00.123456`; s != want {
			t.Errorf("ARKs with metadata:\n got %s\nwant %s", s, want)
		}
		r, err := l.ShowARK(ctx, "99999/x9meta")
		must(t, err)
		if r.Metadata != `{"dc.date": "2000-09-22", "ezid.owner": "432"}` || len(r.History) != 3 ||
			r.History[0].Reason != "moved to the new site" || r.History[0].Note != "arkhe ark repoint" ||
			r.History[1].Reason != "" || r.History[2].Reason != "withdrawn by depositor" ||
			r.CreatedAt.Nanosecond() != 123456000 {
			t.Errorf("show: metadata %s, created %v, history %+v", r.Metadata, r.CreatedAt, r.History)
		}
	})
}
