package bench

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/pipeline"
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

// TestFloorBatchesArePipelineBatches: the floor's batches are the ones pipeline.Run deals to
// its workers for a manifest of good rows (rows [lo, hi) by Seq, and the worker), taken from
// a run into a sink that records them; the window holds the whole manifest, so no batch is
// handed over part-full for the collector's sake.
func TestFloorBatchesArePipelineBatches(t *testing.T) {
	t.Parallel()
	const n, batch, workers = 2_345, 200, 3
	in := filepath.Join(t.TempDir(), "m.csv")
	if _, err := fixtures.CreateManifestCSV(in, fixtures.ManifestConfig{Rows: n, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	rec := &batchRecorder{}
	sum, err := pipeline.Run(context.Background(), pipeline.RunConfig{Inputs: []string{in}, Sink: rec,
		Workers: workers, BatchSize: batch, Window: n})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Read != n {
		t.Fatalf("the run read %d rows, want %d", sum.Read, n)
	}
	slices.SortFunc(rec.got, func(a, b floorBatch) int { return a.lo - b.lo })
	if want := floorBatches(n, batch, workers); !slices.Equal(rec.got, want) {
		t.Errorf("the pipeline dealt %v, the floor sends %v", rec.got, want)
	}
}

// batchRecorder is a pipeline.Sink that mints every row and records each batch's rows (by
// Seq) and worker.
type batchRecorder struct {
	mu  sync.Mutex
	got []floorBatch
}

func (r *batchRecorder) OpenWorker(ctx context.Context, worker int) (pipeline.SinkWorker, error) {
	return recorderWorker{r: r, w: worker}, nil
}

type recorderWorker struct {
	r *batchRecorder
	w int
}

func (w recorderWorker) Write(ctx context.Context, b *pipeline.Batch) error {
	for i := range b.Rows {
		b.Rows[i].Outcome, b.Rows[i].ARK = pipeline.OutcomeMinted, "ark:99999/x9"+b.Rows[i].Record.RequestID
	}
	w.r.mu.Lock()
	defer w.r.mu.Unlock()
	w.r.got = append(w.r.got, floorBatch{lo: int(b.Rows[0].Seq), hi: int(b.Rows[len(b.Rows)-1].Seq) + 1, w: w.w})
	return nil
}

func (w recorderWorker) Close() error { return nil }
