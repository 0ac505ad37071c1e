package localpg

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestMain removes the seed cluster and its copies (seedRoot) when the tests are done, and
// those of test binaries that are gone.
func TestMain(m *testing.M) {
	pruneSeedRoots()
	code := m.Run()
	os.RemoveAll(seedRoot(os.Getpid()))
	os.Exit(code)
}

// seedRoot holds test binary pid's seed cluster and the copies of it,
// arkhe-localpg-u<euid>-<pid>, under /dev/shm (a tmpfs: a copy is memory, not disk writes)
// when there is one, else under the system's temporary directory.
func seedRoot(pid int) string {
	root := os.TempDir()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		root = "/dev/shm"
	}
	return filepath.Join(root, seedRootPrefix()+strconv.Itoa(pid))
}

func seedRootPrefix() string { return fmt.Sprintf("arkhe-localpg-u%d-", os.Geteuid()) }

// pruneSeedRoots removes this user's seed roots of test binaries no longer running (killed
// before their TestMain could); errors are ignored: a root left is only space.
func pruneSeedRoots() {
	dirs, _ := filepath.Glob(filepath.Join(filepath.Dir(seedRoot(0)), seedRootPrefix()+"*"))
	for _, dir := range dirs {
		pid, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(dir), seedRootPrefix()))
		if err != nil || pid == os.Getpid() {
			continue
		}
		if p, err := os.FindProcess(pid); err == nil && p.Signal(syscall.Signal(0)) == nil {
			continue // still running
		}
		os.RemoveAll(dir)
	}
}

// seedDataDir makes, once per test binary, a throw-away cluster with initdb as StartCluster
// does (same binaries, arguments and owner) and never starts it. A test that is not about
// creating a cluster starts from a copy of it (seededDataDir) instead of running initdb.
var seedDataDir = sync.OnceValues(func() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := filepath.Join(seedRoot(os.Getpid()), "seed")
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	user, err := currentServerUser()
	if err != nil {
		return "", err
	}
	c := &Cluster{dataDir: dir, socketDir: DefaultSocketDir(dir), user: user, log: io.Discard}
	if c.binDir, c.major, err = findBinDir(ctx, "", 0); err != nil {
		return "", err
	}
	if err := c.initdb(ctx, false); err != nil {
		return "", err
	}
	return dir, nil
})

// seededDataDir returns a new data directory beside the seed cluster holding a copy of it
// (made, never started, as StartCluster's initdb leaves one), removed when t ends.
func seededDataDir(t *testing.T) string {
	t.Helper()
	seed, err := seedDataDir()
	if err != nil {
		t.Fatalf("seed cluster: %v", err)
	}
	dir := filepath.Join(shmTempDir(t), "pg") // removed after the cluster's stop, registered later
	if err := CopyDataDir(seed, dir); err != nil {
		t.Fatalf("copy the seed cluster %s: %v", seed, err)
	}
	if major, err := dataDirMajor(dir); err != nil || major == 0 {
		t.Fatalf("copy of the seed cluster in %s: PG_VERSION major %d, %v", dir, major, err)
	}
	return dir
}

// shmTempDir returns a new directory, readable by the server account, under this test binary's
// directory in /dev/shm (where the seed lives), removed when t ends: a cluster made there by
// initdb costs less CPU than on a disk-backed t.TempDir, and its fsyncs cost nothing.
func shmTempDir(t *testing.T) string {
	t.Helper()
	root := seedRoot(os.Getpid())
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(root, "test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
