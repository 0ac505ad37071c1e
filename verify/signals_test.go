package verify_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/verify"
)

// fired asserts that check, and no other, has findings, one of whose details contains want.
func fired(t *testing.T, res *verify.Result, rows []verify.FindingRow, check, want string) {
	t.Helper()
	for _, c := range res.Checks {
		if (c.Count > 0) != (c.Name == check) {
			t.Errorf("%s: %d findings %v", c.Name, c.Count, c.Examples)
		}
	}
	found := false
	for _, r := range rows {
		t.Logf("finding: %s: %s", r.Check, r.Detail)
		if r.Check == check && strings.Contains(r.Detail, want) {
			found = true
			if check == verify.CheckSignals && !strings.Contains(r.Detail, "run a full audit") {
				t.Errorf("signal %q does not recommend the full audit", r.Detail)
			}
		}
	}
	if !found {
		t.Errorf("no %s finding says %q", check, want)
	}
}

// TestSinceSignals: after a clean full audit, --since with nothing changed is clean (on the
// single layout it reads no ARK); each change made behind the ledger's paths in plain SQL fires
// its signal, and a full audit records the ledger anew. One ledger per layout, tampered in turn.
func TestSinceSignals(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		tl := newLedgerIn(t, db)
		tl.baseline()
		since := func() (*verify.Result, []verify.FindingRow) {
			t.Helper()
			return tl.audit(verify.Config{Since: true})
		}

		res, rows := since()
		only(t, res, rows, "", 0, "")
		if res.Full == !db.Citus() || (!db.Citus() && (res.Checked != 0 || res.ARKs != 120)) {
			t.Errorf("--since, nothing changed: full %v checked %d ARKs %d", res.Full, res.Checked, res.ARKs)
		}

		// A trigger disabled: schema.triggers.
		tl.exec(false, `alter table ark_change disable trigger ark_change_append_only`)
		res, rows = since()
		fired(t, res, rows, verify.CheckSchema, "trigger ark_change_append_only on ark_change is not enabled")
		tl.exec(false, `alter table ark_change enable trigger ark_change_append_only`)

		// Rewritten: a new file node (as after TRUNCATE, CLUSTER, a rewriting ALTER TABLE).
		if _, err := tl.pool.Exec(tl.ctx, `vacuum full ark_change`); err != nil {
			t.Fatal(err)
		}
		res, rows = since()
		fired(t, res, rows, verify.CheckSignals, "was rewritten since the last full audit")
		tl.baseline()

		// The statistics reset: the counters can no longer tell.
		if _, err := tl.pool.Exec(tl.ctx, `select pg_stat_reset()`); err != nil {
			t.Fatal(err)
		}
		res, rows = since()
		fired(t, res, rows, verify.CheckSignals, "were reset at")
		tl.baseline()
		res, rows = since()
		only(t, res, rows, "", 0, "")

		// A target changed by a superuser with session_replication_role = replica: no trigger
		// fires, no ARK_CHANGE row is written, but the statistics count the update. On Citus it
		// is done on a worker, on a shard, by a session that sends its counters at once.
		if !db.Citus() {
			tl.exec(true, `update ark set url = 'https://evil.example.org/'
				where ark = (select ark from ark where change_seq = 0 order by seq limit 1)`)
			res, rows = since()
			fired(t, res, rows, verify.CheckSignals, "1 changed behind the path")
			return
		}
		node := updateOnAWorker(t, tl.ctx, tl.pool, db)
		res, rows = since()
		fired(t, res, rows, verify.CheckSignals, "on node "+node+" since the last full audit")
		fired(t, res, rows, verify.CheckSignals, "1 changed behind the path")
	})
}

// updateOnAWorker changes the target of one ARK without a history on the last worker of db, on
// its shard, with the triggers off, and makes the session send its statistics; it returns the
// node as the audit names it (host:port).
func updateOnAWorker(t *testing.T, ctx context.Context, coord *pgxpool.Pool, db pgtest.DB) string {
	t.Helper()
	conn, err := pgx.Connect(ctx, db.WorkerURLs[len(db.WorkerURLs)-1])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	port := conn.Config().Port
	var node string
	var shards []int64
	if err := coord.QueryRow(ctx, `select n.nodename || ':' || n.nodeport, array_agg(s.shardid order by s.shardid)
		from pg_dist_shard s join pg_dist_placement p using (shardid) join pg_dist_node n on n.groupid = p.groupid
		where s.logicalrelid = 'ark'::regclass and n.nodeport = $1 group by 1`, port).Scan(&node, &shards); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `set session_replication_role = replica`); err != nil {
		t.Fatal(err)
	}
	for _, sh := range shards {
		tag, err := conn.Exec(ctx, fmt.Sprintf(`update ark_%[1]d set url = 'https://evil.example.org/'
			where ark = (select ark from ark_%[1]d where change_seq = 0 limit 1)`, sh))
		if err != nil {
			t.Fatal(err)
		}
		if tag.RowsAffected() == 1 {
			if _, err := conn.Exec(ctx, `select pg_stat_force_next_flush()`); err != nil {
				t.Fatal(err)
			}
			return node
		}
	}
	t.Fatalf("no ARK without a history on node %s", node)
	return ""
}
