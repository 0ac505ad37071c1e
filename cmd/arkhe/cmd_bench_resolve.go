package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/arkhe-ledger/arkhe/bench"
)

func benchResolveCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "resolve",
		Usage: "load arkhe serve with wrk against nginx with the exported map, a pgbench floor of the same lookup, and arklet (targets: >= 20,000 req/s, p99 <= 10 ms, >= 0.5x nginx, >= 1.0x the floor, >= 10x arklet, RSS <= 256 MB)",
		Description: "Starts a throw-away PostgreSQL cluster with the embedded default's settings (or uses the server of\n" +
			"--database-url, a superuser URL, creating database bench_resolve_ARKS_SEED_SCHEMA there), fills it with --arks\n" +
			"ARKs (fixtures.FillLedger) unless it exists, draws a request mix of existing ARKs (10% with a suffix), 5%\n" +
			"unknown names and 5% ?info, and loads in turn, each over --connections keep-alive connections for --duration\n" +
			"after a warm-up: nginx serving the exported map (two workers), pgbench with the resolver's lookup (prepared),\n" +
			"arkhe serve (this binary), and arklet under Debian's Django (its threaded server) on a copy of the ARKs.\n" +
			"Prints requests/s, p50/p99, errors, the server's peak RSS, the load average after each run, and the ratios.",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "arks", Value: 1_000_000, Usage: "ARKs in the ledger"},
			&cli.DurationFlag{Name: "duration", Value: 30 * time.Second, Usage: "measured load of each resolver"},
			&cli.DurationFlag{Name: "warmup", Value: 3 * time.Second, Usage: "load before each measured one (0 for none)"},
			&cli.IntFlag{Name: "connections", Value: 64, Usage: "keep-alive connections (wrk -c, pgbench -c)"},
			&cli.IntFlag{Name: "threads", Value: 2, Usage: "load generator threads (wrk -t, pgbench -j)"},
			&cli.StringSliceFlag{Name: "resolver", Usage: "run only these (nginx, floor, arkhe, arklet; repeatable)", DefaultText: "all"},
			&cli.StringFlag{Name: "arklet", Value: "../shared/vendor/arklet/arklet-272c5e6.tar.gz", Usage: "arklet's source (tar.gz); \"\" skips arklet"},
			&cli.StringSliceFlag{Name: "serve-flag", Usage: "a flag passed on to arkhe serve (repeatable, e.g. --serve-flag=--pool=8)"},
			&cli.Int64Flag{Name: "hostile", Usage: "instead: send at least this many requests of a hostile mix to arkhe serve (bad escapes, over-long paths, control characters, dot-segments) while slow clients send a byte a second; report 5xx answers and whether ordinary requests were still answered"},
			&cli.IntFlag{Name: "beside-mint", Usage: "instead: load arkhe serve alone, then while arkhe mint mints this many rows into a copy of the filled ledger (dropped after); report the latency of both"},
			&cli.Int64Flag{Name: "seed", Value: 1, Usage: "seed of the filled ledger and of the mix"},
			&cli.StringFlag{Name: "bench-dir", Usage: "keep the cluster and its filled ledger here", DefaultText: "a temporary directory, removed"},
		},
		Action: func(c *cli.Context) error {
			if c.Int("arks") < 1 || c.Duration("duration") <= 0 || c.Int("connections") < 1 || c.Int("threads") < 1 || c.Int64("seed") < 0 {
				return errors.New("bench resolve: --arks, --duration, --connections and --threads must be positive, --seed not negative")
			}
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("bench resolve: %w", err)
			}
			cfg := bench.ResolveConfig{ARKs: c.Int("arks"), Seed: c.Int64("seed"), Duration: c.Duration("duration"),
				Warmup: c.Duration("warmup"), Connections: c.Int("connections"), Threads: c.Int("threads"),
				Resolvers: c.StringSlice("resolver"), Exe: exe, ServeArgs: c.StringSlice("serve-flag"),
				Dir: c.String("bench-dir"), ServerURL: c.String("database-url"), Arklet: c.String("arklet")}
			if !c.Bool("quiet") {
				cfg.Log = e.stderr
			}
			if n := c.Int64("hostile"); n != 0 {
				if n < 0 {
					return errors.New("bench resolve: --hostile must be positive")
				}
				res, h, err := bench.RunHostile(c.Context, cfg, n)
				if err != nil {
					return err
				}
				printBenchHostile(e.stdout, res, h)
				return nil
			}
			if n := c.Int("beside-mint"); n != 0 {
				if n < 0 {
					return errors.New("bench resolve: --beside-mint must be positive")
				}
				res, b, err := bench.RunBesideMint(c.Context, cfg, n)
				if err != nil {
					return err
				}
				printBenchBesideMint(e.stdout, res, b)
				return nil
			}
			res, err := bench.RunResolve(c.Context, cfg)
			if err != nil {
				return err
			}
			printBenchResolve(e.stdout, res)
			return nil
		},
	}
}

