package bench

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/importer"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/legacy"
	"github.com/arkhe-ledger/arkhe/loader"
	"github.com/arkhe-ledger/arkhe/pipeline"
	"github.com/arkhe-ledger/arkhe/report"
)

// ImportConfig configures RunImport.
type ImportConfig struct {
	// Rows is the number of ark.ark records in the generated arklet dump (1,000,000 in make
	// bench). About 94 in 100 land: the fixtures' edge-case schedule rejects or skips the rest.
	Rows int
	// BatchSize is the importer's (0: importer.DefaultBatch).
	BatchSize int
	// DatabaseURL, if set, is a superuser connection string of an existing server; the bench
	// creates and drops its databases there. Otherwise a local cluster is started in Dir.
	DatabaseURL string
	// Dir holds the local cluster and the generated dump; "" makes a temporary directory that is
	// removed afterwards. A given Dir keeps the dump for the next run.
	Dir string
	// Seed makes the dump repeatable.
	Seed int64
	// Log receives progress lines; nil discards.
	Log io.Writer
	// CPUProfile, if set, is where a Go CPU profile of the import phase is written.
	CPUProfile string
	// Repeat runs the pair of measurements this many times (0: 1), each into two fresh ledgers,
	// and reports the median ratio. The import always runs first: the floor sends the rows it wrote.
	Repeat int
	// Reconcile also measures `arkhe reconcile` of the same dump against the imported ledger
	// (the 10-million-row case of make bench-large): time, report rows and peak Go heap, which
	// must not grow with the sizes.
	Reconcile bool
	// Exe, if set, is the arkhe executable: (b) runs `Exe import` as a process of its own, as a
	// user runs it, and its peak resident set is that process's alone (its counts are read from
	// the run's import_run row). "" runs (b) in this process (importer.Run), which CPUProfile
	// needs.
	Exe string
}

// ImportResult is what RunImport measured.
type ImportResult struct {
	Config   ImportConfig
	Server   string            // "a local cluster in DIR" or "the server at HOST:PORT"
	Settings map[string]string // ServerSettings() as the server reports them
	// ImportPair is the measurement with the median ratio (the only one without Config.Repeat):
	// Import is arkhe import of the arklet dump end to end (reading, normalizing, classifying,
	// inserting; Rows counts the ARKs it imported); Floor a plain pgx CopyFrom of exactly the ark
	// rows the import wrote, pre-built in memory, into a fresh ledger of the same schema with the
	// same NAANs and shoulders.
	ImportPair
	// Pairs are all the measurements, in run order.
	Pairs []ImportPair
	// Counts are the importer's counts.
	Counts importer.Counts
	// InputBytes is the size of the dump.
	InputBytes int64
	// PeakHeap is the largest peak of live Go heap during an import, sampled every 20 ms (in
	// process only).
	PeakHeap int64
	// PeakRSS is arkhe import's largest peak resident set, in bytes: with ImportConfig.Exe the
	// child process's own peak resident set (VmHWM of the program it runs), else this process's VmHWM during the
	// import (reset before it).
	PeakRSS int64
	// Reconcile is the reconcile of the dump against the imported ledger (rows: ARKs compared),
	// with its report's row count and the peak Go heap while it ran (ImportConfig.Reconcile).
	Reconcile         Phase
	ReconcileRows     int64
	ReconcilePeakHeap int64
}

// ImportPair is one measurement of the import and its floor, each into a fresh ledger, with the
// processor time of each phase (Server stays 0 with ImportConfig.DatabaseURL: only a local
// cluster's processes can be read).
type ImportPair struct {
	Import, Floor       Phase
	ImportCPU, FloorCPU CPU
}

// Ratio is the import rate over the floor rate (target: ≥ 0.8).
func (p ImportPair) Ratio() float64 {
	if p.Floor.Rate() == 0 {
		return 0
	}
	return p.Import.Rate() / p.Floor.Rate()
}

