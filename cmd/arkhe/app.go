package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/localpg"
)

// env is what every action gets: the writers of this invocation and how to reach the ledger.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	log            *slog.Logger
}

func newApp(e *env) *cli.App {
	app := &cli.App{
		Name:      "arkhe",
		Usage:     "an ARK ledger in PostgreSQL, and the batch work around it",
		Reader:    e.stdin,
		Writer:    e.stdout,
		ErrWriter: e.stderr,
		Flags: []cli.Flag{
			&cli.GenericFlag{Name: "database-url", Value: &databaseURLs{env: os.Getenv("ARKHE_DATABASE_URL")},
				DefaultText: "$ARKHE_DATABASE_URL",
				Usage: "PostgreSQL URL of the ledger; without it (and without PGHOST/PGDATABASE/PGSERVICE) arkhe uses its embedded local cluster in --data-dir. " +
					"On a Citus cluster give it once per node that takes writes, the coordinator first: mint spreads its COPY streams over them"},
			&cli.StringFlag{Name: "data-dir", EnvVars: []string{"ARKHE_DATA_DIR"},
				Usage: "where the embedded cluster lives", DefaultText: "$XDG_DATA_HOME/arkhe, ~/.local/share/arkhe, or /var/lib/arkhe as root"},
			&cli.StringFlag{Name: "api-key-file", EnvVars: []string{"ARKHE_API_KEY_FILE"},
				Usage: "file holding the client's API key, for the writing commands (mint, update, import, reconcile --apply, ark repoint, ark tombstone); $ARKHE_API_KEY may hold the key itself; never give a key on the command line"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress bar or periodic log lines"},
			&cli.BoolFlag{Name: "version", Aliases: []string{"V"}, Usage: "print the version, commit, Go version and the PostgreSQL server binaries found, then exit (offline)"},
		},
		EnableBashCompletion: true, // `arkhe completion` prints the scripts that use it
		Commands: []*cli.Command{
			initCommand(e),
			naanCommand(e),
			managerCommand(e),
			shoulderCommand(e),
			clientCommand(e),
			arkCommand(e),
			mintCommand(e),
			updateCommand(e),
			importCommand(e),
			reconcileCommand(e),
			verifyCommand(e),
			linkcheckCommand(e),
			reportCommand(e),
			exportCommand(e),
			serveCommand(e),
			sizingCommand(e),
			benchCommand(e),
			dbCommand(e),
			versionCommand(e),
			completionCommand(e),
		},
		Before: func(c *cli.Context) error {
			if !c.Bool("version") {
				return nil
			}
			// --version wins over any command, as in GNU programs: print, exit 0, run nothing
			if err := printVersion(c, e); err != nil {
				return err
			}
			return &exitError{code: exitDone}
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("unknown command %q; try 'arkhe --help'", c.Args().First())
			}
			return cli.ShowAppHelp(c)
		},
		ExitErrHandler: func(*cli.Context, error) {}, // run decides the exit code
	}
	applyConventions(app)
	return app
}

// applyConventions gives every command the same help and usage-error behaviour: a switch
// (bool flag) prints no "(default: false)", since a default belongs in the help once, set
// as the flag's value or DefaultText and never repeated in its Usage; a usage error (unknown
// flag, missing value) is one line on stderr naming the command and pointing at its --help,
// exit 2, instead of the whole help on stdout; a command without subcommands checks its
// required flags and positional arguments before it runs, naming every one missing (checkArgs).
func applyConventions(app *cli.App) {
	noBoolDefault(app.Flags)
	app.OnUsageError = usageError("arkhe")
	var walk func(path string, cmds []*cli.Command)
	walk = func(path string, cmds []*cli.Command) {
		for _, cmd := range cmds {
			name := path + " " + cmd.Name
			noBoolDefault(cmd.Flags)
			cmd.OnUsageError = usageError(name)
			if len(cmd.Subcommands) == 0 {
				checkArgs(strings.TrimPrefix(name, "arkhe "), cmd)
			}
			walk(name, cmd.Subcommands)
		}
	}
	walk("arkhe", app.Commands)
}

func noBoolDefault(flags []cli.Flag) {
	for _, f := range flags {
		if b, ok := f.(*cli.BoolFlag); ok {
			b.DisableDefaultText = true
		}
	}
}

// renamedFlag returns the spelling that replaced flag in the command called name ("arkhe
// import", "--format" gives "--input-format"), so that the usage error can say so: one
// spelling per flag, -o/--out for every output file, --format only for an output format.
func renamedFlag(name, flag string) (string, bool) {
	switch name + " " + flag {
	case "arkhe report changes --output", "arkhe report arks --output", "arkhe verify --findings":
		return "--out", true
	case "arkhe import --format", "arkhe reconcile --export-format":
		return "--input-format", true
	case "arkhe ark check --zone":
		return "--check-zone", true
	case "arkhe bench mint --cpuprofile", "arkhe bench verify --cpuprofile":
		return "--cpu-profile", true
	}
	return "", false
}

