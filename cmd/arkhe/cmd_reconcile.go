package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/arkhe-ledger/arkhe/importer"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/legacy"
	"github.com/arkhe-ledger/arkhe/report"
)

func reconcileCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "reconcile",
		Usage:     "compare legacy exports with the ledger and report every difference; --apply accepts the exports' values",
		ArgsUsage: "EXPORT...",
		Description: "Reads the exports (arklet, N2T, EZID; format detected or --input-format), normalizes each ARK as arkhe import " +
			"does and compares it with the ledger by key. The difference report (Parquet by default, ./<first export>.diff.parquet " +
			"unless -o says otherwise) has one row per difference: only_in_export, only_in_ledger (limited to the shoulders the " +
			"exports cover), target_differs, status_differs, metadata_differs, spelling_only. As with arkhe import, an export's " +
			"reserved ARKs and ARKs of the test NAAN 99999 that the ledger lacks are skipped and counted unless --include-reserved " +
			"or --include-test is given, so a reconcile after a default import of the same exports finds no differences. With --apply, every ARK whose target, " +
			"status or metadata differ takes the export's value through the repoint path: exactly one ARK_CHANGE row per changed " +
			"ARK, nothing else touched; a second --apply finds nothing to do. Exit 0 no differences, 1 differences (or unreadable " +
			"records), 2 could not run.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "difference report path (.parquet, .csv or .jsonl)", DefaultText: "./<first export>.diff.parquet"},
			&cli.StringFlag{Name: "format", Usage: "report format: parquet, csv or jsonl", DefaultText: "from -o's extension, else parquet"},
			&cli.StringFlag{Name: "input-format", Usage: "export format of every EXPORT", DefaultText: "detected per file"},
			&cli.BoolFlag{Name: "apply", Usage: "accept the exports' targets, statuses and metadata (one ARK_CHANGE row per changed ARK)"},
			&cli.StringFlag{Name: "client", Usage: "registered client the apply acts as (recorded in ARK_CHANGE)"},
			&cli.BoolFlag{Name: "include-reserved", Usage: "report export ARKs that are reserved too (skipped and counted otherwise, as arkhe import does)"},
			&cli.BoolFlag{Name: "include-test", Usage: "report ARKs of the test NAAN 99999 too (skipped and counted otherwise, as arkhe import does)"},
		},
		Action: func(c *cli.Context) error { return reconcileAction(c, e) },
	}
}

func reconcileAction(c *cli.Context, e *env) error {
	exports := c.Args().Slice()
	if len(exports) == 0 {
		return fmt.Errorf("reconcile: give at least one export file")
	}
	out := c.String("out")
	var format report.Format
	var err error
	switch {
	case out == "" && c.String("format") == "":
		format, out = report.Parquet, exportBase(exports[0])+".diff.parquet"
	case out == "":
		if format, err = report.ParseFormat(c.String("format")); err != nil {
			return err
		}
		out = exportBase(exports[0]) + ".diff" + format.Extension()
	default:
		if format, err = report.ResolveFormat(c.String("format"), out); err != nil {
			return err
		}
	}
	cfg := importer.ReconcileConfig{Exports: exports, Out: out, OutFormat: format, Apply: c.Bool("apply"), ClientID: c.String("client"),
		IncludeReserved: c.Bool("include-reserved"), IncludeTest: c.Bool("include-test")}
	if f := c.String("input-format"); f != "" {
		if cfg.Format, err = legacy.ParseFormat(f); err != nil {
			return fmt.Errorf("reconcile: --input-format: %w", err)
		}
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	open := openChecked
	if cfg.Apply {
		open = func(c *cli.Context, e *env, n int32) (*ledger.Ledger, error) {
			return openAsClient(c, e, n, cfg.ClientID)
		}
	}
	l, err := open(c, e, 2)
	if err != nil {
		return err
	}
	defer l.Close()
	prog := newProgress(e.stderr, e.log, c.Bool("quiet"), "reading exports", "records")
	var last int64
	cfg.Progress = func(read int64) { prog.Add(read - last); last = read }
	sum, err := importer.Reconcile(c.Context, l, cfg)
	prog.Finish()
	if err != nil {
		return interrupted(c.Context, "reconcile", "nothing was applied", err)
	}
	printReconcileSummary(e.stdout, exports, cfg.Apply, sum)
	if sum.Findings() {
		return withFindings("")
	}
	return nil
}

// printReconcileSummary prints the one-screen summary of a reconcile.
func printReconcileSummary(w io.Writer, exports []string, apply bool, s importer.ReconcileSummary) {
	status := "no differences"
	if s.Findings() {
		status = "differences found"
	}
	fmt.Fprintf(w, "arkhe reconcile: %s\n", status)
	fmt.Fprintf(w, "  exports          %s\n", strings.Join(exports, ", "))
	fmt.Fprintf(w, "  read             %s, %s compared\n", plural(s.Read, "record", "records"), plural(s.Compared, "ARK", "ARKs"))
	if n := s.Rejected; n > 0 {
		fmt.Fprintf(w, "  unreadable       %s, e.g. %s\n", plural(n, "record", "records"), strings.Join(s.FirstRejects, "; "))
	}
	var skipped int64
	for _, v := range s.SkippedNonARK {
		skipped += v
	}
	fmt.Fprintf(w, "  skipped          %s non-ARK%s, %s\n", thousands(skipped), kindCounts(s.SkippedNonARK), plural(s.Registry, "registry record", "registry records"))
	fmt.Fprintf(w, "                   %s reserved (--include-reserved reports them), %s test NAAN 99999 (--include-test)\n", thousands(s.ReservedSkipped), thousands(s.TestSkipped))
	for _, t := range s.Truncated {
		fmt.Fprintf(w, "  truncated        %s (every complete record was compared)\n", t.Error())
	}
	for _, k := range []string{importer.DiffOnlyInExport, importer.DiffOnlyInLedger, importer.DiffTargetDiffers,
		importer.DiffStatusDiffers, importer.DiffMetadataDiffers, importer.DiffSpellingOnly} {
		fmt.Fprintf(w, "  %-16s %s\n", k, thousands(s.Kinds[k]))
	}
	fmt.Fprintf(w, "  only_in_ledger covers the %s the exports touch\n", plural(int64(s.Covered), "shoulder", "shoulders"))
	if s.Ambiguous > 0 {
		fmt.Fprintf(w, "  ambiguous        %s held more than once with different values (never applied)\n", plural(s.Ambiguous, "ARK", "ARKs"))
	}
	if apply {
		fmt.Fprintf(w, "  applied          %s repointed, %s status/metadata changes (one ARK_CHANGE row each); %s held back\n",
			thousands(s.Repointed), thousands(s.Changed), thousands(s.NotApplied))
	} else if s.Kinds[importer.DiffTargetDiffers]+s.Kinds[importer.DiffStatusDiffers]+s.Kinds[importer.DiffMetadataDiffers] > 0 {
		fmt.Fprintf(w, "  nothing applied: arkhe reconcile --apply accepts the exports' targets, statuses and metadata\n")
	}
	fmt.Fprintf(w, "  report           %s (%s)\n", s.Report, plural(s.Rows, "row", "rows"))
	fmt.Fprintf(w, "  elapsed          %.1f s\n", s.Elapsed.Seconds())
}
