package verify_test

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/verify"
)

// TestReceiptLayout: on one node the receipt table refuses every row (receipts are ark
// columns); a row put there with the constraint dropped escapes every receipt check, and
// receipt.layout finds it.
func TestReceiptLayout(t *testing.T) {
	t.Parallel()
	tl := newLedger(t)
	tl.baseline()
	insert := `insert into receipt (client_pk, request_id, ark, payload_digest, created_at)
		select id, 'stray', '99999/x9stray', '\x00112233445566778899aabbccddeeff', now() from client where client_id = '` + fixtures.FillClient + `'`
	_, err := tl.pool.Exec(tl.ctx, insert)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23514" || pe.ConstraintName != "receipt_on_ark_row" {
		t.Fatalf("a receipt row on one node: %v, want check_violation of receipt_on_ark_row", err)
	}
	tl.exec(false, `alter table receipt drop constraint receipt_on_ark_row`)
	tl.exec(false, insert)
	res, rows := tl.audit(verify.Config{})
	only(t, res, rows, verify.CheckReceiptLayout, 1, "table receipt")
}
