package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/arkhe-ledger/arkhe/importer"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/verify"
)

// recoverAction runs `arkhe import --input-format mint-map`: the recovery of the ARKs mint maps
// name that a restored ledger forgot, and prints its summary.
func recoverAction(c *cli.Context, e *env, inputs []string) error {
	for _, name := range []string{"include-reserved", "include-test", "check-zone"} {
		if c.IsSet(name) {
			return fmt.Errorf("import: --%s does not apply to --input-format %s", name, importer.MintMapFormat)
		}
	}
	if len(inputs) == 0 {
		return fmt.Errorf("import: give at least one mint map")
	}
	cfg := importer.RecoverConfig{Inputs: inputs, ClientID: c.String("client"), DryRun: c.Bool("dry-run"), BatchSize: c.Int("batch")}
	if cfg.ClientID == "" {
		return fmt.Errorf("import: --input-format %s needs --client: the client whose request IDs the mint maps hold", importer.MintMapFormat)
	}
	if cfg.BatchSize < 1 {
		return fmt.Errorf("import: --batch must be at least 1")
	}
	if path := c.String("baseline"); path != "" {
		b, err := verify.ReadBaseline(path)
		if err != nil {
			return fmt.Errorf("import: --baseline: %w", err)
		}
		f := ledger.Floor{HighWater: b.HighWater, Draws: map[string]int64{}}
		for label, s := range b.Shoulders {
			f.Draws[label] = s.Draws
		}
		cfg.Floor = &f
	}
	cfg.RejectsPath = c.String("rejects")
	if cfg.RejectsPath == "" {
		cfg.RejectsPath = exportBase(inputs[0]) + ".rejects.csv"
	}
	l, err := openAsClient(c, e, 4, cfg.ClientID)
	if err != nil {
		return err
	}
	defer l.Close()
	rep, err := importer.Recover(c.Context, l, cfg)
	printRecoverSummary(e.stdout, rep, err)
	if err != nil {
		return interrupted(c.Context, "import", "mint maps finished before stay recovered, the interrupted one was rolled back", err)
	}
	if rep.Total.Findings() {
		return withFindings("") // the reject file lists them
	}
	return nil
}

// printRecoverSummary prints the one-screen summary of a recovery from mint maps.
func printRecoverSummary(w io.Writer, rep importer.RecoverReport, runErr error) {
	t := rep.Total
	status := "done"
	switch {
	case runErr != nil:
		status = "stopped: " + runErr.Error()
	case t.Findings():
		status = "done with findings"
	}
	if rep.DryRun {
		status += " (dry run: nothing was written to the ledger, no counter raised)"
	}
	fmt.Fprintf(w, "arkhe import: %s\n", status)
	if len(rep.Raised) > 0 {
		var parts []string
		for _, r := range rep.Raised {
			if r.NoShoulder {
				parts = append(parts, r.What+" not registered (left alone)")
			} else {
				parts = append(parts, fmt.Sprintf("%s %s → %s", r.What, thousands(r.Was), thousands(r.To)))
			}
		}
		fmt.Fprintf(w, "  raised       %s (to the baseline file's)\n", strings.Join(parts, "; "))
	}
	for _, f := range rep.Files {
		fmt.Fprintf(w, "  mint map     %s (sha256:%s, %s)\n", f.File, shortDigest(f.Digest), plural(f.Counts.Read, "row", "rows"))
	}
	fmt.Fprintf(w, "  read         %s\n", plural(t.Read, "row", "rows"))
	fmt.Fprintf(w, "  recovered    %s (put back with their receipts: a re-run of their manifests replays them)\n", plural(t.Recovered, "ARK", "ARKs"))
	if t.PayloadUnknown > 0 {
		fmt.Fprintf(w, "               %s of them from mint maps without the payload: no target or ERC (the reject file says which)\n", thousands(t.PayloadUnknown))
	}
	fmt.Fprintf(w, "  present      %s (in the ledger under the same request ID with the same values)\n", thousands(t.Present))
	fmt.Fprintf(w, "  changed      %s after the mint (left alone; the reject file lists each field)\n", plural(t.ChangedAfterMint, "ARK", "ARKs"))
	fmt.Fprintf(w, "  rejected     %s\n", plural(t.Rejected, "row", "rows"))
	if rep.Rejects != "" {
		fmt.Fprintf(w, "  rejects      %s (%s)\n", rep.Rejects, plural(rep.RejectRows, "row", "rows"))
	}
	fmt.Fprintf(w, "  elapsed      %.1f s\n", rep.Elapsed.Seconds())
}
