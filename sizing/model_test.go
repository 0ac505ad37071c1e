package sizing_test

import (
	"math"
	"strings"
	"testing"

	"github.com/arkhe-ledger/arkhe/sizing"
)

func TestShoulderAndBladeCapacity(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		length int
		want   int64
	}{{0, 0}, {1, 0}, {2, 190}, {3, 3_610}, {4, 68_590}, {5, 1_303_210}} {
		if got := sizing.ShoulderCapacity(c.length); got != c.want {
			t.Errorf("ShoulderCapacity(%d) = %d, want %d", c.length, got, c.want)
		}
	}
	// 19^(len−1) × 10, exactly, by integer arithmetic
	for l := 2; l <= 15; l++ {
		want := int64(10)
		for i := 1; i < l; i++ {
			want *= 19
		}
		if got := sizing.ShoulderCapacity(l); got != want {
			t.Errorf("ShoulderCapacity(%d) = %d, want 19^%d×10 = %d", l, got, l-1, want)
		}
	}
	if s := sizing.ShoulderCapacity(16); s != math.MaxInt64 {
		t.Errorf("ShoulderCapacity(16) = %d, want saturation at MaxInt64", s)
	}
	if got := sizing.BladeCapacity(8); got != 500_246_412_961 {
		t.Errorf("BladeCapacity(8) = %.0f, want 29^8 = 500,246,412,961", got)
	}
	if got := sizing.BladeCapacity(1); got != 29 {
		t.Errorf("BladeCapacity(1) = %.0f, want 29", got)
	}
}

func TestProjectionMath(t *testing.T) {
	t.Parallel()
	c := sizing.Costs{
		ARK:     sizing.TableCost{Heap: 290, TOAST: 10, Indexes: []sizing.IndexCost{{Name: "ark_pkey", PerRow: 60, Primary: true}, {Name: "brin", PerRow: 0.5}}},
		Receipt: sizing.TableCost{Heap: 90, Indexes: []sizing.IndexCost{{Name: "mint_receipt_pkey", PerRow: 30, Primary: true}}},
		Change:  sizing.TableCost{Heap: 200, Indexes: []sizing.IndexCost{{Name: "x", PerRow: 58}}},
		Fixed:   1_000,
		WALPer:  500,
	}
	p := c.Size(sizing.Plan{ARKs: 1_000_000, Receipts: 1_000_000, Changes: 100_000}, 0)
	want := sizing.Point{Plan: sizing.Plan{ARKs: 1_000_000, Receipts: 1_000_000, Changes: 100_000},
		ARKBytes: 360_500_000, ReceiptBytes: 120_000_000, ChangeBytes: 25_800_000, FixedBytes: 1_000,
		Total: 506_301_000, PKIndex: 60_000_000, WALWritten: 500_000_000, WALDisk: 500_000_000}
	if p != want {
		t.Errorf("Size = %+v\nwant   %+v", p, want)
	}
	pts := c.Project(sizing.ProjectionARKs(), 1, 0.1, 0)
	if len(pts) != 4 {
		t.Fatalf("Project: %d points, want 4", len(pts))
	}
	last := pts[3]
	if last.ARKs != 1_000_000_000 || last.Receipts != 1_000_000_000 || last.Changes != 100_000_000 {
		t.Errorf("1B point plan = %+v", last.Plan)
	}
	if last.Total != 506_300_001_000 {
		t.Errorf("1B ledger = %d, want 506,300,001,000", last.Total)
	}
	if last.WALWritten != 500_000_000_000 || last.WALDisk != sizing.DefaultMaxWALSize {
		t.Errorf("1B WAL = %d written, %d on disk; want 5e11 and max_wal_size %d", last.WALWritten, last.WALDisk, sizing.DefaultMaxWALSize)
	}
	if got := c.Size(sizing.Plan{ARKs: 10}, 100).WALDisk; got != 100 {
		t.Errorf("WAL disk capped at max_wal_size 100: %d", got)
	}
	plot := sizing.PlotARKs()
	wantPlot := []int64{1e5, 2e5, 5e5, 1e6, 2e6, 5e6, 1e7, 2e7, 5e7, 1e8, 2e8, 5e8, 1e9}
	if len(plot) != len(wantPlot) {
		t.Fatalf("PlotARKs = %v", plot)
	}
	for i := range plot {
		if plot[i] != wantPlot[i] {
			t.Fatalf("PlotARKs = %v, want %v", plot, wantPlot)
		}
	}
}

