package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

func importCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "import",
		Usage: "(not built yet)",
		Action: func(c *cli.Context) error {
			return &exitError{code: exitCannot, err: errors.New("import: not built yet")}
		},
	}
}
