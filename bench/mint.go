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
	"github.com/arkhe-ledger/arkhe/loader"
	"github.com/arkhe-ledger/arkhe/pipeline"
	"github.com/arkhe-ledger/arkhe/sizing"
	"github.com/arkhe-ledger/arkhe/textin"
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
	// BatchSize and Workers are arkhe's (0: pipeline's defaults); the floor sends the batches
	// arkhe's pipeline makes with the same BatchSize (floorBatches: each connection's first
	// three ramped, pipeline.RampBatchSize).
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
	NameCheck, ReceiptCheck loader.Check
	// Seed makes the manifest and the preload repeatable.
	Seed uint64
	// Log receives progress lines; nil discards.
	Log io.Writer
	// PgxCopyFrom makes arkhe send with pgx.CopyFrom and a CopyFromSource instead of its own
	// binary COPY encoder (loader.MintConfig.PgxCopyFrom).
	PgxCopyFrom bool
	// CPUProfile, if set, is a file to write a Go CPU profile of the mint phase (b) to.
	CPUProfile string
	// Exe, if set, is the arkhe executable: (b) runs `Exe mint` as a process of its own, as a
	// user runs it (on Citus given every node's URL, the coordinator's first, as --database-url
	// once per node), and its peak resident set is that process's alone. "" runs (b) in this
	// process (loader.Mint), which CPUProfile, PgxCopyFrom and the sink's time split
	// (MintResult.Stats) need.
	Exe string
	// Citus runs the measurement on a throw-away Citus cluster on this machine (a coordinator
	// and two workers, Unix sockets, the embedded default's settings on every node) and, for
	// comparison, on a single node of the same settings, in one run: the pairs alternate
	// between the two (single node, then Citus, Repeat times). arkhe's workers write through
	// every node in turn (loader.MintConfig.EntryNodes: worker w through node w mod 3), and the
	// floor's connection w through the same node, its session with the setting arkhe's mint
	// workers have (loader.CitusMintSessionSQL). The plain floor (c) runs on the single node
	// only: its table's unique receipt index (client, request ID) cannot exist on a table
	// distributed by the ARK string. DatabaseURL must be empty.
	Citus bool
	// ReceiptOnRow adds, with Citus, a fourth phase to the first Citus pair: (d) the floor's
	// rows COPYed into a clone whose receipts are the ark row's columns, as on a single node,
	// with a receipt index that is not unique (on ark, distributed by the ARK string, an index
	// unique by (client, request ID) cannot exist), and no receipt table: the layout the
	// receipt table was chosen over, measured where it can run.
	ReceiptOnRow bool
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
	Stats loader.MintStats
	// FloorCopyARKs and FloorCommit split the floor's time the same way.
	FloorCopyARKs, FloorCommit time.Duration
	// Pairs are the single measurements; Floor, Mint, Summary and Stats above are the medians.
	Pairs []Pair
	// FloorCPU and MintCPU are the processor time of the median runs (zero server time with
	// DatabaseURL: only a local cluster's processes can be read; on Citus every node's).
	// PlainCPU is the plain floor's, of the median plain run (zero on Citus: not measured).
	FloorCPU, MintCPU, PlainCPU CPU
	// Kind is "single" or "citus": the kind of cluster measured.
	Kind string
	// Size is the ledger arkhe's first mint phase left, measured with sizing.Measure (on Citus
	// every shard placement on every node).
	Size LedgerSize
	// OnRow, OnRowCPU and OnRowSize are phase (d) of Config.ReceiptOnRow (the first pair's),
	// OnRowFloor that pair's (a).
	OnRow, OnRowFloor Phase
	OnRowCPU          CPU
	OnRowSize         LedgerSize
	// SingleNode is, with Config.Citus, the single node measured in the same run (nil
	// otherwise).
	SingleNode *MintResult
	// LoadBefore and LoadAfter are the machine's load averages (1, 5, 15 minutes, as
	// /proc/loadavg has them) when the run started and ended; "" where unreadable.
	LoadBefore, LoadAfter string
}

// LedgerSize is what a ledger holds on disk after a bench mint, in octets (heap, maps, TOAST
// and every index; on Citus summed over every shard placement on every node).
type LedgerSize struct {
	// ARKs is the number of ARKs in the ledger.
	ARKs int64
	// ARK is the ark table without the receipts; Receipts the receipts (on a single node
	// their share of the ark row and the ark_receipt index, on Citus the receipt table);
	// Total every table of the ledger.
	ARK, Receipts, Total int64
	// Nodes is the number of nodes measured (1 on a single node).
	Nodes int
}

// PerARK returns octets per ARK of v (0 without ARKs).
func (z LedgerSize) PerARK(v int64) float64 {
	if z.ARKs == 0 {
		return 0
	}
	return float64(v) / float64(z.ARKs)
}

// Ratio is the mint rate over the floor rate (targets: ≥ 0.8 empty, ≥ 0.7 at 10 million):
// with several pairs the median of the pairs' ratios (each pair measured close together in time,
// so a busy machine skews both of its rates alike), else Mint.Rate() / Floor.Rate().
func (r MintResult) Ratio() float64 {
	return r.medianRatio(Pair.Ratio, r.Floor)
}

