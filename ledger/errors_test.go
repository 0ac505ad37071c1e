package ledger_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/arkhe-ledger/arkhe/ledger"
)

// TestErrorPredicates: each predicate answers by the SQLSTATE of a wrapped *pgconn.PgError
// only, never by the message (a message that names the condition is not it).
func TestErrorPredicates(t *testing.T) {
	pg := func(code string) error {
		return fmt.Errorf("insert: %w", &pgconn.PgError{Code: code, Message: "duplicate key value violates unique constraint; insufficient privilege; reach"})
	}
	preds := map[string]func(error) bool{
		ledger.CodeUniqueViolation:       ledger.IsUniqueViolation,
		ledger.CodeReachRefused:          ledger.IsReachRefused,
		ledger.CodeInsufficientPrivilege: ledger.IsInsufficientPrivilege,
		ledger.CodeIOError:               ledger.IsWorkerCopyLost,
	}
	for code, is := range preds {
		for _, other := range []string{ledger.CodeUniqueViolation, ledger.CodeReachRefused, ledger.CodeInsufficientPrivilege, ledger.CodeIOError, "XX000", "08006"} {
			if got := is(pg(other)); got != (other == code) {
				t.Errorf("predicate of %s on SQLSTATE %s: %v, want %v", code, other, got, other == code)
			}
		}
		if is(nil) || is(errors.New("duplicate key value violates unique constraint (SQLSTATE "+code+")")) {
			t.Errorf("predicate of %s true for nil or a message alone", code)
		}
	}
	if got := ledger.SQLState(pg("23505")); got != "23505" {
		t.Errorf("SQLState = %q, want 23505", got)
	}
}
