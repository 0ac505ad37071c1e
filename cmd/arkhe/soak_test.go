package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/localpg"
)

// The soak's settings, read from the environment (make soak sets them from SOAK_*).
const (
	soakRowsEnv         = "ARKHE_SOAK_ROWS"          // rows minted, in all; the soak runs only when set
	soakSeedEnv         = "ARKHE_SOAK_SEED"          // seed of the manifests and of the fault schedule
	soakFaultMinEnv     = "ARKHE_SOAK_FAULT_MIN"     // shortest wait between two faults, seconds
	soakFaultMaxEnv     = "ARKHE_SOAK_FAULT_MAX"     // longest wait between two faults, seconds
	soakPartEnv         = "ARKHE_SOAK_PART"          // rows per manifest (one mint command each)
	soakBatchTimeoutEnv = "ARKHE_SOAK_BATCH_TIMEOUT" // the runs' --batch-timeout (a Go duration)
	soakBinEnv          = "ARKHE_SOAK_BIN"           // the arkhe binary; default: this test binary as arkhe
	soakDirEnv          = "ARKHE_SOAK_DIR"           // where the cluster, manifests, maps and logs go
	soakMinFaultsEnv    = "ARKHE_SOAK_MIN_FAULTS"    // replay manifests under faults until this many landed
)

// soakConfig is the soak's settings.
type soakConfig struct {
	rows, part, seed   int
	minFaults          int // faults to land in all: manifests are replayed under faults until then
	faultMin, faultMax time.Duration
	batchTimeout       time.Duration
	bin, dir           string
}