func TestTupleArithmetic(t *testing.T) {
	t.Parallel()
	// mint_receipt with fixed contents: client_pk int8, request_id 7 octets, ark 17 octets,
	// payload_digest 16 octets, created_at.
	cols := []sizing.Column{
		{Name: "client_pk", Len: 8, Align: 8, Present: 1},
		{Name: "request_id", Align: 4, Avg: 7, Present: 1},
		{Name: "ark", Align: 4, Avg: 17, Present: 1},
		{Name: "payload_digest", Align: 4, Avg: 16, Present: 1},
		{Name: "created_at", Len: 8, Align: 8, Present: 1},
	}
	// header 23 → 24 (no nulls, no bitmap); data 8 + (1+7) + (1+17) + (1+16) = 51, then an
	// expected 3.5 octets of padding before created_at (the offset after varlenas is not known
	// exactly), + 8 = 62.5
	if got := sizing.TupleBytes(cols); got != 86.5 {
		t.Errorf("TupleBytes = %v, want 86.5", got)
	}
	// all fixed: bigint, bigint, boolean → 24 + 17 = 41, exact
	fixed := []sizing.Column{{Len: 8, Align: 8, Present: 1}, {Len: 8, Align: 8, Present: 1}, {Len: 1, Align: 1, Present: 1}}
	if got := sizing.TupleBytes(fixed); got != 41 {
		t.Errorf("TupleBytes(fixed) = %v, want 41", got)
	}
	// 48-octet item (41 → 48 MAXALIGNed) + 4 = 52: floor(8168 / 52) = 157 per page
	if got, want := sizing.HeapBytesPerRow(fixed), 8192/157.0; math.Abs(got-want) > 1e-9 {
		t.Errorf("HeapBytesPerRow(fixed) = %v, want %v", got, want)
	}
	// a null column adds the null bitmap: 9 columns → 2 octets → header 25 → 32
	nine := append([]sizing.Column{{Len: 8, Align: 8, Present: 0}}, make([]sizing.Column, 8)...)
	for i := 1; i < 9; i++ {
		nine[i] = sizing.Column{Len: 8, Align: 8, Present: 1}
	}
	if got := sizing.TupleBytes(nine); got != 32+64 {
		t.Errorf("TupleBytes(9 columns, one null) = %v, want 96", got)
	}
	// a B-tree entry on one bigint: 8 + 8 = 16 + 4 line pointer = 20 octets, at fill 0.9
	leaf := 20 * 8192 / (8152 * 0.9)
	got := sizing.BTreeBytesPerEntry([]sizing.Column{{Len: 8, Align: 8, Present: 1}}, sizing.FillBuilt)
	if want := leaf * (1 + 20/(8152*0.7)); math.Abs(got-want) > 1e-9 {
		t.Errorf("BTreeBytesPerEntry(bigint) = %v, want %v", got, want)
	}
}

