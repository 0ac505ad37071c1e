package verify_test

import (
	"testing"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
)

// TestFillLedger checks fixtures.FillLedger (used by the verify tests and `arkhe bench
// verify`; it lives here because this package already has a database harness): the same seed
// gives the same ledger, checked and unchecked; another seed adds disjoint names to the same
// ledger; counts of receipts and changes follow the options.
func TestFillLedger(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a, b := pgtest.New(t), pgtest.New(&subTB{t})
	opts := fixtures.FillOptions{Shoulders: []string{"x9", "/b5"}, ChangeEvery: 3, BatchRows: 7}
	if err := fixtures.FillLedger(ctx, a, 50, 11, opts); err != nil {
		t.Fatal(err)
	}
	opts.Unchecked = true
	if err := fixtures.FillLedger(ctx, b, 50, 11, opts); err != nil {
		t.Fatal(err)
	}
	q := `select (select count(*) from ark), (select count(*) from mint_receipt), (select count(*) from ark_change),
		(select md5(string_agg(ark || ' ' || url || ' ' || coalesce(erc_what, ''), ',' order by ark)) from ark),
		(select count(*) filter (where split_part(ark, '/', 2) !~ '^(x9|b5)') from ark)`
	var n1, r1, c1, n2, r2, c2, s1, s2 int64
	var h1, h2 string
	if err := a.QueryRow(ctx, q).Scan(&n1, &r1, &c1, &h1, &s1); err != nil {
		t.Fatal(err)
	}
	if err := b.QueryRow(ctx, q).Scan(&n2, &r2, &c2, &h2, &s2); err != nil {
		t.Fatal(err)
	}
	if n1 != 50 || r1 != 50 || c1 != 17 || s1 != 0 {
		t.Errorf("ARKs %d, receipts %d, changes %d (want 50, 50, 17), names outside their shoulders: %d", n1, r1, c1, s1)
	}
	if n1 != n2 || r1 != r2 || c1 != c2 || h1 != h2 {
		t.Errorf("same seed, different ledgers: %d/%d/%d %s vs %d/%d/%d %s", n1, r1, c1, h1, n2, r2, c2, h2)
	}
	// A second seed into the same ledger: disjoint names and request IDs.
	if err := fixtures.FillLedger(ctx, a, 50, 12, fixtures.FillOptions{Shoulders: []string{"/x9", "/b5"}}); err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := a.QueryRow(ctx, `select count(*) from ark`).Scan(&n); err != nil || n != 100 {
		t.Errorf("after a second seed: %d ARKs (%v), want 100", n, err)
	}
	if err := fixtures.FillLedger(ctx, a, 10, -1, fixtures.FillOptions{}); err == nil {
		t.Error("negative seed accepted")
	}
	if err := fixtures.FillLedger(ctx, a, 10, 1, fixtures.FillOptions{Shoulders: []string{"/dsp01"}}); err == nil {
		t.Error("a shoulder that cannot mint accepted")
	}
}

// subTB gives a second pgtest database in the same test: pgtest keys databases by testing.TB.
type subTB struct{ *testing.T }
