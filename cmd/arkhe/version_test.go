package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// TestVersion: arkhe --version, -V and arkhe version print the same: version, commit, Go, the
// PostgreSQL server binaries the embedded default would use (the version their postgres
// reports) and the database, without starting or contacting anything.
func TestVersion(t *testing.T) {
	for _, k := range []string{"PGHOST", "PGDATABASE", "PGSERVICE", "ARKHE_DATABASE_URL", "ARKHE_DATA_DIR"} {
		t.Setenv(k, "")
	}
	dataDir := filepath.Join(t.TempDir(), "data")
	code, out, errOut := cliRun(t, "--data-dir", dataDir, "--version")
	if code != 0 || errOut != "" {
		t.Fatalf("--version: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, args := range [][]string{{"--data-dir", dataDir, "-V"}, {"--data-dir", dataDir, "version"}, {"version", "--data-dir", dataDir},
		{"--data-dir", dataDir, "mint", "--client", "c", "m.csv", "--version"}} { // --version wins; nothing runs
		if c, o, e := cliRun(t, args...); c != 0 || o != out {
			t.Errorf("arkhe %s: exit %d, output differs from --version:\n%s\n%s", strings.Join(args, " "), c, o, e)
		}
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "arkhe ") {
		t.Fatalf("--version: want 5 lines starting with \"arkhe \":\n%s", out)
	}
	bi, _ := debug.ReadBuildInfo()
	if b := readBuildInfo(bi, version, commit); lines[0] != "arkhe "+b.Version {
		t.Errorf("first line %q, want %q", lines[0], "arkhe "+b.Version)
	}
	if want := "  go          " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH; lines[2] != want {
		t.Errorf("go line %q, want %q", lines[2], want)
	}
	// the PostgreSQL line: the version that the named directory's postgres reports
	m := regexp.MustCompile(`^  postgresql  (\d+\.\d+.*) \(server binaries in (/\S+)\)$`).FindStringSubmatch(lines[3])
	if m == nil {
		t.Fatalf("postgresql line %q (the tests need PostgreSQL server binaries)", lines[3])
	}
	pgv, err := exec.Command(filepath.Join(m[2], "postgres"), "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(pgv)); got != "postgres (PostgreSQL) "+m[1] {
		t.Errorf("postgresql line says %q; %s/postgres --version says %q", m[1], m[2], got)
	}
	if want := "  database    the embedded cluster in " + filepath.Join(dataDir, "pg") + " (not created yet)"; lines[4] != want {
		t.Errorf("database line %q, want %q", lines[4], want)
	}
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Errorf("--version created the data directory: %v", err)
	}

	// a database URL is named (its password hidden), never contacted: this host does not exist
	code, out, errOut = cliRun(t, "--database-url", "postgres://ark:s3cret@db.invalid:5433/ledger?sslmode=require", "--version")
	if code != 0 || !strings.Contains(out, "  database    postgres://ark:xxxxx@db.invalid:5433/ledger?sslmode=require (not contacted)\n") ||
		strings.Contains(out+errOut, "s3cret") {
		t.Errorf("--version with a URL: exit %d\n%s\n%s", code, out, errOut)
	}
	t.Setenv("PGHOST", "/nonexistent-socket-dir")
	code, out, _ = cliRun(t, "--version")
	if code != 0 || !strings.Contains(out, "  database    from the libpq environment, PGHOST=/nonexistent-socket-dir (not contacted)\n") {
		t.Errorf("--version with PGHOST: exit %d\n%s", code, out)
	}
	if code, _, errOut := cliRun(t, "version", "extra"); code != 2 || !strings.Contains(errOut, `version: unexpected argument "extra"`) {
		t.Errorf("version extra: exit %d %s", code, errOut)
	}
}

