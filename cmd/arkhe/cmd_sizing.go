package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/arkhe-ledger/arkhe/sizing"
)

func sizingCommand(e *env) *cli.Command {
	d := sizing.DefaultFields()
	return &cli.Command{
		Name:  "sizing",
		Usage: "what each ARK costs on disk: measure the ledger, compare with the 400 B model, project to 1 billion ARKs, check the namespaces",
		Description: "Without --model, measures the ledger (every table: heap, TOAST, each index; bytes per ARK), holds it\n" +
			"against the design model (400 B per ARK, 362 / 158 / 258 B per row) and arkhe's structural model, projects it to\n" +
			"1, 10, 100 million and 1 billion ARKs (primary-key memory, WAL during a bulk run) and shows the shoulders of\n" +
			"each NAAN holding ARKs or active shoulders (--all: every NAAN), with each shoulder's blade space and\n" +
			"collision rate. Exit 1 when a shoulder reaches the\n" +
			"collision warning. With --model, plans from row counts and average field lengths without a database.\n" +
			"Sizes are in decimal units (1 MB = 10^6 B).",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "model", Usage: "plan without a database from --arks, --receipts, --changes and the --avg-* field lengths"},
			&cli.Int64Flag{Name: "arks", Value: 1_000_000, Usage: "with --model: ARKs in the plan"},
			&cli.Int64Flag{Name: "receipts", Value: -1, Usage: "with --model: receipts in the plan", DefaultText: "one per ARK"},
			&cli.Int64Flag{Name: "changes", Usage: "with --model: ARK_CHANGE rows in the plan (repointings, tombstones)"},
			&cli.Float64Flag{Name: "avg-url", Value: d.URL, Usage: "with --model: average octets of a target URL (0: none)"},
			&cli.Float64Flag{Name: "avg-title", Value: d.What, Usage: "with --model: average octets of ERC what (0: none)"},
			&cli.Float64Flag{Name: "avg-who", Value: d.Who, Usage: "with --model: average octets of ERC who (0: none)"},
			&cli.Float64Flag{Name: "avg-when", Value: d.When, Usage: "with --model: average octets of ERC when (0: none)"},
			&cli.Float64Flag{Name: "avg-naan", Value: d.NAAN, Usage: "with --model: octets of the NAAN"},
			&cli.Float64Flag{Name: "avg-name", Value: d.Name, Usage: "with --model: octets of an assigned name (shoulder + blade + check character)"},
			&cli.Float64Flag{Name: "avg-request-id", Value: d.RequestID, Usage: "with --model: average octets of a receipt's request ID"},
			&cli.Float64Flag{Name: "collision-warn", Value: sizing.DefaultCollisionWarning, Usage: "collision rate (collisions / draws) from which a shoulder is flagged"},
			&cli.BoolFlag{Name: "all", Usage: "list every NAAN in the namespace section, not only those holding ARKs or active shoulders"},
			&cli.BoolFlag{Name: "json", Usage: "print the report as JSON"},
			&cli.BoolFlag{Name: "table", Usage: "print only a plot-friendly TSV projection table (1-2-5 steps from 100 thousand to 1 billion ARKs)"},
		},
		Action: func(c *cli.Context) error {
			if c.Bool("json") && c.Bool("table") {
				return usagef("sizing: --json and --table exclude each other")
			}
			var rep *sizing.Report
			if c.Bool("model") {
				p, f, err := sizingPlan(c)
				if err != nil {
					return err
				}
				rep = sizing.ModelReport(p, f)
			} else {
				for _, name := range []string{"arks", "receipts", "changes", "avg-url", "avg-title", "avg-who", "avg-when", "avg-naan", "avg-name", "avg-request-id"} {
					if c.IsSet(name) {
						return usagef("sizing: --%s plans a ledger and needs --model", name)
					}
				}
				l, err := openChecked(c, e, 2)
				if err != nil {
					return err
				}
				defer l.Close()
				m, err := sizing.Measure(c.Context, l.Pool, sizing.MeasureOptions{CollisionWarning: c.Float64("collision-warn")})
				if err != nil {
					return err
				}
				rep = sizing.MeasuredReport(m, c.Float64("collision-warn"))
			}
			switch {
			case c.Bool("json"):
				enc := json.NewEncoder(e.stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			case c.Bool("table"):
				printSizingTable(e.stdout, rep)
			default:
				printSizing(e.stdout, rep, c.Bool("all"))
			}
			if rep.Warnings > 0 {
				return withFindings(fmt.Sprintf("sizing: %s at or above the collision warning of %.3g%%", plural(int64(rep.Warnings), "shoulder", "shoulders"), 100*rep.CollisionWarning))
			}
			return nil
		},
	}
}

