package resolver

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultBatch is the most ARK lookups one coalesced query holds when Config.Batch is 0.
const DefaultBatch = 128

// DefaultBatchQueries is how many coalesced queries run at once when Config.BatchQueries is 0.
const DefaultBatchQueries = 4

// batchTimeout bounds one coalesced query: it runs for every request of its batch, so no single
// request's context (or its cancellation) governs it.
const batchTimeout = 5 * time.Second

// arkBatchQuery reads every ARK of a set of keys: the candidates of many requests at once.
const arkBatchQuery = arkColumns + ` where a.ark = any($1::text[])`

// layout states of coalescer.layout.
const (
	layoutUnknown int32 = iota // not read yet (or the read failed)
	layoutSingle               // one node: lookups are coalesced
	layoutCitus                // Citus: every lookup is its own query, routed to one shard
)

// lookup is one request's wait for its ARK: its candidate keys, the longest first.
type lookup struct {
	keys  []string
	reply chan lookupResult // buffered, one answer
}

type lookupResult struct {
	row   arkRow
	found bool
	err   error
}

// coalescer gathers the ARK lookups of concurrent requests into one query of many keys (on a
// single node; a Citus ledger keeps one query per request, which Citus routes to the shard of
// the ARK). There is no background goroutine: a request that finds fewer than maxQueries
// queries running runs one itself, with every lookup waiting (up to maxBatch), and hands the
// rest on to a goroutine of its own when more arrived meanwhile. A lookup never waits for a
// timer: under light load every batch holds one lookup. Nothing is cached: every lookup reads
// the ledger after it was asked.
type coalescer struct {
	pool       *pgxpool.Pool
	maxBatch   int
	maxQueries int
	layout     atomic.Int32

	mu      sync.Mutex
	pending []*lookup
	running int

	// lookups holds *lookup whose reply was read, for the next request; batches holds *batch.
	lookups sync.Pool
	batches sync.Pool
}

// batch is what one coalesced query works in, reused by the next.
type batch struct {
	lookups []*lookup
	keys    []string
	found   map[string]arkRow
}

// useBatches reports whether lookups on this ledger are coalesced: the layout is read once (a
// ledger is laid out for Citus when the citus extension is in its database; the resolver role
// reads pg_extension like any role), and again after a failed read.
func (c *coalescer) useBatches(ctx context.Context) bool {
	if c.maxBatch <= 1 {
		return false
	}
	switch c.layout.Load() {
	case layoutSingle:
		return true
	case layoutCitus:
		return false
	}
	var citus bool
	if err := c.pool.QueryRow(ctx, `select exists (select 1 from pg_extension where extname = 'citus')`).Scan(&citus); err != nil {
		return false
	}
	if citus {
		c.layout.Store(layoutCitus)
		return false
	}
	c.layout.Store(layoutSingle)
	return true
}

// do looks up keys (the longest first) and returns the row of the longest that is an ARK.
func (c *coalescer) do(ctx context.Context, keys []string) (arkRow, bool, error) {
	l, _ := c.lookups.Get().(*lookup)
	if l == nil {
		l = &lookup{reply: make(chan lookupResult, 1)}
	}
	l.keys = keys
	c.mu.Lock()
	c.pending = append(c.pending, l)
	lead := c.running < c.maxQueries
	if lead {
		c.running++
	}
	c.mu.Unlock()
	if lead {
		c.flush(ctx, true)
	}
	select {
	case r := <-l.reply:
		l.keys = nil
		c.lookups.Put(l)
		return r.row, r.found, r.err
	case <-ctx.Done():
		// the reply is still to come: l is not reused
		return arkRow{}, false, fmt.Errorf("resolver: look up %s: %w", keys[0], ctx.Err())
	}
}

// flush runs one query for the lookups waiting (up to maxBatch) and answers them; when more are
// waiting after it, a goroutine of its own runs on (first is the calling request's own flush,
// which returns to answer its request).
func (c *coalescer) flush(ctx context.Context, first bool) {
	for {
		c.mu.Lock()
		if len(c.pending) == 0 {
			c.running--
			c.mu.Unlock()
			return
		}
		n := min(len(c.pending), c.maxBatch)
		b, _ := c.batches.Get().(*batch)
		if b == nil {
			b = &batch{found: make(map[string]arkRow)}
		}
		b.lookups = append(b.lookups[:0], c.pending[:n]...)
		rest := copy(c.pending, c.pending[n:])
		clear(c.pending[rest:])
		c.pending = c.pending[:rest]
		c.mu.Unlock()
		c.query(ctx, b)
		clear(b.lookups)
		clear(b.keys)
		clear(b.found)
		c.batches.Put(b)
		if first {
			c.mu.Lock()
			more := len(c.pending) > 0
			if !more {
				c.running--
			}
			c.mu.Unlock()
			if more {
				go c.flush(context.WithoutCancel(ctx), false)
			}
			return
		}
	}
}

// query reads the candidates of every lookup of batch in one statement and answers each with
// the longest of its candidates that is an ARK.
func (c *coalescer) query(ctx context.Context, b *batch) {
	b.keys = b.keys[:0]
	for _, l := range b.lookups {
		b.keys = append(b.keys, l.keys...)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), batchTimeout)
	defer cancel()
	rows, err := c.pool.Query(ctx, arkBatchQuery, b.keys)
	found := b.found
	if err == nil {
		for rows.Next() {
			var row arkRow
			if row, err = readARKRow(rows); err != nil {
				break
			}
			found[row.key] = row
		}
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
	}
	for _, l := range b.lookups {
		if err != nil {
			l.reply <- lookupResult{err: fmt.Errorf("resolver: look up %s: %w", l.keys[0], err)}
			continue
		}
		var r lookupResult
		for _, k := range l.keys {
			if row, ok := found[k]; ok {
				r = lookupResult{row: row, found: true}
				break
			}
		}
		l.reply <- r
	}
}