// TestReadBuildInfo: version and commit come from the build information the Go toolchain
// stamps (module version, vcs.revision, vcs.modified, vcs.time); -X main.version and
// -X main.commit override them.
func TestReadBuildInfo(t *testing.T) {
	t.Parallel()
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/arkhe-ledger/arkhe", Version: "v0.0.0-20261201083925-4902ebd03e21+dirty"},
		Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "4902ebd03e2150eed636b3787554e009b3c726ab"},
			{Key: "vcs.time", Value: "2026-12-01T08:39:25Z"}, {Key: "vcs.modified", Value: "true"}}}
	got := readBuildInfo(bi, "", "")
	want := buildInfo{Version: "v0.0.0-20261201083925-4902ebd03e21+dirty", Commit: "4902ebd03e2150eed636b3787554e009b3c726ab",
		Modified: true, Time: "2026-12-01T08:39:25Z", Go: "go1.26.8"}
	if got != want {
		t.Errorf("stamped: %+v, want %+v", got, want)
	}
	got = readBuildInfo(bi, "1.2.0", "abc1234")
	want = buildInfo{Version: "1.2.0", Commit: "abc1234", Go: "go1.26.8"}
	if got != want {
		t.Errorf("overridden: %+v, want %+v", got, want)
	}
	got = readBuildInfo(nil, "", "")
	if got.Version != "(devel)" || got.Commit != "" || got.Go != runtime.Version() {
		t.Errorf("no build information: %+v", got)
	}
	got = readBuildInfo(&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.modified", Value: "false"}}}, "", "")
	if got.Version != "(devel)" || got.Modified {
		t.Errorf("unmodified devel build: %+v", got)
	}
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"postgres://ark:pw@db:5432/ledger":            "postgres://ark:xxxxx@db:5432/ledger",
		"postgres://ark@db/ledger?password=pw":        "postgres://ark@db/ledger?password=xxxxx",
		"postgresql:///ledger?host=/run/postgresql":   "postgresql:///ledger?host=/run/postgresql",
		"host=db user=ark password=pw dbname=ledger":  "host=db user=ark password=xxxxx dbname=ledger",
		"host=db password = 'a b\\' c' dbname=ledger": "host=db password=xxxxx dbname=ledger",
		"dbname=ledger": "dbname=ledger",
		"postgres://ark:p%40ss@db/ledger?sslmode=allow": "postgres://ark:xxxxx@db/ledger?sslmode=allow",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestVersionNamesTheRunningServer: when the embedded server runs other binaries than those
// installed (its record says it was started from another postgres file, as before a package
// upgrade), --version prints the version it runs beside the installed one and that the next
// command restarts it. The server here is this test process, named by a postmaster.pid.
func TestVersionNamesTheRunningServer(t *testing.T) {
	for _, k := range []string{"PGHOST", "PGDATABASE", "PGSERVICE", "ARKHE_DATABASE_URL", "ARKHE_DATA_DIR"} {
		t.Setenv(k, "")
	}
	dataDir := t.TempDir()
	pg := filepath.Join(dataDir, "pg")
	if err := os.Mkdir(pg, 0o700); err != nil {
		t.Fatal(err)
	}
	_, out, _ := cliRun(t, "--data-dir", dataDir, "--version")
	m := regexp.MustCompile(`(?m)^  postgresql  (\d+)\.\d+.* \(server binaries in (/\S+)\)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no postgresql line:\n%s", out)
	}
	pid := strings.Join([]string{strconv.Itoa(os.Getpid()), pg, "1", "5432", "/tmp", "*", "1 1", "ready", ""}, "\n")
	for name, body := range map[string]string{
		"pg/PG_VERSION":     m[1] + "\n",
		"pg/postmaster.pid": pid,
		"pg.binaries":       "bindir=" + m[2] + "\nversion=" + m[1] + ".0 (an older build)\nidentity=dev 0 ino 0 size 0 mtime 0\n",
	} {
		if err := os.WriteFile(filepath.Join(dataDir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := cliRun(t, "--data-dir", dataDir, "--version")
	want := "  running     PostgreSQL " + m[1] + ".0 (an older build), the embedded server in " + pg + ", not the installed binaries: " +
		m[2] + "/postgres was replaced since it started (from PostgreSQL " + m[1] + ".0 (an older build)); the next command restarts it\n"
	if code != 0 || !strings.Contains(out, want) {
		t.Errorf("--version: exit %d\n%s\nwant the line %q\n%s", code, out, want, errOut)
	}
}
