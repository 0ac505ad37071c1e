package main

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/arkhe-ledger/arkhe/bench"
)

func benchLinkcheckCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "linkcheck",
		Usage: "time `arkhe linkcheck` through the ledger against local HTTP servers: checks/s against min(hosts/interval, workers/latency), and peak memory at two ledger sizes",
		Description: "Starts --hosts local HTTP servers (each its own made-up host name on 127.0.0.1) that answer after\n" +
			"--latency, and a throw-away PostgreSQL cluster with the embedded default's settings (or uses the server of\n" +
			"--database-url). For each of --sizes it loads a fresh ledger of that many ARKs, targets spread over the\n" +
			"hosts, runs the link check over it (the ledger's source and sink, every check committed), and reports\n" +
			"checks per second against the bound, the peak heap (flat when memory does not grow with the ledger), and\n" +
			"the time of a second run that finds nothing due.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "sizes", Value: "10000,100000", Usage: "ledger sizes (ARKs), comma-separated, one run each"},
			&cli.IntFlag{Name: "hosts", Value: 1000, Usage: "local HTTP servers"},
			&cli.StringFlag{Name: "latency", Value: "50ms", Usage: "how long each server takes to answer"},
			&cli.StringFlag{Name: "per-host-interval", Value: "1s", Usage: "least time between the end of one request to a host and the start of the next"},
			&cli.IntFlag{Name: "workers", Value: 64, Usage: "checks in flight at once"},
			&cli.StringFlag{Name: "bench-dir", Usage: "keep the cluster here", DefaultText: "a temporary directory, removed"},
		},
		Action: func(c *cli.Context) error {
			var sizes []int
			for _, s := range strings.Split(c.String("sizes"), ",") {
				n, err := strconv.Atoi(strings.TrimSpace(s))
				if err != nil || n < 1 {
					return fmt.Errorf("bench linkcheck: --sizes %q: want positive numbers, comma-separated", c.String("sizes"))
				}
				sizes = append(sizes, n)
			}
			latency, err := parseSpan("latency", c.String("latency"))
			if err != nil {
				return err
			}
			interval, err := parseSpan("per-host-interval", c.String("per-host-interval"))
			if err != nil || interval == 0 {
				return errors.New("bench linkcheck: --per-host-interval must be a duration more than 0")
			}
			if c.Int("hosts") < 1 || c.Int("workers") < 1 {
				return errors.New("bench linkcheck: --hosts and --workers must be positive")
			}
			logw := e.stderr
			if c.Bool("quiet") {
				logw = io.Discard
			}
			res, err := bench.RunLinkCheck(c.Context, bench.LinkCheckConfig{Sizes: sizes, Hosts: c.Int("hosts"), Latency: latency,
				Interval: interval, Workers: c.Int("workers"), Dir: c.String("bench-dir"), ServerURL: c.String("database-url"), Log: logw})
			if err != nil {
				return err
			}
			printBenchLinkcheck(e.stdout, res)
			return nil
		},
	}
}

// printBenchLinkcheck writes the one-screen report of `arkhe bench linkcheck`.
func printBenchLinkcheck(w io.Writer, r *bench.LinkCheckResult) {
	cfg := r.Config
	fmt.Fprintf(w, "arkhe bench linkcheck: %d hosts answering after %s, per-host interval %s, %d workers, on %s\n",
		cfg.Hosts, cfg.Latency, cfg.Interval, cfg.Workers, r.Server)
	var set []string
	for _, k := range bench.ServerSettings() {
		if v, ok := r.Settings[k]; ok {
			set = append(set, k+"="+v)
		}
	}
	fmt.Fprintf(w, "  settings: %s; GOMAXPROCS=%d\n", strings.Join(set, " "), runtime.GOMAXPROCS(0))
	mib := func(b uint64) float64 { return float64(b) / (1 << 20) }
	for _, run := range r.Runs {
		fmt.Fprintf(w, "  %s ARKs: %s checks in %.1f s = %.0f checks/s; bound min(hosts/interval, workers/latency) = %.0f/s (%.0f%%), "+
			"hosts/(interval+latency) = %.0f/s (%.0f%%); %s commits; live heap %.1f MiB before, peak %.1f MiB (allocated peak %.1f MiB); "+
			"loaded in %.1f s; a run with nothing due: %.3f s\n",
			thousands(int64(run.ARKs)), thousands(run.Checked), run.Elapsed.Seconds(), run.Rate, run.Bound, 100*run.Rate/run.Bound,
			run.HostBound, 100*run.Rate/run.HostBound, thousands(run.Commits), mib(run.BaseHeap), mib(run.PeakLiveHeap), mib(run.PeakHeap),
			run.Fill.Seconds(), run.Empty.Seconds())
	}
}