// soakSettings reads the soak's settings from the environment; a malformed one fails the test.
func soakSettings(t *testing.T) soakConfig {
	t.Helper()
	num := func(name string, def int) int {
		v := os.Getenv(name)
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(strings.ReplaceAll(v, "_", ""))
		if err != nil || n < 0 {
			t.Fatalf("%s=%q: want a whole number of at least 0", name, v)
		}
		return n
	}
	cfg := soakConfig{rows: num(soakRowsEnv, 0), part: num(soakPartEnv, 1_000_000), seed: num(soakSeedEnv, 1),
		minFaults: num(soakMinFaultsEnv, 0),
		faultMin:  time.Duration(num(soakFaultMinEnv, 20)) * time.Second, faultMax: time.Duration(num(soakFaultMaxEnv, 60)) * time.Second,
		batchTimeout: 30 * time.Second, bin: os.Getenv(soakBinEnv), dir: os.Getenv(soakDirEnv)}
	if v := os.Getenv(soakBatchTimeoutEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			t.Fatalf("%s=%q: want a duration of at least 1s", soakBatchTimeoutEnv, v)
		}
		cfg.batchTimeout = d
	}
	if cfg.rows < 1 || cfg.part < 1 || cfg.faultMin < time.Second || cfg.faultMax < cfg.faultMin {
		t.Fatalf("soak of %d rows in manifests of %d, a fault every %s to %s: want rows and manifests of at least 1 row and 1 s ≤ %s ≤ %s",
			cfg.rows, cfg.part, cfg.faultMin, cfg.faultMax, soakFaultMinEnv, soakFaultMaxEnv)
	}
	if cfg.dir == "" {
		cfg.dir = t.TempDir()
	} else if err := os.MkdirAll(cfg.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// faultKind is one kind of fault the soak lands on a run.
type faultKind string

// The soak's faults: the arkhe process killed (SIGKILL; the same command is run again), the
// server restarted (pg_ctl stop -m fast or immediate, then start: the run rides it out), and a
// backend doing a COPY into ark frozen (SIGSTOP) past the run's --batch-timeout, then resumed.
const (
	faultKill             faultKind = "kill"
	faultRestartFast      faultKind = "restart-fast"
	faultRestartImmediate faultKind = "restart-immediate"
	faultFreeze           faultKind = "freeze"
)

// drawFault draws the next fault's kind: a kill, a restart (fast or immediate) and a freeze in
// equal shares.
func drawFault(rng *rand.Rand) faultKind {
	switch rng.IntN(6) {
	case 0, 1:
		return faultKill
	case 2:
		return faultRestartFast
	case 3:
		return faultRestartImmediate
	}
	return faultFreeze
}

// inFlight is what the server was doing for the ledger database as a fault landed.
type inFlight struct {
	copies int // sessions running a COPY
	writes int // sessions in a transaction that has written (a batch not yet committed)
}

// midBatch says whether a batch was in flight: a COPY running or a batch's transaction open.
func (f inFlight) midBatch() bool { return f.copies > 0 || f.writes > 0 }

// soak is one soak run: its cluster, its settings, its schedule and what landed.
type soak struct {
	t        *testing.T
	cfg      soakConfig
	cluster  *localpg.Cluster
	url      string // the ledger database
	rng      *rand.Rand
	log      io.Writer // the fault log (the file and the test log)
	start    time.Time
	next     time.Time // when the next fault lands
	faults   map[faultKind]int
	mid      map[faultKind]int // faults that landed while a batch was in flight
	missed   int               // freezes that found no COPY in flight
	mu       sync.Mutex        // guards stopped: an interrupt resumes them from another goroutine
	stopped  []int             // backends SIGSTOPped and not yet resumed
	landed   bool              // a fault landed on the current attempt
	attempts int               // mint commands run
	retries  int               // retries the runs logged (a batch attempt that met a fault)
}

// logf writes one line to the fault log, stamped with the time since the soak started.
func (s *soak) logf(format string, args ...any) {
	fmt.Fprintf(s.log, "%8s  %s\n", time.Since(s.start).Round(time.Second), fmt.Sprintf(format, args...))
}

// schedule draws the wait before the next fault, uniformly within [faultMin, faultMax].
func (s *soak) schedule() {
	span := s.cfg.faultMax - s.cfg.faultMin
	wait := s.cfg.faultMin
	if span > 0 {
		wait += time.Duration(s.rng.Int64N(int64(span) + 1)).Round(time.Second)
	}
	s.next = time.Now().Add(wait)
}

// query runs sql on a fresh connection to the cluster's postgres database (a restart ends every
// session, so none is kept) and scans its one row into dest.
func (s *soak) query(sql string, dest ...any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.cluster.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.QueryRow(ctx, sql).Scan(dest...)
}

// sample reads what the ledger's sessions are doing.
func (s *soak) sample() inFlight {
	var f inFlight
	err := s.query(`select count(*) filter (where state = 'active' and query ilike 'copy%'),
		count(*) filter (where backend_xid is not null)
		from pg_stat_activity where datname = 'ledger' and pid <> pg_backend_pid()`, &f.copies, &f.writes)
	if err != nil {
		s.logf("could not sample pg_stat_activity: %v", err)
	}
	return f
}

// copyBackend returns a backend of the ledger database running a COPY, waiting for one while
// the run goes on (up to 30 s); 0 when there is none.
func (s *soak) copyBackend(done <-chan struct{}) int {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		var pid int
		err := s.query(`select coalesce((select pid from pg_stat_activity where datname = 'ledger' and state = 'active'
			and query ilike 'copy%' order by random() limit 1), 0)`, &pid)
		if err == nil && pid != 0 {
			return pid
		}
		select {
		case <-done:
			return 0
		case <-time.After(50 * time.Millisecond):
		}
	}
	return 0
}

// resume sends SIGCONT to every backend the soak stopped.
func (s *soak) resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, pid := range s.stopped {
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) {
			s.t.Errorf("SIGCONT %d: %v", pid, err)
		}
	}
	s.stopped = nil
}

