package ledger_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// plainARKSQL inserts ARK 99999/$2 minted by client $1 in shoulder /x9, as a writer could in
// plain SQL (no receipt: the row stands for itself on both layouts).
const plainARKSQL = `insert into ark (ark, naan, shoulder_id, assigned_name, url, created_by, created_at)
	select '99999/' || $2::text, '99999', s.id, $2::text, 'https://example.org/' || $2::text, c.id, now()
	from shoulder s, client c where s.naan = '99999' and s.shoulder = '/x9' and c.client_id = $1`

// copyARK sends one ARK row minted by client pk with COPY on pool.
func copyARK(ctx context.Context, pool *pgxpool.Pool, shoulder, client int64, name string) error {
	_, err := pool.CopyFrom(ctx, pgx.Identifier{"ark"},
		[]string{"ark", "naan", "shoulder_id", "assigned_name", "url", "created_by"},
		pgx.CopyFromRows([][]any{{"99999/" + name, "99999", shoulder, name, "https://example.org/" + name, client}}))
	return err
}

// refusedUnproved runs sql on pool and asserts the database refuses it because the session has
// not proved the client's key: AK009, or on Citus, where a worker's error reaches the client as
// XX000 with the worker's message, that message.
func refusedUnproved(t *testing.T, db pgtest.DB, who string, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	_, err := pool.Exec(context.Background(), sql, args...)
	if !unproved(db, err) {
		t.Errorf("as %s: %s: %v, want AK009", who, sql, err)
	}
}

func unproved(db pgtest.DB, err error) bool {
	switch ledger.SQLState(err) {
	case ledger.CodeKeyRequired:
		return true
	case "XX000":
		return db.Citus() && strings.Contains(err.Error(), "requires the API key of the client")
	}
	return false
}

// TestRequireKeysInTheDatabase: on a ledger that requires keys, a writer's plain SQL (INSERT and
// COPY of an ARK, ark_repoint, ark_tombstone) for a client is refused (AK009) until the session
// proved the client's API key; a wrong key is refused and counted; once the key is proved every
// connection of the pool writes; another session of the same login is still refused; the
// writer never reads the key hashes.
func TestRequireKeysInTheDatabase(t *testing.T) {
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		ctx := context.Background()
		r := newRoleLedgerIn(t, db)
		su := r.l
		ledger.SetKeyParams(su, ledger.CheapKeyParams()) // not a test of the parameters
		must(t, firstErr(su.AddNAAN(ctx, ledger.NAAN{NAAN: "99999", Name: "test"})))
		must(t, firstErr(su.AddManager(ctx, ledger.Manager{NAAN: "99999", Name: "m1"})))
		must(t, firstErr(su.AddShoulder(ctx, ledger.Shoulder{NAAN: "99999", Shoulder: "/x9", Manager: "m1"}, 0)))
		must(t, su.AddClient(ctx, ledger.Client{ClientID: "svc", NAAN: "99999", Manager: "m1", Authority: "manager",
			Scopes: []string{"ark:mint", "ark:update", "ark:tombstone"}}))
		key, err := su.CreateKey(ctx, "svc")
		must(t, err)
		var shoulder, client int64
		must(t, su.Pool.QueryRow(ctx, `select s.id, c.id from shoulder s, client c where s.shoulder = '/x9' and c.client_id = 'svc'`).Scan(&shoulder, &client))
		writer := r.login(t, "w", r.roles.Writer)
		ledger.SetKeyParams(writer, ledger.CheapKeyParams()) // the key's own: proved without a rehash
		w := writer.Pool
		acceptedAs(t, "writer before keys are required", w, plainARKSQL, "svc", "x9aaa")
		must(t, firstErr(su.RequireKeys(ctx)))

		// without the key: refused, whatever the path
		refusedUnproved(t, db, "writer without the key", w, plainARKSQL, "svc", "x9bbb")
		if err := copyARK(ctx, w, shoulder, client, "x9bbc"); !unproved(db, err) {
			t.Errorf("COPY without the key: %v, want AK009", err)
		}
		refusedUnproved(t, db, "writer without the key", w, `select ark_repoint('99999/x9aaa', 'https://example.org/moved', $1, 'test')`, client)
		refusedUnproved(t, db, "writer without the key", w, `select ark_tombstone('99999/x9aaa', 'gone', $1, 'test')`, client)
		refusedAs(t, "writer", w, ledger.CodeInsufficientPrivilege, `select hashed from credential`)
		refusedAs(t, "writer", w, ledger.CodeInsufficientPrivilege, `select token from key_session`)
		refusedAs(t, "writer", w, ledger.CodeInsufficientPrivilege, `insert into key_session (backend, login, client_pk, prefix) values (pg_backend_pid(), session_user, 1, 'x')`)

		// a wrong key: refused and counted, and the session still writes nothing
		wrong := key.Key[:len(key.Key)-4] + "aaaa"
		var ke *ledger.KeyError
		if err := writer.Authenticate(ctx, "svc", wrong); !errors.As(err, &ke) || ke.Reason != "wrong" {
			t.Fatalf("a wrong key: %v, want a KeyError wrong", err)
		}
		if n := count(t, su.Pool, `select failed_attempts from credential where prefix = '`+key.Prefix+`'`); n != 1 {
			t.Errorf("failed attempts after a wrong key: %d, want 1", n)
		}
		refusedUnproved(t, db, "writer with a wrong key", w, plainARKSQL, "svc", "x9bbb")

		// the right key: every connection of the pool writes, in plain SQL too
		must(t, writer.Authenticate(ctx, "svc", key.Key))
		conns := make([]*pgxpool.Conn, 3)
		for i := range conns {
			c, err := w.Acquire(ctx)
			must(t, err)
			conns[i] = c
		}
		for i, name := range []string{"x9ccc", "x9ddd", "x9fff"} {
			if _, err := conns[i].Exec(ctx, plainARKSQL, "svc", name); err != nil {
				t.Errorf("connection %d of the writer that proved the key: %v", i, err)
			}
		}
		for _, c := range conns {
			c.Release()
		}
		must(t, copyARK(ctx, w, shoulder, client, "x9ggg"))
		acceptedAs(t, "writer with the key", w, `select ark_repoint('99999/x9aaa', 'https://example.org/moved', $1, 'test')`, client)
		acceptedAs(t, "writer with the key", w, `select ark_tombstone('99999/x9ccc', 'gone', $1, 'test')`, client)
		if n := count(t, su.Pool, `select failed_attempts from credential where prefix = '`+key.Prefix+`'`); n != 0 {
			t.Errorf("failed attempts after the right key: %d, want 0", n)
		}

		// another session of the same login has proved nothing
		other, err := pgxpool.New(ctx, w.Config().ConnString())
		must(t, err)
		refusedUnproved(t, db, "another session of the writer", other, plainARKSQL, "svc", "x9hhh")
		other.Close()
		// an import without a client is the operator's only
		var run int64
		must(t, su.Pool.QueryRow(ctx, `insert into import_run (source_file, format) values ('f', 'ezid-anvl') returning id`).Scan(&run))
		refusedUnproved(t, db, "writer importing without a client", w, `insert into ark (ark, naan, shoulder_id, assigned_name, import_run_id)
			values ('99999/x9iii', '99999', $1, 'x9iii', $2)`, shoulder, run)

		if n := count(t, su.Pool, `select count(*) from ark where ark in ('99999/x9aaa', '99999/x9ccc', '99999/x9ddd', '99999/x9fff', '99999/x9ggg')`); n != 5 {
			t.Errorf("ARKs: %d, want the 5 written before keys were required or with the key", n)
		}
		if n := count(t, su.Pool, `select count(*) from ark where ark in ('99999/x9bbb', '99999/x9bbc', '99999/x9hhh', '99999/x9iii')`); n != 0 {
			t.Errorf("ARKs written without the key: %d", n)
		}
		// closing forgets the sessions that proved the key
		if n := count(t, su.Pool, `select count(*) from key_session`); n == 0 {
			t.Errorf("no key session recorded")
		}
		writer.Close()
		if n := count(t, su.Pool, `select count(*) from key_session`); n != 0 {
			t.Errorf("key sessions after the writer closed: %d, want 0", n)
		}
	})
}

