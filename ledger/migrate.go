// Package ledger owns the ARK ledger in PostgreSQL as a store: the schema as embedded, versioned
// SQL migrations, Open and its pool, SQLSTATE classification (errors.go), the ledger's roles,
// registration of NAANs, shoulders and clients, API keys, the audit vocabulary, single-ARK
// operations, the one binary COPY encoder, and the queries behind `arkhe report`. Bulk writing
// (mint, the import's new ARKs) lives in package loader, the local cluster in package localpg,
// the legacy importer in package importer.
//
// Physical keys: an ARK is referenced about once, so receipts and ARK_CHANGE reference an
// ARK by its canonical string (the ledger key NAAN/name); the client in every receipt and
// created_by / updated_by on every ARK are interned to the client's bigint key. No internal key ever
// leaves this package in a value a user sees.
package ledger

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Migration is one versioned schema step: migrations/NNNN_name.sql, applied in Version order.
type Migration struct {
	Version int    // NNNN from the file name, starting at 1
	Name    string // file name
	SQL     string // the statements, run one by one in one transaction
}

// migrationAdvisoryLock serialises concurrent Migrate calls on one database (an arbitrary constant).
const migrationAdvisoryLock = 7_2_11_5_0_31

// Migrations returns the embedded migrations in version order.
// It returns an error only if a file name does not start with a number (a build defect).
func Migrations() ([]Migration, error) {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, fmt.Errorf("read embedded migrations: %w", err)
	}
	var out []Migration
	for _, e := range entries {
		name := e.Name()
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %q: name must be NNNN_name.sql", name)
		}
		b, err := migrationFS.ReadFile("migrations/" + name)
		if err != nil {
			return nil, fmt.Errorf("read migration %q: %w", name, err)
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// SchemaHash is a hex SHA-256 (first 16 hex digits) over all embedded migrations, in order. Test
// harnesses name their migrated template database after it, so a schema change gets a new template.
func SchemaHash() string {
	ms, err := Migrations()
	if err != nil {
		return "invalid"
	}
	h := sha256.New()
	for _, m := range ms {
		fmt.Fprintf(h, "%d\x00%s\x00%s\x00", m.Version, m.Name, m.SQL)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Layout is the physical layout of a ledger, fixed when the ledger is created and kept in its
// ledger_setting table: one description of the tables, two ways to store them.
type Layout string

const (
	// LayoutAuto asks Migrate to choose: the layout an existing ledger was created with, else
	// LayoutCitus when the citus extension is installed in the database, else LayoutSingle.
	LayoutAuto Layout = ""
	// LayoutSingle is one PostgreSQL server: a mint receipt is two columns of its ARK row.
	LayoutSingle Layout = "single"
	// LayoutCitus is a Citus coordinator: registration tables are reference tables, ark and
	// ark_change are distributed by the ARK string and co-located, receipts are a table of their
	// own distributed by request ID.
	LayoutCitus Layout = "citus"
)

// MigrateResult says what Migrate did: the versions applied now (empty when the ledger was current).
type MigrateResult struct {
	Applied []Migration
	Current int    // the schema version after the call
	Layout  Layout // the ledger's layout after the call (LayoutSingle or LayoutCitus)
}

// Migrate brings the ledger schema up to date, applying each pending migration in its own
// transaction and recording it in schema_migration. It is idempotent: on a current ledger it
// changes nothing. Concurrent callers are serialised by an advisory lock. A ledger with a version
// newer than this binary knows is an error (an older arkhe must not write to a newer ledger).
//
// layout chooses the physical layout of a new ledger (LayoutAuto: LayoutCitus when the citus
// extension is installed in the database, else LayoutSingle); an existing ledger keeps the layout
// it was created with, and insisting on another is a *LayoutError, as is LayoutCitus without the
// citus extension. The migrations read the layout from the transaction-local setting
// arkhe.layout. On a ledger with roles (InitRoles) each migration runs as the owner role (the
// session must be a member of it) and the roles are granted the privileges of what it created.
func Migrate(ctx context.Context, conn *pgx.Conn, layout Layout) (MigrateResult, error) {
	var res MigrateResult
	if layout != LayoutAuto && layout != LayoutSingle && layout != LayoutCitus {
		return res, &LayoutError{Want: layout, Rule: `the layouts are "single" and "citus"`}
	}
	ms, err := Migrations()
	if err != nil {
		return res, err
	}
	if _, err := conn.Exec(ctx, `select pg_advisory_lock($1)`, migrationAdvisoryLock); err != nil {
		return res, fmt.Errorf("lock schema for migration: %w", err)
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), `select pg_advisory_unlock($1)`, migrationAdvisoryLock)
	}()
	applied, err := appliedMigrations(ctx, conn)
	if err != nil {
		return res, err
	}
	latest := 0
	for _, m := range ms {
		latest = m.Version
	}
	for v := range applied {
		if v > latest {
			return res, fmt.Errorf("ledger schema version %d is newer than this arkhe knows (%d): upgrade arkhe", v, latest)
		}
	}
	if layout, err = chooseLayout(ctx, conn, layout); err != nil {
		return res, err
	}
	res.Layout = layout
	// a ledger with roles is changed by its owner role only: the migrations run as that role, so
	// that what they create is the owner's too
	roles, hasRoles, err := ledgerRoles(ctx, conn)
	if err != nil {
		return res, err
	}
	owner := ""
	if hasRoles {
		owner = roles.Owner
	}
	for _, m := range ms {
		sum := checksum(m.SQL)
		if prev, ok := applied[m.Version]; ok {
			if prev != sum {
				return res, fmt.Errorf("migration %s was changed after it was applied (checksum %s, ledger has %s)", m.Name, sum, prev)
			}
			res.Current = m.Version
			continue
		}
		if err := applyMigration(ctx, conn, m, sum, layout, owner); err != nil {
			return res, err
		}
		res.Applied = append(res.Applied, m)
		res.Current = m.Version
	}
	if hasRoles {
		if err := grantRoles(ctx, conn, owner); err != nil {
			return res, err
		}
	}
	return res, nil
}

// appliedMigrations returns the checksum of each migration schema_migration records by version,
// creating the table on the first init (a role that may not create tables is refused later, by
// the owner check, rather than here).
func appliedMigrations(ctx context.Context, conn *pgx.Conn) (map[int]string, error) {
	var haveTable bool
	if err := conn.QueryRow(ctx, `select to_regclass('schema_migration') is not null`).Scan(&haveTable); err != nil {
		return nil, fmt.Errorf("read schema_migration: %w", err)
	}
	if !haveTable {
		if _, err := conn.Exec(ctx, `create table if not exists schema_migration (
			version    integer primary key,
			name       text not null,
			checksum   text not null,
			applied_at timestamptz not null default now())`); err != nil {
			return nil, fmt.Errorf("create schema_migration: %w", err)
		}
	}
	applied := map[int]string{}
	rows, err := conn.Query(ctx, `select version, checksum from schema_migration`)
	if err != nil {
		return nil, fmt.Errorf("read schema_migration: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var v int
		var sum string
		if err := rows.Scan(&v, &sum); err != nil {
			return nil, fmt.Errorf("read schema_migration: %w", err)
		}
		applied[v] = sum
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read schema_migration: %w", err)
	}
	return applied, nil
}

// setOwner makes tx run as the ledger's owner role, unless owner is "" (a ledger without roles).
func setOwner(ctx context.Context, tx pgx.Tx, owner, what string) error {
	if owner == "" {
		return nil
	}
	if _, err := tx.Exec(ctx, "set local role "+ident(owner)); err != nil {
		return fmt.Errorf("%s: a ledger with roles is migrated by its owner role %s; connect as a member of it: %w", what, owner, err)
	}
	return nil
}

// applyMigration runs migration m, whose checksum is sum, in a transaction of its own (as the
// owner role unless owner is "", with arkhe.layout set to layout) and records it in
// schema_migration; nothing of it stays when it fails.
func applyMigration(ctx context.Context, conn *pgx.Conn, m Migration, sum string, layout Layout, owner string) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("migration %s: %w", m.Name, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := setOwner(ctx, tx, owner, "migration "+m.Name); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `select set_config('arkhe.layout', $1, true)`, string(layout)); err != nil {
		return fmt.Errorf("migration %s: set layout: %w", m.Name, err)
	}
	for _, st := range splitStatements(m.SQL) {
		if _, err := tx.Exec(ctx, st.SQL); err != nil {
			return fmt.Errorf("migration %s, statement at line %d: %w", m.Name, st.Line, err)
		}
	}
	if _, err := tx.Exec(ctx, `insert into schema_migration (version, name, checksum) values ($1, $2, $3)`,
		m.Version, m.Name, sum); err != nil {
		return fmt.Errorf("migration %s: record: %w", m.Name, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("migration %s: commit: %w", m.Name, err)
	}
	return nil
}

// grantRoles gives the ledger's roles the privileges of what the migrations created
// (arkhe_grant_roles, idempotent), as the owner role.
func grantRoles(ctx context.Context, conn *pgx.Conn, owner string) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("grant the ledger's roles: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := setOwner(ctx, tx, owner, "grant the ledger's roles"); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `select arkhe_grant_roles()`); err != nil {
		return fmt.Errorf("grant the ledger's roles: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("grant the ledger's roles: %w", err)
	}
	return nil
}

// chooseLayout returns the layout the migrations run with: an existing ledger's own (its
// ledger_setting row), which want must match unless it is LayoutAuto; for a new ledger want, or
// when want is LayoutAuto, LayoutCitus if the citus extension is installed, else LayoutSingle.
func chooseLayout(ctx context.Context, conn *pgx.Conn, want Layout) (Layout, error) {
	var exists, citus bool
	err := conn.QueryRow(ctx, `select to_regclass('ledger_setting') is not null,
		exists (select 1 from pg_extension where extname = 'citus')`).Scan(&exists, &citus)
	if err != nil {
		return "", fmt.Errorf("read ledger layout: %w", err)
	}
	var have *string
	if exists {
		err := conn.QueryRow(ctx, `select value from ledger_setting where name = 'layout'`).Scan(&have)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return "", fmt.Errorf("read ledger layout: %w", err)
		}
	}
	switch {
	case have != nil && want != LayoutAuto && Layout(*have) != want:
		return "", &LayoutError{Want: want, Have: Layout(*have), Rule: fmt.Sprintf("this ledger was created with layout %q, and a layout never changes", *have)}
	case have != nil:
		return Layout(*have), nil
	case want == LayoutCitus && !citus:
		return "", &LayoutError{Want: want, Rule: "the citus extension is not installed in this database (create extension citus first)"}
	case want != LayoutAuto:
		return want, nil
	case citus:
		return LayoutCitus, nil
	}
	return LayoutSingle, nil
}

func checksum(sql string) string {
	s := sha256.Sum256([]byte(sql))
	return hex.EncodeToString(s[:8])
}
