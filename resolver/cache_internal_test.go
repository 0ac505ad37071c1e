package resolver

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// CacheCounts is what a test reads of a resolver's cache.
type CacheCounts struct {
	Hits, Misses, Flushes, Listens, Pings int64
	Entries                               int
	On                                    bool
}

// CacheCountsOf returns r's cache figures (zero without a cache).
func CacheCountsOf(r *Resolver) CacheCounts {
	c := r.cache
	if c == nil {
		return CacheCounts{}
	}
	return CacheCounts{Hits: c.hits.Load(), Misses: c.misses.Load(), Flushes: c.flushes.Load(), Listens: c.listens.Load(), Pings: c.pings.Load(),
		Entries: c.entries(), On: c.state.Load()&1 == 1}
}

// WaitCache waits until cond holds of r's cache figures (read at each change of its state: a
// notification, the listener's loss or return), or ctx ends.
func WaitCache(ctx context.Context, r *Resolver, cond func(CacheCounts) bool) error {
	return r.cache.waitFor(ctx, func() bool { return cond(CacheCountsOf(r)) })
}

// SetCacheHooks sets r's cache's test hooks (before Listen runs and requests are served):
// afterLookup between a look-up of the ledger that found an exact match and its put,
// beforeConnect before each connection of the listener; nil for none.
func SetCacheHooks(r *Resolver, afterLookup func(key string), beforeConnect func()) {
	r.cache.afterLookup, r.cache.beforeConnect = afterLookup, beforeConnect
}

// SetCachePingEvery sets how long r's listener waits for a notification before it pings (before
// Listen runs).
func SetCachePingEvery(r *Resolver, d time.Duration) { r.cache.pingEvery = d }

// TestCacheBound: a cache holds at most its entries, however many rows are put, and a put in a
// state that has moved on, or while the cache is off, holds nothing.
func TestCacheBound(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 10, 64, 100, 1000} {
		c := newCache(n)
		if c.entries() != 0 {
			t.Fatalf("new cache of %d: %d entries", n, c.entries())
		}
		_, _, off := c.get("x")
		c.put(off, arkRow{key: "x"})
		if c.entries() != 0 {
			t.Errorf("cache of %d: a put while off held a row", n)
		}
		c.advance(true, &c.listens)
		_, _, s := c.get("x")
		// enough that every shard fills, whatever the hash
		puts := 50 * n
		for i := range puts {
			c.put(s, arkRow{key: fmt.Sprintf("99999/k%d", i)})
		}
		if got := c.entries(); got != n {
			t.Errorf("cache of %d after %d puts: %d entries", n, puts, got)
		}
		if _, ok, _ := c.get(fmt.Sprintf("99999/k%d", puts-1)); !ok {
			t.Errorf("cache of %d: the last row put is not held", n)
		}
		c.advance(true, &c.flushes)
		c.put(s, arkRow{key: "y"})
		if _, ok, _ := c.get("y"); ok || c.entries() != 0 {
			t.Errorf("cache of %d: a put of an old state was held (%d entries)", n, c.entries())
		}
	}
}
