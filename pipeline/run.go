package pipeline

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"
)

// This file is the streaming run engine of issue 3 ("Streaming"):
//
//	reader ──route by hash(request ID)──▶ worker i: accumulate ─▶ sink (COPY) ─┐
//	   │                                                                        ▼
//	   └── rows rejected while reading or validating ───────────────────▶ collector
//	                                                                   (reorder buffer,
//	                                                                    mint map, rejects,
//	                                                                    progress)
//
// One reader goroutine reads the manifests in order, numbers every row (Row.Seq), validates it
// (Validate) and routes it to worker hash(request ID) mod Workers, so that every occurrence of a
// request ID is handled by one worker in manifest order (README decision 9). Each worker has two
// goroutines: an accumulator that fills a batch (computing the payload digests) and a sink stage
// that hands the full batch to the Sink; while the sink stage runs COPY, the accumulator fills
// the next batch and the reader keeps reading. The collector puts results back in manifest order
// in a ring buffer and writes the mint map and the reject file.
//
// Memory is bounded by the window: the reader takes one token per row from a semaphore of
// Window tokens and the collector gives them back as rows leave in order, so at most Window rows
// are in flight whatever the manifest's size. When the window is full the reader asks the worker
// whose partial batch holds the row the collector waits for to hand that batch over, and waits
// (backpressure), so the run never deadlocks on a skewed distribution of request IDs and never
// cuts a batch short when it does not have to.

// Sink consumes batches of validated rows for a Run (layout.md: pipeline defines the small
// interface it consumes; loader implements it with COPY). Run calls OpenWorker once per worker
// before reading, from one goroutine.
type Sink interface {
	// OpenWorker returns the SinkWorker of worker number worker (0 ≤ worker < Workers). Its
	// error stops the run before any row is read.
	OpenWorker(ctx context.Context, worker int) (SinkWorker, error)
}

// WorkerLimiter is an optional interface of a Sink: RunConfig.Validate lowers Workers to
// MaxWorkers() when that is positive and smaller. A sink whose outcomes depend on the order rows
// reach it across workers (a daily quota: the first rows in manifest order get it, README
// decision 10) returns 1, so its one worker sees every batch in manifest order.
type WorkerLimiter interface {
	MaxWorkers() int
}

// SinkWorker writes the batches of one worker, one at a time, in manifest order of that worker's
// rows. It is used by one goroutine.
type SinkWorker interface {
	// Write settles every row of b: it sets Outcome to OutcomeMinted or OutcomeReplayed with ARK
	// in printed form ("ark:NAAN/name"), or to OutcomeRejected with Reject saying why (the row's
	// Source as location). It may set b.Draws and b.Collisions. An error means the run cannot go
	// on (lost connection, cancelled context, a refusal of the whole run); rows then count as
	// not done, and what was committed stays committed.
	Write(ctx context.Context, b *Batch) error
	// Close releases the worker's resources (its connection). It is called once, also after
	// an error.
	Close() error
}

// Outcome is what happened to one manifest row in a run.
type Outcome uint8

// The outcomes of a row. OutcomePending is a row not yet settled by the sink.
const (
	OutcomePending Outcome = iota
	OutcomeMinted
	OutcomeReplayed
	OutcomeRejected
)

// String returns "pending", StatusMinted ("minted"), StatusReplayed ("replayed") or
// "rejected".
func (o Outcome) String() string {
	switch o {
	case OutcomeMinted:
		return StatusMinted
	case OutcomeReplayed:
		return StatusReplayed
	case OutcomeRejected:
		return "rejected"
	}
	return "pending"
}

// Row is one validated manifest row in flight, and the sink's verdict on it.
type Row struct {
	// Seq is the row's 0-based position among all rows the run read (rejected ones included),
	// across the manifests in the order given.
	Seq int64
	// Record is the mapped, validated manifest row.
	Record Record
	// Digest is PayloadDigest(&Record), the receipt digest (README decision 6), set by Run
	// before the sink sees the row.
	Digest [16]byte
	// ARK is the row's ARK in printed form, "ark:NAAN/name" (README decision 1), set by the
	// sink for minted and replayed rows; ARK[4:] is the ledger key.
	ARK string
	// Outcome is set by the sink.
	Outcome Outcome
	// Reject says why, with Outcome == OutcomeRejected.
	Reject *RowError
}

