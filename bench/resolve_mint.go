package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// BesideMintResult is what RunBesideMint measured of arkhe serve: its load alone, then while an
// `arkhe mint` of Rows rows wrote to the same ledger on the same server.
type BesideMintResult struct {
	// Alone is arkhe serve's load before the mint (after the warm-up); Beside its load in wrk
	// runs of ResolveConfig.Duration from the mint's start to its end (Rounds runs: P50 is their
	// median, P99 the worst run's, RPS over all of them).
	Alone, Beside LoadResult
	Rounds        int
	// Rows are the ARKs the mint added to the ledger, in MintElapsed (wall time of the process).
	Rows        int64
	MintElapsed time.Duration
}

// RunBesideMint measures arkhe serve (cfg.Exe) on a copy of RunResolve's filled ledger
// (bench_resolve_ARKS_SEED_SCHEMA, filled first if absent; the copy, made with CREATE DATABASE
// … TEMPLATE, is dropped after, so the filled ledger keeps its ARKs): a wrk run of the resolve
// mix alone, then wrk runs of cfg.Duration for as long as `arkhe mint` (cfg.Exe, a process of its
// own, as fixtures.FillClient in the fill's shoulder) mints rows rows from a CSV manifest into
// the copy. rows must be positive. The mint must exit 0; otherwise the error carries its stderr.
func RunBesideMint(ctx context.Context, cfg ResolveConfig, rows int) (*ResolveResult, *BesideMintResult, error) {
	if rows < 1 || cfg.ARKs < 1 || cfg.Duration <= 0 || cfg.Connections < cfg.Threads || cfg.Threads < 1 || cfg.Exe == "" {
		return nil, nil, errors.New("bench resolve --beside-mint: rows, ARKs, duration and threads positive, connections at least threads, an arkhe binary")
	}
	if _, err := exec.LookPath("wrk"); err != nil {
		return nil, nil, errors.New("bench resolve --beside-mint: wrk not found: make bench installs it (apt)")
	}
	srv, err := openServer(ctx, "resolve", cfg.ServerURL, cfg.Dir, "", cfg.Log)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = srv.close(context.WithoutCancel(ctx)) }()
	res := &ResolveResult{Server: srv.desc}
	db, err := filledLedger(ctx, srv, cfg, &res.Reused)
	if err != nil {
		return nil, nil, err
	}
	if cfg.ServerURL != "" || cfg.Dir != "" {
		res.Kept = db
	}
	// the mint adds ARKs, which are never deleted: it writes to a copy, dropped after
	cp := db + "_mint"
	drop := "drop database if exists " + pgx.Identifier{cp}.Sanitize() + " with (force)"
	if _, err := srv.admin.Exec(ctx, drop); err != nil {
		return nil, nil, err
	}
	srv.logf("copying %s to %s for the mint", db, cp)
	if _, err := srv.admin.Exec(ctx, "create database "+pgx.Identifier{cp}.Sanitize()+" template "+pgx.Identifier{db}.Sanitize()); err != nil {
		return nil, nil, fmt.Errorf("bench resolve --beside-mint: copy the filled ledger: %w", err)
	}
	defer func() { _, _ = srv.admin.Exec(context.WithoutCancel(ctx), drop) }()
	cpURL := srv.url(cp)
	l, err := ledger.Open(ctx, cpURL, 4)
	if err != nil {
		return nil, nil, err
	}
	defer l.Close()
	if err := l.Pool.QueryRow(ctx, `select count(*) from ark`).Scan(&res.ARKs); err != nil {
		return nil, nil, err
	}
	work, err := os.MkdirTemp(srv.dir, "beside-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(work)
	keys, err := sampleKeys(ctx, l.Pool, cfg.Seed)
	if err != nil {
		return nil, nil, err
	}
	paths := resolveMix(keys, cfg.Seed)
	res.Mix = fmt.Sprintf("%d requests cycled (80%% existing ARKs, 10%% with a suffix, 5%% unknown names, 5%% ?info), %d connections, %d threads, %s per run; beside: arkhe mint of %d rows",
		len(paths), cfg.Connections, cfg.Threads, cfg.Duration, rows)
	script, err := writeMix(work, paths)
	if err != nil {
		return nil, nil, err
	}
	manifest := filepath.Join(work, "beside.csv")
	if err := writeBesideManifest(manifest, rows, cfg.Seed); err != nil {
		return nil, nil, err
	}
	r := &resolveRun{cfg: cfg, work: work, script: script, dbURL: cpURL, pool: l.Pool, keys: keys, logf: srv.logf, dataDirs: srv.dataDirs}
	b := &BesideMintResult{}
	err = r.serveArkhe(ctx, func(addr string, pid int) error {
		base := "http://" + addr
		var err error
		if b.Alone, err = r.wrk(ctx, base, true, pid); err != nil {
			return err
		}
		b.Alone.Name, b.Alone.RSS, b.Alone.Load = ResolverArkhe, treeHWM(pid), loadAvg()
		var before int64
		if err := l.Pool.QueryRow(ctx, `select count(*) from ark`).Scan(&before); err != nil {
			return err
		}
		cmd := exec.CommandContext(ctx, cfg.Exe, "--quiet", "--database-url", cpURL, "mint", "--client", fixtures.FillClient, "--shoulder", fixtures.FillNAAN+fixtures.FillShoulder,
			"--out", filepath.Join(work, "beside.mintmap.csv"), "--rejects", filepath.Join(work, "beside.rejects.csv"), manifest)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("arkhe mint: %w", err)
		}
		mintDone := make(chan error, 1)
		go func() { mintDone <- cmd.Wait() }()
		srv.logf("arkhe mint of %d rows started beside arkhe serve", rows)
		var lat50, lat99 []time.Duration
		total := LoadResult{Name: ResolverArkhe}
		var mintErr error
		for running := true; running; {
			lr, err := r.wrk(ctx, base, false, pid)
			if err != nil {
				_ = cmd.Process.Kill()
				<-mintDone
				return err
			}
			b.Rounds++
			total.Requests += lr.Requests
			total.Elapsed += lr.Elapsed
			total.Errors += lr.Errors
			total.Non2xx3xx += lr.Non2xx3xx
			total.CPUResolver += lr.CPUResolver
			total.CPUDatabase += lr.CPUDatabase
			lat50, lat99 = append(lat50, lr.P50), append(lat99, lr.P99)
			srv.logf("beside the mint, run %d: %.0f req/s, p50 %s, p99 %s", b.Rounds, lr.RPS, lr.P50, lr.P99)
			select {
			case mintErr = <-mintDone:
				b.MintElapsed = time.Since(start)
				running = false
			default:
			}
		}
		if mintErr != nil {
			return fmt.Errorf("arkhe mint beside arkhe serve: %w: %s", mintErr, strings.TrimSpace(stderr.String()))
		}
		total.RPS = float64(total.Requests) / total.Elapsed.Seconds()
		total.P50, total.P99 = Median(lat50), slices.Max(lat99)
		total.RSS, total.Load = treeHWM(pid), loadAvg()
		b.Beside = total
		var after int64
		if err := l.Pool.QueryRow(ctx, `select count(*) from ark`).Scan(&after); err != nil {
			return err
		}
		b.Rows = after - before
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("bench resolve --beside-mint: %w", err)
	}
	return res, b, nil
}

// writeBesideManifest writes a mint manifest of rows rows to path: request_id bm-SEED-I and a
// target https://example.org/beside/I.
func writeBesideManifest(path string, rows int, seed int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	fmt.Fprintln(w, "request_id,url")
	for i := range rows {
		fmt.Fprintf(w, "bm-%d-%d,https://example.org/beside/%d\n", seed, i, i)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
