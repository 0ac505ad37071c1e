package main

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/arkhe-ledger/arkhe/localpg"
)

// version and commit, when set, replace what the Go toolchain recorded in the binary (its
// module version and VCS revision). They are set at link time only, by a packager:
//
//	go build -ldflags "-X main.version=1.2.0 -X main.commit=4902ebd" ./cmd/arkhe
var (
	version string
	commit  string
)

// buildInfo is what `arkhe --version` says about the binary itself.
type buildInfo struct {
	Version  string // module version; "(devel)" for a build without one
	Commit   string // VCS revision; "" when unknown
	Modified bool   // built from a working tree with uncommitted changes
	Time     string // commit time (RFC 3339); "" when unknown
	Go       string // toolchain, e.g. "go1.26.8"
}

// readBuildInfo reads bi (from debug.ReadBuildInfo; nil when the binary carries none): the
// main module's version and the vcs.revision, vcs.modified and vcs.time settings the Go
// toolchain stamps into a build from a checkout. A non-empty override (-X main.version,
// -X main.commit) wins; an overridden commit is taken as it is, not marked modified.
func readBuildInfo(bi *debug.BuildInfo, versionOverride, commitOverride string) buildInfo {
	b := buildInfo{Version: "(devel)", Go: runtime.Version()}
	if bi != nil {
		if v := bi.Main.Version; v != "" {
			b.Version = v
		}
		if bi.GoVersion != "" {
			b.Go = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Commit = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			case "vcs.time":
				b.Time = s.Value
			}
		}
	}
	if versionOverride != "" {
		b.Version = versionOverride
	}
	if commitOverride != "" {
		b.Commit, b.Modified, b.Time = commitOverride, false, ""
	}
	return b
}

func versionCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the version, commit, Go version and the PostgreSQL server binaries found (as arkhe --version)",
		Description: "Prints arkhe's version and commit, the Go toolchain it was built with, the PostgreSQL server binaries " +
			"the embedded cluster would run (found as it would find them: the data directory's own major version, else " +
			"the highest /usr/lib/postgresql/<major>/bin, pg_config --bindir, PATH) and which database the other commands " +
			"would use. Offline: it starts no server and connects to no database.",
		Action: func(c *cli.Context) error {
			return printVersion(c, e)
		},
	}
}

// printVersion prints what `arkhe --version` and `arkhe version` print; when the embedded
// server runs other binaries than those installed (a package upgrade under it), a line gives
// the version it runs beside the installed one. It runs `postgres --version` and nothing
// else: no server is started, no database contacted.
func printVersion(c *cli.Context, e *env) error {
	bi, _ := debug.ReadBuildInfo()
	b := readBuildInfo(bi, version, commit)
	w := e.stdout
	fmt.Fprintf(w, "arkhe %s\n", b.Version)
	switch {
	case b.Commit == "":
		fmt.Fprintf(w, "  commit      unknown (built without version control information)\n")
	default:
		line := b.Commit
		if b.Modified {
			line += " (modified: built with uncommitted changes)"
		}
		if b.Time != "" {
			line += ", committed " + b.Time
		}
		fmt.Fprintf(w, "  commit      %s\n", line)
	}
	fmt.Fprintf(w, "  go          %s %s/%s\n", b.Go, runtime.GOOS, runtime.GOARCH)

	dataDir := c.String("data-dir")
	if dataDir == "" {
		d, err := localpg.DefaultDataDir()
		if err != nil {
			return err
		}
		dataDir = d
	}
	srv, err := localpg.FindEmbeddedServer(c.Context, dataDir)
	if err != nil {
		fmt.Fprintf(w, "  postgresql  not found: %v\n", err)
	} else {
		fmt.Fprintf(w, "  postgresql  %s (server binaries in %s)\n", srv.Version, srv.BinDir)
		if srv.Running && srv.Changed != "" {
			started := srv.Started.Version
			if started == "" {
				started = "an unrecorded version"
			}
			fmt.Fprintf(w, "  running     PostgreSQL %s, the embedded server in %s, not the installed binaries: %s; the next command restarts it\n",
				started, srv.ClusterDir, srv.Changed)
		}
	}
	printDatabase(w, c.String("database-url"), os.Getenv, srv)
	return nil
}

// printDatabase prints which database the other commands would use, in the order they
// resolve it: --database-url (or ARKHE_DATABASE_URL), else the libpq environment (PGHOST,
// PGDATABASE, PGSERVICE), else the embedded cluster. A password is never printed.
func printDatabase(w io.Writer, databaseURL string, getenv func(string) string, srv localpg.EmbeddedServer) {
	if databaseURL != "" {
		fmt.Fprintf(w, "  database    %s (not contacted)\n", redactURL(databaseURL))
		return
	}
	var libpq []string
	for _, k := range []string{"PGHOST", "PGDATABASE", "PGSERVICE"} {
		if v := getenv(k); v != "" {
			libpq = append(libpq, k+"="+v)
		}
	}
	if len(libpq) > 0 {
		fmt.Fprintf(w, "  database    from the libpq environment, %s (not contacted)\n", strings.Join(libpq, " "))
		return
	}
	state := "not created yet"
	if srv.ClusterMajor > 0 {
		state = fmt.Sprintf("a PostgreSQL %d data directory; not started by this command", srv.ClusterMajor)
	}
	fmt.Fprintf(w, "  database    the embedded cluster in %s (%s)\n", srv.ClusterDir, state)
}

// keywordPassword finds the password of a keyword/value connection string
// ("host=db password=secret", "password='a b'").
var keywordPassword = regexp.MustCompile(`password\s*=\s*('(?:[^'\\]|\\.)*'|\S+)`)

// redactURL returns a connection string with its password replaced by "xxxxx": the user
// information of a URL, a password query parameter, or a keyword/value password.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Opaque != "" {
		return keywordPassword.ReplaceAllString(s, "password=xxxxx")
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}
