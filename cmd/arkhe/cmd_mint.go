package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/urfave/cli/v2"

	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/loader"
	"github.com/arkhe-ledger/arkhe/pipeline"
	"github.com/arkhe-ledger/arkhe/textin"
)

func mintCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "mint",
		Usage:     "mint one ARK per manifest row (CSV, JSON Lines, Parquet), idempotently: a re-run replays",
		ArgsUsage: "MANIFEST...",
		Description: "Reads the manifests in order and mints an ARK for each row's request ID in the client's shoulder, " +
			"writing the ARKs and their receipts with COPY, one transaction per batch. A request ID that has a receipt " +
			"replays its ARK, whatever the shoulder: only rows that need a new mint need an active shoulder within the " +
			"client's reach and quota left today (new mints per manager per UTC day, replays excluded); the other " +
			"rows go to the reject file, and the same command mints them once that is fixed or the next UTC day. " +
			"Writes a mint map (request_id, ark, status minted|replayed, then the payload minted: url, who, what, when, commitment) and a reject file (file, line, record, " +
			"request_id, field, reason) into the current directory, named after the first manifest with its " +
			"extension kept (objects.csv → objects.csv.mintmap.csv, objects.csv.rejects.csv); -o/--out moves both " +
			"(the reject file goes beside the mint map: -o maps/teenie.parquet → maps/teenie.rejects.csv), " +
			"--rejects the reject file alone. A temporary file a killed run left beside them is removed by the next run. Exit 0 done, 1 done with rejects, 2 could not run: bad arguments, the ledger out of " +
			"reach, or a refused mint, one that can neither mint (client, scope, reach, a shoulder that is not active, " +
			"the daily quota used up) nor replay a single row.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "client", Required: true, Usage: "registered client to mint as (its reach applies)"},
			&cli.StringFlag{Name: "shoulder", Usage: "shoulder to mint in, /x9 or NAAN/x9", DefaultText: "the client's pinned shoulder, else its manager's default"},
			&cli.StringFlag{Name: "map", Usage: "field mapping, e.g. 'request_id=acno,what=title,who=all_artists,when=dateText,url=url' (FIELD=SOURCE, comma-separated; SOURCE may be a JSON path)"},
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "mint map path: .csv, .jsonl or .parquet", DefaultText: "./<first manifest's file name>.mintmap.csv"},
			&cli.StringFlag{Name: "rejects", Usage: "reject file path", DefaultText: "beside the mint map, <map's name without .csv, .jsonl, .parquet and .mintmap>.rejects.csv"},
			&cli.IntFlag{Name: "batch", Value: pipeline.DefaultBatchSize, Usage: "rows per transaction"},
			&cli.IntFlag{Name: "workers", Value: pipeline.DefaultWorkers, Usage: "parallel COPY workers (one connection each)"},
			&cli.IntFlag{Name: "max-url", Value: textin.DefaultMaxURL, Usage: "longest target URL in octets"},
			&cli.IntFlag{Name: "max-erc", Value: textin.DefaultMaxERC, Usage: "longest ERC value (who, what, when) in octets"},
			&cli.StringSliceFlag{Name: "scheme", Usage: "allowed URL scheme (repeatable)", DefaultText: "http and https"},
			&cli.StringFlag{Name: "name-check", Value: "auto", Usage: "how drawn names are checked against the ledger: auto, always (look up before COPY), never (look up after a refused COPY), chunks (COPY in chunks under savepoints, look up a refused chunk)"},
			&cli.StringFlag{Name: "receipt-check", Value: "auto", Usage: "look request IDs up before COPY: auto, always, never"},
			&cli.DurationFlag{Name: "retry-for", Value: loader.DefaultRetryFor, Usage: "after a fault (lost connection, server restart, no answer within --batch-timeout) retry a batch with back-off for this long, resuming from its receipts; 0s stops at the first fault"},
			&cli.DurationFlag{Name: "batch-timeout", Value: loader.DefaultBatchTimeout, Usage: "deadline of one attempt at a batch, which detects a frozen server; the session's lock_timeout is half of it, its statement_timeout three quarters"},
		},
		Action: func(c *cli.Context) error { return mintAction(c, e) },
	}
}

