package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/arkhe-ledger/arkhe/bench"
	"github.com/arkhe-ledger/arkhe/loader"
	"github.com/arkhe-ledger/arkhe/localpg"
	"github.com/arkhe-ledger/arkhe/pipeline"
)

func benchMintCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "mint",
		Usage: "measure arkhe mint against two COPY floors on one server (--citus: on Citus beside a single node)",
		Description: "Starts a throw-away PostgreSQL cluster with the embedded default's settings (or uses --database-url), " +
			"preloads --preload ARKs, then measures (b) arkhe mint end to end from a generated CSV manifest of --rows rows, run as " +
			"its own process as a user runs it (--in-process runs it inside the bench), against two floors on the same server: " +
			"(a) the same final ARK rows with their receipts, pre-built in memory, sent with pgx CopyFrom in the batches arkhe's pipeline makes " +
			"(the same sizes in the same order per connection: each connection's first three an eighth, a quarter and a half of --batch), " +
			"on as many connections as arkhe has workers (--floor-workers), into a clone of the same ledger; (c) the plain floor: " +
			"the same rows as CSV with COPY ... FROM STDIN on one connection, as psql's \\copy sends them, into a table with only " +
			"the ARK primary key and the receipt's unique index (holding the preloaded ARKs too). Prints the settings, the " +
			"rates, arkhe's ratio to each floor, the CPU time of server and client, and arkhe mint's peak resident set; with " +
			"--repeat the phases alternate (arkhe first, then the floors first, ...) and the ratios are the medians of the runs' " +
			"ratios. With --preload the cluster and its preloaded template are kept in --bench-dir (default <data dir>/bench) for " +
			"the next run. " +
			"With --citus the same is measured on a throw-away Citus cluster (a coordinator and two workers on this machine, the same " +
			"settings on every node; arkhe's workers and the floor's connections write through every node in turn; the floor's sessions get the setting arkhe's mint workers get, " +
			"citus.multi_shard_modify_mode = sequential, so the ratio measures arkhe's work and not a connection mode) and on a single node, " +
			"their runs alternating, and the two are printed side by side: rows/s, server CPU per million ARKs (every node's), octets per ARK. " +
			"The plain floor runs on the single node only: its table's unique receipt index cannot exist on a table distributed by the ARK.",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "rows", Value: 1_000_000, Usage: "rows to mint"},
			&cli.IntFlag{Name: "preload", Usage: "ARKs already in the ledger"},
			&cli.IntFlag{Name: "batch", Value: pipeline.DefaultBatchSize, Usage: "rows per transaction, arkhe and floor alike"},
			&cli.IntFlag{Name: "workers", Value: pipeline.DefaultWorkers, Usage: "arkhe's COPY workers"},
			&cli.IntFlag{Name: "floor-workers", Usage: "connections the floor COPYs on", DefaultText: "--workers, the same parallelism"},
			&cli.IntFlag{Name: "repeat", Value: 1, Usage: "measure this many times into fresh clones and report the medians"},
			&cli.StringFlag{Name: "bench-dir", Usage: "keep the cluster, preloaded template and manifest here", DefaultText: "a temporary directory; <data dir>/bench with --preload"},
			&cli.StringFlag{Name: "name-check", Value: "auto", Usage: "how the mint sink checks drawn names against the ledger: auto, always (look up before COPY), never (look up after a refused COPY), chunks (COPY in chunks under savepoints, look up a refused chunk)"},
			&cli.StringFlag{Name: "receipt-check", Value: "auto", Usage: "mint sink receipt lookups before COPY: auto, always, never"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed of the manifest and preload"},
			&cli.StringFlag{Name: "copy", Value: "binary", Usage: "how arkhe sends rows: binary (its own COPY encoder) or pgx (pgx.CopyFrom with a CopyFromSource)"},
			&cli.StringFlag{Name: "cpu-profile", Usage: "write a Go CPU profile of the mint phase to this file (runs arkhe mint in the bench's process)"},
			&cli.BoolFlag{Name: "in-process", Usage: "run arkhe mint inside the bench's process (its sink's time split is printed; peak memory is then the bench's)"},
			&cli.BoolFlag{Name: "citus", Usage: "measure on a throw-away Citus cluster (coordinator + 2 workers) and a single node side by side (needs make citus)"},
			&cli.BoolFlag{Name: "receipt-on-row", Usage: "with --citus: also COPY the floor's rows into a Citus ledger whose receipts are ark columns with a non-unique index (the layout the receipt table was chosen over)"},
		},
		Action: func(c *cli.Context) error {
			if c.Int("rows") < 1 || c.Int("preload") < 0 || c.Int("batch") < 1 || c.Int("workers") < 1 || c.Int("floor-workers") < 0 || c.Int("repeat") < 1 {
				return errors.New("bench mint: --rows, --batch, --workers, --repeat must be positive, --preload and --floor-workers not negative")
			}
			nameCheck, err := loader.ParseCheck(c.String("name-check"))
			if err != nil {
				return err
			}
			receiptCheck, err := loader.ParseCheck(c.String("receipt-check"))
			if err != nil {
				return err
			}
			if c.Bool("receipt-on-row") && !c.Bool("citus") {
				return errors.New("bench mint --receipt-on-row: needs --citus (on a single node the receipts are on the ark row already)")
			}
			if c.Bool("citus") && c.String("database-url") != "" {
				return errors.New("bench mint --citus: starts clusters of its own: --database-url (or ARKHE_DATABASE_URL) cannot be given")
			}
			dir := c.String("bench-dir")
			if dir == "" && c.Int("preload") > 0 && c.String("database-url") == "" && !c.Bool("citus") {
				base := c.String("data-dir")
				if base == "" {
					if base, err = localpg.DefaultDataDir(); err != nil {
						return err
					}
				}
				dir = filepath.Join(base, "bench")
			}
			cfg := bench.MintConfig{Rows: c.Int("rows"), Preload: c.Int("preload"), BatchSize: c.Int("batch"),
				Workers: c.Int("workers"), FloorWorkers: c.Int("floor-workers"), Repeat: c.Int("repeat"), DatabaseURL: c.String("database-url"),
				Dir: dir, NameCheck: nameCheck, ReceiptCheck: receiptCheck, Seed: c.Uint64("seed"),
				CPUProfile: c.String("cpu-profile"), PgxCopyFrom: c.String("copy") == "pgx", Citus: c.Bool("citus"),
				ReceiptOnRow: c.Bool("receipt-on-row")}
			if cp := c.String("copy"); cp != "binary" && cp != "pgx" {
				return fmt.Errorf("bench mint: --copy %q: want binary or pgx", cp)
			}
			if !c.Bool("in-process") && cfg.CPUProfile == "" && !cfg.PgxCopyFrom {
				if cfg.Exe, err = os.Executable(); err != nil {
					return fmt.Errorf("bench mint: find the arkhe executable to run arkhe mint as its own process: %w", err)
				}
			}
			if !c.Bool("quiet") {
				cfg.Log = e.stderr
			}
			res, err := bench.RunMint(c.Context, cfg)
			if err != nil {
				return err
			}
			res.Print(e.stdout)
			if dir != "" {
				fmt.Fprintf(e.stdout, "kept: %s (remove it to rebuild the preloaded ledger)\n", dir)
			}
			return nil
		},
	}
}
