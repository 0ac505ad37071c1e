package main

import (
	"context"
	"fmt"
	"iter"

	"github.com/urfave/cli/v2"

	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/report"
)

func reportCommand(e *env) *cli.Command {
	flags := func(what string) []cli.Flag {
		return []cli.Flag{
			&cli.StringFlag{Name: "since", Usage: what + " at or after this time (RFC 3339 or a date, UTC midnight)"},
			&cli.StringFlag{Name: "until", Usage: what + " before this time"},
			&cli.StringFlag{Name: "naan", Usage: "the NAAN (e.g. 12345): report only this one"},
			&cli.StringFlag{Name: "shoulder", Usage: "only this shoulder (/x9)"},
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "output file: .parquet, .csv or .jsonl", DefaultText: "./<report>.<format>, e.g. ./changes.parquet"},
			&cli.StringFlag{Name: "format", Usage: "report format: parquet, csv or jsonl", DefaultText: "from -o's extension, else parquet"},
		}
	}
	return &cli.Command{
		Name:  "report",
		Usage: "write the ledger's history or contents as Parquet (or CSV, JSON Lines), streamed and atomic",
		Subcommands: []*cli.Command{
			{
				Name:  "changes",
				Usage: "ARK_CHANGE rows: where ARKs pointed, when, by whom, why (columns: ark naan shoulder at action before_url after_url by reason)",
				Flags: flags("changes"),
				Action: func(c *cli.Context) error {
					return runReport(c, e, "changes", "ARK_CHANGE rows", ledger.ChangeRows)
				},
			},
			{
				Name: "links",
				Usage: "the targets' health, per ARK with its manager and shoulder (columns: ark naan shoulder manager target " +
					"checked_target status checked_at outcome status_code error_class final_url mime_type size duration_ms redirects " +
					"body_hash hash_alg consecutive_failures first_failure_at last_success_at broken due_at imported)",
				Flags: append(flags("last checks"),
					&cli.StringFlag{Name: "manager", Usage: "only the ARKs of this manager's shoulders (a report per owner)"},
					&cli.BoolFlag{Name: "broken-only", Usage: "only the ARKs whose target is broken"}),
				Action: func(c *cli.Context) error {
					return runReport(c, e, "links", "link states", ledger.LinkRows)
				},
			},
			{
				Name:  "arks",
				Usage: "the ARKs (columns: ark naan shoulder target who what when commitment status tombstone_reason created_at updated_at metadata, the ARK's other fields as JSON text)",
				Flags: flags("ARKs created"),
				Action: func(c *cli.Context) error {
					return runReport(c, e, "arks", "ARKs", ledger.ARKRows)
				},
			},
		},
	}
}

// runReport writes one report: rows from the ledger through report.Writer, atomically.
func runReport[T any](c *cli.Context, e *env, name, what string,
	rows func(context.Context, *ledger.Ledger, ledger.ReportFilter) iter.Seq2[T, error]) error {
	var f ledger.ReportFilter
	var err error
	if f.Since, err = parseTime(c.String("since")); err != nil {
		return fmt.Errorf("--since: %w", err)
	}
	if f.Until, err = parseTime(c.String("until")); err != nil {
		return fmt.Errorf("--until: %w", err)
	}
	f.NAAN, f.Shoulder = c.String("naan"), c.String("shoulder")
	f.Manager, f.BrokenOnly = c.String("manager"), c.Bool("broken-only")
	if err := f.Validate(); err != nil {
		return err
	}
	path, flag := c.String("out"), c.String("format")
	if path == "" {
		format := report.Parquet
		if flag != "" {
			if format, err = report.ParseFormat(flag); err != nil {
				return err
			}
		}
		path = name + format.Extension()
	}
	format, err := report.ResolveFormat(flag, path)
	if err != nil {
		return err
	}
	w, err := report.Create[T](path, format)
	if err != nil {
		return err
	}
	defer w.Abort()
	l, err := openChecked(c, e, 2)
	if err != nil {
		return err
	}
	defer l.Close()
	p := newProgress(e.stderr, e.log, c.Bool("quiet"), "writing "+name, what)
	counted := func(yield func(T, error) bool) {
		var n int64
		for r, err := range rows(c.Context, l, f) {
			if err == nil {
				if n++; n%1000 == 0 {
					p.Add(1000)
				}
			}
			if !yield(r, err) {
				return
			}
		}
	}
	n, err := w.WriteSeq(c.Context, counted)
	p.Finish()
	if err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "wrote %s %s to %s (%s)\n", thousands(n), what, path, format)
	return nil
}
