package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// registeredIn sets up, in db, NAAN 99999, manager m1 holding /x9 (its default) and /b5
// (reserved), a machine client c1 (manager authority, ark:mint) and one minted ARK 99999/x9abc
// with its receipt r1: on the ark row in the single layout, in the receipt table on Citus.
func registeredIn(t *testing.T, db pgtest.DB) (*ledger.Ledger, context.Context) {
	t.Helper()
	ctx := context.Background()
	l := &ledger.Ledger{Pool: db.Pool}
	must(t, firstErr(l.AddNAAN(ctx, ledger.NAAN{NAAN: "99999", Name: "test"})))
	must(t, firstErr(l.AddManager(ctx, ledger.Manager{NAAN: "99999", Name: "m1", CommitmentLevel: "Not Guaranteed"})))
	must(t, firstErr(l.AddShoulder(ctx, ledger.Shoulder{NAAN: "99999", Shoulder: "/x9", Manager: "m1"}, 0)))
	must(t, firstErr(l.AddShoulder(ctx, ledger.Shoulder{NAAN: "99999", Shoulder: "/b5", Manager: "m1", Status: "reserved"}, 0)))
	must(t, l.SetDefaultShoulder(ctx, "99999", "m1", "/x9"))
	must(t, l.AddClient(ctx, ledger.Client{ClientID: "c1", NAAN: "99999", Manager: "m1", Authority: "manager", Scopes: []string{"ark:mint"}}))
	if !db.Citus() {
		// the receipt is the ark row's request_id and payload_digest
		exec(t, l.Pool, `insert into ark (ark, naan, shoulder_id, assigned_name, url, created_by, created_at, request_id, payload_digest)
			select '99999/x9abc', '99999', s.id, 'x9abc', 'https://example.org/a', c.id, now(), 'r1', '\x00112233445566778899aabbccddeeff'
			from shoulder s, client c where s.shoulder = '/x9' and c.client_id = 'c1'`)
		return l, ctx
	}
	exec(t, l.Pool, `insert into ark (ark, naan, shoulder_id, assigned_name, url, created_by, created_at)
		select '99999/x9abc', '99999', s.id, 'x9abc', 'https://example.org/a', c.id, now()
		from shoulder s, client c where s.shoulder = '/x9' and c.client_id = 'c1'`)
	exec(t, l.Pool, `insert into receipt (client_pk, request_id, ark, payload_digest, created_at)
		select c.id, 'r1', '99999/x9abc', '\x00112233445566778899aabbccddeeff', now() from client c where c.client_id = 'c1'`)
	return l, ctx
}

// registered is registeredIn on a single-node database of t's own.
func registered(t *testing.T) (*ledger.Ledger, context.Context) {
	t.Helper()
	return registeredIn(t, pgtest.DB{Kind: pgtest.KindSingle, Pool: pgtest.New(t)})
}

// keys returns the internal keys of the shoulders ("s/x9") and clients ("cc1") in pool: tests
// on Citus write ARKs with INSERT ... VALUES, a router query that keeps the worker's SQLSTATE,
// where an INSERT ... SELECT from the reference tables goes through COPY (XX000).
func keys(t *testing.T, pool *pgxpool.Pool) map[string]int64 {
	t.Helper()
	ids := map[string]int64{}
	for _, q := range []string{`select 's' || shoulder, id from shoulder`, `select 'c' || client_id, id from client`} {
		rows, err := pool.Query(context.Background(), q)
		must(t, err)
		for rows.Next() {
			var k string
			var id int64
			must(t, rows.Scan(&k, &id))
			ids[k] = id
		}
		must(t, rows.Err())
	}
	return ids
}

func firstErr[T any](_ T, err error) error { return err }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func exec(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// refused runs sql and asserts the database refuses it with SQLSTATE code.
func refused(t *testing.T, pool *pgxpool.Pool, code, sql string, args ...any) {
	t.Helper()
	_, err := pool.Exec(context.Background(), sql, args...)
	if err == nil {
		t.Fatalf("%s: accepted, want SQLSTATE %s", sql, code)
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		t.Fatalf("%s: %v, want a PostgreSQL error %s", sql, err, code)
	}
	if pgErr.Code != code {
		t.Fatalf("%s: SQLSTATE %s (%s), want %s", sql, pgErr.Code, pgErr.Message, code)
	}
}

func count(t *testing.T, pool *pgxpool.Pool, sql string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// TestNothingIsDeleted: DELETE and TRUNCATE of every table are refused (AK001), through every
// node: on Citus a DELETE fires the statement trigger on each shard, a TRUNCATE on the table
// of the node that got the command, and both keep their SQLSTATE.
func TestNothingIsDeleted(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l, ctx := registeredIn(t, db)
		p := l.Pool
		nodes := nodesOf(t, db)
		must(t, l.AuditEvent(ctx, "c1", "manager", "mint", "99999/x9abc", nil))
		exec(t, p, `select ark_repoint('99999/x9abc', 'https://example.org/b', null, 'test')`)
		exec(t, p, `insert into shoulder_tally (shoulder_id, draws, collisions) select id, 3, 1 from shoulder where shoulder = '/x9'`)
		exec(t, p, `insert into mint_quota (manager_id, day, minted) select id, current_date, 1 from manager where name = 'm1'`)
		exec(t, p, `insert into import_run (source_file, format) values ('t.csv', 'csv')`)
		exec(t, p, `insert into import_skipped (ark, naan, assigned_name, reason, import_run_id)
			select '99999/x9skip', '99999', 'x9skip', 'reserved', id from import_run`)
		exec(t, p, `insert into credential (client_pk, kind, prefix, hashed) select id, 'api_key', 'k1', '$argon2id$x' from client where client_id = 'c1'`)
		tables := []string{"ark", "shoulder", "mint_receipt", "naan", "manager", "client", "ark_change", "audit_event",
			"shoulder_tally", "mint_quota", "ledger_setting", "import_run", "import_skipped", "credential"}
		// the receipt table holds the receipts on Citus; on the single node it stays empty
		if db.Citus() {
			tables = append(tables, "receipt")
		}
		for _, table := range tables {
			before := count(t, p, "select count(*) from "+table)
			if before == 0 {
				t.Fatalf("%s: no rows to protect", table)
			}
			// mint_receipt is a view (of ark, or of receipt on Citus): on the single node a
			// DELETE through it reaches the table's trigger; Citus refuses to modify a view of
			// its tables (0A000); PostgreSQL refuses TRUNCATE of a view (wrong_object_type)
			deleteCode, truncateCode := ledger.CodeDeleteRefused, ledger.CodeDeleteRefused
			if table == "mint_receipt" {
				truncateCode = codeWrongObjectType
				if db.Citus() {
					deleteCode = codeFeatureNotSupported
				}
			}
			refusedOn(t, nodes, deleteCode, "delete from "+table)
			refusedOn(t, nodes, truncateCode, "truncate "+table+" cascade")
			if !db.Citus() {
				// the statement trigger refuses even a DELETE that matches no row; on Citus a
				// DELETE whose condition prunes every shard reaches no shard and deletes
				// nothing, unrefused
				refusedOn(t, nodes, ledger.CodeDeleteRefused, "delete from "+table+" where false")
			}
			if after := count(t, p, "select count(*) from "+table); after != before {
				t.Errorf("%s: %d rows after refused delete, want %d", table, after, before)
			}
		}
		// the table nothing was written to in this test
		for _, table := range []string{"audit_summary"} {
			refusedOn(t, nodes, ledger.CodeDeleteRefused, "delete from "+table)
			refusedOn(t, nodes, ledger.CodeDeleteRefused, "truncate "+table)
		}
		if !db.Citus() {
			refused(t, p, ledger.CodeDeleteRefused, "delete from receipt")
		}
	})
}

