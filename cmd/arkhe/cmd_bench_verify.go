package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/urfave/cli/v2"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/loader"
	"github.com/arkhe-ledger/arkhe/verify"
)

// benchVerifyFloor is the floor of issue 5 "Speed": a plain COPY of every ARK's key and target.
const benchVerifyFloor = `copy (select ark, url from ark) to stdout`

// benchVerifyTarget is the ratio verify must stay within (issue 5: at most 5x the floor).
const benchVerifyTarget = 5.0

// benchVerifySettings are the server settings the bench prints (README decision 16).
var benchVerifySettings = []string{"server_version", "shared_buffers", "work_mem", "effective_cache_size",
	"max_parallel_workers_per_gather", "jit", "fsync", "synchronous_commit"}

func benchVerifyCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "verify",
		Usage: "time a full `arkhe verify` against a plain COPY (SELECT ark, url FROM ark) TO STDOUT of the same ledger (the target: at most 5x the COPY time)",
		Description: "Starts a throw-away PostgreSQL cluster with the embedded default's settings (or uses the server of\n" +
			"--database-url, a superuser URL, creating database bench_verify_ROWS_SCHEMA there), fills it with --rows\n" +
			"ARKs over four shoulders, their receipts and one ARK_CHANGE per ten ARKs (fixtures.FillLedger), then\n" +
			"alternates the floor and a full audit --repeat times after one warm-up COPY, and prints the medians,\n" +
			"their ratio and the settings. A filled database is reused when it exists (with --bench-dir or\n" +
			"--database-url it is kept for the next run).",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "rows", Value: 1_000_000, Usage: "ARKs in the ledger"},
			&cli.IntFlag{Name: "repeat", Value: 3, Usage: "timed runs of each"},
			&cli.Int64Flag{Name: "seed", Value: 1, Usage: "seed of the filled ledger"},
			&cli.StringFlag{Name: "bench-dir", Usage: "keep the cluster and its filled ledger here", DefaultText: "a temporary directory, removed"},
			&cli.StringFlag{Name: "cpu-profile", Usage: "write a Go CPU profile of the timed audits to this file"},
		},
		Action: func(c *cli.Context) error {
			cannot := func(err error) error { return &exitError{code: exitCannot, err: err} }
			if c.Int("rows") < 1 || c.Int("repeat") < 1 || c.Int64("seed") < 0 {
				return cannot(errors.New("bench verify: --rows and --repeat must be positive, --seed not negative"))
			}
			logw := e.stderr
			if c.Bool("quiet") {
				logw = io.Discard
			}
			res, err := runBenchVerify(c.Context, benchVerifyConfig{rows: c.Int("rows"), repeat: c.Int("repeat"),
				seed: c.Int64("seed"), dir: c.String("bench-dir"), serverURL: c.String("database-url"), log: logw,
				cpuprofile: c.String("cpu-profile")})
			if err != nil {
				return cannot(err)
			}
			res.print(e.stdout)
			return nil
		},
	}
}

type benchVerifyConfig struct {
	rows, repeat int
	seed         int64
	dir          string // kept cluster directory; "" for a temporary one
	serverURL    string // superuser URL of an existing server; "" for a local cluster
	log          io.Writer
	cpuprofile   string // Go CPU profile of the timed audits; "" for none
}

