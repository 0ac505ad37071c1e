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
			"CSV, by extension), and records an audit event; a full audit without errors records the new baseline.\n" +
			"\n" +
			"--since checks only the ARKs new or repointed since the last full audit, through the ledger's paths,\n" +
			"and the tamper signals that audit recorded (ledger.signals): each protected table's file node\n" +
			"(TRUNCATE, VACUUM FULL, CLUSTER, a rewrite), the statistics counters (rows deleted or updated behind\n" +
			"the triggers, e.g. by a superuser with session_replication_role = replica; ARKs inserted behind the\n" +
			"paths), a statistics reset and the schema's checksum; the triggers are schema.triggers. On Citus it is\n" +
			"a full audit that also compares the signals of every shard placement, naming the node. A signal says\n" +
			"which, and recommends the full audit. --since cannot catch a change that leaves file nodes and counters\n" +
			"as they were (a direct write to the table's files; counters lost in a crash and carried back past the\n" +
			"recorded values), an update paired with a forged ARK_CHANGE row, or a trigger disabled and re-enabled\n" +
			"with no write meanwhile; counters arrive seconds after a transaction, so a change just before may show\n" +
			"on the next run. Run the full audit periodically (weekly, say) and --since in between.\n" +
			"Checks: " + strings.Join(names, ", ") + ".",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "since", Usage: "check only what changed since the last full audit, plus tamper signals (see above); run a full audit weekly"},
			&cli.IntFlag{Name: "examples", Value: verify.DefaultExamples, Usage: "example subjects kept per check"},
			&cli.StringSliceFlag{Name: "out", Aliases: []string{"o"}, Usage: "findings file, .jsonl, .parquet or .csv (repeatable)", DefaultText: strings.Join(defaultFindings(), " and ")},
			&cli.IntFlag{Name: "workers", Usage: "goroutines checking ARKs", DefaultText: "one per CPU"},
			&cli.StringFlag{Name: "client", Usage: "client_id recorded in the audit event"},
			&cli.StringFlag{Name: "metrics-file", Usage: "write the audit's figures here in the Prometheus text format (e.g. /var/lib/node_exporter/textfile/arkhe_verify.prom)"},
			&cli.StringFlag{Name: "baseline", Usage: "baseline file kept outside the ledger (ledger.rollback: a ledger restored from an earlier backup is found); read, then rewritten by a full audit without that finding", DefaultText: verify.DefaultBaselineName + " beside --metrics-file, else none"},
			&cli.BoolFlag{Name: "accept-digest", Usage: "after investigating ledger.digest findings: record the ledger as it is now as the next audit's baseline (the findings are still reported)"},
		},
		Action: func(c *cli.Context) error {
			if c.Int("examples") < 0 {
				return errors.New("verify: --examples must not be negative")
			}
			cfg := verify.Config{Since: c.Bool("since"), Examples: c.Int("examples"), Workers: c.Int("workers"),
				ClientID: c.String("client"), AcceptDigest: c.Bool("accept-digest"), Baseline: c.String("baseline")}
			if cfg.Baseline == "" {
				cfg.Baseline = verify.DefaultBaselinePath(c.String("metrics-file"))
			}
			if cfg.Examples == 0 {
				cfg.Examples = -1
			}
			if err := cfg.Validate(); err != nil {
				return err
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
					return err
				}
				w, err := report.Create[verify.FindingRow](p, f)
				if err != nil {
					return err
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
				return err
			}
			defer l.Close()
			res, err := verify.Run(c.Context, l, cfg)
			p.Finish()
			if err != nil {
				return err
			}
			for _, w := range writers {
				if err := w.Close(); err != nil {
					return err
				}
			}
			printVerify(e.stdout, res, paths)
			if path := c.String("metrics-file"); path != "" {
				if err := metrics.Write(path, res.Metrics()); err != nil {
					return err
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
		kind = "--since audit (what changed since the last full audit, and the tamper signals)"
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
	switch {
	case res.SummaryStored:
		stored = "recorded as the next audit's baseline"
	case !res.Full:
		stored = "not a baseline (--since compares with the last full audit)"
	}
	if res.Clean() {
		fmt.Fprintf(w, "clean: no findings; this audit is %s\n", stored)
		return
	}
	if n := res.Check(verify.CheckSignals).Count; n > 0 {
		fmt.Fprintf(w, "%s of a change behind the ledger's paths (%s): run a full audit (arkhe verify without --since)\n",
			plural(n, "tamper signal", "tamper signals"), verify.CheckSignals)
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