func TestAppendOnlyTables(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l, ctx := registeredIn(t, db)
		p := l.Pool
		nodes := nodesOf(t, db)
		must(t, l.AuditEvent(ctx, "c1", "manager", "mint", "99999/x9abc", map[string]int{"minted": 1}))
		exec(t, p, `select ark_repoint('99999/x9abc', 'https://example.org/b', null, 'test')`)
		refusedOn(t, nodes, ledger.CodeUpdateRefused, `update ark_change set after_url = 'https://evil.example/'`)
		refusedOn(t, nodes, ledger.CodeUpdateRefused, `update audit_event set action = 'nothing'`)
		refusedOn(t, nodes, ledger.CodeUpdateRefused, `update ledger_setting set value = 'single'`)
		refusedOn(t, nodes, ledger.CodeUpdateRefused, `update receipt set ark = '99999/x9zzz'`)
		exec(t, p, `insert into import_run (source_file, format) values ('t.csv', 'csv')`)
		exec(t, p, `insert into import_skipped (ark, naan, assigned_name, reason, import_run_id)
			select '99999/x9skip', '99999', 'x9skip', 'reserved', id from import_run`)
		refusedOn(t, nodes, ledger.CodeUpdateRefused, `update import_skipped set reason = 'test'`)
		// through the view, the update reaches ark_update (ark and request_id are identity
		// columns) on the single node; Citus refuses to modify a view of its tables (0A000)
		viewCode := ledger.CodeUpdateRefused
		if db.Citus() {
			viewCode = codeFeatureNotSupported
		}
		refusedOn(t, nodes, viewCode, `update mint_receipt set ark = '99999/x9zzz'`)
		refusedOn(t, nodes, viewCode, `update mint_receipt set request_id = 'r2'`)
		if n := count(t, p, `select count(*) from mint_receipt where request_id = 'r1' and ark = '99999/x9abc'`); n != 1 {
			t.Errorf("receipt r1 -> 99999/x9abc rows = %d, want 1", n)
		}
		if n := count(t, p, `select count(*) from ark_change where after_url = 'https://example.org/b'`); n != 1 {
			t.Errorf("ark_change rows for the repoint = %d, want 1", n)
		}
	})
}

// codeWrongObjectType is PostgreSQL's SQLSTATE for TRUNCATE of a view.
const codeWrongObjectType = "42809"

