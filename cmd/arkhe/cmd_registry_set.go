package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/arkhe-ledger/arkhe/ledger"
)

// activeFlag reads --active / --inactive: nil when neither is given; both is a usage error.
func activeFlag(c *cli.Context, cmd string) (*bool, error) {
	switch {
	case c.Bool("active") && c.Bool("inactive"):
		return nil, usagef("%s: give --active or --inactive, not both", cmd)
	case c.Bool("active"):
		v := true
		return &v, nil
	case c.Bool("inactive"):
		v := false
		return &v, nil
	}
	return nil, nil
}

// printChanges prints "<what> changed:" and one indented "field: before -> after" line per
// change, or "<what>: nothing changed (...)" when there is none.
func printChanges(w io.Writer, what string, changes []ledger.Change) {
	if len(changes) == 0 {
		fmt.Fprintf(w, "%s holds these values already; nothing changed\n", what)
		return
	}
	fmt.Fprintf(w, "%s changed:\n", what)
	for _, ch := range changes {
		fmt.Fprintf(w, "  %s\n", ch)
	}
}

// successionText is a manager's SUCCESSION cell in `manager list`: the chain from it to the
// last successor ("A -> B -> C"), "departed" for a departure without one, "-" for neither.
func successionText(m ledger.Manager) string {
	switch {
	case len(m.Successors) > 0:
		return strings.Join(append([]string{m.Name}, m.Successors...), " -> ")
	case m.DepartedAt != nil:
		return "departed"
	}
	return "-"
}

func managerSetCommand(e *env) *cli.Command {
	return newCommand(e, ledgerCmd[ledger.ManagerUpdate]{
		Name: "set", Usage: "change a manager's quota, commitment, default shoulder or state, printing what changed from what to what", Args: "NAME",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "naan", Required: true, Usage: "the NAAN (e.g. 12345)"},
			&cli.IntFlag{Name: "quota", Usage: "new mints per UTC day (0: no limit)"},
			&cli.StringFlag{Name: "commitment", Usage: "NLM permanence rating: " + strings.Join(ledger.CommitmentLevels[:], " | ")},
			&cli.StringFlag{Name: "default-shoulder", Usage: "a shoulder this manager holds, used when a mint names none (\"\" for none)"},
			&cli.BoolFlag{Name: "active", Usage: "let the manager's clients and shoulders act again"},
			&cli.BoolFlag{Name: "inactive", Usage: "stop the manager's clients (mint, import, repoint, tombstone) and shoulders (mint) at once"},
		},
		Input: func(c *cli.Context) (ledger.ManagerUpdate, error) {
			var u ledger.ManagerUpdate
			active, err := activeFlag(c, "manager set")
			if err != nil {
				return u, err
			}
			if c.IsSet("quota") {
				q := c.Int("quota")
				u.QuotaPerDay = &q
			}
			if c.IsSet("commitment") {
				v := c.String("commitment")
				u.CommitmentLevel = &v
			}
			if c.IsSet("default-shoulder") {
				v := c.String("default-shoulder")
				u.DefaultShoulder = &v
			}
			u.Active = active
			if u == (ledger.ManagerUpdate{}) {
				return u, usagef("manager set: give what to change: --quota, --commitment, --default-shoulder, --active or --inactive")
			}
			return u, nil
		},
		Run: func(c *cli.Context, e *env, l *ledger.Ledger, u ledger.ManagerUpdate) error {
			name, naan := c.Args().First(), c.String("naan")
			changes, err := l.SetManager(c.Context, naan, name, u)
			if err != nil {
				return err
			}
			printChanges(e.stdout, fmt.Sprintf("manager %q of NAAN %s", name, naan), changes)
			return nil
		},
	})
}

func managerSucceedCommand(e *env) *cli.Command {
	return newCommand(e, ledgerCmd[none]{
		Name: "succeed", Args: "OLD",
		Usage: "record that manager NEW (--by, same NAAN) succeeds OLD, one-way: OLD departs, its clients act for nobody, " +
			"its shoulders keep their ARKs and mint nothing until an active manager holds them, and NEW's clients with " +
			"ark:update or ark:tombstone may repoint and tombstone its ARKs (along the chain of successions)",
		Description: "A successor is a manager of the same NAAN: the NAAN answers for every ARK under it, and an ARK keeps " +
			"its NAAN for ever. For a collection moving to another institution, register a manager for that institution " +
			"under this NAAN and name it here (a manager's name is internal); the NAAN holder keeps the last word.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "naan", Required: true, Usage: "the NAAN (e.g. 12345) of both managers"},
			&cli.StringFlag{Name: "by", Required: true, Usage: "the successor: an active manager of the same NAAN"},
		},
		Run: func(c *cli.Context, e *env, l *ledger.Ledger, _ none) error {
			d, err := l.SucceedManager(c.Context, c.String("naan"), c.Args().First(), c.String("by"))
			if err != nil {
				return err
			}
			printDeparture(e.stdout, d)
			return nil
		},
	})
}

func managerDepartCommand(e *env) *cli.Command {
	return newCommand(e, ledgerCmd[none]{
		Name: "depart", Args: "NAME",
		Usage: "record that a manager departed without a successor, one-way: its clients act for nobody, its shoulders keep " +
			"their ARKs and mint nothing until an active manager holds them, and its ARKs are left to the NAAN's authority " +
			"(clients of authority naan or system); manager succeed may still name a successor later",
		Flags: []cli.Flag{&cli.StringFlag{Name: "naan", Required: true, Usage: "the NAAN (e.g. 12345)"}},
		Run: func(c *cli.Context, e *env, l *ledger.Ledger, _ none) error {
			d, err := l.DepartManager(c.Context, c.String("naan"), c.Args().First())
			if err != nil {
				return err
			}
			printDeparture(e.stdout, d)
			return nil
		},
	})
}

