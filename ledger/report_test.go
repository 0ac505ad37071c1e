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
