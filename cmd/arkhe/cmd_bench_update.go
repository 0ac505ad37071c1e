package main

import (
	"errors"

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
			"Prints both times and their ratio (target ≥ 0.8).",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "rows", Value: 1_000_000, Usage: "ARKs in the ledger, every one repointed"},
			&cli.IntFlag{Name: "batch", Value: loader.DefaultUpdateBatch, Usage: "arkhe update's rows per transaction"},
			&cli.StringFlag{Name: "bench-dir", Usage: "keep the cluster and the manifest here", DefaultText: "a temporary directory"},
		},
		Action: func(c *cli.Context) error {
			if c.Int("rows") < 1 || c.Int("batch") < 1 {
				return errors.New("bench update: --rows and --batch must be positive")
			}
			cfg := bench.UpdateConfig{Rows: c.Int("rows"), BatchSize: c.Int("batch"), ServerURL: c.String("database-url"), Dir: c.String("bench-dir")}
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
