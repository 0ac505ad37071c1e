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

// testRoot is where the tests' clusters live: /dev/shm (a tmpfs: a copy is memory, not disk
// writes) when there is one, else the system's temporary directory.
func testRoot() string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		return "/dev/shm"
	}
	return os.TempDir()
}

// seedRoot holds the copies of the seed cluster test binary pid made, and its other clusters:
// arkhe-localpg-u<euid>-<pid> under testRoot.
func seedRoot(pid int) string {
	return filepath.Join(testRoot(), seedRootPrefix()+strconv.Itoa(pid))
}

func seedRootPrefix() string { return fmt.Sprintf("arkhe-localpg-u%d-", os.Geteuid()) }

// pruneSeedRoots removes this user's seed roots of test binaries no longer running (killed
// before their TestMain could); errors are ignored: a root left is only space.
func pruneSeedRoots() {
	dirs, _ := filepath.Glob(filepath.Join(testRoot(), seedRootPrefix()+"*"))
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

// seedDataDir returns a throw-away cluster made with initdb as StartCluster makes one (same
// binaries, arguments and owner), never started. It is kept in /dev/shm (or the temporary
// directory) across runs as arkhe-localpg-seed-u<uid>-pg<major>-<hash of initdb's arguments>,
// made under an exclusive lock by the first test binary that finds none (which removes seeds
// unused for a day): an initdb costs about 1.3 s of CPU time, a copy 0.1 s. A test that is not
// about creating a cluster starts from a copy of it (seededDataDir) instead of running initdb.
var seedDataDir = sync.OnceValues(func() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	user, err := currentServerUser()
	if err != nil {
		return "", err
	}
	c := &Cluster{user: user, log: io.Discard}
	if c.binDir, c.major, err = findBinDir(ctx, "", 0); err != nil {
		return "", err
	}
	dir := filepath.Join(testRoot(), fmt.Sprintf("arkhe-localpg-seed-u%d-pg%d-%s", os.Geteuid(), c.major, InitdbArgsHash()))
	c.dataDir, c.socketDir = dir, DefaultSocketDir(dir)
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDONLY, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close() // closing releases the flock
	if err := LockFile(ctx, lock, true); err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); err == nil {
		now := time.Now()
		_ = os.Chtimes(dir, now, now) // last use, for the pruning below
		return dir, nil
	}
	if err := os.RemoveAll(dir); err != nil { // an initdb killed midway leaves only <dir>.initdb
		return "", err
	}
	if err := c.initdb(ctx, false); err != nil {
		return "", err
	}
	// seeds of other versions or arguments unused for a day go; one in use is touched at every use
	RemoveIdleDataDirs(filepath.Join(testRoot(), fmt.Sprintf("arkhe-localpg-seed-u%d-*", os.Geteuid())), dir, 24*time.Hour)
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
