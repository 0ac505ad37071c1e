package main

import (
	"errors"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/arkhe-ledger/arkhe/bench"
)

func benchAPICommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "api",
		Usage: "measure single mints over the API (HTTP keep-alive, concurrent clients) against the pgbench floor of ark_mint_one",
		Description: "Starts a throw-away PostgreSQL cluster with the embedded default's settings (or uses --database-url), " +
			"registers a client with an API key, serves the API on a loopback port and runs --clients concurrent clients " +
			"posting /mint (each with its own Idempotency-Key) for --duration; then pgbench runs as many clients calling " +
			"ark_mint_one, the same single-row mint, for as long; with --arklet, arklet's POST /mint too. Prints the rates and ratios (target >= 0.5 of the floor).",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "clients", Value: 32, Usage: "concurrent HTTP clients (and pgbench clients)"},
			&cli.DurationFlag{Name: "duration", Value: 10 * time.Second, Usage: "how long each side runs"},
			&cli.IntFlag{Name: "pool", Value: 16, Usage: "the API server's ledger connections"},
			&cli.StringFlag{Name: "arklet", Usage: "arklet's source archive (.tar.gz) to measure its POST /mint too, under /usr/bin/python3 with Debian's Django"},
			&cli.StringFlag{Name: "bench-dir", Usage: "keep the cluster here", DefaultText: "a temporary directory"},
		},
		Action: func(c *cli.Context) error {
			if c.Int("clients") < 1 || c.Duration("duration") <= 0 || c.Int("pool") < 1 {
				return errors.New("bench api: --clients, --duration and --pool must be positive")
			}
			cfg := bench.APIConfig{Clients: c.Int("clients"), Duration: c.Duration("duration"), Pool: c.Int("pool"), Arklet: c.String("arklet"),
				ServerURL: c.String("database-url"), Dir: c.String("bench-dir")}
			if !c.Bool("quiet") {
				cfg.Log = e.stderr
			}
			res, err := bench.RunAPI(c.Context, cfg)
			if err != nil {
				return err
			}
			res.Print(e.stdout)
			return nil
		},
	}
}