// TestReceiptsAreUnique: one request ID of one client maps to one ARK, a receipt is whole
// (request ID and a 16-octet digest, for a known client), imported ARKs carry none, and a
// receipt never changes. Single layout: the receipt is on the ark row (the ark_receipt partial
// index). Citus: it is a row of the receipt table, unique by its key across the cluster, and
// an ark row carries none.
func TestReceiptsAreUnique(t *testing.T) {
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l, ctx := registeredIn(t, db)
		p := l.Pool
		nodes := nodesOf(t, db)
		const digest = `'\xffeeddccbbaa99887766554433221100'::bytea`
		insert := func(name, requestID, digest string) string {
			return `insert into ark (ark, naan, shoulder_id, assigned_name, created_by, created_at, request_id, payload_digest)
				select '99999/` + name + `', '99999', s.id, '` + name + `', c.id, now(), ` + requestID + `, ` + digest + `
				from shoulder s, client c where s.shoulder = '/x9' and c.client_id = 'c1'`
		}
		c1 := keys(t, p)["cc1"]
		receipt := func(name, requestID, digest string) string {
			return fmt.Sprintf(`insert into receipt (client_pk, request_id, ark, payload_digest, created_at)
				values (%d, %s, '99999/%s', %s, now())`, c1, requestID, name, digest)
		}
		if !db.Citus() {
			// the same (client, request ID) twice
			refusedOn(t, nodes, ledger.CodeUniqueViolation, insert("x9abd", `'r1'`, digest))
			// another request ID of the same client is fine; so is an ARK without a receipt
			exec(t, p, insert("x9abd", `'r2'`, digest))
			exec(t, p, insert("x9abf", `null`, `null`))
			// half a receipt, a digest of the wrong length
			refusedOn(t, nodes, ledger.CodeCheckViolation, insert("x9abg", `'r3'`, `null`))
			refusedOn(t, nodes, ledger.CodeCheckViolation, insert("x9abg", `null`, digest))
			refusedOn(t, nodes, ledger.CodeCheckViolation, insert("x9abg", `'r3'`, `'\x0011'::bytea`))
			// a receipt needs its client
			exec(t, p, `insert into import_run (source_file, format) values ('t.csv', 'csv')`)
			refusedOn(t, nodes, ledger.CodeCheckViolation, `insert into ark (ark, naan, shoulder_id, assigned_name, import_run_id, request_id, payload_digest)
				select '99999/x9abh', '99999', s.id, 'x9abh', r.id, 'r4', `+digest+` from shoulder s, import_run r where s.shoulder = '/x9'`)
			// a receipt never changes
			refusedOn(t, nodes, ledger.CodeUpdateRefused, `update ark set request_id = 'r9' where ark = '99999/x9abc'`)
			refusedOn(t, nodes, ledger.CodeUpdateRefused, `update ark set payload_digest = `+digest+` where ark = '99999/x9abc'`)
			refusedOn(t, nodes, ledger.CodeUpdateRefused, `update ark set request_id = null, payload_digest = null where ark = '99999/x9abc'`)
		} else {
			// the same (client, request ID) twice, by INSERT (the SQLSTATE survives) and by
			// COPY (Citus reports XX000): refused either way, nothing lands
			refusedOn(t, nodes, ledger.CodeUniqueViolation, receipt("x9abd", `'r1'`, digest))
			for _, n := range nodes {
				_, err := n.pool.CopyFrom(ctx, pgx.Identifier{"receipt"}, []string{"client_pk", "request_id", "ark", "payload_digest", "created_at"},
					pgx.CopyFromRows([][]any{{c1, "r5", "99999/x9abe", make([]byte, 16), time.Now()}, {c1, "r1", "99999/x9abd", make([]byte, 16), time.Now()}}))
				if code := ledger.SQLState(err); code != codeCitusCopy && code != ledger.CodeUniqueViolation {
					t.Errorf("%s: COPY of a receipt that exists: %v, want SQLSTATE %s or %s", n.name, err, codeCitusCopy, ledger.CodeUniqueViolation)
				}
			}
			// another request ID of the same client is fine
			exec(t, p, insert("x9abd", `null`, `null`))
			exec(t, p, receipt("x9abd", `'r2'`, digest))
			// a digest of the wrong length; a receipt needs its client
			refusedOn(t, nodes, ledger.CodeCheckViolation, receipt("x9abg", `'r3'`, `'\x0011'::bytea`))
			refusedOn(t, nodes, ledger.CodeForeignKeyViolation, `insert into receipt (client_pk, request_id, ark, payload_digest, created_at)
				values (1, 'r3', '99999/x9abg', `+digest+`, now())`)
			// an ark row carries no receipt: it would escape the receipt table's key
			row := fmt.Sprintf(`insert into ark (ark, naan, shoulder_id, assigned_name, created_by, created_at, request_id, payload_digest)
				values ('99999/x9abg', '99999', %d, 'x9abg', %d, now(), 'r3', %s)`, keys(t, p)["s/x9"], c1, digest)
			refusedOn(t, nodes, ledger.CodeCheckViolation, row)
			// a receipt never changes (and the ark row never gets one)
			refusedOn(t, nodes, ledger.CodeUpdateRefused, `update receipt set payload_digest = `+digest+` where request_id = 'r1'`)
			refusedOn(t, nodes, ledger.CodeUpdateRefused, `update ark set request_id = 'r9', payload_digest = `+digest+` where ark = '99999/x9abc'`)
		}
		var arks []string
		rows, err := p.Query(ctx, `select ark || ' ' || request_id from mint_receipt order by ark`)
		must(t, err)
		for rows.Next() {
			var s string
			must(t, rows.Scan(&s))
			arks = append(arks, s)
		}
		must(t, rows.Err())
		if got := strings.Join(arks, ","); got != "99999/x9abc r1,99999/x9abd r2" {
			t.Errorf("receipts = %q, want 99999/x9abc r1,99999/x9abd r2", got)
		}
	})
}

func TestShoulderPromises(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l, ctx := registeredIn(t, db)
		p := l.Pool
		nodes := nodesOf(t, db)
		// retired is one-way
		changed, err := l.RetireShoulder(ctx, "99999", "/x9")
		must(t, err)
		if !changed {
			t.Fatal("retire /x9: not changed")
		}
		for _, status := range []string{"active", "reserved", "delegated"} {
			refusedOn(t, nodes, ledger.CodeRetiredOneWay, `update shoulder set status = $1, retired_at = null where shoulder = '/x9'`, status)
		}
		refusedOn(t, nodes, ledger.CodeRetiredOneWay, `update shoulder set retired_at = now() - interval '1 day' where shoulder = '/x9'`)
		// only a first-digit shoulder may be active
		refusedOn(t, nodes, ledger.CodeCheckViolation, `insert into shoulder (naan, shoulder, status) values ('99999', '/dsp01', 'active')`)
		exec(t, p, `insert into shoulder (naan, shoulder, status) values ('99999', '/dsp01', 'reserved')`)
		refusedOn(t, nodes, ledger.CodeCheckViolation, `update shoulder set status = 'active' where shoulder = '/dsp01'`)
		// unique per NAAN
		refusedOn(t, nodes, ledger.CodeUniqueViolation, `insert into shoulder (naan, shoulder, status) values ('99999', '/b5', 'reserved')`)
		// a shoulder's NAAN matches its manager's
		exec(t, p, `insert into naan (naan, name) values ('12345', 'examples')`)
		refusedOn(t, nodes, ledger.CodeForeignKeyViolation, `insert into shoulder (naan, shoulder, manager_id) select '12345', '/q7', id from manager where name = 'm1'`)
		// the shoulder string never changes
		refusedOn(t, nodes, ledger.CodeUpdateRefused, `update shoulder set shoulder = '/b6' where shoulder = '/b5'`)
		var status string
		must(t, p.QueryRow(ctx, `select status from shoulder where shoulder = '/x9'`).Scan(&status))
		if n := count(t, p, `select count(*) from shoulder`); status != "retired" || n != 3 {
			t.Errorf("/x9 %s, %d shoulders; want retired, 3", status, n)
		}
	})
}

func TestDefaultShoulderCycle(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l, ctx := registeredIn(t, db)
		p := l.Pool
		nodes := nodesOf(t, db)
		// created after both tables, by ALTER TABLE: the constraint exists, points at shoulder and
		// is checked at commit (the two tables reference each other)
		for _, n := range nodes {
			if c := count(t, n.pool, `select count(*) from pg_constraint where conname = 'manager_default_shoulder_fk'
				and confrelid = 'shoulder'::regclass and condeferrable and condeferred`); c != 1 {
				t.Fatalf("%s: deferred manager_default_shoulder_fk constraints = %d, want 1", n.name, c)
			}
		}
		// a manager's default shoulder must be one it holds
		must(t, firstErr(l.AddManager(ctx, ledger.Manager{NAAN: "99999", Name: "m2"})))
		refusedOn(t, nodes, ledger.CodeForeignKeyViolation, `update manager set default_shoulder_id = (select id from shoulder where shoulder = '/x9') where name = 'm2'`)
		if n := count(t, p, `select count(*) from manager where default_shoulder_id is not null`); n != 1 {
			t.Errorf("managers with a default shoulder = %d, want 1 (m1)", n)
		}
	})
}

