package api

import (
	"context"
	"testing"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// TestProvedSessionsDieWithConnections: on a ledger requiring keys, what the server remembers of
// a session that proved a key goes with the session's connection. Connections the pool closes
// on its own (here pool.Reset, as a lifetime or idle limit does) leave nothing behind, and a new
// connection proves the key again before it writes.
func TestProvedSessionsDieWithConnections(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.New(t)
	l := &ledger.Ledger{Pool: pool}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := l.AddNAAN(ctx, ledger.NAAN{NAAN: "12345", Name: "test"})
	must(err)
	_, err = l.AddManager(ctx, ledger.Manager{NAAN: "12345", Name: "m1"})
	must(err)
	must(l.AddClient(ctx, ledger.Client{ClientID: "svc", NAAN: "12345", Manager: "m1", Authority: "manager", Scopes: []string{"ark:mint"}}))
	k, err := l.CreateKey(ctx, "svc")
	must(err)
	_, err = l.RequireKeys(ctx)
	must(err)
	s, err := New(ctx, pool, Config{})
	must(err)
	kc, err := ledger.CheckKey(ctx, pool, k.Key)
	must(err)
	p := principal{clientID: "svc", key: &kc}
	for range 5 {
		c, a := s.conn(ctx, p)
		if a != nil {
			t.Fatalf("conn: %d %s", a.status, a.text)
		}
		if got := c.Conn().PgConn().CustomData()[provedData]; got != kc.Prefix {
			t.Fatalf("the connection's session proved %v, want %s", got, kc.Prefix)
		}
		var proved bool // the session itself holds the proof: a write for svc is accepted
		must(c.QueryRow(ctx, `select coalesce(arkhe_session_client() = (select id from client where client_id = 'svc'), false)`).Scan(&proved))
		if !proved {
			t.Fatalf("the session does not hold svc's proof")
		}
		s.release(c)
		pool.Reset() // the pool closes every connection; none passes through release again
		c2, err := pool.Acquire(ctx)
		must(err)
		if got, ok := c2.Conn().PgConn().CustomData()[provedData]; ok {
			t.Fatalf("a new connection carries a proof %v before it proved any key", got)
		}
		c2.Release()
	}
}
