// Command importgate checks that every package of the module imports only what the
// allowed-imports table of docs/packages.md lets it import, its tests included. It prints each
// offending arrow ("verify -> importer") and exits 1; a package without a row, or a row without
// a package, is an error too. Run it from the module root: go run ./internal/importgate.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
)

// tableFile is the document that holds the table, relative to the module root.
const tableFile = "docs/packages.md"

// rule is one row of the table: what a package, and what its tests, may import of ours.
type rule struct {
	code, tests allowed
}

// allowed is one "may import" cell: all of ours (except the listed ones), or only the listed.
type allowed struct {
	all   bool
	names []string // listed packages; with all, the exceptions
}

func (a allowed) permits(pkg string) bool { return a.all != slices.Contains(a.names, pkg) }

// pkg is one package of the module and what it imports of ours.
type pkg struct {
	path        string   // relative to the module root
	code, tests []string // imports of its own files; extra imports of its _test files
}

var backticked = regexp.MustCompile("`([^`]+)`")

// parseCell reads "nothing", "anything", "anything but `x`" or a list of `a`, `b`.
func parseCell(cell string) (allowed, error) {
	cell = strings.TrimSpace(cell)
	var names []string
	for _, m := range backticked.FindAllStringSubmatch(cell, -1) {
		names = append(names, m[1])
	}
	switch {
	case cell == "nothing":
		return allowed{}, nil
	case cell == "anything":
		return allowed{all: true}, nil
	case strings.HasPrefix(cell, "anything but ") && len(names) > 0:
		return allowed{all: true, names: names}, nil
	case len(names) > 0:
		return allowed{names: names}, nil
	}
	return allowed{}, fmt.Errorf("cannot read %q (want nothing, anything, anything but `x`, or `a`, `b`)", cell)
}

// parseTable reads the rows "| `path` | owns | may import | tests may also import |".
func parseTable(r io.Reader) (map[string]rule, error) {
	rules := map[string]rule{}
	sc := bufio.NewScanner(r)
	for line := 0; sc.Scan(); {
		line++
		cells := strings.Split(strings.Trim(strings.TrimSpace(sc.Text()), "|"), "|")
		if len(cells) != 4 || !strings.HasPrefix(strings.TrimSpace(cells[0]), "`") {
			continue
		}
		path := strings.Trim(strings.TrimSpace(cells[0]), "`")
		code, err := parseCell(cells[2])
		if err == nil {
			var tests allowed
			tests, err = parseCell(cells[3])
			rules[path] = rule{code: code, tests: tests}
		}
		if err != nil {
			return nil, fmt.Errorf("%s line %d (%s): %w", tableFile, line, path, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(rules) == 0 {
		return nil, fmt.Errorf("%s holds no table rows", tableFile)
	}
	return rules, nil
}

// check returns one message per import the rules do not allow, per package without a rule and
// per rule without a package.
func check(rules map[string]rule, pkgs []pkg) []string {
	var bad []string
	seen := map[string]bool{}
	for _, p := range pkgs {
		seen[p.path] = true
		r, ok := rules[p.path]
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: no row in %s", p.path, tableFile))
			continue
		}
		for _, imp := range p.code {
			if !r.code.permits(imp) {
				bad = append(bad, fmt.Sprintf("%s -> %s: not in its row of %s", p.path, imp, tableFile))
			}
		}
		for _, imp := range p.tests {
			if imp != p.path && !r.code.permits(imp) && !r.tests.permits(imp) {
				bad = append(bad, fmt.Sprintf("%s -> %s (in its tests): not in its row of %s", p.path, imp, tableFile))
			}
		}
	}
	for path := range rules {
		if !seen[path] {
			bad = append(bad, fmt.Sprintf("%s: %s has a row for it, but there is no such package", path, tableFile))
		}
	}
	slices.Sort(bad)
	return bad
}

// listPackages asks go list for the module's packages and their imports of ours.
func listPackages() ([]pkg, error) {
	mod, err := exec.Command("go", "list", "-m").Output()
	if err != nil {
		return nil, fmt.Errorf("go list -m: %w", err)
	}
	prefix := strings.TrimSpace(string(mod)) + "/"
	out, err := exec.Command("go", "list", "-f",
		`{{.ImportPath}}|{{join .Imports " "}}|{{join .TestImports " "}} {{join .XTestImports " "}}`, "./...").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("go list: %w\n%s", err, ee.Stderr)
		}
		return nil, fmt.Errorf("go list: %w", err)
	}
	ours := func(list string) []string {
		var r []string
		for _, f := range strings.Fields(list) {
			if p, ok := strings.CutPrefix(f, prefix); ok && !slices.Contains(r, p) {
				r = append(r, p)
			}
		}
		return r
	}
	var pkgs []pkg
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 3 {
			return nil, fmt.Errorf("go list: unexpected line %q", line)
		}
		pkgs = append(pkgs, pkg{path: strings.TrimPrefix(f[0], prefix), code: ours(f[1]), tests: ours(f[2])})
	}
	return pkgs, nil
}

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "importgate:", err)
		os.Exit(1)
	}
}

func run(w io.Writer) error {
	f, err := os.Open(tableFile)
	if err != nil {
		return err
	}
	defer f.Close()
	rules, err := parseTable(f)
	if err != nil {
		return err
	}
	pkgs, err := listPackages()
	if err != nil {
		return err
	}
	bad := check(rules, pkgs)
	for _, b := range bad {
		fmt.Fprintln(w, "importgate:", b)
	}
	if len(bad) > 0 {
		return fmt.Errorf("%d import(s) break the allowed-imports table of %s", len(bad), tableFile)
	}
	return nil
}