func TestARKInsertOnlyAndRepointPath(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l, ctx := registeredIn(t, db)
		p := l.Pool
		nodes := nodesOf(t, db)
		ids := keys(t, p)
		again := `insert into ark (ark, naan, shoulder_id, assigned_name, url, created_by, created_at)
			values ('99999/x9abc', '99999', $1, 'x9abc', 'https://evil.example/', $2, now())`
		// minting never becomes an update
		refusedOn(t, nodes, ledger.CodeUpdateRefused, again+` on conflict (ark) do update set url = excluded.url`, ids["s/x9"], ids["cc1"])
		refusedOn(t, nodes, ledger.CodeUpdateRefused, again+` on conflict (ark) do update set url = excluded.url, change_seq = ark.change_seq + 1`,
			ids["s/x9"], ids["cc1"])
		refusedOn(t, nodes, ledger.CodeUpdateRefused, `insert into ark (ark, naan, shoulder_id, assigned_name, url, created_by, created_at)
			select '99999/x9abc', '99999', s.id, 'x9abc', 'https://evil.example/', c.id, now() from shoulder s, client c
			where s.shoulder = '/x9' and c.client_id = 'c1'
			on conflict (ark) do update set url = excluded.url`)
		// a plain insert of an existing key is a unique violation
		refusedOn(t, nodes, ledger.CodeUniqueViolation, again, ids["s/x9"], ids["cc1"])
		// a bare UPDATE is refused; identity columns never change
		refusedOn(t, nodes, ledger.CodeUpdateRefused, `update ark set url = 'https://evil.example/'`)
		refusedOn(t, nodes, ledger.CodeUpdateRefused, `update ark set erc_what = 'renamed'`)
		refusedOn(t, nodes, ledger.CodeUpdateRefused, `update ark set created_by = null where ark = '99999/x9abc'`)
		// the ARK string never changes: on Citus it is the distribution column, whose change
		// Citus refuses itself (0A000) before the trigger would
		renameCode := ledger.CodeUpdateRefused
		if db.Citus() {
			renameCode = codeFeatureNotSupported
		}
		refusedOn(t, nodes, renameCode, `update ark set ark = '99999/x9abd', assigned_name = 'x9abd'`)
		// a change row for another URL does not open the door (one implicit transaction)
		refusedOn(t, nodes, ledger.CodeUpdateRefused, `insert into ark_change (ark, seq, at, action, before_url, after_url, before_status, after_status)
			values ('99999/x9abc', 1, now(), 'update', 'https://example.org/a', 'https://example.org/declared', 'public', 'public');
			update ark set url = 'https://example.org/other', change_seq = change_seq + 1 where ark = '99999/x9abc'`)
		if n := count(t, p, `select count(*) from ark_change`); n != 0 {
			t.Fatalf("ark_change rows after the refused update = %d, want 0 (rolled back with it)", n)
		}
		// the repoint path works and leaves history
		var ok bool
		must(t, p.QueryRow(ctx, `select ark_repoint('99999/x9abc', 'https://example.org/new', null, 'test')`).Scan(&ok))
		if !ok {
			t.Fatal("ark_repoint returned false")
		}
		var url, before, after string
		must(t, p.QueryRow(ctx, `select a.url, c.before_url, c.after_url from ark a join ark_change c using (ark)`).Scan(&url, &before, &after))
		if url != "https://example.org/new" || before != "https://example.org/a" || after != "https://example.org/new" {
			t.Errorf("after repoint: url %q, change %q -> %q", url, before, after)
		}
		// the tombstone, through the last node (a worker on Citus)
		must(t, nodes[len(nodes)-1].pool.QueryRow(ctx, `select ark_tombstone('99999/x9abc', 'withdrawn by owner', null, 'test')`).Scan(&ok))
		var status, reason string
		must(t, p.QueryRow(ctx, `select status, tombstone_reason from ark`).Scan(&status, &reason))
		if status != "unavailable" || reason != "withdrawn by owner" {
			t.Errorf("after tombstone: %s %q", status, reason)
		}
		if n := count(t, p, `select count(*) from ark_change`); n != 2 {
			t.Errorf("ark_change rows = %d, want 2", n)
		}
	})
}

// codeFeatureNotSupported is PostgreSQL's feature_not_supported, which Citus raises for an
// UPDATE of a distribution column.
const codeFeatureNotSupported = "0A000"

func TestMintReachInTheDatabase(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l, ctx := registeredIn(t, db)
		p := l.Pool
		nodes := nodesOf(t, db)
		insert := func(name, shoulder, client string) string {
			ids := keys(t, p)
			return fmt.Sprintf(`insert into ark (ark, naan, shoulder_id, assigned_name, created_by, created_at)
				values ('99999/%s', '99999', %d, '%s', %d, now())`, name, ids["s"+shoulder], name, ids["c"+client])
		}
		// a reserved shoulder never mints
		refusedOn(t, nodes, ledger.CodeReachRefused, insert("b5aaa", "/b5", "c1"))
		// a client without ark:mint
		must(t, l.AddClient(ctx, ledger.Client{ClientID: "reader", NAAN: "99999", Manager: "m1", Authority: "manager", Scopes: []string{"ark:read"}}))
		refusedOn(t, nodes, ledger.CodeReachRefused, insert("x9aaa", "/x9", "reader"))
		// a client of another manager
		must(t, firstErr(l.AddManager(ctx, ledger.Manager{NAAN: "99999", Name: "m2"})))
		must(t, firstErr(l.AddShoulder(ctx, ledger.Shoulder{NAAN: "99999", Shoulder: "/q7", Manager: "m2"}, 0)))
		refusedOn(t, nodes, ledger.CodeReachRefused, insert("q7aaa", "/q7", "c1"))
		// an inactive or expired client
		exec(t, p, `update client set active = false where client_id = 'reader'`)
		must(t, l.AddClient(ctx, ledger.Client{ClientID: "old", NAAN: "99999", Authority: "naan", Scopes: []string{"ark:mint"}, ExpiresAt: ptr(time.Now().Add(-time.Hour))}))
		refusedOn(t, nodes, ledger.CodeReachRefused, insert("x9aab", "/x9", "old"))
		// a retired shoulder
		_, err := l.RetireShoulder(ctx, "99999", "/x9")
		must(t, err)
		refusedOn(t, nodes, ledger.CodeReachRefused, insert("x9aac", "/x9", "c1"))
		if n := count(t, p, `select count(*) from ark`); n != 1 {
			t.Errorf("ark rows = %d, want 1", n)
		}
	})
}

