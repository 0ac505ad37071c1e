package main

import (
	"context"
	"os"
	"testing"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
)

// asArkhe, set in a test binary's environment, makes the binary run as arkhe itself: the
// benchmarks run `arkhe mint` and `arkhe import` as processes of their own (os.Executable()),
// which in a test is this binary.
const asArkhe = "ARKHE_TEST_BINARY_IS_ARKHE"

func TestMain(m *testing.M) {
	if os.Getenv(asArkhe) == "1" {
		os.Exit(run(context.Background(), os.Args, os.Stdin, os.Stdout, os.Stderr))
	}
	pgtest.Main(m)
}