// PlainRatio is the mint rate over the plain floor's rate (target: ≥ 0.9 empty, ≥ 0.8 at 10
// million): with several pairs the median of the pairs' ratios, else Mint.Rate() / Plain.Rate().
func (r MintResult) PlainRatio() float64 {
	return r.medianRatio(Pair.PlainRatio, r.Plain)
}

// medianRatio is the median of ratio over the pairs when there are several, else the mint rate
// over floor's (0 when floor has no rate).
func (r MintResult) medianRatio(ratio func(Pair) float64, floor Phase) float64 {
	if len(r.Pairs) > 1 {
		rs := make([]float64, len(r.Pairs))
		for i, p := range r.Pairs {
			rs[i] = ratio(p)
		}
		slices.Sort(rs)
		return rs[len(rs)/2]
	}
	if floor.Rate() == 0 {
		return 0
	}
	return r.Mint.Rate() / floor.Rate()
}

// RunMint measures bulk mint against the COPY floor: a template ledger is
// migrated, registered and preloaded with cfg.Preload ARKs and receipts; two databases are cloned
// from it; (b) `arkhe mint` (with cfg.Exe the arkhe executable as its own process, else
// loader.Mint, the CLI's library call, in this one) mints a generated CSV manifest of
// cfg.Rows rows into one; then (a) the floor reads back exactly the ARK and receipt rows (b)
// wrote and COPYs them, pre-built in memory, with pgx CopyFrom in batches of the same size into
// the other (same schema, indexes and triggers), and (c) the plain floor sends the same rows as
// CSV on one connection into that clone's plain_ark. All run on the same server with the same
// settings, after a CHECKPOINT each. With cfg.Citus see runMintCitus.
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
	if cfg.Citus {
		return runMintCitus(ctx, cfg)
	}
	res.LoadBefore = loadAverage()
	srv, err := openServer(ctx, "mint", cfg.DatabaseURL, cfg.Dir, "", cfg.Log)
	if err != nil {
		return res, err
	}
	defer func() { _ = srv.close(context.WithoutCancel(ctx)) }() // a kept Dir keeps its data
	mb := &mintBench{srv: srv, cfg: cfg, res: &res}
	if err := mb.prepare(ctx, ""); err != nil {
		return res, err
	}
	for i := range cfg.Repeat {
		if err := mb.pair(ctx, i); err != nil {
			return res, err
		}
	}
	mb.finish()
	res.LoadAfter = loadAverage()
	return res, nil
}

// mintBench is one kind of cluster's side of RunMint: its server, template ledger, manifest
// and the pairs measured so far.
type mintBench struct {
	srv      *server
	cfg      MintConfig
	res      *MintResult
	tpl      string
	manifest string
	prev     [][]any // the rows the last pair's arkhe phase wrote, for the next pair's floor
}

// prepare builds (or reuses) the template ledger and writes (or reuses) the manifest; with
// manifest "" the manifest lives in the server's working directory.
func (mb *mintBench) prepare(ctx context.Context, manifest string) error {
	srv, cfg, res := mb.srv, mb.cfg, mb.res
	res.Server, res.Settings, res.Kind = srv.desc, srv.settings, srv.kind()
	mb.tpl = fmt.Sprintf("bench_tpl_%s_%d", ledger.SchemaHash(), cfg.Preload)
	reuse, err := srv.hasTemplate(ctx, mb.tpl)
	if err != nil {
		return fmt.Errorf("bench mint: %w", err)
	}
	if reuse {
		res.PreloadReused = true
		srv.logf("reusing template ledger %s (%d ARKs preloaded)", mb.tpl, cfg.Preload)
		if srv.citus == nil {
			if err := ensurePlainTable(ctx, srv, mb.tpl, srv.logf); err != nil {
				return err
			}
		}
	} else {
		start := time.Now()
		if err := buildMintTemplate(ctx, srv, mb.tpl, cfg, srv.logf); err != nil {
			return err
		}
		res.PreloadElapsed = time.Since(start)
	}
	if manifest == "" {
		manifest = filepath.Join(srv.dir, fmt.Sprintf("manifest-%d-%d.csv", cfg.Rows, cfg.Seed))
	}
	mb.manifest = manifest
	if fi, err := os.Stat(manifest); err == nil && fi.Size() > 0 {
		res.ManifestBytes = fi.Size()
		return nil
	}
	srv.logf("writing manifest of %d rows", cfg.Rows)
	st, err := fixtures.CreateManifestCSV(manifest, fixtures.ManifestConfig{Rows: cfg.Rows, Seed: cfg.Seed, Prefix: "bench-"})
	if err != nil {
		return fmt.Errorf("bench mint: %w", err)
	}
	res.ManifestBytes = st.Bytes
	return nil
}

// pair measures pair i and keeps it.
func (mb *mintBench) pair(ctx context.Context, i int) error {
	p, rows, err := measurePair(ctx, mb.srv, mb.tpl, mb.manifest, mb.cfg, i, &mb.prev, mb.res, mb.srv.logf)
	mb.res.Pairs = append(mb.res.Pairs, p)
	if err != nil {
		return err
	}
	mb.prev = rows
	return nil
}