func ptr[T any](v T) *T { return &v }

func TestClientReachIsARegistrationAttribute(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l, ctx := registeredIn(t, db)
		p := l.Pool
		nodes := nodesOf(t, db)
		refusedOn(t, nodes, ledger.CodeReachRefused, `update client set allowed_scopes = '{ark:mint,ark:update}' where client_id = 'c1'`)
		refusedOn(t, nodes, ledger.CodeReachRefused, `update client set authority = 'naan', expires_at = now() + interval '1 day' where client_id = 'c1'`)
		refusedOn(t, nodes, ledger.CodeReachRefused, `update client set manager_id = null where client_id = 'c1'`)
		refusedOn(t, nodes, ledger.CodeUpdateRefused, `update client set client_id = 'c9' where client_id = 'c1'`)
		// narrowing is allowed
		exec(t, p, `update client set allowed_scopes = '{}' where client_id = 'c1'`)
		// expires_at is required for authority naan
		err := l.AddClient(ctx, ledger.Client{ClientID: "wide", NAAN: "99999", Authority: "naan", Scopes: []string{"ark:mint"}})
		if ledger.SQLState(err) != ledger.CodeCheckViolation {
			t.Fatalf("naan authority without expiry: %v, want %s", err, ledger.CodeCheckViolation)
		}
		// machines hold no password, persons no API key
		must(t, l.AddClient(ctx, ledger.Client{ClientID: "alice", NAAN: "99999", Manager: "m1", Authority: "manager", SubjectType: "person"}))
		refusedOn(t, nodes, ledger.CodeCredentialFit, `insert into credential (client_pk, kind, prefix, hashed) select id, 'password', 'p1', '$argon2id$x' from client where client_id = 'c1'`)
		refusedOn(t, nodes, ledger.CodeCredentialFit, `insert into credential (client_pk, kind, prefix, hashed) select id, 'api_key', 'k1', '$argon2id$x' from client where client_id = 'alice'`)
		exec(t, p, `insert into credential (client_pk, kind, prefix, hashed) select id, 'api_key', 'k2', '$argon2id$x' from client where client_id = 'c1'`)
		exec(t, p, `insert into credential (client_pk, kind, prefix, hashed) select id, 'password', 'p2', '$argon2id$x' from client where client_id = 'alice'`)
		// a revoked credential stays revoked
		exec(t, p, `update credential set active = false where prefix = 'k2'`)
		refusedOn(t, nodes, ledger.CodeUpdateRefused, `update credential set active = true where prefix = 'k2'`)
		var scopes []string
		must(t, p.QueryRow(ctx, `select allowed_scopes from client where client_id = 'c1'`).Scan(&scopes))
		if len(scopes) != 0 {
			t.Errorf("c1 scopes %v, want none (narrowed)", scopes)
		}
	})
}

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l, ctx := registeredIn(t, db)
		res, err := l.Init(ctx, ledger.LayoutAuto)
		must(t, err)
		if len(res.Applied) != 0 {
			t.Errorf("second init applied %d migrations, want 0", len(res.Applied))
		}
		ms, err := ledger.Migrations()
		must(t, err)
		if res.Current != ms[len(ms)-1].Version {
			t.Errorf("current version %d, want %d", res.Current, ms[len(ms)-1].Version)
		}
		if n := count(t, l.Pool, `select count(*) from ark`); n != 1 {
			t.Errorf("ark rows after re-init = %d, want 1", n)
		}
	})
}

func TestIdentityColumnsAreCollateC(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l, _ := registeredIn(t, db)
		rows, err := l.Pool.Query(context.Background(), `select table_name || '.' || column_name, coalesce(collation_name, '')
			from information_schema.columns where table_schema = 'public'
			and column_name in ('ark', 'naan', 'assigned_name', 'shoulder', 'client_id', 'request_id', 'original')
			and table_name not like 'citus%'`)
		must(t, err)
		defer rows.Close()
		n := 0
		for rows.Next() {
			var col, coll string
			must(t, rows.Scan(&col, &coll))
			n++
			if coll != "C" && !strings.HasPrefix(col, "unknown_subject") {
				t.Errorf("%s collation %q, want C", col, coll)
			}
		}
		if n < 10 {
			t.Errorf("checked %d identifier columns, want at least 10", n)
		}
	})
}

func TestInternalKeysStartHigh(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l, _ := registeredIn(t, db)
		var id int64
		must(t, l.Pool.QueryRow(context.Background(), `select id from client where client_id = 'c1'`).Scan(&id))
		if id < pgtest.FirstTestKey {
			t.Errorf("client id %d: test sequences must start at 7,000,000,000,001", id)
		}
	})
}

