// Package bench holds arkhe's benchmarks: the macro runs behind `arkhe bench ...` and the micro
// benchmarks of `go test -bench`. A macro run measures arkhe against the floor — the
// same rows sent with a plain pgx CopyFrom — on the same server with the same settings, in one run, and prints both.
package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
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
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/pipeline"
)

// The registration every bench ledger carries.
const (
	benchNAAN     = "99999"
	benchManager  = "bench"
	benchShoulder = "/x9"
	benchClient   = "bench-minter"
)

// ServerSettings returns the names of the settings printed with every macro benchmark's result
// (mint, import, verify, sizing), in print order.
func ServerSettings() []string {
	return []string{"server_version", "shared_buffers", "wal_level", "fsync", "synchronous_commit",
		"full_page_writes", "max_wal_size", "checkpoint_timeout", "wal_compression", "work_mem", "maintenance_work_mem", "autovacuum"}
}

// MintConfig configures RunMint.
type MintConfig struct {
	// Rows is the manifest size of the measured run (1,000,000 in make bench).
	Rows int
	// Preload is the number of ARKs (with receipts) already in the ledger before the run
	// (10,000,000 in make bench-large).
	Preload int
	// BatchSize and Workers are arkhe's (0: pipeline's defaults); the floor uses the same
	// BatchSize.
	BatchSize, Workers int
	// FloorWorkers is the number of connections the floor COPYs on (0: Workers, the same
	// parallelism as arkhe).
	FloorWorkers int
	// Repeat runs the pair of measurements this many times (0: 1), each into fresh clones, and
	// reports the median rates. Every second pair runs the floor first (see measurePair).
	Repeat int
	// DatabaseURL, if set, is a superuser connection string of an existing server; the bench
	// creates and drops its databases there. Otherwise a local cluster is started in Dir.
	DatabaseURL string
	// Dir holds the local cluster and the manifest. "" makes a temporary directory that is
	// removed afterwards; a given Dir is kept, with the preloaded template ledger, so the next
	// run with the same Preload skips preloading (bench-large).
	Dir string
	// NameCheck and ReceiptCheck are passed to the mint sink.
	NameCheck, ReceiptCheck ledger.Check
	// Seed makes the manifest and the preload repeatable.
	Seed uint64
	// Log receives progress lines; nil discards.
	Log io.Writer
	// PgxCopyFrom makes arkhe send with pgx.CopyFrom and a CopyFromSource instead of its own
	// binary COPY encoder (ledger.MintConfig.PgxCopyFrom).
	PgxCopyFrom bool
	// CPUProfile, if set, is a file to write a Go CPU profile of the mint phase (b) to.
	CPUProfile string
	// Exe, if set, is the arkhe executable: (b) runs `Exe mint` as a process of its own, as a
	// user runs it, and its peak resident set is that process's alone. "" runs (b) in this
	// process (ledger.Ledger.Mint), which CPUProfile, PgxCopyFrom and the sink's time split
	// (MintResult.Stats) need.
	Exe string
}

// Phase is one measured load.
type Phase struct {
	Rows    int64
	Elapsed time.Duration
}

// Rate is rows per second.
func (p Phase) Rate() float64 {
	if p.Elapsed <= 0 {
		return 0
	}
	return float64(p.Rows) / p.Elapsed.Seconds()
}

// MintResult is what RunMint measured.
type MintResult struct {
	Config   MintConfig
	Server   string            // where: "a local cluster in DIR" or "the server at HOST:PORT"
	Settings map[string]string // ServerSettings() as the server reports them
	Floor    Phase             // (a) pgx CopyFrom of the final rows into arkhe's schema
	Mint     Phase             // (b) arkhe mint end to end from a CSV manifest
	Plain    Phase             // (c) CSV COPY of the final rows on one connection into plain_ark
	Summary  pipeline.Summary  // the mint run's summary
	// PeakRSS is arkhe mint's peak resident set in bytes, the largest of the runs: with
	// MintConfig.Exe the child process's own peak (VmHWM of the program it runs), else this process's
	// VmHWM (/proc/self/status, reset before the mint phase; 0 where /proc is missing).
	PeakRSS int64
	// PeakHeap is the peak of live Go heap objects during the mint phase, sampled every 20 ms
	// (in process only).
	PeakHeap int64
	// ManifestBytes is the size of the generated manifest.
	ManifestBytes int64
	// PreloadReused says the preloaded template ledger came from an earlier run.
	PreloadReused bool
	// PreloadElapsed is the time spent preloading (0 when reused).
	PreloadElapsed time.Duration
	// Stats is where arkhe's sink spent its time (summed over workers).
	Stats ledger.MintStats
	// FloorCopyARKs and FloorCommit split the floor's time the same way.
	FloorCopyARKs, FloorCommit time.Duration
	// Pairs are the single measurements; Floor, Mint, Summary and Stats above are the medians.
	Pairs []Pair
	// FloorCPU and MintCPU are the processor time of the median runs (zero server time with
	// DatabaseURL: only a local cluster's processes can be read).
	FloorCPU, MintCPU, PlainCPU CPU

	dataDir string
}