// Print writes the result in the shape of the other macro benchmarks: settings, both phases,
// the ratio.
func (r ImportResult) Print(w io.Writer) {
	fmt.Fprintf(w, "arkhe bench import: %d-record arklet dump (%.1f MB), batch %d\n", r.Config.Rows,
		float64(r.InputBytes)/1e6, r.Config.BatchSize)
	printServer(w, r.Server, r.Settings)
	fmt.Fprintf(w, "(a) floor: COPY of the %d resulting ark rows   %8.2f s  %10.0f rows/s\n", r.Floor.Rows, r.Floor.Elapsed.Seconds(), r.Floor.Rate())
	fmt.Fprintf(w, "(b) arkhe import, end to end                   %8.2f s  %10.0f rows/s\n", r.Import.Elapsed.Seconds(), r.Import.Rate())
	fmt.Fprintf(w, "ratio (b)/(a): %.2f (target ≥ 0.80)\n", r.Ratio())
	if len(r.Pairs) > 1 {
		fmt.Fprintf(w, "  (median of %d runs, each into two fresh ledgers; figures above are the median run's; per run floor / import rows/s / ratio:", len(r.Pairs))
		for _, p := range r.Pairs {
			fmt.Fprintf(w, " %.0f/%.0f/%.2f", p.Floor.Rate(), p.Import.Rate(), p.Ratio())
		}
		fmt.Fprintln(w, ")")
	}
	if r.ImportCPU.Server > 0 {
		fmt.Fprintf(w, "CPU: floor server %.2f s, client %.2f s; import server %.2f s, client %.2f s\n",
			r.FloorCPU.Server.Seconds(), r.FloorCPU.Client.Seconds(), r.ImportCPU.Server.Seconds(), r.ImportCPU.Client.Seconds())
	}
	c := r.Counts
	fmt.Fprintf(w, "import: read %d, imported %d, rejected %d, test skipped %d, refused %d; check characters verified %d, failed %d, none %d\n",
		c.Read, c.Imported, c.Rejected, c.TestSkipped, c.Refused, c.CheckVerified, c.CheckFailed, c.CheckNone)
	if r.Config.Exe != "" {
		fmt.Fprintf(w, "peak resident set of the arkhe import process: %.0f MB (its VmHWM; largest of the runs)\n", float64(r.PeakRSS)/1e6)
	} else {
		fmt.Fprintf(w, "peak memory during import, in this process: VmHWM %.0f MB, Go heap %.0f MB\n", float64(r.PeakRSS)/1e6, float64(r.PeakHeap)/1e6)
	}
	if r.Config.Reconcile {
		fmt.Fprintf(w, "reconcile of the dump against the ledger: %d ARKs in %.2f s (%.0f rows/s), %d report rows, peak Go heap %.0f MB\n",
			r.Reconcile.Rows, r.Reconcile.Elapsed.Seconds(), r.Reconcile.Rate(), r.ReconcileRows, float64(r.ReconcilePeakHeap)/1e6)
	}
}

// RunImport measures `arkhe import` against the COPY floor: an
// arklet dumpdata export of cfg.Rows records (fixtures.ArkletJSON, with its edge cases) is
// imported end to end with importer.Run into a fresh ledger; then the ark rows it wrote are read
// back and COPYed with one pgx CopyFrom into a second fresh ledger holding the same NAANs and
// shoulders (same schema, indexes and triggers). Both run on the same server with the same
// settings, after a CHECKPOINT each.
func RunImport(ctx context.Context, cfg ImportConfig) (ImportResult, error) {
	res := ImportResult{Config: cfg}
	if cfg.Rows <= 0 {
		return res, errors.New("bench import: --rows must be positive")
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = importer.DefaultBatch
	}
	res.Config = cfg
	srv, err := openServer(ctx, "import", cfg.DatabaseURL, cfg.Dir, "", cfg.Log)
	if err != nil {
		return res, err
	}
	defer func() { _ = srv.close(context.WithoutCancel(ctx)) }() // a kept Dir keeps its data
	dir, logf := srv.dir, srv.logf
	res.Server, res.Settings = srv.desc, srv.settings

	// the dump
	// v2: the generator that never repeats a blade by chance; a kept dump of another version is not reused
	dump := filepath.Join(dir, fmt.Sprintf("arklet-%d-%d-v2.json", cfg.Rows, cfg.Seed))
	if fi, err := os.Stat(dump); err == nil && fi.Size() > 0 {
		res.InputBytes = fi.Size()
	} else {
		logf("writing an arklet dump of %d records", cfg.Rows)
		f, err := os.Create(dump + ".tmp")
		if err != nil {
			return res, fmt.Errorf("bench import: %w", err)
		}
		if err := fixtures.ArkletJSON(f, cfg.Rows, cfg.Seed); err != nil {
			f.Close()
			return res, fmt.Errorf("bench import: %w", err)
		}
		// on disk before any measurement: the write-back of a fresh dump (hundreds of MB) would
		// otherwise compete with the first import for the disk
		if err := f.Sync(); err != nil {
			f.Close()
			return res, fmt.Errorf("bench import: %w", err)
		}
		if err := f.Close(); err != nil {
			return res, fmt.Errorf("bench import: %w", err)
		}
		if err := os.Rename(dump+".tmp", dump); err != nil {
			return res, fmt.Errorf("bench import: %w", err)
		}
		fi, err := os.Stat(dump)
		if err != nil {
			return res, fmt.Errorf("bench import: %w", err)
		}
		res.InputBytes = fi.Size()
	}

	if cfg.Repeat <= 0 {
		cfg.Repeat = 1
	}
	res.Config = cfg
	ib := &importBench{cfg: cfg, srv: srv, dump: dump, logf: logf}
	for run := range cfg.Repeat {
		if err := ib.pair(ctx, run, &res); err != nil {
			return res, err
		}
	}
	byRatio := slices.Clone(res.Pairs)
	slices.SortFunc(byRatio, func(a, b ImportPair) int { return cmp.Compare(a.Ratio(), b.Ratio()) })
	res.ImportPair = byRatio[len(byRatio)/2]
	return res, nil
}