// printBenchResolve writes the one-screen report of `arkhe bench resolve`.
func printBenchResolve(w io.Writer, r *bench.ResolveResult) {
	reused := ""
	if r.Reused {
		reused = " (filled by an earlier run)"
	}
	fmt.Fprintf(w, "arkhe bench resolve: %s%s, on %s\n", plural(r.ARKs, "ARK", "ARKs"), reused, r.Server)
	fmt.Fprintf(w, "  mix: %s\n", r.Mix)
	fmt.Fprintf(w, "  %-7s %10s %9s %9s %8s %10s %8s %19s  %s\n", "", "req/s", "p50", "p99", "errors", "non-2xx/3xx", "RSS", "CPU us/req (srv+db)", "load after")
	for _, l := range r.Results {
		if l.Skipped != "" {
			fmt.Fprintf(w, "  %-7s skipped: %s\n", l.Name, l.Skipped)
			continue
		}
		rss := "-"
		if l.RSS > 0 {
			rss = fmt.Sprintf("%d MB", l.RSS>>20)
		}
		cr, cd := l.CPUPerRequest()
		cpu := fmt.Sprintf("%.0f + %.0f", float64(cr)/float64(time.Microsecond), float64(cd)/float64(time.Microsecond))
		fmt.Fprintf(w, "  %-7s %10.0f %9s %9s %8d %10d %8s %19s  %s\n", l.Name, l.RPS, fmtLatency(l.P50), fmtLatency(l.P99), l.Errors, l.Non2xx3xx, rss, cpu, l.Load)
	}
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	a, ok := r.Get(bench.ResolverArkhe)
	if !ok {
		return
	}
	fmt.Fprintf(w, "  CPU us/req: processor time per request of the resolver's processes and of PostgreSQL during the measured run\n")
	if n := a.CacheHits + a.CacheMisses; n > 0 {
		fmt.Fprintf(w, "  arkhe serve's cache: %.1f%% of its ARK look-ups were hits (%d of %d, warm-up included)\n",
			100*float64(a.CacheHits)/float64(n), a.CacheHits, n)
	}
	var goals []string
	goals = append(goals, fmt.Sprintf("%.0f req/s (>= %d: %s)", a.RPS, bench.ResolveTargetRPS, verdict(a.RPS >= bench.ResolveTargetRPS)))
	goals = append(goals, fmt.Sprintf("p99 %s (<= %s: %s)", fmtLatency(a.P99), bench.ResolveTargetP99, verdict(a.P99 <= bench.ResolveTargetP99)))
	goals = append(goals, fmt.Sprintf("RSS %d MB (<= %d MB: %s)", a.RSS>>20, bench.ResolveTargetRSS>>20, verdict(a.RSS <= bench.ResolveTargetRSS)))
	fmt.Fprintf(w, "  arkhe serve: %s\n", strings.Join(goals, ", "))
	for _, g := range []struct {
		name   string
		target float64
	}{{bench.ResolverNginx, bench.ResolveTargetNginx}, {bench.ResolverFloor, bench.ResolveTargetFloor}, {bench.ResolverArklet, bench.ResolveTargetArklet}} {
		if ratio := r.Ratio(g.name); ratio > 0 {
			fmt.Fprintf(w, "  ratio  arkhe serve %.2fx %s (req/s; target >= %.1fx: %s)\n", ratio, g.name, g.target, verdict(ratio >= g.target))
		}
	}
}

