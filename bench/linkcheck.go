package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/linkcheck"
	"github.com/arkhe-ledger/arkhe/targethealth"
)

// LinkCheckConfig configures RunLinkCheck (`arkhe bench linkcheck`). Zero fields take the
// defaults named on them.
type LinkCheckConfig struct {
	// Sizes are the ledger sizes measured, one run each, in order: the ARKs (each with its own
	// target) in a fresh ledger (default 10,000 and 100,000, so that memory can be compared).
	Sizes []int
	// Hosts is the number of local HTTP servers, each its own host name (h0.bench.invalid, ...)
	// on its own 127.0.0.1 port (default 1,000); targets are spread over them round-robin.
	Hosts int
	// Latency is how long each server takes to answer (default 50 ms).
	Latency time.Duration
	// Interval is the per-host interval (default 1 s).
	Interval time.Duration
	// Workers is the engine's checks in flight (default 64).
	Workers int
	// Dir holds the local cluster, kept (stopped) for the next run; "" uses a temporary
	// directory, removed at the end.
	Dir string
	// ServerURL is the superuser URL of an existing server to use instead of a local cluster.
	ServerURL string
	// Log receives progress lines; it must not be nil (io.Discard for none).
	Log io.Writer
}

// LinkCheckRun is one measured run of RunLinkCheck.
type LinkCheckRun struct {
	// ARKs is the ledger's size: ARKs with a due target.
	ARKs int
	// Checked is the number of checks recorded; Elapsed the run's wall time; Rate
	// Checked/Elapsed in checks per second.
	Checked int64
	Elapsed time.Duration
	Rate    float64
	// Bound is min(Hosts/Interval, Workers/Latency) in checks per second: what politeness and
	// the workers allow if requests took no time. HostBound is Hosts/(Interval+Latency): the
	// politeness limit with the interval counted, as the engine does, from the end of one
	// request to the start of the next.
	Bound, HostBound float64
	// BaseHeap is the live heap before the run, PeakHeap the largest allocated heap and
	// PeakLiveHeap the largest live heap marked by a garbage collection, sampled every 100 ms,
	// in bytes; all include the local servers, which run in the same process.
	BaseHeap, PeakHeap, PeakLiveHeap uint64
	// Commits is the number of transactions the sink committed.
	Commits int64
	// Fill is the time to load the ledger; Empty the time of a second run with nothing due
	// (what a nightly run costs to find that nothing is due).
	Fill, Empty time.Duration
	// Summary is the engine's summary of the measured run.
	Summary linkcheck.Summary
}

// LinkCheckResult is what RunLinkCheck measured.
type LinkCheckResult struct {
	// Config is the configuration with defaults applied.
	Config LinkCheckConfig
	// Server says where it ran; Settings holds ServerSettings as the server reported them.
	Server   string
	Settings map[string]string
	Runs     []LinkCheckRun
}

// localHosts are local HTTP servers on 127.0.0.1, each with a made-up host name of its own
// (h0.bench.invalid, h1.bench.invalid, ...) resolved by resolver, answering every request after
// a fixed latency with "ok" (a HEAD gets its Content-Length, so no GET follows). Call close.
type localHosts struct {
	ports    []string
	resolver hostResolver
	servers  []*http.Server
}

// hostResolver resolves the made-up host names of localHosts to loopback and no other name.
type hostResolver map[string]bool

func (m hostResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if m[host] {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// startLocalHosts starts n servers answering after latency; on an error none is left running.
func startLocalHosts(n int, latency time.Duration) (*localHosts, error) {
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
	h := &localHosts{ports: make([]string, n), resolver: hostResolver{}}
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			h.close()
			return nil, fmt.Errorf("listening for host %d of %d: %w", i, n, err)
		}
		srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
		h.servers = append(h.servers, srv)
		go func() { _ = srv.Serve(ln) }()
		h.ports[i] = strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		h.resolver["h"+strconv.Itoa(i)+".bench.invalid"] = true
	}
	return h, nil
}

// target returns the URL of target i: http://h<i mod n>.bench.invalid:<port>/t/<i>, so targets
// are spread over the hosts round-robin.
func (h *localHosts) target(i int) string {
	k := i % len(h.ports)
	return "http://h" + strconv.Itoa(k) + ".bench.invalid:" + h.ports[k] + "/t/" + strconv.Itoa(i)
}

// close stops every server.
func (h *localHosts) close() {
	for _, s := range h.servers {
		s.Close()
	}
}

