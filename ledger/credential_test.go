package ledger_test

import (
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// TestCredentialKindFitsSubject: a person client holds no API key or client secret and a
// machine client no password, on both layouts, for a plain SQL insert by the owner too, sent
// to every node (on Citus the coordinator and each worker: credential is a reference table
// whose row trigger runs on every placement and looks the client up in its local copy), as
// INSERT ... SELECT and as INSERT ... VALUES. A machine's API key still goes in, in plain SQL
// and through CreateKey.
func TestCredentialKindFitsSubject(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l, ctx := registeredIn(t, db)
		must(t, l.AddClient(ctx, ledger.Client{ClientID: "p1", NAAN: "99999", Manager: "m1", Authority: "manager",
			SubjectType: "person", Scopes: []string{"ark:mint"}}))
		ids := keys(t, l.Pool)
		for n, u := range db.NodeURLs() {
			pool, err := pgxpool.New(ctx, u)
			must(t, err)
			t.Cleanup(pool.Close)
			node := strconv.Itoa(n)
			for _, c := range []struct{ client, kind string }{{"p1", "api_key"}, {"p1", "client_secret"}, {"c1", "password"}} {
				refused(t, pool, ledger.CodeCredentialFit, `insert into credential (client_pk, kind, prefix, hashed)
					select id, $1, 's`+node+c.kind+`', 'x' from client where client_id = $2`, c.kind, c.client)
				refused(t, pool, ledger.CodeCredentialFit, `insert into credential (client_pk, kind, prefix, hashed)
					values ($1, $2, 'v`+node+c.kind+`', 'x')`, ids["c"+c.client], c.kind)
			}
			exec(t, pool, `insert into credential (client_pk, kind, prefix, hashed) values ($1, 'api_key', 'm`+node+`', 'x')`, ids["cc1"])
		}
		if n := count(t, l.Pool, `select count(*) from credential k join client c on c.id = k.client_pk
			where c.subject_type = 'person' or k.kind = 'password'`); n != 0 {
			t.Fatalf("%d credentials of a person or passwords after the refused inserts, want 0", n)
		}
		k, err := l.CreateKey(ctx, "c1")
		must(t, err)
		if _, err := l.CreateKey(ctx, "p1"); ledger.SQLState(err) != ledger.CodeCredentialFit {
			t.Fatalf("CreateKey of a person: %v, want SQLSTATE %s", err, ledger.CodeCredentialFit)
		}
		if n, want := count(t, l.Pool, `select count(*) from credential k join client c on c.id = k.client_pk
			where c.client_id = 'c1' and k.kind = 'api_key' and k.active`), len(db.NodeURLs())+1; n != want {
			t.Fatalf("machine keys: %d, want %d (one per node and %s)", n, want, k.Prefix)
		}
	})
}
