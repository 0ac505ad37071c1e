package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/verify"
)

// VerifyFloor is the first floor the audit is measured against: a plain COPY of every ARK's key
// and target.
const VerifyFloor = `COPY (SELECT ark, url FROM ark) TO STDOUT`

// VerifyColumnsFloor is the second floor: a plain COPY of exactly the columns of ark the full
// audit reads (the ARK pass: key, shoulder, insertion number, import run, check-character
// verdict, change count, and target and status for an ARK with a history, its inserting
// transaction, and the receipt's request ID and client).
const VerifyColumnsFloor = `COPY (SELECT ark, shoulder_id, seq, import_run_id, check_ok, change_seq, url, status, xmin, request_id, created_by FROM ark) TO STDOUT`

// VerifyTarget is the ratio the full audit must stay within: at most 5x the first floor's time.
const VerifyTarget = 5.0

// VerifyColumnsTarget is the ratio the full audit must stay within against the COPY of its
// columns: at most 2x.
const VerifyColumnsTarget = 2.0

// VerifySinceTarget is the ratio `verify --since` with nothing changed must stay within against
// the full audit: at most 0.1x (at 10 million ARKs).
const VerifySinceTarget = 0.1

// VerifySettings returns the names of the server settings RunVerify reads and reports, in
// print order (a fresh slice).
func VerifySettings() []string {
	return []string{"server_version", "shared_buffers", "work_mem", "effective_cache_size",
		"max_parallel_workers_per_gather", "jit", "fsync", "synchronous_commit"}
}

// VerifyConfig configures RunVerify (`arkhe bench verify`).
type VerifyConfig struct {
	// Rows is the number of ARKs in the filled ledger; Repeat the timed runs of each of the
	// floor and the audit; Seed the seed of the filled ledger. Rows and Repeat are positive.
	Rows, Repeat int
	Seed         int64
	// Dir keeps the cluster and its filled ledger between runs; "" uses a temporary directory,
	// removed at the end.
	Dir string
	// ServerURL is the superuser URL of an existing server to use instead of a local cluster.
	ServerURL string
	// Log receives progress lines; it must not be nil (io.Discard for none).
	Log io.Writer
	// CPUProfile is the file for a Go CPU profile of the timed audits; "" for none.
	CPUProfile string
}

// VerifyResult is what RunVerify measured.
type VerifyResult struct {
	// Rows and Changes are the ARKs and ARK_CHANGE rows of the ledger audited.
	Rows, Changes int64
	// Server says where it ran ("a local cluster in DIR" or "the server at HOST:PORT");
	// Settings holds the VerifySettings as the server reported them.
	Server   string
	Settings map[string]string
	// Floors, ColumnFloors and Audits are the timed runs of the two floor COPYs and of the full
	// audit, in order; Sinces are audits with --since right after them (nothing changed), as
	// many.
	Floors, ColumnFloors, Audits, Sinces []time.Duration
	// Reused reports that the filled ledger came from an earlier run; Kept names the database
	// kept for the next run ("" when it was removed).
	Reused bool
	Kept   string
}

// Median returns the median of ds, which must not be empty (the upper one of an even count).
func Median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// Ratio is the median audit time over the median time of the first floor (ark, url).
func (r *VerifyResult) Ratio() float64 {
	return float64(Median(r.Audits)) / float64(Median(r.Floors))
}

// ColumnsRatio is the median of the per-run ratios of the full audit over the COPY of the
// columns it reads (each pair timed back to back).
func (r *VerifyResult) ColumnsRatio() float64 { return medianRatio(r.Audits, r.ColumnFloors) }

// SinceRatio is the median of the per-run ratios of `verify --since` (nothing changed) over the
// full audit of the same run.
func (r *VerifyResult) SinceRatio() float64 { return medianRatio(r.Sinces, r.Audits) }

// medianRatio returns the median of num[i]/den[i] over the pairs both hold.
func medianRatio(num, den []time.Duration) float64 {
	var rs []float64
	for i := range min(len(num), len(den)) {
		rs = append(rs, float64(num[i])/float64(den[i]))
	}
	if len(rs) == 0 {
		return 0
	}
	slices.Sort(rs)
	return rs[len(rs)/2]
}