// fault lands the next fault on the run cmd (whose exit closes done) and schedules the next.
func (s *soak) fault(cmd *exec.Cmd, done <-chan struct{}, where string) {
	defer s.schedule()
	kind := drawFault(s.rng)
	n := s.landedFaults()
	f := s.sample()
	var detail string
	switch kind {
	case faultKill:
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			s.logf("fault %d: kill: %v (the run had ended)", n+1, err)
			return
		}
	case faultRestartFast, faultRestartImmediate:
		mode := localpg.StopFast
		if kind == faultRestartImmediate {
			mode = localpg.StopImmediate
		}
		t0 := time.Now()
		if err := s.cluster.Restart(context.Background(), mode); err != nil {
			s.t.Fatalf("restart (%s): %v", mode, err)
		}
		detail = fmt.Sprintf("; the server was back after %s", time.Since(t0).Round(100*time.Millisecond))
	case faultFreeze:
		pid := s.copyBackend(done)
		if pid == 0 {
			s.missed++
			s.logf("fault: freeze found no COPY in flight within 30 s (%s); none landed", where)
			return
		}
		f = s.sample() // the COPY is in flight now
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			s.logf("fault: freeze: SIGSTOP %d: %v (the backend had ended); none landed", pid, err)
			s.missed++
			return
		}
		s.mu.Lock()
		s.stopped = append(s.stopped, pid)
		s.mu.Unlock()
		frozen := s.cfg.batchTimeout + 5*time.Second
		select {
		case <-time.After(frozen):
		case <-done:
		}
		s.resume()
		detail = fmt.Sprintf("; backend %d stopped for up to %s", pid, frozen)
	}
	s.faults[kind]++
	s.landed = true
	state := "between batches"
	if f.midBatch() {
		s.mid[kind]++
		state = "mid-batch"
	}
	s.logf("fault %d: %s, %s (%d COPY running, %d batch transactions open), %s%s", n+1, kind, state, f.copies, f.writes, where, detail)
}

// runUntilDone runs `arkhe args...` again and again, landing the scheduled faults on it, until
// a run exits 0; it returns that run's stdout. A run that exits otherwise without a fault
// having landed on it fails the test.
func (s *soak) runUntilDone(name string, args ...string) string {
	s.t.Helper()
	bin, env := s.cfg.bin, os.Environ()
	if bin == "" {
		bin, env = os.Args[0], append(env, asArkheEnv+"=1")
	}
	full := append([]string{"--database-url", s.url, "--quiet"}, args...)
	for attempt := 1; ; attempt++ {
		if attempt > 1000 {
			s.t.Fatalf("%s: no run completed in 1,000 attempts", name)
		}
		errPath := filepath.Join(s.cfg.dir, fmt.Sprintf("%s.attempt%d.stderr", name, attempt))
		errFile, err := os.Create(errPath)
		if err != nil {
			s.t.Fatal(err)
		}
		var out bytes.Buffer
		cmd := exec.Command(bin, full...)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, &out, errFile
		t0 := time.Now()
		if err := cmd.Start(); err != nil {
			s.t.Fatal(err)
		}
		done := make(chan struct{})
		var waitErr error
		go func() { waitErr = cmd.Wait(); close(done) }()
		s.landed = false
		where := fmt.Sprintf("%s attempt %d", name, attempt)
	wait:
		for {
			select {
			case <-done:
				break wait
			case <-time.After(time.Until(s.next)):
				s.fault(cmd, done, where)
			}
		}
		_ = errFile.Close()
		stderr, _ := os.ReadFile(errPath)
		retries := strings.Count(string(stderr), "retrying in")
		code := cmd.ProcessState.ExitCode()
		status := fmt.Sprintf("exit %d", code)
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			status = fmt.Sprintf("killed (signal %d, %s)", int(ws.Signal()), ws.Signal())
		}
		s.attempts++
		s.retries += retries
		s.logf("%s: %s after %s, %d retries logged", where, status, time.Since(t0).Round(time.Second), retries)
		if code == 0 {
			return out.String()
		}
		if !s.landed {
			s.t.Fatalf("%s: %s (%v) with no fault landed on it\nstdout:\n%s\nstderr:\n%s", where, status, waitErr, &out, stderr)
		}
	}
}

