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
