package localpg

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBinariesReplacedUnderRunningServer: the server is started from a directory of its own
// (links to the installed binaries), and StartCluster records what started it; reusing it
// changes nothing. Then the postgres file at that path is replaced, as a package upgrade
// replaces it: the next StartCluster says so, restarts the server (another postmaster) and
// records the new file; the one after reuses it.
func TestBinariesReplacedUnderRunningServer(t *testing.T) {
	ctx := context.Background()
	real, _, err := ServerBinaries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	root := shmTempDir(t)
	bin := filepath.Join(root, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(real)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Symlink(filepath.Join(real, e.Name()), filepath.Join(bin, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	var log bytes.Buffer
	cfg := ClusterConfig{DataDir: seededDataDir(t), BinDir: bin, Log: &log}
	c := startTestCluster(t, cfg)
	version, err := postgresVersion(ctx, real)
	if err != nil {
		t.Fatal(err)
	}
	rec, ok, err := ReadStartedFrom(cfg.DataDir)
	if err != nil || !ok || rec.BinDir != bin || rec.Version != version || !strings.Contains(rec.Identity, " size ") {
		t.Fatalf("recorded %+v, %t, %v; want bin dir %s, version %s", rec, ok, err, bin, version)
	}
	pid := func() int {
		t.Helper()
		p, err := readPidFile(c.DataDir())
		if err != nil {
			t.Fatal(err)
		}
		return p.pid
	}
	first := pid()
	again := func() *Cluster {
		t.Helper()
		log.Reset()
		c2, err := StartCluster(ctx, cfg)
		if err != nil {
			t.Fatalf("StartCluster: %v\n%s", err, log.String())
		}
		return c2
	}
	if c2 := again(); !c2.Reused() || pid() != first || strings.Contains(log.String(), "restarting") {
		t.Fatalf("reuse with the binaries unchanged: reused %t, postmaster %d (was %d)\n%s", c2.Reused(), pid(), first, log.String())
	}

	// the upgrade: another file at the path the server was started from
	upgraded := filepath.Join(root, "upgraded")
	if err := os.Mkdir(upgraded, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := copyFile(filepath.Join(real, "postgres"), filepath.Join(upgraded, "postgres"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(bin, "postgres")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(upgraded, "postgres"), filepath.Join(bin, "postgres")); err != nil {
		t.Fatal(err)
	}
	why := binariesChanged(cfg.DataDir, bin, first)
	if want := bin + "/postgres was replaced since it started (from PostgreSQL " + version + ")"; why != want {
		t.Errorf("binariesChanged: %q, want %q", why, want)
	}
	c2 := again()
	if want := "does not run the installed binaries: " + why + "; restarting it"; c2.Reused() || pid() == first || !strings.Contains(log.String(), want) {
		t.Errorf("after the replacement: reused %t, postmaster %d (was %d); log:\n%s\nwant %q", c2.Reused(), pid(), first, log.String(), want)
	}
	if got := queryString(t, c2.URL("postgres"), "select 'up'"); got != "up" {
		t.Errorf("after the restart: %q", got)
	}
	now, _, _ := ReadStartedFrom(cfg.DataDir)
	if id, _ := binaryIdentity(bin); now.Identity != id || now.Identity == rec.Identity {
		t.Errorf("recorded identity %q after the restart, want the new file's %q (was %q)", now.Identity, id, rec.Identity)
	}
	second := pid()
	if c3 := again(); !c3.Reused() || pid() != second {
		t.Errorf("reuse after the restart: reused %t, postmaster %d (was %d)\n%s", c3.Reused(), pid(), second, log.String())
	}
}

// TestFindEmbeddedServerNamesTheRunningVersion: for a running embedded server started from
// other binaries than the installed ones, FindEmbeddedServer gives the version it was started
// from beside the installed one, and why they differ; for one started from them, no difference.
func TestFindEmbeddedServerNamesTheRunningVersion(t *testing.T) {
	ctx := context.Background()
	c := startTestCluster(t, ClusterConfig{DataDir: seededDataDir(t)}) // "<data dir>/pg"
	dataDir := filepath.Dir(c.DataDir())
	s, err := FindEmbeddedServer(ctx, dataDir)
	if err != nil || !s.Running || s.Started.Version != s.Version || s.Started.BinDir != s.BinDir || s.Changed != "" {
		t.Fatalf("FindEmbeddedServer of a server started from the installed binaries: %+v, %v", s, err)
	}
	// what an older package's start recorded
	old := "bindir=" + s.BinDir + "\nversion=15.0 (an older build)\nidentity=dev 0 ino 0 size 0 mtime 0\n"
	if err := os.WriteFile(c.DataDir()+startedFromName, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = FindEmbeddedServer(ctx, dataDir)
	want := s.BinDir + "/postgres was replaced since it started (from PostgreSQL 15.0 (an older build))"
	if err != nil || !s.Running || s.Started.Version != "15.0 (an older build)" || s.Changed != want {
		t.Errorf("FindEmbeddedServer after an upgrade: %+v, %v; want Changed %q", s, err, want)
	}
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if s, err = FindEmbeddedServer(ctx, dataDir); err != nil || s.Running || s.Changed != "" {
		t.Errorf("FindEmbeddedServer of a stopped cluster: %+v, %v", s, err)
	}
}