// Ratio is the mint rate over the floor rate (targets: ≥ 0.8 empty, ≥ 0.7 at 10 million):
// with several pairs the median of the pairs' ratios (each pair measured close together in time,
// so a busy machine skews both of its rates alike), else Mint.Rate() / Floor.Rate().
func (r MintResult) Ratio() float64 {
	if len(r.Pairs) > 1 {
		rs := make([]float64, len(r.Pairs))
		for i, p := range r.Pairs {
			rs[i] = p.Ratio()
		}
		slices.Sort(rs)
		return rs[len(rs)/2]
	}
	if r.Floor.Rate() == 0 {
		return 0
	}
	return r.Mint.Rate() / r.Floor.Rate()
}

// PlainRatio is the mint rate over the plain floor's rate (target: ≥ 0.9 empty, ≥ 0.8 at 10
// million): with several pairs the median of the pairs' ratios, else Mint.Rate() / Plain.Rate().
func (r MintResult) PlainRatio() float64 {
	if len(r.Pairs) > 1 {
		rs := make([]float64, len(r.Pairs))
		for i, p := range r.Pairs {
			rs[i] = p.PlainRatio()
		}
		slices.Sort(rs)
		return rs[len(rs)/2]
	}
	if r.Plain.Rate() == 0 {
		return 0
	}
	return r.Mint.Rate() / r.Plain.Rate()
}

// RunMint measures bulk mint against the COPY floor: a template ledger is
// migrated, registered and preloaded with cfg.Preload ARKs and receipts; two databases are cloned
// from it; (b) `arkhe mint` (ledger.Ledger.Mint, the CLI's library call) mints a generated CSV
// manifest of cfg.Rows rows into one; then (a) the floor reads back exactly the ARK and receipt rows
// (b) wrote and COPYs them, pre-built in memory, with pgx CopyFrom in batches of the same size into
// the other (same schema, indexes and triggers). Both run on the same server with the same
// settings, after a CHECKPOINT each.
func RunMint(ctx context.Context, cfg MintConfig) (MintResult, error) {
	res := MintResult{Config: cfg}
	if cfg.Rows <= 0 {
		return res, errors.New("bench mint: --rows must be positive")
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = pipeline.DefaultBatchSize
	}
	if cfg.Workers <= 0 {
		cfg.Workers = pipeline.DefaultWorkers
	}
	if cfg.FloorWorkers <= 0 {
		cfg.FloorWorkers = cfg.Workers
	}
	if cfg.Repeat <= 0 {
		cfg.Repeat = 1
	}
	if cfg.Exe != "" && (cfg.CPUProfile != "" || cfg.PgxCopyFrom) {
		return res, errors.New("bench mint: a CPU profile and pgx CopyFrom need arkhe mint in this process")
	}
	res.Config = cfg
	srv, err := openServer(ctx, "mint", cfg.DatabaseURL, cfg.Dir, "", cfg.Log)
	if err != nil {
		return res, err
	}
	defer func() { _ = srv.close(context.WithoutCancel(ctx)) }() // a kept Dir keeps its data
	admin, dir, logf := srv.admin, srv.dir, srv.logf
	res.Server, res.Settings, res.dataDir = srv.desc, srv.settings, srv.dataDir

	// the template ledger
	tpl := fmt.Sprintf("bench_tpl_%s_%d", ledger.SchemaHash(), cfg.Preload)
	var exists bool
	if err := admin.QueryRow(ctx, `select exists (select 1 from pg_database where datname = $1)`, tpl).Scan(&exists); err != nil {
		return res, fmt.Errorf("bench mint: %w", err)
	}
	if exists {
		res.PreloadReused = true
		logf("reusing template ledger %s (%d ARKs preloaded)", tpl, cfg.Preload)
		if err := ensurePlainTable(ctx, srv, tpl, logf); err != nil {
			return res, err
		}
	} else {
		start := time.Now()
		if err := buildMintTemplate(ctx, srv, tpl, cfg, logf); err != nil {
			return res, err
		}
		res.PreloadElapsed = time.Since(start)
	}
	// the manifest
	manifest := filepath.Join(dir, fmt.Sprintf("manifest-%d-%d.csv", cfg.Rows, cfg.Seed))
	if fi, err := os.Stat(manifest); err == nil && fi.Size() > 0 {
		res.ManifestBytes = fi.Size()
	} else {
		logf("writing manifest of %d rows", cfg.Rows)
		st, err := fixtures.CreateManifestCSV(manifest, fixtures.ManifestConfig{Rows: cfg.Rows, Seed: cfg.Seed, Prefix: "bench-"})
		if err != nil {
			return res, fmt.Errorf("bench mint: %w", err)
		}
		res.ManifestBytes = st.Bytes
	}

	var prev [][]any
	for i := range cfg.Repeat {
		p, rows, err := measurePair(ctx, srv, tpl, manifest, cfg, i, &prev, logf)
		res.Pairs = append(res.Pairs, p)
		if err != nil {
			return res, err
		}
		prev = rows
	}
	// medians by rate; memory: the largest peak; the sink's timings: the median pair's
	mints := slices.Clone(res.Pairs)
	slices.SortFunc(mints, func(a, b Pair) int { return cmp.Compare(a.Mint.Rate(), b.Mint.Rate()) })
	floors := slices.Clone(res.Pairs)
	slices.SortFunc(floors, func(a, b Pair) int { return cmp.Compare(a.Floor.Rate(), b.Floor.Rate()) })
	med := mints[len(mints)/2]
	res.Mint, res.Summary, res.Stats, res.MintCPU = med.Mint, med.Summary, med.Stats, med.MintCPU
	fm := floors[len(floors)/2]
	res.Floor, res.FloorCopyARKs, res.FloorCommit = fm.Floor, fm.FloorCopyARKs, fm.FloorCommit
	res.FloorCPU = fm.FloorCPU
	plains := slices.Clone(res.Pairs)
	slices.SortFunc(plains, func(a, b Pair) int { return cmp.Compare(a.Plain.Rate(), b.Plain.Rate()) })
	res.Plain, res.PlainCPU = plains[len(plains)/2].Plain, plains[len(plains)/2].PlainCPU
	for _, p := range res.Pairs {
		res.PeakRSS, res.PeakHeap = max(res.PeakRSS, p.PeakRSS), max(res.PeakHeap, p.PeakHeap)
	}
	return res, nil
}

