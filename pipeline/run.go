package pipeline

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/arkhe-ledger/arkhe/hashtab"
	"github.com/arkhe-ledger/arkhe/textin"
)

// This file is the streaming run engine:
//
//	reader: read, validate, digest ──contiguous runs──▶ worker i: sink (COPY) ─┐
//	   │                                                                        ▼
//	   └── rows rejected while reading or validating ───────────────────▶ collector
//	                                                               (reorder buffer,
//	                                                                mint map, rejects,
//	                                                                progress)
//
// Contract: one reader numbers every row (Row.Seq), validates it and fills batches that are
// contiguous runs of the manifest, handed to the workers in turn, so no two workers write into
// the same stretch of the receipt index at once. Every occurrence of a request ID is settled
// after the ones before it: while an earlier occurrence is in flight, a later one goes to the
// worker holding it. The collector puts results back in manifest order and writes the mint
// map and the reject file. At most Window rows are in flight whatever the input's size; when
// the window is full the reader hands over the partial batch the collector waits for, so a
// skewed distribution of request IDs never deadlocks the run. docs/design.md gives the
// reasons.

// Sink consumes batches of validated rows for a Run (pipeline defines the small
// interface it consumes; ledger implements it with COPY). Run calls OpenWorker once per worker
// before reading, from one goroutine.
type Sink interface {
	// OpenWorker returns the SinkWorker of worker number worker (0 ≤ worker < Workers). Its
	// error stops the run before any row is read.
	OpenWorker(ctx context.Context, worker int) (SinkWorker, error)
}

// WorkerLimiter is an optional interface of a Sink: RunConfig.Validate lowers Workers to
// MaxWorkers() when that is positive and smaller. A sink whose outcomes depend on the order rows
// reach it across workers (a daily quota: the first rows in manifest order get it) returns 1, so its one worker sees every batch in manifest order.
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
	// Digest is PayloadDigest(&Record), the receipt digest, set by Run
	// before the sink sees the row.
	Digest [16]byte
	// ARK is the row's ARK in printed form, "ark:NAAN/name", set by the
	// sink for minted and replayed rows; ARK[4:] is the ledger key.
	ARK string
	// Outcome is set by the sink.
	Outcome Outcome
	// Reject says why, with Outcome == OutcomeRejected.
	Reject *textin.RowError
}

// Batch is a run of rows for one sink worker, in manifest order. Draws and Collisions are the
// blade draws and the draws that hit an existing (or in-batch) name while settling it, set by
// the sink and summed into Summary.
type Batch struct {
	Worker     int
	Rows       []Row
	Draws      int64
	Collisions int64
}

// Progress is a snapshot of a run, passed to RunConfig.Progress. Read counts the rows read so
// far (as they are parsed, before their batch reaches the sink); Settled the rows whose outcome
// is known (their batch came back from the sink, or the reader rejected them), in any order;
// Done the rows settled and written out in manifest order (minted + replayed + rejected); Input
// is how far reading has got through the manifests.
type Progress struct {
	Read, Settled, Done, Minted, Replayed, Rejected, Collisions int64
	Input                                                       Extent
	Elapsed                                                     time.Duration
}

// Extent is how far a run has read its manifests, in one unit for all of them. The unit is
// octets of the files as stored (a gzip file's compressed octets, counted as they are read from
// the file, so a compressed manifest shows its true share), or rows when every manifest is
// Parquet (its pages are read column by column, out of file order; its row count is in its
// footer). In a run that mixes Parquet with text manifests a Parquet file counts its size in
// octets, in proportion to its rows read. Total is 0 when a manifest could not be measured
// before the run (it is then reported by the run itself).
type Extent struct {
	Done, Total int64
	// Rows is true when the unit is rows, false for octets.
	Rows bool
}

// inputSize is one manifest's share of an Extent's Total: its size in octets, or its rows when
// the unit is rows; for a Parquet manifest of a run in octets also its rows, to scale by.
type inputSize struct {
	units, rows int64
	parquet     bool
}

