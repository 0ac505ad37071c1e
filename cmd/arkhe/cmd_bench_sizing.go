package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/arkhe-ledger/arkhe/bench"
	"github.com/arkhe-ledger/arkhe/sizing"
)

func benchSizingCommand(e *env) *cli.Command {
	var layoutNames []string
	for _, l := range bench.Layouts() {
		layoutNames = append(layoutNames, l.Name)
	}
	return &cli.Command{
		Name:  "sizing",
		Usage: "build the ledger in each physical layout (natural keys, surrogate integer keys, arkhe's schema, the levers) from the same rows and compare bytes per ARK and load throughput",
		Description: "Every layout gets the same rows: the ARKs (Tate-like generated rows, or --input), one receipt each and one\n" +
			"ARK_CHANGE per ten ARKs, loaded by COPY as arkhe mint writes them (--workers connections, each committing\n" +
			"--batch rows per transaction, rows routed by request ID), on a throw-away\n" +
			"cluster (fsync on, arkhe's bulk settings) or, with --database-url, in databases arkhe_sizing_* created and\n" +
			"dropped on that server (superuser). Layouts: " + strings.Join(layoutNames, ", ") + ".",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "rows", Value: 100_000, Usage: "ARKs per layout (with --input: at most this many records; 0 for all)"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed of the generated rows and drawn names"},
			&cli.StringFlag{Name: "input", Usage: "take the rows from a Tate artworks JSON Lines file (.gz allowed) instead of generating them"},
			&cli.StringSliceFlag{Name: "layout", Usage: "build only these layouts (repeatable): " + strings.Join(layoutNames, ", ")},
			&cli.IntFlag{Name: "workers", Usage: "concurrent loaders, as mint's sink workers", DefaultText: "2, as arkhe mint"},
			&cli.IntFlag{Name: "batch", Usage: "rows per transaction of each loader", DefaultText: "100000, as arkhe mint"},
			&cli.BoolFlag{Name: "json", Usage: "print the full results as JSON"},
		},
		Action: func(c *cli.Context) error {
			cfg := bench.SizingConfig{
				Rows:        c.Int("rows"),
				Seed:        c.Uint64("seed"),
				Input:       c.String("input"),
				DatabaseURL: c.String("database-url"),
				Layouts:     c.StringSlice("layout"),
				Workers:     c.Int("workers"),
				Batch:       c.Int("batch"),
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			if !c.Bool("quiet") {
				cfg.Log = e.stderr
				var p *progress
				current, last := "", 0
				cfg.Progress = func(layout string, done, total int) {
					if layout != current {
						if p != nil {
							p.Finish()
						}
						current, last = layout, 0
						p = newProgress(e.stderr, e.log, false, "layout "+layout, "rows")
						p.SetTotal(int64(total), false)
					}
					p.Add(int64(done - last))
					last = done
				}
				defer func() {
					if p != nil {
						p.Finish()
					}
				}()
			}
			rep, err := bench.RunSizing(c.Context, cfg)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				enc := json.NewEncoder(e.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			printBenchSizing(e.stdout, rep)
			return nil
		},
	}
}

// printBenchSizing prints the comparison: one column per layout, one row per table part and
// index, octets per ARK as loaded; then the totals, throughput, WAL, levers and verdicts.
func printBenchSizing(w io.Writer, rep *bench.SizingReport) {
	f := rep.Fields
	fmt.Fprintf(w, "arkhe bench sizing: %s ARKs from %s\n", thousands(int64(rep.ARKs)), rep.Source)
	fmt.Fprintf(w, "  average octets: key %.1f, url %.1f, title %.1f, who %.1f, when %.1f, request ID %.1f; one receipt per ARK, one ARK_CHANGE per 10\n",
		f.Key(), f.URL, f.What, f.Who, f.When, f.RequestID)
	fmt.Fprintf(w, "  server: PostgreSQL %s; shared_buffers=%s max_wal_size=%s wal_level=%s fsync=%s full_page_writes=%s synchronous_commit=%s\n\n",
		rep.Server, rep.Settings["shared_buffers"], rep.Settings["max_wal_size"], rep.Settings["wal_level"],
		rep.Settings["fsync"], rep.Settings["full_page_writes"], rep.Settings["synchronous_commit"])

	type key struct{ table, part string }
	var order []key
	seen := map[key]bool{}
	vals := map[key]map[string]float64{}
	put := func(k key, layout string, v float64) {
		if !seen[k] {
			seen[k] = true
			order = append(order, k)
			vals[k] = map[string]float64{}
		}
		vals[k][layout] += v
	}
	for _, tname := range []string{sizing.TableARK, sizing.TableReceipt, sizing.TableChange} {
		for _, r := range rep.Results {
			n := float64(r.ARKs)
			for _, t := range r.Loaded {
				if t.Name != tname {
					continue
				}
				put(key{tname, "heap"}, r.Layout.Name, float64(t.HeapBytes())/n)
				put(key{tname, "TOAST"}, r.Layout.Name, float64(t.TOASTBytes())/n)
				for _, ix := range t.Indexes {
					put(key{tname, ix.Name}, r.Layout.Name, float64(ix.Bytes+ix.Maps)/n)
				}
			}
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "bytes per ARK, as loaded\t")
	for _, r := range rep.Results {
		fmt.Fprintf(tw, "%s\t", r.Layout.Name)
	}
	fmt.Fprintln(tw)
	row := func(label string, v func(r *bench.BuildResult) string) {
		fmt.Fprintf(tw, "%s\t", label)
		for _, r := range rep.Results {
			fmt.Fprintf(tw, "%s\t", v(r))
		}
		fmt.Fprintln(tw)
	}
	for _, k := range order {
		label := k.table + " " + k.part
		if k.part != "heap" && k.part != "TOAST" {
			label = "  index " + k.part
		}
		row(label, func(r *bench.BuildResult) string {
			v, ok := vals[k][r.Layout.Name]
			if !ok {
				return "-"
			}
			return fmt.Sprintf("%.1f", v)
		})
	}
	row("other tables", func(r *bench.BuildResult) string { _, _, _, o := r.PerARK(r.Loaded); return fmt.Sprintf("%.1f", o) })
	row("ark + receipt (all-in)", func(r *bench.BuildResult) string { return fmt.Sprintf("%.1f", r.AllIn(r.Loaded)) })
	row("ledger (+ changes, other)", func(r *bench.BuildResult) string { return fmt.Sprintf("%.1f", r.Ledger(r.Loaded)) })
	row("all-in after REINDEX", func(r *bench.BuildResult) string { return fmt.Sprintf("%.1f", r.AllIn(r.Rebuilt)) })
	row("ledger after REINDEX", func(r *bench.BuildResult) string { return fmt.Sprintf("%.1f", r.Ledger(r.Rebuilt)) })
	row("load, ARKs/s (with receipts)", func(r *bench.BuildResult) string { return thousands(int64(r.ARKsPerSecond())) })
	row("ARK_CHANGE rows/s", func(r *bench.BuildResult) string {
		if r.ChangeLoad <= 0 {
			return "-"
		}
		return thousands(int64(float64(r.Changes) / r.ChangeLoad.Seconds()))
	})
	row("WAL per ARK", func(r *bench.BuildResult) string { return fmt.Sprintf("%.0f", float64(r.WALBytes)/float64(r.ARKs)) })
	tw.Flush()

	fmt.Fprintln(w, "\nlevers (bytes per ARK, whole ledger; ark + receipt in brackets)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, l := range rep.Levers {
		fmt.Fprintf(tw, "  %s\t%s → %s\t%.0f → %.0f\t(%.0f → %.0f)\tsaves %.1f B (%.1f%%)\n",
			l.Name, l.From, l.To, l.LedgerBefore, l.LedgerAfter, l.AllInBefore, l.AllInAfter, l.Saved, l.SavedPct)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nmodel: the structural model predicts arkhe's ark + receipts + changes within %+.1f%% of the measurement (%.0f B per ARK all-in modelled)\n",
		rep.ModelDiffPct, rep.Model.ARK.Total()+rep.Model.Receipt.Total())
	if rep.Target != "" {
		fmt.Fprintf(w, "target: %s\n", rep.Target)
	}
	fmt.Fprintf(w, "%s\n", rep.Verdict)
}
