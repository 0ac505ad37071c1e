package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
)

// asArkheEnv, set to "1" in a child's environment, makes the test binary run as the arkhe CLI
// with its own arguments and exit with its status: tests that need arkhe as a process of its own
// (concurrent runs, a shell's completion, the benchmarks' arkhe mint and arkhe import, which run
// os.Executable()) start the test binary instead of building arkhe.
const asArkheEnv = "ARKHE_TEST_AS_ARKHE"

func TestMain(m *testing.M) {
	if os.Getenv(asArkheEnv) == "1" {
		// as main does: SIGTERM and SIGINT cancel the run's context
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, append([]string{"arkhe"}, os.Args[1:]...), os.Stdin, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	pgtest.Main(m)
}
