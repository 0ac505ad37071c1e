package localpg

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
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
	// Running is true when the cluster has a server running (its postmaster.pid names a live
	// process); Started is then what it was started from, when recorded (ok false: not).
	Running bool
	Started StartedFrom
	// Changed, for a running server, says why it does not run the binaries in BinDir (see
	// StartedFrom), "" when it does or that cannot be told: the next StartCluster restarts it.
	Changed string
}

// FindEmbeddedServer finds the server binaries StartCluster would use for the embedded
// cluster in "<dataDir>/pg": those of the cluster's own major version when it exists,
// else the first PostgreSQL 14 or later of /usr/lib/postgresql/<major>/bin (highest
// first), `pg_config --bindir` and PATH, and whether a server runs there and from which
// binaries. It runs `postgres --version` and nothing else: no server is started and no
// database is contacted. When no binaries fit, the error
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
	if s.Version, err = postgresVersion(ctx, s.BinDir); err != nil {
		return s, err
	}
	if pid, err := readPidFile(s.ClusterDir); err == nil && processAlive(pid.pid) {
		s.Running = true
		s.Started, _, _ = ReadStartedFrom(s.ClusterDir)
		s.Changed = binariesChanged(s.ClusterDir, s.BinDir, pid.pid)
	}
	return s, nil
}
