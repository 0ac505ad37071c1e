package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
)

// TestBenchRunsArkheAsItsOwnProcess: bench mint and bench import run arkhe mint and arkhe
// import as processes of their own and print each one's peak resident set; bench mint prints
// its ratio to the plain floor beside the ratio to the floor of arkhe's schema.
func TestBenchRunsArkheAsItsOwnProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("the benchmarks end to end: the full suite (make test) runs them, -short does not")
	}
	t.Setenv(asArkheEnv, "1") // the children are this binary, running as arkhe
	url := pgtest.URL(t)
	rss := regexp.MustCompile(`peak resident set of the arkhe (mint|import) process: (\d+) MB`)
	check := func(out string) {
		t.Helper()
		m := rss.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no peak resident set in:\n%s", out)
		}
		if mb, _ := strconv.Atoi(m[2]); mb < 5 || mb > 1000 {
			t.Errorf("peak resident set of arkhe %s %d MB, not a process's", m[1], mb)
		}
	}
	code, out, errOut := arkhe(t, url, "", "bench", "mint", "--rows", "2000", "--batch", "500", "--repeat", "2", "--bench-dir", t.TempDir())
	if code != 0 {
		t.Fatalf("bench mint: exit %d\n%s\n%s", code, out, errOut)
	}
	check(out)
	for _, want := range []string{"(c) plain floor, CSV COPY, one connection:", "ratio (b)/(a): ", "ratio (b)/(c): ", "mint: 2000 rows minted"} {
		if !strings.Contains(out, want) {
			t.Errorf("bench mint output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "time in (b)'s sink") {
		t.Errorf("bench mint prints the sink's time split of a child process it cannot know:\n%s", out)
	}
	code, out, errOut = arkhe(t, url, "", "bench", "import", "--rows", "2000", "--batch", "300", "--bench-dir", t.TempDir())
	if code != 0 {
		t.Fatalf("bench import: exit %d\n%s\n%s", code, out, errOut)
	}
	check(out)
	if !strings.Contains(out, "imported 1880") {
		t.Errorf("bench import did not read the child's counts:\n%s", out)
	}
}