// TestSoak is make soak: it mints ARKHE_SOAK_ROWS rows (in manifests of ARKHE_SOAK_PART rows,
// one mint command each), on a cluster of its own, landing a fault every ARKHE_SOAK_FAULT_MIN
// to ARKHE_SOAK_FAULT_MAX seconds (kind and wait drawn with ARKHE_SOAK_SEED): arkhe killed, the
// server restarted fast or immediately, a COPY's backend frozen past --batch-timeout. A run that
// stops is run again, the same command, until it completes; then the first manifest is minted
// once more (all replays, under faults too), and the manifests are replayed in turn, under
// faults, until ARKHE_SOAK_MIN_FAULTS faults have landed (each replay's map checked as it
// completes, then removed). Then it checks: one ARK per request ID, one
// receipt each, every mint map's row naming the ARK the ledger holds for its request ID, no
// ARK in two maps for different request IDs, the maps covering every request ID, the shoulder's
// draw and collision counters and the manager's quota counter equal to the ARKs, no deadlock in
// the server log, and arkhe verify clean. Each fault is logged (soak.log in ARKHE_SOAK_DIR) with
// whether it landed while a batch was in flight: a COPY running or a batch's transaction open
// (pg_stat_activity, sampled as it lands). Skipped unless ARKHE_SOAK_ROWS is set.
func TestSoak(t *testing.T) {
	if os.Getenv(soakRowsEnv) == "" {
		t.Skip("the soak runs with make soak (" + soakRowsEnv + " set)")
	}
	if _, err := os.Stat("/proc/self"); err != nil {
		t.Skip("the soak needs /proc to see the server's processes")
	}
	cfg := soakSettings(t)
	// what an earlier soak in the directory left: its runs' stderr, its log
	stale, _ := filepath.Glob(filepath.Join(cfg.dir, "*.stderr"))
	for _, p := range stale {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	logFile, err := os.Create(filepath.Join(cfg.dir, "soak.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	s := &soak{t: t, cfg: cfg, rng: rand.New(rand.NewPCG(uint64(cfg.seed), 0x50a4)), log: io.MultiWriter(logFile, testLog{t}),
		start: time.Now(), faults: map[faultKind]int{}, mid: map[faultKind]int{}}
	defer s.resume() // never leave a server process stopped
	ctx := context.Background()
	// synchronous_commit on: an immediate shutdown loses no acknowledged commit, as on a ledger
	// of record
	pgCfg := localpg.ClusterConfig{DataDir: filepath.Join(cfg.dir, "pg"), Settings: map[string]string{"synchronous_commit": "on"}}
	if _, err := os.Stat(pgCfg.DataDir); err == nil {
		// a cluster an earlier soak left (it stopped before its cleanup): stop it, start afresh
		old, err := localpg.StartCluster(ctx, pgCfg)
		if err != nil {
			t.Fatalf("the cluster an earlier soak left in %s: %v (remove the directory)", pgCfg.DataDir, err)
		}
		if err := old.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(pgCfg.DataDir); err != nil {
			t.Fatal(err)
		}
	}
	c, err := localpg.StartCluster(ctx, pgCfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.resume()
		if err := c.Stop(context.Background()); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			return
		}
		// a soak that passed keeps its log and the runs' stderr; the cluster, manifests and
		// maps (gigabytes at 10 million rows) go
		for _, pattern := range []string{"pg", "pg.lock", "part*.csv", "*.mintmap.csv", "*.rejects.csv"} {
			paths, _ := filepath.Glob(filepath.Join(cfg.dir, pattern))
			for _, p := range paths {
				if err := os.RemoveAll(p); err != nil {
					t.Error(err)
				}
			}
		}
	})
	s.cluster = c
	// an interrupted soak (make's ^C, a kill) runs no cleanup: resume what it froze and stop
	// its cluster before it goes
	interrupt := make(chan os.Signal, 1)
	signal.Notify(interrupt, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(interrupt)
	go func() {
		sig := <-interrupt
		s.resume()
		_ = c.Stop(context.Background())
		fmt.Fprintf(os.Stderr, "soak: %s: resumed the frozen backends and stopped the cluster in %s\n", sig, c.DataDir())
		os.Exit(1)
	}()
	admin, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, "create database ledger"); err != nil {
		t.Fatal(err)
	}
	admin.Close(ctx)
	s.url = c.URL("ledger")
	s.logf("soak: %d rows in manifests of %d, a fault every %s to %s (seed %d), --batch-timeout %s, in %s",
		cfg.rows, cfg.part, cfg.faultMin, cfg.faultMax, cfg.seed, cfg.batchTimeout, cfg.dir)

	var parts []string
	var sizes []int
	for i, left := 0, cfg.rows; left > 0; i++ {
		n := min(left, cfg.part)
		p := filepath.Join(cfg.dir, fmt.Sprintf("part%d.csv", i))
		st, err := fixtures.CreateManifestCSV(p, fixtures.ManifestConfig{Rows: n, Seed: uint64(cfg.seed + i), Prefix: fmt.Sprintf("soak%d-", i)})
		if err != nil {
			t.Fatal(err)
		}
		if st.Unique != n {
			t.Fatalf("manifest %s: %d distinct request IDs in %d rows", p, st.Unique, n)
		}
		parts, sizes, left = append(parts, p), append(sizes, n), left-n
	}
	s.logf("wrote %d manifests", len(parts))

	s.start = time.Now()
	s.schedule()
	var maps []string
	mint := func(name, in string) {
		mm := filepath.Join(cfg.dir, name+".mintmap.csv")
		out := s.runUntilDone(name, "mint", "--client", "test-minter", "--batch-timeout", cfg.batchTimeout.String(),
			"-o", mm, "--rejects", filepath.Join(cfg.dir, name+".rejects.csv"), in)
		s.logf("%s done: %s", name, strings.Join(strings.Fields(summaryLine(out, "minted")+"  "+summaryLine(out, "replayed")), " "))
		maps = append(maps, mm)
	}
	if code, out, errOut := s.once("init", "--test-registration"); code != 0 {
		t.Fatalf("init: exit %d\n%s\n%s", code, out, errOut)
	}
	for i, p := range parts {
		mint(fmt.Sprintf("part%d", i), p)
	}
	mint("replay0", parts[0])
	elapsed := time.Since(s.start)
	// Until ARKHE_SOAK_MIN_FAULTS faults have landed, replay the manifests in turn under faults:
	// each replay's map is checked as soon as its run completes (every row replayed, to the ARK
	// the ledger holds for its request ID) and removed, so a long soak keeps one map at a time.
	replays := 0
	for i := 1; s.landedFaults() < cfg.minFaults; i++ {
		if i > 100_000 {
			t.Fatalf("%d faults landed in 100,000 replays, want %d", s.landedFaults(), cfg.minFaults)
		}
		j := i % len(parts)
		name := fmt.Sprintf("replay%d", i)
		mm, rejects := filepath.Join(cfg.dir, name+".mintmap.csv"), filepath.Join(cfg.dir, name+".rejects.csv")
		out := s.runUntilDone(name, "mint", "--client", "test-minter", "--batch-timeout", cfg.batchTimeout.String(),
			"-o", mm, "--rejects", rejects, parts[j])
		s.checkReplay(name, mm, sizes[j])
		s.logf("%s of part%d done and checked: %s; %d faults landed so far", name, j,
			strings.Join(strings.Fields(summaryLine(out, "replayed")), " "), s.landedFaults())
		for _, p := range []string{mm, rejects} {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Fatal(err)
			}
		}
		replays++
	}
	if replays > 0 {
		elapsed = time.Since(s.start)
	}
	s.resume()

	total, mid := 0, 0
	var kinds []string
	for _, k := range []faultKind{faultKill, faultRestartFast, faultRestartImmediate, faultFreeze} {
		total += s.faults[k]
		mid += s.mid[k]
		kinds = append(kinds, fmt.Sprintf("%s %d (%d mid-batch)", k, s.faults[k], s.mid[k]))
	}
	s.logf("soak: %d rows minted and %d manifests replayed after it in %s by %d mint commands (%d retries logged) under %d faults: %s; %d mid-batch, %d between batches; %d freezes found no COPY",
		cfg.rows, replays, elapsed.Round(time.Second), s.attempts, s.retries, total, strings.Join(kinds, ", "), mid, total-mid, s.missed)

	s.checkLedger(maps, sizes)
	if n := soakDeadlocks(t, c.LogFile()); n != 0 {
		t.Errorf("the server logged %d deadlocks", n)
	} else {
		s.logf("check: the server logged no deadlock")
	}
	t0 := time.Now()
	code, out, errOut := s.once("verify", "-o", filepath.Join(cfg.dir, "findings.jsonl"))
	if code != 0 || !strings.Contains(out, "clean") {
		t.Errorf("arkhe verify: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	} else {
		s.logf("check: arkhe verify clean (exit 0, %s)", time.Since(t0).Round(time.Second))
	}
}