// TestRepointProof: an UPDATE of ark passes only with change_seq raised by exactly one and the
// ARK_CHANGE row of that number describing the new target and status; the repoint path writes
// both, and an ARK's history is numbered from 1 in the order it was made. The proof compares
// no transaction ids, so it holds on Citus through the coordinator and through a worker (the
// ARK_CHANGE row is co-located with its ARK: the trigger's lookup stays on the shard's node).
func TestRepointProof(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l, ctx := registeredIn(t, db)
		p := l.Pool
		nodes := nodesOf(t, db)
		const key = "99999/x9abc"
		// the ARK_CHANGE row, but change_seq not raised
		refusedOn(t, nodes, ledger.CodeUpdateRefused, `insert into ark_change (ark, seq, at, action, before_url, after_url, before_status, after_status)
			values ('99999/x9abc', 1, now(), 'update', 'https://example.org/a', 'https://example.org/b', 'public', 'public');
			update ark set url = 'https://example.org/b' where ark = '99999/x9abc'`)
		// change_seq raised, but no ARK_CHANGE row
		refusedOn(t, nodes, ledger.CodeUpdateRefused, `update ark set url = 'https://example.org/b', change_seq = change_seq + 1 where ark = '99999/x9abc'`)
		// change_seq raised by two, with a row numbered 2
		refusedOn(t, nodes, ledger.CodeUpdateRefused, `insert into ark_change (ark, seq, at, action, before_url, after_url, before_status, after_status)
			values ('99999/x9abc', 2, now(), 'update', 'https://example.org/a', 'https://example.org/b', 'public', 'public');
			update ark set url = 'https://example.org/b', change_seq = change_seq + 2 where ark = '99999/x9abc'`)
		// the row describes another status
		refusedOn(t, nodes, ledger.CodeUpdateRefused, `insert into ark_change (ark, seq, at, action, before_url, after_url, before_status, after_status)
			values ('99999/x9abc', 1, now(), 'update', 'https://example.org/a', 'https://example.org/b', 'public', 'reserved');
			update ark set url = 'https://example.org/b', change_seq = change_seq + 1 where ark = '99999/x9abc'`)
		// the row is another ARK's
		exec(t, p, `insert into ark (ark, naan, shoulder_id, assigned_name, url, created_by, created_at)
			select '99999/x9abd', '99999', s.id, 'x9abd', 'https://example.org/a', c.id, now()
			from shoulder s, client c where s.shoulder = '/x9' and c.client_id = 'c1'`)
		refusedOn(t, nodes, ledger.CodeUpdateRefused, `insert into ark_change (ark, seq, at, action, before_url, after_url, before_status, after_status)
			values ('99999/x9abd', 1, now(), 'update', 'https://example.org/a', 'https://example.org/b', 'public', 'public');
			update ark set url = 'https://example.org/b', change_seq = change_seq + 1 where ark = '99999/x9abc'`)
		// minting never becomes an update
		refusedOn(t, nodes, ledger.CodeUpdateRefused, `insert into ark (ark, naan, shoulder_id, assigned_name, url, created_by, created_at)
			select '99999/x9abc', '99999', s.id, 'x9abc', 'https://evil.example/', c.id, now() from shoulder s, client c
			where s.shoulder = '/x9' and c.client_id = 'c1'
			on conflict (ark) do update set url = excluded.url`)
		if n := count(t, p, `select count(*) from ark_change`); n != 0 {
			t.Fatalf("ark_change rows after refused updates = %d, want 0", n)
		}
		if n := count(t, p, `select count(*) from ark where url = 'https://example.org/a' and change_seq = 0`); n != 2 {
			t.Fatalf("ARKs unchanged = %d, want 2", n)
		}
		// the repoint path: two repoints and a tombstone, numbered 1, 2, 3; the second through
		// the last node (a worker on Citus)
		exec(t, p, `select ark_repoint('99999/x9abc', 'https://example.org/b', null, 'first')`)
		exec(t, nodes[len(nodes)-1].pool, `select ark_repoint('99999/x9abc', 'https://example.org/c', null, 'second')`)
		exec(t, p, `select ark_tombstone('99999/x9abc', 'withdrawn', null, 'third')`)
		var history string
		must(t, p.QueryRow(ctx, `select string_agg(seq || ' ' || action || ' ' || coalesce(before_url, '-') || ' ' || after_url || ' ' || after_status, '; ' order by seq)
			from ark_change where ark = $1`, key).Scan(&history))
		const want = "1 update https://example.org/a https://example.org/b public; " +
			"2 update https://example.org/b https://example.org/c public; " +
			"3 tombstone https://example.org/c https://example.org/c unavailable"
		if history != want {
			t.Errorf("history = %q, want %q", history, want)
		}
		if n := count(t, p, `select change_seq from ark where ark = '99999/x9abc'`); n != 3 {
			t.Errorf("change_seq = %d, want 3", n)
		}
		// a proof written in its own transaction, then the update through another node: the
		// proof is a row, not a transaction id, so it passes wherever the update runs
		exec(t, p, `insert into ark_change (ark, seq, at, action, before_url, after_url, before_status, after_status)
			values ('99999/x9abd', 1, now(), 'update', 'https://example.org/a', 'https://example.org/d', 'public', 'public')`)
		exec(t, nodes[len(nodes)-1].pool, `update ark set url = 'https://example.org/d', change_seq = change_seq + 1 where ark = '99999/x9abd'`)
		// ShowARK reads the history in the same order
		r, err := l.ShowARK(ctx, key)
		must(t, err)
		var got []string
		for _, h := range r.History {
			got = append(got, h.Action+" "+h.AfterURL+" "+h.Note)
		}
		if s := strings.Join(got, ", "); s != "update https://example.org/b first, update https://example.org/c second, tombstone https://example.org/c third" {
			t.Errorf("ShowARK history = %q", s)
		}
		// a second row for a step already taken is a duplicate key
		refusedOn(t, nodes, ledger.CodeUniqueViolation, `insert into ark_change (ark, seq, at, action, after_url, after_status)
			values ('99999/x9abc', 2, now(), 'update', 'https://example.org/x', 'public')`)
	})
}

