package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/arkhe-ledger/arkhe/ledger"
)

// ledgerCmd describes a registry subcommand (naan, manager, shoulder, client and client key add,
// set, list, ...), which newCommand builds: the command line is checked (checkArgs), Input reads
// it into what Run needs before the ledger is reached (so a bad value is a usage error that
// contacts nothing), then the ledger is opened (openChecked: the schema, and the role the
// command declares in neededRoles), Run does the work and prints, and the ledger is closed.
type ledgerCmd[T any] struct {
	Name, Usage, Description string
	Args                     string // ArgsUsage: "NAAN", "[CLIENT_ID]", "" for none
	Flags                    []cli.Flag
	// Input reads the command line; nil leaves T's zero value.
	Input func(c *cli.Context) (T, error)
	// Run does the command's work with the ledger open, printing to e.stdout.
	Run func(c *cli.Context, e *env, l *ledger.Ledger, in T) error
}

// newCommand builds the command d describes.
func newCommand[T any](e *env, d ledgerCmd[T]) *cli.Command {
	return &cli.Command{Name: d.Name, Usage: d.Usage, Description: d.Description, ArgsUsage: d.Args, Flags: d.Flags,
		Action: func(c *cli.Context) error {
			var in T
			if d.Input != nil {
				var err error
				if in, err = d.Input(c); err != nil {
					return err
				}
			}
			return withLedger(c, e, func(l *ledger.Ledger) error { return d.Run(c, e, l, in) })
		}}
}

// listCmd is a registry's list subcommand taking args (ArgsUsage) and flags: list reads the
// rows, header names the columns (TAB-separated) and row prints one row's cells
// (TAB-separated), aligned in columns.
func listCmd[T any](e *env, name, usage, args string, flags []cli.Flag, header string,
	list func(c *cli.Context, l *ledger.Ledger) ([]T, error), row func(T) string) *cli.Command {
	return newCommand(e, ledgerCmd[struct{}]{Name: name, Usage: usage, Args: args, Flags: flags,
		Run: func(c *cli.Context, e *env, l *ledger.Ledger, _ struct{}) error {
			rows, err := list(c, l)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, header)
			for _, r := range rows {
				fmt.Fprintln(tw, row(r))
			}
			return tw.Flush()
		}})
}

// naanFilter is the --naan flag of the list subcommands.
func naanFilter() []cli.Flag {
	return []cli.Flag{&cli.StringFlag{Name: "naan", Usage: "the NAAN (e.g. 12345); all NAANs when omitted"}}
}

// none is the Input of a command that reads nothing beyond its flags and arguments.
type none = struct{}
