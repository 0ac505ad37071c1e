package ledger_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// roleLedger is a test ledger with roles. Roles are cluster-wide: their names start with the
// test database's name, so tests cannot meet, and they are dropped when the test passes.
type roleLedger struct {
	l      *ledger.Ledger // as the cluster's superuser
	url    string
	prefix string
	roles  ledger.Roles
	logins []string
}

// newRoleLedger migrates t's database (pgtest's template) and runs InitRoles on it.
func newRoleLedger(t *testing.T) *roleLedger {
	t.Helper()
	u := pgtest.URL(t)
	pool := pgtest.New(t)
	var db string
	if err := pool.QueryRow(context.Background(), `select current_database()`).Scan(&db); err != nil {
		t.Fatal(err)
	}
	r := &roleLedger{l: &ledger.Ledger{Pool: pool}, url: u, prefix: db + "_"}
	t.Cleanup(func() { r.drop(t) }) // runs before pgtest drops the database, after the pools close
	res, err := r.l.InitRoles(context.Background(), r.prefix)
	if err != nil {
		t.Fatal(err)
	}
	r.roles = res.Roles
	if len(res.Created) != len(ledger.RoleKinds()) {
		t.Fatalf("InitRoles created %v, want the %d roles", res.Created, len(ledger.RoleKinds()))
	}
	return r
}