// TestARKInRegisteredShoulder: every ARK belongs to a registered shoulder of its own NAAN. An
// INSERT or a COPY holding one ARK whose (shoulder_id, naan) is not a registered shoulder is
// refused whole with foreign_key_violation: on the single layout by a check over the statement's
// new rows, on Citus by the foreign key. A shoulder's id never changes.
func TestARKInRegisteredShoulder(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l, ctx := registeredIn(t, db)
		p := l.Pool
		nodes := nodesOf(t, db)
		exec(t, p, `insert into naan (naan, name) values ('12345', 'examples')`)
		ids := keys(t, p)
		x9, client := ids["s/x9"], ids["cc1"]
		before := count(t, p, `select count(*) from ark`)
		cols := []string{"ark", "naan", "shoulder_id", "assigned_name", "created_by", "created_at"}
		good := []any{"99999/x9good", "99999", x9, "x9good", client, time.Now()}
		for _, bad := range [][]any{
			{"99999/x9none", "99999", x9 + 1000, "x9none", client, time.Now()}, // no such shoulder
			{"12345/x9naan", "12345", x9, "x9naan", client, time.Now()},        // the shoulder is 99999's
		} {
			refusedOn(t, nodes, ledger.CodeForeignKeyViolation, `insert into ark (ark, naan, shoulder_id, assigned_name, created_by, created_at)
				values ($1, $2, $3, $4, $5, $6)`, bad...)
			for _, n := range nodes {
				tx, err := n.pool.Begin(ctx)
				must(t, err)
				_, err = tx.CopyFrom(ctx, pgx.Identifier{"ark"}, cols, pgx.CopyFromRows([][]any{good, bad}))
				_ = tx.Rollback(ctx)
				if code := ledger.SQLState(err); code != ledger.CodeForeignKeyViolation && !(db.Citus() && code == codeCitusCopy) {
					t.Fatalf("%s: COPY of an ARK outside every registered shoulder: %v, want %s", n.name, err, ledger.CodeForeignKeyViolation)
				}
			}
		}
		if !db.Citus() {
			// one statement, two groups of rows: one minted by no client (out of every reach), one
			// in no registered shoulder; every group's shoulder is checked before any reach, so
			// the shoulder is what is reported (on Citus each shard's checks run on their own)
			refusedOn(t, nodes, ledger.CodeForeignKeyViolation, `insert into ark (ark, naan, shoulder_id, assigned_name, created_by, created_at)
				values ('99999/x9anon', '99999', $1, 'x9anon', null, now()), ('99999/x9none', '99999', $2, 'x9none', $3, now())`, x9, x9+1000, client)
			refusedOn(t, nodes, ledger.CodeReachRefused, `insert into ark (ark, naan, shoulder_id, assigned_name, created_by, created_at)
				values ('99999/x9anon', '99999', $1, 'x9anon', null, now())`, x9)
		}
		if n := count(t, p, `select count(*) from ark`); n != before {
			t.Fatalf("ark rows after the refused statements = %d, want %d", n, before)
		}
		exec(t, p, `insert into ark (ark, naan, shoulder_id, assigned_name, created_by, created_at) values ($1, $2, $3, $4, $5, $6)`, good...)
		// the id is generated always: no UPDATE sets it to a value; to DEFAULT (a new value) the
		// single layout refuses it, and Citus refuses a volatile default in an UPDATE
		refusedOn(t, nodes, "428C9", `update shoulder set id = id + 1000 where shoulder = '/x9'`)
		code := ledger.CodeUpdateRefused
		if db.Citus() {
			code = "0A000"
		}
		refusedOn(t, nodes, code, `update shoulder set id = default where shoulder = '/x9'`)
		if n := count(t, p, `select count(*) from ark a join shoulder s on s.id = a.shoulder_id and s.naan = a.naan`); n != before+1 {
			t.Errorf("ARKs in a registered shoulder = %d, want %d", n, before+1)
		}
	})
}

// TestReachGroupsOfOneCOPY: the reach trigger checks each (shoulder, client) group of a
// statement; one group out of reach refuses the whole COPY, groups within reach land. On
// Citus the trigger fires per shard, on the worker, and a refused COPY comes back as XX000
// (Citus drops the remote SQLSTATE of COPY errors, keeping the message), AK004 when the
// refusing shard is local to the node that got the COPY: the test asserts the refusal and that
// nothing landed.
func TestReachGroupsOfOneCOPY(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l, ctx := registeredIn(t, db)
		p := l.Pool
		nodes := nodesOf(t, db)
		must(t, firstErr(l.AddManager(ctx, ledger.Manager{NAAN: "99999", Name: "m2"})))
		must(t, firstErr(l.AddShoulder(ctx, ledger.Shoulder{NAAN: "99999", Shoulder: "/q7", Manager: "m2"}, 0)))
		must(t, l.AddClient(ctx, ledger.Client{ClientID: "c2", NAAN: "99999", Manager: "m2", Authority: "manager", Scopes: []string{"ark:mint"}}))
		ids := keys(t, p)
		cols := []string{"ark", "naan", "shoulder_id", "assigned_name", "created_by", "created_at"}
		row := func(name, shoulder, client string) []any {
			return []any{"99999/" + name, "99999", ids["s"+shoulder], name, ids["c"+client], time.Now()}
		}
		copyRows := func(pool *pgxpool.Pool, rows ...[]any) error {
			tx, err := pool.Begin(ctx)
			if err != nil {
				return err
			}
			defer func() { _ = tx.Rollback(ctx) }()
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"ark"}, cols, pgx.CopyFromRows(rows)); err != nil {
				return err
			}
			return tx.Commit(ctx)
		}
		for _, n := range nodes {
			// two groups: c1 in /x9 (its manager's) and c1 in /q7 (another manager's): refused whole
			err := copyRows(n.pool, row("x9aaa", "/x9", "c1"), row("x9aab", "/x9", "c1"), row("q7aaa", "/q7", "c1"), row("x9aac", "/x9", "c1"))
			if code := ledger.SQLState(err); code != ledger.CodeReachRefused && !(db.Citus() && code == codeCitusCopy) {
				t.Fatalf("%s: COPY with a group out of reach: %v, want %s", n.name, err, ledger.CodeReachRefused)
			}
		}
		// the same by INSERT
		refusedOn(t, nodes, ledger.CodeReachRefused, `insert into ark (ark, naan, shoulder_id, assigned_name, created_by, created_at)
			values ('99999/x9b', '99999', $1, 'x9b', $3, now()), ('99999/q7b', '99999', $2, 'q7b', $3, now())`,
			ids["s/x9"], ids["s/q7"], ids["cc2"])
		if n := count(t, p, `select count(*) from ark`); n != 1 {
			t.Fatalf("ark rows after refused COPY = %d, want 1", n)
		}
		// a manager client never reaches a shoulder without a manager
		exec(t, p, `insert into shoulder (naan, shoulder) values ('99999', '/n4')`)
		ids = keys(t, p)
		refusedOn(t, nodes, ledger.CodeReachRefused, `insert into ark (ark, naan, shoulder_id, assigned_name, created_by, created_at)
			values ('99999/n4aaa', '99999', $1, 'n4aaa', $2, now())`, ids["s/n4"], ids["cc1"])
		// two groups within reach: both land, through the last node (a worker on Citus)
		must(t, copyRows(nodes[len(nodes)-1].pool, row("x9aaa", "/x9", "c1"), row("q7aaa", "/q7", "c2"), row("x9aab", "/x9", "c1"), row("q7aab", "/q7", "c2")))
		if n := count(t, p, `select count(*) from ark`); n != 5 {
			t.Errorf("ark rows after the COPY within reach = %d, want 5", n)
		}
	})
}

