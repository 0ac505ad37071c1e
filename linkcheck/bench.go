package linkcheck

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"time"
)

// mapResolver resolves the names in it and no others; the bench and the
// tests use it to give local servers distinct host names.
type mapResolver map[string][]netip.Addr

func (m mapResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := m[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// BenchConfig sets up Bench. Zero fields take the defaults named on them.
type BenchConfig struct {
	// Targets is the number of targets checked (default 100,000).
	Targets int
	// Hosts is the number of local HTTP servers, each its own host name
	// (h0.bench.invalid, ...) on its own 127.0.0.1 port (default 1,000).
	Hosts int
	// Latency is how long each server takes to answer (default 50 ms).
	Latency time.Duration
	// Interval is the per-host interval (default 1 s).
	Interval time.Duration
	// Workers is Config.Workers (default 64).
	Workers int
}

// BenchResult is what Bench measured.
type BenchResult struct {
	// Config is the BenchConfig with defaults applied.
	Config BenchConfig
	// Checked is the number of checks recorded.
	Checked int64
	// Elapsed is the run's wall time.
	Elapsed time.Duration
	// Rate is Checked/Elapsed in checks per second.
	Rate float64
	// Bound is min(Hosts/Interval, Workers/Latency) in checks per second:
	// what politeness and the workers allow if requests took no time.
	Bound float64
	// HostBound is Hosts/(Interval+Latency) in checks per second: the
	// politeness limit with the interval counted, as Run does, from the end
	// of one request to the start of the next.
	HostBound float64
	// BaseHeap is the live heap before the run, PeakHeap the largest
	// allocated heap (live objects and garbage not yet collected) and
	// PeakLiveHeap the largest live heap as marked by a garbage collection,
	// sampled every 100 ms during the run, in bytes. All include the local
	// servers and their connections, which run in the same process.
	BaseHeap, PeakHeap, PeakLiveHeap uint64
	// Summary is the run's Summary.
	Summary Summary
}

// Bench runs Run over bc.Targets targets spread round-robin over bc.Hosts
// local HTTP servers that answer every request (HEAD with a
// Content-Length, so no GET follows) after bc.Latency, with AllowPrivate
// set and made-up host names resolved to 127.0.0.1. The targets are
// generated as they are read, so memory does not grow with their number.
// It fails when a server cannot listen or the run fails or checks fewer
// targets than asked.
func Bench(ctx context.Context, bc BenchConfig) (BenchResult, error) {
	if bc.Targets == 0 {
		bc.Targets = 100000
	}
	if bc.Hosts == 0 {
		bc.Hosts = 1000
	}
	if bc.Latency == 0 {
		bc.Latency = 50 * time.Millisecond
	}
	if bc.Interval == 0 {
		bc.Interval = time.Second
	}
	if bc.Workers == 0 {
		bc.Workers = 64
	}
	if bc.Targets < 0 || bc.Hosts < 0 || bc.Latency < 0 || bc.Interval < 0 || bc.Workers < 0 {
		return BenchResult{}, &ConfigError{Field: "BenchConfig", Reason: fmt.Sprintf("values must not be negative: %+v", bc)}
	}
	res := BenchResult{Config: bc}

	latency := bc.Latency
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := time.NewTimer(latency)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", "2")
		_, _ = io.WriteString(w, "ok")
	})
	resolver := mapResolver{}
	ports := make([]int, bc.Hosts)
	var servers []*http.Server
	defer func() {
		for _, s := range servers {
			s.Close()
		}
	}()
	loop := netip.MustParseAddr("127.0.0.1")
	for i := range bc.Hosts {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return res, fmt.Errorf("bench: listening for host %d of %d: %w", i, bc.Hosts, err)
		}
		srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
		servers = append(servers, srv)
		go func() { _ = srv.Serve(ln) }()
		ports[i] = ln.Addr().(*net.TCPAddr).Port
		resolver["h"+strconv.Itoa(i)+".bench.invalid"] = []netip.Addr{loop}
	}

	n := 0
	src := SourceFunc(func(ctx context.Context) (Target, error) {
		if err := ctx.Err(); err != nil {
			return Target{}, err
		}
		if n >= bc.Targets {
			return Target{}, io.EOF
		}
		h := n % bc.Hosts
		t := Target{
			Key: "99999/bench" + strconv.Itoa(n),
			URL: "http://h" + strconv.Itoa(h) + ".bench.invalid:" + strconv.Itoa(ports[h]) + "/t/" + strconv.Itoa(n),
		}
		n++
		return t, nil
	})
	sink := SinkFunc(func(context.Context, Result, State, []Transition) error { return nil })
	cfg := Config{
		Workers:         bc.Workers,
		PerHostInterval: bc.Interval,
		Contact:         "https://example.invalid/arkhe-bench",
		AllowPrivate:    true,
		Resolver:        resolver,
		MaxIdleConns:    bc.Hosts + bc.Workers,
	}

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	res.BaseHeap, res.PeakHeap, res.PeakLiveHeap = ms.HeapAlloc, ms.HeapAlloc, ms.HeapAlloc
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		var m runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				runtime.ReadMemStats(&m)
				res.PeakHeap = max(res.PeakHeap, m.HeapAlloc)
				metrics.Read(live)
				if live[0].Value.Kind() == metrics.KindUint64 {
					res.PeakLiveHeap = max(res.PeakLiveHeap, live[0].Value.Uint64())
				}
			}
		}
	}()
	start := time.Now()
	sum, err := Run(ctx, cfg, src, sink)
	res.Elapsed = time.Since(start)
	close(stop)
	wg.Wait()
	res.Summary = sum
	res.Checked = sum.Checked
	if res.Elapsed > 0 {
		res.Rate = float64(sum.Checked) / res.Elapsed.Seconds()
	}
	res.Bound = min(float64(bc.Hosts)/bc.Interval.Seconds(), float64(bc.Workers)/bc.Latency.Seconds())
	res.HostBound = float64(bc.Hosts) / (bc.Interval + bc.Latency).Seconds()
	if err != nil {
		return res, fmt.Errorf("bench: %w", err)
	}
	if sum.Checked != int64(bc.Targets) || sum.Good != sum.Checked {
		return res, errors.New("bench: " + strconv.FormatInt(sum.Good, 10) + " good checks of " +
			strconv.FormatInt(sum.Checked, 10) + " recorded, " + strconv.Itoa(bc.Targets) + " targets")
	}
	return res, nil
}
