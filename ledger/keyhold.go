package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// HoldKey is KeyUsable for a transaction about to write with API key prefix (arkhe_key_hold): the
// key must be registered, active (not revoked) and not locked, and the key is held until tx
// ends, so a revocation or lock of it begun meanwhile waits for tx, and one committed before is
// seen: the check holds for every write tx makes after it. Holders of one key do not wait for
// each other, nor for holders of other keys. tx must be a transaction (pgx.Tx);
// a refusal is a *KeyError (Reason "unknown", "revoked" or "locked"), any other error a wrapped
// database error.
func HoldKey(ctx context.Context, tx pgx.Tx, prefix string) error {
	var (
		clientID, state string
		locked          *time.Time
	)
	err := tx.QueryRow(ctx, `select client_id, state, locked_until from arkhe_key_hold($1)`, prefix).Scan(&clientID, &state, &locked)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return &KeyError{Prefix: prefix, Reason: "unknown"}
	case err != nil:
		return fmt.Errorf("hold API key %s_%s: %w", KeyLabel, prefix, err)
	case state != "active":
		return &KeyError{ClientID: clientID, Prefix: prefix, Reason: state, LockedUntil: locked}
	}
	return nil
}
