package localpg

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakefileServerDevIsPinned runs the Makefile's pg-server-dev target (what `make citus`
// installs to build Citus) with stand-ins for dpkg-query, apt-cache, apt-get and sudo on PATH
// (no package is installed): it installs postgresql-server-dev-<major> at exactly the installed
// server's version, never an unpinned one that would upgrade the server under its running
// clusters, and refuses, installing nothing, when apt no longer offers that version or the
// server is no Debian package.
func TestMakefileServerDevIsPinned(t *testing.T) {
	t.Parallel()
	stub := t.TempDir()
	for name, body := range map[string]string{
		"dpkg-query": `[ -n "$STUB_SERVER" ] || exit 1; case "$*" in *postgresql-15) printf %s "$STUB_SERVER";; *) exit 1;; esac`,
		"apt-cache":  `for v in $STUB_OFFERED; do echo " postgresql-server-dev-15 | $v | http://deb.debian.org/debian bookworm/main amd64 Packages"; done`,
		"apt-get":    `echo "apt-get $*" >> "$STUB_LOG"`,
		"sudo":       `exec "$@"`,
	} {
		if err := os.WriteFile(filepath.Join(stub, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name, server, offered string
		ok                    bool
		installs, stderr      string
	}{
		{"the server's version offered", "15.18-0+deb12u1", "15.20-0+deb12u1 15.18-0+deb12u1", true,
			"apt-get install -y -qq -o DPkg::Lock::Timeout=600 postgresql-server-dev-15=15.18-0+deb12u1 libzstd-dev libkrb5-dev", ""},
		{"only a newer version offered", "15.18-0+deb12u1", "15.20-0+deb12u1", false, "",
			"pg-server-dev: apt offers no postgresql-server-dev-15 15.18-0+deb12u1, the installed server's version; installing another would upgrade the server under its running clusters."},
		{"no server package", "", "15.20-0+deb12u1", false, "",
			"pg-server-dev: postgresql-15 is not installed as a Debian package"},
	} {
		log := filepath.Join(t.TempDir(), "apt.log")
		cmd := exec.Command("make", "-s", "--no-print-directory", "-C", "..", "pg-server-dev", "PG_MAJOR=15")
		cmd.Env = append(os.Environ(), "PATH="+stub+":"+os.Getenv("PATH"), "STUB_SERVER="+c.server,
			"STUB_OFFERED="+c.offered, "STUB_LOG="+log, "MAKEFLAGS=")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		calls, _ := os.ReadFile(log)
		var installs []string
		for _, l := range strings.Split(string(calls), "\n") {
			if strings.HasPrefix(l, "apt-get install") || strings.Contains(l, " install ") {
				installs = append(installs, l)
			}
		}
		switch {
		case (err == nil) != c.ok:
			t.Errorf("%s: make pg-server-dev: %v (want success %t)\n%s", c.name, err, c.ok, stderr.String())
		case c.ok && (len(installs) != 1 || installs[0] != c.installs):
			t.Errorf("%s: apt-get install calls %q, want exactly %q", c.name, installs, c.installs)
		case !c.ok && (len(installs) != 0 || !strings.Contains(stderr.String(), c.stderr)):
			t.Errorf("%s: installs %q (want none), stderr %q (want %q)", c.name, installs, stderr.String(), c.stderr)
		}
	}
}
