package loader_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/loader"
	"github.com/arkhe-ledger/arkhe/localpg"
	"github.com/arkhe-ledger/arkhe/pipeline"
)

// registerMinter registers on l NAAN 99999, manager m1 with its active default shoulder /x9,
// and client c1 (authority manager, ark:mint).
func registerMinter(t testing.TB, l *ledger.Ledger) {
	t.Helper()
	ctx := context.Background()
	steps := []func() error{
		func() error { _, err := l.AddNAAN(ctx, ledger.NAAN{NAAN: "99999", Name: "test"}); return err },
		func() error { _, err := l.AddManager(ctx, ledger.Manager{NAAN: "99999", Name: "m1"}); return err },
		func() error {
			_, err := l.AddShoulder(ctx, ledger.Shoulder{NAAN: "99999", Shoulder: "/x9", Manager: "m1"}, 0)
			return err
		},
		func() error { return l.SetDefaultShoulder(ctx, "99999", "m1", "/x9") },
		func() error {
			return l.AddClient(ctx, ledger.Client{ClientID: "c1", NAAN: "99999", Manager: "m1", Authority: "manager", Scopes: []string{"ark:mint"}})
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
}

// ownCluster starts a PostgreSQL cluster of the test's own, so that the test can restart it
// without disturbing other tests, with a migrated ledger database registered by
// registerMinter; the cluster is stopped when the test ends.
// faultRun leaves a fault run (server restarts, frozen or terminated backends, lost replies,
// lock waits: each waits out real deadlines and back-offs) to make test; make test-short skips it.
func faultRun(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("a fault run: make test runs it, make test-short leaves it out")
	}
}

func ownCluster(t *testing.T) (*localpg.Cluster, *ledger.Ledger) {
	t.Helper()
	ctx := context.Background()
	// synchronous_commit on: a commit is in the WAL (in the OS's cache; fsync stays off) before
	// it is acknowledged, so an immediate shutdown loses no acknowledged commit
	c, err := localpg.StartCluster(ctx, localpg.ClusterConfig{DataDir: filepath.Join(t.TempDir(), "pg"),
		Settings: map[string]string{"synchronous_commit": "on"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	admin, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "create database ledger"); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, c.URL("ledger"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := ledger.Migrate(ctx, conn, ledger.LayoutSingle); err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(ctx, c.URL("ledger"), 8)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	registerMinter(t, l)
	return c, l
}

// notices collects RetryNotices.
type notices struct {
	mu   sync.Mutex
	list []loader.RetryNotice
	then func(loader.RetryNotice) // called after each notice is recorded, if set
}

func (n *notices) notify(r loader.RetryNotice) {
	n.mu.Lock()
	n.list = append(n.list, r)
	n.mu.Unlock()
	if n.then != nil {
		n.then(r)
	}
}

// counts returns the retries, the resumed batches, and the resumed batches whose interrupted
// attempt had committed; each retry must render as "CAUSE (ERR); retrying in D, L left".
func (n *notices) counts(t *testing.T) (retries, resumed, committed int) {
	t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, r := range n.list {
		t.Log(r.String())
		switch {
		case r.Resumed && r.Committed:
			resumed++
			committed++
		case r.Resumed:
			resumed++
		default:
			retries++
			if s := r.String(); !strings.Contains(s, "; retrying in ") || !strings.Contains(s, " left") || r.Cause == "" {
				t.Errorf("retry notice %q does not say what happened, when it retries and how long it may", s)
			}
		}
	}
	return retries, resumed, committed
}

// causes returns the causes of the retries.
func (n *notices) causes() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, r := range n.list {
		if !r.Resumed {
			out = append(out, r.Cause)
		}
	}
	return out
}

// checkMinted asserts that the ledger holds exactly rows ARKs in /x9 with one receipt each, that
// the shoulder's counters are exact (draws = ARKs + collisions) and agree with the run's
// summary, and that the mint map at mm (if any) names each request ID once with the ledger's
// ARK.
func checkMinted(t *testing.T, pool *pgxpool.Pool, rows int64, sum pipeline.Summary, mm string) {
	t.Helper()
	checkLedger(t, pool, rows)
	var draws, collisions int64
	if err := pool.QueryRow(context.Background(), tallyQuery, "/x9").Scan(&draws, &collisions); err != nil {
		t.Fatal(err)
	}
	if draws-collisions != rows || draws != sum.Draws || collisions != sum.Collisions {
		t.Errorf("shoulder_tally %d draws, %d collisions for %d ARKs; the summary says %d draws, %d collisions: want draws = ARKs + collisions, as summarized",
			draws, collisions, rows, sum.Draws, sum.Collisions)
	}
	if mm == "" {
		return
	}
	receipts := map[string]string{}
	res, err := pool.Query(context.Background(), `select request_id, ark from mint_receipt`)
	if err != nil {
		t.Fatal(err)
	}
	for res.Next() {
		var rid, key string
		if err := res.Scan(&rid, &key); err != nil {
			t.Fatal(err)
		}
		receipts[rid] = "ark:" + key
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	recs := readCSV(t, mm)
	if int64(len(recs)) != rows+1 {
		t.Fatalf("mint map has %d lines, want %d", len(recs), rows+1)
	}
	seen := map[string]bool{}
	for _, r := range recs[1:] {
		if seen[r[0]] || receipts[r[0]] != r[1] || r[2] != "minted" {
			t.Fatalf("mint map row %q: seen before %v, the ledger's receipt %q", r, seen[r[0]], receipts[r[0]])
		}
		seen[r[0]] = true
	}
}

// deadlocksLogged counts "deadlock detected" in the server log at path from offset on.
func deadlocksLogged(t *testing.T, path string, offset int64) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, 0); err != nil {
		t.Fatal(err)
	}
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "deadlock detected") {
			n++
		}
	}
	return n
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestMintRidesOutServerRestarts restarts the server (fast, then immediate) in the middle of a
// batch's COPY; the run retries, resumes from the receipts and completes: every row minted once,
// the counters exact, and each retry and each resumed batch reported.
func TestMintRidesOutServerRestarts(t *testing.T) {
	faultRun(t)
	c, l := ownCluster(t)
	logStart := fileSize(t, c.LogFile())
	rows, modes := 20_000, []localpg.StopMode{localpg.StopFast, localpg.StopImmediate, localpg.StopFast, localpg.StopImmediate, localpg.StopImmediate}
	dir := t.TempDir()
	in := manifest(t, dir, "m.csv", fixtures.ManifestConfig{Rows: rows, Seed: 31})
	var copies atomic.Int64
	var mu sync.Mutex
	var restarts []error
	hook := func(worker int, table string, n int) {
		if table != "ark" || n != 5 {
			return
		}
		// every third COPY restarts the server while it is in progress; the hook holds the
		// COPY until the server is back, so the restart always lands mid-batch
		if k := copies.Add(1); k%3 == 0 && int(k/3) <= len(modes) {
			err := c.Restart(context.Background(), modes[k/3-1])
			mu.Lock()
			restarts = append(restarts, err)
			mu.Unlock()
		}
	}
	var got notices
	mm := filepath.Join(dir, "map.csv")
	rep, err := loader.Mint(context.Background(), l, loader.MintJob{
		Mint: loader.MintConfig{ClientID: "c1", Hooks: loader.MintHooks{CopyRow: hook},
			Retry: loader.RetryPolicy{For: 3 * time.Minute, BatchTimeout: time.Minute, Notify: got.notify}},
		Inputs: []string{in}, Workers: 2, BatchSize: 200, MintMapPath: mm})
	if err != nil {
		t.Fatalf("run did not ride out the restarts: %v", err)
	}
	if len(restarts) != len(modes) {
		t.Fatalf("%d restarts, want %d", len(restarts), len(modes))
	}
	for _, e := range restarts {
		if e != nil {
			t.Fatal(e)
		}
	}
	retries, resumed, _ := got.counts(t)
	if retries < len(modes) || resumed < 1 || rep.Stats.Faults != int64(retries) {
		t.Errorf("%d retries (stats %d) and %d resumed batches reported for %d restarts", retries, rep.Stats.Faults, resumed, len(modes))
	}
	if rep.Summary.Minted != int64(rows) || rep.Summary.Replayed != 0 {
		t.Errorf("summary %+v, want %d minted", rep.Summary, rows)
	}
	checkMinted(t, l.Pool, int64(rows), rep.Summary, mm)
	var minted, faults int64
	if err := l.Pool.QueryRow(context.Background(), `select (detail->>'minted')::bigint, (detail->>'faults_ridden_out')::bigint
		from audit_event where action = 'mint'`).Scan(&minted, &faults); err != nil {
		t.Fatal(err)
	}
	if minted != int64(rows) || faults != int64(retries) {
		t.Errorf("audit event: minted %d, faults %d; want %d and %d", minted, faults, rows, retries)
	}
	if n := deadlocksLogged(t, c.LogFile(), logStart); n != 0 {
		t.Errorf("the server logged %d deadlocks", n)
	}
}

// TestMintLostCommitReplyIsTakenAsCommitted: when the connection is lost after COMMIT but before
// its reply, the batch's receipts show it committed; the run counts its rows as minted (never
// twice, never as replays) and its draws once.
func TestMintLostCommitReplyIsTakenAsCommitted(t *testing.T) {
	faultRun(t)
	l := mintLedger(t)
	dir := t.TempDir()
	in := manifest(t, dir, "m.csv", fixtures.ManifestConfig{Rows: 400, Seed: 32})
	var batches atomic.Int64
	var got notices
	mm := filepath.Join(dir, "map.csv")
	rep, err := loader.Mint(context.Background(), l, loader.MintJob{
		Mint: loader.MintConfig{ClientID: "c1",
			Hooks: loader.MintHooks{LoseCommitReply: func(int) bool { return batches.Add(1)%3 == 1 }},
			Retry: loader.RetryPolicy{Notify: got.notify}},
		Inputs: []string{in}, Workers: 2, BatchSize: 40, MintMapPath: mm})
	if err != nil {
		t.Fatal(err)
	}
	retries, resumed, committed := got.counts(t)
	if retries == 0 || committed != retries || resumed != retries {
		t.Errorf("%d lost replies, %d resumed, %d of them found committed: want every one found committed", retries, resumed, committed)
	}
	if rep.Summary.Minted != 400 || rep.Summary.Replayed != 0 {
		t.Errorf("summary %+v, want 400 minted", rep.Summary)
	}
	checkMinted(t, l.Pool, 400, rep.Summary, mm)
}

// copyBackends returns the PIDs of the test database's backends running COPY into ark. Called
// from a CopyRow hook, it waits for the server to start the COPY: the client sends the COPY
// statement and then its rows without waiting for the server's reply.
func copyBackends(t *testing.T, pool *pgxpool.Pool) []int {
	t.Helper()
	for range 1000 {
		res, err := pool.Query(context.Background(), `select pid from pg_stat_activity
			where datname = current_database() and pid <> pg_backend_pid() and query ilike 'copy ark%' and state = 'active'`)
		if err != nil {
			t.Error(err)
			return nil
		}
		pids, err := pgx.CollectRows(res, pgx.RowTo[int])
		if err != nil || len(pids) > 0 {
			if err != nil {
				t.Error(err)
			}
			return pids
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Error("no backend started a COPY into ark")
	return nil
}

// TestMintRidesOutTerminatedBackend terminates the backend of a COPY (pg_terminate_backend)
// mid-batch, twice; the run reconnects and completes.
func TestMintRidesOutTerminatedBackend(t *testing.T) {
	faultRun(t)
	l := mintLedger(t)
	admin := pgtest.New(t)
	dir := t.TempDir()
	in := manifest(t, dir, "m.csv", fixtures.ManifestConfig{Rows: 600, Seed: 33})
	var copies, terminated atomic.Int64
	hook := func(worker int, table string, n int) {
		if table != "ark" || n != 5 {
			return
		}
		if k := copies.Add(1); k == 2 || k == 5 {
			for _, pid := range copyBackends(t, admin) {
				var ok bool
				if err := admin.QueryRow(context.Background(), `select pg_terminate_backend($1)`, pid).Scan(&ok); err != nil {
					t.Error(err)
				} else if ok {
					terminated.Add(1)
				}
			}
		}
	}
	var got notices
	mm := filepath.Join(dir, "map.csv")
	rep, err := loader.Mint(context.Background(), l, loader.MintJob{
		Mint: loader.MintConfig{ClientID: "c1", Hooks: loader.MintHooks{CopyRow: hook},
			Retry: loader.RetryPolicy{Notify: got.notify}},
		Inputs: []string{in}, Workers: 2, BatchSize: 50, MintMapPath: mm})
	if err != nil {
		t.Fatal(err)
	}
	retries, _, _ := got.counts(t)
	if terminated.Load() < 2 || int64(retries) < terminated.Load() {
		t.Errorf("%d backends terminated, %d retries reported", terminated.Load(), retries)
	}
	checkMinted(t, l.Pool, 600, rep.Summary, mm)
}

// TestMintFrozenBackend stops (SIGSTOP) the backend of a COPY mid-batch: the batch deadline
// fires, the run reports it and retries; its retries wait on the frozen session's locks until
// lock_timeout ends each wait. Once the backend runs again (SIGCONT) the run completes. With
// the backend never resumed, the run stops after --retry-for with a clear error, and its summary
// and audit event report exactly what was committed.
func TestMintFrozenBackend(t *testing.T) {
	faultRun(t)
	if _, err := os.Stat("/proc/self"); err != nil {
		t.Skip("needs /proc to see the server's processes")
	}
	for _, resume := range []bool{true, false} {
		name := map[bool]string{true: "resumed", false: "never"}[resume]
		t.Run(name, func(t *testing.T) {
			l := mintLedger(t)
			admin := pgtest.New(t)
			dir := t.TempDir()
			in := manifest(t, dir, "m.csv", fixtures.ManifestConfig{Rows: 6000, Seed: 34})
			var froze atomic.Bool
			var mu sync.Mutex
			var stopped []int
			cont := func() {
				mu.Lock()
				defer mu.Unlock()
				for _, pid := range stopped {
					_ = syscall.Kill(pid, syscall.SIGCONT)
				}
				stopped = nil
			}
			t.Cleanup(cont) // never leave a server process stopped
			// batches of 250, 500, 1,000, 2,000, 2,000, 250 rows: freeze the fourth batch's backend
			// while the client is still sending, once it has inserted rows (a binary COPY inserts
			// in groups of 1,000 rows), so that a retry of the batch waits on its locks; the
			// client sends in chunks of 64 KiB, about 300 rows, so well over 1,000 rows were
			// sent when it encodes row 1,990
			hook := func(worker int, table string, n int) {
				if table != "ark" || n != 1990 || froze.Swap(true) {
					return
				}
				for _, pid := range copyBackends(t, admin) {
					for range 1000 {
						var done int64
						err := admin.QueryRow(context.Background(), `select coalesce((select tuples_processed from pg_stat_progress_copy where pid = $1), 0)`, pid).Scan(&done)
						if err != nil || done > 1000 {
							break
						}
						time.Sleep(10 * time.Millisecond)
					}
					if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
						t.Errorf("SIGSTOP %d: %v", pid, err)
						continue
					}
					mu.Lock()
					stopped = append(stopped, pid)
					mu.Unlock()
				}
			}
			got := notices{}
			if resume {
				got.then = func(loader.RetryNotice) { cont() }
			}
			retryFor := time.Minute
			if !resume {
				retryFor = 4 * time.Second
			}
			rep, err := loader.Mint(context.Background(), l, loader.MintJob{
				Mint: loader.MintConfig{ClientID: "c1", Hooks: loader.MintHooks{CopyRow: hook},
					Retry: loader.RetryPolicy{For: retryFor, BatchTimeout: 1500 * time.Millisecond, Notify: got.notify}},
				Inputs: []string{in}, Workers: 1, BatchSize: 2000, MintMapPath: filepath.Join(dir, "map.csv")})
			if !froze.Load() {
				t.Fatal("no COPY backend was stopped")
			}
			retries, _, _ := got.counts(t)
			causes := got.causes()
			if retries == 0 || !strings.Contains(causes[0], "did not answer") {
				t.Fatalf("retries %q: want the batch deadline first", causes)
			}
			if resume {
				if err != nil {
					t.Fatal(err)
				}
				checkMinted(t, l.Pool, 6000, rep.Summary, filepath.Join(dir, "map.csv"))
				return
			}
			var fe *loader.FaultError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), "gave up after") || !strings.Contains(err.Error(), "the same command completes the job") {
				t.Fatalf("run error %v, want a *FaultError saying it gave up and what to do", err)
			}
			arks := mintCount(t, l.Pool, `select count(*) from ark`)
			if arks != 1750 || rep.Summary.Minted != arks {
				t.Errorf("the stopped run reports %d minted; the ledger holds %d", rep.Summary.Minted, arks)
			}
			var minted int64
			var status string
			if err := l.Pool.QueryRow(context.Background(), `select (detail->>'minted')::bigint, detail->>'status'
				from audit_event where action = 'mint'`).Scan(&minted, &status); err != nil {
				t.Fatal(err)
			}
			if minted != arks || status != "failed" {
				t.Errorf("audit event: minted %d, status %s; want %d, failed", minted, status, arks)
			}
		})
	}
}

