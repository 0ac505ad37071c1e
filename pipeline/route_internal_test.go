package pipeline

import (
	"hash/maphash"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"

	"golang.org/x/sync/semaphore"
)

// TestInFlightRoute: a request ID in flight goes to the worker holding its earlier occurrence,
// whatever worker's turn it is; once the collector has written its last occurrence out, it is
// forgotten and goes to the worker whose turn it is.
func TestInFlightRoute(t *testing.T) {
	t.Parallel()
	f := newInFlight(8)
	steps := []struct {
		rid          string
		seq, written int64
		cur, want    int
	}{
		{"a", 0, 0, 0, 0},
		{"b", 1, 0, 1, 1},
		{"a", 2, 0, 1, 0}, // a is in flight in worker 0
		{"c", 3, 1, 1, 1},
		{"a", 4, 2, 1, 0}, // the first a is out, the second (Seq 2) is not
		{"a", 5, 5, 1, 1}, // every a is out: a goes where the run goes
		{"a", 6, 5, 0, 1}, // and stays with it while in flight
		{"d", 12, 7, 0, 0},
	}
	for i, s := range steps {
		if got := f.route(s.rid, s.seq, s.written, s.cur); got != s.want {
			t.Fatalf("step %d: %q (Seq %d, %d written out, worker %d's turn) went to worker %d, want %d",
				i, s.rid, s.seq, s.written, s.cur, got, s.want)
		}
	}
	// Seq 0 to 6 are written out and forgotten: only d (Seq 12) remains
	if _, ok := f.held.Get(maphash.String(f.seed, "d") | 1); f.held.Len() != 1 || !ok {
		t.Fatalf("%d request IDs held, want 1 (d): the set does not forget what was written out", f.held.Len())
	}
}

// TestInFlightTable: routes agree with a Go map's under random routes through a window with
// many repeats, and the set holds exactly the request IDs in flight: in a small window, and with
// the ring starting at one slot and doubling up to a window of 12 and of 3,000 rows (a grown ring
// that lost or misplaced a hash would keep a request ID past its last occurrence, or forget it).
func TestInFlightTable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ window, start, ids int }{{12, 0, 40}, {12, 1, 40}, {3000, 1, 2000}} {
		f := newInFlight(c.window)
		if c.start > 0 {
			f.ring = make([]uint64, c.start)
		}
		ref := map[uint64]uint64{} // hash → Seq << 16 | worker, as the table should hold
		ring := make([]uint64, c.window)
		rng := rand.New(rand.NewPCG(1, 2))
		var written int64
		for seq := int64(0); seq < 200_000; seq++ {
			if rng.IntN(3) == 0 {
				written = min(seq, written+int64(rng.IntN(4)))
			}
			written = max(written, seq-int64(c.window)+1) // the reader holds a window token for seq
			for p := f.pruned; p < written; p++ {
				if h := ring[p%int64(c.window)]; h != 0 && int64(ref[h]>>16) == p {
					delete(ref, h)
				}
			}
			rid := strconv.Itoa(rng.IntN(c.ids))
			cur := rng.IntN(3)
			h := maphash.String(f.seed, rid) | 1
			want := cur
			if e, ok := ref[h]; ok {
				want = int(e & (maxWorkers - 1))
			}
			if got := f.route(rid, seq, written, cur); got != want {
				t.Fatalf("window %d: Seq %d: %q went to worker %d, want %d", c.window, seq, rid, got, want)
			}
			ref[h] = uint64(seq)<<16 | uint64(want)
			ring[seq%int64(c.window)] = h
			if f.held.Len() != len(ref) {
				t.Fatalf("window %d: Seq %d: %d entries, want %d", c.window, seq, f.held.Len(), len(ref))
			}
		}
		if len(f.ring) != c.window {
			t.Fatalf("window %d: the ring has %d slots at the end, want %d", c.window, len(f.ring), c.window)
		}
	}
}