// checkConfig is the engine's configuration for a run against h: workers checks in flight,
// the per-host interval, private addresses allowed (they are all loopback) and h's resolver.
func (h *localHosts) checkConfig(workers int, interval time.Duration) linkcheck.Config {
	return linkcheck.Config{Workers: workers, PerHostInterval: interval, Contact: "https://example.invalid/arkhe-bench",
		AllowPrivate: true, Resolver: h.resolver, MaxIdleConns: len(h.ports) + workers}
}

// RunLinkCheck measures `arkhe linkcheck` through the ledger: for each size it creates a
// fresh ledger of that many public ARKs whose targets are spread over cfg.Hosts local HTTP
// servers answering every request after cfg.Latency (HEAD with a Content-Length, so no GET
// follows), and runs targethealth.Run over it with cfg.Workers and cfg.Interval (AllowPrivate,
// the host names resolved to 127.0.0.1): the ledger's source streams the targets, the sink
// commits every check. It reports checks per second against the bound and the peak heap, then
// times a second run that finds nothing due. Every check must be recorded and good.
func RunLinkCheck(ctx context.Context, cfg LinkCheckConfig) (_ *LinkCheckResult, err error) {
	if len(cfg.Sizes) == 0 {
		cfg.Sizes = []int{10_000, 100_000}
	}
	if cfg.Hosts == 0 {
		cfg.Hosts = 1000
	}
	if cfg.Latency == 0 {
		cfg.Latency = 50 * time.Millisecond
	}
	if cfg.Interval == 0 {
		cfg.Interval = time.Second
	}
	if cfg.Workers == 0 {
		cfg.Workers = 64
	}
	for _, n := range cfg.Sizes {
		if n < 1 {
			return nil, fmt.Errorf("bench linkcheck: sizes must be positive (got %d)", n)
		}
	}
	if cfg.Hosts < 1 || cfg.Latency < 0 || cfg.Interval <= 0 || cfg.Workers < 1 {
		return nil, errors.New("bench linkcheck: hosts, interval and workers must be positive, latency not negative")
	}
	hosts, err := startLocalHosts(cfg.Hosts, cfg.Latency)
	if err != nil {
		return nil, fmt.Errorf("bench linkcheck: %w", err)
	}
	defer hosts.close()
	srv, err := openServer(ctx, "linkcheck", cfg.ServerURL, cfg.Dir, "", cfg.Log)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, srv.close(context.WithoutCancel(ctx))) }()
	res := &LinkCheckResult{Config: cfg, Server: srv.desc, Settings: srv.settings}
	for _, n := range cfg.Sizes {
		r, err := linkCheckRun(ctx, srv, cfg, n, hosts)
		if err != nil {
			return res, err
		}
		res.Runs = append(res.Runs, r)
	}
	return res, nil
}

// linkCheckRun fills a fresh ledger of n ARKs and measures one run over it.
func linkCheckRun(ctx context.Context, srv *server, cfg LinkCheckConfig, n int, hosts *localHosts) (LinkCheckRun, error) {
	r := LinkCheckRun{ARKs: n}
	db := fmt.Sprintf("bench_linkcheck_%d", n)
	ident := pgx.Identifier{db}.Sanitize()
	if _, err := srv.admin.Exec(ctx, "drop database if exists "+ident+" with (force)"); err != nil {
		return r, err
	}
	if _, err := srv.admin.Exec(ctx, "create database "+ident); err != nil {
		return r, err
	}
	defer func() {
		_, _ = srv.admin.Exec(context.WithoutCancel(ctx), "drop database if exists "+ident+" with (force)")
	}()
	l, err := ledger.Open(ctx, srv.url(db), 8)
	if err != nil {
		return r, err
	}
	defer l.Close()
	if _, err := l.Init(ctx, ledger.LayoutAuto); err != nil {
		return r, err
	}
	start := time.Now()
	if err := fillLinkLedger(ctx, l, n, hosts); err != nil {
		return r, err
	}
	r.Fill = time.Since(start)
	r.Bound = min(float64(cfg.Hosts)/cfg.Interval.Seconds(), float64(cfg.Workers)/cfg.Latency.Seconds())
	r.HostBound = float64(cfg.Hosts) / (cfg.Interval + cfg.Latency).Seconds()
	srv.logf("%d ARKs over %d hosts loaded in %.1f s; checking (bound %.0f checks/s)", n, cfg.Hosts, r.Fill.Seconds(), r.Bound)

	check := hosts.checkConfig(cfg.Workers, cfg.Interval)
	runtime.GC()
	heap := startHeapSampler()
	start = time.Now()
	rep, runErr := targethealth.Run(ctx, l, targethealth.Config{Check: check, ClientID: "arkhe-bench"})
	r.Elapsed = time.Since(start)
	peaks := heap.stop()
	r.BaseHeap, r.PeakHeap, r.PeakLiveHeap = peaks.Base, peaks.InUse, peaks.Live
	r.Summary, r.Checked, r.Commits = rep.Summary, rep.Summary.Checked, rep.Sink.Commits
	if r.Elapsed > 0 {
		r.Rate = float64(r.Checked) / r.Elapsed.Seconds()
	}
	if runErr != nil {
		return r, fmt.Errorf("bench linkcheck: %w", runErr)
	}
	var stored int64
	if err := l.Pool.QueryRow(ctx, `select count(*) from link_state where outcome = 'good'`).Scan(&stored); err != nil {
		return r, err
	}
	if r.Checked != int64(n) || rep.Summary.Good != int64(n) || stored != int64(n) {
		return r, fmt.Errorf("bench linkcheck: %d good checks of %d recorded, %d good states stored, %d targets",
			rep.Summary.Good, r.Checked, stored, n)
	}
	srv.logf("%d checks in %.1f s: %.0f checks/s; peak live heap %.1f MiB", r.Checked, r.Elapsed.Seconds(), r.Rate, float64(r.PeakLiveHeap)/(1<<20))
	if _, err := l.Pool.Exec(ctx, "vacuum analyze"); err != nil {
		return r, err
	}
	start = time.Now()
	rep, err = targethealth.Run(ctx, l, targethealth.Config{Check: check, ClientID: "arkhe-bench"})
	r.Empty = time.Since(start)
	if err != nil {
		return r, fmt.Errorf("bench linkcheck: the run with nothing due: %w", err)
	}
	if rep.Summary.Read != 0 {
		return r, fmt.Errorf("bench linkcheck: the second run read %d targets, want none due", rep.Summary.Read)
	}
	return r, nil
}