// TestMintLockTimeoutRetries holds the shoulder's tally row locked from another session: the
// batch's commit waits until lock_timeout, which the run reports as a retry; once the lock is
// gone the run completes.
func TestMintLockTimeoutRetries(t *testing.T) {
	faultRun(t)
	l := mintLedger(t)
	ctx := context.Background()
	mintExec(t, l.Pool, `insert into shoulder_tally (shoulder_id) select id from shoulder where naan = '99999' and shoulder = '/x9'`)
	holder, err := pgtest.New(t).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, `select * from shoulder_tally for update`); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	got := notices{then: func(loader.RetryNotice) { once.Do(func() { _ = holder.Rollback(ctx) }) }}
	dir := t.TempDir()
	in := manifest(t, dir, "m.csv", fixtures.ManifestConfig{Rows: 100, Seed: 35})
	rep, err := loader.Mint(ctx, l, loader.MintJob{
		Mint: loader.MintConfig{ClientID: "c1",
			Retry: loader.RetryPolicy{BatchTimeout: 4 * time.Second, Notify: got.notify}},
		Inputs: []string{in}, Workers: 1, BatchSize: 100, MintMapPath: filepath.Join(dir, "map.csv")})
	once.Do(func() { _ = holder.Rollback(ctx) })
	if err != nil {
		t.Fatal(err)
	}
	if causes := got.causes(); len(causes) == 0 || !strings.Contains(causes[0], "lock_timeout") {
		t.Fatalf("retries %q: want lock_timeout first", causes)
	}
	checkMinted(t, l.Pool, 100, rep.Summary, filepath.Join(dir, "map.csv"))
}

