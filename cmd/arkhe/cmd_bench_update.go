package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/arkhe-ledger/arkhe/bench"
	"github.com/arkhe-ledger/arkhe/loader"
)

func benchUpdateCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "update",
		Usage: "measure arkhe update against the hand-written SQL floor on one server",
		Description: "Starts a throw-away PostgreSQL cluster with the embedded default's settings (or uses --database-url), " +
			"fills a ledger of --rows ARKs, clones it, and measures on one copy arkhe update of a manifest repointing every " +
			"ARK and on the other the floor: COPY of the same (ark, url) rows into a temporary table, one INSERT INTO " +
			"ark_change … SELECT and one UPDATE ark … FROM it, in one transaction, with the ledger's triggers in place. " +
			"Then runs a loop of --loop single `arkhe ark repoint` processes, one after the other. arkhe update runs as a process " +
			"of its own. Prints both times and their ratio (target ≥ 0.8), arkhe update's peak resident set (target ≤ 256 MiB) " +
			"and its rate over the loop's (target ≥ 50).",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "rows", Value: 1_000_000, Usage: "ARKs in the ledger, every one repointed"},
			&cli.IntFlag{Name: "batch", Value: loader.DefaultUpdateBatch, Usage: "arkhe update's rows per transaction"},
			&cli.IntFlag{Name: "loop", Value: 10_000, Usage: "single `arkhe ark repoint` processes of the loop (0: no loop)"},
			&cli.StringFlag{Name: "bench-dir", Usage: "keep the cluster and the manifest here", DefaultText: "a temporary directory"},
		},
		Action: func(c *cli.Context) error {
			if c.Int("rows") < 1 || c.Int("batch") < 1 || c.Int("loop") < 0 {
				return errors.New("bench update: --rows and --batch must be positive, --loop not negative")
			}
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("bench update: %w", err)
			}
			cfg := bench.UpdateConfig{Rows: c.Int("rows"), BatchSize: c.Int("batch"), ServerURL: c.String("database-url"), Dir: c.String("bench-dir"),
				Exe: exe, Loop: min(c.Int("loop"), c.Int("rows"))}
			if !c.Bool("quiet") {
				cfg.Log = e.stderr
			}
			res, err := bench.RunUpdate(c.Context, cfg)
			if err != nil {
				return err
			}
			res.Print(e.stdout)
			return nil
		},
	}
}
