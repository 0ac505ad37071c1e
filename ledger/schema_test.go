package ledger_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// registered sets up NAAN 99999, manager m1 holding /x9 (its default) and /b5 (reserved),
// a machine client c1 (manager authority, ark:mint) and one minted ARK 99999/x9abc.
func registered(t *testing.T) (*ledger.Ledger, context.Context) {
	t.Helper()
	ctx := context.Background()
	l := &ledger.Ledger{Pool: pgtest.New(t)}
	must(t, firstErr(l.AddNAAN(ctx, ledger.NAAN{NAAN: "99999", Name: "test"})))
	must(t, firstErr(l.AddManager(ctx, ledger.Manager{NAAN: "99999", Name: "m1", CommitmentLevel: "Not Guaranteed"})))
	must(t, firstErr(l.AddShoulder(ctx, ledger.Shoulder{NAAN: "99999", Shoulder: "/x9", Manager: "m1"}, 0)))
	must(t, firstErr(l.AddShoulder(ctx, ledger.Shoulder{NAAN: "99999", Shoulder: "/b5", Manager: "m1", Status: "reserved"}, 0)))
	must(t, l.SetDefaultShoulder(ctx, "99999", "m1", "/x9"))
	must(t, l.AddClient(ctx, ledger.Client{ClientID: "c1", NAAN: "99999", Manager: "m1", Authority: "manager", Scopes: []string{"ark:mint"}}))
	// the receipt is the ark row's request_id and payload_digest
	exec(t, l.Pool, `insert into ark (ark, naan, shoulder_id, assigned_name, url, created_by, created_at, request_id, payload_digest)
		select '99999/x9abc', '99999', s.id, 'x9abc', 'https://example.org/a', c.id, now(), 'r1', '\x00112233445566778899aabbccddeeff'
		from shoulder s, client c where s.shoulder = '/x9' and c.client_id = 'c1'`)
	return l, ctx
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

func TestNothingIsDeleted(t *testing.T) {
	t.Parallel()
	l, ctx := registered(t)
	p := l.Pool
	must(t, l.AuditEvent(ctx, "c1", "manager", "mint", "99999/x9abc", nil))
	exec(t, p, `select ark_repoint('99999/x9abc', 'https://example.org/b', null, 'test')`)
	for _, table := range []string{"ark", "shoulder", "mint_receipt", "naan", "manager", "client", "ark_change", "audit_event"} {
		before := count(t, p, "select count(*) from "+table)
		if before == 0 {
			t.Fatalf("%s: no rows to protect", table)
		}
		// mint_receipt is a view of ark: a DELETE through it reaches ark_no_delete, and
		// PostgreSQL refuses TRUNCATE of a view (wrong_object_type)
		truncateCode := ledger.CodeDeleteRefused
		if table == "mint_receipt" {
			truncateCode = codeWrongObjectType
		}
		refused(t, p, ledger.CodeDeleteRefused, "delete from "+table)
		refused(t, p, truncateCode, "truncate "+table+" cascade")
		if after := count(t, p, "select count(*) from "+table); after != before {
			t.Errorf("%s: %d rows after refused delete, want %d", table, after, before)
		}
	}
	if n := count(t, p, "select count(*) from ark"); n != 1 {
		t.Errorf("ark rows = %d, want 1", n)
	}
	// the counters, the layout setting and the (single-layout: empty) receipt table
	exec(t, p, `insert into shoulder_tally (shoulder_id, draws, collisions) select id, 3, 1 from shoulder where shoulder = '/x9'`)
	exec(t, p, `insert into mint_quota (manager_id, day, minted) select id, current_date, 1 from manager where name = 'm1'`)
	for _, table := range []string{"shoulder_tally", "mint_quota", "ledger_setting", "receipt", "import_run", "credential", "audit_summary"} {
		before := count(t, p, "select count(*) from "+table)
		refused(t, p, ledger.CodeDeleteRefused, "delete from "+table)
		refused(t, p, ledger.CodeDeleteRefused, "truncate "+table+" cascade")
		if after := count(t, p, "select count(*) from "+table); after != before {
			t.Errorf("%s: %d rows after refused delete, want %d", table, after, before)
		}
	}
}

func TestAppendOnlyTables(t *testing.T) {
	t.Parallel()
	l, ctx := registered(t)
	p := l.Pool
	must(t, l.AuditEvent(ctx, "c1", "manager", "mint", "99999/x9abc", map[string]int{"minted": 1}))
	if _, err := p.Exec(ctx, `select ark_repoint('99999/x9abc', 'https://example.org/b', null, 'test')`); err != nil {
		t.Fatal(err)
	}
	refused(t, p, ledger.CodeUpdateRefused, `update ark_change set after_url = 'https://evil.example/'`)
	refused(t, p, ledger.CodeUpdateRefused, `update audit_event set action = 'nothing'`)
	refused(t, p, ledger.CodeUpdateRefused, `update ledger_setting set value = 'citus'`)
	refused(t, p, ledger.CodeUpdateRefused, `update receipt set ark = '99999/x9zzz'`)
	// through the view, the update reaches ark_update: ark and request_id are identity columns
	refused(t, p, ledger.CodeUpdateRefused, `update mint_receipt set ark = '99999/x9zzz'`)
	refused(t, p, ledger.CodeUpdateRefused, `update mint_receipt set request_id = 'r2'`)
	if n := count(t, p, `select count(*) from mint_receipt where request_id = 'r1' and ark = '99999/x9abc'`); n != 1 {
		t.Errorf("receipt r1 -> 99999/x9abc rows = %d, want 1", n)
	}
	if n := count(t, p, `select count(*) from ark_change where after_url = 'https://example.org/b'`); n != 1 {
		t.Errorf("ark_change rows for the repoint = %d, want 1", n)
	}
}

// codeWrongObjectType is PostgreSQL's SQLSTATE for TRUNCATE of a view.
const codeWrongObjectType = "42809"

// TestReceiptOnTheARKRow: one request ID of one client maps to one ARK (the ark_receipt partial
// index), a receipt is whole (request ID and a 16-octet digest, for a known client), imported ARKs
// carry none, and a receipt never changes.
func TestReceiptOnTheARKRow(t *testing.T) {
	t.Parallel()
	l, ctx := registered(t)
	p := l.Pool
	insert := func(name, requestID, digest string) string {
		return `insert into ark (ark, naan, shoulder_id, assigned_name, created_by, created_at, request_id, payload_digest)
			select '99999/` + name + `', '99999', s.id, '` + name + `', c.id, now(), ` + requestID + `, ` + digest + `
			from shoulder s, client c where s.shoulder = '/x9' and c.client_id = 'c1'`
	}
	const digest = `'\xffeeddccbbaa99887766554433221100'::bytea`
	// the same (client, request ID) twice
	refused(t, p, ledger.CodeUniqueViolation, insert("x9abd", `'r1'`, digest))
	// another request ID of the same client is fine; so is an ARK without a receipt
	exec(t, p, insert("x9abd", `'r2'`, digest))
	exec(t, p, insert("x9abf", `null`, `null`))
	// half a receipt, a digest of the wrong length
	refused(t, p, ledger.CodeCheckViolation, insert("x9abg", `'r3'`, `null`))
	refused(t, p, ledger.CodeCheckViolation, insert("x9abg", `null`, digest))
	refused(t, p, ledger.CodeCheckViolation, insert("x9abg", `'r3'`, `'\x0011'::bytea`))
	// a receipt needs its client
	exec(t, p, `insert into import_run (source_file, format) values ('t.csv', 'csv')`)
	refused(t, p, ledger.CodeCheckViolation, `insert into ark (ark, naan, shoulder_id, assigned_name, import_run_id, request_id, payload_digest)
		select '99999/x9abh', '99999', s.id, 'x9abh', r.id, 'r4', `+digest+` from shoulder s, import_run r where s.shoulder = '/x9'`)
	// a receipt never changes
	refused(t, p, ledger.CodeUpdateRefused, `update ark set request_id = 'r9' where ark = '99999/x9abc'`)
	refused(t, p, ledger.CodeUpdateRefused, `update ark set payload_digest = `+digest+` where ark = '99999/x9abc'`)
	refused(t, p, ledger.CodeUpdateRefused, `update ark set request_id = null, payload_digest = null where ark = '99999/x9abc'`)
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
}

func TestShoulderPromises(t *testing.T) {
	t.Parallel()
	l, ctx := registered(t)
	p := l.Pool
	// retired is one-way
	changed, err := l.RetireShoulder(ctx, "99999", "/x9")
	must(t, err)
	if !changed {
		t.Fatal("retire /x9: not changed")
	}
	for _, status := range []string{"active", "reserved", "delegated"} {
		refused(t, p, ledger.CodeRetiredOneWay, `update shoulder set status = $1, retired_at = null where shoulder = '/x9'`, status)
	}
	// only a first-digit shoulder may be active
	refused(t, p, ledger.CodeCheckViolation, `insert into shoulder (naan, shoulder, status) values ('99999', '/dsp01', 'active')`)
	exec(t, p, `insert into shoulder (naan, shoulder, status) values ('99999', '/dsp01', 'reserved')`)
	refused(t, p, ledger.CodeCheckViolation, `update shoulder set status = 'active' where shoulder = '/dsp01'`)
	// unique per NAAN
	refused(t, p, ledger.CodeUniqueViolation, `insert into shoulder (naan, shoulder, status) values ('99999', '/b5', 'reserved')`)
	// a shoulder's NAAN matches its manager's
	exec(t, p, `insert into naan (naan, name) values ('12345', 'examples')`)
	refused(t, p, ledger.CodeForeignKeyViolation, `insert into shoulder (naan, shoulder, manager_id) select '12345', '/q7', id from manager where name = 'm1'`)
	// the shoulder string never changes
	refused(t, p, ledger.CodeUpdateRefused, `update shoulder set shoulder = '/b6' where shoulder = '/b5'`)
}

func TestDefaultShoulderCycle(t *testing.T) {
	t.Parallel()
	l, ctx := registered(t)
	p := l.Pool
	// created after both tables, by ALTER TABLE: the constraint exists and points at shoulder
	if n := count(t, p, `select count(*) from pg_constraint where conname = 'manager_default_shoulder_fk' and confrelid = 'shoulder'::regclass`); n != 1 {
		t.Fatalf("manager_default_shoulder_fk constraints = %d, want 1", n)
	}
	// a manager's default shoulder must be one it holds
	must(t, firstErr(l.AddManager(ctx, ledger.Manager{NAAN: "99999", Name: "m2"})))
	refused(t, p, ledger.CodeForeignKeyViolation, `update manager set default_shoulder_id = (select id from shoulder where shoulder = '/x9') where name = 'm2'`)
}

func TestARKInsertOnlyAndRepointPath(t *testing.T) {
	t.Parallel()
	l, ctx := registered(t)
	p := l.Pool
	// minting never becomes an update
	refused(t, p, ledger.CodeUpdateRefused, `insert into ark (ark, naan, shoulder_id, assigned_name, url, created_by, created_at)
		select '99999/x9abc', '99999', s.id, 'x9abc', 'https://evil.example/', c.id, now() from shoulder s, client c
		where s.shoulder = '/x9' and c.client_id = 'c1'
		on conflict (ark) do update set url = excluded.url`)
	// a plain insert of an existing key is a unique violation
	refused(t, p, ledger.CodeUniqueViolation, `insert into ark (ark, naan, shoulder_id, assigned_name, url, created_by, created_at)
		select '99999/x9abc', '99999', s.id, 'x9abc', 'https://evil.example/', c.id, now() from shoulder s, client c
		where s.shoulder = '/x9' and c.client_id = 'c1'`)
	// a bare UPDATE is refused; identity columns never change
	refused(t, p, ledger.CodeUpdateRefused, `update ark set url = 'https://evil.example/'`)
	refused(t, p, ledger.CodeUpdateRefused, `update ark set erc_what = 'renamed'`)
	refused(t, p, ledger.CodeUpdateRefused, `update ark set ark = '99999/x9abd', assigned_name = 'x9abd'`)
	// a change row for another URL does not open the door (one implicit transaction)
	refused(t, p, ledger.CodeUpdateRefused, `insert into ark_change (ark, seq, at, action, before_url, after_url, before_status, after_status)
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
	must(t, p.QueryRow(ctx, `select ark_tombstone('99999/x9abc', 'withdrawn by owner', null, 'test')`).Scan(&ok))
	var status, reason string
	must(t, p.QueryRow(ctx, `select status, tombstone_reason from ark`).Scan(&status, &reason))
	if status != "unavailable" || reason != "withdrawn by owner" {
		t.Errorf("after tombstone: %s %q", status, reason)
	}
	if n := count(t, p, `select count(*) from ark_change`); n != 2 {
		t.Errorf("ark_change rows = %d, want 2", n)
	}
}

func TestMintReachInTheDatabase(t *testing.T) {
	t.Parallel()
	l, ctx := registered(t)
	p := l.Pool
	insert := func(name, shoulder, client string) string {
		return `insert into ark (ark, naan, shoulder_id, assigned_name, created_by, created_at)
			select '99999/` + name + `', '99999', s.id, '` + name + `', c.id, now() from shoulder s, client c
			where s.shoulder = '` + shoulder + `' and c.client_id = '` + client + `'`
	}
	// a reserved shoulder never mints
	refused(t, p, ledger.CodeReachRefused, insert("b5aaa", "/b5", "c1"))
	// a client without ark:mint
	must(t, l.AddClient(ctx, ledger.Client{ClientID: "reader", NAAN: "99999", Manager: "m1", Authority: "manager", Scopes: []string{"ark:read"}}))
	refused(t, p, ledger.CodeReachRefused, insert("x9aaa", "/x9", "reader"))
	// a client of another manager
	must(t, firstErr(l.AddManager(ctx, ledger.Manager{NAAN: "99999", Name: "m2"})))
	must(t, firstErr(l.AddShoulder(ctx, ledger.Shoulder{NAAN: "99999", Shoulder: "/q7", Manager: "m2"}, 0)))
	refused(t, p, ledger.CodeReachRefused, insert("q7aaa", "/q7", "c1"))
	// an inactive or expired client
	exec(t, p, `update client set active = false where client_id = 'reader'`)
	must(t, l.AddClient(ctx, ledger.Client{ClientID: "old", NAAN: "99999", Authority: "naan", Scopes: []string{"ark:mint"}, ExpiresAt: ptr(time.Now().Add(-time.Hour))}))
	refused(t, p, ledger.CodeReachRefused, insert("x9aab", "/x9", "old"))
	// a retired shoulder
	_, err := l.RetireShoulder(ctx, "99999", "/x9")
	must(t, err)
	refused(t, p, ledger.CodeReachRefused, insert("x9aac", "/x9", "c1"))
	if n := count(t, p, `select count(*) from ark`); n != 1 {
		t.Errorf("ark rows = %d, want 1", n)
	}
}

func ptr[T any](v T) *T { return &v }

func TestClientReachIsARegistrationAttribute(t *testing.T) {
	t.Parallel()
	l, ctx := registered(t)
	p := l.Pool
	refused(t, p, ledger.CodeReachRefused, `update client set allowed_scopes = '{ark:mint,ark:update}' where client_id = 'c1'`)
	refused(t, p, ledger.CodeReachRefused, `update client set authority = 'naan', expires_at = now() + interval '1 day' where client_id = 'c1'`)
	refused(t, p, ledger.CodeReachRefused, `update client set manager_id = null where client_id = 'c1'`)
	// narrowing is allowed
	exec(t, p, `update client set allowed_scopes = '{}' where client_id = 'c1'`)
	// expires_at is required for authority naan
	err := l.AddClient(ctx, ledger.Client{ClientID: "wide", NAAN: "99999", Authority: "naan", Scopes: []string{"ark:mint"}})
	if ledger.SQLState(err) != ledger.CodeCheckViolation {
		t.Fatalf("naan authority without expiry: %v, want %s", err, ledger.CodeCheckViolation)
	}
	// machines hold no password, persons no API key
	must(t, l.AddClient(ctx, ledger.Client{ClientID: "alice", NAAN: "99999", Manager: "m1", Authority: "manager", SubjectType: "person"}))
	refused(t, p, ledger.CodeCredentialFit, `insert into credential (client_pk, kind, prefix, hashed) select id, 'password', 'p1', '$argon2id$x' from client where client_id = 'c1'`)
	refused(t, p, ledger.CodeCredentialFit, `insert into credential (client_pk, kind, prefix, hashed) select id, 'api_key', 'k1', '$argon2id$x' from client where client_id = 'alice'`)
	exec(t, p, `insert into credential (client_pk, kind, prefix, hashed) select id, 'api_key', 'k2', '$argon2id$x' from client where client_id = 'c1'`)
	exec(t, p, `insert into credential (client_pk, kind, prefix, hashed) select id, 'password', 'p2', '$argon2id$x' from client where client_id = 'alice'`)
}

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	l, ctx := registered(t)
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
}

func TestIdentityColumnsAreCollateC(t *testing.T) {
	t.Parallel()
	l, _ := registered(t)
	rows, err := l.Pool.Query(t.Context(), `select table_name || '.' || column_name, coalesce(collation_name, '')
		from information_schema.columns where table_schema = 'public'
		and column_name in ('ark', 'naan', 'assigned_name', 'shoulder', 'client_id', 'request_id', 'original')`)
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
}

func TestInternalKeysStartHigh(t *testing.T) {
	t.Parallel()
	l, _ := registered(t)
	var id int64
	must(t, l.Pool.QueryRow(t.Context(), `select id from client where client_id = 'c1'`).Scan(&id))
	if id < 7_000_000_000_001 {
		t.Errorf("client id %d: test sequences must start at 7,000,000,000,001", id)
	}
}

// TestRepointProof: an UPDATE of ark passes only with change_seq raised by exactly one and the
// ARK_CHANGE row of that number describing the new target and status; the repoint path writes
// both, and an ARK's history is numbered from 1 in the order it was made.
func TestRepointProof(t *testing.T) {
	t.Parallel()
	l, ctx := registered(t)
	p := l.Pool
	const key = "99999/x9abc"
	// the ARK_CHANGE row, but change_seq not raised
	refused(t, p, ledger.CodeUpdateRefused, `insert into ark_change (ark, seq, at, action, before_url, after_url, before_status, after_status)
		values ('99999/x9abc', 1, now(), 'update', 'https://example.org/a', 'https://example.org/b', 'public', 'public');
		update ark set url = 'https://example.org/b' where ark = '99999/x9abc'`)
	// change_seq raised, but no ARK_CHANGE row
	refused(t, p, ledger.CodeUpdateRefused, `update ark set url = 'https://example.org/b', change_seq = change_seq + 1 where ark = '99999/x9abc'`)
	// change_seq raised by two, with a row numbered 2
	refused(t, p, ledger.CodeUpdateRefused, `insert into ark_change (ark, seq, at, action, before_url, after_url, before_status, after_status)
		values ('99999/x9abc', 2, now(), 'update', 'https://example.org/a', 'https://example.org/b', 'public', 'public');
		update ark set url = 'https://example.org/b', change_seq = change_seq + 2 where ark = '99999/x9abc'`)
	// the row describes another status
	refused(t, p, ledger.CodeUpdateRefused, `insert into ark_change (ark, seq, at, action, before_url, after_url, before_status, after_status)
		values ('99999/x9abc', 1, now(), 'update', 'https://example.org/a', 'https://example.org/b', 'public', 'reserved');
		update ark set url = 'https://example.org/b', change_seq = change_seq + 1 where ark = '99999/x9abc'`)
	// the row is another ARK's
	exec(t, p, `insert into ark (ark, naan, shoulder_id, assigned_name, url, created_by, created_at)
		select '99999/x9abd', '99999', s.id, 'x9abd', 'https://example.org/a', c.id, now()
		from shoulder s, client c where s.shoulder = '/x9' and c.client_id = 'c1'`)
	refused(t, p, ledger.CodeUpdateRefused, `insert into ark_change (ark, seq, at, action, before_url, after_url, before_status, after_status)
		values ('99999/x9abd', 1, now(), 'update', 'https://example.org/a', 'https://example.org/b', 'public', 'public');
		update ark set url = 'https://example.org/b', change_seq = change_seq + 1 where ark = '99999/x9abc'`)
	// minting never becomes an update
	refused(t, p, ledger.CodeUpdateRefused, `insert into ark (ark, naan, shoulder_id, assigned_name, url, created_by, created_at)
		select '99999/x9abc', '99999', s.id, 'x9abc', 'https://evil.example/', c.id, now() from shoulder s, client c
		where s.shoulder = '/x9' and c.client_id = 'c1'
		on conflict (ark) do update set url = excluded.url`)
	if n := count(t, p, `select count(*) from ark_change`); n != 0 {
		t.Fatalf("ark_change rows after refused updates = %d, want 0", n)
	}
	if n := count(t, p, `select count(*) from ark where url = 'https://example.org/a' and change_seq = 0`); n != 2 {
		t.Fatalf("ARKs unchanged = %d, want 2", n)
	}
	// the repoint path: two repoints and a tombstone, numbered 1, 2, 3
	exec(t, p, `select ark_repoint('99999/x9abc', 'https://example.org/b', null, 'first')`)
	exec(t, p, `select ark_repoint('99999/x9abc', 'https://example.org/c', null, 'second')`)
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
	refused(t, p, ledger.CodeUniqueViolation, `insert into ark_change (ark, seq, at, action, after_url, after_status)
		values ('99999/x9abc', 2, now(), 'update', 'https://example.org/x', 'public')`)
}

// TestReachGroupsOfOneCOPY: the reach trigger checks each (shoulder, client) group of a
// statement; one group out of reach refuses the whole COPY, groups within reach land.
func TestReachGroupsOfOneCOPY(t *testing.T) {
	t.Parallel()
	l, ctx := registered(t)
	p := l.Pool
	must(t, firstErr(l.AddManager(ctx, ledger.Manager{NAAN: "99999", Name: "m2"})))
	must(t, firstErr(l.AddShoulder(ctx, ledger.Shoulder{NAAN: "99999", Shoulder: "/q7", Manager: "m2"}, 0)))
	must(t, l.AddClient(ctx, ledger.Client{ClientID: "c2", NAAN: "99999", Manager: "m2", Authority: "manager", Scopes: []string{"ark:mint"}}))
	ids := map[string]int64{}
	for _, q := range []string{`select 's' || shoulder, id from shoulder`, `select 'c' || client_id, id from client`} {
		rows, err := p.Query(ctx, q)
		must(t, err)
		for rows.Next() {
			var k string
			var id int64
			must(t, rows.Scan(&k, &id))
			ids[k] = id
		}
		must(t, rows.Err())
	}
	cols := []string{"ark", "naan", "shoulder_id", "assigned_name", "created_by", "created_at"}
	row := func(name, shoulder, client string) []any {
		return []any{"99999/" + name, "99999", ids["s"+shoulder], name, ids["c"+client], time.Now()}
	}
	copyRows := func(rows ...[]any) error {
		tx, err := p.Begin(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"ark"}, cols, pgx.CopyFromRows(rows)); err != nil {
			return err
		}
		return tx.Commit(ctx)
	}
	// two groups: c1 in /x9 (its manager's) and c1 in /q7 (another manager's): refused whole
	err := copyRows(row("x9aaa", "/x9", "c1"), row("x9aab", "/x9", "c1"), row("q7aaa", "/q7", "c1"), row("x9aac", "/x9", "c1"))
	if ledger.SQLState(err) != ledger.CodeReachRefused {
		t.Fatalf("COPY with a group out of reach: %v, want %s", err, ledger.CodeReachRefused)
	}
	// the same by INSERT
	refused(t, p, ledger.CodeReachRefused, `insert into ark (ark, naan, shoulder_id, assigned_name, created_by, created_at)
		select '99999/' || substr(s.shoulder, 2) || 'b', '99999', s.id, substr(s.shoulder, 2) || 'b', c.id, now()
		from shoulder s, client c where s.shoulder in ('/x9', '/q7') and c.client_id = 'c2'`)
	if n := count(t, p, `select count(*) from ark`); n != 1 {
		t.Fatalf("ark rows after refused COPY = %d, want 1", n)
	}
	// a manager client never reaches a shoulder without a manager
	exec(t, p, `insert into shoulder (naan, shoulder) values ('99999', '/n4')`)
	refused(t, p, ledger.CodeReachRefused, `insert into ark (ark, naan, shoulder_id, assigned_name, created_by, created_at)
		select '99999/n4aaa', '99999', s.id, 'n4aaa', c.id, now() from shoulder s, client c where s.shoulder = '/n4' and c.client_id = 'c1'`)
	// two groups within reach: both land
	must(t, copyRows(row("x9aaa", "/x9", "c1"), row("q7aaa", "/q7", "c2"), row("x9aab", "/x9", "c1"), row("q7aab", "/q7", "c2")))
	if n := count(t, p, `select count(*) from ark`); n != 5 {
		t.Errorf("ark rows after the COPY within reach = %d, want 5", n)
	}
}

// TestLayout: a ledger on a server without the citus extension is created with the single layout,
// recorded in ledger_setting; it never changes, and the citus layout needs the extension.
func TestLayout(t *testing.T) {
	t.Parallel()
	l, ctx := registered(t)
	p := l.Pool
	var layout, fn string
	must(t, p.QueryRow(ctx, `select value, arkhe_layout() from ledger_setting where name = 'layout'`).Scan(&layout, &fn))
	if layout != "single" || fn != "single" {
		t.Errorf("layout %q, arkhe_layout() %q, want single", layout, fn)
	}
	// single: receipts are the ark row's, unique by the partial index; the view reads ark
	if n := count(t, p, `select count(*) from pg_indexes where indexname = 'ark_receipt'`); n != 1 {
		t.Errorf("ark_receipt indexes = %d, want 1", n)
	}
	if n := count(t, p, `select count(*) from mint_receipt r join ark a using (ark) where r.request_id = a.request_id`); n != 1 {
		t.Errorf("mint_receipt rows read from ark = %d, want 1", n)
	}
	res, err := l.Init(ctx, ledger.LayoutSingle)
	must(t, err)
	if res.Layout != ledger.LayoutSingle || len(res.Applied) != 0 {
		t.Errorf("Init(single) on a single ledger: %+v", res)
	}
	var le *ledger.LayoutError
	if _, err := l.Init(ctx, ledger.LayoutCitus); !errors.As(err, &le) || le.Have != ledger.LayoutSingle {
		t.Errorf("Init(citus) on a single ledger: %v, want a *LayoutError naming the single layout", err)
	}
	if _, err := l.Init(ctx, "sharded"); !errors.As(err, &le) {
		t.Errorf("Init(sharded): %v, want a *LayoutError", err)
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
}
