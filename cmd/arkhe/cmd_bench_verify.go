package main

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/arkhe-ledger/arkhe/bench"
)

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
			res, err := bench.RunVerify(c.Context, bench.VerifyConfig{Rows: c.Int("rows"), Repeat: c.Int("repeat"),
				Seed: c.Int64("seed"), Dir: c.String("bench-dir"), ServerURL: c.String("database-url"), Log: logw,
				CPUProfile: c.String("cpu-profile")})
			if err != nil {
				return cannot(err)
			}
			printBenchVerify(e.stdout, res)
			return nil
		},
	}
}

// printBenchVerify writes the one-screen report of `arkhe bench verify`.
func printBenchVerify(w io.Writer, r *bench.VerifyResult) {
	reused := ""
	if r.Reused {
		reused = " (filled by an earlier run)"
	}
	fmt.Fprintf(w, "arkhe bench verify: %s, %s%s, on %s\n", plural(r.Rows, "ARK", "ARKs"), plural(r.Changes, "ARK_CHANGE row", "ARK_CHANGE rows"), reused, r.Server)
	var set []string
	for _, k := range bench.VerifySettings() {
		set = append(set, k+"="+r.Settings[k])
	}
	fmt.Fprintf(w, "  settings: %s; GOMAXPROCS=%d\n", strings.Join(set, " "), runtime.GOMAXPROCS(0))
	runs := func(ds []time.Duration) string {
		var s []string
		for _, d := range ds {
			s = append(s, fmt.Sprintf("%.3f", d.Seconds()))
		}
		return strings.Join(s, " ")
	}
	fmt.Fprintf(w, "  floor  %-44s median %.3f s  (runs: %s)\n", "COPY (SELECT ark, url FROM ark) TO STDOUT", bench.Median(r.Floors).Seconds(), runs(r.Floors))
	fmt.Fprintf(w, "  arkhe  %-44s median %.3f s  (runs: %s)\n", "arkhe verify (full audit)", bench.Median(r.Audits).Seconds(), runs(r.Audits))
	fmt.Fprintf(w, "  also   %-44s        %.3f s\n", "arkhe verify --since (nothing changed)", r.Since.Seconds())
	verdict := "met"
	if r.Ratio() > bench.VerifyTarget {
		verdict = "MISSED"
	}
	fmt.Fprintf(w, "  ratio  %.2fx the floor (target <= %.0fx: %s)\n", r.Ratio(), bench.VerifyTarget, verdict)
	if r.Kept != "" {
		fmt.Fprintf(w, "  kept database %s for the next run (drop it to rebuild)\n", r.Kept)
	}
}
