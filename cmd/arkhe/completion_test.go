package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCompletion: arkhe completion prints the bash, zsh and fish scripts; a completion request
// (urfave/cli's protocol: the words typed so far and --generate-bash-completion) lists
// commands, subcommands and flags and never runs the command; and the bash script, sourced in
// bash over a built arkhe, completes.
func TestCompletion(t *testing.T) { // not parallel: it sets os.Args, which urfave/cli reads
	code, bashScript, _ := cliRun(t, "completion", "bash")
	if code != 0 || !strings.Contains(bashScript, "complete -o bashdefault -o default -F _arkhe_complete arkhe\n") {
		t.Fatalf("completion bash: exit %d\n%s", code, bashScript)
	}
	if out, err := exec.Command("bash", "-n", "-c", bashScript).CombinedOutput(); err != nil {
		t.Errorf("the bash script does not parse: %v\n%s", err, out)
	}
	if code, out, _ := cliRun(t, "completion", "zsh"); code != 0 || !strings.HasPrefix(out, "#compdef arkhe\n") || !strings.Contains(out, "compdef _arkhe_complete arkhe\n") {
		t.Errorf("completion zsh: exit %d\n%s", code, out)
	}
	if code, out, _ := cliRun(t, "completion", "fish"); code != 0 || !strings.Contains(out, "complete -c arkhe -n '__fish_seen_subcommand_from import' -f -l input-format -r") ||
		strings.Contains(out, "help h help h") || strings.Count(out, "complete -c arkhe -n '__fish_arkhe_no_subcommand' -f -l help -s h") != 1 {
		t.Errorf("completion fish: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{{"completion"}, {"completion", "tcsh"}, {"completion", "bash", "zsh"}} {
		if code, _, errOut := cliRun(t, args...); code != 2 || errOut == "" {
			t.Errorf("arkhe %s: exit %d, want 2", strings.Join(args, " "), code)
		}
	}

	// urfave/cli reads the words of a completion request from os.Args, which in arkhe are the
	// args run gets; here they are set to match
	osArgs := os.Args
	t.Cleanup(func() { os.Args = osArgs })
	complete := func(words ...string) (int, []string, string) {
		t.Helper()
		os.Args = append([]string{"arkhe"}, append(words, completionFlag)...)
		code, out, errOut := cliRun(t, os.Args[1:]...)
		os.Args = osArgs
		return code, strings.Split(strings.TrimSpace(out), "\n"), errOut
	}
	code, got, _ := complete()
	for _, want := range []string{"mint", "import", "report", "version", "completion"} {
		if code != 0 || !slices.Contains(got, want) {
			t.Errorf("top-level candidates lack %q: exit %d %q", want, code, got)
		}
	}
	if code, got, _ := complete("report"); code != 0 || !slices.Contains(got, "changes") || !slices.Contains(got, "arks") {
		t.Errorf("report candidates: exit %d %q", code, got)
	}
	if code, got, _ := complete("mint", "--ou"); code != 0 || !slices.Equal(got, []string{"--out"}) {
		t.Errorf("mint --ou: exit %d, candidates %q", code, got)
	}
	if code, got, _ := complete("import", "--in"); code != 0 || !slices.Equal(got, []string{"--input-format", "--include-reserved", "--include-test"}) {
		t.Errorf("import --in: exit %d, candidates %q", code, got)
	}
	// a completion request after a leaf command's arguments runs nothing: the database cannot
	// be reached, so running would exit 2
	code, got, errOut := complete("--database-url", "postgres://nobody@/none?host=/nonexistent-socket-dir", "mint", "--client", "c", "m.csv")
	if code != 0 || errOut != "" || slices.Contains(got, "arkhe mint: refused") {
		t.Errorf("a completion request ran the command: exit %d %q\n%s", code, got, errOut)
	}

	// the script itself, in bash, over arkhe on PATH: the test binary run as arkhe
	bin := t.TempDir()
	wrapper := "#!/bin/sh\nexec env " + asArkheEnv + "=1 '" + os.Args[0] + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "arkhe"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	probe := bashScript + `
COMP_WORDS=(arkhe rep); COMP_CWORD=1; _arkhe_complete; echo "1:${COMPREPLY[*]}"
COMP_WORDS=(arkhe report a); COMP_CWORD=2; _arkhe_complete; echo "2:${COMPREPLY[*]}"
COMP_WORDS=(arkhe import --input); COMP_CWORD=2; _arkhe_complete; echo "3:${COMPREPLY[*]}"
`
	sh := exec.Command("bash", "-c", probe)
	sh.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	shOut, err := sh.CombinedOutput()
	if want := "1:report\n2:arks\n3:--input-format\n"; err != nil || string(shOut) != want {
		t.Errorf("bash completion: %v\n%q, want %q", err, shOut, want)
	}
}