// importBench is what every pair of a RunImport shares.
type importBench struct {
	cfg  ImportConfig
	srv  *server
	dump string
	logf func(format string, args ...any)
}

// pair measures run number run (0-based): arkhe import into a fresh ledger, then the floor into
// another; it appends the pair to res and keeps the counts, peak heap and (first run) reconcile.
func (ib *importBench) pair(ctx context.Context, run int, res *ImportResult) error {
	cfg, srv, admin, dump, dir, logf := ib.cfg, ib.srv, ib.srv.admin, ib.dump, ib.srv.dir, ib.logf
	var pr ImportPair
	// two fresh ledgers
	suffix := strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	importDB, floorDB := "bench_import_"+suffix, "bench_import_floor_"+suffix
	for _, db := range []string{importDB, floorDB} {
		if _, err := admin.Exec(ctx, `create database `+pgx.Identifier{db}.Sanitize()); err != nil {
			return fmt.Errorf("bench import: %w", err)
		}
		defer func() {
			_, _ = admin.Exec(context.WithoutCancel(ctx), `drop database if exists `+pgx.Identifier{db}.Sanitize()+` with (force)`)
		}()
		l, err := ledger.Open(ctx, srv.url(db), 2)
		if err != nil {
			return err
		}
		_, err = l.Init(ctx, ledger.LayoutAuto)
		l.Close()
		if err != nil {
			return err
		}
	}

	// (b) arkhe import, end to end
	l, err := ledger.Open(ctx, srv.url(importDB), 4)
	if err != nil {
		return err
	}
	defer l.Close()
	if _, err := admin.Exec(ctx, `checkpoint`); err != nil {
		return fmt.Errorf("bench import: checkpoint: %w", err)
	}
	where := "in this process"
	if cfg.Exe != "" {
		where = "as its own process"
	}
	logf("(b) arkhe import of %s, batch %d, %s (run %d of %d)", filepath.Base(dump), cfg.BatchSize, where, run+1, cfg.Repeat)
	rejects := filepath.Join(dir, "rejects.csv")
	var peakRSS int64
	if cfg.Exe != "" {
		peakRSS, err = importChild(ctx, cfg, srv.url(importDB), dump, rejects, ib.srv.dataDirs, l, &pr, res)
		if err != nil {
			return err
		}
	} else {
		peakRSS, err = importInProcess(ctx, cfg, l, dump, rejects, run, ib.srv.dataDirs, &pr, res)
		if err != nil {
			return err
		}
	}
	res.PeakRSS = max(res.PeakRSS, peakRSS)

	if cfg.Reconcile && run == 0 {
		logf("reconcile of %s against the imported ledger", filepath.Base(dump))
		runtime.GC()
		stop := sampleHeap()
		start := time.Now()
		sum, err := importer.Reconcile(ctx, l, importer.ReconcileConfig{Exports: []string{dump}, Format: legacy.ArkletJSON,
			Out: filepath.Join(dir, "reconcile.parquet"), OutFormat: report.Parquet})
		res.Reconcile = Phase{Rows: sum.Compared, Elapsed: time.Since(start)}
		res.ReconcilePeakHeap = stop()
		res.ReconcileRows = sum.Rows
		if err != nil {
			return fmt.Errorf("bench import: reconcile: %w", err)
		}
	}

	// (a) the floor
	rows, err := readBackImported(ctx, l.Pool)
	if err != nil {
		return err
	}
	l.Close()
	floor, err := pgxpool.New(ctx, srv.url(floorDB))
	if err != nil {
		return fmt.Errorf("bench import: %w", err)
	}
	defer floor.Close()
	if err := copyImportRegistry(ctx, srv.url(importDB), floor); err != nil {
		return err
	}
	if _, err := admin.Exec(ctx, `checkpoint`); err != nil {
		return fmt.Errorf("bench import: checkpoint: %w", err)
	}
	logf("(a) floor: pgx CopyFrom of the same %d ark rows", len(rows))
	cpu0 := sampleCPU(ib.srv.dataDirs...)
	start := time.Now()
	n, err := floor.CopyFrom(ctx, pgx.Identifier{"ark"}, loader.ImportARKColumns(), pgx.CopyFromRows(rows))
	pr.Floor = Phase{Rows: n, Elapsed: time.Since(start)}
	pr.FloorCPU = sampleCPU(ib.srv.dataDirs...).Sub(cpu0)
	if err != nil {
		return fmt.Errorf("bench import: floor COPY: %w", err)
	}
	res.Pairs = append(res.Pairs, pr)
	return nil
}

