package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/importer"
	"github.com/arkhe-ledger/arkhe/legacy"
	"github.com/arkhe-ledger/arkhe/pipeline"
)

func importCommand(e *env) *cli.Command {
	formats := make([]string, 0, len(legacy.Formats()))
	for _, f := range legacy.Formats() {
		formats = append(formats, string(f))
	}
	return &cli.Command{
		Name:      "import",
		Usage:     "import legacy exports (arklet, N2T, EZID, NAAN registry, shoulder lists) into the ledger, insert-only",
		ArgsUsage: "FILE...",
		Description: "Reads each export (format detected, or --input-format), normalizes every ARK and imports it without " +
			"re-minting, renaming or overwriting anything: a new ARK is inserted under its shoulder (an unregistered " +
			"legacy shoulder is created reserved), one already in the ledger with the same values is unchanged, one with " +
			"a different value is reported and left alone (arkhe reconcile --apply accepts it). NAAN and shoulder records " +
			"fill the naan and shoulder tables. Each file is one transaction and one recorded import run. Rows that did " +
			"not land (rejected, refused, conflicts, collapsed duplicates, differences) are listed in the reject file, " +
			"./<first file>.rejects.csv unless --rejects says otherwise. Formats: " + strings.Join(formats, ", ") +
			". --input-format " + importer.MintMapFormat + " reads mint maps instead (recovery after a restore from a backup, " +
			"docs/recovery.md): as --client, each mint-map row's ARK that the ledger lacks is put back with its receipt, " +
			"so a re-run of its manifest replays it; one in the ledger under the same request ID is present, or reported " +
			"changed-after-mint field by field and left alone; one under another request ID or client is rejected. " +
			"--baseline FILE (the audit's baseline file) first raises the ledger's insertion number and draws to the " +
			"file's, so no lost name's number is handed out again (the operator's or the owner's). " +
			"Exit 0 done, 1 done with rejects, conflicts, differences or a truncated file, 2 could not run.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "input-format", Usage: "export format of every FILE, or " + importer.MintMapFormat + " (mint maps: recovery)", DefaultText: "detected per file"},
			&cli.StringFlag{Name: "baseline", Usage: "with --input-format " + importer.MintMapFormat + ": the audit's baseline file; raise the ledger's insertion number and draws to its numbers first"},
			&cli.BoolFlag{Name: "include-reserved", Usage: "import EZID reserved ARKs too (skipped and counted otherwise)"},
			&cli.BoolFlag{Name: "include-test", Usage: "import ARKs of the test NAAN 99999 too (skipped and counted otherwise)"},
			&cli.BoolFlag{Name: "dry-run", Usage: "do everything, report, and roll back: the ledger is not changed"},
			&cli.StringFlag{Name: "rejects", Usage: "reject file path", DefaultText: "./<first file>.rejects.csv"},
			&cli.StringFlag{Name: "client", Usage: "registered client to import as (needs the ark:import scope; recorded with the run)"},
			&cli.StringFlag{Name: "check-zone", Value: "none", Usage: "check zone of the shoulders the import creates: naan_name (the check character covers NAAN and name), name_only or none"},
			&cli.IntFlag{Name: "batch", Value: importer.DefaultBatch, Usage: "records classified and inserted at a time"},
		},
		Action: func(c *cli.Context) error { return importAction(c, e) },
	}
}

// importAction runs the import and prints the summary.
func importAction(c *cli.Context, e *env) error {
	inputs := c.Args().Slice()
	if c.String("input-format") == importer.MintMapFormat {
		return recoverAction(c, e, inputs)
	}
	if c.String("baseline") != "" {
		return fmt.Errorf("import: --baseline goes with --input-format %s (a recovery from mint maps)", importer.MintMapFormat)
	}
	cfg := importer.Config{Inputs: inputs, IncludeReserved: c.Bool("include-reserved"),
		IncludeTest: c.Bool("include-test"), DryRun: c.Bool("dry-run"), ClientID: c.String("client"),
		BatchSize: c.Int("batch")}
	if f := c.String("input-format"); f != "" {
		format, err := legacy.ParseFormat(f)
		if err != nil {
			return fmt.Errorf("import: --input-format: %w", err)
		}
		cfg.Format = format
	}
	zone, err := ark.ParseZone(c.String("check-zone"))
	if err != nil {
		return fmt.Errorf("import: --check-zone: %w", err)
	}
	cfg.CheckZone = zone
	if cfg.BatchSize < 1 {
		return fmt.Errorf("import: --batch must be at least 1")
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	var octets int64 // the inputs' size as stored
	for _, in := range inputs {
		st, err := os.Stat(in)
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		octets += st.Size()
	}
	cfg.RejectsPath = c.String("rejects")
	if cfg.RejectsPath == "" {
		cfg.RejectsPath = exportBase(inputs[0]) + ".rejects.csv"
	}
	// the readers allocate per record; a larger GC target halves the collector's share
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(400))
	}
	defer boundMemory(pipeline.MemoryLimit)() // and a memory limit keeps that target from growing with the input
	l, err := openAsClient(c, e, 4, cfg.ClientID)
	if err != nil {
		return err
	}
	defer l.Close()
	prog := newProgress(e.stderr, e.log, c.Bool("quiet"), "importing", "records")
	prog.SetTotal(octets, true)
	cfg.Progress = importProgress(prog, octets)
	rep, err := importer.Run(c.Context, l, cfg)
	prog.Finish()
	printImportSummary(e.stdout, rep, err)
	if err != nil {
		return interrupted(c.Context, "import", "files finished before stay imported, the interrupted one was rolled back", err)
	}
	if rep.RejectRows > 0 || rep.Total.Findings() || rep.Truncated() {
		return withFindings("") // the reject file lists what did not land
	}
	return nil
}

