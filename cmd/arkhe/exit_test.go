package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestExitStatusOfProcess runs arkhe as a process of its own (this test binary, as arkhe) and
// checks the exit status and stderr that exitStatus picks: 0 done, 1 done with findings, 2 could
// not run, with the message on stderr once, lowercase, after "arkhe: ".
func TestExitStatusOfProcess(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args   []string
		code   int
		stderr string // the whole of stderr
	}{
		{[]string{"--version"}, 0, ""},
		{[]string{"ark", "check", "ark:/13030/xf93gt2q"}, 0, ""},
		{[]string{"ark", "check", "ark:/13030/xf93gt2r"}, 1, ""},
		{[]string{"mint"}, 2, "arkhe: mint: missing --client and MANIFEST (arkhe mint --client CLIENT MANIFEST...)\n"},
		{[]string{"frobnicate"}, 2, "arkhe: unknown command \"frobnicate\"; try 'arkhe --help'\n"},
		{[]string{"mint", "--colour"}, 2, "arkhe: mint: unknown flag --colour; try 'arkhe mint --help'\n"},
		{[]string{"completion", "tcsh"}, 2, ""},
	} {
		cmd := exec.Command(os.Args[0], c.args...)
		cmd.Env = append(os.Environ(), asArkheEnv+"=1", "ARKHE_DATABASE_URL=host=/nonexistent dbname=none")
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.code || c.stderr != "" && errOut.String() != c.stderr || c.code == 2 && !strings.HasPrefix(errOut.String(), "arkhe: ") {
			t.Errorf("arkhe %s: exit %d (want %d)\nstderr %q\nwant   %q\nstdout %q", strings.Join(c.args, " "), code, c.code, errOut.String(), c.stderr, out.String())
		}
	}
}

// TestUsageErrorsNameEveryMissingArgument: every command that requires flags or positional
// arguments, run without any, exits 2 with one lowercase line naming every one missing and the
// command line it wants, in arkhe's words (never urfave/cli's "Required flag"), before it
// reaches a database; one argument too many is named too.
func TestUsageErrorsNameEveryMissingArgument(t *testing.T) {
	t.Parallel()
	var checked int
	var walk func(path []string, cmds []*cli.Command)
	walk = func(path []string, cmds []*cli.Command) {
		for _, cmd := range cmds {
			p := append(append([]string{}, path...), cmd.Name)
			if len(cmd.Subcommands) > 0 {
				walk(p, cmd.Subcommands)
				continue
			}
			probe := *cmd
			probe.Flags = nil // newArgSpec changes the flags it reads: read a copy's
			for _, f := range cmd.Flags {
				if r, ok := f.(cli.RequiredFlag); ok && r.IsRequired() {
					t.Errorf("arkhe %s: flag %v is left to urfave/cli's required check", strings.Join(p, " "), f.Names())
				}
			}
			spec := newArgSpec(strings.Join(p, " "), &probe)
			if spec.min == 0 && !strings.Contains(cmd.Usage+strings.Join(flagUsages(cmd), ""), "(required)") {
				continue
			}
			checked++
			code, out, errOut := arkhe(t, "host=/nonexistent dbname=none", "", p...)
			if code != 2 || out != "" || !strings.HasPrefix(errOut, "arkhe: "+strings.Join(p, " ")+": missing ") ||
				strings.Contains(errOut, "Required") || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "(arkhe "+strings.Join(p, " ")) {
				t.Errorf("arkhe %s: exit %d\nstderr %q\nstdout %q", strings.Join(p, " "), code, errOut, out)
			}
		}
	}
	walk(nil, newApp(&env{}).Commands)
	if checked < 15 {
		t.Errorf("%d commands with required arguments, want at least 15", checked)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"client", "add"}, "arkhe: client add: missing --naan (arkhe client add --naan NAAN [CLIENT_ID])\n"},
		{[]string{"client", "add", "--naan", "12345"}, "arkhe: client add: missing CLIENT_ID (arkhe client add --naan NAAN CLIENT_ID, or --from-unknown ID)\n"},
		{[]string{"ark", "repoint", "ark:/13030/xf93gt2q"}, "arkhe: ark repoint: missing --client and URL (arkhe ark repoint --client CLIENT ARK URL)\n"},
		{[]string{"naan", "add", "12345", "67890"}, "arkhe: naan add: unexpected argument \"67890\" (arkhe naan add NAAN)\n"},
		{[]string{"report", "arks", "extra"}, "arkhe: report arks: unexpected argument \"extra\" (arkhe report arks)\n"},
		// a registry command reads its input before it reaches the ledger (here: nowhere)
		{[]string{"manager", "set", "--naan", "12345", "Library"},
			"arkhe: manager set: give what to change: --quota, --commitment, --default-shoulder, --active or --inactive\n"},
		{[]string{"client", "set", "scanner", "--expires", "soon"},
			"arkhe: client set: --expires: want RFC 3339 (2026-11-29T20:00:00Z), a date (2026-11-29) or never\n"},
	} {
		if code, out, errOut := arkhe(t, "host=/nonexistent dbname=none", "", c.args...); code != 2 || errOut != c.want {
			t.Errorf("arkhe %s: exit %d\nstderr %q\nwant   %q\n%s", strings.Join(c.args, " "), code, errOut, c.want, out)
		}
	}
}

// flagUsages returns the usage text of each of cmd's flags.
func flagUsages(cmd *cli.Command) []string {
	var u []string
	for _, f := range cmd.Flags {
		if d, ok := f.(cli.DocGenerationFlag); ok {
			u = append(u, d.GetUsage())
		}
	}
	return u
}

// TestEveryCommandDeclaresItsRole: every command is in neededRoles' table, so that none reaches
// the ledger without its role checked first.
func TestEveryCommandDeclaresItsRole(t *testing.T) {
	t.Parallel()
	var walk func(path []string, cmds []*cli.Command)
	n := 0
	walk = func(path []string, cmds []*cli.Command) {
		for _, cmd := range cmds {
			p := append(append([]string{}, path...), cmd.Name)
			if cmd.Action != nil {
				n++
				if _, known := rolesFor(strings.Join(p, " "), func(string) bool { return false }); !known {
					t.Errorf("arkhe %s declares no role (neededRoles)", strings.Join(p, " "))
				}
			}
			walk(p, cmd.Subcommands)
		}
	}
	walk(nil, newApp(&env{}).Commands)
	if n < 40 {
		t.Errorf("%d commands walked, want every one (at least 40)", n)
	}
}
