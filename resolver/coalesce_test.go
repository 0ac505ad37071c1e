package resolver_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/resolver"
)

// TestCoalescedLookups: many requests at once, each with its own ARK (some with a suffix, some
// unknown, some under an unknown NAAN or a forwarding shoulder), get each its own answer whether their lookups are coalesced (Batch 0, the default)
// or not (Batch 1), and a repoint is answered by the next request after it committed.
func TestCoalescedLookups(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		ctx := context.Background()
		if err := fixtures.FillLedger(ctx, db.Pool, 300, 1, fixtures.FillOptions{Shoulders: []string{"/x9", "/b5"}}); err != nil {
			t.Fatal(err)
		}
		rows, err := db.Pool.Query(ctx, `select ark, url from ark order by ark`)
		if err != nil {
			t.Fatal(err)
		}
		type pair struct{ key, url string }
		arks, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (pair, error) {
			var p pair
			return p, r.Scan(&p.key, &p.url)
		})
		if err != nil || len(arks) != 300 {
			t.Fatalf("%d ARKs, %v", len(arks), err)
		}
		naan, _, _ := strings.Cut(arks[0].key, "/")
		if _, err := db.Pool.Exec(ctx, `insert into shoulder (naan, shoulder, status, redirect) values ($1, '/fw', 'delegated', 'https://fw.example.org/${value}')`, naan); err != nil {
			t.Fatal(err)
		}
		for _, batch := range []int{0, 1} {
			r, err := resolver.New(db.Pool, resolver.Config{Batch: batch, BatchQueries: 2})
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			errs := make(chan string, 3*len(arks))
			for i, a := range arks {
				wg.Add(1)
				go func() {
					defer wg.Done()
					path, want, loc, msg := "/ark:"+a.key, 302, a.url, ""
					switch i % 6 {
					case 1:
						path, loc = path+"/page/3.jpg", a.url+"/page/3.jpg"
					case 2:
						path, want, loc, msg = path+"zzznosuch", 404, "", "no ARK ark:"+a.key+"zzznosuch is published under NAAN "+naan
					case 3:
						path, want, loc, msg = fmt.Sprintf("/ark:99990/x%d", i), 404, "", "NAAN 99990 is not one this resolver knows"
					case 4:
						path, loc = fmt.Sprintf("/ark:/%s/fw%d", naan, i), fmt.Sprintf("https://fw.example.org/fw%d", i)
					}
					if got := r.Resolve(ctx, path); got.Status != want || got.Location != loc || !strings.HasPrefix(got.Message, msg) {
						errs <- fmt.Sprintf("batch %d: %s: %d %q (%s), want %d %q (%s)", batch, path, got.Status, got.Location, got.Message, want, loc, msg)
					}
				}()
			}
			wg.Wait()
			close(errs)
			var msgs []string
			for m := range errs {
				msgs = append(msgs, m)
			}
			if len(msgs) > 0 {
				t.Errorf("%d of %d answers wrong:\n%s", len(msgs), len(arks), strings.Join(msgs[:min(10, len(msgs))], "\n"))
			}
			// a repoint is read by the next request
			key := arks[0].key
			moved := fmt.Sprintf("https://example.org/moved/%d", batch)
			if _, err := (&ledger.Ledger{Pool: db.Pool}).RepointARK(ctx, key, moved, fixtures.FillClient, "moved"); err != nil {
				t.Fatal(err)
			}
			if got := r.Resolve(ctx, "/ark:"+key); got.Location != moved {
				t.Errorf("batch %d: after a repoint: %d %q, want 302 %q", batch, got.Status, got.Location, moved)
			}
			arks[0].url = moved
		}
	})
}

// TestClientClosedIsNotUnavailable: a request whose client went away (its context ended) before
// the ledger answered is a 499 client_closed, not told to OnError; a ledger that does not answer
// (its pool closed) is a 503 unavailable, told to OnError. Both with and without coalescing.
func TestClientClosedIsNotUnavailable(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	if err := fixtures.FillLedger(context.Background(), db, 3, 1, fixtures.FillOptions{}); err != nil {
		t.Fatal(err)
	}
	key := scalar[string](t, db, `select ark from ark order by ark limit 1`)
	for _, batch := range []int{0, 1} {
		var told []error
		var mu sync.Mutex
		onError := func(err error) { mu.Lock(); told = append(told, err); mu.Unlock() }
		r, err := resolver.New(db, resolver.Config{Batch: batch, OnError: onError})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if a := r.Resolve(ctx, "/ark:"+key); a.Outcome != resolver.OutcomeClientClosed || a.Status != 499 {
			t.Errorf("batch %d: a request whose client went away: %s %d (%s), want client_closed 499", batch, a.Outcome, a.Status, a.Message)
		}
		if len(told) != 0 {
			t.Errorf("batch %d: OnError told of a client gone: %v", batch, told)
		}
	}
	// a ledger that does not answer: a pool of its own, closed
	closed, err := pgxpool.New(context.Background(), db.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	var told []error
	r, err := resolver.New(closed, resolver.Config{Batch: 1, OnError: func(err error) { told = append(told, err) }})
	if err != nil {
		t.Fatal(err)
	}
	if a := r.Resolve(context.Background(), "/ark:"+key); a.Outcome != resolver.OutcomeUnavailable || a.Status != 503 || len(told) != 1 {
		t.Errorf("a closed pool: %s %d, OnError told %v; want unavailable 503, told once", a.Outcome, a.Status, told)
	}
}
