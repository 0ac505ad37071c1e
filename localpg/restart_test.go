package localpg

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestRestart: a fast and an immediate restart each end the sessions open before it (a fast one
// with SQLSTATE 57P01) and come back on the same socket with the same settings and with every
// acknowledged commit (synchronous_commit on); a bad stop mode is refused. The cluster is a
// copy of the seed (not a test of initdb).
func TestRestart(t *testing.T) {
	c := startTestCluster(t, ClusterConfig{DataDir: seededDataDir(t),
		Settings: map[string]string{"synchronous_commit": "on", "work_mem": "7MB"}})
	ctx := context.Background()
	url := c.URL("postgres")
	execSQL(t, url, "create table kept (n int)")
	for i, mode := range []StopMode{StopFast, StopImmediate} {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "insert into kept values ($1)", i); err != nil {
			t.Fatal(err)
		}
		if err := c.Restart(ctx, mode); err != nil {
			t.Fatalf("Restart(%s): %v", mode, err)
		}
		_, err = conn.Exec(ctx, "select 1")
		var pgErr *pgconn.PgError
		switch {
		case err == nil:
			t.Errorf("%s: a session from before the restart still works", mode)
		case mode == StopFast && (!errors.As(err, &pgErr) || pgErr.Code != "57P01") && !conn.IsClosed():
			t.Errorf("%s: the old session failed with %v, want 57P01 or a closed connection", mode, err)
		}
		conn.Close(ctx)
		if got := queryString(t, url, "select count(*)::text from kept"); got != []string{"1", "2"}[i] {
			t.Errorf("%s: %s rows kept, want %d", mode, got, i+1)
		}
		if got := queryString(t, url, "show work_mem"); got != "7MB" {
			t.Errorf("%s: work_mem %s after the restart, want 7MB", mode, got)
		}
	}
	if err := c.Restart(ctx, "smart"); err == nil {
		t.Error("Restart with stop mode smart: no error")
	}
}