// importProgress feeds the import's reports to prog: records read, and octets read of the
// inputs against their size as stored (total). A file read a second time (a conflict spanned
// batches) adds its size to the total again.
func importProgress(prog *progress, total int64) func(importer.Progress) {
	var last importer.Progress // the report before, of the pass being read
	var records, octets int64  // of the passes read before it
	return func(p importer.Progress) {
		if last.File != "" && (p.File != last.File || p.Pass != last.Pass || p.Read < last.Read) {
			records += last.Read
			octets += max(last.Size, last.Octets)
			if p.File == last.File && p.Pass > last.Pass {
				total += p.Size
				prog.SetTotal(total, true)
			}
		}
		last = p
		prog.Set(records+p.Read, octets+p.Octets)
	}
}

// exportBase is a file name without directory and the extensions of exports (arklet.json.gz →
// arklet): the default output names.
func exportBase(path string) string {
	name := filepath.Base(path)
	for {
		lower := strings.ToLower(name)
		trimmed := false
		for _, ext := range []string{".gz", ".xz", ".csv", ".tsv", ".jsonl", ".json", ".txt", ".anvl", ".dump", ".parquet"} {
			if strings.HasSuffix(lower, ext) && len(name) > len(ext) {
				name = name[:len(name)-len(ext)]
				trimmed = true
				break
			}
		}
		if !trimmed {
			return name
		}
	}
}

// printImportSummary prints the one-screen summary of an import.
func printImportSummary(w io.Writer, rep importer.Report, runErr error) {
	t := rep.Total
	status := "done"
	switch {
	case runErr != nil:
		status = "stopped: " + runErr.Error()
	case t.Findings() || rep.Truncated():
		status = "done with findings"
	}
	if rep.DryRun {
		status += " (dry run: nothing was written to the ledger)"
	}
	fmt.Fprintf(w, "arkhe import: %s\n", status)
	for _, f := range rep.Files {
		passes := ""
		if f.Passes > 1 {
			passes = ", read twice (a conflict spanned batches)"
		}
		fmt.Fprintf(w, "  file         %s (%s, sha256:%s, %s%s)\n", f.File, f.Format, shortDigest(f.Digest), plural(f.Counts.Read, "record", "records"), passes)
		if f.Truncated != nil {
			fmt.Fprintf(w, "  truncated    %s; %s\n", f.Truncated.Error(), importer.TruncatedNote)
		}
	}
	fmt.Fprintf(w, "  read         %s\n", plural(t.Read, "record", "records"))
	fmt.Fprintf(w, "  imported     %s\n", plural(t.Imported, "ARK", "ARKs"))
	fmt.Fprintf(w, "  unchanged    %s (already in the ledger with the same values)\n", thousands(t.Unchanged))
	fmt.Fprintf(w, "  differences  %s (in the ledger with another value: left alone; arkhe reconcile --apply accepts the export's)\n", thousands(t.Differences))
	fmt.Fprintf(w, "  conflicts    %s for %s (same ARK, different values: neither imported)\n", plural(t.Conflicts, "row", "rows"), plural(t.ConflictARKs, "ARK", "ARKs"))
	fmt.Fprintf(w, "  collapsed    %s identical duplicate rows\n", thousands(t.Collapsed))
	fmt.Fprintf(w, "  skipped      %s non-ARK%s\n", thousands(t.SkippedNonARKTotal()), kindCounts(t.SkippedNonARK))
	hint := func(n int64, flag string) string {
		if n == 0 {
			return "" // nothing left out: no flag to point to
		}
		return " (" + flag + ")"
	}
	fmt.Fprintf(w, "               %s reserved%s, %s test NAAN 99999%s\n", thousands(t.ReservedSkipped), hint(t.ReservedSkipped, "--include-reserved imports them"),
		thousands(t.TestSkipped), hint(t.TestSkipped, "--include-test"))
	fmt.Fprintf(w, "  rejected     %s\n", plural(t.Rejected, "bad record", "bad records"))
	if t.KeptReserved > 0 {
		fmt.Fprintf(w, "  kept reserved %s with a value refused (the reject file says which): imported reserved without it, so the names are never reissued\n",
			plural(t.KeptReserved, "ARK", "ARKs"))
	}
	label := "refused"
	for _, r := range refusedModels(rep) {
		// named by what they are, with the command that imports them when one does
		never := "not imported"
		if r.Secret {
			never = "never imported"
		}
		fmt.Fprintf(w, "  %-12s %s of model %s: %s, %s\n", label, thousands(r.Records), r.Model, r.What, never)
		fmt.Fprintf(w, "               %s\n", r.Reason)
		label = ""
	}
	if t.LinkRecords > 0 {
		printLinkImport(w, rep)
	}
	if t.NAANRecords > 0 || t.ShoulderRecords > 0 {
		fmt.Fprintf(w, "  registry     %s NAAN and %s shoulder records: %s filled, %s unchanged, %s differ\n", thousands(t.NAANRecords),
			thousands(t.ShoulderRecords), thousands(t.RegistryFilled), thousands(t.RegistryUnchanged), thousands(t.RegistryDifferences))
	}
	fmt.Fprintf(w, "  created      %s, %s\n", plural(t.NAANsCreated, "NAAN", "NAANs"), plural(t.ShouldersCreated, "shoulder", "shoulders"))
	fmt.Fprintf(w, "  check chars  %s verified, %s failed, %s none (imported ARKs; a failed check never refuses an ARK)\n",
		thousands(t.CheckVerified), thousands(t.CheckFailed), thousands(t.CheckNone))
	if rep.Rejects != "" {
		fmt.Fprintf(w, "  rejects      %s (%s)\n", rep.Rejects, plural(rep.RejectRows, "row", "rows"))
	}
	rate := 0.0
	if s := rep.Elapsed.Seconds(); s > 0 {
		rate = float64(t.Read) / s
	}
	fmt.Fprintf(w, "  elapsed      %.1f s, %s records/s\n", rep.Elapsed.Seconds(), thousands(int64(rate)))
}

