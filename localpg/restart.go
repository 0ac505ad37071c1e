package localpg

import (
	"context"
	"fmt"
)

// StopMode is how Restart stops a server (pg_ctl stop -m).
type StopMode string

// Stop modes. StopFast disconnects every session (SQLSTATE 57P01) and shuts down cleanly;
// StopImmediate makes every server process quit at once, like a crash: sessions see their
// connection reset, and the next start runs crash recovery.
const (
	StopFast      StopMode = "fast"
	StopImmediate StopMode = "immediate"
)

// Restart stops the running server with mode and starts it again with the settings it has,
// on the same socket and port; it returns once the server accepts connections. It is for
// tests of clients that must ride out a restart. Bounded by ctx and by 3 minutes; errors are
// *ClusterError carrying the server log tail.
func (c *Cluster) Restart(ctx context.Context, mode StopMode) error {
	if mode != StopFast && mode != StopImmediate {
		return &ClusterError{Op: "restart", DataDir: c.dataDir, Err: fmt.Errorf("stop mode %q: want fast or immediate", mode)}
	}
	ctx, cancel := context.WithTimeout(ctx, clusterTimeout)
	defer cancel()
	unlock, err := c.lock(ctx)
	if err != nil {
		return &ClusterError{Op: "lock", DataDir: c.dataDir, Err: err}
	}
	defer unlock()
	if err := c.restartLocked(ctx, mode); err != nil {
		return err
	}
	if err := c.awaitReady(ctx, c.Settings()); err != nil {
		return err
	}
	c.recordStartedFrom(ctx)
	return nil
}

// restartLocked stops the server with mode and starts it again; the caller holds the start lock
// and awaits readiness.
func (c *Cluster) restartLocked(ctx context.Context, mode StopMode) error {
	logFile := c.LogFile()
	logStart := fileSize(logFile)
	fmt.Fprintf(c.log, "restarting PostgreSQL server in %s (stop mode %s)\n", c.dataDir, mode)
	if out, err := c.run(ctx, logOutput, "pg_ctl", "stop", "-D", c.dataDir, "-m", string(mode), "-w", "-s", "-t", timeoutSeconds(ctx)); err != nil {
		return &ClusterError{Op: "stop", DataDir: c.dataDir, Err: fmt.Errorf("%w: %s", err, out), LogTail: logTail(logFile, logStart)}
	}
	if out, err := c.run(ctx, logOutput|ownGroup, "pg_ctl", "start", "-D", c.dataDir, "-l", logFile, "-w", "-s", "-t", timeoutSeconds(ctx)); err != nil {
		return &ClusterError{Op: "start", DataDir: c.dataDir, Err: fmt.Errorf("%w: %s", err, out), LogTail: logTail(logFile, logStart)}
	}
	return nil
}
