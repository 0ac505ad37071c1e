package main

import (
	"os"
	"runtime/debug"

	"github.com/arkhe-ledger/arkhe/pipeline"
)

// boundMemory sets the Go runtime's soft memory limit to pipeline.MemoryLimit for a bulk run
// (mint, import), unless GOMEMLIMIT sets one; the returned func restores the previous limit.
func boundMemory() func() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	prev := debug.SetMemoryLimit(pipeline.MemoryLimit)
	return func() { debug.SetMemoryLimit(prev) }
}
