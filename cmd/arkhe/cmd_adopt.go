package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/legacy"
)

func shoulderAdoptCommand(e *env) *cli.Command {
	return newCommand(e, ledgerCmd[ledger.AdoptConfig]{
		Name:  "adopt",
		Usage: "give a migrated shoulder (reserved by an import) a manager and let it mint",
		Args:  "/SHOULDER",
		Description: "Makes a shoulder an import created (reserved, without a manager) active under --manager, so that new " +
			"ARKs are minted where the migrated ones live. Only a shoulder of the first-digit convention (consonants, then " +
			"one digit) that is not retired is adopted; any other stays reserved, with the reason. Names are never " +
			"reissued: freeze the old minter first, import its whole export (with --include-reserved), and adopt refuses " +
			"while a name the import left out under the shoulder is not in the ledger. New mints draw at random among the " +
			"names the ledger does not hold, with the check zone every existing ARK verifies under (--check-zone names " +
			"one when they disagree; existing ARKs keep their recorded verdict) and the blade of the old minter's template " +
			"(--minter-state, an N2T/EZID minter's JSON state) or else of the existing blades' length.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "naan", Required: true, Usage: "the NAAN (e.g. 87281)"},
			&cli.StringFlag{Name: "manager", Required: true, Usage: "name of the manager (of the same NAAN) that takes the shoulder"},
			&cli.StringFlag{Name: "check-zone", Usage: "check zone of new mints: naan_name | name_only | none",
				DefaultText: "the zone every existing ARK verifies under"},
			&cli.StringFlag{Name: "minter-state", Usage: "the old minter's state (N2T/EZID minter JSON, e.g. 77913_r7.json): new mints follow its template"},
		},
		Input: func(c *cli.Context) (ledger.AdoptConfig, error) {
			cfg := ledger.AdoptConfig{NAAN: c.String("naan"), Shoulder: c.Args().First(), Manager: c.String("manager")}
			if z := c.String("check-zone"); z != "" {
				zone, err := ark.ParseZone(z)
				if err != nil {
					return cfg, usagef("shoulder adopt: --check-zone: %w", err)
				}
				cfg.CheckZone = zone
			}
			if p := c.String("minter-state"); p != "" {
				st, err := legacy.ReadMinterState(p)
				if err != nil {
					return cfg, err
				}
				cfg.Minter = &ledger.AdoptMinter{Source: p, Label: st.Label(), Mask: st.Mask, Template: st.Template,
					Check: st.Check, Issued: st.Issued}
			}
			return cfg, nil
		},
		Run: func(c *cli.Context, e *env, l *ledger.Ledger, cfg ledger.AdoptConfig) error {
			res, err := l.AdoptShoulder(c.Context, cfg)
			if err != nil {
				return err
			}
			printAdopt(e.stdout, res, cfg.Minter)
			return nil
		},
	})
}

// printAdopt says what the adoption found and did.
func printAdopt(w io.Writer, r ledger.AdoptResult, m *ledger.AdoptMinter) {
	if !r.Changed {
		fmt.Fprintf(w, "shoulder %s of NAAN %s is active under manager %q already (unchanged): check zone %s, blade %s\n",
			r.Shoulder, r.NAAN, r.Manager, r.CheckZone, describeBlade(r.Template))
		return
	}
	fmt.Fprintf(w, "shoulder %s of NAAN %s adopted by manager %q: active, new ARKs ark:%s%s...\n", r.Shoulder, r.NAAN, r.Manager, r.NAAN, r.Shoulder)
	fmt.Fprintf(w, "  ARKs         %s in the shoulder: %s verify under naan_name, %s under name_only, %s under neither\n",
		thousands(r.ARKs), thousands(r.VerifyNAANName), thousands(r.VerifyNameOnly), thousands(r.VerifyNeither))
	fmt.Fprintf(w, "  check zone   %s (%s); existing ARKs keep their recorded verdict\n", r.CheckZone, r.ZoneFrom)
	fmt.Fprintf(w, "  blade        %s, %s names (%s)\n", describeBlade(r.Template), thousands(int64(r.Space)), r.TemplateFrom)
	if len(r.BladeLengths) > 0 {
		var parts []string
		for _, n := range slices.Sorted(maps.Keys(r.BladeLengths)) {
			parts = append(parts, fmt.Sprintf("of %d characters: %s", n, thousands(r.BladeLengths[n])))
		}
		fmt.Fprintf(w, "  existing     betanumeric blades %s\n", strings.Join(parts, ", "))
	}
	if m != nil {
		issued := "an unknown number of names"
		if m.Issued >= 0 {
			issued = thousands(m.Issued) + " names"
		}
		fmt.Fprintf(w, "  old minter   %s, mask %s: issued %s; the ledger holds %s of its form\n", m.Label, m.Mask, issued, thousands(r.FitTemplate))
	}
	fmt.Fprintf(w, "  new mints    drawn at random among the names the ledger does not hold (a drawn name that exists is redrawn)\n")
	fmt.Fprintf(w, "  was          %s, check zone %s, blade %s\n", r.BeforeStatus, r.BeforeZone, describeBlade(r.BeforeBlade))
}

// describeBlade renders a blade template: "5 betanumerics" or "eed (2 betanumerics, 1 digit)".
func describeBlade(t ark.Template) string {
	e := strings.Count(string(t), "e")
	d := t.Len() - e
	if d == 0 {
		return fmt.Sprintf("%d %s", e, pluralWord(e, "betanumeric", "betanumerics"))
	}
	return fmt.Sprintf("%s (%d %s, %d %s)", t, e, pluralWord(e, "betanumeric", "betanumerics"), d, pluralWord(d, "digit", "digits"))
}
