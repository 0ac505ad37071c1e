package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/arkhe-ledger/arkhe/ark"
)

func arkCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "ark",
		Usage: "ARK syntax tools and single-ARK commands (show, repoint, tombstone)",
		Subcommands: append([]*cli.Command{
			{
				Name:      "check",
				Usage:     "normalize ARKs and verify their NCDA check character; exit 1 if any fails",
				ArgsUsage: "[ARK...]  (or --file F, or one ARK a line on stdin; a TAB-separated line uses its first field)",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "check-zone", Value: string(ark.ZoneNAANName), Usage: "check zone: naan_name (the check character covers NAAN and name) | name_only (name only) | none"},
					&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Usage: "read ARKs from this file, one a line (- for stdin)"},
				},
				Action: func(c *cli.Context) error {
					zone, err := ark.ParseZone(c.String("check-zone"))
					if err != nil {
						return err
					}
					var src io.Reader
					name := "arguments"
					switch {
					case c.String("file") != "" && c.String("file") != "-":
						f, err := os.Open(c.String("file"))
						if err != nil {
							return err
						}
						defer f.Close()
						src, name = f, c.String("file")
					case c.NArg() > 0:
						src = strings.NewReader(strings.Join(c.Args().Slice(), "\n"))
					default:
						src, name = e.stdin, "stdin"
					}
					ok, bad, err := checkARKs(src, name, zone, e.stdout)
					if err != nil {
						return err
					}
					fmt.Fprintf(e.stderr, "%d verified, %d failed (zone %s)\n", ok, bad, zone)
					if bad > 0 {
						return withFindings("")
					}
					return nil
				},
			},
		}, arkSingleCommands(e)...),
	}
}

// checkARKs prints, per input line, the normalized ARK and its verdict:
// "ark:13030/xf93gt2q<TAB>ok", or "<input><TAB>FAIL<TAB>reason". Blank lines and lines starting
// with '#' are skipped; a line with TABs uses its first field; a first line without ':' is a
// header and is said to be one. Malformed ARKs (and other identifiers, e.g. DOIs) count as failed.
func checkARKs(r io.Reader, name string, zone ark.Zone, w io.Writer) (ok, bad int, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if i := strings.IndexByte(text, '\t'); i >= 0 {
			text = text[:i]
		}
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if line == 1 && !strings.Contains(text, ":") {
			fmt.Fprintf(bw, "# %s line 1 (%q) read as a header: it cannot be an ARK\n", name, text)
			continue
		}
		a, perr := ark.Parse(text)
		if perr != nil {
			bad++
			fmt.Fprintf(bw, "%s\tFAIL\t%s line %d: %v\n", text, name, line, perr)
			continue
		}
		if verr := ark.VerifyDetail(a, zone); verr != nil {
			bad++
			fmt.Fprintf(bw, "%s\tFAIL\t%v\n", a.String(), verr)
			continue
		}
		ok++
		fmt.Fprintf(bw, "%s\tok\n", a.String())
	}
	if err := sc.Err(); err != nil {
		return ok, bad, fmt.Errorf("%s line %d: %w", name, line+1, err)
	}
	if ok+bad == 0 {
		return 0, 0, errors.New(name + ": no ARKs given")
	}
	return ok, bad, nil
}
