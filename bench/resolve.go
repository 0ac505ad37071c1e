package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/export"
	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// The targets of the resolution goals, at 1 million ARKs on a 2-core machine: arkhe serve at
// least ResolveTargetRPS resolutions/s with a p99 of at most ResolveTargetP99, at least
// ResolveTargetNginx times nginx with the exported map and ResolveTargetFloor times the pgbench
// floor, at least ResolveTargetArklet times arklet, and a resident set of at most
// ResolveTargetRSS octets.
const (
	ResolveTargetRPS    = 20_000
	ResolveTargetP99    = 10 * time.Millisecond
	ResolveTargetNginx  = 0.5
	ResolveTargetFloor  = 1.0
	ResolveTargetArklet = 10.0
	ResolveTargetRSS    = 256 << 20
)

// The resolvers RunResolve loads, in its order.
const (
	ResolverNginx  = "nginx"
	ResolverFloor  = "floor"
	ResolverArkhe  = "arkhe"
	ResolverArklet = "arklet"
)

// ResolverNames lists the resolvers RunResolve knows, in the order it runs them.
func ResolverNames() []string {
	return []string{ResolverNginx, ResolverFloor, ResolverArkhe, ResolverArklet}
}

// ResolveFloorQuery is the floor's lookup: the resolver's point lookup of an ARK and its NAAN,
// prepared (pgbench -M prepared), its key read from a table of the sampled keys by an integer
// primary key (pgbench draws integers, not strings): one more index probe than the resolver's.
const ResolveFloorQuery = `select a.ark, coalesce(a.url, ''), coalesce(a.status::text, 'public'), a.tombstone_reason, a.tombstoned_at,
		a.erc_who, a.erc_what, a.erc_when, a.commitment, n.na_policy, n.name
	from ark a left join naan n on n.naan = a.naan
	where a.ark = (select k.ark from bench_resolve_key k where k.i = :i)`

// resolveSample is how many existing ARKs the request mix draws from (fewer when the ledger
// holds fewer).
const resolveSample = 100_000

