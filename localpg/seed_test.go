package localpg

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestMain removes the seed cluster (seedDataDir) when the tests are done.
func TestMain(m *testing.M) {
	code := m.Run()
	os.RemoveAll(seedRoot())
	os.Exit(code)
}

// seedRoot holds this test binary's seed cluster: /tmp/arkhe-localpg-seed-<pid>.
func seedRoot() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("arkhe-localpg-seed-%d", os.Getpid()))
}

// seedDataDir makes, once per test binary, a throw-away cluster with initdb as StartCluster
// does (same binaries, arguments and owner) and never starts it. A test that is not about
// creating a cluster starts from a copy of it (seededDataDir) instead of running initdb.
var seedDataDir = sync.OnceValues(func() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := filepath.Join(seedRoot(), "pg")
	if err := os.MkdirAll(seedRoot(), 0o755); err != nil {
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

// seededDataDir returns a new data directory under t.TempDir holding a copy of the seed
// cluster: made, never started, as StartCluster's initdb leaves one.
func seededDataDir(t *testing.T) string {
	t.Helper()
	seed, err := seedDataDir()
	if err != nil {
		t.Fatalf("seed cluster: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "pg")
	user, err := currentServerUser()
	if err != nil {
		t.Fatal(err)
	}
	if err := copyTree(seed, dir, user); err != nil {
		t.Fatalf("copy the seed cluster %s: %v", seed, err)
	}
	if major, err := dataDirMajor(dir); err != nil || major == 0 {
		t.Fatalf("copy of the seed cluster in %s: PG_VERSION major %d, %v", dir, major, err)
	}
	return dir
}

// copyTree copies the directory tree src to dst (which must not exist): directories, regular
// files and symbolic links with their permission bits, each given to the server account as
// initdb's files are (root only).
func copyTree(src, dst string, owner serverUser) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.Mkdir(target, fi.Mode().Perm()); err != nil {
				return err
			}
			if err := os.Chmod(target, fi.Mode().Perm()); err != nil { // past the umask
				return err
			}
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			if err := os.Symlink(link, target); err != nil {
				return err
			}
		case d.Type().IsRegular():
			if err := copyFile(path, target, fi.Mode().Perm()); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: not a directory, regular file or symbolic link", path)
		}
		return owner.chown(target)
	})
}

// copyFile copies the regular file src to the new file dst with permission bits perm.
func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Chmod(perm); err != nil { // past the umask
		out.Close()
		return err
	}
	return out.Close()
}
