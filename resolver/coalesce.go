package resolver

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultBatch is the most ARK lookups one coalesced query holds when Config.Batch is 0.
const DefaultBatch = 128

// DefaultBatchQueries is how many coalesced round trips run at once when Config.BatchQueries is
// 0: fewer at once make each hold more lookups, which costs the ledger less per lookup.
const DefaultBatchQueries = 2

// batchTimeout bounds one coalesced query: it runs for every request of its batch, so no single
// request's context (or its cancellation) governs it.
const batchTimeout = 5 * time.Second

// arkBatchQuery reads every ARK of a set of keys: the candidates of many requests at once.
const arkBatchQuery = arkColumns + ` where a.ark = any($1::text[])`

// naanBatchQuery is naanQuery for many requests at once: for each (NAAN, name) pair, its index
// in the arrays (from 1) and what naanQuery reads; a pair whose NAAN is not one of the ledger's
// has no row.
const naanBatchQuery = `select q.i, n.is_authoritative, coalesce(n.redirect, ''), n.name,
		coalesce((select s.redirect from shoulder s
			where s.naan = n.naan and coalesce(s.redirect, '') <> '' and starts_with(q.name, s.shoulder)
			order by length(s.shoulder) desc limit 1), '')
	from unnest($1::text[], $2::text[]) with ordinality as q(naan, name, i)
	join naan n on n.naan = q.naan`

// layout states of layout.state.
const (
	layoutUnknown int32 = iota // not read yet (or the read failed)
	layoutSingle               // one node: lookups are coalesced
	layoutCitus                // Citus: every lookup is its own query, routed to one shard
)

// layout is what the resolver knows of its ledger's layout.
type layout struct {
	pool  *pgxpool.Pool
	state atomic.Int32
}

// single reports whether the ledger is a single node (its lookups are coalesced): the layout is
// read once (a ledger is laid out for Citus when the citus extension is in its database; the
// resolver role reads pg_extension like any role), and again after a failed read.
func (l *layout) single(ctx context.Context) bool {
	switch l.state.Load() {
	case layoutSingle:
		return true
	case layoutCitus:
		return false
	}
	var citus bool
	if err := l.pool.QueryRow(ctx, `select exists (select 1 from pg_extension where extname = 'citus')`).Scan(&citus); err != nil {
		return false
	}
	if citus {
		l.state.Store(layoutCitus)
		return false
	}
	l.state.Store(layoutSingle)
	return true
}

// lookup is one request's wait for its answer: an ARK's (keys, its candidates, the longest
// first) or a NAAN's (naan, when keys is nil).
type lookup struct {
	keys  []string
	naan  naanKey
	reply chan lookupResult // buffered, one answer
}

type lookupResult struct {
	ark  arkFound
	naan naanFound
	err  error
}

// arkFound is the answer of one ARK lookup: the row of the longest of its candidates that is an
// ARK, if any.
type arkFound struct {
	row   arkRow
	found bool
}

// naanKey is one NAAN lookup: the NAAN and the name as the ledger stores it ("/" and the name).
type naanKey struct {
	naan, name string
}

// naanFound is the answer of one NAAN lookup: what naanQuery reads, and whether the NAAN is one
// of the ledger's.
type naanFound struct {
	row   naanRow
	known bool
}

// coalescer gathers the lookups of concurrent requests into one round trip to the ledger (on a
// single node; a Citus ledger keeps one query per request, which Citus routes to the shard of
// the ARK): the ARK lookups waiting in one query of many keys (arkBatchQuery), the NAAN lookups
// waiting (those of names that are no ARK) in another (naanBatchQuery), both sent at once. There
// is no background goroutine: a request that finds fewer than maxQueries round trips running
// runs one itself, with every lookup waiting (up to maxBatch), and hands the rest on to a
// goroutine of its own when more arrived meanwhile. A lookup never waits for a timer: under
// light load every batch holds one lookup. Nothing is cached: every lookup reads the ledger
// after it was asked.
type coalescer struct {
	pool       *pgxpool.Pool
	maxBatch   int
	maxQueries int

	mu      sync.Mutex
	pending []*lookup
	running int

	// lookups holds *lookup whose reply was read, for the next request; batches holds *batch.
	lookups sync.Pool
	batches sync.Pool
}

// batch is what one round trip works in, reused by the next.
type batch struct {
	lookups      []*lookup
	keys         []string // the candidates of the ARK lookups
	naans, names []string // the NAAN lookups' pairs
	naanOf       []int    // the index in lookups of each NAAN lookup
	found        map[string]arkRow
	res          []lookupResult
}