// measureInputs returns the Extent unit of paths (rows when every one is Parquet), each
// manifest's share and the Total (0 when any manifest cannot be measured).
func measureInputs(paths []string) (rowsUnit bool, sizes []inputSize, total int64) {
	rowsUnit = true
	for _, p := range paths {
		if f, _ := DetectFormat(p); f != FormatParquet {
			rowsUnit = false
		}
	}
	sizes = make([]inputSize, len(paths))
	known := true
	for i, p := range paths {
		s := &sizes[i]
		if f, _ := DetectFormat(p); f == FormatParquet {
			s.parquet = true
			n, err := parquetRowCount(p)
			if err != nil {
				known = false
				continue
			}
			s.rows = n
			if rowsUnit {
				s.units = n
			}
		}
		if !rowsUnit {
			st, err := os.Stat(p)
			if err != nil {
				known = false
				continue
			}
			s.units = st.Size()
		}
		total += s.units
	}
	if !known {
		total = 0
	}
	return rowsUnit, sizes, total
}

// position converts a reader's position in its manifest (octets, or rows for Parquet) into
// the run's unit: a Parquet manifest of a run in octets counts its size in proportion to its rows.
func (s inputSize) position(pos int64, rowsUnit bool) int64 {
	if !s.parquet || rowsUnit || s.rows == 0 {
		return pos
	}
	return int64(float64(s.units) * float64(pos) / float64(s.rows))
}

// reportEvery is how many rows the reader reads between two progress reports.
const reportEvery = 1024

// progressState is the latest figures of a run, shared by the reader (rows read, how far into
// the manifests) and the collector (rows settled), so each report carries both; its lock also
// keeps calls of RunConfig.Progress from overlapping.
type progressState struct {
	mu       sync.Mutex
	cfg      *RunConfig
	p        Progress
	t0       time.Time
	rowsUnit bool        // the Extent's unit is rows
	sizes    []inputSize // each manifest's share of the Extent
}

// read records how far the reader has got and reports.
func (s *progressState) read(rows int64, input int64) {
	if s.cfg.Progress == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.p.Read, s.p.Input.Done = rows, input
	s.p.Elapsed = s.cfg.Now().Sub(s.t0)
	s.cfg.Progress(s.p)
}

// settled records the collector's figures and reports.
func (s *progressState) settled(read int64, sum *Summary, settled, done int64) {
	if s.cfg.Progress == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.p.Read = max(s.p.Read, read)
	s.p.Settled = settled
	s.p.Done, s.p.Minted, s.p.Replayed, s.p.Rejected, s.p.Collisions = done, sum.Minted, sum.Replayed, sum.Rejected, sum.Collisions
	s.p.Elapsed = s.cfg.Now().Sub(s.t0)
	s.cfg.Progress(s.p)
}

// Summary is the outcome of a run (read, minted, replayed, rejected, collisions,
// rows/s). Read counts every manifest row read, bad ones included; Draws and
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
	// DefaultBatchSize is the rows per sink batch, one transaction each; bench/ measures the
	// choice.
	DefaultBatchSize = 100_000
	// DefaultWorkers is the number of sink workers (one database connection each).
	DefaultWorkers = 2
	// resultQueue is the capacity of the collector's input channel, in messages.
	resultQueue = 256
)

// MemoryLimit is the soft limit, in octets, on the Go runtime's memory (runtime/debug.SetMemoryLimit)
// under which `arkhe mint` and `arkhe import` run at the default batch size and workers, unless
// GOMEMLIMIT sets another: 200 MiB. A run's live heap is bounded by its window, whatever the
// input's size; the limit keeps the collector from letting the heap grow to twice that before
// it runs. A mint with a larger window gets a larger limit (MemoryLimitFor).
const MemoryLimit = 200 << 20