// Pair is one measurement of (b) then (a), each into a fresh clone of the template ledger.
type Pair struct {
	Floor, Mint Phase
	// Plain is (c), the plain floor: the same rows as CSV on one connection into plain_ark.
	Plain   Phase
	Summary pipeline.Summary
	Stats   ledger.MintStats
	// PeakRSS is the peak resident set of arkhe mint: the child process's maximum (MintConfig.Exe),
	// else this process's VmHWM during (b). PeakHeap is the peak live Go heap during (b), in
	// process only.
	PeakRSS, PeakHeap          int64
	FloorCopyARKs, FloorCommit time.Duration
	FloorCPU, MintCPU          CPU
	PlainCPU                   CPU
}

// Ratio is the pair's mint rate over its floor rate.
func (p Pair) Ratio() float64 {
	if p.Floor.Rate() == 0 {
		return 0
	}
	return p.Mint.Rate() / p.Floor.Rate()
}

// PlainRatio is the pair's mint rate over its plain floor's rate.
func (p Pair) PlainRatio() float64 {
	if p.Plain.Rate() == 0 {
		return 0
	}
	return p.Mint.Rate() / p.Plain.Rate()
}

// measurePair clones the template twice, runs (b) arkhe mint of manifest into one and (a) the
// floor and (c) the plain floor into the other (its ark table and its plain_ark table), and drops
// both. With prev (the rows an earlier pair's arkhe run wrote) the floors go first and send those
// rows, so over repeated runs neither side always runs first on a fresh server state (*prev is
// cleared before (b) runs); otherwise arkhe goes first and the floors send exactly the rows it
// wrote, which are returned for the next pair.
func measurePair(ctx context.Context, srv *server, tpl, manifest string, cfg MintConfig, i int,
	prev *[][]any, logf func(string, ...any)) (Pair, [][]any, error) {
	admin, dir, dataDir := srv.admin, srv.dir, srv.dataDir
	var p Pair
	suffix := strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	mintDB, floorDB := "bench_mint_"+suffix, "bench_floor_"+suffix
	for _, db := range []string{mintDB, floorDB} {
		logf("cloning %s from %s", db, tpl)
		if err := cloneDatabase(ctx, admin, db, tpl); err != nil {
			return p, nil, err
		}
		defer func() {
			_, _ = admin.Exec(context.WithoutCancel(ctx), `drop database if exists `+pgx.Identifier{db}.Sanitize()+` with (force)`)
		}()
	}

	// (a) the floor: the final rows pre-built, plain CopyFrom; then (c) the plain floor: the same
	// rows as CSV on one connection into plain_ark
	floors := func(arks [][]any) error {
		floorPool, err := pgxpool.New(ctx, srv.url(floorDB))
		if err != nil {
			return fmt.Errorf("bench mint: %w", err)
		}
		defer floorPool.Close()
		if _, err := admin.Exec(ctx, `checkpoint`); err != nil {
			return fmt.Errorf("bench mint: checkpoint: %w", err)
		}
		logf("(a) floor: pgx CopyFrom of %d final rows, batch %d, %d connection(s) (run %d of %d)", len(arks), cfg.BatchSize, cfg.FloorWorkers, i+1, cfg.Repeat)
		cpu0 := sampleCPU(dataDir)
		start := time.Now()
		if err := copyFloorRows(ctx, floorPool, arks, cfg.BatchSize, cfg.FloorWorkers, &p); err != nil {
			return err
		}
		p.Floor = Phase{Rows: int64(len(arks)), Elapsed: time.Since(start)}
		p.FloorCPU = sampleCPU(dataDir).Sub(cpu0)
		csvPath := filepath.Join(dir, "plain-rows.csv")
		if err := writePlainCSV(csvPath, arks); err != nil {
			return err
		}
		defer os.Remove(csvPath)
		if _, err := admin.Exec(ctx, `checkpoint`); err != nil {
			return fmt.Errorf("bench mint: checkpoint: %w", err)
		}
		logf("(c) plain floor: CSV COPY of %d rows on one connection into plain_ark (run %d of %d)", len(arks), i+1, cfg.Repeat)
		cpu0 = sampleCPU(dataDir)
		start = time.Now()
		n, err := copyPlainCSV(ctx, srv.url(floorDB), csvPath)
		if err != nil {
			return err
		}
		p.Plain = Phase{Rows: n, Elapsed: time.Since(start)}
		p.PlainCPU = sampleCPU(dataDir).Sub(cpu0)
		return nil
	}
	if *prev != nil {
		err := floors(*prev)
		*prev = nil // not held while (b) runs: (b)'s peak memory is its own
		if err != nil {
			return p, nil, err
		}
	}

	// (b) arkhe mint, end to end
	l, err := ledger.Open(ctx, srv.url(mintDB), 2)
	if err != nil {
		return p, nil, err
	}
	defer l.Close()
	var maxSeq int64
	if err := l.Pool.QueryRow(ctx, `select coalesce(max(seq), 0) from ark`).Scan(&maxSeq); err != nil {
		return p, nil, fmt.Errorf("bench mint: %w", err)
	}
	if _, err := admin.Exec(ctx, `checkpoint`); err != nil {
		return p, nil, fmt.Errorf("bench mint: checkpoint: %w", err)
	}
	where := "in this process"
	if cfg.Exe != "" {
		where = "as its own process"
	}
	logf("(b) arkhe mint of %d rows, batch %d, %d workers, %s (run %d of %d)", cfg.Rows, cfg.BatchSize, cfg.Workers, where, i+1, cfg.Repeat)
	job := mintJob{url: srv.url(mintDB), manifest: manifest, mintMap: filepath.Join(dir, "mintmap.csv"),
		rejects: filepath.Join(dir, "rejects.csv"), profile: cfg.CPUProfile != "" && i == 0}
	if cfg.Exe != "" {
		err = mintChild(ctx, cfg, job, dataDir, &p)
	} else {
		err = mintInProcess(ctx, cfg, job, dataDir, &p)
	}
	if err != nil {
		return p, nil, err
	}
	if p.Summary.Minted != int64(cfg.Rows) {
		return p, nil, fmt.Errorf("bench mint: arkhe minted %d of %d rows (%d rejected)", p.Summary.Minted, cfg.Rows, p.Summary.Rejected)
	}
	arks, err := readBackMinted(ctx, l.Pool, maxSeq)
	if err != nil {
		return p, nil, err
	}
	l.Close()
	if p.Floor.Rows == 0 {
		if err := floors(arks); err != nil {
			return p, nil, err
		}
		logf("run %d (arkhe first): floor %.0f rows/s, plain floor %.0f rows/s, arkhe %.0f rows/s, ratios %.2f and %.2f; CPU floor %.1f s, plain %.1f s, arkhe %.1f s", i+1,
			p.Floor.Rate(), p.Plain.Rate(), p.Mint.Rate(), p.Ratio(), p.PlainRatio(), p.FloorCPU.Total().Seconds(), p.PlainCPU.Total().Seconds(), p.MintCPU.Total().Seconds())
		return p, arks, nil
	}
	logf("run %d (floors first): floor %.0f rows/s, plain floor %.0f rows/s, arkhe %.0f rows/s, ratios %.2f and %.2f; CPU floor %.1f s, plain %.1f s, arkhe %.1f s", i+1,
		p.Floor.Rate(), p.Plain.Rate(), p.Mint.Rate(), p.Ratio(), p.PlainRatio(), p.FloorCPU.Total().Seconds(), p.PlainCPU.Total().Seconds(), p.MintCPU.Total().Seconds())
	return p, nil, nil
}

