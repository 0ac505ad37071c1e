package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/arkhe-ledger/arkhe/loader"
)

func updateCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "update",
		Usage:     "change ARKs in bulk from a manifest (repoint, tombstone, restore, describe), idempotently: a re-run applies nothing twice",
		ArgsUsage: "MANIFEST...",
		Description: "Reads change manifests (CSV or JSON Lines, optionally .gz or .xz, or Parquet) in order. Each row names an ARK (column ark, " +
			"any spelling) or a request ID of the client's own mint receipts (column request_id), and what changes: url, " +
			"who, what, when, commitment, status (public, or unavailable with a reason: a tombstone) and reason (recorded " +
			"in ARK_CHANGE). A column the manifest lacks is left alone; an empty value in a present column empties the " +
			"ARK's value (as mint stores an absent field), except status and reason, where it leaves the ARK alone. " +
			"Each batch is staged with COPY and applied in one transaction through the repoint path: one ARK_CHANGE row " +
			"per changed ARK with before and after, reach checked in the database as for `ark repoint`. Each row has a " +
			"change request ID (column change_id, else sha256: and 32 hex digits of SHA-256 over the ARK and the row's " +
			"changed columns) kept as a receipt: a re-run reports rows applied before as earlier and changes nothing " +
			"again. The same ARK twice in a batch with different values is rejected unless --last-wins. Writes a result " +
			"file (file, line, ark, change_id, outcome changed|unchanged|earlier|rejected) and a reject file. Exit 0 done, " +
			"1 done with rejects, 2 could not run.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "client", Required: true, Usage: "registered client the changes act as (its reach applies)"},
			&cli.StringFlag{Name: "map", Usage: "column mapping, e.g. 'request_id=acno,url=new_url' (COLUMN=MANIFEST_COLUMN, comma-separated)"},
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "result file path (.csv)", DefaultText: "./<first manifest's file name>.changes.csv"},
			&cli.StringFlag{Name: "rejects", Usage: "reject file path", DefaultText: "beside the result file, <name without .changes.csv>.rejects.csv"},
			&cli.IntFlag{Name: "batch", Value: loader.DefaultUpdateBatch, Usage: "rows per transaction"},
			&cli.BoolFlag{Name: "last-wins", Usage: "of several rows of one ARK with different values in a batch, apply the last instead of rejecting them all"},
			&cli.BoolFlag{Name: "dry-run", Usage: "apply every batch and roll it back: counts and rejects as a real run, nothing changed"},
			&cli.DurationFlag{Name: "retry-for", Value: loader.DefaultRetryFor, Usage: "after a fault (lost connection, server restart, no answer within --batch-timeout) or a conflict with a concurrent run, retry a batch with back-off for this long; its receipts keep anything from being applied twice; 0s stops at the first fault"},
			&cli.DurationFlag{Name: "batch-timeout", Value: loader.DefaultBatchTimeout, Usage: "deadline of one attempt at a batch, which detects a frozen server; the transaction's lock_timeout is half of it, its statement_timeout three quarters"},
		},
		Action: func(c *cli.Context) error { return updateAction(c, e) },
	}
}

// parseColumnMap parses "COLUMN=SOURCE,..." into change column -> manifest column.
func parseColumnMap(s string) (map[string]string, error) {
	m := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return m, nil
	}
	known := map[string]bool{loader.ColARK: true, loader.ColMintRequestID: true, loader.ColChangeID: true, loader.ColURL: true,
		loader.ColWho: true, loader.ColWhat: true, loader.ColWhen: true, loader.ColCommitment: true, loader.ColStatus: true, loader.ColReason: true}
	for _, item := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok || v == "" {
			return nil, fmt.Errorf("%q: want COLUMN=MANIFEST_COLUMN", item)
		}
		if !known[k] {
			return nil, fmt.Errorf("%q: unknown column %s: want ark, request_id, change_id, url, who, what, when, commitment, status or reason", item, k)
		}
		m[k] = v
	}
	return m, nil
}

func updateAction(c *cli.Context, e *env) error {
	inputs := c.Args().Slice()
	m, err := parseColumnMap(c.String("map"))
	if err != nil {
		return usagef("update: --map: %v", err)
	}
	if c.Int("batch") < 1 {
		return usagef("update: --batch must be at least 1")
	}
	out := c.String("out")
	if out == "" {
		out = manifestName(inputs[0]) + ".changes.csv"
	}
	if !strings.HasSuffix(strings.ToLower(out), ".csv") {
		return usagef("update: --out %s: want .csv", out)
	}
	rejects := c.String("rejects")
	if rejects == "" {
		rejects = strings.TrimSuffix(strings.TrimSuffix(out, ".csv"), ".changes") + ".rejects.csv"
	}
	if filepath.Clean(rejects) == filepath.Clean(out) {
		return usagef("update: --rejects %s is the result file's path too", rejects)
	}
	retry := loader.RetryPolicy{For: c.Duration("retry-for"), BatchTimeout: c.Duration("batch-timeout")}
	if retry.For < 0 || retry.BatchTimeout < time.Second {
		return usagef("update: --retry-for must not be negative and --batch-timeout must be at least 1s")
	}
	if retry.For == 0 {
		retry.For = -1 // no retries
	}
	retry.Notify = func(n loader.RetryNotice) {
		if n.Resumed {
			e.log.Info("update: " + n.String())
		} else {
			e.log.Warn("update: " + n.String())
		}
	}
	l, err := openAsClient(c, e, 3, c.String("client"))
	if err != nil {
		return err
	}
	defer l.Close()
	prog := newProgress(e.stderr, e.log, c.Bool("quiet"), "updating", "rows")
	job := loader.UpdateJob{ClientID: c.String("client"), Inputs: inputs, Map: m, BatchSize: c.Int("batch"),
		LastWins: c.Bool("last-wins"), DryRun: c.Bool("dry-run"), ResultPath: out, RejectsPath: rejects, Retry: retry,
		Progress: func(s loader.UpdateSummary) { prog.Set(s.Read, 0) }}
	rep, err := loader.Update(c.Context, l, job)
	prog.Finish()
	if isReach(err) && rep.Summary.Read == 0 {
		return err
	}
	printUpdateSummary(e.stdout, rep, job.DryRun)
	if err != nil {
		return interrupted(c.Context, "update", "what was committed stays, and the same command completes the job", err)
	}
	if rep.Summary.Rejected > 0 {
		return withFindings("")
	}
	return nil
}

func printUpdateSummary(w io.Writer, rep loader.UpdateReport, dry bool) {
	s := rep.Summary
	verb := "updated"
	if dry {
		verb = "dry run (nothing changed)"
	}
	fmt.Fprintf(w, "%s: read %d, changed %d, unchanged %d, applied earlier %d, rejected %d in %d batches (%.1fs)\n",
		verb, s.Read, s.Changed, s.Unchanged, s.Earlier, s.Rejected, s.Batches, s.Elapsed.Seconds())
	if rep.Result != "" {
		fmt.Fprintf(w, "result file: %s\n", rep.Result)
	}
	if rep.Rejects != "" {
		fmt.Fprintf(w, "rejects:     %s\n", rep.Rejects)
	}
}