// finish sets the result's medians from the pairs.
func (mb *mintBench) finish() {
	res := mb.res
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
	if p := res.Pairs[0]; p.OnRow.Rows > 0 {
		res.OnRow, res.OnRowCPU, res.OnRowFloor = p.OnRow, p.OnRowCPU, p.Floor
	}
	for _, p := range res.Pairs {
		res.PeakRSS, res.PeakHeap = max(res.PeakRSS, p.PeakRSS), max(res.PeakHeap, p.PeakHeap)
	}
}

// loadAverage returns the first three fields of /proc/loadavg ("" where unreadable).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// Pair is one measurement of (b) then (a), each into a fresh clone of the template ledger.
type Pair struct {
	Floor, Mint Phase
	// Plain is (c), the plain floor: the same rows as CSV on one connection into plain_ark.
	Plain   Phase
	Summary pipeline.Summary
	Stats   loader.MintStats
	// PeakRSS is the peak resident set of arkhe mint: the child process's maximum (MintConfig.Exe),
	// else this process's VmHWM during (b). PeakHeap is the peak live Go heap during (b), in
	// process only.
	PeakRSS, PeakHeap          int64
	FloorCopyARKs, FloorCommit time.Duration
	FloorCPU, MintCPU          CPU
	PlainCPU                   CPU
	// OnRow and OnRowCPU are phase (d) of MintConfig.ReceiptOnRow (zero without it).
	OnRow    Phase
	OnRowCPU CPU
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
// floor and, on a single node, (c) the plain floor into the other (its ark table and its
// plain_ark table), and drops both. With prev (the rows an earlier pair's arkhe run wrote) the
// floors go first and send those rows, so over repeated runs neither side always runs first on
// a fresh server state (*prev is cleared before (b) runs); otherwise arkhe goes first and the
// floors send exactly the rows it wrote, which are returned for the next pair. The first pair
// measures the ledger (b) left into res.Size.
func measurePair(ctx context.Context, srv *server, tpl, manifest string, cfg MintConfig, i int,
	prev *[][]any, res *MintResult, logf func(string, ...any)) (Pair, [][]any, error) {
	dir, dataDirs := srv.dir, srv.dataDirs
	var p Pair
	suffix := strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	mintDB, floorDB := "bench_mint_"+suffix, "bench_floor_"+suffix
	for _, db := range []string{mintDB, floorDB} {
		logf("cloning %s from %s", db, tpl)
		if err := srv.clone(ctx, db, tpl); err != nil {
			return p, nil, err
		}
		defer func() { _ = srv.drop(context.WithoutCancel(ctx), db) }()
	}

	onRow := cfg.ReceiptOnRow && srv.citus != nil && i == 0 // the first pair only: it adds a third 1-million-row load
	onRowDB := "bench_onrow_" + suffix
	if onRow {
		logf("cloning %s from %s, its receipts moved to the ark row (index not unique)", onRowDB, tpl)
		if err := srv.clone(ctx, onRowDB, tpl); err != nil {
			return p, nil, err
		}
		defer func() { _ = srv.drop(context.WithoutCancel(ctx), onRowDB) }()
		if err := receiptsOnRow(ctx, srv.url(onRowDB)); err != nil {
			return p, nil, err
		}
	}

	// (a) the floor: the final rows pre-built, plain CopyFrom; (d) the same into the on-row clone
	copyInto := func(db string, citusLayout bool, arks [][]any, phase *Phase, cpu *CPU) error {
		var pools []*pgxpool.Pool
		defer func() {
			for _, pool := range pools {
				pool.Close()
			}
		}()
		for _, u := range srv.nodeURLs(db) {
			pool, err := floorPool(ctx, u, srv.citus != nil)
			if err != nil {
				return fmt.Errorf("bench mint: %w", err)
			}
			pools = append(pools, pool)
		}
		if err := srv.checkpoint(ctx); err != nil {
			return err
		}
		cpu0 := sampleCPU(dataDirs...)
		start := time.Now()
		if err := copyFloorRows(ctx, pools, citusLayout, arks, cfg.BatchSize, cfg.FloorWorkers, &p); err != nil {
			return err
		}
		*phase = Phase{Rows: int64(len(arks)), Elapsed: time.Since(start)}
		*cpu = sampleCPU(dataDirs...).Sub(cpu0)
		return nil
	}
	// (c) the plain floor: the same rows as CSV on one connection into plain_ark (a single node
	// only)
	plain := func(arks [][]any) error {
		csvPath := filepath.Join(dir, "plain-rows.csv")
		if err := writePlainCSV(csvPath, arks); err != nil {
			return err
		}
		defer os.Remove(csvPath)
		if err := srv.checkpoint(ctx); err != nil {
			return err
		}
		logf("(c) plain floor: CSV COPY of %d rows on one connection into plain_ark (run %d of %d)", len(arks), i+1, cfg.Repeat)
		cpu0 := sampleCPU(dataDirs...)
		start := time.Now()
		n, err := copyPlainCSV(ctx, srv.url(floorDB), csvPath)
		if err != nil {
			return err
		}
		p.Plain = Phase{Rows: n, Elapsed: time.Since(start)}
		p.PlainCPU = sampleCPU(dataDirs...).Sub(cpu0)
		return nil
	}
	floors := func(arks [][]any) error {
		logf("(a) floor: pgx CopyFrom of %d ARK rows with their receipts, in arkhe's %d batches (batch %d, ramped), %d connection(s) (run %d of %d)",
			len(arks), len(floorBatches(len(arks), cfg.BatchSize, cfg.FloorWorkers)), cfg.BatchSize, cfg.FloorWorkers, i+1, cfg.Repeat)
		if err := copyInto(floorDB, srv.citus != nil, arks, &p.Floor, &p.FloorCPU); err != nil {
			return err
		}
		if srv.citus == nil {
			if err := plain(arks); err != nil {
				return err
			}
		}
		if !onRow {
			return nil
		}
		copyARKs, commit := p.FloorCopyARKs, p.FloorCommit
		defer func() { p.FloorCopyARKs, p.FloorCommit = copyARKs, commit }()
		logf("(d) the same rows into %s, receipts on the ark row", onRowDB)
		if err := copyInto(onRowDB, false, arks, &p.OnRow, &p.OnRowCPU); err != nil {
			return fmt.Errorf("bench mint: (d) receipts on the ark row: %w", err)
		}
		logf("(d) %.0f rows/s", p.OnRow.Rate())
		pool, err := pgxpool.New(ctx, srv.url(onRowDB))
		if err != nil {
			return fmt.Errorf("bench mint: %w", err)
		}
		defer pool.Close()
		if res.OnRowSize, err = measureLedger(ctx, pool); err != nil {
			return err
		}
		return nil
	}
	if *prev != nil {
		err := floors(*prev)
		*prev = nil // not held while (b) runs: (b)'s peak memory is its own
		if err != nil {
			return p, nil, err
		}
	}

	// (b) arkhe mint, end to end, through every node in turn; the rows are read back on a pool
	// of their own (the sink's connections keep the statement_timeout of its batches)
	urls := srv.nodeURLs(mintDB)
	rb, err := pgxpool.New(ctx, urls[0])
	if err != nil {
		return p, nil, fmt.Errorf("bench mint: %w", err)
	}
	defer rb.Close()
	var maxSeq int64
	if err := rb.QueryRow(ctx, `select coalesce(max(seq), 0) from ark`).Scan(&maxSeq); err != nil {
		return p, nil, fmt.Errorf("bench mint: %w", err)
	}
	if err := srv.checkpoint(ctx); err != nil {
		return p, nil, err
	}
	where := "in this process"
	if cfg.Exe != "" {
		where = "as its own process"
	}
	logf("(b) arkhe mint of %d rows, batch %d, %d workers, %s (run %d of %d)", cfg.Rows, cfg.BatchSize, cfg.Workers, where, i+1, cfg.Repeat)
	job := mintJob{urls: urls, manifest: manifest, mintMap: filepath.Join(dir, "mintmap.csv"),
		rejects: filepath.Join(dir, "rejects.csv"), profile: cfg.CPUProfile != "" && i == 0}
	if cfg.Exe != "" {
		err = mintChild(ctx, cfg, job, rb, dataDirs, &p)
	} else {
		err = mintInProcess(ctx, cfg, job, dataDirs, &p)
	}
	if err != nil {
		return p, nil, err
	}
	if p.Summary.Minted != int64(cfg.Rows) {
		return p, nil, fmt.Errorf("bench mint: arkhe minted %d of %d rows (%d rejected)", p.Summary.Minted, cfg.Rows, p.Summary.Rejected)
	}
	if i == 0 {
		if res.Size, err = measureLedger(ctx, rb); err != nil {
			return p, nil, err
		}
	}
	var arks [][]any
	if srv.citus != nil {
		arks, err = readBackMintedCitus(ctx, rb)
	} else {
		arks, err = readBackMinted(ctx, rb, maxSeq)
	}
	if err != nil {
		return p, nil, err
	}
	rb.Close()
	order := "floors first"
	if p.Floor.Rows == 0 {
		order = "arkhe first"
		if err := floors(arks); err != nil {
			return p, nil, err
		}
	} else {
		arks = nil
	}
	if p.Plain.Rows > 0 {
		logf("run %d (%s): floor %.0f rows/s, plain floor %.0f rows/s, arkhe %.0f rows/s, ratios %.2f and %.2f; CPU floor %.1f s, plain %.1f s, arkhe %.1f s",
			i+1, order, p.Floor.Rate(), p.Plain.Rate(), p.Mint.Rate(), p.Ratio(), p.PlainRatio(),
			p.FloorCPU.Total().Seconds(), p.PlainCPU.Total().Seconds(), p.MintCPU.Total().Seconds())
	} else {
		logf("run %d (%s): floor %.0f rows/s, arkhe %.0f rows/s, ratio %.2f; CPU floor %.1f s, arkhe %.1f s",
			i+1, order, p.Floor.Rate(), p.Mint.Rate(), p.Ratio(), p.FloorCPU.Total().Seconds(), p.MintCPU.Total().Seconds())
	}
	return p, arks, nil
}

// mintJob is what (b) mints: into the ledger at urls (the node the ledger is opened on, then on
// Citus every further node its workers write through), the manifest, with the mint map and
// reject file it writes; profile asks for the CPU profile (in process only).
type mintJob struct {
	urls                       []string
	manifest, mintMap, rejects string
	profile                    bool
}

// mintInProcess runs (b) as `arkhe mint` does, inside this process (loader.Mint under the
// same memory limit), and fills p's Mint, MintCPU, Summary, Stats, PeakRSS (this process's
// VmHWM, reset before) and PeakHeap. On Citus its workers write through every node of job.urls
// in turn (loader.MintConfig.EntryNodes).
func mintInProcess(ctx context.Context, cfg MintConfig, job mintJob, dataDirs []string, p *Pair) error {
	l, err := ledger.Open(ctx, job.urls[0], int32(cfg.Workers+2))
	if err != nil {
		return err
	}
	defer l.Close()
	var entry []*pgxpool.Pool
	for _, u := range job.urls[1:] {
		n, err := ledger.Open(ctx, u, int32(cfg.Workers+1))
		if err != nil {
			return fmt.Errorf("bench mint: entry node: %w", err)
		}
		defer n.Close()
		entry = append(entry, n.Pool)
	}
	if os.Getenv("GOMEMLIMIT") == "" { // as arkhe mint runs
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(pipeline.MemoryLimitFor(cfg.Workers, cfg.BatchSize)))
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
	cpu0 := sampleCPU(dataDirs...)
	start := time.Now()
	rep, err := loader.Mint(ctx, l, loader.MintJob{
		Mint: loader.MintConfig{ClientID: benchClient, NameCheck: cfg.NameCheck, ReceiptCheck: cfg.ReceiptCheck,
			PgxCopyFrom: cfg.PgxCopyFrom, EntryNodes: entry},
		Inputs:      []string{job.manifest},
		Workers:     cfg.Workers,
		BatchSize:   cfg.BatchSize,
		MintMapPath: job.mintMap,
		RejectsPath: job.rejects,
	})
	p.Mint = Phase{Rows: rep.Summary.Minted, Elapsed: time.Since(start)}
	p.MintCPU = sampleCPU(dataDirs...).Sub(cpu0)
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
// ledger through pool: the rows minted) and PeakRSS (the child's own peak resident set,
// runChild). The child is given every URL of job.urls as --database-url, in order, as a user
// loads through several Citus nodes.
func mintChild(ctx context.Context, cfg MintConfig, job mintJob, pool *pgxpool.Pool, dataDirs []string, p *Pair) error {
	var before int64
	if err := pool.QueryRow(ctx, `select count(*) from ark`).Scan(&before); err != nil {
		return fmt.Errorf("bench mint: %w", err)
	}
	var args []string
	for _, u := range job.urls {
		args = append(args, "--database-url", u)
	}
	args = append(args, "--quiet", "mint", "--client", benchClient,
		"--batch", strconv.Itoa(cfg.BatchSize), "--workers", strconv.Itoa(cfg.Workers),
		"--name-check", cfg.NameCheck.String(), "--receipt-check", cfg.ReceiptCheck.String(),
		"--out", job.mintMap, "--rejects", job.rejects, job.manifest)
	cmd := exec.CommandContext(ctx, cfg.Exe, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	run, runErr := runChild(cmd, dataDirs...)
	p.Mint.Elapsed, p.MintCPU, p.PeakRSS = run.Elapsed, run.CPU, run.Peak
	if runErr != nil {
		return fmt.Errorf("bench mint: %s mint: %w: %s", cfg.Exe, runErr, strings.TrimSpace(stderr.String()))
	}
	var after int64
	if err := pool.QueryRow(ctx, `select count(*) from ark`).Scan(&after); err != nil {
		return fmt.Errorf("bench mint: %w", err)
	}
	p.Mint.Rows = after - before
	p.Summary = pipeline.Summary{Read: int64(cfg.Rows), Minted: p.Mint.Rows, Elapsed: p.Mint.Elapsed}
	return nil
}

// plainARKTable is the plain floor's table: the columns of the final rows (readBackMinted's, and
// status, NULL as a minted row holds it), typed as ark's, with only the ARK primary key and the
// receipt's unique index (client, request ID): no trigger, foreign key, check, identity or other
// index.
const plainARKTable = `create table plain_ark (
	ark varchar(272) collate "C" primary key, naan varchar(16) collate "C", shoulder_id bigint,
	assigned_name varchar(255) collate "C", url varchar(2048), commitment text, erc_who text, erc_what text,
	erc_when text, status ark_status, change_seq integer, created_at timestamptz, created_by bigint,
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

// buildMintTemplate creates the template ledger tpl: migrated, registered, preloaded, and on a
// single node holding the plain floor's plain_ark (createPlainTable). On a
// single node it is built as tpl_building and renamed when complete; on Citus it is built
// under its own name on every node and marked a template at the end (hasTemplate reuses only a
// marked one).
func buildMintTemplate(ctx context.Context, srv *server, tpl string, cfg MintConfig, logf func(string, ...any)) error {
	building := tpl + "_building"
	if srv.citus != nil {
		building = tpl
	}
	if err := srv.drop(ctx, building); err != nil {
		return err
	}
	if err := srv.create(ctx, building); err != nil {
		return err
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
	if srv.citus == nil { // the plain floor runs on a single node only (MintConfig.Citus)
		if err := createPlainTable(ctx, l.Pool, cfg.Preload, logf); err != nil {
			return err
		}
	}
	if cfg.Preload > 0 {
		logf("vacuum analyze")
		if _, err := l.Pool.Exec(ctx, `vacuum analyze`); err != nil {
			return fmt.Errorf("bench mint: %w", err)
		}
	}
	l.Close()
	if srv.citus != nil {
		if err := srv.citus.MarkTemplate(ctx, tpl); err != nil {
			return fmt.Errorf("bench mint: %w", err)
		}
		return nil
	}
	if _, err := srv.admin.Exec(ctx, `alter database `+pgx.Identifier{building}.Sanitize()+` rename to `+pgx.Identifier{tpl}.Sanitize()); err != nil {
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
	sink, err := loader.PrepareMint(ctx, l, loader.MintConfig{ClientID: benchClient, NameCheck: loader.CheckAlways, ReceiptCheck: loader.CheckNever,
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
			rec.Source = textin.Location{File: "preload", Record: i + 1}
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

// readBackMintedCitus reads, on a Citus ledger, the ARK rows the bench client minted with
// their receipts (receipt rows; the preloaded ones, request IDs "pre-...", left out), in
// request ID order (the manifest's), as readBackMinted returns them. The receipt table is
// distributed by request ID and ark by the ARK string, so the two are read apart and joined
// here.
func readBackMintedCitus(ctx context.Context, pool *pgxpool.Pool) ([][]any, error) {
	fail := func(err error) ([][]any, error) { return nil, fmt.Errorf("bench mint: read back: %w", err) }
	var clientPK int64
	if err := pool.QueryRow(ctx, `select id from client where client_id = $1`, benchClient).Scan(&clientPK); err != nil {
		return fail(err)
	}
	rows, err := pool.Query(ctx, `select ark, request_id, payload_digest from receipt
		where client_pk = $1 and request_id not like 'pre-%' order by request_id`, clientPK)
	if err != nil {
		return fail(err)
	}
	var arks [][]any
	at := map[string]int{}
	for rows.Next() {
		var key, requestID string
		var digest []byte
		if err := rows.Scan(&key, &requestID, &digest); err != nil {
			return fail(err)
		}
		at[key] = len(arks)
		arks = append(arks, []any{key, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, requestID, digest})
	}
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	rows, err = pool.Query(ctx, `select ark, naan, shoulder_id, assigned_name, url, commitment,
			erc_who, erc_what, erc_when, change_seq, created_at, created_by
		from ark where created_by = $1`, clientPK)
	if err != nil {
		return fail(err)
	}
	defer rows.Close()
	found := 0
	for rows.Next() {
		var (
			key, naan, name                  string
			shoulderID, createdBy            int64
			url, commitment, who, what, when *string
			changeSeq                        *int32
			createdAt                        time.Time
		)
		if err := rows.Scan(&key, &naan, &shoulderID, &name, &url, &commitment, &who, &what, &when, &changeSeq, &createdAt, &createdBy); err != nil {
			return fail(err)
		}
		i, ok := at[key]
		if !ok {
			continue
		}
		r := arks[i]
		r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11] = naan, shoulderID, name, url, commitment, who, what, when, changeSeq, createdAt, createdBy
		found++
	}
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	if found != len(arks) {
		return fail(fmt.Errorf("%d receipts, %d of their ARKs found", len(arks), found))
	}
	return arks, nil
}

// measureLedger measures the ledger pool is connected to (sizing.Measure: on Citus every shard
// placement on every node), without the plain floor's table plain_ark, which the clones of a
// template hold (with every preloaded ARK: 10 million rows under --preload 10000000).
func measureLedger(ctx context.Context, pool *pgxpool.Pool) (LedgerSize, error) {
	m, err := sizing.Measure(ctx, pool, sizing.MeasureOptions{})
	if err != nil {
		return LedgerSize{}, fmt.Errorf("bench mint: measure the ledger: %w", err)
	}
	z := LedgerSize{ARKs: m.ARKs, Total: m.Total(), Nodes: max(1, len(m.Nodes))}
	if t, ok := m.Table("plain_ark"); ok { // the plain floor's table, in the clone with the preloaded ARKs: not the ledger's
		z.Total -= t.Total
	}
	if t, ok := m.Table(sizing.TableARK); ok {
		z.ARK = t.Total
	}
	if t, ok := m.Table(sizing.TableReceipt); ok {
		z.Receipts = t.Total // on the ark row: carved out of ark's Total already
	}
	return z, nil
}

// floorPool opens a pool on u for the floor's connections; on Citus (citus) each session gets
// the setting arkhe's mint workers get (loader.CitusMintSessionSQL), so the floor's rate and CPU time
// measure the rows and not Citus's connection mode.
func floorPool(ctx context.Context, u string, citus bool) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(u)
	if err != nil {
		return nil, err
	}
	if citus {
		pc.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
			_, err := c.Exec(ctx, `select `+loader.CitusMintSessionSQL)
			return err
		}
	}
	return pgxpool.NewWithConfig(ctx, pc)
}

// floorARKColumns are the columns the floor COPYs, in readBackMinted's order: the ARK and its
// receipt, on one row.
func floorARKColumns() []string {
	return []string{"ark", "naan", "shoulder_id", "assigned_name", "url", "commitment", "erc_who", "erc_what", "erc_when",
		"change_seq", "created_at", "created_by", "request_id", "payload_digest"}
}

// floorBatch is one of the floor's batches: rows [lo, hi) sent by connection w.
type floorBatch struct{ lo, hi, w int }

// floorBatches deals n rows into the batches arkhe's pipeline makes of a manifest of n good
// rows with full batch size batch on workers workers: in manifest order, round robin over the
// workers, worker w's k-th batch (0-based) pipeline.RampBatchSize(batch, k) rows (an eighth, a
// quarter, a half of batch, then batch), the last batch of the run what is left. Fewer than one
// worker counts as one.
func floorBatches(n, batch, workers int) []floorBatch {
	workers = max(workers, 1)
	var out []floorBatch
	for lo, j := 0, 0; lo < n; j++ {
		hi := min(lo+pipeline.RampBatchSize(batch, j/workers), n)
		out = append(out, floorBatch{lo: lo, hi: hi, w: j % workers})
		lo = hi
	}
	return out
}

// copyFloorRows sends the rows in the batches arkhe's pipeline makes of them (floorBatches:
// the same sizes in the same order per connection), each batch one transaction, on workers
// connections, connection w to node w mod len(pools) as arkhe's workers are. A batch is one
// COPY ark of the rows with their receipts, or with citus one COPY ark of the rows without them
// and one COPY receipt of the receipts, as arkhe writes them there. The pools' sessions must
// have the settings arkhe's mint workers have (floorPool).
func copyFloorRows(ctx context.Context, pools []*pgxpool.Pool, citus bool, arks [][]any, batch, workers int, res *Pair) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	errs := make([]error, workers)
	arkCols := floorARKColumns()
	batches := floorBatches(len(arks), batch, workers)
	if citus {
		arkCols = arkCols[:len(arkCols)-2]
	}
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := pools[w%len(pools)].Acquire(ctx)
			if err != nil {
				errs[w] = err
				return
			}
			defer conn.Release()
			for _, fb := range batches {
				if fb.w != w {
					continue
				}
				lo, rows := fb.lo, arks[fb.lo:fb.hi]
				var t0, t1 time.Time
				err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
					t0 = time.Now()
					defer func() { t1 = time.Now() }()
					if !citus {
						_, err := tx.CopyFrom(ctx, pgx.Identifier{"ark"}, arkCols, pgx.CopyFromRows(rows))
						return err
					}
					if _, err := tx.CopyFrom(ctx, pgx.Identifier{"ark"}, arkCols, pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
						return rows[i][:len(arkCols)], nil
					})); err != nil {
						return err
					}
					rec := make([]any, 5)
					_, err := tx.CopyFrom(ctx, pgx.Identifier{"receipt"}, []string{"client_pk", "request_id", "ark", "payload_digest", "created_at"},
						pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
							r := rows[i]
							rec[0], rec[1], rec[2], rec[3], rec[4] = r[11], r[12], r[0], r[13], r[10]
							return rec, nil
						}))
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
	where := "a single node"
	if r.Kind == "citus" {
		where = "Citus, every node an entry node (arkhe's worker w and the floor's connection w write through node w mod 3)"
	}
	fmt.Fprintf(w, "arkhe bench mint: %d rows into a ledger of %d ARKs, batch %d, %d workers (floor: %d connection(s)), on %s\n",
		c.Rows, c.Preload, c.BatchSize, c.Workers, c.FloorWorkers, where)
	printServer(w, r.Server, r.Settings)
	if r.LoadBefore != "" {
		fmt.Fprintf(w, "load average (1, 5, 15 min): %s at the start, %s at the end\n", r.LoadBefore, r.LoadAfter)
	}
	if c.Preload > 0 {
		if r.PreloadReused {
			fmt.Fprintf(w, "preload: %d ARKs, reused from an earlier run\n", c.Preload)
		} else {
			fmt.Fprintf(w, "preload: %d ARKs in %.1f s\n", c.Preload, r.PreloadElapsed.Seconds())
		}
	}
	fmt.Fprintf(w, "(a) floor, pgx CopyFrom of the final rows:  %9.0f rows/s  (%d rows in %.2f s; arkhe's schema, %d connection(s))\n",
		r.Floor.Rate(), r.Floor.Rows, r.Floor.Elapsed.Seconds(), c.FloorWorkers)
	fb := floorBatches(int(r.Floor.Rows), c.BatchSize, c.FloorWorkers)
	fmt.Fprintf(w, "    (a) sends arkhe's batches: %d transactions, each connection's first three of %d, %d, %d rows, then %d, as arkhe's pipeline deals them",
		len(fb), pipeline.RampBatchSize(c.BatchSize, 0), pipeline.RampBatchSize(c.BatchSize, 1), pipeline.RampBatchSize(c.BatchSize, 2), c.BatchSize)
	if r.Kind == "citus" {
		fmt.Fprint(w, "; its sessions have arkhe's mint workers' setting citus.multi_shard_modify_mode = sequential")
	}
	fmt.Fprintln(w)
	plain := r.Plain.Rows > 0
	if plain {
		fmt.Fprintf(w, "(c) plain floor, CSV COPY, one connection:  %9.0f rows/s  (%d rows in %.2f s; a table with the ARK primary key and the receipt index only)\n",
			r.Plain.Rate(), r.Plain.Rows, r.Plain.Elapsed.Seconds())
	} else if r.Kind == "citus" {
		fmt.Fprintln(w, "(c) plain floor: not measured on Citus (its table's unique receipt index (client, request ID) cannot exist on a table distributed by the ARK string); the single node's is below")
	}
	fmt.Fprintf(w, "(b) arkhe mint from CSV, end to end:       %9.0f rows/s  (%d rows in %.2f s; manifest %.1f MB)\n",
		r.Mint.Rate(), r.Mint.Rows, r.Mint.Elapsed.Seconds(), float64(r.ManifestBytes)/1e6)
	if plain {
		fmt.Fprintf(w, "ratio (b)/(a): %.2f   ratio (b)/(c): %.2f\n", r.Ratio(), r.PlainRatio())
	} else {
		fmt.Fprintf(w, "ratio (b)/(a): %.2f\n", r.Ratio())
	}
	if len(r.Pairs) > 1 {
		if plain {
			fmt.Fprintf(w, "  (medians of the %d runs' ratios; rates above are the median rates; per run floor / plain / arkhe rows/s:", len(r.Pairs))
		} else {
			fmt.Fprintf(w, "  (median of the %d runs' ratios; rates above are the median rates; per run floor / arkhe rows/s:", len(r.Pairs))
		}
		for _, p := range r.Pairs {
			if plain {
				fmt.Fprintf(w, " %.0f/%.0f/%.0f", p.Floor.Rate(), p.Plain.Rate(), p.Mint.Rate())
			} else {
				fmt.Fprintf(w, " %.0f/%.0f", p.Floor.Rate(), p.Mint.Rate())
			}
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
	switch {
	case r.MintCPU.Total() <= 0:
	case plain:
		fmt.Fprintf(w, "CPU time (server + client): (a) %.1f s + %.1f s, (c) %.1f s + %.1f s, (b) %.1f s + %.1f s; (a)/(b) %.2f, (c)/(b) %.2f\n",
			r.FloorCPU.Server.Seconds(), r.FloorCPU.Client.Seconds(), r.PlainCPU.Server.Seconds(), r.PlainCPU.Client.Seconds(),
			r.MintCPU.Server.Seconds(), r.MintCPU.Client.Seconds(),
			r.FloorCPU.Total().Seconds()/r.MintCPU.Total().Seconds(), r.PlainCPU.Total().Seconds()/r.MintCPU.Total().Seconds())
	default:
		fmt.Fprintf(w, "CPU time (server + client): (a) %.1f s + %.1f s, (b) %.1f s + %.1f s; (a)/(b) %.2f\n",
			r.FloorCPU.Server.Seconds(), r.FloorCPU.Client.Seconds(), r.MintCPU.Server.Seconds(), r.MintCPU.Client.Seconds(),
			r.FloorCPU.Total().Seconds()/r.MintCPU.Total().Seconds())
	}
	if c.Exe == "" { // the sink's time split is known in process only
		st := r.Stats
		fmt.Fprintf(w, "time in (b)'s sink, summed over workers: receipt lookups %.2f s (%d batches read whole), name lookups %.2f s (%d names), settle %.2f s, COPY ark %.2f s, counters+commit %.2f s\n",
			st.ReceiptLookups.Seconds(), st.CheckedBatches, st.NameLookups.Seconds(), st.LookedUpNames, st.Settle.Seconds(),
			st.CopyARKs.Seconds(), st.Commit.Seconds())
	}
	fmt.Fprintf(w, "time in (a), summed over connections: COPY ark (on Citus with the receipt rows' COPY) %.2f s, commit %.2f s\n",
		r.FloorCopyARKs.Seconds(), r.FloorCommit.Seconds())
	if z := r.Size; z.ARKs > 0 {
		fmt.Fprintf(w, "on disk after (b) (%d ARKs, %d node(s)): ark %.0f B, receipts %.0f B, whole ledger %.0f B per ARK\n",
			z.ARKs, z.Nodes, z.PerARK(z.ARK), z.PerARK(z.Receipts), z.PerARK(z.Total))
	}
	if r.OnRow.Rows > 0 {
		z := r.OnRowSize
		fmt.Fprintf(w, "(d) floor into the layout the receipt table was chosen over (receipts on the ark row, index not unique; first run): %.0f rows/s, %.2f of that run's (a) (%.0f rows/s); server CPU %.1f s (a: %.1f s); ark %.0f B, whole ledger %.0f B per ARK\n",
			r.OnRow.Rate(), r.OnRow.Rate()/max(r.OnRowFloor.Rate(), 1e-9), r.OnRowFloor.Rate(), r.OnRowCPU.Server.Seconds(), r.Pairs[0].FloorCPU.Server.Seconds(), z.PerARK(z.ARK), z.PerARK(z.Total))
	}
	if r.SingleNode != nil {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "the single node, measured in the same run (its runs alternating with Citus's):")
		r.SingleNode.Print(w)
		fmt.Fprintln(w)
		r.printSideBySide(w)
	}
}
