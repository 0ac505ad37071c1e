package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/localpg"
)

// The fault runs on Citus: a cluster of the test's own (a coordinator and two workers), one
// ledger on it, and for each of mint, import and update a run that meets each fault in the
// middle of a batch. A fault lands at a deterministic point: a gate (a session of the test
// holding a lock the run needs after it has written rows in the batch's distributed
// transaction) holds the run while the fault is injected, then lets it go. What follows is the
// run's own: it rides the fault out, or stops with a clear message and the same command
// completes the job. Then nothing is lost, nothing twice, the counters are exact and verify is
// clean.

// citusFaultKind is one fault the runs meet.
type citusFaultKind string

const (
	// faultWorkerFast restarts the worker that holds rows of the batch but not the wait
	// (pg_ctl stop -m fast, then start): its sessions end, and the batch learns of it when it
	// commits (two-phase commit prepares on every worker the transaction wrote).
	faultWorkerFast citusFaultKind = "worker-restart-fast"
	// faultWorkerImmediate restarts the worker the batch waits on (-m immediate, as a crash):
	// the statement in progress there fails at once and the worker runs crash recovery.
	faultWorkerImmediate citusFaultKind = "worker-restart-immediate"
	// faultWorkerTerminate ends the batch's backends on the other worker (pg_terminate_backend).
	faultWorkerTerminate citusFaultKind = "worker-terminate"
	// faultWorkerFreeze stops (SIGSTOP) the batch's backends on the other worker, past the run's
	// --batch-timeout, and resumes them (SIGCONT) once the run has said it retries (a run
	// without a batch deadline waits for them).
	faultWorkerFreeze citusFaultKind = "worker-freeze"
	// faultCoordinator restarts the coordinator (-m fast): every client session ends.
	faultCoordinator citusFaultKind = "coordinator-restart"
)

// citusFaultKinds are the faults each run meets, in order.
var citusFaultKinds = []citusFaultKind{faultWorkerFast, faultWorkerImmediate, faultWorkerTerminate, faultWorkerFreeze, faultCoordinator}

// faultCluster is the test's own Citus cluster and its ledger database "ledger".
type faultCluster struct {
	c      *localpg.CitusCluster
	admins []*pgxpool.Pool // the "postgres" database of each node: coordinator, then workers
	url    string          // the ledger on the coordinator
	dir    string
}

