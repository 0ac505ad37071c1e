package pipeline

import "testing"

// TestMemoryLimitFor: the default window keeps MemoryLimit, a smaller one too, and a larger
// one raises it in proportion (3 workers hold 4 batches, a third more than the default 3).
func TestMemoryLimitFor(t *testing.T) {
	for _, c := range []struct {
		workers, batch int
		want           int64
	}{
		{0, 0, MemoryLimit},
		{DefaultWorkers, DefaultBatchSize, MemoryLimit},
		{1, DefaultBatchSize, MemoryLimit},
		{8, 1000, MemoryLimit},
		{3, DefaultBatchSize, MemoryLimit * 4 / 3},
		{2, 2 * DefaultBatchSize, 2 * MemoryLimit},
	} {
		if got := MemoryLimitFor(c.workers, c.batch); got != c.want {
			t.Errorf("MemoryLimitFor(%d, %d) = %d, want %d", c.workers, c.batch, got, c.want)
		}
	}
}