type benchVerifyResult struct {
	rows, changes int64
	server        string
	settings      map[string]string
	floors        []time.Duration
	audits        []time.Duration
	since         time.Duration
	reused        bool
	kept          string // the filled database kept for the next run, "" when removed
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func (r *benchVerifyResult) ratio() float64 {
	return float64(median(r.audits)) / float64(median(r.floors))
}

func (r *benchVerifyResult) print(w io.Writer) {
	reused := ""
	if r.reused {
		reused = " (filled by an earlier run)"
	}
	fmt.Fprintf(w, "arkhe bench verify: %s, %s%s, on %s\n", plural(int64(r.rows), "ARK", "ARKs"), plural(int64(r.changes), "ARK_CHANGE row", "ARK_CHANGE rows"), reused, r.server)
	var set []string
	for _, k := range benchVerifySettings {
		set = append(set, k+"="+r.settings[k])
	}
	fmt.Fprintf(w, "  settings: %s; GOMAXPROCS=%d\n", strings.Join(set, " "), runtime.GOMAXPROCS(0))
	runs := func(ds []time.Duration) string {
		var s []string
		for _, d := range ds {
			s = append(s, fmt.Sprintf("%.3f", d.Seconds()))
		}
		return strings.Join(s, " ")
	}
	fmt.Fprintf(w, "  floor  %-44s median %.3f s  (runs: %s)\n", "COPY (SELECT ark, url FROM ark) TO STDOUT", median(r.floors).Seconds(), runs(r.floors))
	fmt.Fprintf(w, "  arkhe  %-44s median %.3f s  (runs: %s)\n", "arkhe verify (full audit)", median(r.audits).Seconds(), runs(r.audits))
	fmt.Fprintf(w, "  also   %-44s        %.3f s\n", "arkhe verify --since (nothing changed)", r.since.Seconds())
	verdict := "met"
	if r.ratio() > benchVerifyTarget {
		verdict = "MISSED"
	}
	fmt.Fprintf(w, "  ratio  %.2fx the floor (target <= %.0fx: %s)\n", r.ratio(), benchVerifyTarget, verdict)
	if r.kept != "" {
		fmt.Fprintf(w, "  kept database %s for the next run (drop it to rebuild)\n", r.kept)
	}
}

// runBenchVerify builds (or reuses) the ledger and times the floor and the audit on it.
func runBenchVerify(ctx context.Context, cfg benchVerifyConfig) (*benchVerifyResult, error) {
	logf := func(format string, args ...any) { fmt.Fprintf(cfg.log, "bench verify: "+format+"\n", args...) }
	res := &benchVerifyResult{}
	adminURL := cfg.serverURL
	if adminURL == "" {
		dir := cfg.dir
		if dir == "" {
			d, err := os.MkdirTemp("", "arkhe-bench-verify-")
			if err != nil {
				return nil, err
			}
			defer os.RemoveAll(d)
			dir = d
		} else if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		if err := os.Chmod(dir, 0o755); err != nil { // the postgres account must reach it when run as root
			return nil, err
		}
		c, err := loader.StartCluster(ctx, loader.ClusterConfig{DataDir: filepath.Join(dir, "pg"), Persistent: true, Log: cfg.log})
		if err != nil {
			return nil, err
		}
		defer func() { _ = c.Stop(context.WithoutCancel(ctx)) }()
		adminURL = c.URL("postgres")
		res.server = "a local cluster in " + c.DataDir()
	} else {
		res.server = "the server of --database-url"
	}
	admin, err := pgxpool.New(ctx, adminURL)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	defer admin.Close()
	db := fmt.Sprintf("bench_verify_%d_%d_%s", cfg.rows, cfg.seed, loader.SchemaHash())
	dbURL, err := benchVerifyDatabaseURL(adminURL, db)
	if err != nil {
		return nil, err
	}
	if err := admin.QueryRow(ctx, `select exists (select 1 from pg_database where datname = $1)`, db).Scan(&res.reused); err != nil {
		return nil, err
	}
	if !res.reused {
		if err := benchVerifyFill(ctx, admin, db, dbURL, cfg, logf); err != nil {
			_, _ = admin.Exec(context.WithoutCancel(ctx), "drop database if exists "+pgx.Identifier{db}.Sanitize()+" with (force)")
			return nil, err
		}
	} else {
		logf("reusing the filled ledger %s", db)
	}
	l, err := loader.Open(ctx, dbURL, 4)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	if err := l.Pool.QueryRow(ctx, `select (select count(*) from ark), (select count(*) from ark_change)`).Scan(&res.rows, &res.changes); err != nil {
		return nil, err
	}
	res.settings = map[string]string{}
	for _, k := range benchVerifySettings {
		var v string
		if err := l.Pool.QueryRow(ctx, `select current_setting($1)`, k).Scan(&v); err != nil {
			return nil, err
		}
		res.settings[k] = v
	}
	floor := func() (time.Duration, error) {
		conn, err := l.Pool.Acquire(ctx)
		if err != nil {
			return 0, err
		}
		defer conn.Release()
		start := time.Now()
		if _, err := conn.Conn().PgConn().CopyTo(ctx, io.Discard, benchVerifyFloor); err != nil {
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
		return d, nil
	}
	logf("warming up: one floor COPY")
	if _, err := floor(); err != nil {
		return nil, err
	}
	if cfg.cpuprofile != "" {
		profile, err := os.Create(cfg.cpuprofile)
		if err != nil {
			return nil, err
		}
		defer profile.Close()
		if err := pprof.StartCPUProfile(profile); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile()
	}
	for i := 0; i < cfg.repeat; i++ {
		f, err := floor()
		if err != nil {
			return nil, err
		}
		a, err := audit(false)
		if err != nil {
			return nil, err
		}
		logf("run %d: floor %.3f s, verify %.3f s", i+1, f.Seconds(), a.Seconds())
		res.floors = append(res.floors, f)
		res.audits = append(res.audits, a)
	}
	if res.since, err = audit(true); err != nil {
		return nil, err
	}
	if cfg.serverURL != "" || cfg.dir != "" {
		res.kept = db
	}
	return res, nil
}

// benchVerifyFill creates database db, migrates it and fills it (fixtures.FillLedger, unchecked
// COPY), then VACUUM ANALYZE and CHECKPOINT so the timed runs read a settled table.
func benchVerifyFill(ctx context.Context, admin *pgxpool.Pool, db, dbURL string, cfg benchVerifyConfig, logf func(string, ...any)) error {
	if _, err := admin.Exec(ctx, "create database "+pgx.Identifier{db}.Sanitize()); err != nil {
		return err
	}
	l, err := loader.Open(ctx, dbURL, 2)
	if err != nil {
		return err
	}
	defer l.Close()
	if _, err := l.Init(ctx); err != nil {
		return err
	}
	start := time.Now()
	last := time.Now()
	err = fixtures.FillLedger(ctx, l.Pool, cfg.rows, cfg.seed, fixtures.FillOptions{
		Shoulders: []string{"/x9", "/b5", "/fk4", "/mm7"}, ChangeEvery: 10, Unchecked: true,
		Progress: func(done int) {
			if time.Since(last) > 5*time.Second || done == cfg.rows {
				last = time.Now()
				logf("filled %d of %d ARKs", done, cfg.rows)
			}
		}})
	if err != nil {
		return err
	}
	logf("filled %d ARKs in %.1f s; vacuum analyze", cfg.rows, time.Since(start).Seconds())
	if _, err := l.Pool.Exec(ctx, "vacuum analyze"); err != nil {
		return err
	}
	if _, err := l.Pool.Exec(ctx, "checkpoint"); err != nil {
		return err
	}
	return nil
}

// benchVerifyDatabaseURL returns the connection string u with its database replaced by db
// (URL or keyword/value form).
func benchVerifyDatabaseURL(u, db string) (string, error) {
	if strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://") {
		p, err := url.Parse(u)
		if err != nil {
			return "", fmt.Errorf("database URL: %w", err)
		}
		p.Path = "/" + db
		q := p.Query()
		if q.Has("dbname") {
			q.Set("dbname", db)
			p.RawQuery = q.Encode()
		}
		return p.String(), nil
	}
	return u + " dbname='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(db) + "'", nil
}