// mintJob is what (b) mints: into the ledger at url, the manifest, with the mint map and reject
// file it writes; profile asks for the CPU profile (in process only).
type mintJob struct {
	url, manifest, mintMap, rejects string
	profile                         bool
}

// mintInProcess runs (b) as `arkhe mint` does, inside this process (ledger.Ledger.Mint under the
// same memory limit), and fills p's Mint, MintCPU, Summary, Stats, PeakRSS (this process's
// VmHWM, reset before) and PeakHeap.
func mintInProcess(ctx context.Context, cfg MintConfig, job mintJob, dataDir string, p *Pair) error {
	l, err := ledger.Open(ctx, job.url, int32(cfg.Workers+2))
	if err != nil {
		return err
	}
	defer l.Close()
	if os.Getenv("GOMEMLIMIT") == "" { // as arkhe mint runs
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(pipeline.MemoryLimit))
	}
	runtime.GC()
	debug.FreeOSMemory()
	resetPeakRSS()
	stopHeap := sampleHeap()
	if job.profile {
		f, err := os.Create(cfg.CPUProfile)
		if err != nil {
			return fmt.Errorf("bench mint: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("bench mint: %w", err)
		}
	}
	cpu0 := sampleCPU(dataDir)
	start := time.Now()
	rep, err := l.Mint(ctx, ledger.MintJob{
		Mint: ledger.MintConfig{ClientID: benchClient, NameCheck: cfg.NameCheck, ReceiptCheck: cfg.ReceiptCheck,
			PgxCopyFrom: cfg.PgxCopyFrom},
		Inputs:      []string{job.manifest},
		Workers:     cfg.Workers,
		BatchSize:   cfg.BatchSize,
		MintMapPath: job.mintMap,
		RejectsPath: job.rejects,
	})
	p.Mint = Phase{Rows: rep.Summary.Minted, Elapsed: time.Since(start)}
	p.MintCPU = sampleCPU(dataDir).Sub(cpu0)
	if job.profile {
		pprof.StopCPUProfile()
	}
	p.PeakHeap = stopHeap()
	p.PeakRSS = peakRSS()
	p.Summary, p.Stats = rep.Summary, rep.Stats
	if err != nil {
		return fmt.Errorf("bench mint: arkhe mint: %w", err)
	}
	return nil
}

