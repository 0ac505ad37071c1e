package pipeline

import (
	"fmt"
	"testing"
)

// BenchmarkInFlightRoute routes distinct request IDs through a window of 300,000 rows (the
// default mint's), the collector 300,000 rows behind the reader: the reader's per-row cost of
// keeping repeats of a request ID on one worker.
func BenchmarkInFlightRoute(b *testing.B) {
	const window = 300_000
	ids := make([]string, 1<<20)
	for i := range ids {
		ids[i] = fmt.Sprintf("bench-%09d", i)
	}
	f := newInFlight(window)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		seq := int64(i)
		f.route(ids[i&(len(ids)-1)], seq, max(0, seq-window+1), i&1)
	}
}