// startFaultCluster starts a Citus cluster of the test's own with a ledger initialized by
// `arkhe init --test-registration`; it is stopped when the test ends. Commits are
// synchronous (an immediate shutdown loses no acknowledged commit; fsync stays off), and the
// coordinator's two-phase-commit recovery runs every second instead of every minute, so a
// transaction a fault left prepared on a worker is settled while the run retries.
func startFaultCluster(t *testing.T) *faultCluster {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	c, err := localpg.StartCitus(ctx, localpg.CitusConfig{Dir: filepath.Join(dir, "citus"), SocketDir: filepath.Join(dir, "s"),
		Settings: map[string]string{"citus.shard_count": "4", "synchronous_commit": "on", "citus.recover_2pc_interval": "1s"},
		Database: "ledger"})
	if err != nil {
		t.Fatal(err)
	}
	fc := &faultCluster{c: c, url: c.URL("ledger"), dir: dir}
	t.Cleanup(func() {
		for _, p := range fc.admins {
			p.Close()
		}
		if err := c.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	for _, n := range c.Nodes() {
		p, err := pgxpool.New(ctx, n.URL("postgres"))
		if err != nil {
			t.Fatal(err)
		}
		fc.admins = append(fc.admins, p)
	}
	if code, out, errOut := arkhe(t, fc.url, "", "init", "--test-registration"); code != 0 || !strings.Contains(out, "layout citus") {
		t.Fatalf("init: exit %d\n%s\n%s", code, out, errOut)
	}
	return fc
}

// query runs sql on node i's "postgres" database (0: the coordinator), again after a
// connection that a restart ended, for up to a minute.
func (fc *faultCluster) query(t *testing.T, node int, sql string, args ...any) pgx.Rows {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		rows, err := fc.admins[node].Query(context.Background(), sql, args...)
		if err == nil {
			return rows
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %d: %s: %v", node, sql, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pids returns the first column of sql's rows on node i.
func (fc *faultCluster) pids(t *testing.T, node int, sql string, args ...any) []int {
	t.Helper()
	out, err := pgx.CollectRows(fc.query(t, node, sql, args...), pgx.RowTo[int])
	if err != nil {
		t.Fatalf("node %d: %v", node, err)
	}
	return out
}

// ledgerConn connects to the ledger on the coordinator.
func (fc *faultCluster) ledgerConn(t *testing.T) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), fc.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// gate is a transaction of the test that holds a lock a run needs.
type gate struct {
	conn *pgx.Conn
	tx   pgx.Tx
	gpid int64 // its Citus global process ID: its sessions on the workers are named after it
}

// openGate connects to the ledger on the coordinator and runs sql in a new transaction, the
// gate's, which it leaves open.
func (fc *faultCluster) openGate(t *testing.T, sql string, args ...any) *gate {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, fc.url)
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{conn: conn}
	if g.tx, err = conn.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.tx.QueryRow(ctx, `select citus_backend_gpid()`).Scan(&g.gpid); err != nil {
		t.Fatal(err)
	}
	if _, err := g.tx.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("gate: %s: %v", sql, err)
	}
	return g
}

// release ends the gate's transaction (a fault may have ended it already).
func (g *gate) release() {
	_ = g.tx.Rollback(context.Background())
	_ = g.conn.Close(context.Background())
}

// awaitWait returns the node (0: the coordinator) where a session of the ledger waits on a
// lock, polling until one does; it fails the test after two minutes or once done is closed.
func (fc *faultCluster) awaitWait(t *testing.T, done <-chan struct{}) int {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); {
		for i := range fc.admins {
			if len(fc.pids(t, i, `select pid from pg_stat_activity where datname = 'ledger' and wait_event_type = 'Lock'`)) > 0 {
				return i
			}
		}
		select {
		case <-done:
			t.Fatal("the run ended before it reached the gate")
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatal("no session of the run waited at the gate within 2 minutes")
	return 0
}

// runBackends returns the backends on worker node i (1 or 2) of transactions that wrote to the
// ledger, the gate's excepted.
func (fc *faultCluster) runBackends(t *testing.T, node int, g *gate) []int {
	t.Helper()
	return fc.pids(t, node, `select pid from pg_stat_activity where datname = 'ledger' and backend_xid is not null
		and pid <> pg_backend_pid() and application_name is distinct from 'citus_internal gpid=' || $1`, fmt.Sprint(g.gpid))
}

// arkheResult is how a command run in-process ended.
type arkheResult struct {
	code        int
	out, errOut string
}

// startCommand runs `arkhe --database-url URL --quiet args...` in-process in a goroutine,
// its stderr going to errOut.
func (fc *faultCluster) startCommand(errOut *lineWatch, args ...string) (<-chan arkheResult, <-chan struct{}) {
	res := make(chan arkheResult, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var out bytes.Buffer
		full := append([]string{"arkhe", "--database-url", fc.url, "--quiet"}, args...)
		code := run(context.Background(), full, strings.NewReader(""), &out, errOut)
		res <- arkheResult{code: code, out: out.String(), errOut: errOut.String()}
	}()
	return res, done
}

// frozen is the set of backends a freeze stopped; resume sends them SIGCONT.
type frozen struct {
	mu   sync.Mutex
	pids []int
}

func (f *frozen) add(pids []int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pids = append(f.pids, pids...)
}

func (f *frozen) resume() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, pid := range f.pids {
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
	f.pids = nil
}

// faultOutcome is what a faulted command did.
type faultOutcome struct {
	first  arkheResult // the run that met the fault
	rerun  *arkheResult
	landed string // where the fault landed, for the log
}

// faultedCommand runs args with the gate opened by openGate before the run starts (a lock on a
// row only a batch after the first few touches, so the run cannot pass it unseen), injects fault
// while the run waits at the gate, lets the run go, and waits for it. Frozen backends run again
// once the run says it retries (after its batch deadline); for a command without one (import),
// 3 s after they stopped. A run that exits otherwise than 0 must say what to do, in stderr's
// words want (any of them); then the same command runs again, without a fault, and must exit 0.
func (fc *faultCluster) faultedCommand(t *testing.T, fault citusFaultKind, openGate func() *gate, want []string, args ...string) faultOutcome {
	t.Helper()
	deadline := args[0] != "import" // mint and update have --batch-timeout; import has none
	var fz frozen
	t.Cleanup(fz.resume) // never leave a server process stopped
	errOut := &lineWatch{want: "retrying in", then: fz.resume}
	g := openGate()
	res, done := fc.startCommand(errOut, args...)
	defer g.release()
	at := fc.awaitWait(t, done)
	other := 1 // a worker where the batch holds rows but does not wait
	if at == 1 {
		other = 2
	}
	waiter := max(at, 1) // the worker the batch waits on (a reference table's wait may be on the coordinator)
	ctx := context.Background()
	var landed string
	switch fault {
	case faultWorkerFast:
		if err := fc.c.Workers()[other-1].Restart(ctx, localpg.StopFast); err != nil {
			t.Fatal(err)
		}
		landed = fmt.Sprintf("worker %d restarted (fast) while the batch waited on node %d", other, at)
	case faultWorkerImmediate:
		if err := fc.c.Workers()[waiter-1].Restart(ctx, localpg.StopImmediate); err != nil {
			t.Fatal(err)
		}
		landed = fmt.Sprintf("worker %d restarted (immediate) while the batch waited on node %d", waiter, at)
	case faultWorkerTerminate:
		pids := fc.runBackends(t, other, g)
		if len(pids) == 0 {
			t.Fatalf("no backend of the batch on worker %d", other)
		}
		for _, pid := range pids {
			fc.pids(t, other, `select $1::int where pg_terminate_backend($1)`, pid)
		}
		landed = fmt.Sprintf("backends %v of the batch terminated on worker %d", pids, other)
	case faultWorkerFreeze:
		pids := fc.runBackends(t, other, g)
		if len(pids) == 0 {
			t.Fatalf("no backend of the batch on worker %d", other)
		}
		fz.add(pids) // before they stop: the cleanup resumes them whatever happens
		for _, pid := range pids {
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				t.Fatalf("SIGSTOP %d: %v", pid, err)
			}
		}
		landed = fmt.Sprintf("backends %v of the batch stopped (SIGSTOP) on worker %d", pids, other)
		if !deadline {
			// a command without a batch deadline waits for them: they are resumed after a while
			resume := time.AfterFunc(3*time.Second, fz.resume)
			defer resume.Stop()
			landed += ", resumed after 3 s"
		}
	case faultCoordinator:
		if err := fc.c.Coordinator().Restart(ctx, localpg.StopFast); err != nil {
			t.Fatal(err)
		}
		landed = fmt.Sprintf("coordinator restarted (fast) while the batch waited on node %d", at)
	}
	g.release()
	var o faultOutcome
	o.landed = landed
	select {
	case o.first = <-res:
	case <-time.After(5 * time.Minute):
		fz.resume()
		t.Fatalf("%s: the run did not end within 5 minutes of the fault\nstderr:\n%s", landed, errOut)
	}
	fz.resume()
	t.Logf("%s: exit %d", landed, o.first.code)
	for _, line := range strings.Split(o.first.errOut, "\n") {
		if strings.Contains(line, "retrying in") || strings.Contains(line, "got through") {
			t.Log(line)
		}
	}
	if o.first.code == 0 {
		return o
	}
	said := false
	for _, w := range want {
		said = said || strings.Contains(o.first.errOut, w)
	}
	if !said {
		t.Errorf("%s: exit %d without saying what to do (want one of %q)\nstdout:\n%s\nstderr:\n%s", landed, o.first.code, want, o.first.out, o.first.errOut)
	}
	t.Logf("stderr of the run that stopped:\n%s", o.first.errOut)
	code, out, errb := arkhe(t, fc.url, "", args...)
	o.rerun = &arkheResult{code: code, out: out, errOut: errb}
	if code != 0 {
		t.Fatalf("the same command again: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errb)
	}
	return o
}

// count runs a query of one bigint on the ledger.
func count(t *testing.T, conn *pgx.Conn, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := conn.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// checkLedger asserts the ledger-wide invariants after a faulted run: one receipt per request
// ID and one ARK per receipt, every shoulder's draws = ARKs + collisions, `arkhe verify` clean,
// and the audit summary it wrote counting the ARKs there are.
func (fc *faultCluster) checkLedger(t *testing.T) {
	t.Helper()
	conn := fc.ledgerConn(t)
	if n := count(t, conn, `select count(*) from (select client_pk, request_id from mint_receipt group by 1, 2 having count(*) > 1) d`); n != 0 {
		t.Errorf("%d request IDs have more than one receipt", n)
	}
	if n := count(t, conn, `select count(*) from (select ark from mint_receipt group by 1 having count(*) > 1) d`); n != 0 {
		t.Errorf("%d ARKs have more than one receipt", n)
	}
	if n := count(t, conn, `select count(*) from shoulder s
		left join (select shoulder_id, sum(draws) draws, sum(collisions) collisions from shoulder_tally group by 1) t on t.shoulder_id = s.id
		left join (select shoulder_id, count(*) n from ark group by 1) a on a.shoulder_id = s.id
		where coalesce(t.draws, 0) - coalesce(t.collisions, 0) <> coalesce(a.n, 0) and t.shoulder_id is not null`); n != 0 {
		t.Errorf("%d shoulders whose draws are not their ARKs plus collisions", n)
	}
	code, out, errOut := arkhe(t, fc.url, "", "verify", "--out", filepath.Join(t.TempDir(), "findings.jsonl"))
	if code != 0 {
		t.Fatalf("verify: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if arks, summary := count(t, conn, `select count(*) from ark`),
		count(t, conn, `select ark_count from audit_summary order by id desc limit 1`); arks != summary {
		t.Errorf("the audit summary counts %d ARKs; the ledger holds %d", summary, arks)
	}
}

// writeFile writes s to a new file name in dir and returns its path.
func writeFile(t *testing.T, dir, name, s string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// citusFaultRows is the rows of each run's manifest, citusFaultBatch its batches' size and
// citusFaultAfter the batches it commits before the fault.
const (
	citusFaultRows  = 10_000 // as the import's summary prints it: 10,000
	citusFaultBatch = 100
	citusFaultAfter = 4
	// citusFaultUpdateRows is the rows of each update manifest: ARKs of one mint case
	citusFaultUpdateRows = 600
)

// batchTimeout is the --batch-timeout of a run that meets fault: past the time a restart takes
// (the batch waits at the gate meanwhile, up to lock_timeout, half of it), and short where the
// fault is a freeze, which only the batch deadline ends.
func batchTimeout(fault citusFaultKind) string {
	if fault == faultWorkerFreeze {
		return "5s"
	}
	return "30s"
}

// TestCitusFaults: mint, import and update on a Citus cluster each meet a worker restarted
// (fast and immediate), a worker's backends terminated and frozen past the batch deadline, and
// the coordinator restarted, each in the middle of a batch after some batches committed. Each
// run rides the fault out, or stops saying that the same command completes the job, which it
// then does; nothing is lost (every manifest row has one ARK), nothing is twice (one receipt
// per request ID, one ARK_CHANGE per ARK per run), the counters are exact and verify is clean.
func TestCitusFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("fault runs on a Citus cluster of the test's own: make test runs them, make test-short leaves them out")
	}
	if _, err := os.Stat("/proc/self"); err != nil {
		t.Skip("needs /proc to see the server's processes")
	}
	fc := startFaultCluster(t)
	dir := t.TempDir()
	minted := map[citusFaultKind]string{} // the mint map of each mint case, for the update cases
	t.Run("mint", func(t *testing.T) {
		for k, fault := range citusFaultKinds {
			t.Run(string(fault), func(t *testing.T) {
				var b strings.Builder
				b.WriteString("request_id,url,what\n")
				for i := range citusFaultRows {
					fmt.Fprintf(&b, "m%d-%d,https://example.org/m%d/%d,Object %d\n", k, i, k, i, i)
				}
				in := writeFile(t, dir, fmt.Sprintf("mint%d.csv", k), b.String())
				mm := filepath.Join(dir, fmt.Sprintf("mint%d.map.csv", k))
				conn := fc.ledgerConn(t)
				var clientPK int64
				if err := conn.QueryRow(context.Background(), `select id from client where client_id = 'test-minter'`).Scan(&clientPK); err != nil {
					t.Fatal(err)
				}
				// the gate: the receipt of the first request ID of batch citusFaultAfter, inserted
				// and not committed before the run starts; that batch's COPY of receipts waits on
				// it, after its ARK rows went to both workers, while the batches before it commit
				gateID := fmt.Sprintf("m%d-%d", k, citusFaultAfter*citusFaultBatch)
				o := fc.faultedCommand(t, fault, func() *gate {
					return fc.openGate(t, `insert into receipt (client_pk, request_id, ark, payload_digest, created_at)
						values ($1, $2, '99999/x9gate', '\x00000000000000000000000000000000'::bytea, now())`, clientPK, gateID)
				}, []string{"the same command completes the job"},
					"mint", "--client", "test-minter", "--batch", fmt.Sprint(citusFaultBatch), "--workers", "2",
					"--batch-timeout", batchTimeout(fault), "--retry-for", "2m", "-o", mm, "--rejects", filepath.Join(dir, fmt.Sprintf("mint%d.rejects.csv", k)), in)
				conn = fc.ledgerConn(t) // a coordinator restart ended the one before
				if o.first.code == 0 && !strings.Contains(o.first.errOut, "retrying in") {
					t.Errorf("%s: the run completed without a retry\nstderr:\n%s", o.landed, o.first.errOut)
				}
				recs := readMintMap(t, mm)
				if len(recs) != citusFaultRows+1 {
					t.Fatalf("mint map of %d lines, want %d", len(recs), citusFaultRows+1)
				}
				res, err := conn.Query(context.Background(), `select request_id, 'ark:' || ark from mint_receipt where client_pk = $1 and request_id like $2`,
					clientPK, fmt.Sprintf("m%d-%%", k))
				if err != nil {
					t.Fatal(err)
				}
				receipt := map[string]string{}
				for res.Next() {
					var rid, a string
					if err := res.Scan(&rid, &a); err != nil {
						t.Fatal(err)
					}
					receipt[rid] = a
				}
				if err := res.Err(); err != nil {
					t.Fatal(err)
				}
				if len(receipt) != citusFaultRows {
					t.Errorf("%d receipts for the manifest's %d request IDs", len(receipt), citusFaultRows)
				}
				for _, r := range recs[1:] {
					if receipt[r[0]] != r[1] {
						t.Fatalf("mint map row %q: the ledger's receipt says %q", r, receipt[r[0]])
					}
				}
				fc.checkLedger(t)
				minted[fault] = mm
			})
		}
	})
	t.Run("update", func(t *testing.T) {
		for k, fault := range citusFaultKinds {
			t.Run(string(fault), func(t *testing.T) {
				mm, ok := minted[fault]
				if !ok {
					t.Skip("its mint case failed")
				}
				recs := readMintMap(t, mm)[1 : citusFaultUpdateRows+1]
				var b strings.Builder
				b.WriteString("ark,url\n")
				arks := make([]string, len(recs))
				for i, r := range recs {
					arks[i] = strings.TrimPrefix(r[1], "ark:")
					fmt.Fprintf(&b, "%s,https://moved.example.org/u%d/%d\n", r[1], k, i)
				}
				in := writeFile(t, dir, fmt.Sprintf("update%d.csv", k), b.String())
				// the gate: the ARK of the first row after citusFaultAfter batches, locked
				gateARK := arks[citusFaultAfter*citusFaultBatch]
				o := fc.faultedCommand(t, fault, func() *gate {
					return fc.openGate(t, `select 1 from ark where ark = $1 for update`, gateARK)
				}, []string{"the same command completes the job", "run it again", "again"},
					"update", "--client", "test-minter", "--batch", fmt.Sprint(citusFaultBatch), "--batch-timeout", batchTimeout(fault), "--retry-for", "2m",
					"-o", filepath.Join(dir, fmt.Sprintf("update%d.changes.csv", k)), "--rejects", filepath.Join(dir, fmt.Sprintf("update%d.rejects.csv", k)), in)
				_ = o
				conn := fc.ledgerConn(t)
				if n := count(t, conn, `select count(*) from ark where ark = any($1) and url like 'https://moved.example.org/u' || $2::text || '/%'`, arks, fmt.Sprint(k)); n != int64(len(arks)) {
					t.Errorf("%d of the %d ARKs moved", n, len(arks))
				}
				if n := count(t, conn, `select count(*) from ark_change where ark = any($1)`, arks); n != int64(len(arks)) {
					t.Errorf("%d ARK_CHANGE rows for %d ARKs changed once each", n, len(arks))
				}
				if n := count(t, conn, `select count(distinct ark) from ark_change where ark = any($1)`, arks); n != int64(len(arks)) {
					t.Errorf("ARK_CHANGE rows for %d distinct ARKs, want %d", n, len(arks))
				}
				fc.checkLedger(t)
			})
		}
	})
	t.Run("import", func(t *testing.T) {
		const batch = 2 * citusFaultBatch
		for k, fault := range citusFaultKinds {
			t.Run(string(fault), func(t *testing.T) {
				// an arklet CSV dump of NAAN 1234k, shoulder /x6; a first import of one row
				// registers both, so that the gate can hold an ARK of the dump: the first row of
				// the fifth batch inserted by the test as of that first import, not committed (the
				// run's COPY waits on it)
				naan := fmt.Sprintf("1234%d", k)
				row := func(i int) (ark, line string) {
					name := fmt.Sprintf("c%dk%07d", k, i)
					return naan + "/x6" + name, fmt.Sprintf("%s/x6%s,/x6,x6%s,https://example.org/i%d/%d,,,%s,2012-03-04 05:06:07+00,2012-03-04 05:06:07+00\n",
						naan, name, name, k, i, naan)
				}
				const header = "ark,shoulder,assigned_name,url,metadata,commitment,naan_id,created_at,updated_at\n"
				_, first := row(-1)
				pre := writeFile(t, dir, fmt.Sprintf("import%d-pre.csv", k), header+first)
				if code, out, errOut := arkhe(t, fc.url, "", "import", "--input-format", "arklet-csv", "--rejects", pre+".rejects.csv", pre); code != 0 {
					t.Fatalf("import of %s: exit %d\n%s\n%s", pre, code, out, errOut)
				}
				var b strings.Builder
				b.WriteString(header)
				var arks []string
				for i := range citusFaultRows {
					a, line := row(i)
					arks = append(arks, a)
					b.WriteString(line)
				}
				in := writeFile(t, dir, fmt.Sprintf("import%d.csv", k), b.String())
				conn := fc.ledgerConn(t)
				var shoulderID, preRun int64
				if err := conn.QueryRow(context.Background(), `select s.id, r.id from shoulder s, import_run r
					where s.naan = $1 and s.shoulder = '/x6' and r.source_file = $2`, naan, pre).Scan(&shoulderID, &preRun); err != nil {
					t.Fatal(err)
				}
				g := citusFaultAfter * batch
				gateARK := arks[g]
				o := fc.faultedCommand(t, fault, func() *gate {
					return fc.openGate(t, `insert into ark (ark, naan, shoulder_id, assigned_name, url, import_run_id) values ($1, $2, $3, $4, $5, $6)`,
						gateARK, naan, shoulderID, strings.TrimPrefix(gateARK, naan+"/"), fmt.Sprintf("https://example.org/i%d/%d", k, g), preRun)
				}, []string{"the same command completes the job"},
					"import", "--input-format", "arklet-csv", "--batch", fmt.Sprint(batch),
					"--rejects", filepath.Join(dir, fmt.Sprintf("import%d.rejects.csv", k)), in)
				if o.rerun != nil && !strings.Contains(o.rerun.out, "imported     10,000 ARKs") {
					t.Errorf("the import that completed the job:\n%s", o.rerun.out)
				}
				conn = fc.ledgerConn(t)
				if n := count(t, conn, `select count(*) from ark where ark = any($1)`, arks); n != int64(len(arks)) {
					t.Errorf("%d of the dump's %d ARKs in the ledger", n, len(arks))
				}
				if n := count(t, conn, `select count(*) from import_run where source_file = $1 and finished_at is not null`, in); n != 1 {
					t.Errorf("%d finished import runs of the dump, want 1", n)
				}
				fc.checkLedger(t)
			})
		}
	})
}
