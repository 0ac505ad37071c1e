package report

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The temporary files of an output: every file arkhe writes atomically (a report, a mint map,
// a reject file) is written first as ".NAME.tmp-DIGITS" beside its final path NAME and renamed
// into place when complete. A run that is killed cannot remove its temporary file, so the next
// writer of the same path removes it: each writer holds an advisory lock (flock) on its
// temporary file for as long as it has it open, and a temporary file of the path that nobody
// holds belongs to a run that is gone. Creating and sweeping happen under a lock of the
// directory, so a sweep never takes a file that a live writer has created but not yet locked.
// Several runs writing the same path at once each keep their own file (the last rename wins).
// Where the system has no flock (not Linux or a BSD) nothing is swept.

// CreateTemp creates the temporary file of the output at path, in path's directory, named
// ".NAME.tmp-DIGITS" (mode 0600), and locks it until it is closed; first it removes the
// temporary files of path that no live process holds (left by a killed run). The caller renames
// it to path when it is complete, or removes it. Errors wrap the *fs.PathError of the create.
func CreateTemp(path string) (*os.File, error) {
	dir, base, err := splitOutput(path)
	if err != nil {
		return nil, err
	}
	unlock := lockDir(dir)
	defer unlock()
	sweepTemps(dir, base)
	f, err := os.CreateTemp(dir, tempPrefix(base)+"*")
	if err != nil {
		return nil, err
	}
	lockFile(f)
	return f, nil
}

// RemoveStaleTemps removes the temporary files of the output at path that no live process
// holds: what a killed run left, for a writer that has nothing to write this time.
func RemoveStaleTemps(path string) error {
	dir, base, err := splitOutput(path)
	if err != nil {
		return err
	}
	unlock := lockDir(dir)
	defer unlock()
	sweepTemps(dir, base)
	return nil
}

// ErrTempBusy is wrapped by OpenTemp when a live process holds the temporary file: another run
// is writing the same output.
var ErrTempBusy = errors.New("another run is writing it")

// OpenTemp opens the temporary file tmp of an output that has one fixed temporary name (a reject
// file's PATH.tmp), creating it (mode 0644) or taking over and emptying the one a killed run
// left, and locks it until it is closed. A file that a live process holds is refused
// (ErrTempBusy), so two runs never write one file. Other errors wrap the *fs.PathError.
func OpenTemp(tmp string) (*os.File, error) {
	dir, _, err := splitOutput(tmp)
	if err != nil {
		return nil, err
	}
	unlock := lockDir(dir)
	defer unlock()
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if heldElsewhere(f) {
		_ = f.Close()
		return nil, fmt.Errorf("%s: %w", tmp, ErrTempBusy)
	}
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		if err := f.Truncate(0); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	return f, nil
}

// RemoveStaleTemp removes the fixed temporary file tmp (see OpenTemp) unless a live process
// holds it: what a killed run left, for a writer that has nothing to write this time.
func RemoveStaleTemp(tmp string) {
	dir, _, err := splitOutput(tmp)
	if err != nil {
		return
	}
	unlock := lockDir(dir)
	defer unlock()
	f, err := os.Open(tmp)
	if err != nil {
		return
	}
	if tryLockFile(f) {
		_ = os.Remove(tmp)
	}
	_ = f.Close()
}

// isTemp reports whether name (a file name without directory) is the name of a temporary file of
// the output named base.
func isTemp(name, base string) bool {
	digits, ok := strings.CutPrefix(name, tempPrefix(base))
	if !ok || digits == "" {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// tempPrefix is the name of base's temporary files up to their digits.
func tempPrefix(base string) string { return "." + base + ".tmp-" }

// splitOutput splits an output path into its directory ("." for none) and file name.
func splitOutput(path string) (dir, base string, err error) {
	dir, base = filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if base == "" {
		return "", "", fmt.Errorf("%q: no file name", path)
	}
	return dir, base, nil
}

// sweepTemps removes the temporary files of base in dir that no process holds locked. A file
// it cannot open, lock or remove is left alone: it is someone's, or beyond this run's rights.
func sweepTemps(dir, base string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !isTemp(e.Name(), base) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		if tryLockFile(f) {
			_ = os.Remove(p)
		}
		_ = f.Close()
	}
}
