package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/arkhe-ledger/arkhe/metrics"
	"github.com/arkhe-ledger/arkhe/report"
	"github.com/arkhe-ledger/arkhe/verify"
)

// defaultFindings returns the findings files `arkhe verify` writes when -o/--out is not
// given: outputs default to the current directory.
func defaultFindings() []string { return []string{"findings.jsonl", "findings.parquet"} }

func verifyCommand(e *env) *cli.Command {
	var names []string
	for _, c := range verify.Checks() {
		names = append(names, c.Name)
	}
	return &cli.Command{
		Name:  "verify",
		Usage: "audit the ledger's integrity (the nightly check); exit 0 clean, 1 findings, 2 could not run",
		Description: "Checks every ARK (syntax, normalized form, widths, check character, NAAN, shoulder, longest-prefix\n" +
			"shoulder, minted after retirement), clients, receipts, ARK_CHANGE chains, the digest of what the last\n" +
			"clean audit recorded (nothing deleted or altered behind the ledger's back) and the ledger's triggers.\n" +
			"Prints one line per check, writes every finding to the -o/--out files (JSON Lines, Parquet and/or\n" +
			"CSV, by extension), and records an audit event; a run without errors records the new baseline.\n" +
			"Checks: " + strings.Join(names, ", ") + ".",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "since", Usage: "check only the ARKs new or changed since the last clean audit (digest, receipts and schema still cover everything)"},
			&cli.IntFlag{Name: "examples", Value: verify.DefaultExamples, Usage: "example subjects kept per check"},
			&cli.StringSliceFlag{Name: "out", Aliases: []string{"o"}, Usage: "findings file, .jsonl, .parquet or .csv (repeatable)", DefaultText: strings.Join(defaultFindings(), " and ")},
			&cli.IntFlag{Name: "workers", Usage: "goroutines checking ARKs", DefaultText: "one per CPU"},
			&cli.StringFlag{Name: "client", Usage: "client_id recorded in the audit event"},
			&cli.StringFlag{Name: "metrics-file", Usage: "write the audit's figures here in the Prometheus text format (e.g. /var/lib/node_exporter/textfile/arkhe_verify.prom)"},
			&cli.BoolFlag{Name: "accept-digest", Usage: "after investigating ledger.digest findings: record the ledger as it is now as the next audit's baseline (the findings are still reported)"},
		},
		Action: func(c *cli.Context) error {
			cannot := func(err error) error { return &exitError{code: exitCannot, err: err} }
			if c.NArg() > 0 {
				return cannot(fmt.Errorf("verify: unexpected argument %q", c.Args().First()))
			}
			if c.Int("examples") < 0 {
				return cannot(errors.New("verify: --examples must not be negative"))
			}
			cfg := verify.Config{Since: c.Bool("since"), Examples: c.Int("examples"), Workers: c.Int("workers"),
				ClientID: c.String("client"), AcceptDigest: c.Bool("accept-digest")}
			if cfg.Examples == 0 {
				cfg.Examples = -1
			}
			if err := cfg.Validate(); err != nil {
				return cannot(err)
			}
			paths := c.StringSlice("out")
			if len(paths) == 0 {
				paths = defaultFindings()
			}
			var writers []*report.Writer[verify.FindingRow]
			defer func() {
				for _, w := range writers {
					w.Abort()
				}
			}()
			for _, p := range paths {
				f, err := report.FormatFromPath(p)
				if err != nil {
					return cannot(err)
				}
				w, err := report.Create[verify.FindingRow](p, f)
				if err != nil {
					return cannot(err)
				}
				writers = append(writers, w)
			}
			cfg.Findings = func(r verify.FindingRow) error {
				for _, w := range writers {
					if err := w.Write(r); err != nil {
						return err
					}
				}
				return nil
			}
			p := newProgress(e.stderr, e.log, c.Bool("quiet"), "verifying", "ARKs")
			var mu sync.Mutex
			var shown int64
			cfg.Progress = func(n int64) {
				mu.Lock()
				defer mu.Unlock()
				if n > shown {
					p.Set(n, n)
					shown = n
				}
			}
			l, err := openChecked(c, e, 4)
			if err != nil {
				return cannot(err)
			}
			defer l.Close()
			res, err := verify.Run(c.Context, l, cfg)
			p.Finish()
			if err != nil {
				return cannot(err)
			}
			for _, w := range writers {
				if err := w.Close(); err != nil {
					return cannot(err)
				}
			}
			printVerify(e.stdout, res, paths)
			if path := c.String("metrics-file"); path != "" {
				if err := metrics.Write(path, res.Metrics()); err != nil {
					return cannot(err)
				}
			}
			if !res.Clean() {
				return withFindings("")
			}
			return nil
		},
	}
}

// printVerify prints the one-screen summary: what was audited, one line per check (count and
// the first examples that fit), the notes, and the outcome.
func printVerify(w io.Writer, res *verify.Result, paths []string) {
	kind := "full audit"
	if !res.Full {
		kind = "--since audit (what changed since the last clean audit)"
	}
	fmt.Fprintf(w, "arkhe verify: %s of a ledger of %s, %s checked one by one, in %s\n", kind, plural(res.ARKs, "ARK", "ARKs"),
		thousands(res.Checked), res.Duration.Round(time.Millisecond))
	if res.Baseline != nil {
		fmt.Fprintf(w, "compared with the clean audit of %s\n", res.Baseline.UTC().Format(time.RFC3339))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tSEVERITY\tCOUNT\tEXAMPLES")
	var notes []string
	for _, c := range res.Checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Name, c.Severity, thousands(c.Count), examplesLine(c, 64))
		if c.Note != "" {
			notes = append(notes, c.Name+": "+c.Note)
		}
	}
	tw.Flush()
	for _, n := range notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	stored := "not recorded as a baseline (errors found)"
	if res.SummaryStored {
		stored = "recorded as the next audit's baseline"
	}
	if res.Clean() {
		fmt.Fprintf(w, "clean: no findings; this audit is %s\n", stored)
		return
	}
	fmt.Fprintf(w, "%s (%s); this audit is %s; every finding is in %s\n",
		plural(res.Findings(), "finding", "findings"), plural(res.Errors(), "error", "errors"), stored, strings.Join(paths, " and "))
}

// plural returns n, grouped, with the singular or plural noun.
func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return thousands(n) + " " + many
}

// examplesLine joins the examples of c that fit in width octets and says how many more there are.
func examplesLine(c verify.CheckResult, width int) string {
	var b strings.Builder
	shown := 0
	for _, ex := range c.Examples {
		if shown > 0 && b.Len()+2+len(ex) > width {
			break
		}
		if shown > 0 {
			b.WriteString(", ")
		}
		b.WriteString(ex)
		shown++
	}
	if rest := c.Count - int64(shown); c.Count > 0 && rest > 0 {
		fmt.Fprintf(&b, " (+%s more)", thousands(rest))
	}
	return b.String()
}