// sizingPlan reads the --model flags.
func sizingPlan(c *cli.Context) (sizing.Plan, sizing.Fields, error) {
	p := sizing.Plan{ARKs: c.Int64("arks"), Receipts: c.Int64("receipts"), Changes: c.Int64("changes")}
	if p.Receipts < 0 {
		p.Receipts = p.ARKs
	}
	if p.ARKs < 0 || p.Changes < 0 {
		return p, sizing.Fields{}, fmt.Errorf("sizing: --arks and --changes must not be negative")
	}
	f := sizing.Fields{NAAN: c.Float64("avg-naan"), Name: c.Float64("avg-name"),
		URL: c.Float64("avg-url"), What: c.Float64("avg-title"), Who: c.Float64("avg-who"), When: c.Float64("avg-when"),
		RequestID: c.Float64("avg-request-id")}
	for name, v := range map[string]float64{"avg-url": f.URL, "avg-title": f.What, "avg-who": f.Who, "avg-when": f.When,
		"avg-naan": f.NAAN, "avg-name": f.Name, "avg-request-id": f.RequestID} {
		if v < 0 || math.IsNaN(v) || v > 64<<10 {
			return p, f, fmt.Errorf("sizing: --%s %g: want 0 to 65536 octets", name, v)
		}
	}
	if f.NAAN < 1 || f.NAAN > 16 || f.Name < 1 || f.Name > 255 {
		return p, f, fmt.Errorf("sizing: --avg-naan must be 1-16 and --avg-name 1-255 octets (draft-kunze-ark §2.3, §3.1)")
	}
	share := func(v float64) float64 {
		if v > 0 {
			return 1
		}
		return 0
	}
	f.URLShare, f.WhatShare, f.WhoShare, f.WhenShare = share(f.URL), share(f.What), share(f.Who), share(f.When)
	return p, f, nil
}

// printSizing prints the report on one screen: tables, comparison, projection, namespaces.
func printSizing(w io.Writer, r *sizing.Report, all bool) {
	if r.Mode == "model" {
		printSizingModel(w, r)
	} else {
		printSizingMeasured(w, r)
	}
	printProjection(w, r, all)
}

func printSizingModel(w io.Writer, r *sizing.Report) {
	f := r.Fields
	p := r.Plan
	fmt.Fprintf(w, "arkhe sizing --model: %s, %s, %s (no database)\n",
		plural(p.ARKs, "ARK", "ARKs"), plural(p.Receipts, "receipt", "receipts"), plural(p.Changes, "ARK_CHANGE row", "ARK_CHANGE rows"))
	fmt.Fprintf(w, "  average octets: key %.0f, url %.0f, title %.0f, who %.0f, when %.0f, request ID %.0f\n\n",
		f.Key(), f.URL, f.What, f.Who, f.When, f.RequestID)
	t := szTable{header: []string{"per row (model), bytes", "heap", "indexes", "total", "model figure", "diff"}}
	fig := func(label string, c sizing.TableCost, ref float64, refName string) {
		t.add(label, fmt.Sprintf("%.0f", c.Heap+c.TOAST), fmt.Sprintf("%.0f", c.IndexTotal()), fmt.Sprintf("%.0f", c.Total()), refName, szDiff(c.Total(), ref))
	}
	if f.HasDescription() {
		fig("ARK", r.Model.ARK, sizing.DataModelFullRow, "362 (design model)")
	} else {
		a := r.Model.ARK
		t.add("ARK", fmt.Sprintf("%.0f", a.Heap+a.TOAST), fmt.Sprintf("%.0f", a.IndexTotal()), fmt.Sprintf("%.0f", a.Total()),
			"158 table alone (design model)", szDiff(a.Heap+a.TOAST, sizing.DataModelURLOnly))
	}
	fig("receipt (not in the 400 B)", r.Model.Receipt, 0, "-")
	fig("ARK_CHANGE", r.Model.Change, sizing.DataModelChange, "258 (design model)")
	allIn := r.AllInPerARK()
	t.add("ARK + receipt, all-in", "", "", fmt.Sprintf("%.0f", allIn), "400 (budget)", szDiff(allIn, sizing.BudgetPerARK))
	t.write(w)
	fmt.Fprintf(w, "planned ledger: %s (ark %s, receipts %s, changes %s, fixed %s); ark primary key %s\n",
		szBytes(p.Total), szBytes(p.ARKBytes), szBytes(p.ReceiptBytes), szBytes(p.ChangeBytes), szBytes(p.FixedBytes), szBytes(p.PKIndex))
	verdict := "within"
	if allIn > sizing.BudgetPerARK {
		verdict = "over"
	}
	fmt.Fprintf(w, "verdict: %.0f B per ARK all-in (ark + receipt) is %s the 400 B budget (%s)\n", allIn, verdict, szDiff(allIn, sizing.BudgetPerARK))
	fmt.Fprintf(w, "namespace: shoulders per NAAN %s (length 2), %s (3), %s (4); blades per shoulder 29^8 = %s\n",
		thousands(sizing.ShoulderCapacity(2)), thousands(sizing.ShoulderCapacity(3)), thousands(sizing.ShoulderCapacity(4)),
		thousands(int64(sizing.BladeCapacity(8))))
}