// Batch is a run of rows for one sink worker, in manifest order. Draws and Collisions are the
// blade draws and the draws that hit an existing (or in-batch) name while settling it, set by
// the sink and summed into Summary.
type Batch struct {
	Worker     int
	Rows       []Row
	Draws      int64
	Collisions int64

	left   int         // rows not yet emitted by the collector
	freeTo chan *Batch // where the collector returns the batch for reuse
}

// Progress is a snapshot of a run, passed to RunConfig.Progress. Done counts rows settled and
// written out in manifest order (minted + replayed + rejected).
type Progress struct {
	Read, Done, Minted, Replayed, Rejected, Collisions int64
	Elapsed                                            time.Duration
}

// Summary is the outcome of a run (issue 3 "Output": read, minted, replayed, rejected,
// collisions, rows/s). Read counts every manifest row read, bad ones included; Draws and
// Collisions are the blade draws and the collisions among them.
type Summary struct {
	Read, Minted, Replayed, Rejected int64
	Draws, Collisions                int64
	Batches                          int64
	Elapsed                          time.Duration
}

// RowsPerSecond is Read divided by Elapsed (0 for an instant run).
func (s Summary) RowsPerSecond() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Read) / s.Elapsed.Seconds()
}

// Defaults of RunConfig.
const (
	// DefaultBatchSize is the rows per sink batch, one transaction each: about 100k rows per
	// transaction measured best (issue 3; see bench/).
	DefaultBatchSize = 100_000
	// DefaultWorkers is the number of sink workers (one database connection each).
	DefaultWorkers = 2
	// workerQueue is the capacity of each worker's input channel, in rows.
	workerQueue = 1024
	// resultQueue is the capacity of the collector's input channel, in messages.
	resultQueue = 256
)

// RunConfig configures Run.
type RunConfig struct {
	// Inputs are the manifest paths, read one after the other (OpenManifest picks the format).
	Inputs []string
	// Mapping maps source fields to manifest fields (zero: the default mapping).
	Mapping Mapping
	// Limits are the value limits of README decision 12 (zero: DefaultLimits).
	Limits Limits
	// Workers is the number of sink workers (0: DefaultWorkers).
	Workers int
	// BatchSize is the rows per sink batch (0: DefaultBatchSize); each worker's first three
	// batches are smaller (RampBatchSize).
	BatchSize int
	// Window is the most rows in flight between the reader and the collector (0: 2 × Workers ×
	// BatchSize plus the workers' queues: enough for every worker to fill one batch while its
	// previous one is in COPY). It bounds memory whatever the manifest's size.
	Window int
	// Sink settles the rows; required.
	Sink Sink
	// MintMap receives one row per minted or replayed manifest row, in manifest order; nil
	// writes none. Run neither closes nor aborts it: the caller closes it after a successful
	// Run (making it appear atomically) and aborts it otherwise.
	MintMap MintMapWriter
	// Rejects receives one row per rejected manifest row, in manifest order; nil only counts
	// them. Run does not close it.
	Rejects *RejectWriter
	// Progress, if set, is called from the collector goroutine after every group of rows it
	// writes out. It must be quick; cancelling the run's context from it is allowed.
	Progress func(Progress)
	// Now returns the current time (nil: time.Now); for Elapsed.
	Now func() time.Time
}

