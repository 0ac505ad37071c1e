package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/urfave/cli/v2"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// arkSingleCommands are the single-ARK subcommands of `arkhe ark`: show, repoint, tombstone.
// Exit 0 done, 1 no change (already there, already tombstoned), 2 could not run (an unknown
// ARK, a refused client, a bad target).
func arkSingleCommands(e *env) []*cli.Command {
	return []*cli.Command{
		{
			Name:      "show",
			Usage:     "print one ARK: target, ERC, status, tombstone, who created it, its metadata, the latest change and its reason, and its change history (times to the microsecond)",
			ArgsUsage: "ARK  (any spelling: ark:/12345/x9..., https://n2t.net/ark:12345/..., hyphens)",
			Action: func(c *cli.Context) error {
				a, err := oneARK(c, "ark show")
				if err != nil {
					return err
				}
				return withLedger(c, e, func(l *ledger.Ledger) error {
					r, err := l.ShowARK(c.Context, a.Key())
					if err != nil {
						return err
					}
					return printARK(e.stdout, r)
				})
			},
		},
		{
			Name:      "repoint",
			Usage:     "point one ARK at a new target URL (one ARK_CHANGE row); exit 1 if it points there already",
			ArgsUsage: "ARK URL",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "client", Required: true, Usage: "registered client the change acts as; needs scope ark:update and reach over the ARK's shoulder"},
				&cli.StringFlag{Name: "reason", Usage: "why, recorded with the change"},
			},
			Action: func(c *cli.Context) error {
				a, err := ark.Parse(c.Args().Get(0))
				if err != nil {
					return usagef("ark repoint: %w", err)
				}
				target := c.Args().Get(1)
				if err := ledger.ValidateTarget(target); err != nil {
					return usagef("ark repoint %s: %w", a, err)
				}
				return withClient(c, e, c.String("client"), func(l *ledger.Ledger) error {
					changed, err := l.RepointARK(c.Context, a.Key(), target, c.String("client"), c.String("reason"))
					if err != nil {
						return err
					}
					if !changed {
						fmt.Fprintf(e.stdout, "%s points to %s already; nothing changed\n", a, target)
						return withFindings("")
					}
					fmt.Fprintf(e.stdout, "%s now points to %s\n", a, target)
					return nil
				})
			},
		},
		{
			Name:      "tombstone",
			Usage:     "withdraw one ARK: status unavailable with a reason (it still resolves to its tombstone); exit 1 if tombstoned already",
			ArgsUsage: "ARK",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "reason", Required: true, Usage: "why it is withdrawn (shown on the tombstone)"},
				&cli.StringFlag{Name: "client", Required: true, Usage: "registered client the change acts as; needs scope ark:tombstone and reach over the ARK's shoulder"},
			},
			Action: func(c *cli.Context) error {
				a, err := oneARK(c, "ark tombstone")
				if err != nil {
					return err
				}
				if strings.TrimSpace(c.String("reason")) == "" {
					return usagef("ark tombstone %s: a tombstone needs a reason (--reason)", a)
				}
				return withClient(c, e, c.String("client"), func(l *ledger.Ledger) error {
					changed, err := l.TombstoneARK(c.Context, a.Key(), c.String("reason"), c.String("client"))
					if err != nil {
						return err
					}
					if !changed {
						fmt.Fprintf(e.stdout, "%s is tombstoned already; nothing changed\n", a)
						return withFindings("")
					}
					fmt.Fprintf(e.stdout, "%s tombstoned: %s\n", a, strings.TrimSpace(c.String("reason")))
					return nil
				})
			},
		},
	}
}

// oneARK parses the command's single ARK argument in any spelling.
func oneARK(c *cli.Context, cmd string) (ark.ARK, error) {
	if c.NArg() != 1 {
		return ark.ARK{}, usagef("%s: give exactly one ARK", cmd)
	}
	a, err := ark.Parse(c.Args().First())
	if err != nil {
		return ark.ARK{}, usagef("%s: %w", cmd, err)
	}
	return a, nil
}