func printSizingMeasured(w io.Writer, r *sizing.Report) {
	m := r.Measurement
	fmt.Fprintf(w, "arkhe sizing: database %s (PostgreSQL %s): %s, %s, %s\n\n",
		m.Database, m.Server, plural(m.ARKs, "ARK", "ARKs"), plural(m.Receipts, "receipt", "receipts"), plural(m.Changes, "ARK_CHANGE row", "ARK_CHANGE rows"))
	perARK := func(b int64) string {
		if m.ARKs == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f", float64(b)/float64(m.ARKs))
	}
	t := szTable{header: []string{"table", "rows", "heap", "TOAST", "indexes", "total", "B/ARK"}}
	main := map[string]bool{sizing.TableARK: true, sizing.TableReceipt: true, sizing.TableChange: true, "audit_event": true}
	relations := 0
	for _, tb := range m.Tables {
		if tb.PartOf == "" {
			relations++
		}
	}
	add := func(tb sizing.TableSize) {
		name := tb.Name
		if tb.PartOf != "" {
			name += " (on the " + tb.PartOf + " row)"
		}
		t.add(name, thousands(tb.Rows), szBytes(tb.HeapBytes()), szBytes(tb.TOASTBytes()), szBytes(tb.IndexBytes()), szBytes(tb.Total), perARK(tb.Total))
	}
	for _, name := range []string{sizing.TableARK, sizing.TableReceipt, sizing.TableChange, "audit_event"} {
		tb, ok := m.Table(name)
		if !ok {
			continue
		}
		add(tb)
		if tb.Rows == 0 {
			continue
		}
		for _, ix := range tb.Indexes {
			label := "  index " + ix.Name
			if ix.Primary {
				label += " (primary key)"
			}
			t.add(label, "", "", "", szBytes(ix.Bytes), "", perARK(ix.Bytes))
		}
	}
	// the other tables, but those without a row, which share one line: their pages are all they cost
	var empty sizing.TableSize
	emptyN := 0
	for _, tb := range m.Tables {
		if main[tb.Name] {
			continue
		}
		if tb.Rows == 0 && tb.PartOf == "" {
			emptyN++
			empty.Heap, empty.Maps, empty.TOAST, empty.TOASTIndex = empty.Heap+tb.Heap, empty.Maps+tb.Maps, empty.TOAST+tb.TOAST, empty.TOASTIndex+tb.TOASTIndex
			empty.Indexes = append(empty.Indexes, tb.Indexes...)
			empty.Total += tb.Total
			continue
		}
		add(tb)
	}
	if emptyN > 0 {
		t.add(fmt.Sprintf("%d other tables without rows", emptyN), "0", szBytes(empty.HeapBytes()), szBytes(empty.TOASTBytes()), szBytes(empty.IndexBytes()),
			szBytes(empty.Total), perARK(empty.Total))
	}
	t.add(fmt.Sprintf("all %d tables", relations), "", "", "", "", szBytes(m.Total()), perARK(m.Total()))
	t.write(w)

	fmt.Fprintln(w)
	cmp := r.Comparison
	if len(cmp.Lines) > 0 {
		t := szTable{header: []string{"against the model", "measured", "model", "diff", "model figure"}, left: map[int]bool{4: true}}
		for _, l := range cmp.Lines {
			ms, md := fmt.Sprintf("%.1f B", l.Measured), fmt.Sprintf("%.1f B", l.Model)
			if l.Total {
				ms, md = szBytes(int64(l.Measured)), szBytes(int64(l.Model))
			}
			diff := szDiff(l.Measured, l.Model)
			if l.TooFewRows {
				ms, diff = "too few rows to measure", "-"
			}
			t.add(l.What, ms, md, diff, l.Source)
		}
		t.write(w)
	}
	fmt.Fprintf(w, "verdict: %s\n", cmp.Verdict)
	printNodes(w, m)
}

