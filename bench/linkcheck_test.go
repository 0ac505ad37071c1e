package bench

import (
	"context"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
)

// TestRunLinkCheckSmall runs the link-check benchmark at a small size against the test server:
// every target of each ledger is checked, recorded and good, and a second run finds nothing due.
func TestRunLinkCheckSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("the link-check benchmark end to end, at two sizes: the full suite (make test) runs it, -short does not")
	}
	res, err := RunLinkCheck(context.Background(), LinkCheckConfig{Sizes: []int{300, 600}, Hosts: 30, Latency: time.Millisecond,
		Interval: 5 * time.Millisecond, Workers: 8, ServerURL: pgtest.URL(t), Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 2 || res.Settings["server_version"] == "" || res.Settings["fsync"] == "" {
		t.Fatalf("result %+v", res)
	}
	for i, want := range []int{300, 600} {
		r := res.Runs[i]
		if r.ARKs != want || r.Checked != int64(want) || r.Summary.Good != int64(want) || r.Rate <= 0 || r.Commits < 1 ||
			r.Bound != 6000 || r.PeakLiveHeap == 0 || r.PeakHeap < r.BaseHeap {
			t.Errorf("run %d: %+v", i, r)
		}
	}
}

// TestCheckEngineOverLocalHosts checks 60 targets over 6 local hosts with the engine alone:
// every one good, 10 per host.
func TestCheckEngineOverLocalHosts(t *testing.T) {
	t.Parallel()
	hosts, err := startLocalHosts(6, 2*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer hosts.close()
	sum, _, err := checkEngine(t.Context(), hosts, 60, 4, 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Checked != 60 || sum.Good != 60 || len(sum.Hosts) != 6 || sum.Hosts[0].Seen != 10 {
		t.Errorf("%+v", sum)
	}
}

// BenchmarkLinkCheckEngine runs the link-check engine alone (no ledger) over b.N targets (at
// least 100) on 100 local hosts answering after 50 ms, a 100 ms per-host interval and 64
// workers, and reports checks/s beside the bound min(hosts/interval, workers/latency) and the
// peak heap. `arkhe bench linkcheck` measures the same through the ledger.
func BenchmarkLinkCheckEngine(b *testing.B) {
	const nHosts, workers, latency, interval = 100, 64, 50 * time.Millisecond, 100 * time.Millisecond
	hosts, err := startLocalHosts(nHosts, latency)
	if err != nil {
		b.Fatal(err)
	}
	defer hosts.close()
	n := max(b.N, 100)
	runtime.GC()
	heap := startHeapSampler()
	b.ResetTimer()
	sum, elapsed, err := checkEngine(context.Background(), hosts, n, workers, interval)
	b.StopTimer()
	peaks := heap.stop()
	if err != nil {
		b.Fatal(err)
	}
	if sum.Good != int64(n) {
		b.Fatalf("%d good checks of %d targets", sum.Good, n)
	}
	b.ReportMetric(float64(n)/elapsed.Seconds(), "checks/s")
	b.ReportMetric(min(nHosts/interval.Seconds(), workers/latency.Seconds()), "bound-checks/s")
	b.ReportMetric(float64(peaks.InUse)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(peaks.Live)/(1<<20), "peak-live-heap-MiB")
}