func TestArkheModelAgainstDataModel(t *testing.T) {
	t.Parallel()
	c := sizing.ArkheModel(sizing.DefaultFields())
	// The seed's 362 B (url+title+who+when, table and indexes) was measured on another
	// schema; arkhe's row with the same fields should land near it, not at twice or half.
	if a := c.ARK.Total(); a < 0.75*sizing.DataModelFullRow || a > 1.25*sizing.DataModelFullRow {
		t.Errorf("modelled ARK %.1f B, far from the data model's 362 B", a)
	}
	// arkhe's ARK_CHANGE keeps both URLs, the transaction ID and two indexes: the primary key
	// (ark, seq) and the time; the same order of magnitude as the seed's 258 B
	if ch := c.Change.Total(); ch < 0.5*sizing.DataModelChange || ch > 2*sizing.DataModelChange {
		t.Errorf("modelled ARK_CHANGE %.1f B, far from the data model's 258 B", ch)
	}
	var changeIndexes []string
	for _, ix := range c.Change.Indexes {
		changeIndexes = append(changeIndexes, ix.Name)
	}
	if strings.Join(changeIndexes, ",") != "ark_change_pkey,ark_change_at" {
		t.Errorf("ARK_CHANGE indexes %v, want ark_change_pkey (ark, seq) and ark_change_at", changeIndexes)
	}
	// the primary key entry holds the ARK key and the 4-octet seq: more than the key alone
	_, ch := sizing.ArkheTables(sizing.DefaultFields())
	if len(ch.Indexes) == 0 || len(ch.Indexes[0].Key) != 2 || ch.Indexes[0].Key[0].Name != "ark" || ch.Indexes[0].Key[1].Name != "seq" || !ch.Indexes[0].Primary {
		t.Errorf("ark_change primary key modelled as %+v, want (ark, seq)", ch.Indexes)
	}
	if c.ARK.PrimaryKey() <= 0 {
		t.Errorf("primary key not modelled: %+v", c.ARK)
	}
	// the receipt is on the ark row: its cost is the heap its columns add
	// (8-octet request ID and 8-octet digest, each with a 1-octet header: 18 octets, plus page
	// overhead) and the ark_receipt index
	if len(c.Receipt.Indexes) != 1 || c.Receipt.Indexes[0].Name != "ark_receipt" || c.Receipt.Indexes[0].PerRow <= 0 {
		t.Errorf("receipt indexes %+v, want ark_receipt", c.Receipt.Indexes)
	}
	if h := c.Receipt.Heap; h < 18 || h > 22 || sizing.ReceiptHeapShare(sizing.DefaultFields()) != h {
		t.Errorf("receipt heap share %.2f, want 18 to 22 octets", h)
	}
	// the receipt index entry (8-octet header, client, 9-octet request ID: 25 → 32 octets, 36
	// with its line pointer) on leaves packed to FillRuns, and the internal pages above them
	leaf := 36 * 8192 / (8152 * sizing.FillRuns)
	if r, want := c.Receipt.Indexes[0].PerRow, leaf*(1+36/(8152*0.7)); math.Abs(r-want) > 1e-9 {
		t.Errorf("ark_receipt %.2f octets per receipt, want %.2f", r, want)
	}
	// change_seq 0 and status public are NULL on a minted row: they cost no octet (status, when
	// stored, is the 4-octet enum ark_status)
	arkT, _ := sizing.ArkheTables(sizing.DefaultFields())
	for _, col := range arkT.Columns {
		if col.Name == "change_seq" && col.Present != 0 {
			t.Errorf("column change_seq present in %.0f%% of minted rows, want NULL (its default)", 100*col.Present)
		}
		if col.Name == "status" && (col.Present != 0 || col.Len != 4 || col.Align != 4) {
			t.Errorf("column status %+v, want the 4-octet enum, NULL (public) on every minted row", col)
		}
	}
	// longer fields cost more, octet for octet in the heap (plus a little page overhead) while
	// they keep a 1-octet header (up to 126 octets)
	f := sizing.DefaultFields()
	f.What += 50
	if d := sizing.ArkheModel(f).ARK.Heap - c.ARK.Heap; d < 50 || d > 53 {
		t.Errorf("50 more title octets cost %.1f heap octets, want 50 to 53", d)
	}

	// a 10 kB incompressible title goes to TOAST, leaving an 18-octet pointer in the row
	f = sizing.DefaultFields()
	f.What = 10_000
	big := sizing.ArkheModel(f)
	if big.ARK.TOAST < 10_000 || big.ARK.Heap > c.ARK.Heap {
		t.Errorf("10 kB title: TOAST %.0f, heap %.0f (default heap %.0f)", big.ARK.TOAST, big.ARK.Heap, c.ARK.Heap)
	}
}

