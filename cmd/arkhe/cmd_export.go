package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/arkhe-ledger/arkhe/export"
)

// exportCommand is `arkhe export FORMAT`: the ledger as files a running resolver reads.
func exportCommand(e *env) *cli.Command {
	flags := func(def string) []cli.Flag {
		return []cli.Flag{
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "output file", DefaultText: def},
			&cli.StringFlag{Name: "since", Usage: "only the ARKs minted, imported or changed after this watermark (A:C, printed by an earlier export)"},
		}
	}
	sub := func(f export.Format, def, usage string) *cli.Command {
		return &cli.Command{
			Name:   string(f),
			Usage:  usage,
			Flags:  flags("./" + def),
			Action: func(c *cli.Context) error { return runExport(c, e, f, def) },
		}
	}
	return &cli.Command{
		Name:  "export",
		Usage: "write the ledger for a resolver that already runs (nginx, Apache, N2T, JSON Lines), streamed and atomic; prints a watermark for --since",
		Subcommands: []*cli.Command{
			sub(export.Nginx, "arks.map", "an nginx map of ARK -> target, with NAME-http.conf (include in http) and NAME-server.conf (include in a server) beside it, NAME being FILE without its extension: 302 redirects, suffix passthrough, 410 for tombstones, forwarding NAANs and shoulders"),
			sub(export.Apache, "arks.txt", "an Apache RewriteMap text file of ARK -> target, with NAME-rewrite.conf beside it (NAME: FILE without its extension) (the RewriteRules, include in a virtual host)"),
			sub(export.N2TDump, "arks.dump", "an N2T egg binder dump (db_dump -p: _t target, _is status, who what when, _,ec), the form arkhe import n2t-dump reads"),
			sub(export.JSONL, "arks.jsonl", "JSON Lines, one object per ARK (the columns of arkhe report arks)"),
		},
	}
}

// runExport runs one export and prints what it wrote and its watermark.
func runExport(c *cli.Context, e *env, f export.Format, def string) error {
	if c.NArg() > 0 {
		return usagef("export %s: unexpected argument %q", f, c.Args().First())
	}
	cfg := export.Config{Format: f, Path: c.String("out")}
	if cfg.Path == "" {
		cfg.Path = def
	}
	if s := c.String("since"); s != "" {
		w, err := export.ParseWatermark(s)
		if err != nil {
			return usagef("export %s: --since: %w", f, err)
		}
		cfg.Since = &w
	}
	l, err := openChecked(c, e, 2)
	if err != nil {
		return err
	}
	defer l.Close()
	p := newProgress(e.stderr, e.log, c.Bool("quiet"), "exporting "+string(f), "ARKs")
	var last int64
	cfg.Progress = func(n int64) { p.Add(n - last); last = n }
	res, err := export.Run(c.Context, l, cfg)
	p.Finish()
	if err != nil {
		return err
	}
	what := "ARKs"
	if cfg.Since != nil {
		what = "ARKs changed after " + cfg.Since.String()
	}
	fmt.Fprintf(e.stdout, "wrote %s %s", thousands(res.ARKs), what)
	if f == export.Nginx || f == export.Apache {
		fmt.Fprintf(e.stdout, " and %s forwarding rules", thousands(int64(res.Forwards)))
	}
	fmt.Fprintf(e.stdout, " to %s\n", strings.Join(res.Files, ", "))
	fmt.Fprintf(e.stdout, "watermark %s\n", res.Watermark)
	return nil
}
