//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package report

import "os"

// lockDir is a no-op where there is no flock.
func lockDir(string) func() { return func() {} }

// lockFile is a no-op where there is no flock.
func lockFile(*os.File) {}

// heldElsewhere reports false where there is no flock: nothing is known to hold f.
func heldElsewhere(*os.File) bool { return false }

// tryLockFile reports false where there is no flock: no temporary file is known to be stale.
func tryLockFile(*os.File) bool { return false }