func TestNamespacesArithmetic(t *testing.T) {
	t.Parallel()
	rows := []sizing.ShoulderRow{
		{NAAN: "99999", Shoulder: "/x9", Status: "active", BladeLength: 8, ARKs: 500_246, Draws: 1_000, Collisions: 2},
		{NAAN: "99999", Shoulder: "/bc7", Status: "active", BladeLength: 8, ARKs: 10},
		{NAAN: "99999", Shoulder: "/dsp01", Status: "reserved", BladeLength: 8, ARKs: 7},
		{NAAN: "12345"},
	}
	ns := sizing.Namespaces(rows, 0.001)
	if len(ns) != 2 || ns[0].NAAN != "12345" || ns[1].NAAN != "99999" {
		t.Fatalf("Namespaces = %+v", ns)
	}
	if len(ns[0].Shoulders) != 0 || len(ns[0].Lengths) != 0 {
		t.Errorf("NAAN without shoulders: %+v", ns[0])
	}
	n := ns[1]
	if n.Legacy != 1 || len(n.Lengths) != 2 {
		t.Fatalf("99999: %+v", n)
	}
	if l := n.Lengths[0]; l.Length != 2 || l.Used != 1 || l.Available != 190 || l.Fraction != 1.0/190 {
		t.Errorf("length 2: %+v", l)
	}
	if l := n.Lengths[1]; l.Length != 3 || l.Used != 1 || l.Available != 3610 {
		t.Errorf("length 3: %+v", l)
	}
	byName := map[string]sizing.ShoulderUse{}
	for _, s := range n.Shoulders {
		byName[s.Shoulder] = s
	}
	x9 := byName["/x9"]
	if x9.CollisionRate != 0.002 || !x9.Warn || x9.BladeSpace != 500_246_412_961 || math.Abs(x9.Fraction-1e-6) > 1e-12 {
		t.Errorf("/x9: %+v", x9)
	}
	if bc7 := byName["/bc7"]; bc7.Warn || bc7.CollisionRate != 0 {
		t.Errorf("/bc7: %+v", bc7)
	}
	if dsp := byName["/dsp01"]; dsp.FirstDigit || dsp.BladeSpace != 0 || dsp.Warn {
		t.Errorf("/dsp01 (legacy): %+v", dsp)
	}
	// the same rate under a higher threshold is no warning
	if sizing.Namespaces(rows, 0.01)[1].Shoulders[2].Warn {
		t.Errorf("rate 0.002 flagged at threshold 0.01")
	}
}

func TestCompareVerdict(t *testing.T) {
	t.Parallel()
	m := &sizing.Measurement{ARKs: 100_000, Receipts: 100_000, Changes: 10_000,
		Fields: sizing.DefaultFields(),
		Tables: []sizing.TableSize{
			{Name: "ark", Rows: 100_000, Heap: 26_000_000, Total: 32_000_000},
			{Name: "mint_receipt", Rows: 100_000, Heap: 9_500_000, Total: 12_500_000},
			{Name: "ark_change", Rows: 10_000, Heap: 2_000_000, Total: 2_580_000},
		}}
	c := sizing.Compare(m)
	if c.WithinBudget || c.AllIn != 445 {
		t.Errorf("all-in %v within %v, want 445 and over budget", c.AllIn, c.WithinBudget)
	}
	if len(c.Lines) != 5 {
		t.Fatalf("lines: %+v", c.Lines)
	}
	if l := c.Lines[0]; l.Measured != 320 || l.Model != 362 || math.Abs(l.DiffPct-(320-362)/3.62) > 1e-9 {
		t.Errorf("ark line %+v", l)
	}
	if l := c.Lines[3]; l.Measured != 258 || l.DiffPct != 0 {
		t.Errorf("change line %+v", l)
	}
	for _, want := range []string{"over budget", "445 B", "11.2% over", "receipts (125 B)"} {
		if !contains(c.Verdict, want) {
			t.Errorf("verdict %q lacks %q", c.Verdict, want)
		}
	}
	for _, l := range c.Lines {
		if l.TooFewRows {
			t.Errorf("line %q marked too few rows at 100,000 ARKs and 10,000 changes", l.What)
		}
	}
	m.ARKs, m.Receipts, m.Changes = 200, 200, 2
	for _, l := range sizing.Compare(m).Lines {
		if l.TooFewRows == l.Total {
			t.Errorf("200 ARKs, 2 changes: line %q too few rows %t", l.What, l.TooFewRows)
		}
	}
	m.ARKs, m.Receipts = 5_000, 5_000
	for _, l := range sizing.Compare(m).Lines {
		if want := l.What == "ARK_CHANGE, per row"; l.TooFewRows != want {
			t.Errorf("5,000 ARKs, 2 changes: line %q too few rows %t, want %t", l.What, l.TooFewRows, want)
		}
	}
	empty := sizing.Compare(&sizing.Measurement{})
	if len(empty.Lines) != 0 || !contains(empty.Verdict, "no ARK") {
		t.Errorf("empty ledger: %+v", empty)
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || len(s) >= len(sub) && (s[:len(sub)] == sub || contains(s[1:], sub))
}