// landedFaults counts the faults that landed so far (a freeze that found no COPY is not one).
func (s *soak) landedFaults() int {
	n := 0
	for _, c := range s.faults {
		n += c
	}
	return n
}

// checkReplay checks the mint map mm of a completed replay of a manifest of size rows: that
// many rows, each replayed, each naming the ARK the ledger's receipt holds for its request ID.
func (s *soak) checkReplay(name, mm string, size int) {
	t := s.t
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `create temp table soak_replay (request_id text, ark text, status text,
		url text, who text, what text, "when" text, commitment text)`); err != nil {
		t.Fatal(err)
	}
	n, err := copyMintMap(ctx, conn, "soak_replay", mm)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if n != int64(size) {
		t.Errorf("%s: mint map %s: %d rows, want %d", name, mm, n, size)
	}
	var notReplayed, wrong int64
	err = conn.QueryRow(ctx, `select count(*) filter (where m.status <> 'replayed'),
		count(*) filter (where r.ark is null or 'ark:' || r.ark <> m.ark)
		from soak_replay m left join mint_receipt r on r.request_id = m.request_id`).Scan(&notReplayed, &wrong)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if notReplayed != 0 || wrong != 0 {
		t.Errorf("%s: %d rows not replayed, %d naming an ARK other than the ledger's for their request ID", name, notReplayed, wrong)
		s.logf("check FAILED: %s: %d rows not replayed, %d naming another ARK", name, notReplayed, wrong)
	}
}