// ResolveConfig configures RunResolve (`arkhe bench resolve`).
type ResolveConfig struct {
	// ARKs is the number of ARKs in the filled ledger (positive); Seed its seed.
	ARKs int
	Seed int64
	// Duration is each resolver's measured load (wrk -d, pgbench -T); Warmup a load before it,
	// not measured (0 for none).
	Duration, Warmup time.Duration
	// Connections are the keep-alive connections (wrk -c, pgbench -c); Threads wrk's and
	// pgbench's threads (-t, -j). Both positive, Connections >= Threads.
	Connections, Threads int
	// Resolvers are those to run (ResolverNames; nil for all).
	Resolvers []string
	// Exe is the arkhe binary that serves (arkhe serve); ServeArgs are more flags of it.
	Exe       string
	ServeArgs []string
	// Dir keeps the cluster and its filled ledger between runs; "" uses a temporary directory.
	Dir string
	// ServerURL is the superuser URL of an existing server to use instead of a local cluster.
	ServerURL string
	// Arklet is the vendored arklet source (a tar.gz of its repository); "" skips arklet.
	Arklet string
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

// LoadResult is one resolver's measured load.
type LoadResult struct {
	// Name is the resolver (ResolverNames).
	Name string
	// Skipped, when not "", says why the resolver did not run; the figures are then zero.
	Skipped string
	// Requests answered in Elapsed; RPS their rate per second.
	Requests int64
	Elapsed  time.Duration
	RPS      float64
	// P50 and P99 are latency percentiles of the answers.
	P50, P99 time.Duration
	// Errors are socket errors and timeouts (wrk) or failed transactions (pgbench); Non2xx3xx
	// answers with another status (wrk), expected for the unknown names (404) and, for nginx,
	// the inflections (404: a map has no descriptions).
	Errors, Non2xx3xx int64
	// RSS is the server's peak resident set in octets (VmHWM, summed over its processes), 0
	// when not measured (the floor: PostgreSQL's own).
	RSS int64
	// Load is the load average (1, 5, 15 minutes) right after the run, as /proc/loadavg has it.
	Load string
	// CPUResolver is the processor time (user + system) the resolver's processes spent during
	// the measured run (0 for the floor, which has none); CPUDatabase the PostgreSQL server's
	// (0 for nginx, and on a server of --database-url). Per request they stay comparable on a
	// machine whose other jobs take a varying share of the cores, as rates do not.
	CPUResolver, CPUDatabase time.Duration
	// CacheHits and CacheMisses are arkhe serve's ARK look-ups answered from its cache and those
	// that read the ledger, since it started (the warm-up included), as its /metrics has them; 0
	// for the others, and without a cache.
	CacheHits, CacheMisses int64
}

// CPUPerRequest returns the resolver's and the database's processor time per request.
func (l LoadResult) CPUPerRequest() (resolver, database time.Duration) {
	if l.Requests == 0 {
		return 0, 0
	}
	return l.CPUResolver / time.Duration(l.Requests), l.CPUDatabase / time.Duration(l.Requests)
}

// ResolveResult is what RunResolve measured.
type ResolveResult struct {
	ARKs   int64
	Server string
	Reused bool
	// Mix describes the request mix.
	Mix     string
	Results []LoadResult
	// Kept names the database kept for the next run ("" when removed).
	Kept string
}

// Get returns the result of resolver name, and whether it ran.
func (r *ResolveResult) Get(name string) (LoadResult, bool) {
	for _, l := range r.Results {
		if l.Name == name {
			return l, l.Skipped == ""
		}
	}
	return LoadResult{}, false
}

// Ratio returns arkhe serve's requests/s over resolver name's, 0 when either did not run.
func (r *ResolveResult) Ratio(name string) float64 {
	a, ok := r.Get(ResolverArkhe)
	o, ok2 := r.Get(name)
	if !ok || !ok2 || o.RPS == 0 {
		return 0
	}
	return a.RPS / o.RPS
}

// RunResolve measures resolution on one ledger: it starts a throw-away cluster with the embedded
// default's settings in cfg.Dir (or uses cfg.ServerURL), fills database
// bench_resolve_ARKS_SEED_SCHEMA with cfg.ARKs ARKs (fixtures.FillLedger) unless it exists,
// draws a request mix from it, and loads each resolver in turn over keep-alive connections for
// cfg.Duration: nginx with the exported map (export.Nginx), the pgbench floor
// (ResolveFloorQuery), arkhe serve (cfg.Exe), arklet (Debian's Django) when it can run.
//
// The mix, seeded, cycles over 100,000 requests (fewer for a smaller ledger): 80 % an existing
// ARK (classic and modern forms alternating), 10 % one with a suffix (/page/3.jpg), 5 % an
// unknown name under the ledger's NAAN, 5 % ?info. A resolver that cannot run is reported as
// skipped, with why.
func RunResolve(ctx context.Context, cfg ResolveConfig) (*ResolveResult, error) {
	if cfg.ARKs < 1 || cfg.Duration <= 0 || cfg.Connections < 1 || cfg.Threads < 1 || cfg.Connections < cfg.Threads {
		return nil, errors.New("bench resolve: ARKs, duration, connections and threads must be positive, connections at least threads")
	}
	for _, n := range cfg.Resolvers {
		if !slices.Contains(ResolverNames(), n) {
			return nil, fmt.Errorf("bench resolve: resolver %q: want one of %s", n, strings.Join(ResolverNames(), ", "))
		}
	}
	if len(cfg.Resolvers) == 0 {
		cfg.Resolvers = ResolverNames()
	}
	for _, tool := range []string{"wrk"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("bench resolve: %s not found: make bench installs it (apt)", tool)
		}
	}
	srv, err := openServer(ctx, "resolve", cfg.ServerURL, cfg.Dir, "", cfg.Log)
	if err != nil {
		return nil, err
	}
	defer func() { _ = srv.close(context.WithoutCancel(ctx)) }()
	res := &ResolveResult{Server: srv.desc}
	db, err := filledLedger(ctx, srv, cfg, &res.Reused)
	if err != nil {
		return nil, err
	}
	dbURL := srv.url(db)
	if cfg.ServerURL != "" || cfg.Dir != "" {
		res.Kept = db
	}
	l, err := ledger.Open(ctx, dbURL, 4)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	if err := l.Pool.QueryRow(ctx, `select count(*) from ark`).Scan(&res.ARKs); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp(srv.dir, "run-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	if err := os.Chmod(work, 0o755); err != nil { // nginx's worker (nobody) reads the map
		return nil, err
	}
	keys, err := sampleKeys(ctx, l.Pool, cfg.Seed)
	if err != nil {
		return nil, err
	}
	paths := resolveMix(keys, cfg.Seed)
	res.Mix = fmt.Sprintf("%d requests cycled (80%% existing ARKs, 10%% with a suffix, 5%% unknown names, 5%% ?info), %d connections, %d threads, %s each",
		len(paths), cfg.Connections, cfg.Threads, cfg.Duration)
	script, err := writeMix(work, paths)
	if err != nil {
		return nil, err
	}
	r := &resolveRun{cfg: cfg, work: work, script: script, dbURL: dbURL, pool: l.Pool, keys: keys, logf: srv.logf, dataDirs: srv.dataDirs}
	for _, name := range cfg.Resolvers {
		var lr LoadResult
		var err error
		switch name {
		case ResolverNginx:
			lr, err = r.nginx(ctx, l)
		case ResolverFloor:
			lr, err = r.floor(ctx)
		case ResolverArkhe:
			lr, err = r.arkhe(ctx)
		case ResolverArklet:
			lr, err = r.arklet(ctx)
		}
		if err != nil {
			return nil, fmt.Errorf("bench resolve: %s: %w", name, err)
		}
		lr.Name = name
		if lr.Skipped == "" {
			lr.Load = loadAvg()
			cr, cd := lr.CPUPerRequest()
			srv.logf("%s: %.0f req/s, p50 %s, p99 %s, %d errors, %d non-2xx/3xx, RSS %d MB, CPU per request %s + database %s (load %s)", name, lr.RPS,
				lr.P50, lr.P99, lr.Errors, lr.Non2xx3xx, lr.RSS>>20, cr, cd, lr.Load)
		} else {
			srv.logf("%s skipped: %s", name, lr.Skipped)
		}
		res.Results = append(res.Results, lr)
	}
	return res, nil
}

