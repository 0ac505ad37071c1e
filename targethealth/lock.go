package targethealth

import (
	"context"
	"fmt"

	"github.com/arkhe-ledger/arkhe/ledger"
)

// Lock takes the ledger's link-check lock (a session advisory lock on a connection of
// its own) so that two runs never check the same targets at once; release gives it back. A
// lock held by another session is a *BusyError.
func Lock(ctx context.Context, l *ledger.Ledger) (release func(), err error) {
	conn, err := l.Pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("link check lock: %w", err)
	}
	var ok bool
	if err := conn.QueryRow(ctx, `select pg_try_advisory_lock($1)`, runLock).Scan(&ok); err != nil {
		conn.Release()
		return nil, fmt.Errorf("link check lock: %w", err)
	}
	if !ok {
		conn.Release()
		return nil, &BusyError{}
	}
	return func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), `select pg_advisory_unlock($1)`, runLock)
		conn.Release()
	}, nil
}
