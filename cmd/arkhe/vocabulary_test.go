package main

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// cliRun runs the CLI with args after "arkhe" and nothing else (no database URL, no --quiet).
func cliRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"arkhe"}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// commandPaths lists every command and subcommand of the app as its words ("report arks").
func commandPaths() [][]string {
	app := newApp(&env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard})
	var paths [][]string
	var walk func(prefix []string, cmds []*cli.Command)
	walk = func(prefix []string, cmds []*cli.Command) {
		for _, c := range cmds {
			p := append(slices.Clone(prefix), c.Name)
			paths = append(paths, p)
			walk(p, c.Subcommands)
		}
	}
	walk(nil, app.Commands)
	return paths
}

// commandFlags returns every command's flags by path ("" for the global flags).
func commandFlags() map[string][]cli.Flag {
	app := newApp(&env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard})
	flags := map[string][]cli.Flag{"": app.Flags}
	var walk func(prefix string, cmds []*cli.Command)
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			p := strings.TrimSpace(prefix + " " + c.Name)
			flags[p] = c.Flags
			walk(p, c.Subcommands)
		}
	}
	walk("", app.Commands)
	return flags
}

// TestHelpPrintsEachDefaultOnce: in the help of every command, no flag line shows two
// defaults, no switch shows "(default: false)", and no flag's Usage spells a default itself
// (it belongs in Value or DefaultText, which the help prints once).
func TestHelpPrintsEachDefaultOnce(t *testing.T) {
	t.Parallel()
	paths := append([][]string{{}}, commandPaths()...)
	if len(paths) < 30 {
		t.Fatalf("only %d commands found", len(paths))
	}
	for _, p := range paths {
		code, out, errOut := cliRun(t, append(slices.Clone(p), "--help")...)
		name := strings.TrimSpace("arkhe " + strings.Join(p, " "))
		if code != 0 || !strings.Contains(out, "USAGE:") {
			t.Fatalf("%s --help: exit %d\n%s\n%s", name, code, out, errOut)
		}
		for _, line := range strings.Split(out, "\n") {
			if n := strings.Count(line, "(default:"); n > 1 {
				t.Errorf("%s --help prints %d defaults on one line:\n%s", name, n, line)
			}
			if strings.Contains(line, "(default: false)") || strings.Contains(line, "(default: true)") {
				t.Errorf("%s --help prints a switch's default:\n%s", name, line)
			}
		}
	}
	defaultInUsage := regexp.MustCompile(`(?i)\(default|; default |default:`)
	for cmd, flags := range commandFlags() {
		for _, f := range flags {
			if u := f.(cli.DocGenerationFlag).GetUsage(); defaultInUsage.MatchString(u) {
				t.Errorf("arkhe %s --%s: its Usage states a default (set DefaultText): %q", cmd, f.Names()[0], u)
			}
		}
	}
	// the double default the help used to print
	_, out, _ := cliRun(t, "verify", "--help")
	if !strings.Contains(out, "goroutines checking ARKs (default: one per CPU)\n") {
		t.Errorf("verify --help: --workers line:\n%s", out)
	}
}

