package localpg

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// StopEmbedded stops the embedded cluster in "<dataDir>/pg" if it is running (it starts again
// on demand at the next command). A data dir without a running server is not an error.
func StopEmbedded(ctx context.Context, dataDir string) error {
	pgDir := filepath.Join(dataDir, "pg")
	if _, err := os.Stat(filepath.Join(pgDir, "postmaster.pid")); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	c, err := StartCluster(ctx, ClusterConfig{DataDir: pgDir, Persistent: true})
	if err != nil {
		return err
	}
	return c.Stop(ctx)
}