// TestFlowRecyclesBatches: a written-out batch comes back cleared for the next batch that fits
// in it; one too small is dropped for a new one; a full free list drops what comes back.
func TestFlowRecyclesBatches(t *testing.T) {
	t.Parallel()
	fl := &flow{free: make(chan *Batch, 2)}
	small, big := fl.newBatch(0, 10), fl.newBatch(0, 100)
	if cap(small.Rows) != 10 || cap(big.Rows) != 100 {
		t.Fatalf("new batches of %d and %d rows, want 10 and 100", cap(small.Rows), cap(big.Rows))
	}
	big.Rows = append(big.Rows, Row{Seq: 7, ARK: "ark:99999/x9held"})
	big.Draws, big.Collisions = 3, 1
	fl.recycle(small)
	fl.recycle(big)
	fl.recycle(&Batch{Rows: make([]Row, 0, 100)}) // the free list holds two: dropped
	b := fl.newBatch(1, 100)                      // small is dropped on the way to big
	if b != big || b.Worker != 1 || len(b.Rows) != 0 || b.Draws != 0 || b.Collisions != 0 {
		t.Fatalf("newBatch gave %p (%+v), want the written-out batch %p, empty, for worker 1", b, b, big)
	}
	if r := b.Rows[:1][0]; r.Seq != 0 || r.ARK != "" {
		t.Fatalf("a recycled batch still holds row %+v", r)
	}
	if n := fl.newBatch(0, 100); n == big || cap(n.Rows) != 100 || len(fl.free) != 0 {
		t.Fatalf("free list not drained: %d left", len(fl.free))
	}
}

type seqMap []MintMapRow

func (m *seqMap) Write(r MintMapRow) error { *m = append(*m, r); return nil }
func (m *seqMap) Close() error             { return nil }
func (m *seqMap) Abort() error             { return nil }

// TestCollectorRingGrows: the collector writes every row out in manifest order when batches
// arrive out of order, each further ahead than its ring holds (so the ring, from 1,024 slots,
// grows to 2,048, 4,096 and the window's 5,000 with rows placed at wrapped positions), with rows
// rejected by the reader among them; every window token comes back and every batch is recycled
// once all its rows are out.
func TestCollectorRingGrows(t *testing.T) {
	t.Parallel()
	const window, total = 5000, 5700
	batches := [][2]int64{{0, 700}, {1700, 2700}, {2700, 3700}, {3700, 4700}, {4700, 5700}, {700, 1700}}
	cfg := &RunConfig{Window: window, MintMap: &seqMap{}}
	fl := &flow{window: semaphore.NewWeighted(total), moved: make(chan struct{}, 1), free: make(chan *Batch, len(batches))}
	if !fl.window.TryAcquire(total) {
		t.Fatal("window tokens")
	}
	results := make(chan result, total)
	var rejected int
	for _, span := range batches {
		b := &Batch{}
		for s := span[0]; s < span[1]; s++ {
			if s%7 == 3 { // rejected while reading: a row of no batch
				results <- result{row: &Row{Seq: s, Outcome: OutcomeRejected}}
				rejected++
				continue
			}
			id := strconv.FormatInt(s, 10)
			b.Rows = append(b.Rows, Row{Seq: s, Record: Record{RequestID: id}, ARK: "ark:99999/x9" + id, Outcome: OutcomeMinted})
		}
		results <- result{batch: b}
	}
	close(results)
	var sum Summary
	if err := collect(t.Context(), cfg, fl, results, &sum, new(atomic.Int64), &progressState{cfg: cfg}); err != nil {
		t.Fatal(err)
	}
	rows := *cfg.MintMap.(*seqMap)
	if sum.Minted != int64(total-rejected) || sum.Rejected != int64(rejected) || len(rows) != total-rejected || fl.next.Load() != total {
		t.Fatalf("summary %+v, %d mint map rows, written up to %d; want %d minted, %d rejected", sum, len(rows), fl.next.Load(), total-rejected, rejected)
	}
	s := int64(0)
	for i, r := range rows {
		if s%7 == 3 {
			s++
		}
		if r.RequestID != strconv.FormatInt(s, 10) {
			t.Fatalf("mint map row %d is %q, want %d", i, r.RequestID, s)
		}
		s++
	}
	if !fl.window.TryAcquire(total) {
		t.Fatal("not every window token came back")
	}
	if len(fl.free) != len(batches) {
		t.Fatalf("%d batches recycled, want %d", len(fl.free), len(batches))
	}
}
