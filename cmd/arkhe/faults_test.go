package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
)

// startArkhe starts the test binary as `arkhe args...` in a process of its own.
func startArkhe(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), asArkheEnv+"=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &out, &errb
}

// exitCode waits for cmd and returns its exit status.
func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	err := cmd.Wait()
	if err != nil && cmd.ProcessState == nil {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode()
}

// logLines counts lines holding s in the file at path from offset on.
func logLines(t *testing.T, path string, offset int64, s string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b[min(offset, int64(len(b))):]), s)
}

func sizeOf(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// TestMintConcurrentProcesses runs four `arkhe mint` processes at once on one shoulder, each
// with its own manifest in its own order and request IDs shared among all four: every process
// exits 0, each request ID is minted once and every mint map gives it the same ARK, the server
// logs no deadlock, and the shoulder's counters are exact. Then (not with -short) one process
// mints the union of the manifests on a fresh ledger, for the time it takes. -short: 4 × 5,000
// rows (2,500 shared); else 4 × 50,000 rows (25,000 shared).
func TestMintConcurrentProcesses(t *testing.T) {
	rows, shared := 5_000, 2_500
	if !testing.Short() {
		rows, shared = 50_000, 25_000
	}
	url := pgtest.URL(t)
	if code, out, errOut := arkhe(t, url, "", "init", "--test-registration"); code != 0 {
		t.Fatalf("init: exit %d\n%s\n%s", code, out, errOut)
	}
	serverLog := pgtest.ServerLog(t)
	logStart := sizeOf(serverLog)
	dir := t.TempDir()
	ms, err := fixtures.CreateOverlapManifests(dir, fixtures.OverlapConfig{Runs: 4, Rows: rows, Shared: shared, Seed: 41})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	type child struct {
		cmd       *exec.Cmd
		out, errb *bytes.Buffer
		mintMap   string
	}
	var children []child
	for i, in := range ms.Runs {
		mm := filepath.Join(dir, fmt.Sprintf("map%d.csv", i))
		cmd, out, errb := startArkhe(t, "--database-url", url, "--quiet", "mint", "--client", "test-minter",
			"-o", mm, "--rejects", filepath.Join(dir, fmt.Sprintf("rejects%d.csv", i)), in)
		children = append(children, child{cmd, out, errb, mm})
	}
	arkOf := map[string]string{}
	for i, c := range children {
		if code := exitCode(t, c.cmd); code != 0 {
			t.Errorf("process %d: exit %d\nstdout:\n%s\nstderr:\n%s", i, code, c.out, c.errb)
			continue
		}
		recs := readMintMap(t, c.mintMap)
		if len(recs) != rows+1 {
			t.Errorf("process %d: mint map of %d lines, want %d", i, len(recs), rows+1)
		}
		for _, r := range recs[1:] {
			if a, ok := arkOf[r[0]]; ok && a != r[1] {
				t.Fatalf("request ID %s got %s and %s", r[0], a, r[1])
			}
			arkOf[r[0]] = r[1]
		}
	}
	elapsed := time.Since(start)
	if len(arkOf) != ms.Distinct {
		t.Errorf("the mint maps name %d request IDs, want %d", len(arkOf), ms.Distinct)
	}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var receipts, distinct, draws, collisions int64
	if err := conn.QueryRow(context.Background(), `select (select count(*) from mint_receipt),
		(select count(distinct request_id) from mint_receipt),
		(select coalesce(sum(draws), 0)::bigint from shoulder_tally), (select coalesce(sum(collisions), 0)::bigint from shoulder_tally)`).Scan(
		&receipts, &distinct, &draws, &collisions); err != nil {
		t.Fatal(err)
	}
	if receipts != int64(ms.Distinct) || distinct != receipts || draws-collisions != receipts {
		t.Errorf("ledger: %d receipts of %d request IDs, %d draws, %d collisions; want %d of each, draws = receipts + collisions",
			receipts, distinct, draws, collisions, ms.Distinct)
	}
	if serverLog != "" {
		if n := logLines(t, serverLog, logStart, "deadlock detected"); n != 0 {
			t.Errorf("the server logged %d deadlocks", n)
		}
	}
	t.Run("union", func(t *testing.T) {
		if testing.Short() {
			t.Skip("the union's time is a figure for the full suite: make test runs it, make test-short leaves it out")
		}
		url := pgtest.URL(t)
		if code, out, errOut := arkhe(t, url, "", "init", "--test-registration"); code != 0 {
			t.Fatalf("init: exit %d\n%s\n%s", code, out, errOut)
		}
		start := time.Now()
		cmd, out, errb := startArkhe(t, "--database-url", url, "--quiet", "mint", "--client", "test-minter",
			"-o", filepath.Join(dir, "union-map.csv"), "--rejects", filepath.Join(dir, "union-rejects.csv"), ms.Union)
		if code := exitCode(t, cmd); code != 0 {
			t.Fatalf("union: exit %d\n%s\n%s", code, out, errb)
		}
		t.Logf("4 concurrent processes of %d rows (%d shared): %s; one process of their union (%d rows): %s",
			rows, shared, elapsed.Round(time.Millisecond), ms.Distinct, time.Since(start).Round(time.Millisecond))
	})
}

// TestMintRejectFileOnFullDisk: when the reject file cannot be written (here its temporary
// file is /dev/full), the run exits 2 and its summary says the reject file failed instead of
// naming a file that does not exist.
func TestMintRejectFileOnFullDisk(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	url := pgtest.URL(t)
	if code, out, errOut := arkhe(t, url, "", "init", "--test-registration"); code != 0 {
		t.Fatalf("init: exit %d\n%s\n%s", code, out, errOut)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "m.csv")
	if _, err := fixtures.CreateManifestCSV(in, fixtures.ManifestConfig{Rows: 50, Seed: 42, BadEvery: 10}); err != nil {
		t.Fatal(err)
	}
	rejects := filepath.Join(dir, "rejects.csv")
	if err := os.Symlink("/dev/full", rejects+".tmp"); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := arkhe(t, url, "", "mint", "--client", "test-minter", "-o", filepath.Join(dir, "map.csv"), "--rejects", rejects, in)
	if code != 2 {
		t.Fatalf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if strings.Contains(out, "rejects     "+rejects) || !strings.Contains(out, "rejects     not written: the reject file failed") {
		t.Errorf("the summary does not say the reject file failed:\n%s", out)
	}
	if !strings.Contains(errOut, rejects) {
		t.Errorf("stderr does not name the reject file:\n%s", errOut)
	}
	if _, err := os.Stat(rejects); !os.IsNotExist(err) {
		t.Errorf("a reject file exists: %v", err)
	}
}

// lineWatch is an io.Writer that calls then once a write contains want.
type lineWatch struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	then func()
	done bool
}

func (w *lineWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.done && strings.Contains(w.buf.String(), w.want) {
		w.done = true
		w.then()
	}
	return len(p), nil
}

func (w *lineWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestMintSaysItRetries: a batch that waits on a lock past lock_timeout (another session holds
// the shoulder's tally row) is retried, and `arkhe mint` says so on stderr — what happened,
// when it retries, how long it may go on — then completes with exit 0.
func TestMintSaysItRetries(t *testing.T) {
	if testing.Short() {
		t.Skip("a fault run (it waits out lock_timeout): make test runs it, make test-short leaves it out")
	}
	url := pgtest.URL(t)
	if code, out, errOut := arkhe(t, url, "", "init", "--test-registration"); code != 0 {
		t.Fatalf("init: exit %d\n%s\n%s", code, out, errOut)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `insert into shoulder_tally (shoulder_id) select id from shoulder where shoulder = '/x9'`); err != nil {
		t.Fatal(err)
	}
	holder, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, `select * from shoulder_tally for update`); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "m.csv")
	if _, err := fixtures.CreateManifestCSV(in, fixtures.ManifestConfig{Rows: 30, Seed: 43}); err != nil {
		t.Fatal(err)
	}
	errOut := &lineWatch{want: "retrying in", then: func() { _ = holder.Rollback(ctx) }}
	var out bytes.Buffer
	code := run(ctx, []string{"arkhe", "--database-url", url, "--quiet", "mint", "--client", "test-minter", "--batch-timeout", "4s",
		"--retry-for", "1m", "-o", filepath.Join(dir, "map.csv"), in}, strings.NewReader(""), &out, errOut)
	_ = holder.Rollback(ctx)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, &out, errOut)
	}
	for _, want := range []string{"lock_timeout", "retrying in", "left", "got through", "minted      30", "retries     1 "} {
		if !strings.Contains(errOut.String()+out.String(), want) {
			t.Errorf("output lacks %q\nstdout:\n%s\nstderr:\n%s", want, &out, errOut)
		}
	}
}