// lookupARK looks up keys (the longest first) with the lookups of other requests and returns
// the row of the longest that is an ARK; an error is the round trip's, or ctx's when it ended
// first.
func (c *coalescer) lookupARK(ctx context.Context, keys []string) (arkFound, error) {
	r, err := c.do(ctx, keys, naanKey{})
	return r.ark, err
}

// lookupNAAN looks up what naanQuery reads of k with the lookups of other requests.
func (c *coalescer) lookupNAAN(ctx context.Context, k naanKey) (naanFound, error) {
	r, err := c.do(ctx, nil, k)
	return r.naan, err
}

func (c *coalescer) do(ctx context.Context, keys []string, naan naanKey) (lookupResult, error) {
	l, _ := c.lookups.Get().(*lookup)
	if l == nil {
		l = &lookup{reply: make(chan lookupResult, 1)}
	}
	l.keys, l.naan = keys, naan
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
		l.keys, l.naan = nil, naanKey{}
		c.lookups.Put(l)
		return r, r.err
	case <-ctx.Done():
		// the reply is still to come: l is not reused
		return lookupResult{}, ctx.Err()
	}
}

// flush runs one round trip for the lookups waiting (up to maxBatch) and answers them; when more
// are waiting after it, a goroutine of its own runs on (first is the calling request's own
// flush, which returns to answer its request).
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
		c.answer(ctx, b)
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

// answer reads what every lookup of b asks in one round trip and answers each: an ARK lookup
// with the longest of its candidates that is an ARK, a NAAN lookup with its NAAN's row.
func (c *coalescer) answer(ctx context.Context, b *batch) {
	b.keys, b.naans, b.names, b.naanOf = b.keys[:0], b.naans[:0], b.names[:0], b.naanOf[:0]
	for i, l := range b.lookups {
		if l.keys != nil {
			b.keys = append(b.keys, l.keys...)
		} else {
			b.naans, b.names, b.naanOf = append(b.naans, l.naan.naan), append(b.names, l.naan.name), append(b.naanOf, i)
		}
	}
	b.res = append(b.res[:0], make([]lookupResult, len(b.lookups))...)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), batchTimeout)
	err := c.query(ctx, b)
	cancel()
	for i, l := range b.lookups {
		switch {
		case err != nil:
			l.reply <- lookupResult{err: err}
		case l.keys != nil:
			for _, k := range l.keys {
				if row, ok := b.found[k]; ok {
					b.res[i].ark = arkFound{row: row, found: true}
					break
				}
			}
			l.reply <- b.res[i]
		default:
			l.reply <- b.res[i]
		}
	}
	clear(b.lookups)
	clear(b.keys)
	clear(b.naans)
	clear(b.names)
	clear(b.found)
	clear(b.res)
}

// query sends the queries of b (the ARK lookups', the NAAN lookups', or both in one batch) and
// reads their rows into b.found and b.res.
func (c *coalescer) query(ctx context.Context, b *batch) error {
	switch {
	case len(b.naans) == 0:
		rows, err := c.pool.Query(ctx, arkBatchQuery, b.keys)
		if err != nil {
			return err
		}
		return readARKRows(rows, b.found)
	case len(b.keys) == 0:
		rows, err := c.pool.Query(ctx, naanBatchQuery, b.naans, b.names)
		if err != nil {
			return err
		}
		return readNAANRows(rows, b)
	}
	q := &pgx.Batch{}
	q.Queue(arkBatchQuery, b.keys)
	q.Queue(naanBatchQuery, b.naans, b.names)
	br := c.pool.SendBatch(ctx, q)
	rows, err := br.Query()
	if err == nil {
		err = readARKRows(rows, b.found)
	}
	if err == nil {
		if rows, err = br.Query(); err == nil {
			err = readNAANRows(rows, b)
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// readARKRows reads rows of arkColumns into found, by key, and closes rows.
func readARKRows(rows pgx.Rows, found map[string]arkRow) error {
	defer rows.Close()
	for rows.Next() {
		row, err := readARKRow(rows)
		if err != nil {
			return err
		}
		found[row.key] = row
	}
	return rows.Err()
}

// readNAANRows reads rows of naanBatchQuery into the results of b's NAAN lookups, and closes
// rows.
func readNAANRows(rows pgx.Rows, b *batch) error {
	defer rows.Close()
	for rows.Next() {
		var i int64
		var n naanRow
		if err := rows.Scan(&i, &n.authoritative, &n.redirect, &n.name, &n.shoulderRedirect); err != nil {
			return err
		}
		if i < 1 || i > int64(len(b.naanOf)) {
			return fmt.Errorf("NAAN lookups: a row of pair %d, of %d", i, len(b.naanOf))
		}
		b.res[b.naanOf[i-1]].naan = naanFound{row: n, known: true}
	}
	return rows.Err()
}