// filledLedger returns the name of the filled ledger of cfg on srv,
// bench_resolve_ARKS_SEED_SCHEMA, filling it first (fillResolveLedger; dropped again if that
// fails) unless it exists, and sets *reused to whether it did.
func filledLedger(ctx context.Context, srv *server, cfg ResolveConfig, reused *bool) (string, error) {
	db := fmt.Sprintf("bench_resolve_%d_%d_%s", cfg.ARKs, cfg.Seed, ledger.SchemaHash())
	if err := srv.admin.QueryRow(ctx, `select exists (select 1 from pg_database where datname = $1)`, db).Scan(reused); err != nil {
		return "", err
	}
	if *reused {
		srv.logf("reusing the filled ledger %s", db)
		return db, nil
	}
	if err := fillResolveLedger(ctx, srv.admin, db, srv.url(db), cfg, srv.logf); err != nil {
		_, _ = srv.admin.Exec(context.WithoutCancel(ctx), "drop database if exists "+pgx.Identifier{db}.Sanitize()+" with (force)")
		return "", err
	}
	return db, nil
}

// fillResolveLedger creates database db, migrates it, fills it (fixtures.FillLedger, unchecked,
// one ARK_CHANGE per ten ARKs) and settles it (VACUUM ANALYZE, CHECKPOINT).
func fillResolveLedger(ctx context.Context, admin *pgxpool.Pool, db, dbURL string, cfg ResolveConfig, logf func(string, ...any)) error {
	if _, err := admin.Exec(ctx, "create database "+pgx.Identifier{db}.Sanitize()); err != nil {
		return err
	}
	l, err := ledger.Open(ctx, dbURL, 2)
	if err != nil {
		return err
	}
	defer l.Close()
	if _, err := l.Init(ctx, ledger.LayoutAuto); err != nil {
		return err
	}
	start, last := time.Now(), time.Now()
	err = fixtures.FillLedger(ctx, l.Pool, cfg.ARKs, cfg.Seed, fixtures.FillOptions{
		Shoulders: []string{"/x9", "/b5", "/fk4", "/mm7"}, ChangeEvery: 10, Unchecked: true,
		Progress: func(done int) {
			if time.Since(last) > 5*time.Second || done == cfg.ARKs {
				last = time.Now()
				logf("filled %d of %d ARKs", done, cfg.ARKs)
			}
		}})
	if err != nil {
		return err
	}
	logf("filled %d ARKs in %.1f s; vacuum analyze", cfg.ARKs, time.Since(start).Seconds())
	for _, q := range []string{"vacuum analyze", "checkpoint"} {
		if _, err := l.Pool.Exec(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// sampleKeys draws up to resolveSample existing ARK keys (NAAN/name), seeded, and writes them
// to table bench_resolve_key (i from 1, the floor's keys), replacing an earlier sample.
func sampleKeys(ctx context.Context, pool *pgxpool.Pool, seed int64) ([]string, error) {
	var n int64
	if err := pool.QueryRow(ctx, `select count(*) from ark`).Scan(&n); err != nil {
		return nil, err
	}
	frac := min(1.0, 1.2*float64(resolveSample)/float64(max(n, 1)))
	rows, err := pool.Query(ctx, `select ark from ark tablesample bernoulli ($1) repeatable ($2) limit $3`, frac*100, seed, resolveSample)
	if err != nil {
		return nil, fmt.Errorf("sample ARKs: %w", err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("sample ARKs: %w", err)
	}
	if len(keys) == 0 {
		return nil, errors.New("sample ARKs: the ledger holds none")
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `drop table if exists bench_resolve_key; create table bench_resolve_key (i integer primary key, ark text not null)`); err != nil {
		return nil, err
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"bench_resolve_key"}, []string{"i", "ark"},
		pgx.CopyFromSlice(len(keys), func(i int) ([]any, error) { return []any{i + 1, keys[i]}, nil })); err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `analyze bench_resolve_key`); err != nil {
		return nil, err
	}
	return keys, tx.Commit(ctx)
}

// resolveMix returns the request targets of the mix over keys (see RunResolve), as many as keys.
func resolveMix(keys []string, seed int64) []string {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	paths := make([]string, len(keys))
	for i := range paths {
		k := keys[rng.IntN(len(keys))]
		naan, name, _ := strings.Cut(k, "/")
		switch p := rng.IntN(100); {
		case p < 10:
			paths[i] = "/ark:" + k + "/page/3.jpg"
		case p < 15:
			paths[i] = "/ark:/" + naan + "/" + name + "unknown" + strconv.Itoa(i)
		case p < 20:
			paths[i] = "/ark:" + k + "?info"
		case i%2 == 0:
			paths[i] = "/ark:/" + k
		default:
			paths[i] = "/ark:" + k
		}
	}
	return paths
}

// writeMix writes paths, one a line, to work/paths.txt and wrk's script cycling over them
// (wrkScript) to work/mix.lua, and returns the script's path.
func writeMix(work string, paths []string) (string, error) {
	pathsFile := filepath.Join(work, "paths.txt")
	if err := os.WriteFile(pathsFile, []byte(strings.Join(paths, "\n")+"\n"), 0o644); err != nil {
		return "", err
	}
	script := filepath.Join(work, "mix.lua")
	if err := os.WriteFile(script, []byte(wrkScript(pathsFile)), 0o644); err != nil {
		return "", err
	}
	return script, nil
}

// wrkScript is the Lua script of wrk's load: each thread cycles over the paths file from an
// offset of its own; done prints one line "ARKHE-WRK requests duration_us connect read write
// status timeout p50_us p99_us".
func wrkScript(pathsFile string) string {
	return `local paths = {}
for line in io.lines(` + strconv.Quote(pathsFile) + `) do paths[#paths + 1] = line end
local threads = 0
function setup(thread)
  thread:set("offset", threads * 7919)
  threads = threads + 1
end
local i = 0
function init(args)
  i = (offset or 0) % #paths
end
function request()
  i = i % #paths + 1
  return wrk.format("GET", paths[i])
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("ARKHE-WRK %d %d %d %d %d %d %d %d %d\n", summary.requests, summary.duration,
    e.connect, e.read, e.write, e.status, e.timeout, latency:percentile(50), latency:percentile(99)))
end
`
}

// resolveRun is one RunResolve's state shared by the resolvers' runs.
type resolveRun struct {
	cfg    ResolveConfig
	work   string
	script string
	dbURL  string
	pool   *pgxpool.Pool
	keys   []string
	logf   func(string, ...any)
	// dataDirs are the local cluster's data directories, whose processor time is read.
	dataDirs []string
}

// wrk loads base with the mix for d (after the warm-up when warm) and parses its summary, with
// the processor time of the resolver's process tree (pid; 0 for none) and of the database
// server during the measured run.
func (r *resolveRun) wrk(ctx context.Context, base string, warm bool, pid int) (LoadResult, error) {
	run := func(d time.Duration) (LoadResult, error) {
		secs := max(1, int(d.Round(time.Second)/time.Second))
		cmd := exec.CommandContext(ctx, "wrk", "-t", strconv.Itoa(r.cfg.Threads), "-c", strconv.Itoa(r.cfg.Connections),
			"-d", strconv.Itoa(secs)+"s", "--timeout", "10s", "-s", r.script, base)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return LoadResult{}, fmt.Errorf("wrk: %w\n%s", err, out)
		}
		return parseWrk(string(out))
	}
	if warm && r.cfg.Warmup > 0 {
		if _, err := run(r.cfg.Warmup); err != nil {
			return LoadResult{}, err
		}
	}
	res0, db0 := treeCPU(pid), sampleCPU(r.dataDirs...).Server
	lr, err := run(r.cfg.Duration)
	lr.CPUResolver, lr.CPUDatabase = treeCPU(pid)-res0, sampleCPU(r.dataDirs...).Server-db0
	return lr, err
}

// treeCPU returns the processor time (user + system) of process pid and its live children; 0
// for pid 0 or without /proc.
func treeCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	var d time.Duration
	if f, ok := procStat(pid); ok {
		d += ticks(f, 11, 12)
	}
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	for _, c := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(c); err == nil {
			d += treeCPU(n)
		}
	}
	return d
}