// mintAction builds the job from the flags, runs it and prints the summary.
func mintAction(c *cli.Context, e *env) error {
	inputs := c.Args().Slice()
	mapping, err := pipeline.ParseMapping(c.String("map"))
	if err != nil {
		return fmt.Errorf("mint: --map: %w", err)
	}
	nameCheck, err := loader.ParseCheck(c.String("name-check"))
	if err != nil {
		return fmt.Errorf("mint: --name-check: %w", err)
	}
	receiptCheck, err := loader.ParseCheck(c.String("receipt-check"))
	if err != nil {
		return fmt.Errorf("mint: --receipt-check: %w", err)
	}
	if c.Int("batch") < 1 || c.Int("workers") < 1 {
		return errors.New("mint: --batch and --workers must be at least 1")
	}
	retry, err := retryPolicy(c, e)
	if err != nil {
		return err
	}
	base := manifestName(inputs[0])
	out := c.String("out")
	if out == "" {
		out = base + ".mintmap.csv"
	}
	rejects := c.String("rejects")
	if rejects == "" {
		rejects = rejectsBeside(out)
	}
	if filepath.Clean(rejects) == filepath.Clean(out) {
		return fmt.Errorf("mint: --rejects %s is the mint map's path too", rejects)
	}
	if f, _ := pipeline.DetectFormat(out); f == pipeline.FormatUnknown || strings.HasSuffix(strings.ToLower(out), ".gz") {
		return fmt.Errorf("mint: --out %s: want .csv, .jsonl or .parquet", out)
	}
	workers := c.Int("workers")
	defer boundMemory(pipeline.MemoryLimitFor(workers, c.Int("batch")))()
	l, err := openAsClient(c, e, int32(workers+2), c.String("client"))
	if err != nil {
		return err
	}
	defer l.Close()
	var entryNodes []*pgxpool.Pool
	for _, u := range entryNodeURLs(c) {
		n, err := ledger.Open(c.Context, u, int32(workers+1))
		if err != nil {
			return fmt.Errorf("mint: entry node: %w", err)
		}
		defer n.Close()
		entryNodes = append(entryNodes, n.Pool)
	}

	prog := newProgress(e.stderr, e.log, c.Bool("quiet"), "minting", "rows")
	measured := false
	job := loader.MintJob{
		Mint: loader.MintConfig{ClientID: c.String("client"), Shoulder: c.String("shoulder"),
			NameCheck: nameCheck, ReceiptCheck: receiptCheck, Retry: retry, EntryNodes: entryNodes},
		Inputs:  inputs,
		Mapping: mapping,
		Limits: textin.Limits{MaxURL: c.Int("max-url"), MaxERC: c.Int("max-erc"),
			Schemes: c.StringSlice("scheme")},
		Workers:     workers,
		BatchSize:   c.Int("batch"),
		MintMapPath: out,
		RejectsPath: rejects,
		Progress: func(p pipeline.Progress) {
			// rows as they are read; the share of the manifests read, in octets as stored (rows
			// when every manifest is Parquet)
			if !measured {
				prog.SetTotal(p.Input.Total, !p.Input.Rows)
				measured = true
			}
			prog.SetSettled(p.Settled)
			prog.Set(p.Read, p.Input.Done)
		},
	}
	rep, err := loader.Mint(c.Context, l, job)
	prog.Finish()
	if isReach(err) && rep.Summary.Read == 0 {
		return err // refused before reading: nothing written
	}
	if err == nil {
		err = mintRefusal(rep) // read, but refused: nothing minted or replayed
	}
	printMintSummary(e.stdout, inputs, rep, err) // the error itself goes to stderr, once
	if err != nil {
		return interrupted(c.Context, "mint", "what was committed stays, and the same command completes the job", err)
	}
	if rep.Summary.Rejected > 0 {
		return withFindings("")
	}
	return nil
}

// mintRefusal returns why a run that minted and replayed nothing was refused, or nil. A
// refused mint exits 2 (could not run) whether it is refused before reading (the client
// has no receipts, so no row could replay) or after (every row needed a new mint): the
// target takes no new mints (unknown shoulder, out of reach, not active: reserved,
// delegated or retired), or the manager's daily quota was used up before the run.
func mintRefusal(rep loader.MintReport) error {
	s, t := rep.Summary, rep.Target
	switch {
	case s.Minted > 0 || s.Replayed > 0:
		return nil
	case t.NoNewMints != nil:
		return t.NoNewMints
	case t.QuotaPerDay > 0 && t.QuotaUsed >= t.QuotaPerDay:
		return &loader.ReachError{ClientID: t.ClientID, Shoulder: t.NAAN + t.Shoulder, Rule: "the manager's daily quota is used up",
			Err: &loader.QuotaError{Manager: t.Manager, Quota: t.QuotaPerDay}}
	}
	return nil
}

// manifestName is the first manifest's file name without its directory, extensions kept
// (data/artworks.jsonl.gz → artworks.jsonl.gz), the stem of the default output names (outputs
// default to the current directory, named after the input): manifests that differ only in format (x.csv, x.ndjson) get different outputs.
func manifestName(path string) string {
	name := filepath.Base(path)
	if name == "" || name == "." || name == string(filepath.Separator) || name == "-" {
		name = "manifest"
	}
	return name
}

