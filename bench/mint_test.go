package bench

import (
	"strings"
	"testing"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
)

// TestRunMintSmall runs the whole macro benchmark at a small size against the test server: the
// floor and arkhe must load the same number of rows and report rates and settings.
func TestRunMintSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("the mint benchmark end to end, twice: the full suite (make test) runs it, -short does not")
	}
	res, err := RunMint(t.Context(), MintConfig{Rows: 3000, Preload: 2000, BatchSize: 500, Workers: 2,
		DatabaseURL: pgtest.URL(t), Dir: t.TempDir(), Seed: 7, Repeat: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mint.Rows != 3000 || res.Floor.Rows != 3000 || res.Summary.Minted != 3000 || res.Summary.Read != 3000 {
		t.Fatalf("mint %+v floor %+v summary %+v", res.Mint, res.Floor, res.Summary)
	}
	if len(res.Pairs) != 2 || res.Pairs[1].Floor.Rows != 3000 || res.Pairs[1].Mint.Rows != 3000 {
		t.Fatalf("pairs %+v (the second runs the floor first, with the first pair's rows)", res.Pairs)
	}
	if res.Mint.Rate() <= 0 || res.Floor.Rate() <= 0 || res.Ratio() <= 0 {
		t.Fatalf("rates %.0f and %.0f", res.Mint.Rate(), res.Floor.Rate())
	}
	// (c) the plain floor sent the same 3,000 rows each run, on one connection, into plain_ark
	// (which holds the 2,000 preloaded ARKs too)
	if res.Plain.Rows != 3000 || res.Pairs[0].Plain.Rows != 3000 || res.Pairs[1].Plain.Rows != 3000 || res.PlainRatio() <= 0 {
		t.Fatalf("plain floor %+v, per run %+v and %+v, ratio %.2f", res.Plain, res.Pairs[0].Plain, res.Pairs[1].Plain, res.PlainRatio())
	}
	if hi := max(res.Pairs[0].PlainRatio(), res.Pairs[1].PlainRatio()); res.PlainRatio() != hi { // median of 2: the upper one
		t.Errorf("plain ratio %.3f, runs %.3f and %.3f", res.PlainRatio(), res.Pairs[0].PlainRatio(), res.Pairs[1].PlainRatio())
	}
	if res.Settings["server_version"] == "" || res.Settings["fsync"] == "" {
		t.Fatalf("settings %v", res.Settings)
	}
	if res.PeakHeap <= 0 {
		t.Fatalf("peak heap %d", res.PeakHeap)
	}
	var out strings.Builder
	res.Print(&out)
	for _, want := range []string{"(a) floor", "(b) arkhe mint", "(c) plain floor", "ratio (b)/(a)", "ratio (b)/(c)", "shared_buffers", "VmHWM"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	// a second run reuses the preloaded template
	res, err = RunMint(t.Context(), MintConfig{Rows: 100, Preload: 2000, BatchSize: 500,
		DatabaseURL: pgtest.URL(t), Dir: t.TempDir(), Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if !res.PreloadReused || res.Mint.Rows != 100 {
		t.Fatalf("second run: reused %v, %d rows", res.PreloadReused, res.Mint.Rows)
	}
}
