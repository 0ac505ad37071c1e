package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// argSpec is what a command takes on its command line beyond its optional flags: the flags it
// requires and its positional arguments, read from its ArgsUsage ("NAAN" one, "[CLIENT_ID]" at
// most one, "MANIFEST..." one or more, "[ARK...]" any number, "ARK URL" two, "" none; text after
// two spaces is a comment).
type argSpec struct {
	path     string   // "mint", "client key create"
	required []string // flag names
	args     []string // positional names, in order, as ArgsUsage spells them
	min, max int      // how many positional arguments; max -1 for no limit
}

// newArgSpec reads cmd's spec. Its required flags become optional to urfave/cli, which would
// name only the flags (capitalised) and print the whole help; the spec's check names them all,
// with the missing arguments, in arkhe's style; their usage text says "(required)".
func newArgSpec(path string, cmd *cli.Command) argSpec {
	s := argSpec{path: path}
	for _, f := range cmd.Flags {
		if sf, ok := f.(*cli.StringFlag); ok && sf.Required {
			sf.Required = false
			sf.Usage += " (required)"
			s.required = append(s.required, sf.Name)
		}
	}
	head, _, _ := strings.Cut(cmd.ArgsUsage, "  ")
	for _, tok := range strings.Fields(head) {
		optional := strings.HasPrefix(tok, "[")
		many := strings.Contains(tok, "...")
		s.args = append(s.args, tok)
		if !optional {
			s.min++
		}
		if s.max >= 0 {
			if many {
				s.max = -1
			} else {
				s.max++
			}
		}
	}
	return s
}

// synopsis is the command line the spec asks for: "arkhe mint --client CLIENT MANIFEST...".
func (s argSpec) synopsis() string {
	parts := []string{"arkhe", s.path}
	for _, f := range s.required {
		parts = append(parts, "--"+f, strings.ToUpper(strings.ReplaceAll(f, "-", "_")))
	}
	parts = append(parts, s.args...)
	return strings.Join(parts, " ")
}

// check returns nil when c has every required flag and an allowed number of positional
// arguments, else a usage error naming every flag and argument missing (or the first one too
// many) and the synopsis: "mint: missing --client and MANIFEST... (arkhe mint --client CLIENT
// MANIFEST...)".
func (s argSpec) check(c *cli.Context) error {
	var missing []string
	for _, f := range s.required {
		if !c.IsSet(f) {
			missing = append(missing, "--"+f)
		}
	}
	n := c.NArg()
	if n < s.min {
		seen := 0
		for _, a := range s.args {
			if strings.HasPrefix(a, "[") {
				continue
			}
			if seen++; seen > n {
				missing = append(missing, strings.TrimSuffix(a, "..."))
			}
		}
	}
	if len(missing) > 0 {
		return usagef("%s: missing %s (%s)", s.path, andJoin(missing), s.synopsis())
	}
	if s.max >= 0 && n > s.max {
		return usagef("%s: unexpected argument %q (%s)", s.path, c.Args().Get(s.max), s.synopsis())
	}
	return nil
}

// andJoin joins words as a sentence does: "a", "a and b", "a, b and c".
func andJoin(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// checkArgs makes cmd (a command without subcommands, called path) check its spec before it
// runs, after any Before of its own.
func checkArgs(path string, cmd *cli.Command) {
	spec := newArgSpec(path, cmd)
	before := cmd.Before
	cmd.Before = func(c *cli.Context) error {
		if err := spec.check(c); err != nil {
			return err
		}
		if before != nil {
			return before(c)
		}
		return nil
	}
}
