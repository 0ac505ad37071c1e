package linkcheck

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"
)

// TestBenchSmall runs Bench at a small size so the helper stays working;
// it asserts counts, not speed.
func TestBenchSmall(t *testing.T) {
	t.Parallel()
	res, err := Bench(t.Context(), BenchConfig{Targets: 60, Hosts: 6, Latency: 2 * time.Millisecond, Interval: 5 * time.Millisecond, Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	if res.Checked != 60 || res.Summary.Good != 60 || len(res.Summary.Hosts) != 6 || res.Summary.Hosts[0].Seen != 10 ||
		res.Bound != min(6/0.005, 4/0.002) || res.PeakHeap < res.BaseHeap || res.Rate <= 0 {
		t.Errorf("%+v", res)
	}
}

// BenchmarkRun checks b.N targets over 100 local hosts answering after
// 50 ms at a 100 ms interval with 64 workers, and reports checks/s, the
// bound min(hosts/interval, workers/latency) and the peak heap. Bench with
// its defaults (100,000 targets over 1,000 hosts at 1 s) is the full size.
func BenchmarkRun(b *testing.B) {
	bc := BenchConfig{Targets: max(b.N, 100), Hosts: 100, Latency: 50 * time.Millisecond, Interval: 100 * time.Millisecond, Workers: 64}
	b.ResetTimer()
	res, err := Bench(context.Background(), bc)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(res.Rate, "checks/s")
	b.ReportMetric(res.Bound, "bound-checks/s")
	b.ReportMetric(res.HostBound, "host-bound-checks/s")
	b.ReportMetric(float64(res.PeakHeap)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(res.PeakLiveHeap)/(1<<20), "peak-live-heap-MiB")
}

// BenchmarkBenchDefaults runs Bench at its full default size: 100,000
// targets over 1,000 local hosts answering after 50 ms, 1 s per-host
// interval, 64 workers (about 2 minutes). Run it with -benchtime=1x.
//
// LINKCHECK_BENCH_TARGETS overrides the number of targets (to compare the
// peak heap at different sizes) and LINKCHECK_BENCH_WORKERS the workers (to
// see the bound set by workers/latency).
func BenchmarkBenchDefaults(b *testing.B) {
	n, _ := strconv.Atoi(os.Getenv("LINKCHECK_BENCH_TARGETS"))
	w, _ := strconv.Atoi(os.Getenv("LINKCHECK_BENCH_WORKERS"))
	for range b.N {
		res, err := Bench(context.Background(), BenchConfig{Targets: n, Workers: w})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(res.Rate, "checks/s")
		b.ReportMetric(res.Bound, "bound-checks/s")
		b.ReportMetric(res.HostBound, "host-bound-checks/s")
		b.ReportMetric(float64(res.PeakHeap)/(1<<20), "peak-heap-MiB")
		b.ReportMetric(float64(res.PeakLiveHeap)/(1<<20), "peak-live-heap-MiB")
		b.ReportMetric(float64(res.BaseHeap)/(1<<20), "base-heap-MiB")
		b.ReportMetric(res.Elapsed.Seconds(), "elapsed-s")
	}
}
