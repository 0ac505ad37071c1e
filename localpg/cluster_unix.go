//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package localpg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
	"time"
)

// serverUser is the account the PostgreSQL binaries run as: the current user, or the
// `postgres` account when the current process is root (initdb and postgres refuse
// to run as root).
type serverUser struct {
	name string
	uid  uint32
	gid  uint32
	drop bool // true when running as root: children run as uid/gid
}

// currentServerUser returns the account the cluster's processes run as.
func currentServerUser() (serverUser, error) {
	if os.Geteuid() != 0 {
		name := strconv.Itoa(os.Geteuid())
		if u, err := user.Current(); err == nil {
			name = u.Username
		}
		return serverUser{name: name, uid: uint32(os.Geteuid()), gid: uint32(os.Getegid())}, nil
	}
	u, err := user.Lookup(clusterSuperuser)
	if err != nil {
		return serverUser{}, fmt.Errorf("running as root needs the %q account to run PostgreSQL: %w", clusterSuperuser, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return serverUser{}, fmt.Errorf("user %q: uid %q: %w", u.Username, u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return serverUser{}, fmt.Errorf("user %q: gid %q: %w", u.Username, u.Gid, err)
	}
	return serverUser{name: u.Username, uid: uint32(uid), gid: uint32(gid), drop: true}, nil
}

// apply makes cmd run as s; newGroup puts it in its own process group so a terminal's
// Ctrl-C aimed at arkhe does not also reach a daemonized postmaster.
func (s serverUser) apply(cmd *exec.Cmd, newGroup bool) {
	attr := &syscall.SysProcAttr{Setpgid: newGroup}
	if s.drop {
		attr.Credential = &syscall.Credential{Uid: s.uid, Gid: s.gid, Groups: []uint32{}}
	}
	cmd.SysProcAttr = attr
}

// chown gives path to s when running as root; otherwise it does nothing.
func (s serverUser) chown(path string) error {
	if !s.drop {
		return nil
	}
	if err := os.Lchown(path, int(s.uid), int(s.gid)); err != nil {
		return fmt.Errorf("chown %s to %s: %w", path, s.name, err)
	}
	return nil
}

// owns reports whether fi belongs to s.
func (s serverUser) owns(fi fs.FileInfo) bool {
	owner, ok := fileOwner(fi)
	return ok && owner == s.uid
}

// fileOwner returns the owner's uid of fi; false when the system does not say.
func fileOwner(fi fs.FileInfo) (uint32, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Uid, true
}

// canSearch reports whether s may traverse the directory fi by its mode bits.
func (s serverUser) canSearch(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	m := fi.Mode().Perm()
	switch {
	case s.uid == 0:
		return true
	case st.Uid == s.uid:
		return m&0o100 != 0
	case st.Gid == s.gid:
		return m&0o010 != 0
	default:
		return m&0o001 != 0
	}
}

// LockFile takes a flock(2) on f, exclusive or shared, polling until ctx is done; f holds no
// lock when it is called. flock locks belong to the open file description, so two opens in one
// process exclude each other too. UnlockFile (or closing f) releases it.
func LockFile(ctx context.Context, f *os.File, exclusive bool) error {
	for {
		if ok, err := TryLockFile(f, exclusive); ok || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("lock %s: waiting for another process: %w", f.Name(), ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TryLockFile takes a flock(2) on f like LockFile but never waits: it reports false when
// another open file description holds a conflicting lock.
func TryLockFile(f *os.File, exclusive bool) (bool, error) {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		case !errors.Is(err, syscall.EINTR):
			return false, fmt.Errorf("lock %s: %w", f.Name(), err)
		}
	}
}

// UnlockFile releases the flock(2) LockFile took on f.
func UnlockFile(f *os.File) error {
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_UN); err != nil {
		return fmt.Errorf("unlock %s: %w", f.Name(), err)
	}
	return nil
}

// keepOwner gives path the owner of fi (the file it was copied from) when running as root;
// otherwise it does nothing.
func keepOwner(path string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || os.Geteuid() != 0 {
		return nil
	}
	if err := os.Lchown(path, int(st.Uid), int(st.Gid)); err != nil {
		return fmt.Errorf("chown %s: %w", path, err)
	}
	return nil
}

// fileID names the file fi describes by device and inode.
func fileID(fi fs.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf("dev %d ino %d", st.Dev, st.Ino)
	}
	return "dev ? ino ?"
}

// processAlive reports whether a process with pid exists (signal 0; EPERM: it exists, as
// another user's).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
