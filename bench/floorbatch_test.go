package bench

import (
	"slices"
	"testing"
)

// The floor sends the batches arkhe's pipeline makes: 1 million rows, batch 100,000, 3
// workers are 17 transactions, each worker's first three 12,500, 25,000 and 50,000 rows, dealt
// round robin, the last what is left.
func TestFloorBatchesRampAsThePipeline(t *testing.T) {
	fb := floorBatches(1_000_000, 100_000, 3)
	var sizes, workers []int
	for i, b := range fb {
		if i > 0 && b.lo != fb[i-1].hi {
			t.Fatalf("batch %d starts at %d, the one before ends at %d", i, b.lo, fb[i-1].hi)
		}
		sizes, workers = append(sizes, b.hi-b.lo), append(workers, b.w)
	}
	want := []int{12_500, 12_500, 12_500, 25_000, 25_000, 25_000, 50_000, 50_000, 50_000,
		100_000, 100_000, 100_000, 100_000, 100_000, 100_000, 100_000, 37_500}
	if !slices.Equal(sizes, want) {
		t.Errorf("batch sizes %v, want %v", sizes, want)
	}
	if wantW := []int{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1}; !slices.Equal(workers, wantW) {
		t.Errorf("connections %v, want %v", workers, wantW)
	}
}
