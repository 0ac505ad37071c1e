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
	"strings"
)

// StopEmbedded stops the embedded cluster in "<dataDir>/pg" if it is running (it starts again
// on demand at the next command) and reports whether it was running. A data dir without a
// running server is not an error.
func StopEmbedded(ctx context.Context, dataDir string) (wasRunning bool, err error) {
	pgDir := filepath.Join(dataDir, "pg")
	if _, err := os.Stat(filepath.Join(pgDir, "postmaster.pid")); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	c, err := StartCluster(ctx, ClusterConfig{DataDir: pgDir, Persistent: true})
	if err != nil {
		return false, err
	}
	return true, c.Stop(ctx)
}

// EmbeddedServer describes the PostgreSQL server binaries the embedded cluster in
// "<dataDir>/pg" would run, found without starting or contacting anything.
type EmbeddedServer struct {
	// ClusterDir is "<dataDir>/pg".
	ClusterDir string
	// ClusterMajor is the major version in the cluster's PG_VERSION; 0 when no cluster
	// has been created there yet.
	ClusterMajor int
	// BinDir holds initdb, pg_ctl and postgres, e.g. "/usr/lib/postgresql/15/bin".
	BinDir string
	// Version is the output of `postgres --version` without "postgres (PostgreSQL) ", e.g.
	// "15.14 (Debian 15.14-0+deb12u1)".
	Version string
}

// FindEmbeddedServer finds the server binaries StartCluster would use for the embedded
// cluster in "<dataDir>/pg": those of the cluster's own major version when it exists,
// else the first PostgreSQL 14 or later of /usr/lib/postgresql/<major>/bin (highest
// first), `pg_config --bindir` and PATH. It runs `postgres --version` and nothing else:
// no server is started and no database is contacted. When no binaries fit, the error
// lists what was tried; the returned value still carries ClusterDir and ClusterMajor.
func FindEmbeddedServer(ctx context.Context, dataDir string) (EmbeddedServer, error) {
	s := EmbeddedServer{ClusterDir: filepath.Join(dataDir, "pg")}
	major, err := dataDirMajor(s.ClusterDir)
	if err != nil {
		return s, err
	}
	s.ClusterMajor = major
	if s.BinDir, _, err = findBinDir(ctx, "", major); err != nil {
		return s, err
	}
	out, err := exec.CommandContext(ctx, filepath.Join(s.BinDir, "postgres"), "--version").Output()
	if err != nil {
		return s, fmt.Errorf("%s/postgres --version: %w", s.BinDir, err)
	}
	s.Version = strings.TrimPrefix(string(bytes.TrimSpace(out)), "postgres (PostgreSQL) ")
	return s, nil
}
