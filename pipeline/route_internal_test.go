package pipeline

import (
	"hash/maphash"
	"testing"
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
	if _, ok := f.holder[maphashOf(f, "d")]; len(f.holder) != 1 || !ok {
		t.Fatalf("%d request IDs held, want 1 (d): the set does not forget what was written out", len(f.holder))
	}
}

func maphashOf(f *inFlight, rid string) uint64 { return maphash.String(f.seed, rid) | 1 }

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