// usageError returns the OnUsageError of the command called name ("arkhe mint").
func usageError(name string) cli.OnUsageErrorFunc {
	return func(c *cli.Context, err error, _ bool) error {
		msg := err.Error()
		if flag, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
			flag = "--" + strings.TrimLeft(flag, "-")
			if to, ok := renamedFlag(name, flag); ok {
				msg = fmt.Sprintf("unknown flag %s: it is now %s", flag, to)
			} else {
				msg = "unknown flag " + flag
			}
		}
		// the flag package names every flag with one dash; arkhe's help spells long ones with two
		msg = regexp.MustCompile(`(argument: |for flag )-(\w[\w-]+)`).ReplaceAllString(msg, "$1--$2")
		if cmd, ok := strings.CutPrefix(name, "arkhe "); ok {
			msg = cmd + ": " + msg // run prefixes "arkhe: "
		}
		return usagef("%s; try '%s --help'", msg, name)
	}
}

// run executes the arkhe CLI with args and returns the process exit status. Tests call it with
// buffers in place of the standard streams.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr,
		log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	app := newApp(e)
	code, msg := exitStatus(ctx, app.RunContext(ctx, hoistArgs(app, args)))
	if msg != "" {
		fmt.Fprintf(stderr, "arkhe: %s\n", msg)
	}
	return code
}

// databaseURLs is the value of --database-url, which may be given more than once (the
// coordinator of a Citus cluster, then its workers). String is the first, which every command
// connects to; without the flag, $ARKHE_DATABASE_URL (read when the app is built).
type databaseURLs struct {
	env  string
	urls []string
}

// Set adds one URL (flag.Value).
func (d *databaseURLs) Set(v string) error {
	d.urls = append(d.urls, v)
	return nil
}

// String returns the ledger's URL: the first given, else the environment's, else "".
func (d *databaseURLs) String() string {
	if d == nil {
		return ""
	}
	if len(d.urls) > 0 {
		return d.urls[0]
	}
	return d.env
}

// entryNodeURLs returns the further --database-url values after the first: the other nodes of
// a Citus cluster that take writes.
func entryNodeURLs(c *cli.Context) []string {
	if d, ok := c.Generic("database-url").(*databaseURLs); ok && len(d.urls) > 1 {
		return d.urls[1:]
	}
	return nil
}

// openLedger resolves the database (explicit URL, ARKHE_DATABASE_URL, libpq environment, or the
// embedded cluster), connects, and refuses a session without the ledger role the command needs
// (checkRole) before it does anything. The caller closes the ledger.
func openLedger(c *cli.Context, e *env, maxConns int32) (*ledger.Ledger, error) {
	dataDir := c.String("data-dir")
	if dataDir == "" {
		d, err := localpg.DefaultDataDir()
		if err != nil {
			return nil, err
		}
		dataDir = d
	}
	url, err := localpg.ResolveDatabase(c.Context, c.String("database-url"), dataDir, e.stderr)
	if err != nil {
		return nil, fmt.Errorf("reach the ledger: %w", err)
	}
	l, err := ledger.Open(c.Context, url, maxConns)
	if err != nil {
		return nil, err
	}
	if err := checkRole(c, l); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// openChecked is openLedger plus ledger.CheckSchema: only `arkhe init` creates or upgrades the
// schema, so every other command refuses a database without the ledger, or with another schema
// version, and changes nothing in it.
func openChecked(c *cli.Context, e *env, maxConns int32) (*ledger.Ledger, error) {
	l, err := openLedger(c, e, maxConns)
	if err != nil {
		return nil, err
	}
	if err := l.CheckSchema(c.Context); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// openAsClient is openChecked for a writing command acting as clientID (mint, import,
// reconcile --apply, ark repoint, ark tombstone): the client's API key, when given or when the
// ledger requires keys, is checked first (ledger.Authenticate).
func openAsClient(c *cli.Context, e *env, maxConns int32, clientID string) (*ledger.Ledger, error) {
	key, err := apiKey(c)
	if err != nil {
		return nil, err
	}
	l, err := openChecked(c, e, maxConns)
	if err != nil {
		return nil, err
	}
	if err := l.Authenticate(c.Context, clientID, key); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// apiKey returns the client's API key: the content of --api-key-file, else $ARKHE_API_KEY, else
// "". A key is never taken from the command line, where other users of the machine see it.
func apiKey(c *cli.Context) (string, error) {
	if path := c.String("api-key-file"); path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("--api-key-file: %w", err)
		}
		key := strings.TrimSpace(string(b))
		if key == "" {
			return "", fmt.Errorf("--api-key-file %s: the file is empty", path)
		}
		return key, nil
	}
	return strings.TrimSpace(os.Getenv("ARKHE_API_KEY")), nil
}

// isTerminal reports whether w is a terminal (progress bars only there; log lines otherwise).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// parseTime accepts RFC 3339 or a date (UTC midnight); "" gives nil.
func parseTime(s string) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return &t, nil
		}
	}
	return nil, fmt.Errorf("time %q: want RFC 3339 (2026-11-29T20:00:00Z) or a date (2026-11-29)", s)
}
