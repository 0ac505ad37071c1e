package loader

import (
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestCopyLine(t *testing.T) {
	t.Parallel()
	for where, want := range map[string]int{
		"COPY ark, line 3, column erc_what":                   3,
		"COPY ark, line 100000, column payload_digest":        100000,
		"COPY ark, line 12, column url: \"https://x\"":        12,
		"PL/pgSQL function arkhe_ark_reach() line 5 at RAISE": 0,
		"":                          0,
		"COPY ark, line , column x": 0,
	} {
		if got := copyLine(where); got != want {
			t.Errorf("copyLine(%q) = %d, want %d", where, got, want)
		}
	}
}

func TestExpectedCollisions(t *testing.T) {
	t.Parallel()
	// 100k draws against 10 million ARKs with 8-character blades collide about twice,
	// against 100 million about twenty times
	if e := ExpectedCollisions(100_000, 10_000_000, 8); e < 1.9 || e > 2.1 {
		t.Errorf("10 million: %.2f", e)
	}
	if e := ExpectedCollisions(100_000, 100_000_000, 8); e < 19 || e > 21 {
		t.Errorf("100 million: %.2f", e)
	}
}

// TestNameCheckChoosesByDensity: CheckAuto goes to COPY directly while a batch expects fewer
// than NameCheckThreshold collisions with the ARKs there before the run, in savepointed chunks
// on one node while a chunk expects at most ChunkCollisionLimit, else (denser, or on Citus) it
// looks every name up; a collision seen makes a sparse ledger count as dense; the other
// policies are what they say.
func TestNameCheckChoosesByDensity(t *testing.T) {
	t.Parallel()
	space := float64(29 * 29 * 29 * 29 * 29 * 29 * 29 * 29) // 8-character blades, about 5.0e11
	for _, c := range []struct {
		name          string
		check         Check
		arks          int64
		citus, dense  bool
		lookup, chunk bool
	}{
		{"empty", CheckAuto, 0, false, false, false, false},
		{"100 thousand", CheckAuto, 100_000, false, false, false, false},                 // 0.02 per 100k batch
		{"100 thousand, a collision seen", CheckAuto, 100_000, false, true, false, true}, // chunks
		{"1 million", CheckAuto, 1_000_000, false, false, false, true},                   // 0.2 per batch
		{"10 million", CheckAuto, 10_000_000, false, false, false, true},                 // 2 per batch, 0.02 per chunk
		{"10 million on Citus", CheckAuto, 10_000_000, true, false, true, false},
		{"200 billion", CheckAuto, 200_000_000_000, false, false, true, false}, // 400 per chunk
		{"always", CheckAlways, 0, false, false, true, false},
		{"never", CheckNever, 10_000_000, false, false, false, false},
		{"chunks", CheckChunks, 0, true, false, false, true},
	} {
		w := &mintWorker{s: &MintSink{cfg: MintConfig{NameCheck: c.check}, arkRows0: c.arks, space: space, citus: c.citus}, dense: c.dense}
		if lookup, chunk := w.nameCheck(100_000); lookup != c.lookup || chunk != c.chunk {
			t.Errorf("%s: lookup %v, chunks %v; want %v, %v", c.name, lookup, chunk, c.lookup, c.chunk)
		}
	}
}

// TestRunNamesKeepsEveryName: names added concurrently by several workers, all racing to
// allocate the same blocks in the same order, are all kept; a hash whose block no name touched
// is not; bits are those of a plain 2^27-bit set (a hash with the same 27 low bits is kept too);
// and the blocks allocated are those the added hashes fall in, no more.
func TestRunNamesKeepsEveryName(t *testing.T) {
	t.Parallel()
	const workers, each, used = 4, 4096, runNameBlocks / 2 // only the first half of the blocks
	// hash: block i mod used, a bit of its own in it, high bits set too
	hash := func(w, i int) uint64 {
		bit := (uint64(w*each+i) * 0x9e3779b97f4a7c15) >> 49 // 15 bits
		return uint64(i%used)*runNameBlockBits + bit | uint64(i)<<40
	}
	for round := range 8 {
		r := newRunNames()
		start := make(chan struct{})
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				<-start
				for i := range each {
					r.add(hash(w, i))
				}
			})
		}
		close(start)
		wg.Wait()
		for w := range workers {
			for i := range each {
				h := hash(w, i)
				if !r.maybe(h) {
					t.Fatalf("round %d: hash %#x (worker %d, name %d) was added but maybe says no", round, h, w, i)
				}
				if !r.maybe(h&(runNameBits-1) | 1<<63) {
					t.Fatalf("round %d: hash %#x: the same 27 low bits with another high bit are not kept", round, h)
				}
			}
		}
		for i := range r.blocks {
			if allocated := r.blocks[i].Load() != nil; allocated != (i < used) {
				t.Fatalf("round %d: block %d allocated %v, want %v", round, i, allocated, i < used)
			}
		}
		for _, h := range []uint64{used * runNameBlockBits, runNameBits - 1, (used+7)*runNameBlockBits + 12345 | 7<<50} {
			if r.maybe(h) {
				t.Fatalf("round %d: hash %#x in an untouched block: maybe says yes", round, h)
			}
		}
	}
}

// TestUnexplainedWorkerErrorIsAFault: a batch Citus refused with a worker's XX000 that no row
// re-sent alone reproduces is retried as a fault (what ended it was the worker's session),
// while the same XX000 on its own is not a fault (it may be a row's data, found by re-sending).
func TestUnexplainedWorkerErrorIsAFault(t *testing.T) {
	t.Parallel()
	xx := &pgconn.PgError{Code: codeInternal, Message: "server closed the connection unexpectedly"}
	if got := faultOf(fmt.Errorf("worker 1: %w", &unexplainedWorkerError{Err: xx})); got == "" {
		t.Error("an unexplained worker error is no fault")
	}
	if got := faultOf(fmt.Errorf("worker 1: %w", xx)); got != "" {
		t.Errorf("a bare XX000 is a fault: %q", got)
	}
}