// TestLayout: a ledger on a server without the citus extension is created with the single
// layout, one on a Citus coordinator with the citus layout, recorded in ledger_setting; it
// never changes, and the citus layout needs the extension.
func TestLayout(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l, ctx := registeredIn(t, db)
		p := l.Pool
		want, other := ledger.LayoutSingle, ledger.LayoutCitus
		if db.Citus() {
			want, other = ledger.LayoutCitus, ledger.LayoutSingle
		}
		var layout, fn string
		must(t, p.QueryRow(ctx, `select value, arkhe_layout() from ledger_setting where name = 'layout'`).Scan(&layout, &fn))
		if layout != string(want) || fn != string(want) {
			t.Errorf("layout %q, arkhe_layout() %q, want %s", layout, fn, want)
		}
		res, err := l.Init(ctx, want)
		must(t, err)
		if res.Layout != want || len(res.Applied) != 0 {
			t.Errorf("Init(%s) on a %s ledger: %+v", want, want, res)
		}
		var le *ledger.LayoutError
		if _, err := l.Init(ctx, other); !errors.As(err, &le) || le.Have != want {
			t.Errorf("Init(%s) on a %s ledger: %v, want a *LayoutError naming the %s layout", other, want, err, want)
		}
		if _, err := l.Init(ctx, "sharded"); !errors.As(err, &le) {
			t.Errorf("Init(sharded): %v, want a *LayoutError", err)
		}
		if db.Citus() {
			// registration tables are reference tables; ark, ark_change and the bulk change's
			// stage, verdicts and receipts are distributed by the ARK string and co-located; receipts by request ID; the counters by their key
			var got string
			must(t, p.QueryRow(ctx, `select string_agg(logicalrelid::text || ' ' || partmethod::text
					|| coalesce(' ' || column_to_column_name(logicalrelid, partkey), ''), ', ' order by logicalrelid::text)
				from pg_dist_partition`).Scan(&got))
			const dist = "ark h ark, ark_change h ark, ark_update_stage h ark, ark_update_verdict h ark, audit_event n, audit_summary n, client n, credential n, import_run n, " +
				"import_skipped h ark, key_session n, ledger_setting n, link_event h ark, link_exclusion n, link_state h ark, manager n, mint_one_tally h shoulder_id, mint_quota h manager_id, " +
				"naan n, receipt h request_id, shoulder n, shoulder_tally h shoulder_id, unknown_subject n, update_receipt h ark"
			if got != dist {
				t.Errorf("distribution:\n got %s\nwant %s", got, dist)
			}
			if n := count(t, p, `select count(distinct colocationid) from pg_dist_partition where logicalrelid in ('ark'::regclass, 'ark_change'::regclass, 'import_skipped'::regclass,
				'ark_update_stage'::regclass, 'ark_update_verdict'::regclass, 'update_receipt'::regclass)`); n != 1 {
				t.Errorf("ark, ark_change, import_skipped and the update's stage, verdicts and receipts in %d colocation groups, want 1", n)
			}
			// the shards spread over both workers, and their triggers are on every shard
			if n := count(t, p, `select count(distinct p.groupid) from pg_dist_shard s join pg_dist_placement p using (shardid)
				where s.logicalrelid = 'ark'::regclass`); n != 2 {
				t.Errorf("ark shards on %d nodes, want 2", n)
			}
			for i, u := range db.WorkerURLs {
				w, err := pgxpool.New(ctx, u)
				must(t, err)
				defer w.Close()
				// (Citus hides shards from pg_class, not their triggers from pg_trigger)
				if n := count(t, w, `select count(*) from pg_trigger where tgname ~ '^(ark_reach|ark_update|ark_no_delete)_[0-9]+$'`); n != 3*pgtest.CitusShardCount/2 {
					t.Errorf("worker %d: ark shard triggers = %d, want %d", i+1, n, 3*pgtest.CitusShardCount/2)
				}
			}
			// receipts are the receipt table's; no receipt index on ark
			if n := count(t, p, `select count(*) from pg_indexes where indexname = 'ark_receipt'`); n != 0 {
				t.Errorf("ark_receipt indexes = %d, want 0", n)
			}
			if n := count(t, p, `select count(*) from mint_receipt r join receipt using (client_pk, request_id)`); n != 1 {
				t.Errorf("mint_receipt rows read from receipt = %d, want 1", n)
			}
			return
		}
		// single: receipts are the ark row's, unique by the partial index; the view reads ark
		if n := count(t, p, `select count(*) from pg_indexes where indexname = 'ark_receipt'`); n != 1 {
			t.Errorf("ark_receipt indexes = %d, want 1", n)
		}
		if n := count(t, p, `select count(*) from mint_receipt r join ark a using (ark) where r.request_id = a.request_id`); n != 1 {
			t.Errorf("mint_receipt rows read from ark = %d, want 1", n)
		}
		// A new ledger in a schema of its own: citus needs the extension, single is recorded, and
		// the migration's setting does not outlive its transaction.
		conn, err := p.Acquire(ctx)
		must(t, err)
		defer conn.Release()
		_, err = conn.Exec(ctx, `create schema fresh; set search_path = fresh`)
		must(t, err)
		defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), `reset search_path`) }()
		if _, err := ledger.Migrate(ctx, conn.Conn(), ledger.LayoutCitus); !errors.As(err, &le) || le.Have != "" {
			t.Errorf("Migrate(citus) without the citus extension: %v, want a *LayoutError", err)
		}
		if n := count(t, p, `select count(*) from pg_tables where schemaname = 'fresh' and tablename <> 'schema_migration'`); n != 0 {
			t.Errorf("refused citus layout left %d tables", n)
		}
		res, err = ledger.Migrate(ctx, conn.Conn(), ledger.LayoutAuto)
		must(t, err)
		all, err := ledger.Migrations()
		must(t, err)
		if res.Layout != ledger.LayoutSingle || len(res.Applied) != len(all) {
			t.Errorf("Migrate(auto) of a new ledger: layout %q, %d applied", res.Layout, len(res.Applied))
		}
		var stored, setting string
		must(t, conn.QueryRow(ctx, `select value, coalesce(current_setting('arkhe.layout', true), '') from fresh.ledger_setting`).Scan(&stored, &setting))
		if stored != "single" || setting != "" {
			t.Errorf("stored layout %q, arkhe.layout after the migration %q, want single and unset", stored, setting)
		}
	})
}