// printNodes prints, for a ledger on Citus, what each node holds: its ARKs, the distributed
// tables' shards, the reference tables' copies, and the distributed bytes per ARK it holds.
func printNodes(w io.Writer, m *sizing.Measurement) {
	if len(m.Nodes) == 0 {
		return
	}
	fmt.Fprintf(w, "\non the Citus cluster: every shard placement on each of %d nodes (the tables above sum them)\n", len(m.Nodes))
	t := szTable{header: []string{"node", "ARKs", "shard placements", "distributed", "reference copies", "total", "distributed B/ARK"}}
	for _, n := range m.Nodes {
		per := "-"
		if n.ARKs > 0 {
			per = fmt.Sprintf("%.1f", float64(n.Distributed)/float64(n.ARKs))
		}
		t.add(n.Node, thousands(n.ARKs), thousands(int64(n.Shards)), szBytes(n.Distributed), szBytes(n.Reference), szBytes(n.Bytes()), per)
	}
	t.write(w)
}

// printProjection prints the projection, WAL and memory notes and, for a measured ledger, the
// namespaces: those holding ARKs or active shoulders, the rest summarized in one line (all:
// every NAAN).
func printProjection(w io.Writer, r *sizing.Report, all bool) {
	src := "measured per-row costs"
	if r.Costs.Source == "model" {
		src = "the model (too few rows to measure)"
		if r.Mode == "model" {
			src = "the model"
		}
	}
	fmt.Fprintf(w, "\nprojection from %s, %.2f receipts and %.2f ARK_CHANGE rows per ARK\n", src, r.ReceiptsPerARK, r.ChangesPerARK)
	t := szTable{header: []string{"ARKs", "ledger", "ark primary key (RAM)", "WAL written by the bulk run", "pg_wal peak"}}
	for _, p := range r.Projection {
		t.add(szCount(p.ARKs), szBytes(p.Total), szBytes(p.PKIndex), szBytes(p.WALWritten), szBytes(p.WALDisk))
	}
	t.write(w)
	walNote := fmt.Sprintf("WAL modelled at %.2f B per B written (%.0f B per ARK)", sizing.WALPerLedgerByte, r.Costs.WALPer)
	if m := r.Measurement; m != nil {
		for _, run := range m.WAL.Runs {
			if run.Rows >= sizing.MinMeasuredRows {
				walNote = fmt.Sprintf("WAL measured by run %s (%s): %.0f B per ARK", run.Source, run.Started.Format(time.DateOnly), float64(run.Bytes)/float64(run.Rows))
				break
			}
		}
		if m.WAL.ClusterBytes > 0 {
			walNote += fmt.Sprintf("; the server wrote %s of WAL since %s (all databases)", szBytes(m.WAL.ClusterBytes), m.WAL.StatsReset.Format(time.DateOnly))
		}
	}
	if len(r.Workers) > 0 {
		fmt.Fprintln(w, "\nspread over Citus workers: each holds its share of the distributed tables and a copy of the reference tables")
		t := szTable{header: []string{"ARKs", "workers", "per worker"}}
		for _, p := range r.Workers {
			t.add(szCount(p.Point.ARKs), strconv.Itoa(p.Workers), szBytes(p.PerWorker))
		}
		t.write(w)
	}
	fmt.Fprintf(w, "%s; pg_wal peak capped at max_wal_size %s while checkpoints keep up (archiving or a slot that lags holds it all)\n",
		walNote, szBytes(r.MaxWALSize))
	if m := r.Measurement; m != nil && m.Settings.SharedBuffers > 0 && r.Costs.ARK.PrimaryKey() > 0 {
		fmt.Fprintf(w, "shared_buffers %s holds the ark primary key up to about %s ARKs\n", szBytes(m.Settings.SharedBuffers),
			szCount(int64(float64(m.Settings.SharedBuffers)/r.Costs.ARK.PrimaryKey())))
	}
	if r.Measurement == nil {
		return
	}
	fmt.Fprintf(w, "\nnamespaces (collision warning at %.3g%%)\n", 100*r.CollisionWarning)
	if len(r.Measurement.Namespaces) == 0 {
		fmt.Fprintln(w, "  no NAAN registered")
		return
	}
	idle := 0
	for _, n := range r.Measurement.Namespaces {
		if !all && !n.InUse() {
			idle++
			continue
		}
		var lens []string
		for _, l := range n.Lengths {
			lens = append(lens, fmt.Sprintf("%s of %s shoulders of length %d used (%.2f%%)", thousands(int64(l.Used)), thousands(l.Available), l.Length, 100*l.Fraction))
		}
		if len(lens) == 0 {
			lens = append(lens, "no first-digit shoulder")
		}
		legacy := ""
		if n.Legacy > 0 {
			legacy = "; " + plural(int64(n.Legacy), "legacy shoulder", "legacy shoulders")
		}
		fmt.Fprintf(w, "NAAN %s: %s%s\n", n.NAAN, strings.Join(lens, ", "), legacy)
		if len(n.Shoulders) == 0 {
			continue
		}
		t := szTable{header: []string{"  shoulder", "status", "ARKs", "blade space", "used", "draws", "collisions", "rate", "expected", ""},
			left: map[int]bool{1: true, 9: true}}
		for _, s := range n.Shoulders {
			space, used, expected := "-", "-", "-"
			if s.FirstDigit {
				space = fmt.Sprintf("29^%d = %s", s.BladeLength, szSci(s.BladeSpace))
				used = szSci(s.Fraction)
				expected = szSci(s.ExpectedRate)
			}
			flag := "ok"
			if s.Warn {
				flag = "WARNING: namespace filling up"
			}
			rate := "-"
			if s.Draws > 0 {
				rate = szSci(s.CollisionRate)
			}
			t.add("  "+s.Shoulder, s.Status, thousands(s.ARKs), space, used, thousands(s.Draws), thousands(s.Collisions), rate, expected, flag)
		}
		t.write(w)
	}
	if idle > 0 {
		fmt.Fprintf(w, "%s without ARKs or active shoulders not shown (--all lists them)\n", plural(int64(idle), "other NAAN", "other NAANs"))
	}
}

