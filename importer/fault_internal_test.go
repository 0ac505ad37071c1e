package importer

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestFileFault: an import or a recovery of a file stopped by a fault of the database (here
// the server ending the session, SQLSTATE 57P01) is a *FaultError naming the file, whose
// message says the same command completes the job; an error of the data is passed on as it is,
// and so is any error once the run's context is cancelled.
func TestFileFault(t *testing.T) {
	t.Parallel()
	shutdown := fmt.Errorf("import one.csv: %w", &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"})
	err := fileFault(context.Background(), "one.csv", shutdown)
	var fe *FaultError
	if !errors.As(err, &fe) || fe.Path != "one.csv" || fe.Cause == "" || !errors.Is(err, shutdown) {
		t.Fatalf("fileFault(57P01) = %#v, want a *FaultError for one.csv wrapping the cause", err)
	}
	data := fmt.Errorf("import one.csv: %w", &pgconn.PgError{Code: "23514", Message: "check"})
	if got := fileFault(context.Background(), "one.csv", data); got != data {
		t.Errorf("fileFault(23514) = %v, want the error itself", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := fileFault(ctx, "one.csv", shutdown); got != shutdown {
		t.Errorf("fileFault after cancel = %v, want the error itself", got)
	}
}