// fmtLatency writes d in milliseconds with two decimals.
func fmtLatency(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

// printBenchHostile writes the report of `arkhe bench resolve --hostile`.
func printBenchHostile(w io.Writer, r *bench.ResolveResult, h *bench.HostileResult) {
	fmt.Fprintf(w, "arkhe bench resolve --hostile: %s, on %s\n", plural(r.ARKs, "ARK", "ARKs"), r.Server)
	fmt.Fprintf(w, "  mix: %s\n", r.Mix)
	fmt.Fprintf(w, "  arkhe serve: %d requests in %d wrk runs, %.0f req/s, p50 %s (median of runs), p99 %s (worst run), %d socket errors, %d non-2xx/3xx, RSS %d MB, load after %s\n",
		h.Requests, h.Rounds, h.RPS, fmtLatency(h.P50), fmtLatency(h.P99), h.Errors, h.Non2xx3xx, h.RSS>>20, h.Load)
	cr, cd := h.CPUPerRequest()
	fmt.Fprintf(w, "  CPU per request: arkhe serve %.0f us, database %.0f us\n", float64(cr)/float64(time.Microsecond), float64(cd)/float64(time.Microsecond))
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	fmt.Fprintf(w, "  5xx answers (server's count): %d (target 0: %s)\n", h.Server5xx, verdict(h.Server5xx == 0))
	fmt.Fprintf(w, "  ordinary requests beside the mix: %d of %d answered with their redirect (target all: %s)\n",
		h.Probes-h.ProbeFailures, h.Probes, verdict(h.ProbeFailures == 0 && h.Probes > 0))
	fmt.Fprintf(w, "  slow clients cut off by the header timeout: %d times\n", h.SlowCut)
}

// printBenchBesideMint writes the report of `arkhe bench resolve --beside-mint`.
func printBenchBesideMint(w io.Writer, r *bench.ResolveResult, b *bench.BesideMintResult) {
	fmt.Fprintf(w, "arkhe bench resolve --beside-mint: %s, on %s\n", plural(r.ARKs, "ARK", "ARKs"), r.Server)
	fmt.Fprintf(w, "  mix: %s\n", r.Mix)
	for _, l := range []struct {
		name string
		l    bench.LoadResult
	}{{"alone", b.Alone}, {"beside", b.Beside}} {
		cr, cd := l.l.CPUPerRequest()
		fmt.Fprintf(w, "  %-7s %8.0f req/s, p50 %s, p99 %s, %d errors, %d non-2xx/3xx, RSS %d MB, CPU us/req %.0f + %.0f, load after %s\n", l.name,
			l.l.RPS, fmtLatency(l.l.P50), fmtLatency(l.l.P99), l.l.Errors, l.l.Non2xx3xx, l.l.RSS>>20,
			float64(cr)/float64(time.Microsecond), float64(cd)/float64(time.Microsecond), l.l.Load)
	}
	rate := 0.0
	if b.MintElapsed > 0 {
		rate = float64(b.Rows) / b.MintElapsed.Seconds()
	}
	fmt.Fprintf(w, "  the mint beside: %s in %s (%.0f rows/s), over %d wrk runs (p50: their median, p99: the worst run's)\n",
		plural(b.Rows, "ARK", "ARKs"), b.MintElapsed.Round(100*time.Millisecond), rate, b.Rounds)
	verdict := "met"
	if b.Beside.P99 > bench.ResolveTargetP99 {
		verdict = "MISSED"
	}
	fmt.Fprintf(w, "  arkhe serve beside the mint: p99 %s (<= %s: %s)\n", fmtLatency(b.Beside.P99), bench.ResolveTargetP99, verdict)
}