// mintChild runs (b) as `arkhe mint` in a process of its own (cfg.Exe), as a user runs it, and
// fills p's Mint, MintCPU (the child's processor time as the client's), Summary (read from the
// ledger: the rows minted) and PeakRSS (the child's own peak resident set, runChild).
func mintChild(ctx context.Context, cfg MintConfig, job mintJob, dataDir string, p *Pair) error {
	l, err := ledger.Open(ctx, job.url, 2)
	if err != nil {
		return err
	}
	defer l.Close()
	var before int64
	if err := l.Pool.QueryRow(ctx, `select count(*) from ark`).Scan(&before); err != nil {
		return fmt.Errorf("bench mint: %w", err)
	}
	cmd := exec.CommandContext(ctx, cfg.Exe, "--database-url", job.url, "--quiet", "mint", "--client", benchClient,
		"--batch", strconv.Itoa(cfg.BatchSize), "--workers", strconv.Itoa(cfg.Workers),
		"--name-check", cfg.NameCheck.String(), "--receipt-check", cfg.ReceiptCheck.String(),
		"--out", job.mintMap, "--rejects", job.rejects, job.manifest)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cpu0 := sampleCPU(dataDir)
	start := time.Now()
	peak, cpu, runErr := runChild(cmd)
	p.Mint.Elapsed = time.Since(start)
	p.MintCPU = CPU{Server: sampleCPU(dataDir).Sub(cpu0).Server, Client: cpu}
	p.PeakRSS = peak
	if runErr != nil {
		return fmt.Errorf("bench mint: %s mint: %w: %s", cfg.Exe, runErr, strings.TrimSpace(stderr.String()))
	}
	var after int64
	if err := l.Pool.QueryRow(ctx, `select count(*) from ark`).Scan(&after); err != nil {
		return fmt.Errorf("bench mint: %w", err)
	}
	p.Mint.Rows = after - before
	p.Summary = pipeline.Summary{Read: int64(cfg.Rows), Minted: p.Mint.Rows, Elapsed: p.Mint.Elapsed}
	return nil
}

// plainARKTable is the plain floor's table: the columns of the final rows (readBackMinted's, and
// status at its default 'public', as a minted row holds it), typed as ark's, with only the ARK primary key and the receipt's unique index (client, request
// ID): no trigger, foreign key, check, identity or other index.
const plainARKTable = `create table plain_ark (
	ark varchar(272) collate "C" primary key, naan varchar(16) collate "C", shoulder_id bigint,
	assigned_name varchar(255) collate "C", url varchar(2048), commitment text, erc_who text, erc_what text,
	erc_when text, status ark_status default 'public', change_seq integer, created_at timestamptz, created_by bigint,
	request_id varchar(255) collate "C", payload_digest bytea);
create unique index plain_ark_receipt on plain_ark (created_by, request_id)`

// writePlainCSV writes the rows (readBackMinted's) as the CSV a psql \copy reads: NULL as an
// empty field, every string quoted, bytea as \x hex, times in RFC 3339 with microseconds.
func writePlainCSV(path string, arks [][]any) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench mint: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	quote := strings.NewReplacer(`"`, `""`)
	for _, row := range arks {
		for j, v := range row {
			if j > 0 {
				w.WriteByte(',')
			}
			switch x := v.(type) {
			case string:
				w.WriteString(`"` + quote.Replace(x) + `"`)
			case *string:
				if x != nil {
					w.WriteString(`"` + quote.Replace(*x) + `"`)
				}
			case int64:
				w.WriteString(strconv.FormatInt(x, 10))
			case *int32:
				if x != nil {
					w.WriteString(strconv.Itoa(int(*x)))
				}
			case time.Time:
				w.WriteString(x.UTC().Format("2006-01-02T15:04:05.999999Z07:00"))
			case []byte:
				if x != nil {
					w.WriteString(`\x` + hex.EncodeToString(x))
				}
			default:
				f.Close()
				return fmt.Errorf("bench mint: plain floor: value of type %T in column %d", v, j+1)
			}
		}
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("bench mint: %w", err)
	}
	return f.Close()
}

// copyPlainCSV sends the CSV file at path to plain_ark as psql's \copy does: one connection, one
// COPY ... FROM STDIN (format csv), committed on its own. It returns the rows copied.
func copyPlainCSV(ctx context.Context, url, path string) (int64, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, fmt.Errorf("bench mint: plain floor: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("bench mint: %w", err)
	}
	defer f.Close()
	tag, err := conn.PgConn().CopyFrom(ctx, f, `copy plain_ark (`+strings.Join(floorARKColumns(), ", ")+`) from stdin (format csv)`)
	if err != nil {
		return 0, fmt.Errorf("bench mint: plain floor: %w", err)
	}
	return tag.RowsAffected(), nil
}