// MemoryLimitFor returns the soft memory limit, in octets, for a mint of workers and batchSize
// (0: the defaults): MemoryLimit for a window of up to (DefaultWorkers + 1) × DefaultBatchSize
// rows, and in proportion to the window above it, so that the limit stays about a quarter
// above the live heap the window holds. A limit at or under the live heap does not bound memory
// any further: it makes the collector run without pause.
func MemoryLimitFor(workers, batchSize int) int64 {
	if workers <= 0 {
		workers = DefaultWorkers
	}
	if batchSize <= 0 {
		batchSize = DefaultBatchSize
	}
	window := int64(workers+1) * int64(batchSize)
	const base = int64(DefaultWorkers+1) * DefaultBatchSize
	if window <= base {
		return MemoryLimit
	}
	return MemoryLimit * window / base
}

// RunConfig configures Run.
type RunConfig struct {
	// Inputs are the manifest paths, read one after the other (OpenManifest picks the format).
	Inputs []string
	// Mapping maps source fields to manifest fields (zero: the default mapping).
	Mapping Mapping
	// Limits are the limits on values (zero: DefaultLimits).
	Limits textin.Limits
	// Workers is the number of sink workers (0: DefaultWorkers).
	Workers int
	// BatchSize is the rows per sink batch (0: DefaultBatchSize); each worker's first three
	// batches are smaller (RampBatchSize).
	BatchSize int
	// Window is the most rows in flight between the reader and the collector (0: (Workers + 1)
	// × BatchSize: enough for every worker to have one batch in COPY while the reader fills the
	// next). It bounds memory whatever the manifest's size.
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
	// Progress, if set, is called as the run goes: by the reader every few rows read (reportEvery)
	// and at the end of each manifest, and by the collector after every group of rows it writes
	// out. Calls never overlap. It must be quick; cancelling the run's context from it is allowed.
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
	if c.Workers > maxWorkers {
		return fmt.Errorf("run: %d workers: at most %d (one database connection each)", c.Workers, maxWorkers)
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
		c.Window = (c.Workers + 1) * c.BatchSize
	}
	if c.Window < c.Workers {
		c.Window = c.Workers
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

// result is what the collector receives: a settled batch, or one row rejected by the reader.
type result struct {
	batch *Batch
	row   *Row
}

// Run streams the manifests of cfg.Inputs through validation and cfg.Sink and writes the mint map
// and the reject file in manifest order. Bad rows —
// a *RowError from a reader or from Validate — go to the reject file and the run goes on; every
// other row reaches the sink. Run returns the summary so far and an error when the run stopped
// early: a *ManifestError (a manifest could not be opened or read on), the sink's error, an
// I/O error of the outputs, or ctx's error. Rows the sink committed stay committed; re-running
// replays them.
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

	fl := &flow{window: semaphore.NewWeighted(int64(cfg.Window)), moved: make(chan struct{}, 1),
		free: make(chan *Batch, 2)}
	results := make(chan result, resultQueue)
	// unbuffered: a worker holds the batch in its sink, the reader fills the next one
	inputs := make([]chan *Batch, cfg.Workers)
	for i := range inputs {
		inputs[i] = make(chan *Batch)
	}
	var read atomic.Int64 // rows read so far
	prog := &progressState{cfg: &cfg, t0: start}
	if cfg.Progress != nil {
		prog.rowsUnit, prog.sizes, prog.p.Input.Total = measureInputs(cfg.Inputs)
		prog.p.Input.Rows = prog.rowsUnit
	}

	// the reader
	readerDone := make(chan struct{})
	g.Go(func() error {
		defer close(readerDone)
		defer func() {
			for _, in := range inputs {
				close(in)
			}
		}()
		return readAll(gctx, &cfg, fl, inputs, results, &read, prog)
	})

	// the workers
	sinksDone := make(chan struct{}, cfg.Workers)
	for i := range cfg.Workers {
		g.Go(func() error {
			defer func() { sinksDone <- struct{}{} }()
			for b := range inputs[i] {
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
		return collect(gctx, &cfg, fl, results, &sum, &read, prog)
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
	// free holds batches whose rows were all written out, cleared, for the reader to fill
	// again: a run allocates its batches' rows once, not once per batch.
	free chan *Batch
}

// newBatch returns an empty batch for worker w with room for size rows: a written-out batch
// when one is free and large enough (smaller free ones, of the first batches, are dropped),
// else a new one.
func (fl *flow) newBatch(w, size int) *Batch {
	for {
		select {
		case b := <-fl.free:
			if cap(b.Rows) < size {
				continue
			}
			b.Worker = w
			return b
		default:
			return &Batch{Worker: w, Rows: make([]Row, 0, size)}
		}
	}
}

// recycle offers b, all of whose rows were written out, to the reader (newBatch); its rows are
// cleared so that they hold no record. A full free list drops it.
func (fl *flow) recycle(b *Batch) {
	clear(b.Rows)
	b.Rows, b.Draws, b.Collisions = b.Rows[:0], 0, 0
	select {
	case fl.free <- b:
	default:
	}
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

// readAll is the reader: it reads every manifest in order, rejects bad rows straight to the
// collector and appends good ones, with their digests, to the batch of the worker whose turn it
// is (or of the worker holding an earlier occurrence of the request ID in flight), handing a
// batch over when it reaches RampBatchSize; the next run goes to the next worker. It counts the
// rows read in read.
//
// When the window is full the collector is waiting for row fl.next; if that row sits in a partial
// batch, only handing it over gets it out. So the reader hands over every partial batch that holds
// a row up to fl.next (one starting later is left to fill), waits for the collector to move, and
// tries again.
func readAll(ctx context.Context, cfg *RunConfig, fl *flow, inputs []chan *Batch, results chan<- result, read *atomic.Int64, prog *progressState) error {
	var seq int64
	n := len(inputs)
	cur := 0 // the worker whose run the reader is filling
	fly := newInFlight(cfg.Window)
	parts := make([]*Batch, n) // partial batch per worker
	handed := make([]int, n)   // batches handed to each worker so far
	hint := make([]int, n)     // capacity of each worker's next batch
	for i := range hint {
		hint[i] = min(cfg.BatchSize, 4096)
	}
	// hand gives worker w its partial batch. After a full batch the next one is allocated at its
	// full target size (no growing by copying); after a partial one at the largest size seen, so a
	// small manifest or a run of flushes allocates little.
	hand := func(w int) error {
		b := parts[w]
		if b == nil || len(b.Rows) == 0 {
			return nil
		}
		wasFull := len(b.Rows) >= RampBatchSize(cfg.BatchSize, handed[w])
		select {
		case inputs[w] <- b:
		case <-ctx.Done():
			return ctx.Err()
		}
		parts[w] = nil
		handed[w]++
		if wasFull {
			hint[w] = RampBatchSize(cfg.BatchSize, handed[w])
		} else {
			hint[w] = max(hint[w], len(b.Rows))
		}
		return nil
	}
	acquire := func() error {
		for !fl.window.TryAcquire(1) {
			upTo := fl.next.Load()
			for w, b := range parts {
				if b != nil && len(b.Rows) > 0 && b.Rows[0].Seq <= upTo {
					if err := hand(w); err != nil {
						return err
					}
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
	rowsUnit, sizes := prog.rowsUnit, prog.sizes
	var before int64 // the Extent of the manifests read before this one
	for i, path := range cfg.Inputs {
		mr, pos, err := openManifest(path, cfg.Mapping)
		if err != nil {
			return err
		}
		report := func() {
			if cfg.Progress != nil {
				prog.read(seq, before+sizes[i].position(pos(), rowsUnit))
			}
		}
		for {
			if seq%reportEvery == 0 {
				report()
			}
			rec, err := mr.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			var rowErr *textin.RowError
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
			w := fly.route(rec.RequestID, seq, fl.next.Load(), cur)
			if parts[w] == nil {
				parts[w] = fl.newBatch(w, hint[w])
			}
			b := parts[w]
			b.Rows = append(b.Rows, Row{Seq: seq, Record: rec, Digest: PayloadDigest(&rec)})
			seq++
			read.Store(seq)
			if len(b.Rows) >= RampBatchSize(cfg.BatchSize, handed[w]) {
				if err := hand(w); err != nil {
					_ = mr.Close()
					return err
				}
				if w == cur {
					cur = (cur + 1) % n
				}
			}
		}
		report()
		if cfg.Progress != nil {
			before += max(sizes[i].units, sizes[i].position(pos(), rowsUnit))
		}
		if err := mr.Close(); err != nil {
			return &ManifestError{Loc: textin.Location{File: path}, Op: "close", Err: err}
		}
	}
	for w := range parts {
		if err := hand(w); err != nil {
			return err
		}
	}
	return nil
}

// inFlight is the set of request IDs in flight and the worker holding each: a table from a
// request ID's hash to its worker and its last occurrence (Seq), and a ring of the hashes of
// the rows in the window, by Seq, to forget an entry once the collector has written its last
// occurrence out. Two request IDs of the same hash count as one (they go to one worker, which
// costs nothing but balance). It holds at most one entry per row in the window. Every row is
// added and later deleted, which hashtab's table takes without the cost a Go map's deletes
// carry (BenchmarkInFlightRoute compares them). Both grow with the rows in flight, by doubling: the table
// from 16 slots (16 octets each, at most three quarters full), the ring from 1,024 hashes (8
// octets each) up to the window's size, so a small run allocates little and a full window ends
// at the size a preallocated table and ring would have.
type inFlight struct {
	seed   maphash.Seed
	held   hashtab.Table // hash → last occurrence's Seq << 16 | worker
	ring   []uint64      // hash of the row of Seq s at s mod len(ring); 0 for none
	window int           // the most rows in flight: len(ring) grows up to it
	pruned int64         // rows before this Seq are forgotten
}

// maxWorkers is the most sink workers a run has: inFlight keeps a worker number in 16 bits.
const maxWorkers = 1 << 16

// ringStart is the length a reorder ring (inFlight's, the collector's) starts at, when the
// window is larger.
const ringStart = 1024

// ringLen returns the length a ring of n slots grows to so that it holds need slots: doubled
// until it does, at most window.
func ringLen(n, need, window int64) int64 {
	for need > n && n < window {
		n = min(2*n, window)
	}
	return n
}

func newInFlight(window int) *inFlight {
	return &inFlight{seed: maphash.MakeSeed(), ring: make([]uint64, min(window, ringStart)), window: window}
}

// route returns the worker of the row of Seq seq with request ID rid: the worker holding an
// earlier occurrence in flight, else cur; it records the row. written is the collector's
// position (rows before it are written out); the reader holds a window token for seq, so seq
// is less than written + the window.
func (f *inFlight) route(rid string, seq, written int64, cur int) int {
	for ; f.pruned < written; f.pruned++ {
		i := f.pruned % int64(len(f.ring))
		if h := f.ring[i]; h != 0 {
			if e, ok := f.held.Get(h); ok && int64(e>>16) == f.pruned {
				f.held.Delete(h)
			}
			f.ring[i] = 0
		}
	}
	if seq-f.pruned >= int64(len(f.ring)) {
		f.grow(seq)
	}
	h := maphash.String(f.seed, rid) | 1
	f.ring[seq%int64(len(f.ring))] = h
	e, found := f.held.Ref(h)
	w := cur
	if found {
		w = int(*e & (maxWorkers - 1))
	}
	*e = uint64(seq)<<16 | uint64(w)
	return w
}

// grow doubles the ring (up to the window) until it holds the rows from f.pruned to seq, and
// moves the hashes of the rows held to their new places.
func (f *inFlight) grow(seq int64) {
	n := ringLen(int64(len(f.ring)), seq-f.pruned+1, int64(f.window))
	ring := make([]uint64, n)
	for s := f.pruned; s < f.pruned+int64(len(f.ring)); s++ {
		ring[s%n] = f.ring[s%int64(len(f.ring))]
	}
	f.ring = ring
}

// collect is the collector: it puts settled rows back in manifest order in a ring buffer and
// writes them out, releasing one window token per row. The ring starts at 1,024 slots (two
// pointers each) and doubles, up to Window slots, when a row arrives further ahead.
func collect(ctx context.Context, cfg *RunConfig, fl *flow, results <-chan result, sum *Summary, read *atomic.Int64, prog *progressState) error {
	ring := make([]*Row, min(cfg.Window, ringStart))
	of := make([]*Batch, len(ring)) // the batch of the row in ring, nil for a row rejected by the reader
	left := map[*Batch]int{}        // rows of a batch not yet written out
	var next int64                  // Seq of the next row to write
	// grow doubles the ring (up to the window) until it holds row seq, moving the rows it holds.
	grow := func(seq int64) {
		n := ringLen(int64(len(ring)), seq-next+1, int64(cfg.Window))
		r2, of2 := make([]*Row, n), make([]*Batch, n)
		for i, r := range ring {
			if r != nil {
				r2[r.Seq%n], of2[r.Seq%n] = r, of[i]
			}
		}
		ring, of = r2, of2
	}
	place := func(r *Row) error {
		if r.Seq >= next+int64(len(ring)) && len(ring) < cfg.Window {
			grow(r.Seq)
		}
		i := r.Seq % int64(len(ring))
		if ring[i] != nil || r.Seq < next || r.Seq >= next+int64(len(ring)) {
			return fmt.Errorf("run: row %d outside the reorder window [%d, %d) (internal error)", r.Seq, next, next+int64(cfg.Window))
		}
		ring[i] = r
		return nil
	}
	var out MintMapRow
	var settled int64 // rows placed, in any order
	emit := func() (int64, error) {
		var n int64
		for {
			i := next % int64(len(ring))
			r := ring[i]
			if r == nil {
				break
			}
			ring[i] = nil
			b := of[i]
			of[i] = nil
			switch r.Outcome {
			case OutcomeMinted, OutcomeReplayed:
				if r.Outcome == OutcomeMinted {
					sum.Minted++
				} else {
					sum.Replayed++
				}
				if cfg.MintMap != nil {
					rec := &r.Record
					out = MintMapRow{RequestID: rec.RequestID, ARK: r.ARK, Status: r.Outcome.String(),
						URL: optional(rec.Has&HasURL != 0, &rec.URL), Who: optional(rec.Has&HasWho != 0, &rec.Who),
						What: optional(rec.Has&HasWhat != 0, &rec.What), When: optional(rec.Has&HasWhen != 0, &rec.When),
						Commitment: optional(rec.Has&HasCommitment != 0, &rec.Commitment)}
					if err := cfg.MintMap.Write(out); err != nil {
						return n, err
					}
				}
			case OutcomeRejected:
				sum.Rejected++
				if cfg.Rejects != nil {
					e := textin.RowError{Loc: r.Record.Source}
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
			if b != nil { // r is written out: its batch may be filled again once all its rows are
				if left[b]--; left[b] == 0 {
					delete(left, b)
					fl.recycle(b)
				}
			}
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
				of[b.Rows[i].Seq%int64(len(of))] = b
			}
			settled += int64(len(b.Rows))
			left[b] = len(b.Rows)
		} else if err := place(res.row); err != nil {
			return err
		} else {
			settled++
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
		if n > 0 || res.batch != nil {
			prog.settled(read.Load(), sum, settled, next)
		}
	}
}
