// Command arkhe keeps an ARK ledger in PostgreSQL and does the batch work around it: bulk mint,
// migration off arklet / N2T / EZID, the nightly integrity audit, sizing, Parquet reports and
// benchmarks. Run `arkhe help` for the commands. Exit codes: 0 done, 1 done
// with rejects or findings, 2 could not run.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