// TestMintConcurrentOverlappingRuns runs four mints at once on one shoulder, each of its own
// manifest in its own order, with request IDs shared among all four: every run completes, each
// request ID is minted once (the other runs replay it), no run meets a deadlock, and the
// counters are exact. -short: 4 × 5,000 rows, 2,500 shared, batches of 1,000; else 4 × 50,000
// rows, 25,000 shared, default batches, as `arkhe mint` runs.
func TestMintConcurrentOverlappingRuns(t *testing.T) {
	rows, shared, batch := 5_000, 2_500, 1_000
	if !testing.Short() {
		rows, shared, batch = 50_000, 25_000, 0
	}
	l := mintLedger(t)
	logPath := pgtest.ServerLog(t)
	var logStart int64
	if logPath != "" {
		logStart = fileSize(t, logPath)
	}
	ms, err := fixtures.CreateOverlapManifests(t.TempDir(), fixtures.OverlapConfig{Runs: 4, Rows: rows, Shared: shared, Seed: 36})
	if err != nil {
		t.Fatal(err)
	}
	reps := make([]loader.MintReport, len(ms.Runs))
	errs := make([]error, len(ms.Runs))
	var wg sync.WaitGroup
	start := time.Now()
	for i, in := range ms.Runs {
		own := &ledger.Ledger{Pool: pgtest.New(t)} // a pool per run, as separate processes have
		wg.Go(func() {
			reps[i], errs[i] = loader.Mint(context.Background(), own, loader.MintJob{Mint: loader.MintConfig{ClientID: "c1"},
				Inputs: []string{in}, BatchSize: batch})
		})
	}
	wg.Wait()
	t.Logf("4 concurrent runs of %d rows (%d shared, %d distinct): %s", rows, shared, ms.Distinct, time.Since(start).Round(time.Millisecond))
	var minted, draws, collisions int64
	for i := range reps {
		s := reps[i].Summary
		t.Logf("run %d: %+v; stats %+v", i, s, reps[i].Stats)
		if errs[i] != nil {
			t.Errorf("run %d: %v", i, errs[i])
		}
		if s.Minted+s.Replayed != int64(rows) || s.Rejected != 0 {
			t.Errorf("run %d: %d minted + %d replayed + %d rejected, want %d done", i, s.Minted, s.Replayed, s.Rejected, rows)
		}
		if reps[i].Stats.Deadlocks != 0 {
			t.Errorf("run %d met %d deadlocks", i, reps[i].Stats.Deadlocks)
		}
		minted += s.Minted
		draws += s.Draws
		collisions += s.Collisions
	}
	if minted != int64(ms.Distinct) {
		t.Errorf("minted %d in all, want %d (each request ID once)", minted, ms.Distinct)
	}
	checkMinted(t, l.Pool, int64(ms.Distinct), pipeline.Summary{Draws: draws, Collisions: collisions}, "")
	if logPath != "" {
		if n := deadlocksLogged(t, logPath, logStart); n != 0 {
			t.Errorf("the server logged %d deadlocks", n)
		}
	}
}

