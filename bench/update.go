package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/loader"
)

// UpdateConfig configures RunUpdate.
type UpdateConfig struct {
	// Rows is the ARKs of the filled ledger, every one repointed.
	Rows int
	// BatchSize is arkhe update's rows per batch (0: loader.DefaultUpdateBatch).
	BatchSize int
	// ServerURL, Dir: as in VerifyConfig ("" for a throw-away local cluster in a temporary
	// directory).
	ServerURL, Dir string
	// Exe is the arkhe executable: arkhe update then runs as a process of its own, as a user
	// runs it, and its peak resident set is its own; "" runs loader.Update in this process
	// (peak: this process's, reset before).
	Exe string
	// Loop is how many single `arkhe ark repoint` processes the loop runs, one after the other
	// (needs Exe; 0 skips the loop).
	Loop int
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

// UpdateResult is what RunUpdate measured.
type UpdateResult struct {
	Server string
	Rows   int
	// Arkhe is loader.Update of the manifest end to end (reading, staging, applying, receipts,
	// result file); Floor is the hand-written SQL on an identical ledger.
	Arkhe, Floor time.Duration
	Summary      loader.UpdateSummary
	// PeakRSS is arkhe update's peak resident set in octets (0: unknown).
	PeakRSS int64
	// Loop is the time of LoopRows single `arkhe ark repoint` processes run one after the other.
	Loop     time.Duration
	LoopRows int
	// FloorCPU and ArkheCPU are the processor time of each (sampleCPU: the server's, autovacuum
	// included, and the client's: this process's for the floor, arkhe update's own when it runs as
	// a process of its own); zero where /proc is missing.
	FloorCPU, ArkheCPU CPU
	// Load is the load average before and after the runs (/proc/loadavg), for the record.
	LoadBefore, LoadAfter string
}

// CPURatio is the floor's processor time over arkhe's (0 when either is unknown), which on a busy
// machine says more than Ratio.
func (r UpdateResult) CPURatio() float64 {
	if r.FloorCPU.Server <= 0 || r.ArkheCPU.Server <= 0 {
		return 0
	}
	return r.FloorCPU.Total().Seconds() / r.ArkheCPU.Total().Seconds()
}

// LoopRatio is arkhe update's rate over the single-repoint loop's (0 without a loop).
func (r UpdateResult) LoopRatio() float64 {
	if r.Loop <= 0 || r.Arkhe <= 0 {
		return 0
	}
	return (float64(r.Rows) / r.Arkhe.Seconds()) / (float64(r.LoopRows) / r.Loop.Seconds())
}

// Ratio is the floor's time over arkhe's (1 means as fast as the floor).
func (r UpdateResult) Ratio() float64 {
	if r.Arkhe <= 0 {
		return 0
	}
	return r.Floor.Seconds() / r.Arkhe.Seconds()
}

// Print writes the result.
func (r UpdateResult) Print(w io.Writer) {
	fmt.Fprintf(w, "bench update on %s: %d repoints\n", r.Server, r.Rows)
	fmt.Fprintf(w, "  floor (COPY into staging + one INSERT INTO ark_change + one UPDATE ark, triggers in place): %.2f s, %.0f rows/s\n",
		r.Floor.Seconds(), float64(r.Rows)/r.Floor.Seconds())
	fmt.Fprintf(w, "  arkhe update:  %.2f s, %.0f rows/s (%d changed, %d batches)\n", r.Arkhe.Seconds(), float64(r.Rows)/r.Arkhe.Seconds(),
		r.Summary.Changed, r.Summary.Batches)
	fmt.Fprintf(w, "  ratio (floor time / arkhe time): %.2f (target >= 0.8)\n", r.Ratio())
	if r.CPURatio() > 0 {
		fmt.Fprintf(w, "  CPU: floor %.2f s (server %.2f s), arkhe update %.2f s (server %.2f s); ratio %.2f\n", r.FloorCPU.Total().Seconds(),
			r.FloorCPU.Server.Seconds(), r.ArkheCPU.Total().Seconds(), r.ArkheCPU.Server.Seconds(), r.CPURatio())
	}
	if r.PeakRSS > 0 {
		fmt.Fprintf(w, "  arkhe update peak RSS: %.0f MiB (target <= 256)\n", float64(r.PeakRSS)/(1<<20))
	}
	if r.LoopRows > 0 {
		fmt.Fprintf(w, "  loop of %d single `arkhe ark repoint` processes: %.1f s, %.1f rows/s; arkhe update is %.0f x faster (target >= 50)\n",
			r.LoopRows, r.Loop.Seconds(), float64(r.LoopRows)/r.Loop.Seconds(), r.LoopRatio())
	}
	fmt.Fprintf(w, "  load average before: %s; after: %s\n", r.LoadBefore, r.LoadAfter)
}

// updateFloorSQL is the floor after COPY of (ark, url) into temporary table stage: one INSERT of
// the ARK_CHANGE rows and one UPDATE of the ark rows, which the ark_update trigger checks.
const updateFloorSQL = `
insert into ark_change (ark, seq, at, action, before_url, after_url, before_status, after_status, by_client, by_text)
select a.ark, coalesce(a.change_seq, 0) + 1, now(), 'update', a.url, s.url, coalesce(a.status::text, 'public'),
       coalesce(a.status::text, 'public'), a.created_by, 'floor'
from stage s join ark a on a.ark = s.ark;
update ark a set url = s.url, updated_at = now(), updated_by = a.created_by, change_seq = coalesce(a.change_seq, 0) + 1
from stage s where a.ark = s.ark`

// RunUpdate fills a ledger of cfg.Rows ARKs (fixtures.FillLedger), clones it, and measures on
// one copy arkhe update of a manifest repointing every ARK and on the other the floor.
func RunUpdate(ctx context.Context, cfg UpdateConfig) (UpdateResult, error) {
	res := UpdateResult{Rows: cfg.Rows}
	srv, err := openServer(ctx, "update", cfg.ServerURL, cfg.Dir, "", cfg.Log)
	if err != nil {
		return res, err
	}
	defer func() { _ = srv.close(context.WithoutCancel(ctx)) }()
	res.Server = srv.desc
	a, b := fmt.Sprintf("bench_update_a_%d", cfg.Rows), fmt.Sprintf("bench_update_b_%d", cfg.Rows)
	for _, db := range []string{a, b} {
		if _, err := srv.admin.Exec(ctx, "drop database if exists "+pgx.Identifier{db}.Sanitize()+" with (force)"); err != nil {
			return res, err
		}
	}
	if _, err := srv.admin.Exec(ctx, "create database "+pgx.Identifier{a}.Sanitize()); err != nil {
		return res, err
	}
	la, err := ledger.Open(ctx, srv.url(a), 4)
	if err != nil {
		return res, err
	}
	if _, err := la.Init(ctx, ledger.LayoutAuto); err != nil {
		la.Close()
		return res, err
	}
	srv.logf("filling %d ARKs", cfg.Rows)
	if err := fixtures.FillLedger(ctx, la.Pool, cfg.Rows, 1, fixtures.FillOptions{Unchecked: true}); err != nil {
		la.Close()
		return res, err
	}
	if _, err := la.Pool.Exec(ctx, "vacuum analyze"); err != nil {
		la.Close()
		return res, err
	}
	la.Close()
	if _, err := srv.admin.Exec(ctx, "create database "+pgx.Identifier{b}.Sanitize()+" template "+pgx.Identifier{a}.Sanitize()); err != nil {
		return res, err
	}
	la, err = ledger.Open(ctx, srv.url(a), 4)
	if err != nil {
		return res, err
	}
	defer la.Close()
	lb, err := ledger.Open(ctx, srv.url(b), 4)
	if err != nil {
		return res, err
	}
	defer lb.Close()
	man, floorMan := filepath.Join(srv.dir, "moves.csv"), filepath.Join(srv.dir, "floor-moves.csv")
	if err := writeMoves(ctx, la, man, `'ark:' || ark`); err != nil {
		return res, err
	}
	if err := writeMoves(ctx, la, floorMan, `ark`); err != nil {
		return res, err
	}
	if _, err := srv.admin.Exec(ctx, "checkpoint"); err != nil {
		return res, err
	}
	for _, l := range []*ledger.Ledger{la, lb} { // both ledgers warm, as the second run would find them
		if _, err := l.Pool.Exec(ctx, `select count(*) from ark`); err != nil {
			return res, err
		}
	}
	srv.logf("floor")
	res.LoadBefore = loadAverage()
	t0, cpu0 := time.Now(), sampleCPU(srv.dataDirs...)
	if err := updateFloor(ctx, lb, floorMan); err != nil {
		return res, fmt.Errorf("floor: %w", err)
	}
	res.Floor, res.FloorCPU = time.Since(t0), sampleCPU(srv.dataDirs...).Sub(cpu0)
	srv.logf("floor: %.2f s (load average %s)", res.Floor.Seconds(), loadAverage())
	if _, err := srv.admin.Exec(ctx, "checkpoint"); err != nil {
		return res, err
	}
	srv.logf("arkhe update")
	if err := runUpdate(ctx, cfg, srv.url(a), srv.dataDirs, la, man, filepath.Join(srv.dir, "moves.changes.csv"), &res); err != nil {
		return res, err
	}
	srv.logf("arkhe update: %.2f s, peak RSS %.0f MiB (load average %s)", res.Arkhe.Seconds(), float64(res.PeakRSS)/(1<<20), loadAverage())
	if cfg.Loop > 0 && cfg.Exe != "" {
		srv.logf("a loop of %d single arkhe ark repoint processes", cfg.Loop)
		if err := repointLoop(ctx, cfg, srv.url(a), la, &res); err != nil {
			return res, err
		}
	}
	res.LoadAfter = loadAverage()
	return res, nil
}

// runUpdate runs arkhe update of manifest man on ledger l (at url, on the servers of dataDirs),
// as a process of its own when cfg.Exe is set, and fills res's Arkhe, ArkheCPU, Summary and
// PeakRSS; every row must change.
func runUpdate(ctx context.Context, cfg UpdateConfig, url string, dataDirs []string, l *ledger.Ledger, man, result string, res *UpdateResult) error {
	if cfg.Exe == "" {
		runtime.GC()
		debug.FreeOSMemory()
		resetPeakRSS()
		t0, cpu0 := time.Now(), sampleCPU(dataDirs...)
		rep, err := loader.Update(ctx, l, loader.UpdateJob{ClientID: fixtures.FillClient, Inputs: []string{man}, BatchSize: cfg.BatchSize,
			ResultPath: result})
		res.Arkhe, res.ArkheCPU, res.Summary, res.PeakRSS = time.Since(t0), sampleCPU(dataDirs...).Sub(cpu0), rep.Summary, peakRSS()
		if err != nil {
			return err
		}
	} else {
		batch := cfg.BatchSize
		if batch <= 0 {
			batch = loader.DefaultUpdateBatch
		}
		cmd := exec.CommandContext(ctx, cfg.Exe, "--database-url", url, "--quiet", "update", "--client", fixtures.FillClient,
			"--batch", strconv.Itoa(batch), "-o", result, man)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		run, err := runChild(cmd, dataDirs...)
		res.Arkhe, res.ArkheCPU, res.PeakRSS = run.Elapsed, run.CPU, run.Peak
		if err != nil {
			return fmt.Errorf("bench update: %s update: %w: %s", cfg.Exe, err, strings.TrimSpace(stderr.String()))
		}
		var changed int64
		if err := l.Pool.QueryRow(ctx, `select count(*) from ark_change where by_text = 'arkhe update'`).Scan(&changed); err != nil {
			return err
		}
		res.Summary = loader.UpdateSummary{Read: int64(cfg.Rows), Changed: changed, Elapsed: run.Elapsed}
		if m := regexp.MustCompile(`in ([0-9]+) batches`).FindStringSubmatch(stdout.String()); m != nil {
			res.Summary.Batches, _ = strconv.ParseInt(m[1], 10, 64)
		}
	}
	if res.Summary.Changed != int64(cfg.Rows) {
		return fmt.Errorf("arkhe update changed %d ARKs, want %d", res.Summary.Changed, cfg.Rows)
	}
	return nil
}

// repointLoop repoints the first cfg.Loop ARKs of l (at url) once more, each with a process of
// `arkhe ark repoint` of its own, one after the other, as a script of single changes would, and
// fills res's Loop and LoopRows.
func repointLoop(ctx context.Context, cfg UpdateConfig, url string, l *ledger.Ledger, res *UpdateResult) error {
	rows, err := l.Pool.Query(ctx, `select ark, assigned_name from ark order by ark limit $1`, cfg.Loop)
	if err != nil {
		return err
	}
	var arks, names []string
	for rows.Next() {
		var a, n string
		if err := rows.Scan(&a, &n); err != nil {
			rows.Close()
			return err
		}
		arks, names = append(arks, a), append(names, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	t0 := time.Now()
	for i, a := range arks {
		cmd := exec.CommandContext(ctx, cfg.Exe, "--database-url", url, "--quiet", "ark", "repoint", "--client", fixtures.FillClient,
			"ark:"+a, "https://loop.example.org/"+names[i])
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("bench update: arkhe ark repoint ark:%s: %w: %s", a, err, strings.TrimSpace(string(out)))
		}
	}
	res.Loop, res.LoopRows = time.Since(t0), len(arks)
	return nil
}

// writeMoves writes a manifest (ark, url) repointing every ARK of l, the ARK spelt by expr.
func writeMoves(ctx context.Context, l *ledger.Ledger, path, expr string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	fmt.Fprintln(f, "ark,url")
	conn, err := l.Pool.Acquire(ctx)
	if err != nil {
		_ = f.Close()
		return err
	}
	_, err = conn.Conn().PgConn().CopyTo(ctx, f, `copy (select `+expr+`, 'https://new.example.org/' || assigned_name from ark) to stdout (format csv)`)
	conn.Release()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// updateFloor runs the floor on l: COPY of the manifest (ark, url) into a temporary table, ANALYZE
// of it, then updateFloorSQL, in one transaction.
func updateFloor(ctx context.Context, l *ledger.Ledger, man string) error {
	f, err := os.Open(man)
	if err != nil {
		return err
	}
	defer f.Close()
	tx, err := l.Pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, `create temporary table stage (ark text collate "C", url text) on commit drop`); err != nil {
		return err
	}
	if _, err := tx.Conn().PgConn().CopyFrom(ctx, f, `copy stage from stdin (format csv, header)`); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `analyze stage`); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, updateFloorSQL); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
