package localpg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// StartedFrom is what a running server was started from: the binaries' directory, what their
// `postgres --version` said and the identity of the postgres file then. StartCluster records it
// beside the data directory ("<DataDir>.binaries") each time it starts the server, and on the
// next use compares it with the file now at that path: a package upgrade replaces the binaries
// (and the libraries they load) under a running server, whose new sessions then fail to load
// the older libraries (SQLSTATE 58P01, undefined symbol).
type StartedFrom struct {
	// BinDir holds the postgres binary the server was started from.
	BinDir string
	// Version is `postgres --version` without "postgres (PostgreSQL) ", e.g. "15.18 (Debian
	// 15.18-0+deb12u1)"; "" when unknown (a server started before arkhe recorded it).
	Version string
	// Identity names the postgres file (device, inode, size, modification time, following
	// symlinks): a file replaced or rewritten has another.
	Identity string
}

// startedFromName is the suffix of the record beside the data directory.
const startedFromName = ".binaries"

// binaryIdentity returns the identity of binDir/postgres (StartedFrom.Identity).
func binaryIdentity(binDir string) (string, error) {
	fi, err := os.Stat(filepath.Join(binDir, "postgres"))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s size %d mtime %d", fileID(fi), fi.Size(), fi.ModTime().UnixNano()), nil
}

// postgresVersion runs binDir/postgres --version and returns its output without "postgres
// (PostgreSQL) ".
func postgresVersion(ctx context.Context, binDir string) (string, error) {
	out, err := exec.CommandContext(ctx, filepath.Join(binDir, "postgres"), "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s/postgres --version: %w", binDir, err)
	}
	return strings.TrimPrefix(string(bytes.TrimSpace(out)), "postgres (PostgreSQL) "), nil
}

// recordStartedFrom writes what the server in dataDir was just started from.
func recordStartedFrom(ctx context.Context, dataDir, binDir string) error {
	id, err := binaryIdentity(binDir)
	if err != nil {
		return err
	}
	v, err := postgresVersion(ctx, binDir)
	if err != nil {
		return err
	}
	body := fmt.Sprintf("bindir=%s\nversion=%s\nidentity=%s\n", binDir, v, id)
	tmp := dataDir + startedFromName + ".tmp"
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, dataDir+startedFromName)
}

// ReadStartedFrom returns what the running server of dataDir was started from, as recorded when
// it started; ok is false when nothing is recorded.
func ReadStartedFrom(dataDir string) (s StartedFrom, ok bool, err error) {
	b, err := os.ReadFile(filepath.Clean(dataDir) + startedFromName)
	if errors.Is(err, fs.ErrNotExist) {
		return s, false, nil
	}
	if err != nil {
		return s, false, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, "=")
		switch k {
		case "bindir":
			s.BinDir = v
		case "version":
			s.Version = v
		case "identity":
			s.Identity = v
		}
	}
	return s, s.BinDir != "", nil
}

// binariesChanged reports why the server running in dataDir (postmaster PID pid) no longer runs
// the binaries in binDir, or "" when it does or this cannot be told: the recorded binaries were
// in another directory or their postgres file was replaced, or (without a record) the running
// postmaster's executable was deleted (Linux's /proc/PID/exe says so).
func binariesChanged(dataDir, binDir string, pid int) string {
	rec, ok, err := ReadStartedFrom(dataDir)
	if err == nil && ok {
		id, err := binaryIdentity(binDir)
		switch {
		case rec.BinDir != binDir:
			return fmt.Sprintf("it was started from %s, and the binaries of its version are now in %s", rec.BinDir, binDir)
		case err == nil && id != rec.Identity:
			return fmt.Sprintf("%s/postgres was replaced since it started (from PostgreSQL %s)", binDir, rec.Version)
		}
		return ""
	}
	if exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); err == nil && strings.HasSuffix(exe, " (deleted)") {
		return fmt.Sprintf("the postgres binary it runs, %s, was deleted", strings.TrimSuffix(exe, " (deleted)"))
	}
	return ""
}