// parseWrk reads the ARKHE-WRK line of the script's done function.
func parseWrk(out string) (LoadResult, error) {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 10 || f[0] != "ARKHE-WRK" {
			continue
		}
		var v [9]int64
		for i := range v {
			n, err := strconv.ParseInt(f[i+1], 10, 64)
			if err != nil {
				return LoadResult{}, fmt.Errorf("wrk summary %q: %w", line, err)
			}
			v[i] = n
		}
		lr := LoadResult{Requests: v[0], Elapsed: time.Duration(v[1]) * time.Microsecond,
			Errors: v[2] + v[3] + v[4] + v[6], Non2xx3xx: v[5],
			P50: time.Duration(v[7]) * time.Microsecond, P99: time.Duration(v[8]) * time.Microsecond}
		if lr.Elapsed > 0 {
			lr.RPS = float64(lr.Requests) / lr.Elapsed.Seconds()
		}
		return lr, nil
	}
	return LoadResult{}, fmt.Errorf("wrk printed no summary:\n%s", out)
}

// freePort returns a loopback port free now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// listenWait is how long a server started by the benchmark may take to listen: nginx builds the
// hash of a map of millions of ARKs before it does, slowly on a busy machine.
const listenWait = 5 * time.Minute

// waitListen waits until addr accepts a connection (each try a connect), up to listenWait, or
// until the server exits.
func waitListen(ctx context.Context, addr string, exited <-chan struct{}) error {
	deadline := time.Now().Add(listenWait)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not listen: %w", addr, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-exited:
			return fmt.Errorf("the server exited before listening on %s", addr)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// nginx exports the ledger as an nginx map and loads nginx serving it (two workers, access log
// buffered to a file, as arkhe serve's).
func (r *resolveRun) nginx(ctx context.Context, l *ledger.Ledger) (LoadResult, error) {
	bin := ""
	for _, p := range []string{"/usr/sbin/nginx", "/usr/local/sbin/nginx"} {
		if _, err := os.Stat(p); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		return LoadResult{Skipped: "nginx not found (make nginx installs it)"}, nil
	}
	dir := filepath.Join(r.work, "nginx")
	if err := os.MkdirAll(filepath.Join(dir, "conf"), 0o755); err != nil {
		return LoadResult{}, err
	}
	r.logf("nginx: exporting the map")
	ex, err := export.Run(ctx, l, export.Config{Format: export.Nginx, Path: filepath.Join(dir, "conf", "arks.map")})
	if err != nil {
		return LoadResult{}, err
	}
	port, err := freePort()
	if err != nil {
		return LoadResult{}, err
	}
	userLine := ""
	if os.Geteuid() == 0 {
		group := "nogroup"
		if _, err := user.LookupGroup(group); err != nil {
			group = "nobody"
		}
		userLine = "user nobody " + group + ";"
	}
	conf := fmt.Sprintf(`%s
daemon off;
master_process on;
worker_processes 2;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log;
events { worker_connections 1024; }
http {
    access_log %[2]s/access.log combined buffer=64k flush=1s;
    client_body_temp_path %[2]s/body;
    proxy_temp_path %[2]s/proxy;
    fastcgi_temp_path %[2]s/fastcgi;
    uwsgi_temp_path %[2]s/uwsgi;
    scgi_temp_path %[2]s/scgi;
    keepalive_requests 1000000;
    include %[3]s;
    server {
        listen 127.0.0.1:%[4]d;
        include %[5]s;
    }
}
`, userLine, dir, ex.Files[1], port, ex.Files[2])
	cf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(cf, []byte(conf), 0o644); err != nil {
		return LoadResult{}, err
	}
	if os.Geteuid() == 0 {
		_ = os.Chmod(dir, 0o777) // the worker writes its access log there
	}
	cmd := exec.Command(bin, "-p", dir, "-c", cf)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return LoadResult{}, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		<-exited
	}()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if err := waitListen(ctx, addr, exited); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
		return LoadResult{}, fmt.Errorf("%w\n%s%s", err, stderr.String(), log)
	}
	lr, err := r.wrk(ctx, "http://"+addr, true, cmd.Process.Pid)
	if err != nil {
		return lr, err
	}
	lr.RSS = treeHWM(cmd.Process.Pid)
	return lr, nil
}

