package main

import (
	"os"
	"runtime/debug"
)

// boundMemory sets the Go runtime's soft memory limit to limit octets for a bulk run (mint:
// pipeline.MemoryLimitFor its window; import: pipeline.MemoryLimit), unless GOMEMLIMIT sets one;
// the returned func restores the previous limit.
func boundMemory(limit int64) func() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	prev := debug.SetMemoryLimit(limit)
	return func() { debug.SetMemoryLimit(prev) }
}
