package loader_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// codeCitusCopy is the SQLSTATE a Citus coordinator (or a worker acting as one) reports for
// any error a worker raised during COPY into a distributed or reference table: Citus re-raises
// the remote message and detail without the remote SQLSTATE (XX000, internal_error).
const codeCitusCopy = "XX000"

// refusedEverywhere runs sql through the single node, or on Citus through the coordinator and
// the first worker (workers take writes too), and asserts each refuses it with SQLSTATE code.
func refusedEverywhere(t *testing.T, db pgtest.DB, code, sql string) {
	t.Helper()
	pools := map[string]*pgxpool.Pool{"single": db.Pool}
	if db.Citus() {
		w, err := pgxpool.New(context.Background(), db.WorkerURLs[0])
		if err != nil {
			t.Fatalf("connect to worker 1: %v", err)
		}
		defer w.Close()
		pools = map[string]*pgxpool.Pool{"coordinator": db.Pool, "worker1": w}
	}
	for name, p := range pools {
		_, err := p.Exec(context.Background(), sql)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != code {
			t.Fatalf("%s: %s: %v, want SQLSTATE %s", name, sql, err, code)
		}
	}
}
