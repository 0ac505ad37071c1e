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
		Usage: "time a full `arkhe verify` against a plain COPY of the columns it reads (target: at most 2x) and `verify --since` with nothing changed against the full audit (target: at most 0.1x at 10 million ARKs)",
		Description: "Starts a throw-away PostgreSQL cluster with the embedded default's settings (or uses the server of\n" +
			"--database-url, a superuser URL, creating database bench_verify_ROWS_SCHEMA there), fills it with --rows\n" +
			"ARKs over four shoulders, their receipts and one ARK_CHANGE per ten ARKs (fixtures.FillLedger), then\n" +
			"runs in turn, --repeat times after one warm-up COPY: COPY (SELECT ark, url FROM ark) TO STDOUT, a COPY of\n" +
			"exactly the columns of ark the audit reads, a full audit, and verify --since with nothing changed; it\n" +
			"prints the medians, the ratios (median of the per-run ratios) and the settings. A filled database is reused when it exists (with --bench-dir or\n" +
			"--database-url it is kept for the next run).",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "rows", Value: 1_000_000, Usage: "ARKs in the ledger"},
			&cli.IntFlag{Name: "repeat", Value: 3, Usage: "timed runs of each"},
			&cli.Int64Flag{Name: "seed", Value: 1, Usage: "seed of the filled ledger"},
			&cli.StringFlag{Name: "bench-dir", Usage: "keep the cluster and its filled ledger here", DefaultText: "a temporary directory, removed"},
			&cli.StringFlag{Name: "cpu-profile", Usage: "write a Go CPU profile of the timed audits to this file"},
		},
		Action: func(c *cli.Context) error {
			if c.Int("rows") < 1 || c.Int("repeat") < 1 || c.Int64("seed") < 0 {
				return errors.New("bench verify: --rows and --repeat must be positive, --seed not negative")
			}
			logw := e.stderr
			if c.Bool("quiet") {
				logw = io.Discard
			}
			res, err := bench.RunVerify(c.Context, bench.VerifyConfig{Rows: c.Int("rows"), Repeat: c.Int("repeat"),
				Seed: c.Int64("seed"), Dir: c.String("bench-dir"), ServerURL: c.String("database-url"), Log: logw,
				CPUProfile: c.String("cpu-profile")})
			if err != nil {
				return err
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
	fmt.Fprintf(w, "  floor  %-44s median %.3f s  (runs: %s)\n", "COPY of the columns the audit reads (below)", bench.Median(r.ColumnFloors).Seconds(), runs(r.ColumnFloors))
	fmt.Fprintf(w, "  arkhe  %-44s median %.3f s  (runs: %s)\n", "arkhe verify (full audit)", bench.Median(r.Audits).Seconds(), runs(r.Audits))
	fmt.Fprintf(w, "  arkhe  %-44s median %.3f s  (runs: %s)\n", "arkhe verify --since (nothing changed)", bench.Median(r.Sinces).Seconds(), runs(r.Sinces))
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	fmt.Fprintf(w, "  ratio  full audit %.2fx COPY (SELECT ark, url FROM ark) (ratio of medians; target <= %.0fx: %s)\n", r.Ratio(), bench.VerifyTarget, verdict(r.Ratio() <= bench.VerifyTarget))
	fmt.Fprintf(w, "  ratio  full audit %.2fx the COPY of its columns (median of per-run ratios; target <= %.0fx: %s)\n", r.ColumnsRatio(), bench.VerifyColumnsTarget, verdict(r.ColumnsRatio() <= bench.VerifyColumnsTarget))
	fmt.Fprintf(w, "  ratio  --since (nothing changed) %.3fx the full audit (median of per-run ratios; target <= %.1fx at 10 million ARKs: %s)\n", r.SinceRatio(), bench.VerifySinceTarget, verdict(r.SinceRatio() <= bench.VerifySinceTarget))
	fmt.Fprintf(w, "  columns floor: %s\n", bench.VerifyColumnsFloor)
	if r.Kept != "" {
		fmt.Fprintf(w, "  kept database %s for the next run (drop it to rebuild)\n", r.Kept)
	}
}