// floor runs pgbench with ResolveFloorQuery over the sampled keys, prepared, with the
// connections and threads of the load, and reads the latency of every transaction from its log.
func (r *resolveRun) floor(ctx context.Context) (LoadResult, error) {
	bin, err := pgbenchBinary()
	if err != nil {
		return LoadResult{Skipped: err.Error()}, nil
	}
	dir := filepath.Join(r.work, "pgbench")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return LoadResult{}, err
	}
	script := filepath.Join(dir, "lookup.sql")
	body := fmt.Sprintf("\\set i random(1, %d)\n%s;\n", len(r.keys), strings.Join(strings.Fields(ResolveFloorQuery), " "))
	if err := os.WriteFile(script, []byte(body), 0o644); err != nil {
		return LoadResult{}, err
	}
	run := func(d time.Duration, logged bool) (string, error) {
		args := []string{"-n", "-M", "prepared", "-c", strconv.Itoa(r.cfg.Connections), "-j", strconv.Itoa(r.cfg.Threads),
			"-T", strconv.Itoa(max(1, int(d.Round(time.Second)/time.Second))), "-f", script}
		if logged {
			args = append(args, "-l", "--log-prefix", filepath.Join(dir, "tx"))
		}
		cmd := exec.CommandContext(ctx, bin, append(args, r.dbURL)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("pgbench: %w\n%s", err, out)
		}
		return string(out), nil
	}
	if r.cfg.Warmup > 0 {
		if _, err := run(r.cfg.Warmup, false); err != nil {
			return LoadResult{}, err
		}
	}
	db0 := sampleCPU(r.dataDirs...).Server
	out, err := run(r.cfg.Duration, true)
	if err != nil {
		return LoadResult{}, err
	}
	lr := LoadResult{CPUDatabase: sampleCPU(r.dataDirs...).Server - db0}
	var lat []int64
	logs, _ := filepath.Glob(filepath.Join(dir, "tx.*"))
	for _, p := range logs {
		f, err := os.Open(p)
		if err != nil {
			return lr, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// client_id transaction_no time script_no time_epoch time_us
			fs := strings.Fields(sc.Text())
			if len(fs) < 3 {
				continue
			}
			if us, err := strconv.ParseInt(fs[2], 10, 64); err == nil {
				lat = append(lat, us)
			} else {
				lr.Errors++ // "failed" or "skipped"
			}
		}
		f.Close()
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "tps = "); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				lr.RPS, _ = strconv.ParseFloat(f[0], 64)
			}
		}
	}
	if len(lat) == 0 || lr.RPS == 0 {
		return lr, fmt.Errorf("pgbench: no transactions logged or no tps:\n%s", out)
	}
	slices.Sort(lat)
	lr.Requests = int64(len(lat))
	lr.Elapsed = r.cfg.Duration
	lr.P50 = time.Duration(lat[len(lat)/2]) * time.Microsecond
	lr.P99 = time.Duration(lat[len(lat)*99/100]) * time.Microsecond
	return lr, nil
}

// pgbenchBinary is the installed server's pgbench.
func pgbenchBinary() (string, error) {
	ms, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pgbench")
	if len(ms) > 0 {
		slices.Sort(ms)
		return ms[len(ms)-1], nil
	}
	if p, err := exec.LookPath("pgbench"); err == nil {
		return p, nil
	}
	return "", errors.New("pgbench not found (Debian's postgresql-client ships it)")
}

// arkhe runs `arkhe serve` on the ledger (access log to a file) and loads it.
func (r *resolveRun) arkhe(ctx context.Context) (LoadResult, error) {
	if r.cfg.Exe == "" {
		return LoadResult{Skipped: "no arkhe binary given"}, nil
	}
	var lr LoadResult
	err := r.serveArkhe(ctx, func(addr string, pid int) error {
		var err error
		if lr, err = r.wrk(ctx, "http://"+addr, true, pid); err != nil {
			return err
		}
		lr.RSS = treeHWM(pid)
		m := "http://" + addr + "/metrics"
		if lr.CacheHits, err = scrapeCounter(m, "arkhe_resolver_cache_hits_total"); err != nil {
			return nil // no cache (--cache-entries=0)
		}
		lr.CacheMisses, err = scrapeCounter(m, "arkhe_resolver_cache_misses_total")
		return err
	})
	return lr, err
}

