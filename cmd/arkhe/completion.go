package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// The completion scripts follow urfave/cli v2's (autocomplete/bash_autocomplete and
// zsh_autocomplete in its repository): each asks arkhe itself for the candidates by running
// the words typed so far with completionFlag appended, so they always match the binary.
// The bash one reads COMP_WORDS directly instead of needing the bash-completion package.
const (
	bashCompletion = `# bash completion for arkhe: source <(arkhe completion bash)
_arkhe_complete() {
  local cur="${COMP_WORDS[COMP_CWORD]}"
  local words=("${COMP_WORDS[@]:0:COMP_CWORD}")
  local opts
  if [[ "$cur" == -* ]]; then
    opts=$("${words[@]}" "$cur" ` + completionFlag + ` 2>/dev/null)
  else
    opts=$("${words[@]}" ` + completionFlag + ` 2>/dev/null)
  fi
  COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -o bashdefault -o default -F _arkhe_complete arkhe
`
	zshCompletion = `#compdef arkhe
# zsh completion for arkhe: source <(arkhe completion zsh), after compinit
_arkhe_complete() {
  local -a opts
  local cur
  cur=${words[-1]}
  if [[ "$cur" == "-"* ]]; then
    opts=("${(@f)$(${words[@]:0:#words[@]-1} ${cur} ` + completionFlag + ` 2>/dev/null)}")
  else
    opts=("${(@f)$(${words[@]:0:#words[@]-1} ` + completionFlag + ` 2>/dev/null)}")
  fi
  if [[ "${opts[1]}" != "" ]]; then
    _describe 'values' opts
  else
    _files
  fi
}
compdef _arkhe_complete arkhe
`
)

func completionCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print the shell completion script for bash, zsh or fish",
		ArgsUsage: "bash|zsh|fish",
		Description: "Prints a script that completes arkhe's commands, subcommands and flags by asking arkhe itself.\n" +
			"bash: add `source <(arkhe completion bash)` to ~/.bashrc\n" +
			"zsh:  add `source <(arkhe completion zsh)` to ~/.zshrc, after compinit\n" +
			"fish: arkhe completion fish > ~/.config/fish/completions/arkhe.fish",
		Action: func(c *cli.Context) error {
			switch shell := c.Args().First(); shell {
			case "bash":
				fmt.Fprint(e.stdout, bashCompletion)
			case "zsh":
				fmt.Fprint(e.stdout, zshCompletion)
			case "fish":
				script, err := c.App.ToFishCompletion()
				if err != nil {
					return usagef("completion fish: %w", err)
				}
				fmt.Fprint(e.stdout, dedupeFish(script))
			default:
				return usagef("completion: unknown shell %q: want bash, zsh or fish", shell)
			}
			return nil
		},
	}
}

// dedupeFish drops what urfave/cli's fish script repeats (the help command and flag, listed
// once by the app and once by the library): a line seen before, and a word seen before in the
// list of command names tested with `contains`, which is a set.
func dedupeFish(script string) string {
	var out []string
	seen := map[string]bool{}
	for _, line := range strings.Split(script, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "complete ") {
			if seen[line] {
				continue
			}
			seen[line] = true
		}
		if head, list, ok := strings.Cut(line, "contains -- $i "); ok {
			words := map[string]bool{}
			var keep []string
			for _, w := range strings.Fields(list) {
				if !words[w] {
					words[w] = true
					keep = append(keep, w)
				}
			}
			line = head + "contains -- $i " + strings.Join(keep, " ")
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}
