package bench

import (
	"strings"
	"testing"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/sizing"
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

// TestMeasureLedgerLeavesOutPlainFloor: the whole-ledger figure of bench mint counts the ledger's
// tables, not the plain floor's plain_ark that a clone of the template carries (with every
// preloaded ARK), so a --preload run reports what the ledger costs per ARK.
func TestMeasureLedgerLeavesOutPlainFloor(t *testing.T) {
	ctx := t.Context()
	l, err := ledger.Open(ctx, pgtest.URL(t), 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	const preload = 3000
	if err := fixtures.FillLedger(ctx, l.Pool, preload, 5, fixtures.FillOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := createPlainTable(ctx, l.Pool, preload, func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	z, err := measureLedger(ctx, l.Pool)
	if err != nil {
		t.Fatal(err)
	}
	m, err := sizing.Measure(ctx, l.Pool, sizing.MeasureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var plain int64
	if err := l.Pool.QueryRow(ctx, `select pg_total_relation_size('plain_ark')`).Scan(&plain); err != nil {
		t.Fatal(err)
	}
	if z.ARKs != preload || plain < preload*100 || m.Total()-z.Total != plain {
		t.Fatalf("measured %+v: %d ARKs, the schema's tables %d octets, plain_ark %d octets: want the ledger without plain_ark", z, z.ARKs, m.Total(), plain)
	}
}
