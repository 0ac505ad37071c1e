package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

func reconcileCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "reconcile",
		Usage: "(not built yet)",
		Action: func(c *cli.Context) error {
			return &exitError{code: exitCannot, err: errors.New("reconcile: not built yet")}
		},
	}
}