// login creates login role prefix+name, a member of the given roles, and returns a ledger
// connected as it over the same socket (trust authentication on the throw-away cluster).
func (r *roleLedger) login(t *testing.T, name string, memberOf ...string) *ledger.Ledger {
	t.Helper()
	role := r.prefix + name
	q := "create role " + pgx.Identifier{role}.Sanitize() + " login"
	if len(memberOf) > 0 {
		ids := make([]string, len(memberOf))
		for i, m := range memberOf {
			ids[i] = pgx.Identifier{m}.Sanitize()
		}
		q += " in role " + strings.Join(ids, ", ")
	}
	if _, err := r.l.Pool.Exec(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	r.logins = append(r.logins, role)
	u, err := pgtest.AsRole(r.url, role)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(context.Background(), u, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// drop removes the test's roles from the cluster when the test passed (a failed test keeps its
// database, and the roles that own it).
func (r *roleLedger) drop(t *testing.T) {
	if t.Failed() {
		return
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, r.url)
	if err != nil {
		t.Errorf("drop roles: %v", err)
		return
	}
	defer conn.Close(ctx)
	all := append([]string{r.roles.Owner, r.roles.Operator, r.roles.Writer, r.roles.Auditor, r.roles.Resolver}, r.logins...)
	ids := make([]string, len(all))
	for i, n := range all {
		ids[i] = pgx.Identifier{n}.Sanitize()
	}
	for _, q := range []string{
		"reassign owned by " + ids[0] + " to current_user",
		"drop owned by " + strings.Join(ids, ", "),
		"drop role " + strings.Join(ids, ", "),
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Errorf("drop roles: %s: %v", q, err)
			return
		}
	}
}

// refusedAs runs sql on pool and asserts the database refuses it with SQLSTATE code.
func refusedAs(t *testing.T, who string, pool *pgxpool.Pool, code, sql string, args ...any) {
	t.Helper()
	_, err := pool.Exec(context.Background(), sql, args...)
	if got := ledger.SQLState(err); got != code {
		t.Errorf("as %s: %s: SQLSTATE %q (%v), want %s", who, sql, got, err, code)
	}
}

// acceptedAs runs sql on pool and fails the test on an error.
func acceptedAs(t *testing.T, who string, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
		t.Errorf("as %s: %s: %v", who, sql, err)
	}
}

// mintRowSQL inserts one minted ARK 99999/<name> in /x9 as client $1 with request ID $2.
const mintRowSQL = `insert into ark (ark, naan, shoulder_id, assigned_name, url, created_by, created_at, request_id, payload_digest)
	select '99999/' || $2::text, '99999', s.id, $2::text, 'https://example.org/' || $2::text, c.id, now(), $2::text, '\x00112233445566778899aabbccddeeff'
	from shoulder s, client c where s.naan = '99999' and s.shoulder = '/x9' and c.client_id = $1`

// TestRolesPlainSQL is the trust boundary in plain SQL: what each role cannot do, with the
// SQLSTATE the database answers, and what a client bound to a login role allows.
func TestRolesPlainSQL(t *testing.T) {
	t.Parallel()
	r := newRoleLedger(t)
	ctx := context.Background()
	su := r.l
	must(t, firstErr(su.AddNAAN(ctx, ledger.NAAN{NAAN: "99999", Name: "test"})))
	must(t, firstErr(su.AddManager(ctx, ledger.Manager{NAAN: "99999", Name: "m1"})))
	must(t, firstErr(su.AddManager(ctx, ledger.Manager{NAAN: "99999", Name: "m2"})))
	must(t, firstErr(su.AddShoulder(ctx, ledger.Shoulder{NAAN: "99999", Shoulder: "/x9", Manager: "m1"}, 0)))
	must(t, firstErr(su.AddShoulder(ctx, ledger.Shoulder{NAAN: "99999", Shoulder: "/b5", Manager: "m2"}, 0)))
	writerA := r.login(t, "wa", r.roles.Writer)
	writerB := r.login(t, "wb", r.roles.Writer)
	operator := r.login(t, "op", r.roles.Operator)
	auditor := r.login(t, "au", r.roles.Auditor)
	owner := r.login(t, "own", r.roles.Owner)
	scopes := []string{"ark:mint", "ark:update"}
	must(t, su.AddClient(ctx, ledger.Client{ClientID: "ca", NAAN: "99999", Manager: "m1", Authority: "manager", Scopes: scopes, DBRole: r.prefix + "wa"}))
	must(t, su.AddClient(ctx, ledger.Client{ClientID: "cb", NAAN: "99999", Manager: "m1", Authority: "manager", Scopes: scopes, DBRole: r.prefix + "wb"}))
	must(t, su.AddClient(ctx, ledger.Client{ClientID: "free", NAAN: "99999", Manager: "m1", Authority: "manager", Scopes: scopes}))
	must(t, su.AddClient(ctx, ledger.Client{ClientID: "other", NAAN: "99999", Manager: "m2", Authority: "manager", Scopes: scopes}))
	err := su.AddClient(ctx, ledger.Client{ClientID: "ghost", NAAN: "99999", Manager: "m1", Authority: "manager", Scopes: scopes, DBRole: r.prefix + "nobody"})
	var re *ledger.RegistrationError
	if !errors.As(err, &re) || ledger.SQLState(err) != ledger.CodeUndefinedObject {
		t.Errorf("client bound to a role that does not exist: %v, want a RegistrationError 42704", err)
	}
	w, wb, op, au := writerA.Pool, writerB.Pool, operator.Pool, auditor.Pool

	// the writer: no DELETE, TRUNCATE, ALTER, trigger control, direct UPDATE of ark, history
	// rows of its own, key hashes, DDL, or silencing the triggers
	acceptedAs(t, "writer A", w, mintRowSQL, "ca", "x9aaa")
	refusedAs(t, "writer", w, ledger.CodeInsufficientPrivilege, `delete from ark`)
	refusedAs(t, "writer", w, ledger.CodeInsufficientPrivilege, `truncate ark`)
	refusedAs(t, "writer", w, ledger.CodeInsufficientPrivilege, `alter table ark disable trigger ark_update`)
	refusedAs(t, "writer", w, ledger.CodeInsufficientPrivilege, `alter table ark disable trigger all`)
	refusedAs(t, "writer", w, ledger.CodeInsufficientPrivilege, `update ark set url = 'https://evil.example/'`)
	refusedAs(t, "writer", w, ledger.CodeInsufficientPrivilege, `insert into ark_change (ark, seq, action) values ('99999/x9aaa', 1, 'update')`)
	refusedAs(t, "writer", w, ledger.CodeInsufficientPrivilege, `update client set allowed_scopes = '{ark:mint,ark:update,ark:tombstone}' where client_id = 'ca'`)
	refusedAs(t, "writer", w, ledger.CodeInsufficientPrivilege, `select hashed from credential`)
	refusedAs(t, "writer", w, ledger.CodeInsufficientPrivilege, `create table mine (i int)`)
	refusedAs(t, "writer", w, ledger.CodeInsufficientPrivilege, `set session_replication_role = replica`)
	refusedAs(t, "writer", w, ledger.CodeInsufficientPrivilege, `insert into manager (naan, name) values ('99999', 'm3')`)
	// the counters a writer upserts only rise
	acceptedAs(t, "writer", w, `insert into mint_quota (manager_id, day, minted) select id, current_date, 5 from manager where name = 'm1'`)
	acceptedAs(t, "writer", w, `insert into shoulder_tally (shoulder_id, draws, collisions) select id, 7, 1 from shoulder where shoulder = '/x9'`)
	refusedAs(t, "writer", w, ledger.CodeUpdateRefused, `update mint_quota set minted = 0`)
	refusedAs(t, "writer", w, ledger.CodeUpdateRefused, `update shoulder_tally set draws = draws - 1`)
	refusedAs(t, "writer", w, ledger.CodeUpdateRefused, `update mint_quota set day = day + 1`)
	acceptedAs(t, "writer", w, `update shoulder_tally set draws = draws + 2, collisions = collisions + 1`)
	var run int64
	must(t, w.QueryRow(ctx, `insert into import_run (source_file, format) values ('f', 'ezid-anvl') returning id`).Scan(&run))
	acceptedAs(t, "writer", w, `update import_run set finished_at = now(), counts = '{"imported": 1}' where id = $1`, run)
	refusedAs(t, "writer", w, ledger.CodeUpdateRefused, `update import_run set counts = '{"imported": 0}' where id = $1`, run)

	// a client bound to a login role: another writer cannot mint, repoint or tombstone as it
	refusedAs(t, "writer B", wb, ledger.CodeRoleBinding, mintRowSQL, "ca", "x9bbb")
	acceptedAs(t, "writer B", wb, mintRowSQL, "cb", "x9ccc")
	acceptedAs(t, "writer B", wb, mintRowSQL, "free", "x9ddd") // an unbound client: any writer
	refusedAs(t, "writer B", wb, ledger.CodeRoleBinding, `select ark_repoint('99999/x9aaa', 'https://example.org/b', (select id from client where client_id = 'ca'), 'test')`)
	// the database checks reach and scopes of a repoint and a tombstone itself
	acceptedAs(t, "writer A", w, `select ark_repoint('99999/x9aaa', 'https://example.org/moved', (select id from client where client_id = 'ca'), 'test')`)
	refusedAs(t, "writer A", w, ledger.CodeReachRefused, `select ark_tombstone('99999/x9aaa', 'gone', (select id from client where client_id = 'ca'), 'test')`)                    // no ark:tombstone scope
	refusedAs(t, "writer B", wb, ledger.CodeReachRefused, `select ark_repoint('99999/x9ddd', 'https://example.org/e', (select id from client where client_id = 'other'), 'test')`) // manager m2 does not hold /x9
	refusedAs(t, "writer", w, ledger.CodeReachRefused, `select ark_repoint('99999/x9aaa', 'https://example.org/f', null, 'test')`)                                                 // no client: operators only
	refusedAs(t, "writer", w, ledger.CodeReachRefused, `insert into ark (ark, naan, shoulder_id, assigned_name, created_by, created_at)
		select '99999/b5zzz', '99999', s.id, 'b5zzz', c.id, now() from shoulder s, client c where s.shoulder = '/b5' and c.client_id = 'free'`)
	if n := count(t, su.Pool, `select count(*) from ark_change where ark = '99999/x9aaa'`); n != 1 {
		t.Errorf("ark_change rows for 99999/x9aaa: %d, want the one repoint", n)
	}

	// the auditor reads everything but the key hashes and appends only its own records
	refusedAs(t, "auditor", au, ledger.CodeInsufficientPrivilege, `insert into ark (ark, naan, shoulder_id, assigned_name) values ('99999/x9eee', '99999', 1, 'x9eee')`)
	refusedAs(t, "auditor", au, ledger.CodeInsufficientPrivilege, `update audit_event set action = 'nothing'`)
	refusedAs(t, "auditor", au, ledger.CodeInsufficientPrivilege, `delete from audit_event`)
	refusedAs(t, "auditor", au, ledger.CodeInsufficientPrivilege, `select ark_repoint('99999/x9aaa', 'https://example.org/g', null, 'test')`)
	acceptedAs(t, "auditor", au, `insert into audit_event (action, target, db_role, at) values ('verify', 'ledger', 'postgres', '2001-01-01')`)
	var role string
	var old bool
	must(t, su.Pool.QueryRow(ctx, `select db_role, at < '2020-01-01' from audit_event where action = 'verify' order by id desc limit 1`).Scan(&role, &old))
	if role != r.prefix+"au" || old {
		t.Errorf("auditor's record: db_role %q, backdated %t; want its own login role %s and now()", role, old, r.prefix+"au")
	}
	if n := count(t, au, `select count(*) from ark`); n != 3 {
		t.Errorf("auditor reads %d ARKs, want 3", n)
	}

	// the operator registers and alone widens a client's reach; the superuser is no operator
	refusedAs(t, "operator", op, ledger.CodeInsufficientPrivilege, `delete from client`)
	refusedAs(t, "operator", op, ledger.CodeInsufficientPrivilege, `insert into ark (ark, naan, shoulder_id, assigned_name) values ('99999/x9fff', '99999', 1, 'x9fff')`)
	// the owner may update the table it owns, but widening is the operator's decision
	refusedAs(t, "owner", owner.Pool, ledger.CodeReachRefused, `update client set allowed_scopes = '{ark:mint,ark:update,ark:tombstone}' where client_id = 'ca'`)
	acceptedAs(t, "operator", op, `update client set allowed_scopes = '{ark:mint,ark:update,ark:tombstone}' where client_id = 'ca'`)
	acceptedAs(t, "writer A", w, `select ark_tombstone('99999/x9aaa', 'gone', (select id from client where client_id = 'ca'), 'test')`)
	acceptedAs(t, "operator", op, `update client set db_role = null where client_id = 'cb'`) // unbinding widens: operator only
	var before, after []string
	must(t, su.Pool.QueryRow(ctx, `select array(select jsonb_array_elements_text(detail->'before'->'allowed_scopes')),
		array(select jsonb_array_elements_text(detail->'after'->'allowed_scopes')), db_role
		from audit_event where action = 'client.set' and target = 'ca'`).Scan(&before, &after, &role))
	if strings.Join(before, " ") != "ark:mint ark:update" || strings.Join(after, " ") != "ark:mint ark:update ark:tombstone" || role != r.prefix+"op" {
		t.Errorf("client.set event: before %v after %v by %q", before, after, role)
	}

	// the owner runs init: migrations (none pending) and the grants, as itself
	if _, err := owner.Init(ctx, ledger.LayoutAuto); err != nil {
		t.Errorf("init as a member of the owner role: %v", err)
	}
	if _, err := writerA.Init(ctx, ledger.LayoutAuto); err == nil {
		t.Errorf("init as a writer: accepted")
	}
	// the writer's change path left its trace, naming the writer's login role
	var detail []byte
	must(t, su.Pool.QueryRow(ctx, `select db_role, detail from audit_event where action = 'ark.repoint' and target = 'ark:99999/x9aaa'`).Scan(&role, &detail))
	var d struct {
		Before, After struct{ URL string }
	}
	must(t, json.Unmarshal(detail, &d))
	if role != r.prefix+"wa" || d.Before.URL != "https://example.org/x9aaa" || d.After.URL != "https://example.org/moved" {
		t.Errorf("ark.repoint event: role %q detail %s", role, detail)
	}
}

// TestRolesImportRegistration: a writer's import may create NAANs and reserved shoulders for the
// ARKs it brings and fill empty values, never register otherwise or change a registered value.
func TestRolesImportRegistration(t *testing.T) {
	t.Parallel()
	r := newRoleLedger(t)
	ctx := context.Background()
	must(t, firstErr(r.l.AddNAAN(ctx, ledger.NAAN{NAAN: "12345", Name: "registered"})))
	w := r.login(t, "w", r.roles.Writer).Pool
	var run int64
	must(t, w.QueryRow(ctx, `insert into import_run (source_file, format) values ('f', 'ezid-anvl') returning id`).Scan(&run))
	refusedAs(t, "writer", w, ledger.CodeInsufficientPrivilege, `insert into naan (naan) values ('54321')`)
	acceptedAs(t, "writer", w, `insert into naan (naan, import_run_id) values ('54321', $1)`, run)
	refusedAs(t, "writer", w, ledger.CodeInsufficientPrivilege, `insert into shoulder (naan, shoulder, status, import_run_id) values ('54321', '/q1', 'active', $1)`, run)
	acceptedAs(t, "writer", w, `insert into shoulder (naan, shoulder, status, check_zone, import_run_id) values ('54321', '/dsp01', 'reserved', 'none', $1)`, run)
	acceptedAs(t, "writer", w, `update naan set name = coalesce(name, 'filled') where naan = '54321'`)
	refusedAs(t, "writer", w, ledger.CodeInsufficientPrivilege, `update naan set name = 'renamed' where naan = '12345'`)
	refusedAs(t, "writer", w, ledger.CodeInsufficientPrivilege, `update shoulder set status = 'retired', retired_at = now() where shoulder = '/dsp01'`)
	if n := count(t, r.l.Pool, `select count(*) from audit_event where action = 'naan.add' and target = '54321'`); n != 1 {
		t.Errorf("naan.add events for the imported NAAN: %d, want 1", n)
	}
	if n := count(t, r.l.Pool, `select count(*) from audit_event where action = 'naan.set' and target = '54321'
		and detail->'before'->>'name' is null and detail->'after'->>'name' = 'filled'`); n != 1 {
		t.Errorf("naan.set events for the filled name: %d, want 1", n)
	}
}

// TestInitRolesIdempotentAndFixed: a second InitRoles creates nothing; another prefix is refused.
func TestInitRolesIdempotentAndFixed(t *testing.T) {
	t.Parallel()
	r := newRoleLedger(t)
	ctx := context.Background()
	res, err := r.l.InitRoles(ctx, r.prefix)
	if err != nil || len(res.Created) != 0 {
		t.Fatalf("second InitRoles: created %v, %v", res.Created, err)
	}
	var re *ledger.RolesError
	if _, err := r.l.InitRoles(ctx, "other_"); !errors.As(err, &re) || !strings.Contains(err.Error(), "never change") {
		t.Errorf("InitRoles with another prefix: %v, want a RolesError", err)
	}
	if _, err := r.l.InitRoles(ctx, "Bad-Prefix"); !errors.As(err, &re) {
		t.Errorf("InitRoles with a bad prefix: %v, want a RolesError", err)
	}
	var owners int
	must(t, r.l.Pool.QueryRow(ctx, `select count(*) from pg_class c where c.relnamespace = 'public'::regnamespace
		and c.relkind in ('r', 'v') and pg_get_userbyid(c.relowner) <> $1`, r.roles.Owner).Scan(&owners))
	if owners != 0 {
		t.Errorf("%d tables and views not owned by %s", owners, r.roles.Owner)
	}
	if got, ok, err := r.l.LedgerRoles(ctx); err != nil || !ok || got != r.roles {
		t.Errorf("LedgerRoles: %+v %t %v, want %+v", got, ok, err, r.roles)
	}
}

// TestCheckSchema: an empty database, a current ledger and a newer one.
func TestCheckSchema(t *testing.T) {
	ctx := context.Background()
	t.Run("empty", func(t *testing.T) {
		empty := pgtest.NewDB(t, pgtest.KindSingle, pgtest.Schema{Name: "empty_v1"})
		var se *ledger.SchemaError
		err := (&ledger.Ledger{Pool: empty.Pool}).CheckSchema(ctx)
		if !errors.As(err, &se) || se.Have != 0 || !strings.Contains(err.Error(), "arkhe init") {
			t.Errorf("empty database: %v, want a SchemaError naming arkhe init", err)
		}
		if n := count(t, empty.Pool, `select count(*) from pg_class where relnamespace = 'public'::regnamespace`); n != 0 {
			t.Errorf("CheckSchema left %d relations in an empty database", n)
		}
	})
	t.Run("current and newer", func(t *testing.T) {
		l := &ledger.Ledger{Pool: pgtest.New(t)}
		must(t, l.CheckSchema(ctx))
		exec(t, l.Pool, `insert into schema_migration (version, name, checksum) values (9999, '9999_future.sql', 'x')`)
		var se *ledger.SchemaError
		err := l.CheckSchema(ctx)
		if !errors.As(err, &se) || se.Have != 9999 || len(se.Newer) != 1 || !strings.Contains(err.Error(), "newer than this arkhe knows") {
			t.Errorf("newer ledger: %v", err)
		}
		if _, err := l.Init(ctx, ledger.LayoutAuto); err == nil || !strings.Contains(err.Error(), "newer than this arkhe knows") {
			t.Errorf("Init of a newer ledger: %v", err)
		}
	})
}