// buildMintTemplate creates the template ledger tpl: migrated, registered, preloaded.
func buildMintTemplate(ctx context.Context, srv *server, tpl string, cfg MintConfig, logf func(string, ...any)) error {
	admin := srv.admin
	building := tpl + "_building"
	if _, err := admin.Exec(ctx, `drop database if exists `+pgx.Identifier{building}.Sanitize()+` with (force)`); err != nil {
		return fmt.Errorf("bench mint: %w", err)
	}
	if _, err := admin.Exec(ctx, `create database `+pgx.Identifier{building}.Sanitize()); err != nil {
		return fmt.Errorf("bench mint: %w", err)
	}
	l, err := ledger.Open(ctx, srv.url(building), 4)
	if err != nil {
		return err
	}
	defer l.Close()
	if _, err := l.Init(ctx, ledger.LayoutAuto); err != nil {
		return err
	}
	if err := RegisterBench(ctx, l); err != nil {
		return err
	}
	if cfg.Preload > 0 {
		logf("preloading %d ARKs with receipts into the template ledger (kept for the next run when --dir is given)", cfg.Preload)
		if err := PreloadARKs(ctx, l, cfg.Preload, cfg.Seed, cfg.BatchSize, logf); err != nil {
			return err
		}
	}
	if err := createPlainTable(ctx, l.Pool, cfg.Preload, logf); err != nil {
		return err
	}
	if cfg.Preload > 0 {
		logf("vacuum analyze")
		if _, err := l.Pool.Exec(ctx, `vacuum analyze`); err != nil {
			return fmt.Errorf("bench mint: %w", err)
		}
	}
	l.Close()
	if _, err := admin.Exec(ctx, `alter database `+pgx.Identifier{building}.Sanitize()+` rename to `+pgx.Identifier{tpl}.Sanitize()); err != nil {
		return fmt.Errorf("bench mint: %w", err)
	}
	return nil
}

// createPlainTable creates the plain floor's table plain_ark in the template ledger of pool
// (plainARKTable) holding what its ark table holds, the preload's rows copied in the order they
// were minted (so its primary key fills by random inserts, as arkhe's does).
func createPlainTable(ctx context.Context, pool *pgxpool.Pool, preload int, logf func(string, ...any)) error {
	if _, err := pool.Exec(ctx, plainARKTable); err != nil {
		return fmt.Errorf("bench mint: create plain_ark: %w", err)
	}
	if preload > 0 {
		logf("copying the %d preloaded ARKs into plain_ark, the plain floor's table", preload)
		cols := strings.Join(floorARKColumns(), ", ")
		if _, err := pool.Exec(ctx, `insert into plain_ark (`+cols+`) select `+cols+` from ark order by seq`); err != nil {
			return fmt.Errorf("bench mint: fill plain_ark: %w", err)
		}
	}
	return nil
}

// ensurePlainTable adds plain_ark to a template ledger kept by an earlier run that has none.
func ensurePlainTable(ctx context.Context, srv *server, tpl string, logf func(string, ...any)) error {
	pool, err := pgxpool.New(ctx, srv.url(tpl))
	if err != nil {
		return fmt.Errorf("bench mint: %w", err)
	}
	defer pool.Close()
	var has bool
	if err := pool.QueryRow(ctx, `select to_regclass('plain_ark') is not null`).Scan(&has); err != nil {
		return fmt.Errorf("bench mint: %w", err)
	}
	if has {
		return nil
	}
	var n int64
	if err := pool.QueryRow(ctx, `select count(*) from ark`).Scan(&n); err != nil {
		return fmt.Errorf("bench mint: %w", err)
	}
	return createPlainTable(ctx, pool, int(n), logf)
}

// RegisterBench registers NAAN 99999, manager "bench" holding /x9 (its default) and the client
// "bench-minter" that mints there.
func RegisterBench(ctx context.Context, l *ledger.Ledger) error {
	if _, err := l.AddNAAN(ctx, ledger.NAAN{NAAN: benchNAAN, Name: "bench"}); err != nil {
		return err
	}
	if _, err := l.AddManager(ctx, ledger.Manager{NAAN: benchNAAN, Name: benchManager}); err != nil {
		return err
	}
	if _, err := l.AddShoulder(ctx, ledger.Shoulder{NAAN: benchNAAN, Shoulder: benchShoulder, Manager: benchManager}, 0); err != nil {
		return err
	}
	if err := l.SetDefaultShoulder(ctx, benchNAAN, benchManager, benchShoulder); err != nil {
		return err
	}
	return l.AddClient(ctx, ledger.Client{ClientID: benchClient, NAAN: benchNAAN, Manager: benchManager,
		Authority: "manager", Scopes: []string{"ark:mint"}})
}