// BenchmarkMintOverlapping times four concurrent runs of 50,000 rows with 25,000 request IDs
// shared among them (each in its own order) against one run of their union (125,000 rows):
// `go test -run '^$' -bench MintOverlapping -benchtime 3x ./ledger/`. Each iteration mints as a
// new client pinned to a new shoulder (a benchmark has one database).
func BenchmarkMintOverlapping(b *testing.B) {
	ms, err := fixtures.CreateOverlapManifests(b.TempDir(), fixtures.OverlapConfig{Runs: 4, Rows: 50_000, Shared: 25_000, Seed: 37})
	if err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, inputs []string) {
		ctx := context.Background()
		l := &ledger.Ledger{Pool: pgtest.New(b)}
		registerMinter(b, l)
		ls := make([]*ledger.Ledger, len(inputs))
		for i := range ls {
			ls[i] = &ledger.Ledger{Pool: pgtest.New(b)} // a pool per run, as separate processes have
		}
		k := 0
		for b.Loop() {
			b.StopTimer()
			k++
			shoulder, client := fmt.Sprintf("/%c%d", "bcdfghjkmnpqrstvwxz"[k/10%19], k%10), fmt.Sprintf("bench%d", k)
			if _, err := l.AddShoulder(ctx, ledger.Shoulder{NAAN: "99999", Shoulder: shoulder, Manager: "m1"}, 0); err != nil {
				b.Fatal(err)
			}
			if err := l.AddClient(ctx, ledger.Client{ClientID: client, NAAN: "99999", Manager: "m1", Authority: "manager",
				Shoulder: shoulder, Scopes: []string{"ark:mint"}}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			var wg sync.WaitGroup
			errs := make([]error, len(inputs))
			for i, in := range inputs {
				wg.Go(func() {
					_, errs[i] = loader.Mint(ctx, ls[i], loader.MintJob{Mint: loader.MintConfig{ClientID: client}, Inputs: []string{in}})
				})
			}
			wg.Wait()
			b.StopTimer()
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
			var n int64
			if err := l.Pool.QueryRow(ctx, `select count(*) from mint_receipt r join client c on c.id = r.client_pk where c.client_id = $1`,
				client).Scan(&n); err != nil || n != int64(ms.Distinct) {
				b.Fatalf("%d receipts (%v), want %d", n, err, ms.Distinct)
			}
			b.StartTimer()
		}
		b.ReportMetric(float64(ms.Distinct)*float64(b.N)/b.Elapsed().Seconds(), "ARKs/s")
	}
	b.Run("union", func(b *testing.B) { run(b, []string{ms.Union}) })
	b.Run("concurrent4", func(b *testing.B) { run(b, ms.Runs) })
}
