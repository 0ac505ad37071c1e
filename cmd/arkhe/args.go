package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// completionFlag is the last argument with which a shell's completion script asks for
// candidates instead of running the command (urfave/cli's bash completion protocol).
const completionFlag = "--generate-bash-completion"

// hoistArgs is hoistFlags, except that a trailing completionFlag stays last: urfave/cli
// recognizes a completion request only there, and a request must never run the command.
func hoistArgs(app *cli.App, args []string) []string {
	if n := len(args); n > 1 && args[n-1] == completionFlag {
		return append(hoistFlags(app, args[:n-1]), completionFlag)
	}
	return hoistFlags(app, args)
}

// hoistFlags rewrites args so that the flags of the command being run stand before its
// positional arguments. urfave/cli v2 stops reading flags at the first positional argument, but
// `arkhe mint --client c MANIFEST... --out map.csv` (the documented usage) puts them
// after. A
// token "--" ends flag hoisting; everything after it stays positional.
func hoistFlags(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	out := []string{args[0]}
	cmds := app.Commands
	flags := app.Flags
	var global []string
	i := 1
	// walk down the command path: each level's flags, then a command name
	for i < len(args) {
		a := args[i]
		if strings.HasPrefix(a, "-") && a != "-" && a != "--" {
			from := &out
			if len(out) > 1 && !definesFlag(flags, a) && definesFlag(app.Flags, a) {
				// a global flag after a command that has subcommands of its own
				// (`arkhe linkcheck --quiet`): it belongs before the command
				from, flags = &global, app.Flags
			}
			*from = append(*from, a)
			if takesValue(flags, a) && i+1 < len(args) {
				*from = append(*from, args[i+1])
				i++
			}
			if from == &global {
				flags = levelFlags(app, out[1:])
			}
			i++
			continue
		}
		cmd := findCommand(cmds, a)
		if cmd == nil {
			break
		}
		out = append(out, a)
		i++
		if len(cmd.Subcommands) == 0 {
			flags = cmd.Flags
			cmds = nil
			break
		}
		cmds, flags = cmd.Subcommands, cmd.Flags
	}
	if cmds != nil { // not at a leaf command: leave the rest alone
		return append(append(append([]string{out[0]}, global...), out[1:]...), args[i:]...)
	}
	var pos []string
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i:]...)
			break
		}
		if strings.HasPrefix(a, "-") && a != "-" && !definesFlag(flags, a) && definesFlag(app.Flags, a) {
			// a global flag given after the command: it belongs before the command
			global = append(global, a)
			if takesValue(app.Flags, a) && i+1 < len(args) {
				global = append(global, args[i+1])
				i++
			}
			continue
		}
		if strings.HasPrefix(a, "-") && a != "-" {
			out = append(out, a)
			if takesValue(flags, a) && i+1 < len(args) {
				out = append(out, args[i+1])
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	if len(global) > 0 {
		out = append(append([]string{out[0]}, global...), out[1:]...)
	}
	return append(out, pos...)
}

// levelFlags returns the flags of the command at path (command names after global flags, as
// hoistFlags has written them so far; app.Flags for none).
func levelFlags(app *cli.App, path []string) []cli.Flag {
	cmds, flags := app.Commands, app.Flags
	for _, a := range path {
		if c := findCommand(cmds, a); c != nil {
			cmds, flags = c.Subcommands, c.Flags
		}
	}
	return flags
}

// definesFlag reports whether token names one of flags.
func definesFlag(flags []cli.Flag, token string) bool {
	name, _, _ := strings.Cut(strings.TrimLeft(token, "-"), "=")
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return true
			}
		}
	}
	return false
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.Name == name {
			return c
		}
		for _, a := range c.Aliases {
			if a == name {
				return c
			}
		}
	}
	return nil
}

// takesValue reports whether token (e.g. "--out", "-o", "--out=x") names a flag that reads the
// next argument as its value.
func takesValue(flags []cli.Flag, token string) bool {
	name := strings.TrimLeft(token, "-")
	if strings.Contains(name, "=") {
		return false
	}
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				_, isBool := f.(*cli.BoolFlag)
				return !isBool
			}
		}
	}
	return false
}