// refusedModels sums the refusals of every file per model, in the order first met.
func refusedModels(rep importer.Report) []importer.Refusal {
	var out []importer.Refusal
	at := map[string]int{}
	for _, f := range rep.Files {
		for _, r := range f.Refusals {
			i, ok := at[r.Model]
			if !ok {
				i = len(out)
				at[r.Model] = i
				out = append(out, importer.Refusal{Refused: r.Refused})
			}
			out[i].Records += r.Records
		}
	}
	return out
}

// kindCounts renders " (doi 31, uuid 2)" or "".
func kindCounts(m map[string]int64) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+" "+thousands(m[k]))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func shortDigest(d string) string {
	if len(d) > 16 {
		return d[:16] + "…"
	}
	return d
}

// thousands renders n with comma thousands separators (69202 → 69,202), as every summary
// and report of the command prints a count.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// printLinkImport prints what an import of a legacy link checker's state did, and the rules it
// applied to what the legacy records leave open.
func printLinkImport(w io.Writer, rep importer.Report) {
	t := rep.Total
	fmt.Fprintf(w, "  link state   %s of a legacy link checker: %s kept as link state (%s broken), %s never checked, "+
		"%s about EZID's default target (the ledger keeps no target), %s whose ARK has a state already (left alone)\n",
		plural(t.LinkRecords, "link-check result", "link-check results"), thousands(t.LinkLoaded), thousands(t.LinkBroken), thousands(t.LinkNeverChecked),
		thousands(t.LinkDefaultTarget), thousands(t.LinkKept))
	if t.LinkNotInLedger > 0 {
		fmt.Fprintf(w, "               %s whose ARK is not in the ledger: not kept, listed in the reject file; import the identifiers "+
			"first (EZID's identifier export, e.g. `arkhe import db.identifier.jsonl`), then this file again\n", thousands(t.LinkNotInLedger))
	}
	fmt.Fprintln(w, "               rules: EZID's MD5 is kept as md5; its error text is classed (timeout, dns, refused, unreachable, reset, tls, other);")
	fmt.Fprintln(w, "               a failed check's first failure is its last check time (the only failure time the record proves);")
	fmt.Fprintln(w, "               an empty failure count of a failed check counts 1; a state is kept only for an ARK in the ledger with the same target")
	for _, f := range rep.Files {
		if f.Format == legacy.EZIDLinkCheckTSV {
			fmt.Fprintf(w, "               %s: times without a zone read in %s (the file writes Unix 0 as 12/31/69 16:00)\n", f.File, legacy.EZIDLinkCheckZone)
		}
	}
}