// importInProcess runs (b) as `arkhe import` does, inside this process (importer.Run under the
// same GC target and memory limit), and fills pr's Import and ImportCPU and res's counts and
// peak heap; it returns this process's VmHWM during the import.
func importInProcess(ctx context.Context, cfg ImportConfig, l *ledger.Ledger, dump, rejects string, run int, dataDirs []string,
	pr *ImportPair, res *ImportResult) (int64, error) {
	runtime.GC()
	debug.FreeOSMemory()
	resetPeakRSS()
	stopHeap := sampleHeap()
	if cfg.CPUProfile != "" && run == 0 {
		pf, err := os.Create(cfg.CPUProfile)
		if err != nil {
			return 0, fmt.Errorf("bench import: %w", err)
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return 0, fmt.Errorf("bench import: %w", err)
		}
	}
	// as `arkhe import` does (cmd/arkhe): the legacy readers allocate per record
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(400))
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(pipeline.MemoryLimit))
	}
	cpu0 := sampleCPU(dataDirs...)
	start := time.Now()
	rep, err := importer.Run(ctx, l, importer.Config{Inputs: []string{dump}, Format: legacy.ArkletJSON,
		BatchSize: cfg.BatchSize, RejectsPath: rejects})
	pr.Import = Phase{Rows: rep.Total.Imported, Elapsed: time.Since(start)}
	pr.ImportCPU = sampleCPU(dataDirs...).Sub(cpu0)
	if cfg.CPUProfile != "" && run == 0 {
		pprof.StopCPUProfile()
	}
	if h := stopHeap(); h > res.PeakHeap {
		res.PeakHeap = h
	}
	res.Counts = rep.Total
	if err != nil {
		return 0, fmt.Errorf("bench import: arkhe import: %w", err)
	}
	return peakRSS(), nil
}

