package ledger_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

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

// TestKeyHold: HoldKey accepts an active key and holds it until the transaction ends: a
// revocation sent through any node meanwhile waits (found waiting for a lock on the holder's
// node) and goes through once the transaction has ended; holding the same key or another one
// meanwhile does not wait. A revoked key is then refused (a *KeyError "revoked"), and a prefix
// that names no key is "unknown".
func TestKeyHold(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l, ctx := registeredIn(t, db)
		must(t, l.AddClient(ctx, ledger.Client{ClientID: "c2", NAAN: "99999", Manager: "m1", Authority: "manager", Scopes: []string{"ark:mint"}}))
		other, err := l.CreateKey(ctx, "c2")
		must(t, err)
		for n, u := range db.NodeURLs() {
			k, err := l.CreateKey(ctx, "c1")
			must(t, err)
			tx, err := l.Pool.Begin(ctx)
			must(t, err)
			must(t, ledger.HoldKey(ctx, tx, k.Prefix))
			for _, p := range []string{k.Prefix, other.Prefix} {
				tx2, err := l.Pool.Begin(ctx)
				must(t, err)
				must(t, ledger.HoldKey(ctx, tx2, p))
				must(t, tx2.Rollback(ctx))
			}
			pool, err := pgxpool.New(ctx, u)
			must(t, err)
			t.Cleanup(pool.Close)
			done := make(chan error, 1)
			go func() {
				_, err := (&ledger.Ledger{Pool: pool}).RevokeKey(ctx, k.Prefix)
				done <- err
			}()
			for waiting, end := 0, time.Now().Add(time.Minute); waiting == 0; {
				if time.Now().After(end) {
					t.Fatalf("node %d: the revocation neither waited for the holder nor ended within a minute", n)
				}
				select {
				case err := <-done:
					t.Fatalf("node %d: the key was revoked while held (%v)", n, err)
				default:
				}
				time.Sleep(10 * time.Millisecond)
				waiting = count(t, l.Pool, `select count(*) from pg_locks
					where locktype = 'advisory' and not granted and database = (select oid from pg_database where datname = current_database())`)
			}
			must(t, tx.Commit(ctx))
			must(t, <-done)
			tx, err = l.Pool.Begin(ctx)
			must(t, err)
			var ke *ledger.KeyError
			if err := ledger.HoldKey(ctx, tx, k.Prefix); !errors.As(err, &ke) || ke.Reason != "revoked" {
				t.Errorf("node %d: HoldKey of the revoked key: %v, want a KeyError \"revoked\"", n, err)
			}
			must(t, tx.Rollback(ctx))
		}
		tx, err := l.Pool.Begin(ctx)
		must(t, err)
		var ke *ledger.KeyError
		if err := ledger.HoldKey(ctx, tx, "nokeyhere234"); !errors.As(err, &ke) || ke.Reason != "unknown" {
			t.Errorf("HoldKey of no key: %v, want a KeyError \"unknown\"", err)
		}
		must(t, tx.Rollback(ctx))
	})
}