// rejectsBeside is the default reject file of a mint map at out: beside it, its name without
// its extension (.csv, .jsonl, .parquet) and a ".mintmap" before it, then ".rejects.csv":
// objects.csv.mintmap.csv → objects.csv.rejects.csv, maps/teenie.parquet →
// maps/teenie.rejects.csv. So two runs that write their maps apart keep their rejects apart.
func rejectsBeside(out string) string {
	dir, name := filepath.Split(out)
	lower := strings.ToLower(name)
	for _, ext := range []string{".csv", ".jsonl", ".parquet"} {
		if strings.HasSuffix(lower, ext) && len(name) > len(ext) {
			name, lower = name[:len(name)-len(ext)], lower[:len(lower)-len(ext)]
			break
		}
	}
	if strings.HasSuffix(lower, ".mintmap") && len(name) > len(".mintmap") {
		name = name[:len(name)-len(".mintmap")]
	}
	return dir + name + ".rejects.csv"
}

// printMintSummary prints the one-screen summary of a mint run.
func printMintSummary(w io.Writer, inputs []string, rep loader.MintReport, runErr error) {
	s, t := rep.Summary, rep.Target
	status := "done"
	switch {
	case isReach(runErr) && s.Minted == 0 && s.Replayed == 0:
		status = "refused: nothing minted or replayed (the reason is on stderr)"
	case runErr != nil:
		status = "stopped (the error is on stderr); minted and replayed count what it committed"
	case s.Rejected > 0:
		status = "done with rejects"
	}
	fmt.Fprintf(w, "arkhe mint: %s\n", status)
	fmt.Fprintf(w, "  manifests   %s\n", strings.Join(inputs, ", "))
	switch {
	case t.NoNewMints != nil:
		fmt.Fprintf(w, "  client      %s  no new mints: %s\n", t.ClientID, t.NoNewMints.Rule)
	default:
		fmt.Fprintf(w, "  client      %s  new mints in ark:%s%s\n", t.ClientID, t.NAAN, t.Shoulder)
	}
	fmt.Fprintf(w, "  read        %s\n", thousands(s.Read))
	fmt.Fprintf(w, "  minted      %s\n", thousands(s.Minted))
	fmt.Fprintf(w, "  replayed    %s\n", thousands(s.Replayed))
	fmt.Fprintf(w, "  rejected    %s\n", thousands(s.Rejected))
	fmt.Fprintf(w, "  collisions  %s in %s draws (shoulder total %s in %s)\n", thousands(s.Collisions), thousands(s.Draws),
		thousands(rep.ShoulderCollisions), thousands(rep.ShoulderDraws))
	fmt.Fprintf(w, "  elapsed     %.1f s, %s rows/s\n", s.Elapsed.Seconds(), thousands(int64(s.RowsPerSecond())))
	if rep.MintMap != "" {
		fmt.Fprintf(w, "  mint map    %s\n", rep.MintMap)
	} else {
		var me *pipeline.ManifestError
		if errors.As(runErr, &me) {
			fmt.Fprintf(w, "  mint map    not written (a manifest could not be read; fix the input and run again)\n")
		} else {
			fmt.Fprintf(w, "  mint map    not written (the run did not complete; re-run the same command)\n")
		}
	}
	if rep.Rejects != "" {
		fmt.Fprintf(w, "  rejects     %s\n", rep.Rejects)
	} else if s.Rejected > 0 {
		fmt.Fprintf(w, "  rejects     not written: the reject file failed (the error is on stderr); %s rejected rows are not recorded\n", thousands(s.Rejected))
	}
	if f := rep.Stats.Faults; f > 0 {
		fmt.Fprintf(w, "  retries     %s (batch attempts that met a fault and were retried; see the log)\n", thousands(f))
	}
	switch {
	case runErr != nil || s.Minted > 0 || s.Replayed == 0:
	case s.Rejected == 0 && s.Replayed == s.Read:
		fmt.Fprintf(w, "nothing new minted: all %s ARKs replayed from their receipts\n", thousands(s.Replayed))
	default:
		fmt.Fprintf(w, "nothing new minted: %s replayed, %s rejected\n", thousands(s.Replayed), thousands(s.Rejected))
	}
}

// retryPolicy reads --retry-for and --batch-timeout; each retry and each batch that resumes
// after one is logged (stderr).
func retryPolicy(c *cli.Context, e *env) (loader.RetryPolicy, error) {
	p := loader.RetryPolicy{For: c.Duration("retry-for"), BatchTimeout: c.Duration("batch-timeout")}
	if p.For < 0 || p.BatchTimeout < time.Second {
		return p, errors.New("mint: --retry-for must not be negative and --batch-timeout must be at least 1s")
	}
	if p.For == 0 {
		p.For = -1 // no retries
	}
	p.Notify = func(n loader.RetryNotice) {
		if n.Resumed {
			e.log.Info("mint: " + n.String())
		} else {
			e.log.Warn("mint: " + n.String())
		}
	}
	return p, nil
}