// importChild runs (b) as `arkhe import` in a process of its own (cfg.Exe) and fills pr's Import
// and ImportCPU (the child's processor time as the client's) and res's counts (the run's
// import_run row); it returns the child's own peak resident set (runChild). Exit 1 (done with rejects: the
// generated dump holds bad records on purpose) counts as done.
func importChild(ctx context.Context, cfg ImportConfig, url, dump, rejects string, dataDirs []string, l *ledger.Ledger,
	pr *ImportPair, res *ImportResult) (int64, error) {
	cmd := exec.CommandContext(ctx, cfg.Exe, "--database-url", url, "--quiet", "import", "--input-format", string(legacy.ArkletJSON),
		"--batch", strconv.Itoa(cfg.BatchSize), "--rejects", rejects, dump)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	run, runErr := runChild(cmd, dataDirs...)
	rss := run.Peak
	pr.Import.Elapsed, pr.ImportCPU = run.Elapsed, run.CPU
	var exit *exec.ExitError
	if runErr != nil && !(errors.As(runErr, &exit) && exit.ExitCode() == 1) {
		return rss, fmt.Errorf("bench import: %s import: %w: %s", cfg.Exe, runErr, strings.TrimSpace(stderr.String()))
	}
	var counts []byte
	if err := l.Pool.QueryRow(ctx, `select counts::text from import_run where finished_at is not null order by id desc limit 1`).Scan(&counts); err != nil {
		return rss, fmt.Errorf("bench import: read the run's counts: %w", err)
	}
	var c importer.Counts
	if err := json.Unmarshal(counts, &c); err != nil {
		return rss, fmt.Errorf("bench import: the run's counts: %w", err)
	}
	res.Counts = c
	pr.Import.Rows = c.Imported
	return rss, nil
}

// readBackImported reads every ark row in insertion order, pre-built as CopyFrom values.
func readBackImported(ctx context.Context, pool *pgxpool.Pool) ([][]any, error) {
	cols := loader.ImportARKColumns()
	cols[slices.Index(cols, "metadata")] = "metadata::text"
	cols[slices.Index(cols, "status")] = "ark_status_text(status)"
	rows, err := pool.Query(ctx, `select `+strings.Join(cols, ", ")+` from ark order by seq`)
	if err != nil {
		return nil, fmt.Errorf("bench import: read back: %w", err)
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		var (
			a, naan, name, status                         string
			shoulder                                      int64
			url, commit, who, what, when, meta, reason, o *string
			check                                         *bool
			created, updated                              *time.Time
			by, run                                       *int64
		)
		if err := rows.Scan(&a, &naan, &shoulder, &name, &url, &commit, &who, &what, &when, &meta, &status,
			&reason, &o, &check, &created, &updated, &by, &run); err != nil {
			return nil, fmt.Errorf("bench import: read back: %w", err)
		}
		var mb []byte
		if meta != nil {
			mb = []byte(*meta)
		}
		out = append(out, []any{a, naan, shoulder, name, url, commit, who, what, when, mb, status, reason, o,
			check, created, updated, by, run})
	}
	return out, rows.Err()
}

// copyImportRegistry gives the floor ledger the import's NAANs, shoulders (same keys) and run.
func copyImportRegistry(ctx context.Context, fromURL string, to *pgxpool.Pool) error {
	from, err := pgx.Connect(ctx, fromURL)
	if err != nil {
		return fmt.Errorf("bench import: %w", err)
	}
	defer from.Close(context.WithoutCancel(ctx))
	for _, q := range []struct{ sel, ins string }{
		{`select naan, name from naan`, `insert into naan (naan, name) values ($1, $2)`},
	} {
		rows, err := from.Query(ctx, q.sel)
		if err != nil {
			return fmt.Errorf("bench import: %w", err)
		}
		vals, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([2]any, error) {
			var a string
			var b *string
			err := r.Scan(&a, &b)
			return [2]any{a, b}, err
		})
		if err != nil {
			return fmt.Errorf("bench import: %w", err)
		}
		for _, v := range vals {
			if _, err := to.Exec(ctx, q.ins, v[0], v[1]); err != nil {
				return fmt.Errorf("bench import: %w", err)
			}
		}
	}
	rows, err := from.Query(ctx, `select id, naan, shoulder, status, check_zone from shoulder order by id`)
	if err != nil {
		return fmt.Errorf("bench import: %w", err)
	}
	type sh struct {
		id                           int64
		naan, shoulder, status, zone string
	}
	shs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (sh, error) {
		var s sh
		err := r.Scan(&s.id, &s.naan, &s.shoulder, &s.status, &s.zone)
		return s, err
	})
	if err != nil {
		return fmt.Errorf("bench import: %w", err)
	}
	for _, s := range shs {
		if _, err := to.Exec(ctx, `insert into shoulder (id, naan, shoulder, status, check_zone) overriding system value
			values ($1, $2, $3, $4, $5)`, s.id, s.naan, s.shoulder, s.status, s.zone); err != nil {
			return fmt.Errorf("bench import: %w", err)
		}
	}
	return nil
}
