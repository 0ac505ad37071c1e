package resolver

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/metrics"
)

// NotifyChannel is the channel on which the ledger announces a change to what the cache holds:
// every UPDATE statement on ark or on naan notifies it when its transaction commits (the
// triggers ark_notify_resolver and naan_notify_resolver, on the single layout only).
const NotifyChannel = "arkhe_resolver"

// DefaultCacheEntries is the cache's size arkhe serve runs with unless told otherwise, in ARK
// rows.
const DefaultCacheEntries = 100_000

// cacheShards is the most shards (each a map with a mutex of its own) a cache is cut into.
const cacheShards = 64

// Backoff of the listener between connection attempts: doubled after each failure, from
// listenBackoffMin up to listenBackoffMax, back to the least once a LISTEN succeeded.
const (
	listenBackoffMin = 100 * time.Millisecond
	listenBackoffMax = 5 * time.Second
)

// A listener that heard nothing for listenPingEvery pings the server, and gives its connection up
// when no answer came within listenPingTimeout: a connection cut without a word (a network
// partition) is noticed then, not when TCP gives up.
const (
	listenPingEvery   = 10 * time.Second
	listenPingTimeout = 5 * time.Second
)

// notifyTriggersQuery counts the enabled triggers that announce a change on NotifyChannel: the
// cache is used only on a ledger that has both (the single layout).
const notifyTriggersQuery = `select count(*) from pg_trigger
	where tgname in ('ark_notify_resolver', 'naan_notify_resolver') and not tgisinternal and tgenabled <> 'D'
	  and tgrelid in ('ark'::regclass, 'naan'::regclass)`

// cache holds the rows of ARKs that were an exact match of a request (the request's ledger key
// is itself an ARK): an ARK is never deleted, so such a key stays an exact match forever, and
// only the row's content can change (the ARK's, or its NAAN's policy and name). Misses, suffix
// matches and NAAN or shoulder answers are never held.
//
// Correct by construction: the cache is used only while its listener holds a LISTEN on
// NotifyChannel; every notification, and the listener's loss and return, starts a new
// generation, and a row is used only in the generation it was put in. A put carries the state
// read before its look-up of the ledger began and is dropped when the state changed meanwhile,
// so a look-up that raced a change never leaves the old row behind.
type cache struct {
	shards []cacheShard
	seed   maphash.Seed

	// state is the generation times two, plus one while the listener holds its LISTEN (the
	// cache is used only then).
	state atomic.Uint64

	// mu orders the state's changes and guards changed, closed (and replaced) on each.
	mu      sync.Mutex
	changed chan struct{}

	hits, misses, flushes, listens, pings atomic.Int64

	// pingEvery is listenPingEvery, or a test's.
	pingEvery time.Duration

	// afterLookup, when set (by a test), is called with the key of a look-up of the ledger that
	// found an exact match, after it and before its row is put.
	afterLookup func(key string)
	// beforeConnect, when set (by a test), is called before each connection of the listener.
	beforeConnect func()
}

type cacheShard struct {
	mu  sync.Mutex
	m   map[string]cacheEntry
	max int // rows held at most; the shards' add up to the cache's
}

type cacheEntry struct {
	state uint64
	row   arkRow
}

// newCache returns a cache of at most entries rows (> 0), off until its listener connects.
func newCache(entries int) *cache {
	n := min(entries, cacheShards)
	c := &cache{shards: make([]cacheShard, n), seed: maphash.MakeSeed(), changed: make(chan struct{}), pingEvery: listenPingEvery}
	for i := range c.shards {
		c.shards[i].m = make(map[string]cacheEntry)
		c.shards[i].max = entries / n
		if i < entries%n {
			c.shards[i].max++
		}
	}
	return c
}

func (c *cache) shard(key string) *cacheShard {
	return &c.shards[maphash.String(c.seed, key)%uint64(len(c.shards))]
}

// get returns the row held for key in the current generation, if any, and the state it read
// (the state a put of a look-up that follows a miss carries).
func (c *cache) get(key string) (arkRow, bool, uint64) {
	s := c.state.Load()
	if s&1 == 0 {
		c.misses.Add(1)
		return arkRow{}, false, s
	}
	sh := c.shard(key)
	sh.mu.Lock()
	e, ok := sh.m[key]
	sh.mu.Unlock()
	if !ok || e.state != s {
		c.misses.Add(1)
		return arkRow{}, false, s
	}
	c.hits.Add(1)
	return e.row, true, s
}

// put holds row (an exact match: row.key is the request's ledger key) when the state is still s,
// read before the look-up that found row began, and the cache was on then. A full shard drops an
// arbitrary row first.
func (c *cache) put(s uint64, row arkRow) {
	if s&1 == 0 {
		return
	}
	if c.afterLookup != nil {
		c.afterLookup(row.key)
	}
	sh := c.shard(row.key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	// read under the shard's lock: a flush moves the state before it clears the shard, so a
	// row put in the old state is cleared after
	if c.state.Load() != s {
		return
	}
	if _, ok := sh.m[row.key]; !ok && len(sh.m) >= sh.max {
		for k := range sh.m {
			delete(sh.m, k)
			break
		}
	}
	sh.m[row.key] = cacheEntry{state: s, row: row}
}

// advance starts a new generation, on or off, drops every row held and adds one to count, then
// wakes the waiters of waitFor.
func (c *cache) advance(on bool, count *atomic.Int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := (c.state.Load() + 2) &^ 1
	if on {
		s |= 1
	}
	c.state.Store(s)
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		clear(sh.m)
		sh.mu.Unlock()
	}
	count.Add(1)
	c.wake()
}

