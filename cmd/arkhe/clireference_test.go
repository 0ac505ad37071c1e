package main

import (
	"bytes"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/arkhe-ledger/arkhe/fixtures"
)

// updateCLIReference rewrites docs/cli.md from the CLI instead of comparing it:
// go test ./cmd/arkhe -run TestCLIReference -update
var updateCLIReference = flag.Bool("update", false, "rewrite docs/cli.md from the CLI (TestCLIReference)")

// cliReferencePath is docs/cli.md, relative to this package's directory (go test runs in it).
const cliReferencePath = "../../docs/cli.md"

// TestCLIReference fails when docs/cli.md is not what the CLI's own commands and flags
// generate, so that the reference cannot drift from the program; -update rewrites it.
func TestCLIReference(t *testing.T) {
	want, err := cliReference(newApp(&env{}))
	if err != nil {
		t.Fatal(err)
	}
	fixtures.Golden(t, cliReferencePath, want, *updateCLIReference, "go test ./cmd/arkhe -run TestCLIReference -update")
}

// TestCLIReferenceNamesEveryCommand checks the generator itself: every visible command and
// flag of the app has its heading and its row, and a hidden one has neither.
func TestCLIReferenceNamesEveryCommand(t *testing.T) {
	app := newApp(&env{})
	app.Commands = append(app.Commands, &cli.Command{Name: "secret-cmd", Hidden: true})
	app.Flags = append(app.Flags, &cli.StringFlag{Name: "secret-flag", Hidden: true})
	doc, err := cliReference(app)
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	var walk func(path string, cmds []*cli.Command)
	n := 0
	walk = func(path string, cmds []*cli.Command) {
		for _, c := range cmds {
			if c.Hidden {
				continue
			}
			name := path + " " + c.Name
			n++
			if !strings.Contains(text, "\n## "+name+"\n") {
				t.Errorf("no heading for %q", name)
			}
			for _, f := range c.Flags {
				if v, ok := f.(cli.VisibleFlag); ok && !v.IsVisible() {
					continue
				}
				if !strings.Contains(text, "`--"+f.Names()[0]+"`") {
					t.Errorf("%s: no row for --%s", name, f.Names()[0])
				}
			}
			walk(name, c.Subcommands)
		}
	}
	walk("arkhe", app.Commands)
	if n < 20 {
		t.Errorf("walked %d commands; the app has more", n)
	}
	for _, s := range []string{"`--database-url`", "`--quiet`, `-q`", "## arkhe mint\n"} {
		if !strings.Contains(text, s) {
			t.Errorf("reference lacks %q", s)
		}
	}
	for _, s := range []string{"secret-cmd", "secret-flag"} {
		if strings.Contains(text, s) {
			t.Errorf("reference names hidden %q", s)
		}
	}
}