// fillLinkLedger registers NAAN 12345 with a reserved shoulder /b5 and COPYs n imported ARKs
// 12345/b5<i> whose target is hosts.target(i).
func fillLinkLedger(ctx context.Context, l *ledger.Ledger, n int, hosts *localHosts) error {
	if _, err := l.AddNAAN(ctx, ledger.NAAN{NAAN: "12345", Name: "bench"}); err != nil {
		return err
	}
	if _, err := l.AddManager(ctx, ledger.Manager{NAAN: "12345", Name: "bench"}); err != nil {
		return err
	}
	if _, err := l.AddShoulder(ctx, ledger.Shoulder{NAAN: "12345", Shoulder: "/b5", Manager: "bench", Status: "reserved"}, 0); err != nil {
		return err
	}
	var shoulder, run int64
	if err := l.Pool.QueryRow(ctx, `select id from shoulder where shoulder = '/b5'`).Scan(&shoulder); err != nil {
		return err
	}
	if err := l.Pool.QueryRow(ctx, `insert into import_run (source_file, format) values ('bench', 'bench') returning id`).Scan(&run); err != nil {
		return err
	}
	i := 0
	src := pgx.CopyFromFunc(func() ([]any, error) {
		if i == n {
			return nil, nil
		}
		name := "b5" + strconv.Itoa(i)
		url := hosts.target(i)
		i++
		return []any{"12345/" + name, "12345", shoulder, name, url, run}, nil
	})
	if _, err := l.Pool.CopyFrom(ctx, pgx.Identifier{"ark"}, []string{"ark", "naan", "shoulder_id", "assigned_name", "url", "import_run_id"}, src); err != nil {
		return fmt.Errorf("load ARKs: %w", err)
	}
	_, err := l.Pool.Exec(ctx, "vacuum analyze")
	return err
}

// checkEngine runs the link-check engine alone (no ledger: targets generated as they are read,
// results dropped) over n targets spread over hosts, and returns its summary and wall time.
func checkEngine(ctx context.Context, hosts *localHosts, n, workers int, interval time.Duration) (linkcheck.Summary, time.Duration, error) {
	i := 0
	src := linkcheck.SourceFunc(func(ctx context.Context) (linkcheck.Target, error) {
		if err := ctx.Err(); err != nil {
			return linkcheck.Target{}, err
		}
		if i >= n {
			return linkcheck.Target{}, io.EOF
		}
		t := linkcheck.Target{Key: "99999/bench" + strconv.Itoa(i), URL: hosts.target(i)}
		i++
		return t, nil
	})
	sink := linkcheck.SinkFunc(func(context.Context, linkcheck.Result, linkcheck.State, []linkcheck.Transition) error { return nil })
	start := time.Now()
	sum, err := linkcheck.Run(ctx, hosts.checkConfig(workers, interval), src, sink)
	return sum, time.Since(start), err
}