// wake wakes the waiters of waitFor; c.mu is held.
func (c *cache) wake() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// waitFor waits until cond (called with c.mu held) holds, or ctx ends.
func (c *cache) waitFor(ctx context.Context, cond func() bool) error {
	for {
		c.mu.Lock()
		ok, ch := cond(), c.changed
		c.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *cache) entries() int {
	n := 0
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}

// Listen keeps the cache's listener (one connection of its own, not from the pool, on the pool's
// connection settings) listening on NotifyChannel until ctx ends: the cache is used only while
// it listens, every notification drops what it holds, and a lost connection drops it and turns
// it off until a LISTEN succeeds again (reconnecting with backoff; every failure is told to
// Config.OnCacheError). A listener that heard nothing for a while pings the server, so that a
// connection cut without a word is given up too. Run it once per Resolver (one listener at a time). It returns nil when
// ctx ends, or at once when Config.CacheEntries is 0.
// Errors: a *CacheOffError, at once, for a ledger that does not announce its changes (a Citus
// ledger, which has no notify triggers): the cache stays off and every request reads the ledger.
func (r *Resolver) Listen(ctx context.Context) error {
	c := r.cache
	if c == nil {
		return nil
	}
	backoff := listenBackoffMin
	for {
		listened, err := c.session(ctx, r.pool.Config().ConnConfig)
		if ctx.Err() != nil {
			return nil
		}
		if IsCacheOff(err) {
			return err
		}
		if r.cfg.OnCacheError != nil {
			r.cfg.OnCacheError(err)
		}
		if listened {
			backoff = listenBackoffMin
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		backoff = min(2*backoff, listenBackoffMax)
	}
}

// session connects, checks the ledger announces its changes, listens and drops the cache on
// every notification until the connection fails or ctx ends; the cache is on only meanwhile.
// listened reports whether its LISTEN succeeded.
func (c *cache) session(ctx context.Context, cfg *pgx.ConnConfig) (listened bool, err error) {
	if c.beforeConnect != nil {
		c.beforeConnect()
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return false, fmt.Errorf("resolver: cache listener: connect: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		conn.Close(cctx)
	}()
	var n int
	if err := conn.QueryRow(ctx, notifyTriggersQuery).Scan(&n); err != nil {
		return false, fmt.Errorf("resolver: cache listener: read the notify triggers: %w", err)
	}
	if n != 2 {
		return false, &CacheOffError{Reason: fmt.Sprintf("the ledger has %d of its 2 notify triggers (ark_notify_resolver, naan_notify_resolver): "+
			"a Citus ledger announces no change, so every request reads the ledger", n)}
	}
	if _, err := conn.Exec(ctx, "listen "+NotifyChannel); err != nil {
		return false, fmt.Errorf("resolver: cache listener: listen: %w", err)
	}
	c.advance(true, &c.listens)
	// a lost connection may have lost a notification: off, and dropped, until the next LISTEN
	defer c.advance(false, &c.flushes)
	for {
		wctx, cancel := context.WithTimeout(ctx, c.pingEvery)
		_, err := conn.WaitForNotification(wctx)
		quiet := wctx.Err() == context.DeadlineExceeded && ctx.Err() == nil
		cancel()
		switch {
		case err == nil:
			// only this goroutine turns the cache on and off: it is on here
			c.advance(true, &c.flushes)
		case quiet && !conn.IsClosed():
			// a notification arriving during the ping is kept by the connection for the next wait
			pctx, cancel := context.WithTimeout(ctx, listenPingTimeout)
			err := conn.Ping(pctx)
			cancel()
			if err != nil {
				return true, fmt.Errorf("resolver: cache listener: ping: %w", err)
			}
			c.mu.Lock()
			c.pings.Add(1)
			c.wake()
			c.mu.Unlock()
		default:
			return true, fmt.Errorf("resolver: cache listener: %w", err)
		}
	}
}

// cacheMetrics returns the cache's families (none without a cache):
// arkhe_resolver_cache_hits_total and arkhe_resolver_cache_misses_total (ARK look-ups answered
// from the cache, and those that read the ledger, the cache off included),
// arkhe_resolver_cache_flushes_total (notifications and losses of the listener, each of which
// dropped the cache), arkhe_resolver_cache_entries (rows held) and arkhe_resolver_cache_on (1
// while the listener listens, else 0).
func (r *Resolver) cacheMetrics() []metrics.Family {
	c := r.cache
	if c == nil {
		return nil
	}
	on := 0.0
	if c.state.Load()&1 == 1 {
		on = 1
	}
	counter := func(name, help string, v int64) metrics.Family {
		return metrics.Family{Name: name, Help: help, Type: metrics.Counter, Samples: []metrics.Sample{{Value: float64(v)}}}
	}
	return []metrics.Family{
		counter("arkhe_resolver_cache_hits_total", "ARK look-ups answered from the cache.", c.hits.Load()),
		counter("arkhe_resolver_cache_misses_total", "ARK look-ups that read the ledger (the cache off included).", c.misses.Load()),
		counter("arkhe_resolver_cache_flushes_total", "Times the cache was dropped: notifications of a change, losses of the listener.", c.flushes.Load()),
		metrics.G("arkhe_resolver_cache_entries", "ARK rows the cache holds.", float64(c.entries())),
		metrics.G("arkhe_resolver_cache_on", "1 while the cache is used (its listener listens), else 0.", on),
	}
}