// cliReference renders every visible command and flag of app as Markdown: the global flags,
// then each command depth first in the app's order, with its usage, description and a table of
// its flags (names, value, default, environment variables, meaning).
func cliReference(app *cli.App) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("# arkhe command reference\n\n")
	b.WriteString("Every command and flag of `arkhe`, generated from the program itself: do not edit this\n")
	b.WriteString("file by hand. `go test ./cmd/arkhe` fails when it is stale; regenerate it with\n")
	b.WriteString("`go test ./cmd/arkhe -run TestCLIReference -update` (see [development.md](development.md)).\n")
	b.WriteString("Exit codes are in [exit-codes.md](exit-codes.md). A flag may follow the positional\n")
	b.WriteString("arguments; `--` ends the flags.\n\n")

	type entry struct {
		path string
		cmd  *cli.Command
	}
	var cmds []entry
	var walk func(path string, list []*cli.Command)
	walk = func(path string, list []*cli.Command) {
		for _, c := range list {
			if c.Hidden {
				continue
			}
			p := path + " " + c.Name
			cmds = append(cmds, entry{p, c})
			walk(p, c.Subcommands)
		}
	}
	walk(app.Name, app.Commands)

	b.WriteString("## Contents\n\n")
	b.WriteString("- [" + app.Name + "](#" + anchor(app.Name) + "): the global flags\n")
	for _, e := range cmds {
		indent := strings.Repeat("  ", strings.Count(e.path, " ")-1)
		fmt.Fprintf(&b, "%s- [%s](#%s): %s\n", indent, e.path, anchor(e.path), oneLine(e.cmd.Usage))
	}

	fmt.Fprintf(&b, "\n## %s\n\n", app.Name)
	fmt.Fprintf(&b, "%s.\n\n", sentence(app.Usage))
	b.WriteString("```text\n" + app.Name + " [global flags] command [command flags] [arguments...]\n```\n\n")
	if err := flagTable(&b, "Global flags", app.Flags); err != nil {
		return nil, fmt.Errorf("%s: %w", app.Name, err)
	}

	for _, e := range cmds {
		c := e.cmd
		fmt.Fprintf(&b, "\n## %s\n\n", e.path)
		if c.Usage != "" {
			fmt.Fprintf(&b, "%s.\n\n", sentence(c.Usage))
		}
		usage := e.path
		if len(c.Subcommands) > 0 {
			usage += " command"
		}
		if c.UsageText != "" {
			usage = strings.TrimRight(c.UsageText, "\n")
		} else {
			if len(c.Flags) > 0 {
				usage += " [flags]"
			}
			if c.ArgsUsage != "" {
				usage += " " + c.ArgsUsage
			}
		}
		b.WriteString("```text\n" + usage + "\n```\n\n")
		if len(c.Aliases) > 0 {
			fmt.Fprintf(&b, "Also spelled %s.\n\n", codeList(c.Aliases))
		}
		if d := strings.TrimSpace(c.Description); d != "" {
			b.WriteString(d + "\n\n")
		}
		var subs []string
		for _, s := range c.Subcommands {
			if !s.Hidden {
				subs = append(subs, "["+s.Name+"](#"+anchor(e.path+" "+s.Name)+")")
			}
		}
		if len(subs) > 0 {
			fmt.Fprintf(&b, "Commands: %s.\n\n", strings.Join(subs, ", "))
		}
		if err := flagTable(&b, "Flags", c.Flags); err != nil {
			return nil, fmt.Errorf("%s: %w", e.path, err)
		}
	}
	return append(bytes.TrimRight(b.Bytes(), "\n"), '\n'), nil
}

// flagTable writes the visible flags as a Markdown table under title, or nothing when there
// are none. A flag that does not describe itself (no cli.DocGenerationFlag) is an error, so
// that a new flag type cannot leave the reference silently.
func flagTable(b *bytes.Buffer, title string, flags []cli.Flag) error {
	var rows []string
	for _, f := range flags {
		if v, ok := f.(cli.VisibleFlag); ok && !v.IsVisible() {
			continue
		}
		d, ok := f.(cli.DocGenerationFlag)
		if !ok {
			return fmt.Errorf("flag %s (%T) does not describe itself for the reference", f.Names()[0], f)
		}
		var names []string
		for _, n := range f.Names() {
			if len(n) == 1 {
				names = append(names, "`-"+n+"`")
			} else {
				names = append(names, "`--"+n+"`")
			}
		}
		value, def := "", ""
		if d.TakesValue() {
			value = "value"
			if s, ok := f.(cli.DocGenerationSliceFlag); ok && s.IsSliceFlag() {
				value = "value, repeatable"
			}
			def = d.GetDefaultText()
			if def == "" {
				def = d.GetValue()
			}
		}
		if u, err := strconv.Unquote(def); err == nil {
			def = u // a string flag's value comes quoted
		}
		if def == "[]" {
			def = ""
		}
		env := ""
		if vars := d.GetEnvVars(); len(vars) > 0 {
			env = codeList(prefixed("$", vars))
		}
		if def != "" {
			def = "`" + strings.ReplaceAll(def, "`", "'") + "`"
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | %s |",
			strings.Join(names, ", "), value, cell(def), env, cell(oneLine(d.GetUsage()))))
	}
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintf(b, "%s:\n\n| flag | takes | default | environment | meaning |\n|---|---|---|---|---|\n", title)
	for _, r := range rows {
		b.WriteString(r + "\n")
	}
	return nil
}

// anchor is the fragment GitHub gives a heading: lower case, spaces to hyphens, punctuation
// but hyphens and underscores dropped.
func anchor(heading string) string {
	var a strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			a.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			a.WriteRune(r)
		}
	}
	return a.String()
}

// oneLine joins a possibly wrapped text into one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// sentence is a command's one-line usage as a sentence without its full stop: first letter
// upper case.
func sentence(s string) string {
	s = strings.TrimSuffix(oneLine(s), ".")
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// cell escapes a table cell's pipes.
func cell(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

// codeList renders words as `a`, `b`.
func codeList(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = "`" + w + "`"
	}
	return strings.Join(q, ", ")
}

func prefixed(p string, words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = p + w
	}
	return out
}