// RunVerify times a full audit (verify.Run) against two floors, a plain COPY of every ARK's key
// and target and one of exactly the columns the audit reads, and `verify --since` with nothing
// changed against the full audit, on the same ledger: it starts a throw-away cluster with the embedded default's
// settings in cfg.Dir (or uses cfg.ServerURL), fills database bench_verify_ROWS_SEED_SCHEMA with
// cfg.Rows ARKs over four shoulders, their receipts and one ARK_CHANGE per ten ARKs
// (fixtures.FillLedger) unless it exists, then runs the two floors, the full audit and
// --since in turn cfg.Repeat times after one warm-up COPY. The filled ledger must audit clean.
func RunVerify(ctx context.Context, cfg VerifyConfig) (*VerifyResult, error) {
	res := &VerifyResult{}
	srv, err := openServer(ctx, "verify", cfg.ServerURL, cfg.Dir, "", cfg.Log)
	if err != nil {
		return nil, err
	}
	defer func() { _ = srv.close(context.WithoutCancel(ctx)) }() // a kept Dir keeps its data
	admin, logf := srv.admin, srv.logf
	res.Server = srv.desc
	db := fmt.Sprintf("bench_verify_%d_%d_%s", cfg.Rows, cfg.Seed, ledger.SchemaHash())
	dbURL := srv.url(db)
	if err := admin.QueryRow(ctx, `select exists (select 1 from pg_database where datname = $1)`, db).Scan(&res.Reused); err != nil {
		return nil, err
	}
	if !res.Reused {
		if err := fillVerifyLedger(ctx, admin, db, dbURL, cfg, logf); err != nil {
			_, _ = admin.Exec(context.WithoutCancel(ctx), "drop database if exists "+pgx.Identifier{db}.Sanitize()+" with (force)")
			return nil, err
		}
	} else {
		logf("reusing the filled ledger %s", db)
	}
	l, err := ledger.Open(ctx, dbURL, 4)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	if err := l.Pool.QueryRow(ctx, `select (select count(*) from ark), (select count(*) from ark_change)`).Scan(&res.Rows, &res.Changes); err != nil {
		return nil, err
	}
	res.Settings = map[string]string{}
	for _, k := range VerifySettings() {
		var v string
		if err := l.Pool.QueryRow(ctx, `select current_setting($1)`, k).Scan(&v); err != nil {
			return nil, err
		}
		res.Settings[k] = v
	}
	floor := func(query string) (time.Duration, error) {
		conn, err := l.Pool.Acquire(ctx)
		if err != nil {
			return 0, err
		}
		defer conn.Release()
		start := time.Now()
		if _, err := conn.Conn().PgConn().CopyTo(ctx, io.Discard, query); err != nil {
			return 0, fmt.Errorf("floor: %w", err)
		}
		return time.Since(start), nil
	}
	audit := func(since bool) (time.Duration, error) {
		start := time.Now()
		r, err := verify.Run(ctx, l, verify.Config{Since: since, ClientID: "arkhe-bench"})
		if err != nil {
			return 0, err
		}
		d := time.Since(start)
		if !r.Clean() {
			return 0, fmt.Errorf("the filled ledger has %d findings; it should be clean", r.Findings())
		}
		if r.Full == since {
			return 0, fmt.Errorf("asked for since=%v, the audit ran full=%v", since, r.Full)
		}
		return d, nil
	}
	logf("warming up: one floor COPY")
	if _, err := floor(VerifyFloor); err != nil {
		return nil, err
	}
	if cfg.CPUProfile != "" {
		profile, err := os.Create(cfg.CPUProfile)
		if err != nil {
			return nil, err
		}
		defer profile.Close()
		if err := pprof.StartCPUProfile(profile); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile()
	}
	for i := 0; i < cfg.Repeat; i++ {
		f, err := floor(VerifyFloor)
		if err != nil {
			return nil, err
		}
		c, err := floor(VerifyColumnsFloor)
		if err != nil {
			return nil, err
		}
		a, err := audit(false)
		if err != nil {
			return nil, err
		}
		s, err := audit(true)
		if err != nil {
			return nil, err
		}
		logf("run %d: floor %.3f s, floor of the audit's columns %.3f s, verify %.3f s, verify --since %.3f s",
			i+1, f.Seconds(), c.Seconds(), a.Seconds(), s.Seconds())
		res.Floors = append(res.Floors, f)
		res.ColumnFloors = append(res.ColumnFloors, c)
		res.Audits = append(res.Audits, a)
		res.Sinces = append(res.Sinces, s)
	}
	if cfg.ServerURL != "" || cfg.Dir != "" {
		res.Kept = db
	}
	return res, nil
}

// fillVerifyLedger creates database db, migrates it and fills it (fixtures.FillLedger, unchecked
// COPY), then VACUUM ANALYZE and CHECKPOINT so the timed runs read a settled table.
func fillVerifyLedger(ctx context.Context, admin *pgxpool.Pool, db, dbURL string, cfg VerifyConfig, logf func(string, ...any)) error {
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
	start := time.Now()
	last := time.Now()
	err = fixtures.FillLedger(ctx, l.Pool, cfg.Rows, cfg.Seed, fixtures.FillOptions{
		Shoulders: []string{"/x9", "/b5", "/fk4", "/mm7"}, ChangeEvery: 10, Unchecked: true,
		Progress: func(done int) {
			if time.Since(last) > 5*time.Second || done == cfg.Rows {
				last = time.Now()
				logf("filled %d of %d ARKs", done, cfg.Rows)
			}
		}})
	if err != nil {
		return err
	}
	logf("filled %d ARKs in %.1f s; vacuum analyze", cfg.Rows, time.Since(start).Seconds())
	if _, err := l.Pool.Exec(ctx, "vacuum analyze"); err != nil {
		return err
	}
	if _, err := l.Pool.Exec(ctx, "checkpoint"); err != nil {
		return err
	}
	return nil
}