// serveArkhe runs `arkhe serve` on the ledger (access log to a file, cfg.ServeArgs) and calls fn
// with its address and process ID while it serves; it stops it (SIGINT) after.
func (r *resolveRun) serveArkhe(ctx context.Context, fn func(addr string, pid int) error) error {
	logPath := filepath.Join(r.work, "arkhe-access.log")
	args := append([]string{"--quiet", "--database-url", r.dbURL, "serve", "--listen", "127.0.0.1:0", "--access-log", logPath}, r.cfg.ServeArgs...)
	cmd := exec.Command(r.cfg.Exe, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		_ = cmd.Wait()
		close(exited)
	}()
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		<-exited
	}()
	var addr string
	select {
	case line := <-lines:
		var ok bool
		if addr, ok = strings.CutPrefix(line, "arkhe serve: resolving on http://"); !ok {
			return fmt.Errorf("arkhe serve printed %q\n%s", line, stderr.String())
		}
	case <-exited:
		return fmt.Errorf("arkhe serve exited: %s", stderr.String())
	case <-time.After(time.Minute):
		return errors.New("arkhe serve printed no address within a minute")
	}
	return fn(addr, cmd.Process.Pid)
}

// loadAvg returns the first three fields of /proc/loadavg ("" where it is missing).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// treeHWM returns the peak resident set (VmHWM) of process pid and of its children, summed, in
// octets.
func treeHWM(pid int) int64 {
	total := vmHWM("/proc/" + strconv.Itoa(pid) + "/status")
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	for _, c := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(c); err == nil {
			total += treeHWM(n)
		}
	}
	return total
}

// arklet runs arklet (the vendored source, unpacked into the working directory) with Debian's
// Django and psycopg2 under /usr/bin/python3, Django's threaded server (arklet ships no other),
// on a database of its own holding a copy of the ledger's ARKs (key, target), and loads it. What
// stops it is reported as the skip's reason.
func (r *resolveRun) arklet(ctx context.Context) (LoadResult, error) {
	src := r.cfg.Arklet
	if src == "" {
		return LoadResult{Skipped: "no arklet source given"}, nil
	}
	if _, err := os.Stat(src); err != nil {
		return LoadResult{Skipped: "arklet's source: " + err.Error()}, nil
	}
	const python = "/usr/bin/python3"
	if out, err := exec.CommandContext(ctx, python, "-c", "import django, psycopg2; print(django.get_version())").CombinedOutput(); err != nil {
		return LoadResult{Skipped: fmt.Sprintf("%s cannot import Django and psycopg2 (make bench installs python3-django and python3-psycopg2): %s", python, strings.TrimSpace(string(out)))}, nil
	}
	dir := filepath.Join(r.work, "arklet")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return LoadResult{}, err
	}
	if out, err := exec.CommandContext(ctx, "tar", "-xzf", src, "-C", dir, "--strip-components=1").CombinedOutput(); err != nil {
		return LoadResult{Skipped: fmt.Sprintf("unpack %s: %v: %s", src, err, out)}, nil
	}
	// arklet's own database on the same server, filled once per ledger
	pc, err := pgx.ParseConfig(r.dbURL)
	if err != nil {
		return LoadResult{}, err
	}
	db := pc.Database + "_arklet"
	var exists bool
	if err := r.pool.QueryRow(ctx, `select exists (select 1 from pg_database where datname = $1)`, db).Scan(&exists); err != nil {
		return LoadResult{}, err
	}
	env := append(os.Environ(), "PYTHONPATH="+filepath.Join(dir, "src"), "DJANGO_SETTINGS_MODULE=arklet.entrypoints.settings",
		"ARKLET_POSTGRES_NAME="+db, "ARKLET_POSTGRES_HOST="+pc.Host, "ARKLET_POSTGRES_PORT="+strconv.Itoa(int(pc.Port)),
		"ARKLET_POSTGRES_USER="+pc.User, "ARKLET_POSTGRES_PASSWORD="+pc.Password, "ARKLET_HOST=127.0.0.1", "ARKLET_DEBUG=false")
	manage := func(args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, python, append([]string{filepath.Join(dir, "manage.py")}, args...)...)
		cmd.Env, cmd.Dir = env, dir
		return cmd
	}
	if !exists {
		if _, err := r.pool.Exec(ctx, "create database "+pgx.Identifier{db}.Sanitize()); err != nil {
			return LoadResult{}, err
		}
		if out, err := manage("migrate", "--noinput").CombinedOutput(); err != nil {
			_, _ = r.pool.Exec(context.WithoutCancel(ctx), "drop database "+pgx.Identifier{db}.Sanitize())
			return LoadResult{Skipped: fmt.Sprintf("arklet's migrations fail with Django %s: %v: %s", "(Debian's)", err, lastLines(string(out), 5))}, nil
		}
		r.logf("arklet: copying the ARKs into its database %s", db)
		if err := copyToArklet(ctx, r.dbURL, db, pc); err != nil {
			_, _ = r.pool.Exec(context.WithoutCancel(ctx), "drop database "+pgx.Identifier{db}.Sanitize()+" with (force)")
			return LoadResult{}, fmt.Errorf("copy the ARKs into arklet's database: %w", err)
		}
	}
	port, err := freePort()
	if err != nil {
		return LoadResult{}, err
	}
	cmd := manage("runserver", "--noreload", "--insecure", fmt.Sprintf("127.0.0.1:%d", port))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return LoadResult{}, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		<-exited
	}()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if err := waitListen(ctx, addr, exited); err != nil {
		return LoadResult{Skipped: fmt.Sprintf("arklet's server does not start: %v: %s", err, lastLines(out.String(), 5))}, nil
	}
	lr, err := r.wrk(ctx, "http://"+addr, true, cmd.Process.Pid)
	if err != nil {
		return lr, err
	}
	lr.RSS = treeHWM(cmd.Process.Pid)
	return lr, nil
}

