package importer

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/legacy"
)

// Querier is what LoadShoulderIndex reads through: a *pgxpool.Pool, *pgx.Conn or pgx.Tx.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// LoadShoulderIndex reads every shoulder of the ledger through q.
func LoadShoulderIndex(ctx context.Context, q Querier) (*legacy.ShoulderIndex, error) {
	rows, err := q.Query(ctx, `select id, naan, shoulder, check_zone from shoulder`)
	if err != nil {
		return nil, fmt.Errorf("read shoulders: %w", err)
	}
	defer rows.Close()
	x := legacy.NewShoulderIndex()
	for rows.Next() {
		e := &legacy.ShoulderEntry{}
		var stored, zone string
		if err := rows.Scan(&e.ID, &e.NAAN, &stored, &zone); err != nil {
			return nil, fmt.Errorf("read shoulders: %w", err)
		}
		e.Bare, e.Zone = strings.TrimPrefix(stored, "/"), ark.Zone(zone)
		x.Put(e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read shoulders: %w", err)
	}
	return x, nil
}