// PreloadARKs mints n ARKs with receipts (request IDs "pre-000000001"...) into the bench shoulder
// through the mint sink itself, names drawn from a seeded source and looked up before COPY.
func PreloadARKs(ctx context.Context, l *ledger.Ledger, n int, seed uint64, batch int, logf func(string, ...any)) error {
	var s [32]byte
	copy(s[:], fmt.Sprintf("arkhe-preload-%d", seed))
	sink, err := l.PrepareMint(ctx, ledger.MintConfig{ClientID: benchClient, NameCheck: ledger.CheckAlways, ReceiptCheck: ledger.CheckNever,
		Blades: func(int) ark.BladeSource { return ark.NewSeededBlades(s) }})
	if err != nil {
		return err
	}
	w, err := sink.OpenWorker(ctx, 0)
	if err != nil {
		return err
	}
	defer w.Close()
	b := &pipeline.Batch{Rows: make([]pipeline.Row, 0, batch)}
	start := time.Now()
	for done := 0; done < n; {
		b.Rows = b.Rows[:0]
		b.Draws, b.Collisions = 0, 0
		for i := done; i < n && len(b.Rows) < batch; i++ {
			var rec pipeline.Record
			rec.Set(pipeline.FieldRequestID, fmt.Sprintf("pre-%09d", i+1))
			rec.Set(pipeline.FieldURL, "https://preload.example.org/objects/"+strconv.Itoa(i+1))
			rec.Set(pipeline.FieldWhat, "Preloaded object "+strconv.Itoa(i+1))
			rec.Set(pipeline.FieldWhen, strconv.Itoa(1900+i%125))
			rec.Source = pipeline.Location{File: "preload", Record: i + 1}
			b.Rows = append(b.Rows, pipeline.Row{Seq: int64(i), Record: rec, Digest: pipeline.PayloadDigest(&rec)})
		}
		if err := w.Write(ctx, b); err != nil {
			return fmt.Errorf("bench preload: %w", err)
		}
		for i := range b.Rows {
			if b.Rows[i].Outcome == pipeline.OutcomeRejected {
				return fmt.Errorf("bench preload: row %d rejected: %v", b.Rows[i].Seq, b.Rows[i].Reject)
			}
		}
		done += len(b.Rows)
		if done%1_000_000 < batch || done == n {
			logf("preloaded %d of %d (%.0f rows/s)", done, n, float64(done)/time.Since(start).Seconds())
		}
	}
	return nil
}

// cloneDatabase creates db from template tpl (FILE_COPY: no WAL for the copy on PostgreSQL 15+).
func cloneDatabase(ctx context.Context, admin *pgxpool.Pool, db, tpl string) error {
	var num int
	if err := admin.QueryRow(ctx, `select current_setting('server_version_num')::int`).Scan(&num); err != nil {
		return fmt.Errorf("bench mint: %w", err)
	}
	q := `create database ` + pgx.Identifier{db}.Sanitize() + ` template ` + pgx.Identifier{tpl}.Sanitize()
	if num >= 150000 {
		q += ` strategy file_copy`
	}
	if _, err := admin.Exec(ctx, q); err != nil {
		return fmt.Errorf("bench mint: clone %s: %w", tpl, err)
	}
	return nil
}

// readSettings reads ServerSettings().
func readSettings(ctx context.Context, pool interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}) (map[string]string, error) {
	rows, err := pool.Query(ctx, `select name, coalesce(current_setting(name, true), '') from unnest($1::text[]) name`, ServerSettings())
	if err != nil {
		return nil, fmt.Errorf("bench: read server settings: %w", err)
	}
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, fmt.Errorf("bench: read server settings: %w", err)
		}
		out[k] = v
	}
	return out, rows.Err()
}

// readBackMinted reads the ARK rows (each with its receipt: request_id, payload_digest) minted
// after seq, in insertion order, pre-built as the values pgx CopyFrom sends (status left to its
// default 'public' and change_seq as stored, NULL, as mint sends them).
func readBackMinted(ctx context.Context, pool *pgxpool.Pool, afterSeq int64) (arks [][]any, err error) {
	rows, err := pool.Query(ctx, `select ark, naan, shoulder_id, assigned_name, url, commitment,
			erc_who, erc_what, erc_when, change_seq, created_at, created_by, request_id, payload_digest
		from ark where seq > $1 order by seq`, afterSeq)
	if err != nil {
		return nil, fmt.Errorf("bench mint: read back: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			key, naan, name, requestID       string
			shoulderID, createdBy            int64
			url, commitment, who, what, when *string
			changeSeq                        *int32
			createdAt                        time.Time
			digest                           []byte
		)
		if err := rows.Scan(&key, &naan, &shoulderID, &name, &url, &commitment, &who, &what, &when, &changeSeq,
			&createdAt, &createdBy, &requestID, &digest); err != nil {
			return nil, fmt.Errorf("bench mint: read back: %w", err)
		}
		arks = append(arks, []any{key, naan, shoulderID, name, url, commitment, who, what, when, changeSeq,
			createdAt, createdBy, requestID, digest})
	}
	return arks, rows.Err()
}

// floorARKColumns are the columns the floor COPYs, in readBackMinted's order: the ARK and its
// receipt, on one row.
func floorARKColumns() []string {
	return []string{"ark", "naan", "shoulder_id", "assigned_name", "url", "commitment", "erc_who", "erc_what", "erc_when",
		"change_seq", "created_at", "created_by", "request_id", "payload_digest"}
}