// TestRegistrationSQLRecorded: a registration change made in plain SQL by the operator role
// (client, shoulder, manager rows) leaves its audit event, with the operator's login role, on one
// node and on Citus, through the coordinator and through a worker, exactly once each.
func TestRegistrationSQLRecorded(t *testing.T) {
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		ctx := context.Background()
		r := newRoleLedgerIn(t, db)
		su := r.l
		must(t, firstErr(su.AddNAAN(ctx, ledger.NAAN{NAAN: "99999", Name: "test"})))
		must(t, firstErr(su.AddManager(ctx, ledger.Manager{NAAN: "99999", Name: "m1"})))
		must(t, firstErr(su.AddShoulder(ctx, ledger.Shoulder{NAAN: "99999", Shoulder: "/x9", Manager: "m1"}, 0)))
		must(t, su.AddClient(ctx, ledger.Client{ClientID: "svc", NAAN: "99999", Manager: "m1", Authority: "manager", Scopes: []string{"ark:mint", "ark:update"}}))
		nodes := r.loginNodes(t, db, "op", r.roles.Operator)
		for i, n := range nodes {
			acceptedAs(t, "operator on "+n.name, n.pool, `update client set allowed_scopes = '{ark:mint}', active = $1 where client_id = 'svc'`, i%2 == 1)
			acceptedAs(t, "operator on "+n.name, n.pool, `update shoulder set note = $1 where shoulder = '/x9'`, n.name)
			acceptedAs(t, "operator on "+n.name, n.pool, `update manager set quota_per_day = $1 where name = 'm1'`, 10+i)
		}
		for _, c := range []struct {
			sql  string
			want int
		}{
			{`select count(*) from audit_event where action in ('client.set', 'client.enable', 'client.disable') and target = 'svc' and db_role = '` + r.prefix + `op'`, len(nodes)},
			{`select count(*) from audit_event where action = 'shoulder.set' and target = 'ark:99999/x9' and db_role = '` + r.prefix + `op'`, len(nodes)},
			{`select count(*) from audit_event where action = 'manager.set' and target = '99999 m1' and db_role = '` + r.prefix + `op'`, len(nodes)},
			{`select count(*) from audit_event where action in ('naan.add', 'manager.add', 'shoulder.add', 'client.add') and db_role = 'postgres'`, 4},
		} {
			if n := count(t, su.Pool, c.sql); n != c.want {
				t.Errorf("%s: %d, want %d", c.sql, n, c.want)
			}
		}
		var before, after string
		must(t, su.Pool.QueryRow(ctx, `select detail->'before'->>'allowed_scopes', detail->'after'->>'allowed_scopes' from audit_event
			where target = 'svc' and action <> 'client.add' order by id limit 1`).Scan(&before, &after))
		if before != `["ark:mint", "ark:update"]` || after != `["ark:mint"]` {
			t.Errorf("client.set before %s after %s", before, after)
		}
	})
}