// Validate checks the configuration and fills in defaults. Errors name the field.
func (c *RunConfig) Validate() error {
	if len(c.Inputs) == 0 {
		return errors.New("run: no manifest given")
	}
	if c.Sink == nil {
		return errors.New("run: no sink")
	}
	if c.Workers < 0 || c.BatchSize < 0 || c.Window < 0 {
		return fmt.Errorf("run: workers %d, batch size %d and window %d must not be negative", c.Workers, c.BatchSize, c.Window)
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if wl, ok := c.Sink.(WorkerLimiter); ok {
		if n := wl.MaxWorkers(); n > 0 && c.Workers > n {
			c.Workers = n
		}
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.Window == 0 {
		c.Window = 2*c.Workers*c.BatchSize + c.Workers*workerQueue
	}
	if c.Window < c.Workers {
		c.Window = c.Workers
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

// workItem is what the reader sends a worker: a row, or a request to hand over the partial batch
// if it holds a row with Seq ≤ upTo.
type workItem struct {
	row   Row
	flush bool
	upTo  int64
}

// result is what the collector receives: a settled batch, or one row rejected by the reader.
type result struct {
	batch *Batch
	row   *Row
}

// Run streams the manifests of cfg.Inputs through validation and cfg.Sink and writes the mint map
// and the reject file in manifest order (issue 3 "Streaming", "Bad input", "Output"). Bad rows —
// a *RowError from a reader or from Validate — go to the reject file and the run goes on; every
// other row reaches the sink. Run returns the summary so far and an error when the run stopped
// early: a *ManifestError (a manifest could not be opened or read on), the sink's error, an
// I/O error of the outputs, or ctx's error. Rows the sink committed stay committed; re-running
// replays them (README decision 6).
func Run(ctx context.Context, cfg RunConfig) (Summary, error) {
	if err := cfg.Validate(); err != nil {
		return Summary{}, err
	}
	start := cfg.Now()
	g, gctx := errgroup.WithContext(ctx)

	workers := make([]SinkWorker, 0, cfg.Workers)
	closeWorkers := func() error {
		var first error
		for _, w := range workers {
			if err := w.Close(); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	for i := range cfg.Workers {
		w, err := cfg.Sink.OpenWorker(ctx, i)
		if err != nil {
			_ = closeWorkers()
			return Summary{}, fmt.Errorf("run: open sink worker %d: %w", i, err)
		}
		workers = append(workers, w)
	}

	fl := &flow{window: semaphore.NewWeighted(int64(cfg.Window)), moved: make(chan struct{}, 1)}
	results := make(chan result, resultQueue)
	inputs := make([]chan workItem, cfg.Workers)
	for i := range inputs {
		inputs[i] = make(chan workItem, workerQueue)
	}
	var read atomic.Int64 // rows read so far

	// the reader
	readerDone := make(chan struct{})
	g.Go(func() error {
		defer close(readerDone)
		defer func() {
			for _, in := range inputs {
				close(in)
			}
		}()
		return readAll(gctx, &cfg, fl, inputs, results, &read)
	})

	// the workers: accumulator → sink stage
	sinksDone := make(chan struct{}, cfg.Workers)
	for i := range cfg.Workers {
		full := make(chan *Batch, 1)
		g.Go(func() error {
			defer close(full)
			return accumulate(gctx, i, cfg.BatchSize, inputs[i], full)
		})
		g.Go(func() error {
			defer func() { sinksDone <- struct{}{} }()
			for b := range full {
				if err := workers[i].Write(gctx, b); err != nil {
					return fmt.Errorf("run: worker %d: %w", i, err)
				}
				select {
				case results <- result{batch: b}:
				case <-gctx.Done():
					return gctx.Err()
				}
			}
			return nil
		})
	}
	// close results once the reader and every sink stage are done
	go func() {
		<-readerDone
		for range cfg.Workers {
			<-sinksDone
		}
		close(results)
	}()

	// the collector
	var sum Summary
	g.Go(func() error {
		return collect(gctx, &cfg, fl, results, &sum, &read, start)
	})

	err := g.Wait()
	if cerr := closeWorkers(); err == nil && cerr != nil {
		err = fmt.Errorf("run: close sink: %w", cerr)
	}
	sum.Read = read.Load()
	sum.Elapsed = cfg.Now().Sub(start)
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		err = fmt.Errorf("%w (%w)", ctx.Err(), err)
	}
	return sum, err
}

// flow is the backpressure between the reader and the collector: a window of tokens, one per
// row in flight, and where the collector is.
type flow struct {
	window *semaphore.Weighted
	next   atomic.Int64  // Seq of the next row the collector writes out
	moved  chan struct{} // signalled (capacity 1) each time the collector writes rows out
}

// readAll is the reader: it reads every manifest in order, rejects bad rows straight to the
// collector and routes good ones to their worker. It counts the rows read in read.
//
// When the window is full the collector is waiting for row fl.next; if that row sits in a
// worker's partial batch, only a flush gets it out. So the reader sends each worker that was
// given rows up to fl.next a flush request for the batch holding rows up to fl.next (a worker
// whose partial batch starts later ignores it, so full-size batches are not cut), waits for the
// collector to move, and tries again.
func readAll(ctx context.Context, cfg *RunConfig, fl *flow, inputs []chan workItem, results chan<- result, read *atomic.Int64) error {
	var seq int64
	seed := maphash.MakeSeed()
	lastSent := make([]int64, len(inputs))  // Seq of the last row sent to each worker
	lastFlush := make([]int64, len(inputs)) // upTo of the last flush sent to each worker
	for i := range lastSent {
		lastSent[i], lastFlush[i] = -1, -1
	}
	acquire := func() error {
		for !fl.window.TryAcquire(1) {
			upTo := fl.next.Load()
			for i := range inputs {
				if lastSent[i] < upTo || lastFlush[i] >= upTo {
					continue
				}
				lastFlush[i] = upTo
				select {
				case inputs[i] <- workItem{flush: true, upTo: upTo}:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			select {
			case <-fl.moved:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	reject := func(r *Row) error {
		select {
		case results <- result{row: r}:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for _, path := range cfg.Inputs {
		mr, err := OpenManifest(path, cfg.Mapping)
		if err != nil {
			return err
		}
		for {
			rec, err := mr.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			var rowErr *RowError
			if err != nil && !errors.As(err, &rowErr) {
				_ = mr.Close()
				return err
			}
			if err := acquire(); err != nil {
				_ = mr.Close()
				return err
			}
			if rowErr == nil {
				rowErr = Validate(&rec, cfg.Limits)
			}
			if rowErr != nil {
				if rec.Source.File == "" {
					rec.Source = rowErr.Loc
				}
				r := &Row{Seq: seq, Record: rec, Outcome: OutcomeRejected, Reject: rowErr}
				seq++
				read.Store(seq)
				if err := reject(r); err != nil {
					_ = mr.Close()
					return err
				}
				continue
			}
			w := int(maphash.String(seed, rec.RequestID) % uint64(len(inputs)))
			lastSent[w] = seq
			select {
			case inputs[w] <- workItem{row: Row{Seq: seq, Record: rec}}:
			case <-ctx.Done():
				_ = mr.Close()
				return ctx.Err()
			}
			seq++
			read.Store(seq)
		}
		if err := mr.Close(); err != nil {
			return &ManifestError{Loc: Location{File: path}, Op: "close", Err: err}
		}
	}
	return nil
}

// RampBatchSize is the size of a worker's batch number k (0-based) for a full batch size of
// size: size/8, size/4, size/2, then size (at least 1). The small first batches let COPY start
// after an eighth of a batch is read instead of a whole one per worker, so a run's start-up costs
// little; from the fourth batch on every batch is full size.
func RampBatchSize(size, k int) int {
	if k < 3 {
		size >>= 3 - k
	}
	return max(size, 1)
}

// accumulate fills batches of up to size rows from in and hands them to full; a flush item
// hands over a partial batch. After a full batch the next one is allocated at its full target
// size (no growing by copying); after a partial one, at the largest size seen, so a small manifest
// or a run of flushes allocates little.
// (Batches are not reused: the collector still holds a finished batch's rows while the next one
// fills, and a fresh one lets the collector's batch be freed as soon as it is written out.)
func accumulate(ctx context.Context, worker, size int, in <-chan workItem, full chan<- *Batch) error {
	var b *Batch
	hint := min(size, 4096) // capacity of the next batch
	handed := 0             // batches handed over so far
	newBatch := func() *Batch {
		return &Batch{Worker: worker, Rows: make([]Row, 0, hint)}
	}
	handOver := func() error {
		if b == nil || len(b.Rows) == 0 {
			return nil
		}
		wasFull := len(b.Rows) >= RampBatchSize(size, handed)
		select {
		case full <- b:
			handed++
			if wasFull {
				hint = RampBatchSize(size, handed)
			} else {
				hint = max(hint, len(b.Rows))
			}
			b = nil
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for it := range in {
		if it.flush {
			if b != nil && len(b.Rows) > 0 && b.Rows[0].Seq <= it.upTo {
				if err := handOver(); err != nil {
					return err
				}
			}
			continue
		}
		if b == nil {
			b = newBatch()
		}
		it.row.Digest = PayloadDigest(&it.row.Record)
		b.Rows = append(b.Rows, it.row)
		if len(b.Rows) >= RampBatchSize(size, handed) {
			if err := handOver(); err != nil {
				return err
			}
		}
	}
	return handOver()
}

// collect is the collector: it puts settled rows back in manifest order in a ring buffer of
// Window slots and writes them out, releasing one window token per row.
func collect(ctx context.Context, cfg *RunConfig, fl *flow, results <-chan result, sum *Summary, read *atomic.Int64, start time.Time) error {
	ring := make([]*Row, cfg.Window)
	var next int64 // Seq of the next row to write
	place := func(r *Row) error {
		i := r.Seq % int64(len(ring))
		if ring[i] != nil || r.Seq < next || r.Seq >= next+int64(len(ring)) {
			return fmt.Errorf("run: row %d outside the reorder window [%d, %d) (internal error)", r.Seq, next, next+int64(len(ring)))
		}
		ring[i] = r
		return nil
	}
	var out MintMapRow
	emit := func() (int64, error) {
		var n int64
		for {
			i := next % int64(len(ring))
			r := ring[i]
			if r == nil {
				break
			}
			ring[i] = nil
			switch r.Outcome {
			case OutcomeMinted, OutcomeReplayed:
				if r.Outcome == OutcomeMinted {
					sum.Minted++
				} else {
					sum.Replayed++
				}
				if cfg.MintMap != nil {
					out = MintMapRow{RequestID: r.Record.RequestID, ARK: r.ARK, Status: r.Outcome.String()}
					if err := cfg.MintMap.Write(out); err != nil {
						return n, err
					}
				}
			case OutcomeRejected:
				sum.Rejected++
				if cfg.Rejects != nil {
					e := RowError{Loc: r.Record.Source}
					if r.Reject != nil {
						e = *r.Reject
					}
					if err := cfg.Rejects.Write(e, r.Record.RequestID); err != nil {
						return n, err
					}
				}
			default:
				return n, fmt.Errorf("run: %s: the sink left the row unsettled (internal error)", r.Record.Source)
			}
			next++
			n++
		}
		return n, nil
	}
	for {
		var res result
		var ok bool
		select {
		case res, ok = <-results:
		case <-ctx.Done():
			return ctx.Err()
		}
		if !ok {
			return nil
		}
		if res.batch != nil {
			b := res.batch
			sum.Batches++
			sum.Draws += b.Draws
			sum.Collisions += b.Collisions
			for i := range b.Rows {
				if err := place(&b.Rows[i]); err != nil {
					return err
				}
			}
		} else if err := place(res.row); err != nil {
			return err
		}
		n, err := emit()
		if n > 0 {
			fl.next.Store(next)
			fl.window.Release(n)
			select {
			case fl.moved <- struct{}{}:
			default:
			}
		}
		if err != nil {
			return err
		}
		if cfg.Progress != nil && n > 0 {
			cfg.Progress(Progress{Read: read.Load(), Done: next, Minted: sum.Minted, Replayed: sum.Replayed,
				Rejected: sum.Rejected, Collisions: sum.Collisions, Elapsed: cfg.Now().Sub(start)})
		}
	}
}
