package loader

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestWithFaults: the run's closing audit event is written again after a server shutting down
// (57P03, as a fast restart answers) or a Citus worker's COPY lost (58030), not after an error
// of the statement, and not past For.
func TestWithFaults(t *testing.T) {
	shutdown := &pgconn.PgError{Code: "57P03"}
	calls := 0
	err := withFaults(context.Background(), RetryPolicy{For: time.Minute}, func(context.Context) error {
		calls++
		if calls < 3 {
			return shutdown
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("after two faults: err %v after %d calls, want nil after 3", err, calls)
	}

	// Citus's coordinator raises io_error (58030) when the COPY stream to a worker breaks
	workerLost := &pgconn.PgError{Code: "58030"}
	calls = 0
	err = withFaults(context.Background(), RetryPolicy{For: time.Minute}, func(context.Context) error {
		calls++
		if calls < 2 {
			return workerLost
		}
		return nil
	})
	if err != nil || calls != 2 {
		t.Fatalf("after a worker's COPY was lost: err %v after %d calls, want nil after 2", err, calls)
	}

	bad := &pgconn.PgError{Code: "23505"}
	calls = 0
	err = withFaults(context.Background(), RetryPolicy{For: time.Minute}, func(context.Context) error { calls++; return bad })
	if !errors.Is(err, bad) || calls != 1 {
		t.Fatalf("a unique violation: err %v after %d calls, want it after 1", err, calls)
	}

	calls = 0
	err = withFaults(context.Background(), RetryPolicy{For: time.Millisecond}, func(context.Context) error { calls++; return shutdown })
	if !errors.Is(err, shutdown) || calls != 1 {
		t.Fatalf("For 1 ms: err %v after %d calls, want the fault after 1", err, calls)
	}

	calls = 0
	err = withFaults(context.Background(), RetryPolicy{For: -1}, func(context.Context) error { calls++; return shutdown })
	if !errors.Is(err, shutdown) || calls != 1 {
		t.Fatalf("For < 0: err %v after %d calls, want the fault after 1", err, calls)
	}
}