// copyToArklet copies the ledger's ARKs (key, NAAN, shoulder, name, target) into arklet's ark
// table (and its NAAN into its naan table) of database db on the same server, with COPY.
func copyToArklet(ctx context.Context, ledgerURL, db string, pc *pgx.ConnConfig) error {
	src, err := pgx.Connect(ctx, ledgerURL)
	if err != nil {
		return err
	}
	defer src.Close(context.WithoutCancel(ctx))
	dcfg := pc.Copy()
	dcfg.Database = db
	dst, err := pgx.ConnectConfig(ctx, dcfg)
	if err != nil {
		return err
	}
	defer dst.Close(context.WithoutCancel(ctx))
	if _, err := dst.Exec(ctx, `insert into ark_naan (naan, name, description, url) select naan::bigint, 'bench', '', 'https://example.org' from unnest($1::text[]) naan`,
		[]string{fixtures.FillNAAN}); err != nil {
		return err
	}
	pr, pw := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		_, err := src.PgConn().CopyTo(ctx, pw, `copy (select a.ark, a.naan::bigint, coalesce(s.shoulder, ''), substr(a.ark, length(a.naan) + 2 + length(coalesce(s.shoulder, '/')) - 1),
			coalesce(a.url, ''), '', coalesce(a.commitment, ''), a.created_at, a.created_at
			from ark a left join shoulder s on s.id = a.shoulder_id) to stdout`)
		pw.CloseWithError(err)
		errc <- err
	}()
	_, err = dst.PgConn().CopyFrom(ctx, pr, `copy ark_ark (ark, naan_id, shoulder, assigned_name, url, metadata, commitment, created_at, updated_at) from stdin`)
	pr.CloseWithError(err)
	if serr := <-errc; err == nil {
		err = serr
	}
	if err != nil {
		return err
	}
	_, err = dst.Exec(ctx, `analyze ark_ark`)
	return err
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// hostileSlowClients is how many slow clients a hostile run holds open (each sending a
// request's headers one byte a second, reconnecting when cut off).
const hostileSlowClients = 16

// HostileResult is what a hostile run (ResolveConfig.Hostile) measured of arkhe serve.
type HostileResult struct {
	LoadResult
	// Rounds are the wrk runs it took to send the requests asked for.
	Rounds int
	// Server5xx are the answers with a 5xx status, as the server counts them on /metrics
	// (outcome unavailable, the only 5xx the resolver gives).
	Server5xx int64
	// Probes are the ordinary requests a prober sent (one every 100 ms) while the mix ran, and
	// ProbeFailures those not answered with their redirect.
	Probes, ProbeFailures int64
	// SlowCut counts how often the server cut off a slow client (its header timeout).
	SlowCut int64
}

// hostileMix returns the request targets of the hostile mix over keys: one in five an ordinary
// ARK, the rest bad escapes, truncated escapes, dot-segments (plain and %-encoded), control
// characters, over-long paths (past the resolver's limit, and past the server's header limit),
// paths of escapes and runs of slashes.
func hostileMix(keys []string, seed int64) []string {
	rng := rand.New(rand.NewPCG(uint64(seed), 0xbad))
	n := min(len(keys), 20_000)
	paths := make([]string, n)
	for i := range paths {
		k := keys[rng.IntN(len(keys))]
		switch i % 10 {
		case 0, 1:
			paths[i] = "/ark:" + k
		case 2:
			paths[i] = "/ark:" + k + "%zz"
		case 3:
			paths[i] = "/ark:" + k + "/%4"
		case 4:
			paths[i] = "/ark:" + k + "/../../etc/passwd"
		case 5:
			paths[i] = "/ark:" + k + "/%2e%2e/x"
		case 6:
			paths[i] = "/ark:" + k + "/\x01\x7f"
		case 7:
			paths[i] = "/ark:" + k + "/" + strings.Repeat("p", 2100+rng.IntN(3000))
		case 8:
			paths[i] = "/" + strings.Repeat("%41", 1000+rng.IntN(6000))
		default:
			paths[i] = "/ark:" + strings.Repeat("/", 100+rng.IntN(3000)) + k
		}
	}
	return paths
}