// copyFloorRows sends the rows in batches of batch, each batch one transaction with one COPY ark,
// on workers connections (batches dealt round robin).
func copyFloorRows(ctx context.Context, pool *pgxpool.Pool, arks [][]any, batch, workers int, res *Pair) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	errs := make([]error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := pool.Acquire(ctx)
			if err != nil {
				errs[w] = err
				return
			}
			defer conn.Release()
			for lo, k := 0, 0; lo < len(arks); lo, k = lo+batch, k+1 {
				if k%workers != w {
					continue
				}
				hi := min(lo+batch, len(arks))
				var t0, t1 time.Time
				err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
					t0 = time.Now()
					_, err := tx.CopyFrom(ctx, pgx.Identifier{"ark"}, floorARKColumns(), pgx.CopyFromRows(arks[lo:hi]))
					t1 = time.Now()
					return err
				})
				mu.Lock()
				res.FloorCopyARKs += t1.Sub(t0)
				res.FloorCommit += time.Since(t1)
				mu.Unlock()
				if err != nil {
					errs[w] = fmt.Errorf("bench mint: floor batch at %d: %w", lo, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// resetPeakRSS resets VmHWM (Linux: writing 5 to /proc/self/clear_refs); harmless elsewhere.
func resetPeakRSS() {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSS returns this process's VmHWM in bytes, 0 when unavailable.
func peakRSS() int64 { return vmHWM("/proc/self/status") }

// vmHWM returns VmHWM, the peak resident set, from a /proc/PID/status file in bytes; 0 when
// unavailable.
func vmHWM(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// Print writes the result as the one-screen report of `arkhe bench mint`.
func (r MintResult) Print(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "arkhe bench mint: %d rows into a ledger of %d ARKs, batch %d, %d workers (floor: %d connection(s))\n",
		c.Rows, c.Preload, c.BatchSize, c.Workers, c.FloorWorkers)
	printServer(w, r.Server, r.Settings)
	if c.Preload > 0 {
		if r.PreloadReused {
			fmt.Fprintf(w, "preload: %d ARKs, reused from an earlier run\n", c.Preload)
		} else {
			fmt.Fprintf(w, "preload: %d ARKs in %.1f s\n", c.Preload, r.PreloadElapsed.Seconds())
		}
	}
	fmt.Fprintf(w, "(a) floor, pgx CopyFrom of the final rows:  %9.0f rows/s  (%d rows in %.2f s; arkhe's schema, %d connection(s))\n",
		r.Floor.Rate(), r.Floor.Rows, r.Floor.Elapsed.Seconds(), c.FloorWorkers)
	fmt.Fprintf(w, "(c) plain floor, CSV COPY, one connection:  %9.0f rows/s  (%d rows in %.2f s; a table with the ARK primary key and the receipt index only)\n",
		r.Plain.Rate(), r.Plain.Rows, r.Plain.Elapsed.Seconds())
	fmt.Fprintf(w, "(b) arkhe mint from CSV, end to end:       %9.0f rows/s  (%d rows in %.2f s; manifest %.1f MB)\n",
		r.Mint.Rate(), r.Mint.Rows, r.Mint.Elapsed.Seconds(), float64(r.ManifestBytes)/1e6)
	fmt.Fprintf(w, "ratio (b)/(a): %.2f   ratio (b)/(c): %.2f\n", r.Ratio(), r.PlainRatio())
	if len(r.Pairs) > 1 {
		fmt.Fprintf(w, "  (medians of the %d runs' ratios; rates above are the median rates; per run floor / plain / arkhe rows/s:", len(r.Pairs))
		for _, p := range r.Pairs {
			fmt.Fprintf(w, " %.0f/%.0f/%.0f", p.Floor.Rate(), p.Plain.Rate(), p.Mint.Rate())
		}
		fmt.Fprintln(w, ")")
	}
	if c.Exe != "" {
		fmt.Fprintf(w, "mint: %d rows minted; peak resident set of the arkhe mint process: %.0f MB (its VmHWM; largest of the runs)\n",
			r.Summary.Minted, float64(r.PeakRSS)/1e6)
	} else {
		fmt.Fprintf(w, "mint: %d draws, %d collisions, %d batches, %d retried (%d after a conflict); peak memory during (b), in this process: VmHWM %.0f MB, Go heap %.0f MB\n",
			r.Summary.Draws, r.Summary.Collisions, r.Summary.Batches, r.Stats.Retries, r.Stats.Conflicts, float64(r.PeakRSS)/1e6, float64(r.PeakHeap)/1e6)
	}
	if r.MintCPU.Total() > 0 {
		fmt.Fprintf(w, "CPU time (server + client): (a) %.1f s + %.1f s, (c) %.1f s + %.1f s, (b) %.1f s + %.1f s; (a)/(b) %.2f, (c)/(b) %.2f\n",
			r.FloorCPU.Server.Seconds(), r.FloorCPU.Client.Seconds(), r.PlainCPU.Server.Seconds(), r.PlainCPU.Client.Seconds(),
			r.MintCPU.Server.Seconds(), r.MintCPU.Client.Seconds(),
			r.FloorCPU.Total().Seconds()/r.MintCPU.Total().Seconds(), r.PlainCPU.Total().Seconds()/r.MintCPU.Total().Seconds())
	}
	if c.Exe == "" { // the sink's time split is known in process only
		st := r.Stats
		fmt.Fprintf(w, "time in (b)'s sink, summed over workers: receipt lookups %.2f s (%d batches read whole), name lookups %.2f s (%d names), settle %.2f s, COPY ark %.2f s, counters+commit %.2f s\n",
			st.ReceiptLookups.Seconds(), st.CheckedBatches, st.NameLookups.Seconds(), st.LookedUpNames, st.Settle.Seconds(),
			st.CopyARKs.Seconds(), st.Commit.Seconds())
	}
	fmt.Fprintf(w, "time in (a), summed over connections: COPY ark %.2f s, commit %.2f s\n",
		r.FloorCopyARKs.Seconds(), r.FloorCommit.Seconds())
}
