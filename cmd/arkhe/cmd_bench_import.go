package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/arkhe-ledger/arkhe/bench"
	"github.com/arkhe-ledger/arkhe/importer"
)

func benchImportCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "import",
		Usage: "measure arkhe import against the plain COPY floor on one server",
		Description: "Starts a throw-away PostgreSQL cluster with the embedded default's settings (or uses --database-url), " +
			"generates an arklet dumpdata export of --rows records (with the fixtures' edge cases), then measures (b) arkhe " +
			"import of it end to end into a fresh ledger and (a) the floor: the ark rows the import wrote, pre-built in memory, " +
			"sent with one pgx CopyFrom into a second fresh ledger with the same NAANs and shoulders. arkhe import runs as its " +
			"own process, as a user runs it (--in-process runs it inside the bench). Prints the settings, both rates and " +
			"their ratio (target ≥ 0.8), and arkhe import's peak resident set; with --repeat, the median of the runs' ratios.",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "rows", Value: 1_000_000, Usage: "ark.ark records in the generated dump"},
			&cli.IntFlag{Name: "batch", Value: importer.DefaultBatch, Usage: "records the importer classifies and inserts at a time"},
			&cli.StringFlag{Name: "bench-dir", Usage: "keep the cluster and the generated dump here", DefaultText: "a temporary directory"},
			&cli.Int64Flag{Name: "seed", Value: 2, Usage: "seed of the generated dump"},
			&cli.IntFlag{Name: "repeat", Value: 1, Usage: "measure the pair this many times, each into two fresh ledgers, and report the median ratio"},
			&cli.StringFlag{Name: "cpu-profile", Usage: "write a Go CPU profile of the (first) import phase to this file (runs arkhe import in the bench's process)"},
			&cli.BoolFlag{Name: "reconcile", Usage: "also time arkhe reconcile of the dump against the imported ledger (bench-large: bounded memory)"},
			&cli.BoolFlag{Name: "in-process", Usage: "run arkhe import inside the bench's process (peak memory is then the bench's)"},
		},
		Action: func(c *cli.Context) error {
			if c.Int("rows") < 1 || c.Int("batch") < 1 || c.Int("repeat") < 1 {
				return errors.New("bench import: --rows, --batch and --repeat must be positive")
			}
			cfg := bench.ImportConfig{Rows: c.Int("rows"), BatchSize: c.Int("batch"), DatabaseURL: c.String("database-url"),
				Dir: c.String("bench-dir"), Seed: c.Int64("seed"), CPUProfile: c.String("cpu-profile"),
				Reconcile: c.Bool("reconcile"), Repeat: c.Int("repeat")}
			if !c.Bool("quiet") {
				cfg.Log = e.stderr
			}
			if !c.Bool("in-process") && cfg.CPUProfile == "" {
				exe, err := os.Executable()
				if err != nil {
					return fmt.Errorf("bench import: find the arkhe executable to run arkhe import as its own process: %w", err)
				}
				cfg.Exe = exe
			}
			res, err := bench.RunImport(c.Context, cfg)
			if err != nil {
				return err
			}
			res.Print(e.stdout)
			return nil
		},
	}
}