// RunHostile loads arkhe serve (cfg.Exe, header timeout 1 s) on the filled ledger of RunResolve
// with the hostile mix (hostileMix) until at least requests were sent, in wrk runs of
// cfg.Duration, while hostileSlowClients slow clients hold connections and a prober sends an
// ordinary request every 100 ms; then it reads the server's count of 5xx answers.
func RunHostile(ctx context.Context, cfg ResolveConfig, requests int64) (*ResolveResult, *HostileResult, error) {
	if requests < 1 || cfg.ARKs < 1 || cfg.Duration <= 0 || cfg.Connections < cfg.Threads || cfg.Threads < 1 || cfg.Exe == "" {
		return nil, nil, errors.New("bench resolve --hostile: requests, ARKs, duration and threads positive, connections at least threads, an arkhe binary")
	}
	srv, err := openServer(ctx, "resolve", cfg.ServerURL, cfg.Dir, "", cfg.Log)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = srv.close(context.WithoutCancel(ctx)) }()
	res := &ResolveResult{Server: srv.desc}
	db, err := filledLedger(ctx, srv, cfg, &res.Reused)
	if err != nil {
		return nil, nil, err
	}
	dbURL := srv.url(db)
	l, err := ledger.Open(ctx, dbURL, 4)
	if err != nil {
		return nil, nil, err
	}
	defer l.Close()
	if err := l.Pool.QueryRow(ctx, `select count(*) from ark`).Scan(&res.ARKs); err != nil {
		return nil, nil, err
	}
	work, err := os.MkdirTemp(srv.dir, "hostile-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(work)
	keys, err := sampleKeys(ctx, l.Pool, cfg.Seed)
	if err != nil {
		return nil, nil, err
	}
	paths := hostileMix(keys, cfg.Seed)
	res.Mix = fmt.Sprintf("hostile: %d requests cycled (20%% ordinary ARKs; bad and truncated escapes, dot-segments, control characters, over-long paths, escape-only paths, runs of slashes), %d slow clients at a byte a second, %d connections",
		len(paths), hostileSlowClients, cfg.Connections)
	script, err := writeMix(work, paths)
	if err != nil {
		return nil, nil, err
	}
	// arkhe serve, with a header timeout short enough for the slow clients to be cut off
	cfg.ServeArgs = append([]string{"--header-timeout", "1s", "--max-connections", strconv.Itoa(cfg.Connections + 2*hostileSlowClients + 16)}, cfg.ServeArgs...)
	r := &resolveRun{cfg: cfg, work: work, script: script, dbURL: dbURL, pool: l.Pool, keys: keys, logf: srv.logf, dataDirs: srv.dataDirs}
	h := &HostileResult{}
	err = r.serveArkhe(ctx, func(addr string, pid int) error {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var cutCount, probes, probeFail atomic.Int64
		for i := 0; i < hostileSlowClients; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				slowClient(addr, stop, &cutCount)
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			t := time.NewTicker(100 * time.Millisecond)
			defer t.Stop()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-t.C:
				}
				probes.Add(1)
				resp, err := client.Get("http://" + addr + "/ark:" + keys[i%len(keys)])
				if err != nil {
					probeFail.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusFound {
					probeFail.Add(1)
				}
			}
		}()
		defer func() {
			close(stop)
			wg.Wait()
			h.SlowCut, h.Probes, h.ProbeFailures = cutCount.Load(), probes.Load(), probeFail.Load()
		}()
		var total LoadResult
		var lat50, lat99 []time.Duration
		for total.Requests < requests {
			lr, err := r.wrk(ctx, "http://"+addr, false, pid)
			if err != nil {
				return err
			}
			h.Rounds++
			total.Requests += lr.Requests
			total.Elapsed += lr.Elapsed
			total.Errors += lr.Errors
			total.Non2xx3xx += lr.Non2xx3xx
			total.CPUResolver += lr.CPUResolver
			total.CPUDatabase += lr.CPUDatabase
			lat50, lat99 = append(lat50, lr.P50), append(lat99, lr.P99)
			srv.logf("hostile round %d: %d requests (%d so far of %d)", h.Rounds, lr.Requests, total.Requests, requests)
		}
		total.RPS = float64(total.Requests) / total.Elapsed.Seconds()
		total.P50, total.P99 = Median(lat50), slices.Max(lat99)
		total.RSS = treeHWM(pid)
		total.Load = loadAvg()
		h.LoadResult = total
		n5, err := scrapeUnavailable("http://" + addr + "/metrics")
		h.Server5xx = n5
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("bench resolve --hostile: %w", err)
	}
	h.Name = ResolverArkhe
	return res, h, nil
}

// slowClient sends a request's headers one byte a second, over and over, reconnecting when the
// server cuts it off (counted in cut), until stop is closed.
func slowClient(addr string, stop <-chan struct{}, cut *atomic.Int64) {
	req := "GET /ark:/99999/x9 HTTP/1.1\r\nHost: slow\r\nX-Slow: " + strings.Repeat("s", 100) + "\r\n\r\n"
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			select {
			case <-stop:
				return
			case <-t.C:
				continue
			}
		}
		for j := 0; ; j = (j + 1) % len(req) {
			if _, err := c.Write([]byte{req[j]}); err != nil {
				cut.Add(1)
				break
			}
			select {
			case <-stop:
				c.Close()
				return
			case <-t.C:
			}
		}
		c.Close()
	}
}

// scrapeUnavailable reads arkhe_resolver_requests_total{outcome="unavailable"} off /metrics.
func scrapeUnavailable(url string) (int64, error) {
	return scrapeCounter(url, `arkhe_resolver_requests_total{outcome="unavailable"}`)
}

// scrapeCounter reads the sample named series (a name with its labels, as written) off /metrics.
func scrapeCounter(url, series string) (int64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return int64(f), err
		}
	}
	return 0, fmt.Errorf("%s has no %s", url, series)
}
