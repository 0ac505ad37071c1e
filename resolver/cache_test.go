package resolver_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/resolver"
)

// cachedServer is a resolver with a cache, its listener running, served over loopback.
type cachedServer struct {
	r      *resolver.Resolver
	get    func(path string) reply
	listen chan error // Listen's return
}

// startCached serves a resolver with a cache of 1,000 rows over loopback, with the hooks given
// (nil for none; afterLookup is given the resolver), and runs its listener until the test ends.
func startCached(t *testing.T, pool *pgxpool.Pool, afterLookup func(*resolver.Resolver, string), beforeConnect func(), setup ...func(*resolver.Resolver)) *cachedServer {
	t.Helper()
	r, err := resolver.New(pool, resolver.Config{CacheEntries: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range setup {
		f(r)
	}
	var hook func(string)
	if afterLookup != nil {
		hook = func(key string) { afterLookup(r, key) }
	}
	resolver.SetCacheHooks(r, hook, beforeConnect)
	ctx, cancel := context.WithCancel(context.Background())
	cs := &cachedServer{r: r, listen: make(chan error, 1)}
	go func() { cs.listen <- r.Listen(ctx) }()
	srv := httptest.NewServer(r)
	t.Cleanup(func() {
		srv.Close()
		cancel()
		if err := <-cs.listen; err != nil && !resolver.IsCacheOff(err) {
			t.Errorf("Listen: %v", err)
		}
	})
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	cs.get = func(path string) reply {
		t.Helper()
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return reply{resp.StatusCode, resp.Header.Get("Location"), resp.Header.Get("Content-Type"), string(b)}
	}
	return cs
}

// wait waits until cond holds of the cache's figures; the test's context bounds it.
func (cs *cachedServer) wait(t *testing.T, what string, cond func(resolver.CacheCounts) bool) {
	t.Helper()
	if err := resolver.WaitCache(t.Context(), cs.r, cond); err != nil {
		t.Fatalf("waiting for %s: %v (cache %+v)", what, err, resolver.CacheCountsOf(cs.r))
	}
}

// redirects asks path and checks the answer is a 302 to loc.
func (cs *cachedServer) redirects(t *testing.T, path, loc string) {
	t.Helper()
	if got := cs.get(path); got.status != 302 || got.location != loc {
		t.Errorf("GET %s: %d %q, want 302 %q (%s)", path, got.status, got.location, loc, got.body)
	}
}

func mustExec(t *testing.T, pool *pgxpool.Pool, q string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(t.Context(), q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// repointSQL moves the ARK key to url in plain SQL as the ledger's owner, in one transaction: the
// ARK_CHANGE row the ledger wants of a change, then the UPDATE of the ARK.
func repointSQL(ctx context.Context, pool *pgxpool.Pool, key, url string) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	for _, q := range []string{
		`insert into ark_change (ark, seq, at, action, before_url, after_url, before_status, after_status, by_text)
			select ark, change_seq + 1, now(), 'update', url, $2, ark_status_text(status), ark_status_text(status), 'a test'
			from ark where ark = $1`,
		`update ark set url = $2, change_seq = change_seq + 1 where ark = $1`,
	} {
		if _, err := tx.Exec(ctx, q, key, url); err != nil {
			return fmt.Errorf("repoint %s in SQL: %w", key, err)
		}
	}
	return tx.Commit(ctx)
}

// TestCache serves a filled ledger with a cache, on the single node and on Citus. Single node:
// an ARK named exactly is answered from the cache the second time (classic and modern forms
// alike), and every change is answered on the first request after its notification arrived
// (waited for on the cache's own flush count, never on time): a repoint in plain SQL as the
// owner and through the ledger's ark_repoint, a tombstone (410), a change of the NAAN's policy
// (?info). A suffix, an unknown name and a NAAN are never held. Citus: no notify triggers, so
// Listen says the cache is off, nothing is held, and a repoint is answered at once.
func TestCache(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		ctx := t.Context()
		pool := db.Pool
		if err := fixtures.FillLedger(ctx, pool, 20, 1, fixtures.FillOptions{Shoulders: []string{"/x9"}}); err != nil {
			t.Fatal(err)
		}
		keys := make([]string, 4)
		urls := make([]string, 4)
		for i := range keys {
			if err := pool.QueryRow(ctx, `select ark, url from ark order by ark offset $1 limit 1`, i).Scan(&keys[i], &urls[i]); err != nil {
				t.Fatal(err)
			}
		}
		naan, _, _ := strings.Cut(keys[0], "/")
		cs := startCached(t, pool, nil, nil)
		if db.Citus() {
			if err := <-cs.listen; !resolver.IsCacheOff(err) {
				t.Fatalf("Listen on Citus: %v, want a *CacheOffError", err)
			}
			cs.listen <- nil // for the cleanup
			cs.redirects(t, "/ark:"+keys[0], urls[0])
			cs.redirects(t, "/ark:/"+keys[0], urls[0])
			if err := repointSQL(ctx, pool, keys[0], "https://example.org/citus/0"); err != nil {
				t.Fatal(err)
			}
			cs.redirects(t, "/ark:"+keys[0], "https://example.org/citus/0")
			if c := resolver.CacheCountsOf(cs.r); c.Hits != 0 || c.Entries != 0 || c.On || c.Misses != 3 {
				t.Errorf("cache on Citus: %+v, want off, no hit, no entry, 3 misses", c)
			}
			return
		}
		cs.wait(t, "the listener", func(c resolver.CacheCounts) bool { return c.On })
		cs.redirects(t, "/ark:"+keys[0], urls[0])
		cs.redirects(t, "/ark:/"+keys[0], urls[0])
		cs.redirects(t, "/ark:"+keys[0]+"/page/2.jpg", urls[0]+"/page/2.jpg")
		if got := cs.get("/ark:" + keys[0] + "zzz"); got.status != 404 {
			t.Errorf("unknown name: %d", got.status)
		}
		if got := cs.get("/ark:" + naan + "??"); got.status != 200 || !strings.Contains(got.body, "what: NAAN "+naan+" fixture NAAN\n") {
			t.Errorf("NAAN ?? : %d %q", got.status, got.body)
		}
		// the modern and classic forms are one key; the suffix and the unknown name were read
		if c := resolver.CacheCountsOf(cs.r); c.Hits != 1 || c.Misses != 3 || c.Entries != 1 {
			t.Fatalf("after an ARK twice, a suffix and an unknown name: %+v, want 1 hit, 3 misses, 1 entry", c)
		}

		flushes := resolver.CacheCountsOf(cs.r).Flushes
		afterFlush := func(what string) {
			t.Helper()
			cs.wait(t, what+"'s notification", func(c resolver.CacheCounts) bool { return c.Flushes > flushes })
			flushes = resolver.CacheCountsOf(cs.r).Flushes
			if c := resolver.CacheCountsOf(cs.r); c.Entries != 0 || !c.On {
				t.Errorf("after %s's notification: %+v, want on and empty", what, c)
			}
		}
		t.Run("repoint in SQL", func(t *testing.T) {
			if err := repointSQL(ctx, pool, keys[0], "https://example.org/sql/0"); err != nil {
				t.Fatal(err)
			}
			afterFlush("the update")
			cs.redirects(t, "/ark:"+keys[0], "https://example.org/sql/0")
			cs.redirects(t, "/ark:"+keys[0], "https://example.org/sql/0")
		})
		l := &ledger.Ledger{Pool: pool}
		client := scalar[string](t, pool, `select client_id from client order by id limit 1`)
		t.Run("repoint through the ledger", func(t *testing.T) {
			cs.redirects(t, "/ark:"+keys[1], urls[1])
			cs.redirects(t, "/ark:"+keys[1], urls[1])
			if changed, err := l.RepointARK(ctx, keys[1], "https://example.org/ledger/1", client, "moved"); err != nil || !changed {
				t.Fatalf("RepointARK: %v, %v", changed, err)
			}
			afterFlush("the repoint")
			cs.redirects(t, "/ark:"+keys[1], "https://example.org/ledger/1")
		})
		t.Run("tombstone", func(t *testing.T) {
			cs.redirects(t, "/ark:"+keys[2], urls[2])
			cs.redirects(t, "/ark:"+keys[2], urls[2])
			if changed, err := l.TombstoneARK(ctx, keys[2], "withdrawn by its owner", client); err != nil || !changed {
				t.Fatalf("TombstoneARK: %v, %v", changed, err)
			}
			afterFlush("the tombstone")
			for range 2 {
				if got := cs.get("/ark:" + keys[2]); got.status != 410 || !strings.Contains(got.body, "tombstone_reason: withdrawn by its owner\n") {
					t.Errorf("tombstoned: %d %q", got.status, got.body)
				}
			}
		})
		t.Run("NAAN policy", func(t *testing.T) {
			for range 2 {
				if got := cs.get("/ark:" + keys[3] + "?info"); got.status != 200 || !strings.Contains(got.body, "policy: (:unav)\n") {
					t.Fatalf("?info before: %d %q", got.status, got.body)
				}
			}
			hits := resolver.CacheCountsOf(cs.r).Hits
			mustExec(t, pool, `update naan set na_policy = 'kept forever' where naan = $1`, naan)
			afterFlush("the policy")
			for range 2 {
				if got := cs.get("/ark:" + keys[3] + "?info"); got.status != 200 || !strings.Contains(got.body, "policy: kept forever\n") {
					t.Errorf("?info after: %d %q", got.status, got.body)
				}
			}
			if c := resolver.CacheCountsOf(cs.r); c.Hits != hits+1 {
				t.Errorf("hits %d after the policy, want %d (the second ?info from the cache)", c.Hits, hits+1)
			}
		})
	})
}

// TestCacheRace drives a look-up that races a change: between the look-up of the ledger (which
// read the old row) and its put, the ARK is repointed and its notification arrives. The request
// answers the old target (it read before the change), but its row is not kept: the next request
// reads the new one.
func TestCacheRace(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	ctx := t.Context()
	if err := fixtures.FillLedger(ctx, pool, 3, 1, fixtures.FillOptions{Shoulders: []string{"/x9"}}); err != nil {
		t.Fatal(err)
	}
	var key, url string
	if err := pool.QueryRow(ctx, `select ark, url from ark order by ark limit 1`).Scan(&key, &url); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	var raced atomic.Bool
	cs := startCached(t, pool, func(r *resolver.Resolver, k string) {
		if k != key {
			return
		}
		once.Do(func() {
			before := resolver.CacheCountsOf(r).Flushes
			if err := repointSQL(ctx, pool, key, "https://example.org/raced"); err != nil {
				t.Error(err)
				return
			}
			if err := resolver.WaitCache(ctx, r, func(c resolver.CacheCounts) bool { return c.Flushes > before }); err != nil {
				t.Errorf("waiting for the notification: %v", err)
				return
			}
			raced.Store(true)
		})
	}, nil)
	cs.wait(t, "the listener", func(c resolver.CacheCounts) bool { return c.On })
	cs.redirects(t, "/ark:"+key, url)
	if !raced.Load() {
		t.Fatal("the look-up did not reach its put")
	}
	if c := resolver.CacheCountsOf(cs.r); c.Entries != 0 {
		t.Errorf("after the raced look-up: %+v, want no entry", c)
	}
	cs.redirects(t, "/ark:"+key, "https://example.org/raced")
	cs.redirects(t, "/ark:"+key, "https://example.org/raced")
	if c := resolver.CacheCountsOf(cs.r); c.Hits != 1 || c.Entries != 1 {
		t.Errorf("after two more requests: %+v, want 1 hit, 1 entry", c)
	}
}

// TestCacheListenerLost terminates the listener's backend: the cache is dropped and off (every
// request reads the ledger, a repoint meanwhile is answered at once) while the listener cannot
// reconnect (held by a hook), and used again once it listens again.
func TestCacheListenerLost(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	ctx := t.Context()
	if err := fixtures.FillLedger(ctx, pool, 3, 1, fixtures.FillOptions{Shoulders: []string{"/x9"}}); err != nil {
		t.Fatal(err)
	}
	var key, url string
	if err := pool.QueryRow(ctx, `select ark, url from ark order by ark limit 1`).Scan(&key, &url); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	connects := 0
	cs := startCached(t, pool, nil, func() {
		connects++
		if connects == 2 {
			<-release
		}
	})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	cs.wait(t, "the listener", func(c resolver.CacheCounts) bool { return c.On })
	cs.redirects(t, "/ark:"+key, url)
	cs.redirects(t, "/ark:"+key, url)
	before := resolver.CacheCountsOf(cs.r)
	if before.Hits != 1 || before.Entries != 1 {
		t.Fatalf("before: %+v, want 1 hit, 1 entry", before)
	}
	if n := scalar[int64](t, pool, `select count(pg_terminate_backend(pid)) from pg_stat_activity
		where datname = current_database() and query = 'listen `+resolver.NotifyChannel+`'`); n != 1 {
		t.Fatalf("terminated %d listeners, want 1", n)
	}
	cs.wait(t, "the cache off", func(c resolver.CacheCounts) bool { return !c.On })
	off := resolver.CacheCountsOf(cs.r)
	if off.Entries != 0 || off.Flushes != before.Flushes+1 {
		t.Errorf("off: %+v, want no entry and one more flush than %+v", off, before)
	}
	cs.redirects(t, "/ark:"+key, url)
	if err := repointSQL(ctx, pool, key, "https://example.org/offline"); err != nil {
		t.Fatal(err)
	}
	cs.redirects(t, "/ark:"+key, "https://example.org/offline")
	if c := resolver.CacheCountsOf(cs.r); c.Hits != before.Hits || c.Misses != before.Misses+2 || c.Entries != 0 {
		t.Errorf("while off: %+v, want %d hits, %d misses, no entry", c, before.Hits, before.Misses+2)
	}
	releaseOnce.Do(func() { close(release) })
	cs.wait(t, "the listener back", func(c resolver.CacheCounts) bool { return c.On && c.Listens == 2 })
	cs.redirects(t, "/ark:"+key, "https://example.org/offline")
	cs.redirects(t, "/ark:"+key, "https://example.org/offline")
	if c := resolver.CacheCountsOf(cs.r); c.Hits != before.Hits+1 || c.Entries != 1 {
		t.Errorf("back on: %+v, want %d hits, 1 entry", c, before.Hits+1)
	}
}

// TestCachePings: a listener that hears nothing pings the server and keeps its connection (one
// LISTEN, no flush, the cache still used), and a notification after the pings still drops the
// cache.
func TestCachePings(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	ctx := t.Context()
	if err := fixtures.FillLedger(ctx, pool, 3, 1, fixtures.FillOptions{Shoulders: []string{"/x9"}}); err != nil {
		t.Fatal(err)
	}
	var key, url string
	if err := pool.QueryRow(ctx, `select ark, url from ark order by ark limit 1`).Scan(&key, &url); err != nil {
		t.Fatal(err)
	}
	cs := startCached(t, pool, nil, nil, func(r *resolver.Resolver) { resolver.SetCachePingEvery(r, time.Millisecond) })
	cs.wait(t, "the listener", func(c resolver.CacheCounts) bool { return c.On })
	cs.redirects(t, "/ark:"+key, url)
	cs.wait(t, "three pings", func(c resolver.CacheCounts) bool { return c.Pings >= 3 })
	cs.redirects(t, "/ark:"+key, url)
	if c := resolver.CacheCountsOf(cs.r); c.Listens != 1 || c.Flushes != 0 || c.Hits != 1 || !c.On {
		t.Errorf("after pings: %+v, want one LISTEN, no flush, 1 hit, on", c)
	}
	if err := repointSQL(ctx, pool, key, "https://example.org/pinged"); err != nil {
		t.Fatal(err)
	}
	cs.wait(t, "the notification", func(c resolver.CacheCounts) bool { return c.Flushes == 1 })
	cs.redirects(t, "/ark:"+key, "https://example.org/pinged")
	if c := resolver.CacheCountsOf(cs.r); c.Listens != 1 {
		t.Errorf("after the notification: %+v, want one LISTEN", c)
	}
}
