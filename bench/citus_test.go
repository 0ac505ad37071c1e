package bench

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/loader"
)

// TestCitusFloorSendsWhatArkheWrote checks the Citus side of `arkhe bench mint --citus` on the
// test cluster: what arkhe mints through every node is read back whole (ARK rows joined with
// their receipt rows, in request ID order), the floor COPYs exactly those rows through every
// node into a second ledger registered alike (the ledger's constraints and triggers accept
// them: same ARKs, same receipts), and the ledger is measured over every node's placements.
func TestCitusFloorSendsWhatArkheWrote(t *testing.T) {
	if testing.Short() {
		t.Skip("the Citus cluster: the full suite (make test) runs it, -short does not")
	}
	ctx := t.Context()
	const rows = 300
	manifest := filepath.Join(t.TempDir(), "m.csv")
	if _, err := fixtures.CreateManifestCSV(manifest, fixtures.ManifestConfig{Rows: rows, Seed: 3, Prefix: "bench-"}); err != nil {
		t.Fatal(err)
	}
	open := func(t *testing.T, db pgtest.DB) (*ledger.Ledger, []*pgxpool.Pool) {
		l, err := ledger.Open(ctx, db.URL, 5)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.Close)
		if err := RegisterBench(ctx, l); err != nil {
			t.Fatal(err)
		}
		pools := []*pgxpool.Pool{l.Pool}
		for _, u := range db.WorkerURLs {
			p, err := pgxpool.New(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Close)
			pools = append(pools, p)
		}
		return l, pools
	}

	mintDB := pgtest.NewCitus(t)
	l, pools := open(t, mintDB)
	rep, err := loader.Mint(ctx, l, loader.MintJob{Mint: loader.MintConfig{ClientID: benchClient, EntryNodes: pools[1:]},
		Inputs: []string{manifest}, Workers: 3, BatchSize: 100})
	if err != nil || rep.Summary.Minted != rows {
		t.Fatalf("mint: %d minted, %v", rep.Summary.Minted, err)
	}
	arks, err := readBackMintedCitus(ctx, l.Pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(arks) != rows || arks[0][12] != "bench-000000001" || arks[rows-1][12] != "bench-000000300" {
		t.Fatalf("read back %d rows, first request ID %v, last %v", len(arks), arks[0][12], arks[len(arks)-1][12])
	}
	for i, r := range arks {
		if r[1] != benchNAAN || r[10] == nil || r[11] == nil || len(r[13].([]byte)) != 16 {
			t.Fatalf("row %d read back incomplete: %v", i, r)
		}
	}
	size, err := measureLedger(ctx, l.Pool)
	if err != nil {
		t.Fatal(err)
	}
	if size.ARKs != rows || size.Nodes != 3 || size.ARK <= 0 || size.Receipts <= 0 || size.Total < size.ARK+size.Receipts {
		t.Errorf("measured %+v, want %d ARKs on 3 nodes with their receipts", size, rows)
	}

	t.Run("floor", func(t *testing.T) {
		fl, fpools := open(t, pgtest.NewCitus(t))
		var p Pair
		if err := copyFloorRows(ctx, fpools, true, arks, 100, 3, &p); err != nil {
			t.Fatal(err)
		}
		const receipts = `select string_agg(request_id || ' ' || ark || ' ' || encode(payload_digest, 'hex'), ',' order by request_id) from mint_receipt`
		const ledgerARKs = `select count(*), string_agg(ark || coalesce(url, ''), ',' order by ark) from ark`
		var want, got, wantARKs, gotARKs string
		var n int
		if err := l.Pool.QueryRow(ctx, receipts).Scan(&want); err != nil {
			t.Fatal(err)
		}
		if err := fl.Pool.QueryRow(ctx, receipts).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if err := l.Pool.QueryRow(ctx, ledgerARKs).Scan(&n, &wantARKs); err != nil {
			t.Fatal(err)
		}
		if err := fl.Pool.QueryRow(ctx, ledgerARKs).Scan(&n, &gotARKs); err != nil {
			t.Fatal(err)
		}
		if n != rows || got != want || gotARKs != wantARKs {
			t.Errorf("the floor wrote %d ARKs; receipts equal %v, ARKs equal %v", n, got == want, gotARKs == wantARKs)
		}
	})
}

// TestPrintCitusWithoutPlainFloor: a --citus report says the plain floor was not measured on
// Citus instead of printing a zero rate and ratio for it, and shows the single node's plain
// floor beside it.
func TestPrintCitusWithoutPlainFloor(t *testing.T) {
	pair := func(floor, plain, mint int64) Pair {
		return Pair{Floor: Phase{Rows: floor, Elapsed: time.Second}, Plain: Phase{Rows: plain, Elapsed: time.Second},
			Mint: Phase{Rows: mint, Elapsed: time.Second}}
	}
	single := MintResult{Kind: "single", Pairs: []Pair{pair(1000, 2000, 800)}}
	(&mintBench{res: &single}).finish() // the medians, as RunMint sets them
	citus := MintResult{Kind: "citus", Pairs: []Pair{pair(500, 0, 400)}, SingleNode: &single}
	(&mintBench{res: &citus}).finish()
	var out strings.Builder
	citus.Print(&out)
	got := out.String()
	citusPart, singlePart, _ := strings.Cut(got, "the single node, measured in the same run")
	for _, want := range []string{"(c) plain floor: not measured on Citus", "ratio (b)/(a): 0.80\n"} {
		if !strings.Contains(citusPart, want) {
			t.Errorf("Citus part lacks %q:\n%s", want, citusPart)
		}
	}
	if strings.Contains(citusPart, "ratio (b)/(c)") {
		t.Errorf("Citus part prints a ratio to a plain floor it did not measure:\n%s", citusPart)
	}
	for _, want := range []string{"(c) plain floor, CSV COPY, one connection:       2000 rows/s", "ratio (b)/(a): 0.80   ratio (b)/(c): 0.40",
		"(c) plain floor, rows/s                                  2000   not measured"} {
		if !strings.Contains(singlePart, want) {
			t.Errorf("single node part lacks %q:\n%s", want, singlePart)
		}
	}
}
