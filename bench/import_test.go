package bench

import (
	"bytes"
	"strings"
	"testing"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
)

// TestRunImportSmall runs the import macro benchmark at a small size on the test server, twice:
// both phases load the same rows each time, the result is the pair with the median ratio, the
// reconcile (first run only) finds only what the import left out.
func TestRunImportSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("the import benchmark end to end, twice: the full suite (make test) runs it, -short does not")
	}
	res, err := RunImport(t.Context(), ImportConfig{Rows: 2000, BatchSize: 300, DatabaseURL: pgtest.URL(t),
		Dir: t.TempDir(), Seed: 2, Reconcile: true, Repeat: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Import.Rows != 1880 || res.Floor.Rows != res.Import.Rows || res.Ratio() <= 0 {
		t.Errorf("import %d rows, floor %d rows, ratio %.2f", res.Import.Rows, res.Floor.Rows, res.Ratio())
	}
	if len(res.Pairs) != 2 || res.Pairs[1].Import.Rows != 1880 || res.Pairs[1].Floor.Rows != 1880 {
		t.Fatalf("pairs %+v, want 2 of 1880 rows each", res.Pairs)
	}
	if hi := max(res.Pairs[0].Ratio(), res.Pairs[1].Ratio()); res.Ratio() != hi { // median of 2: the upper one
		t.Errorf("ratio %.3f, pairs %.3f and %.3f", res.Ratio(), res.Pairs[0].Ratio(), res.Pairs[1].Ratio())
	}
	// the 20 test ARKs (99999) were not imported, and reconcile skips them too by default (as import
	// does), so the dump and the ledger agree; neither they nor the 100 rejected records are compared
	if res.Reconcile.Rows != 1880 || res.ReconcileRows != 0 {
		t.Errorf("reconcile compared %d ARKs, %d report rows", res.Reconcile.Rows, res.ReconcileRows)
	}
	var b bytes.Buffer
	res.Print(&b)
	if res.PeakRSS <= 0 || res.PeakHeap <= 0 {
		t.Errorf("peak resident set %d, peak heap %d: not measured", res.PeakRSS, res.PeakHeap)
	}
	for _, want := range []string{"(a) floor: COPY of the 1880 resulting ark rows", "ratio (b)/(a):", "server_version", "median of 2 runs",
		"peak memory during import, in this process: VmHWM"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
}
