package bench

import (
	"os/exec"
	"runtime"
	"testing"
)

// TestRunChildPeakIsTheChilds: the peak resident set runChild reports is the child's own, not
// the forking process's, however large that one is.
func TestRunChildPeakIsTheChilds(t *testing.T) {
	ballast := make([]byte, 150<<20) // this process: 150 MB more resident
	for i := 0; i < len(ballast); i += 4096 {
		ballast[i] = 1
	}
	run, err := runChild(exec.Command("sleep", "0.2"))
	peak := run.Peak
	runtime.KeepAlive(ballast)
	if err != nil {
		t.Fatal(err)
	}
	if peak <= 0 || peak > 20<<20 {
		t.Fatalf("peak resident set of sleep %d octets, want its own (a few MB), not this process's 150 MB", peak)
	}
	if _, err := runChild(exec.Command("sh", "-c", "exit 3")); err == nil {
		t.Fatal("a child exiting 3: no error")
	}
}
