package importer_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/arkhe-ledger/arkhe/importer"
)

// TestFaultError: a file stopped by a fault says what happened and that the same command
// completes the job; IsFault finds it wrapped, and only it.
func TestFaultError(t *testing.T) {
	cause := &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}
	err := fmt.Errorf("run: %w", &importer.FaultError{Path: "dump.csv", Cause: "the server is shutting down or ended the session",
		Err: fmt.Errorf("import dump.csv: create NAAN 12345: %w", cause)})
	if !importer.IsFault(err) || importer.IsFault(errors.New("import dump.csv: stopped")) || importer.IsFault(nil) {
		t.Error("IsFault does not find exactly the wrapped *FaultError")
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57P01" {
		t.Error("the database error is not reachable through the FaultError")
	}
	for _, want := range []string{"import dump.csv: create NAAN 12345", "SQLSTATE 57P01", "shutting down", "nothing of dump.csv was imported", "the same command completes the job"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}

	u := &importer.FaultError{Path: "dump.csv", Cause: "an error a Citus worker raised", Uncertain: true,
		Err: &pgconn.PgError{Code: "XX000", Message: "terminating connection due to administrator command"}}
	if !strings.Contains(u.Error(), "if a worker restarted or its session was ended, the same command completes the job") {
		t.Errorf("%q does not say when the same command completes the job", u)
	}
}
