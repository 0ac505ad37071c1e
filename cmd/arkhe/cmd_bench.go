package main

import (
	"github.com/urfave/cli/v2"
)

// benchCommand groups the macro benchmarks; each subcommand lives in its own file.
func benchCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "repeatable benchmarks against the plain COPY floor, on a throw-away cluster",
		Subcommands: []*cli.Command{
			benchMintCommand(e),
			benchImportCommand(e),
			benchVerifyCommand(e),
			benchSizingCommand(e),
			benchLinkcheckCommand(e),
			benchUpdateCommand(e),
			benchResolveCommand(e),
			benchAPICommand(e),
		},
	}
}
