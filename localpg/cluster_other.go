//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package localpg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
)

// serverUser is a stand-in on systems without the POSIX process and lock calls the
// embedded cluster needs; StartCluster fails there and arkhe needs an explicit database URL.
type serverUser struct {
	name string
	uid  uint32
	drop bool
}

func currentServerUser() (serverUser, error) {
	return serverUser{}, fmt.Errorf("embedded PostgreSQL cluster: %w on this system; pass a database URL", errors.ErrUnsupported)
}

func (s serverUser) apply(cmd *exec.Cmd, newGroup bool) {}

func (s serverUser) chown(path string) error { return nil }

func (s serverUser) owns(fi fs.FileInfo) bool { return true }

func fileOwner(fi fs.FileInfo) (uint32, bool) { return 0, false }

func (s serverUser) canSearch(fi fs.FileInfo) bool { return true }

// LockFile does nothing where flock(2) is not available.
func LockFile(ctx context.Context, f *os.File, exclusive bool) error { return nil }

// TryLockFile reports false where flock(2) is not available: no lock is ever known to be held
// by this process alone.
func TryLockFile(f *os.File, exclusive bool) (bool, error) { return false, nil }

// UnlockFile does nothing where flock(2) is not available.
func UnlockFile(f *os.File) error { return nil }

// keepOwner does nothing where file owners are not Unix user IDs.
func keepOwner(path string, fi fs.FileInfo) error { return nil }

// fileID names the file fi describes; without inodes, by nothing (size and time remain).
func fileID(fi fs.FileInfo) string { return "dev ? ino ?" }

// processAlive is false where the embedded cluster cannot run.
func processAlive(pid int) bool { return false }
