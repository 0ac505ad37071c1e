//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package report

import (
	"os"
	"syscall"
)

// lockDir takes the exclusive lock of directory dir (blocking) and returns its release; a
// directory that cannot be opened or locked is not locked (the release is then a no-op).
func lockDir(dir string) (unlock func()) {
	d, err := os.Open(dir)
	if err != nil {
		return func() {}
	}
	if err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX); err != nil {
		_ = d.Close()
		return func() {}
	}
	return func() { _ = d.Close() } // closing releases the lock
}

// lockFile takes the exclusive lock of f, held until f is closed; a file system without locks
// leaves it unlocked (a sweep then cannot lock-test it either: see tryLockFile).
func lockFile(f *os.File) {
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// heldElsewhere locks f and reports whether that failed because another process holds it (a
// file system without locks reports false: nothing is known to hold it).
func heldElsewhere(f *os.File) bool {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == syscall.EWOULDBLOCK
}

// tryLockFile reports whether f could be locked: no live process holds it.
func tryLockFile(f *os.File) bool {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}