// TestFlagVocabulary: -o/--out names every output file, --format only an output format
// (where there is an output file), --input-format an input format, and each flag has one
// spelling across commands; the retired spellings are refused, naming the new one.
func TestFlagVocabulary(t *testing.T) {
	t.Parallel()
	all := commandFlags()
	spellings := map[string]string{} // name without hyphens → the spelling in use
	for cmd, flags := range all {
		names := map[string]bool{}
		for _, f := range flags {
			for _, n := range f.Names() {
				names[n] = true
			}
		}
		for _, f := range flags {
			n := f.Names()[0]
			key := strings.ReplaceAll(n, "-", "")
			if prev, ok := spellings[key]; ok && prev != n {
				t.Errorf("arkhe %s --%s: spelled --%s elsewhere", cmd, n, prev)
			}
			spellings[key] = n
			switch n {
			case "output", "findings", "export-format", "cpuprofile", "zone":
				t.Errorf("arkhe %s still has --%s", cmd, n)
			case "out":
				if !slices.Equal(f.Names(), []string{"out", "o"}) {
					t.Errorf("arkhe %s --out: names %q, want out and o", cmd, f.Names())
				}
			case "format":
				if !names["out"] {
					t.Errorf("arkhe %s has --format but no output file (-o/--out)", cmd)
				}
			}
		}
	}
	for _, want := range []struct{ cmd, flag string }{
		{"mint", "out"}, {"reconcile", "out"}, {"report arks", "out"}, {"report changes", "out"}, {"verify", "out"},
		{"import", "input-format"}, {"reconcile", "input-format"}, {"bench mint", "cpu-profile"},
		{"bench verify", "cpu-profile"}, {"bench import", "cpu-profile"}, {"ark check", "check-zone"},
	} {
		found := false
		for _, f := range all[want.cmd] {
			found = found || f.Names()[0] == want.flag
		}
		if !found {
			t.Errorf("arkhe %s has no --%s", want.cmd, want.flag)
		}
	}
	// retired spellings: refused before anything runs (no database here), naming the new one
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"report", "arks", "--output", "x.parquet"}, "report arks: unknown flag --output: it is now --out; try 'arkhe report arks --help'"},
		{[]string{"verify", "--findings", "f.jsonl"}, "verify: unknown flag --findings: it is now --out"},
		{[]string{"import", "--format", "ezid-anvl", "x"}, "import: unknown flag --format: it is now --input-format"},
		{[]string{"reconcile", "--export-format", "ezid-anvl", "x"}, "reconcile: unknown flag --export-format: it is now --input-format"},
		{[]string{"ark", "check", "--zone", "none", "ark:/1/x"}, "ark check: unknown flag --zone: it is now --check-zone"},
		{[]string{"bench", "mint", "--cpuprofile", "p"}, "bench mint: unknown flag --cpuprofile: it is now --cpu-profile"},
		{[]string{"mint", "--nope"}, "mint: unknown flag --nope; try 'arkhe mint --help'"},
		{[]string{"mint", "--batch", "x", "m.csv"}, `mint: invalid value "x" for flag --batch`},
		{[]string{"--nope"}, "arkhe: unknown flag --nope; try 'arkhe --help'"},
		{[]string{"nope"}, `arkhe: unknown command "nope"; try 'arkhe --help'`},
	} {
		code, out, errOut := cliRun(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) || strings.Contains(out, "USAGE:") {
			t.Errorf("arkhe %s: exit %d (want 2), stderr %q (want %q); stdout:\n%s", strings.Join(c.args, " "), code, errOut, c.want, out)
		}
		if strings.Count(errOut, "\n") != 1 {
			t.Errorf("arkhe %s: a usage error is one line, got:\n%s", strings.Join(c.args, " "), errOut)
		}
	}
	// the new spellings parse (they fail later, on their values, without a database)
	if code, _, errOut := cliRun(t, "import", "--input-format", "nope", "x"); code != 2 || !strings.Contains(errOut, "import: --input-format:") {
		t.Errorf("import --input-format nope: exit %d %s", code, errOut)
	}
	if code, _, errOut := cliRun(t, "reconcile", "--input-format", "nope", "x"); code != 2 || !strings.Contains(errOut, "reconcile: --input-format:") {
		t.Errorf("reconcile --input-format nope: exit %d %s", code, errOut)
	}
	if code, _, errOut := cliRun(t, "mint", "--client", "c", "-o", "map.txt", "m.csv"); code != 2 || !strings.Contains(errOut, "mint: --out map.txt: want .csv, .jsonl or .parquet") {
		t.Errorf("mint -o map.txt: exit %d %s", code, errOut)
	}
	if code, _, errOut := cliRun(t, "report", "arks", "--format", "xml", "-o", "r.xml"); code != 2 || errOut == "" {
		t.Errorf("report arks --format xml: exit %d %s", code, errOut)
	}
}