// printSizingTable prints the plot-friendly TSV: a header and one row per PlotARKs point, plain
// integers (octets).
func printSizingTable(w io.Writer, r *sizing.Report) {
	fmt.Fprintln(w, "arks\treceipts\tchanges\tledger_bytes\tark_bytes\treceipt_bytes\tchange_bytes\tfixed_bytes\tpk_index_bytes\twal_written_bytes\twal_disk_bytes")
	for _, p := range r.Plot {
		fmt.Fprintf(w, "%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", p.ARKs, p.Receipts, p.Changes, p.Total, p.ARKBytes,
			p.ReceiptBytes, p.ChangeBytes, p.FixedBytes, p.PKIndex, p.WALWritten, p.WALDisk)
	}
}

// szTable is a text table: the first column (and those in left) left-aligned, the others
// right-aligned, two spaces apart.
type szTable struct {
	header []string
	left   map[int]bool
	rows   [][]string
}

func (t *szTable) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *szTable) write(w io.Writer) {
	all := append([][]string{t.header}, t.rows...)
	width := make([]int, len(t.header))
	for _, r := range all {
		for i, c := range r {
			if i < len(width) && utf8.RuneCountInString(c) > width[i] {
				width[i] = utf8.RuneCountInString(c)
			}
		}
	}
	for _, r := range all {
		var b strings.Builder
		for i, c := range r {
			if i >= len(width) {
				break
			}
			if i > 0 {
				b.WriteString("  ")
			}
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i == 0 || t.left[i] {
				b.WriteString(c + pad)
			} else {
				b.WriteString(pad + c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// szSci formats a small or large ratio or count briefly: 0, 0.0123, 1.4e-07, 5.0e+11.
func szSci(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 0.001 && v < 1e6:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	return fmt.Sprintf("%.1e", v)
}

// szDiff formats (measured − model) / model as a signed percentage, "-" without a model figure.
func szDiff(measured, model float64) string {
	if model == 0 {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", (measured-model)/model*100)
}

// szBytes formats octets in decimal units: "950 B", "21.1 MB", "4.0 GB".
func szBytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), -1
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %cB", v, "kMGTP"[i])
}

// szCount formats an ARK count briefly: 1M, 10M, 100M, 1B; other values with separators.
func szCount(n int64) string {
	switch {
	case n >= 1_000_000_000 && n%1_000_000_000 == 0:
		return fmt.Sprintf("%dB", n/1_000_000_000)
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	}
	return thousands(n)
}
