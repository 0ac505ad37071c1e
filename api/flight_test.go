package api

import (
	"context"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// outcome is what one checkKey call returned.
type outcome struct {
	check ledger.KeyCheck
	err   error
}

// flightLedger registers NAAN 12345, manager m1 and machine client svc with an API key, and
// returns the pool, the printed key, its prefix and the SHA-256 of its secret.
func flightLedger(t *testing.T) (*pgxpool.Pool, string, string, [32]byte) {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.New(t)
	l := &ledger.Ledger{Pool: pool}
	if _, err := l.AddNAAN(ctx, ledger.NAAN{NAAN: "12345", Name: "test"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AddManager(ctx, ledger.Manager{NAAN: "12345", Name: "m1"}); err != nil {
		t.Fatal(err)
	}
	if err := l.AddClient(ctx, ledger.Client{ClientID: "svc", NAAN: "12345", Manager: "m1", Authority: "manager",
		Scopes: []string{"ark:mint"}}); err != nil {
		t.Fatal(err)
	}
	k, err := l.CreateKey(ctx, "svc")
	if err != nil {
		t.Fatal(err)
	}
	prefix, secret, err := ledger.ParseKey(k.Key)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(secret))
	return pool, k.Key, prefix, sum
}

// theFlight waits until the server has one key check under way with n requests waiting for it,
// and returns it. It waits on that state, not on a time: the limit is only there to fail a test
// whose requests never get there.
func theFlight(t *testing.T, s *Server, n int) *flight {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		s.keysMu.Lock()
		var f *flight
		for _, g := range s.flights {
			f = g
		}
		ok := len(s.flights) == 1 && f.waiters == n
		s.keysMu.Unlock()
		if ok {
			return f
		}
	}
	t.Fatalf("no key check with %d requests waiting for it", n)
	return nil
}

// TestSharedCheckOutlivesItsOwner: two requests present the same key while no check slot is
// free, so they share one key check; the request that started it hangs up before it runs. The
// other still gets the ledger's verdict (the key accepted, its client), not the hung-up request's
// cancellation, and the key is derived once. Ordered by the server's own state (the check under
// way and its waiting requests) and by the check slots the test holds, never by time.
func TestSharedCheckOutlivesItsOwner(t *testing.T) {
	t.Parallel()
	pool, key, prefix, sum := flightLedger(t)
	s, err := New(context.Background(), pool, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for range maxChecks {
		s.checks <- struct{}{} // every slot taken: the shared check waits for one
	}
	ownerCtx, hangUp := context.WithCancel(context.Background())
	owner, waiter := make(chan outcome, 1), make(chan outcome, 1)
	go func() {
		kc, err := s.checkKey(ownerCtx, prefix, sum, key)
		owner <- outcome{kc, err}
	}()
	f := theFlight(t, s, 1) // the owner's check is under way, waiting for a slot
	go func() {
		kc, err := s.checkKey(context.Background(), prefix, sum, key)
		waiter <- outcome{kc, err}
	}()
	theFlight(t, s, 2) // the waiter shares it
	hangUp()
	if o := <-owner; !errors.Is(o.err, context.Canceled) {
		t.Errorf("the hung-up request got %+v, want context.Canceled", o)
	}
	select {
	case o := <-waiter:
		t.Fatalf("the waiter was answered before any check ran: %+v", o)
	case <-f.done:
		t.Fatal("the shared check ended before any slot was free")
	default:
	}
	for range maxChecks {
		<-s.checks // the slots free: the shared check runs
	}
	o := <-waiter
	if o.err != nil || o.check.ClientID != "svc" || o.check.Prefix != prefix || len(o.check.Hash) == 0 {
		t.Fatalf("the waiter got %+v, want svc's key accepted", o)
	}
	if n := s.Stats().KeyDerivations; n != 1 {
		t.Fatalf("%d derivations, want 1 shared", n)
	}
}

// TestAbandonedCheckIsDropped: a key check whose only request hangs up before a check slot is
// free never runs (no derivation, no key remembered), and the next request presenting the key
// starts a check of its own, which accepts it.
func TestAbandonedCheckIsDropped(t *testing.T) {
	t.Parallel()
	pool, key, prefix, sum := flightLedger(t)
	s, err := New(context.Background(), pool, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for range maxChecks {
		s.checks <- struct{}{}
	}
	ctx, hangUp := context.WithCancel(context.Background())
	gone := make(chan outcome, 1)
	go func() {
		kc, err := s.checkKey(ctx, prefix, sum, key)
		gone <- outcome{kc, err}
	}()
	f := theFlight(t, s, 1)
	hangUp()
	if o := <-gone; !errors.Is(o.err, context.Canceled) {
		t.Fatalf("the hung-up request got %+v, want context.Canceled", o)
	}
	<-f.done // the dropped check's goroutine has ended, with every slot still held
	for range maxChecks {
		<-s.checks
	}
	s.keysMu.Lock()
	flights, keys := len(s.flights), len(s.keys)
	s.keysMu.Unlock()
	if flights != 0 || keys != 0 || s.Stats().KeyDerivations != 0 || !errors.Is(f.err, context.Canceled) {
		t.Fatalf("after the hang-up: %d checks under way, %d keys remembered, %d derivations, check %v; want none, and the check cancelled",
			flights, keys, s.Stats().KeyDerivations, f.err)
	}
	kc, err := s.checkKey(context.Background(), prefix, sum, key)
	if err != nil || kc.ClientID != "svc" {
		t.Fatalf("the next request: %+v, %v; want svc's key accepted", kc, err)
	}
	if n := s.Stats().KeyDerivations; n != 1 {
		t.Fatalf("%d derivations, want 1", n)
	}
}
