package ledger_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
)

// codeCitusCopy is the SQLSTATE a Citus coordinator (or a worker acting as one) reports for
// any error a worker raised during COPY into a distributed or reference table: Citus re-raises
// the remote message and detail without the remote SQLSTATE (XX000, internal_error). INSERT,
// UPDATE, DELETE and TRUNCATE keep the remote SQLSTATE.
const codeCitusCopy = "XX000"

// node is one server a plain-SQL attempt goes through.
type node struct {
	name string // "single", "coordinator" or "worker1"
	pool *pgxpool.Pool
}

// nodesOf returns the nodes every refusal is attempted through: the single node; on Citus
// the coordinator and the first worker (workers take reads and writes of distributed and
// reference tables too, so a promise must hold there as well). Worker pools close when t ends.
func nodesOf(t *testing.T, db pgtest.DB) []node {
	t.Helper()
	if !db.Citus() {
		return []node{{"single", db.Pool}}
	}
	w, err := pgxpool.New(context.Background(), db.WorkerURLs[0])
	if err != nil {
		t.Fatalf("connect to worker 1: %v", err)
	}
	t.Cleanup(w.Close)
	return []node{{"coordinator", db.Pool}, {"worker1", w}}
}

// refusedOn runs sql through every node and asserts each refuses it with SQLSTATE code.
func refusedOn(t *testing.T, nodes []node, code, sql string, args ...any) {
	t.Helper()
	for _, n := range nodes {
		_, err := n.pool.Exec(context.Background(), sql, args...)
		if err == nil {
			t.Fatalf("%s: %s: accepted, want SQLSTATE %s", n.name, sql, code)
		}
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) {
			t.Fatalf("%s: %s: %v, want a PostgreSQL error %s", n.name, sql, err, code)
		}
		if pgErr.Code != code {
			t.Fatalf("%s: %s: SQLSTATE %s (%s), want %s", n.name, sql, pgErr.Code, pgErr.Message, code)
		}
	}
}