// showTime is how `ark show` prints a time: RFC 3339 in UTC to the microsecond the ledger
// keeps, e.g. 2026-12-01T10:00:00.123456Z ("-" for none).
func showTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05.000000Z07:00")
}

// metadataLines renders an ARK's metadata (a JSON object) as one "key<TAB>value" line per
// field, keys in byte order: a string value as it is (quoted when it holds a control
// character, so one field stays one line), any other value as JSON. Text that is not a JSON
// object comes back as one line.
func metadataLines(doc string) []string {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		return []string{doc}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	lines := make([]string, 0, len(keys))
	for _, k := range keys {
		v := string(m[k])
		var s string
		if json.Unmarshal(m[k], &s) == nil {
			v = s
			if strings.ContainsFunc(s, unicode.IsControl) {
				v = strconv.Quote(s)
			}
		}
		if strings.ContainsFunc(k, unicode.IsControl) {
			k = strconv.Quote(k)
		}
		lines = append(lines, k+"\t"+v)
	}
	return lines
}

// printARK prints an ARK record as "field<TAB>value" lines (its metadata one field a line, the
// latest change with its reason), then its history oldest first.
func printARK(w io.Writer, r ledger.ARKRecord) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	ts := showTime
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	fmt.Fprintf(tw, "ark\t%s\n", r.ARK)
	fmt.Fprintf(tw, "naan\t%s\n", r.NAAN)
	fmt.Fprintf(tw, "shoulder\t%s\n", dash(r.Shoulder))
	fmt.Fprintf(tw, "target\t%s\n", dash(r.Target))
	fmt.Fprintf(tw, "who\t%s\n", dash(r.Who))
	fmt.Fprintf(tw, "what\t%s\n", dash(r.What))
	fmt.Fprintf(tw, "when\t%s\n", dash(r.When))
	fmt.Fprintf(tw, "commitment\t%s\n", dash(r.Commitment))
	fmt.Fprintf(tw, "status\t%s\n", r.Status)
	if r.Status == "unavailable" || r.TombstoneReason != "" {
		fmt.Fprintf(tw, "tombstone reason\t%s\n", dash(r.TombstoneReason))
		fmt.Fprintf(tw, "tombstoned at\t%s\n", ts(r.TombstonedAt))
	}
	fmt.Fprintf(tw, "created at\t%s\n", ts(r.CreatedAt))
	fmt.Fprintf(tw, "updated at\t%s\n", ts(r.UpdatedAt))
	fmt.Fprintf(tw, "created by\t%s\n", dash(r.CreatedBy))
	fmt.Fprintf(tw, "original spelling\t%s\n", dash(r.Original))
	fmt.Fprintf(tw, "receipt request ID\t%s\n", dash(r.RequestID))
	if r.Metadata == "" {
		fmt.Fprintf(tw, "metadata\t-\n")
	}
	for i, line := range metadataLines(r.Metadata) {
		if r.Metadata == "" {
			break
		}
		label := ""
		if i == 0 {
			label = "metadata"
		}
		fmt.Fprintf(tw, "%s\t%s\n", label, line)
	}
	if n := len(r.History); n > 0 {
		h := r.History[n-1]
		by := ""
		if h.By != "" {
			by = " by " + h.By
		}
		fmt.Fprintf(tw, "last change\t%s %s%s, reason: %s\n", ts(h.At), h.Action, by, dash(h.Reason))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.History) == 0 {
		_, err := fmt.Fprintln(w, "history: no changes")
		return err
	}
	fmt.Fprintf(w, "history (%s, oldest first):\n", plural(int64(len(r.History)), "change", "changes"))
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  AT\tACTION\tTARGET\tSTATUS\tREASON\tBY\tNOTE")
	for _, h := range r.History {
		target := dash(h.AfterURL)
		if h.BeforeURL != h.AfterURL {
			target = dash(h.BeforeURL) + " -> " + dash(h.AfterURL)
		}
		status := dash(h.AfterStatus)
		if h.BeforeStatus != h.AfterStatus {
			status = dash(h.BeforeStatus) + " -> " + dash(h.AfterStatus)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", ts(h.At), h.Action, target, status, dash(h.Reason), dash(h.By), dash(h.Note))
	}
	return tw.Flush()
}