// printDeparture says what a succession or departure changed and what follows from it.
func printDeparture(w io.Writer, d ledger.Departure) {
	what := fmt.Sprintf("manager %q of NAAN %s", d.Manager, d.NAAN)
	if len(d.Changes) == 0 {
		if d.Successor != "" {
			fmt.Fprintf(w, "%s was succeeded by %q already (departed %s); nothing changed\n", what, d.Successor, d.DepartedAt.UTC().Format("2006-01-02T15:04:05Z"))
		} else {
			fmt.Fprintf(w, "%s departed already (%s); nothing changed\n", what, d.DepartedAt.UTC().Format("2006-01-02T15:04:05Z"))
		}
		return
	}
	if d.Successor != "" {
		fmt.Fprintf(w, "%s succeeded by %q:\n", what, d.Successor)
	} else {
		fmt.Fprintf(w, "%s departed:\n", what)
	}
	for _, ch := range d.Changes {
		fmt.Fprintf(w, "  %s\n", ch)
	}
	if len(d.Shoulders) > 0 {
		fmt.Fprintf(w, "its %s %s %s %s ARKs and %s nothing until an active manager holds %s\n",
			pluralWord(len(d.Shoulders), "shoulder", "shoulders"), strings.Join(d.Shoulders, ", "),
			pluralWord(len(d.Shoulders), "keeps", "keep"), pluralWord(len(d.Shoulders), "its", "their"),
			pluralWord(len(d.Shoulders), "mints", "mint"),
			pluralWord(len(d.Shoulders), "it", "them"))
	}
	if len(d.Clients) > 0 {
		fmt.Fprintf(w, "its %s %s %s for nobody now: the ledger refuses %s mints, imports, repoints and tombstones\n",
			pluralWord(len(d.Clients), "client", "clients"), strings.Join(d.Clients, ", "),
			pluralWord(len(d.Clients), "acts", "act"), pluralWord(len(d.Clients), "its", "their"))
	}
	if d.Successor != "" {
		fmt.Fprintf(w, "clients of %q with ark:update or ark:tombstone may repoint and tombstone its ARKs (and those of the managers it succeeded)\n", d.Successor)
	} else {
		fmt.Fprintf(w, "its ARKs are left to the NAAN's authority: clients of authority naan or system of NAAN %s repoint and tombstone them\n", d.NAAN)
	}
}

func clientSetCommand(e *env) *cli.Command {
	return newCommand(e, ledgerCmd[ledger.ClientUpdate]{
		Name: "set", Args: "CLIENT_ID",
		Usage: "change a client's scopes, expiry, pinned shoulder or state, printing what changed from what to what; " +
			"narrowing its reach is always possible, widening it (a scope added, a pin removed or moved, a later expiry or none) is the operator role's",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "scopes", Usage: "the client's scopes from now on, comma-separated: ark:mint ark:update ark:tombstone ark:import ark:read"},
			&cli.StringFlag{Name: "expires", Usage: "a new expiry (RFC 3339 or date), or never"},
			&cli.StringFlag{Name: "shoulder", Usage: "pin the client to this shoulder"},
			&cli.BoolFlag{Name: "no-shoulder", Usage: "remove the client's pin (widens its reach)"},
			&cli.BoolFlag{Name: "active", Usage: "let a disabled client act again (client enable)"},
			&cli.BoolFlag{Name: "inactive", Usage: "stop the client at once (client disable)"},
		},
		Input: func(c *cli.Context) (ledger.ClientUpdate, error) {
			active, err := activeFlag(c, "client set")
			if err != nil {
				return ledger.ClientUpdate{}, err
			}
			u := ledger.ClientUpdate{Active: active}
			if c.IsSet("scopes") {
				u.Scopes = []string{}
				for _, s := range c.StringSlice("scopes") {
					u.Scopes = append(u.Scopes, strings.Fields(s)...)
				}
			}
			if c.IsSet("expires") {
				if exp := c.String("expires"); exp == "never" {
					u.NoExpiry = true
				} else if u.ExpiresAt, err = parseTime(exp); err != nil || u.ExpiresAt == nil {
					return u, usagef("client set: --expires: want RFC 3339 (2026-11-29T20:00:00Z), a date (2026-11-29) or never")
				}
			}
			switch {
			case c.IsSet("shoulder") && c.Bool("no-shoulder"):
				return u, usagef("client set: give --shoulder or --no-shoulder, not both")
			case c.IsSet("shoulder"):
				v := c.String("shoulder")
				if v == "" {
					return u, usagef("client set: --shoulder names a shoulder; --no-shoulder removes the pin")
				}
				u.Shoulder = &v
			case c.Bool("no-shoulder"):
				v := ""
				u.Shoulder = &v
			}
			if u.Scopes == nil && u.ExpiresAt == nil && !u.NoExpiry && u.Shoulder == nil && u.Active == nil {
				return u, usagef("client set: give what to change: --scopes, --expires, --shoulder, --no-shoulder, --active or --inactive")
			}
			return u, nil
		},
		Run: func(c *cli.Context, e *env, l *ledger.Ledger, u ledger.ClientUpdate) error {
			id := c.Args().First()
			changes, err := l.SetClient(c.Context, id, u)
			if err != nil {
				return err
			}
			printChanges(e.stdout, "client "+id, changes)
			return nil
		},
	})
}