// copyMintMap copies the CSV mint map at path into table, which has the mint map's eight
// columns (request_id, ark, status, then the payload: url, who, what, when, commitment), and
// returns the rows copied.
func copyMintMap(ctx context.Context, conn *pgx.Conn, table, path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	tag, err := conn.PgConn().CopyFrom(ctx, f, `copy `+table+` (request_id, ark, status, url, who, what, "when", commitment) from stdin (format csv, header true)`)
	if err != nil {
		return 0, fmt.Errorf("mint map %s: %w", path, err)
	}
	return tag.RowsAffected(), nil
}

// once runs `arkhe args...` once with no fault and returns its exit code, stdout and stderr.
func (s *soak) once(args ...string) (int, string, string) {
	bin, env := s.cfg.bin, os.Environ()
	if bin == "" {
		bin, env = os.Args[0], append(env, asArkheEnv+"=1")
	}
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, append([]string{"--database-url", s.url, "--quiet"}, args...)...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, &out, &errb
	err := cmd.Run()
	if err != nil && cmd.ProcessState == nil {
		s.t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// summaryLine returns the line of a mint summary that starts with label, or "".
func summaryLine(out, label string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), label+" ") {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// testLog is an io.Writer onto the test log, a line per write.
type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// soakDeadlocks counts "deadlock detected" in the server log at path.
func soakDeadlocks(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("deadlock detected"))
}

// checkLedger loads the mint maps (maps[i] of sizes[i] rows; the last one the replay of the
// first manifest) into a temporary table of a session of the ledger database and checks the
// ledger against them and against itself.
func (s *soak) checkLedger(maps []string, sizes []int) {
	t := s.t
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	want := int64(s.cfg.rows)
	sizes = append(sizes, sizes[0]) // the replay of the first manifest
	if _, err := conn.Exec(ctx, `create temp table soak_map (run int not null default 0, request_id text, ark text, status text,
		url text, who text, what text, "when" text, commitment text)`); err != nil {
		t.Fatal(err)
	}
	for i, mm := range maps {
		if _, err := conn.Exec(ctx, fmt.Sprintf(`alter table soak_map alter column run set default %d`, i)); err != nil {
			t.Fatal(err)
		}
		n, err := copyMintMap(ctx, conn, "soak_map", mm)
		if err != nil {
			t.Fatal(err)
		}
		if n != int64(sizes[i]) {
			t.Errorf("mint map %s: %d rows, want %d", mm, n, sizes[i])
		}
	}
	if _, err := conn.Exec(ctx, `analyze soak_map`); err != nil {
		t.Fatal(err)
	}
	replay := len(maps) - 1
	checks := []struct {
		what string
		sql  string
		want int64
	}{
		{"ARKs in /x9", `select count(*) from ark where shoulder_id = (select id from shoulder where naan = '99999' and shoulder = '/x9')`, want},
		{"ARKs in the ledger", `select count(*) from ark`, want},
		{"receipts", `select count(*) from mint_receipt`, want},
		{"request IDs with a receipt", `select count(distinct request_id) from mint_receipt`, want},
		{"request IDs with more than one ARK", `select count(*) from (select request_id from ark where request_id is not null group by request_id having count(*) > 1) d`, 0},
		{"ARKs without a receipt", `select count(*) from ark where request_id is null`, 0},
		{"mint map rows whose ARK is not the ledger's for their request ID",
			`select count(*) from soak_map m left join mint_receipt r on r.request_id = m.request_id where r.ark is null or 'ark:' || r.ark <> m.ark`, 0},
		{"mint map rows of a status other than minted or replayed", `select count(*) from soak_map where status not in ('minted', 'replayed')`, 0},
		{"rows of a request ID twice in one mint map", `select count(*) from (select run, request_id from soak_map group by run, request_id having count(*) > 1) d`, 0},
		{"ARKs in two mint maps for different request IDs", `select count(*) from (select ark from soak_map group by ark having count(distinct request_id) > 1) d`, 0},
		{"request IDs in the mint maps", `select count(distinct request_id) from soak_map`, want},
		{"rows of the replay run not replayed", fmt.Sprintf(`select count(*) from soak_map where run = %d and status <> 'replayed'`, replay), 0},
		{"mint map rows minted by the run that wrote the map (the other ARKs were committed by runs that were stopped, and replayed)",
			`select count(*) from soak_map where status = 'minted'`, -1},
		{"draws less collisions in /x9's tally", `select coalesce(sum(t.draws - t.collisions), 0)::bigint from shoulder_tally t
			join shoulder s on s.id = t.shoulder_id where s.naan = '99999' and s.shoulder = '/x9'`, want},
		{"new mints counted against the manager's quota", `select coalesce(sum(minted), 0)::bigint from mint_quota`, want},
	}
	for _, c := range checks {
		var got int64
		if err := conn.QueryRow(ctx, c.sql).Scan(&got); err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		switch {
		case c.want < 0:
			s.logf("check: %s: %d", c.what, got)
		case got != c.want:
			t.Errorf("%s: %d, want %d", c.what, got, c.want)
			s.logf("check FAILED: %s: %d, want %d", c.what, got, c.want)
		default:
			s.logf("check: %s: %d", c.what, got)
		}
	}
}
