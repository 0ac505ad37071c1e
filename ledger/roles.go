package ledger

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Role kinds: the five least-privilege roles of a ledger with roles (`arkhe init --roles`).
// Each is a group role; logins are made its members.
const (
	// RoleOwner owns every table and function: DDL and migrations. Only `arkhe init` needs it.
	RoleOwner = "owner"
	// RoleOperator registers NAANs, managers, shoulders and clients, issues and revokes API
	// keys, and alone may widen a client's reach.
	RoleOperator = "operator"
	// RoleWriter mints, imports, applies reconciled exports, repoints and tombstones: it inserts
	// ARKs and changes one only through the ledger's SECURITY DEFINER functions; it has no
	// DELETE, TRUNCATE, ALTER, trigger control or UPDATE of ark.
	RoleWriter = "writer"
	// RoleAuditor reads everything but the key hashes and appends only its own audit records
	// (verify).
	RoleAuditor = "auditor"
	// RoleResolver answers resolution (arkhe serve): it reads only the columns of ark, naan,
	// shoulder and manager that resolution and its descriptions read, and the schema version. It
	// writes nothing.
	RoleResolver = "resolver"
)

// RoleKinds lists the role kinds in the order `arkhe init --roles` creates them.
func RoleKinds() []string {
	return []string{RoleOwner, RoleOperator, RoleWriter, RoleAuditor, RoleResolver}
}

// DefaultRolePrefix is the prefix of the role names when none is given: arkhe_owner,
// arkhe_operator, arkhe_writer, arkhe_auditor, arkhe_resolver. Roles are cluster-wide: two ledgers in one
// cluster that must not share roles need different prefixes.
const DefaultRolePrefix = "arkhe_"

// rolePrefixRE is the form of a role prefix: a lowercase identifier that needs no quoting,
// short enough for the longest kind ("operator") within PostgreSQL's 63-byte names.
var rolePrefixRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,50}$`)

// Roles are the names of a ledger's roles, by kind.
type Roles struct {
	Owner, Operator, Writer, Auditor, Resolver string
}

// Name returns the role of kind (RoleOwner, ...), "" for an unknown kind.
func (r Roles) Name(kind string) string {
	switch kind {
	case RoleOwner:
		return r.Owner
	case RoleOperator:
		return r.Operator
	case RoleWriter:
		return r.Writer
	case RoleAuditor:
		return r.Auditor
	case RoleResolver:
		return r.Resolver
	}
	return ""
}

// roleNames returns the role names for prefix: prefix + kind.
func roleNames(prefix string) Roles {
	return Roles{Owner: prefix + RoleOwner, Operator: prefix + RoleOperator, Writer: prefix + RoleWriter, Auditor: prefix + RoleAuditor,
		Resolver: prefix + RoleResolver}
}

// LedgerRoles returns the names of the ledger's roles, and ok=false for a ledger without roles.
func (l *Ledger) LedgerRoles(ctx context.Context) (r Roles, ok bool, err error) {
	return ledgerRoles(ctx, l.Pool)
}

// querier is what reads a ledger: a pool, a connection or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func ledgerRoles(ctx context.Context, q querier) (Roles, bool, error) {
	var r Roles
	var exists bool
	if err := q.QueryRow(ctx, `select to_regclass('ledger_setting') is not null`).Scan(&exists); err != nil {
		return r, false, fmt.Errorf("read ledger roles: %w", err)
	}
	if !exists {
		return r, false, nil
	}
	rows, err := q.Query(ctx, `select substr(name, 6), value from ledger_setting where name like 'role.%'`)
	if err != nil {
		return r, false, fmt.Errorf("read ledger roles: %w", err)
	}
	n := 0
	for rows.Next() {
		var kind, name string
		if err := rows.Scan(&kind, &name); err != nil {
			rows.Close()
			return r, false, fmt.Errorf("read ledger roles: %w", err)
		}
		switch kind {
		case RoleOwner:
			r.Owner = name
		case RoleOperator:
			r.Operator = name
		case RoleWriter:
			r.Writer = name
		case RoleAuditor:
			r.Auditor = name
		case RoleResolver:
			r.Resolver = name
		default:
			continue
		}
		n++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return r, false, fmt.Errorf("read ledger roles: %w", err)
	}
	return r, n > 0, nil
}

// CheckRole returns nil when the session may do work that needs one of the ledger roles of
// kinds (RoleOwner, RoleOperator, RoleWriter, RoleAuditor): always on a ledger without roles
// (and on a database without a ledger), for a superuser, and for a session whose role has the
// privileges of one of them (pg_has_role USAGE; for RoleOwner MEMBER, since the migrations set
// the role). Otherwise it is a *RoleError, and nothing was written. No kinds: nil.
func (l *Ledger) CheckRole(ctx context.Context, kinds ...string) error {
	if len(kinds) == 0 {
		return nil
	}
	roles, ok, err := ledgerRoles(ctx, l.Pool)
	if SQLState(err) == CodeInsufficientPrivilege {
		// a login in none of the roles may not read their names: they are the owner's prefix
		// and the kinds (RoleNames), and the catalog names the owner
		roles, ok, err = catalogRoles(ctx, l.Pool)
	}
	if err != nil || !ok {
		return err
	}
	e := &RoleError{Kinds: kinds}
	var modes []string
	for _, k := range kinds {
		name := roles.Name(k)
		if name == "" && k == RoleResolver {
			continue // a ledger whose roles predate the resolver role: arkhe init --roles adds it
		}
		if name == "" {
			return fmt.Errorf("check role: unknown role kind %q", k)
		}
		mode := "USAGE"
		if k == RoleOwner {
			mode = "MEMBER"
		}
		e.Roles, modes = append(e.Roles, name), append(modes, mode)
	}
	var has bool
	err = l.Pool.QueryRow(ctx, `select current_user::text, coalesce(bool_or(pg_has_role(current_user, r.oid, t.mode)), false)
		from unnest($1::text[], $2::text[]) as t(name, mode) left join pg_roles r on r.rolname = t.name`,
		e.Roles, modes).Scan(&e.Login, &has)
	if err != nil {
		return fmt.Errorf("check role: %w", err)
	}
	if has {
		return nil
	}
	return e
}

// catalogRoles returns the ledger's roles as the catalog shows them to any login: the owner of
// ledger_setting, when its name ends in RoleOwner, is prefix + RoleOwner (InitRoles names them
// so), and its operator, writer and auditor exist (the resolver role, newer, may not yet). ok is
// false otherwise.
func catalogRoles(ctx context.Context, q querier) (Roles, bool, error) {
	var owner string
	err := q.QueryRow(ctx, `select coalesce((select pg_get_userbyid(relowner)::text from pg_class
		where oid = to_regclass('ledger_setting')), '')`).Scan(&owner)
	if err != nil {
		return Roles{}, false, fmt.Errorf("read ledger roles: %w", err)
	}
	prefix, found := strings.CutSuffix(owner, RoleOwner)
	if !found {
		return Roles{}, false, nil
	}
	r := roleNames(prefix)
	var n int
	if err := q.QueryRow(ctx, `select count(*) from pg_roles where rolname = any($1::text[])`,
		[]string{r.Owner, r.Operator, r.Writer, r.Auditor}).Scan(&n); err != nil {
		return Roles{}, false, fmt.Errorf("read ledger roles: %w", err)
	}
	return r, n == 4, nil // the four counted above
}

// InitRolesResult says what InitRoles did.
type InitRolesResult struct {
	Roles   Roles
	Created []string // the roles created now (the others existed: a re-run, or another ledger's)
}

// InitRoles gives a migrated ledger its least-privilege roles, prefix + owner, operator, writer
// and auditor (DefaultRolePrefix when prefix is ""): it creates those that do not exist as group
// roles without login (the owner with login on Citus, whose coordinator connects to the workers
// as the owner inside the ledger's SECURITY DEFINER functions), records their names in
// ledger_setting, hands every table, view and function of the ledger to the owner, and grants
// the others their privileges (arkhe_grant_roles). It is idempotent; a ledger whose roles have
// other names is a *RolesError (a ledger's roles never change). It needs a superuser (or a role
// that may create roles and is a member of the ledger's current owner and of the new owner).
// One audit event, ActionLedgerRoles, records it.
func (l *Ledger) InitRoles(ctx context.Context, prefix string) (InitRolesResult, error) {
	var res InitRolesResult
	if prefix == "" {
		prefix = DefaultRolePrefix
	}
	if !rolePrefixRE.MatchString(prefix) {
		return res, &RolesError{Rule: fmt.Sprintf("role prefix %q: lowercase letters, digits and _, not starting with a digit, at most 51 characters", prefix)}
	}
	want := roleNames(prefix)
	res.Roles = want
	tx, err := l.Pool.Begin(ctx)
	if err != nil {
		return res, fmt.Errorf("ledger roles: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	have, ok, err := ledgerRoles(ctx, tx)
	if err != nil {
		return res, err
	}
	// a ledger whose roles were created before the resolver role gets it now
	recorded := have
	if recorded.Resolver == "" {
		recorded.Resolver = want.Resolver
	}
	if ok && recorded != want {
		return res, &RolesError{Rule: fmt.Sprintf("this ledger's roles are %s, %s, %s and %s; a ledger's roles never change (give --role-prefix to match)",
			have.Owner, have.Operator, have.Writer, have.Auditor)}
	}
	var layout string
	if err := tx.QueryRow(ctx, `select arkhe_layout()`).Scan(&layout); err != nil {
		return res, fmt.Errorf("ledger roles: %w", err)
	}
	for _, kind := range RoleKinds() {
		name := want.Name(kind)
		var exists bool
		if err := tx.QueryRow(ctx, `select exists (select 1 from pg_roles where rolname = $1)`, name).Scan(&exists); err != nil {
			return res, fmt.Errorf("ledger roles: %w", err)
		}
		if exists {
			continue
		}
		login := "nologin"
		if kind == RoleOwner && layout == string(LayoutCitus) {
			login = "login"
		}
		if _, err := tx.Exec(ctx, "create role "+ident(name)+" "+login); err != nil {
			return res, &RolesError{Rule: "creating roles needs a superuser or a role with CREATEROLE", Err: err}
		}
		res.Created = append(res.Created, name)
	}
	for _, kind := range RoleKinds() {
		if have.Name(kind) == "" {
			if _, err := tx.Exec(ctx, `insert into ledger_setting (name, value) values ($1, $2)`, "role."+kind, want.Name(kind)); err != nil {
				return res, fmt.Errorf("ledger roles: record %s: %w", kind, err)
			}
		}
	}
	if err := handOver(ctx, tx, want.Owner); err != nil {
		return res, err
	}
	var schema string
	if err := tx.QueryRow(ctx, `select current_schema()`).Scan(&schema); err != nil {
		return res, fmt.Errorf("ledger roles: %w", err)
	}
	if _, err := tx.Exec(ctx, fmt.Sprintf("grant usage, create on schema %s to %s; grant usage on schema %s to %s, %s, %s, %s",
		ident(schema), ident(want.Owner), ident(schema), ident(want.Operator), ident(want.Writer), ident(want.Auditor), ident(want.Resolver))); err != nil {
		return res, &RolesError{Rule: "granting the ledger's schema to its roles", Err: err}
	}
	if _, err := tx.Exec(ctx, `select arkhe_grant_roles()`); err != nil {
		return res, &RolesError{Rule: "granting the roles their privileges", Err: err}
	}
	if err := RecordEvent(ctx, tx, Event{Action: ActionLedgerRoles, Target: "ledger",
		After: map[string]any{"roles": want, "created": res.Created}}); err != nil {
		return res, err
	}
	if err := tx.Commit(ctx); err != nil {
		return res, fmt.Errorf("ledger roles: commit: %w", err)
	}
	return res, nil
}

// handOver makes owner the owner of every table, view, sequence not owned by a column, and
// function of the ledger's schema (extension members excluded).
func handOver(ctx context.Context, tx pgx.Tx, owner string) error {
	rows, err := tx.Query(ctx, `
		select 'table', c.oid::regclass::text from pg_class c
		where c.relnamespace = (select oid from pg_namespace where nspname = current_schema())
		  and c.relkind in ('r', 'p', 'v', 'm', 'f', 'S')
		  and pg_get_userbyid(c.relowner) <> $1
		  and not exists (select 1 from pg_depend d where d.classid = 'pg_class'::regclass and d.objid = c.oid
		                  and (d.deptype = 'e' or (c.relkind = 'S' and d.deptype in ('a', 'i'))))
		union all
		select 'routine', p.oid::regprocedure::text from pg_proc p
		where p.pronamespace = (select oid from pg_namespace where nspname = current_schema())
		  and pg_get_userbyid(p.proowner) <> $1
		  and not exists (select 1 from pg_depend d where d.classid = 'pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e')
		order by 1, 2`, owner)
	if err != nil {
		return fmt.Errorf("ledger roles: list the ledger's objects: %w", err)
	}
	type object struct{ kind, name string }
	objs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (object, error) {
		var o object
		err := r.Scan(&o.kind, &o.name)
		return o, err
	})
	if err != nil {
		return fmt.Errorf("ledger roles: list the ledger's objects: %w", err)
	}
	for _, o := range objs {
		// the names come from regclass/regprocedure output, quoted where needed
		stmt := fmt.Sprintf("alter table %s owner to %s", o.name, ident(owner))
		if o.kind == "routine" {
			stmt = fmt.Sprintf("alter routine %s owner to %s", o.name, ident(owner))
		}
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return &RolesError{Rule: fmt.Sprintf("handing %s %s to the owner role %s needs a superuser", o.kind, o.name, owner), Err: err}
		}
	}
	return nil
}

// sqlName spells a role name for SQL as a person types it: bare when it needs no quotes.
func sqlName(name string) string {
	if rolePrefixRE.MatchString(name) && len(name) <= 63 {
		return name
	}
	return ident(name)
}

// ident quotes a role or schema name for SQL.
func ident(name string) string { return pgx.Identifier{name}.Sanitize() }

// RequireKeys records in ledger_setting that writing commands need the client's API key
// (Authenticate); it cannot be undone (the table is append-only). changed is false when the
// ledger required keys already. It needs the owner (or a superuser). One audit event,
// ActionLedgerRequireKeys, records it.
func (l *Ledger) RequireKeys(ctx context.Context) (changed bool, err error) {
	tx, err := l.Pool.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("require keys: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	tag, err := tx.Exec(ctx, `insert into ledger_setting (name, value) values ('require_keys', 'on') on conflict (name) do nothing`)
	if err != nil {
		return false, fmt.Errorf("require keys: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return false, nil
	}
	if err := RecordEvent(ctx, tx, Event{Action: ActionLedgerRequireKeys, Target: "ledger",
		After: map[string]bool{"require_keys": true}}); err != nil {
		return false, err
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("require keys: commit: %w", err)
	}
	return true, nil
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}

// CheckSchema returns nil when the database holds a ledger with exactly the migrations this
// arkhe knows, else a *SchemaError. It only reads (schema_migration), so it works under any of
// the ledger's roles and changes nothing in a database without a ledger.
func (l *Ledger) CheckSchema(ctx context.Context) error {
	ms, err := Migrations()
	if err != nil {
		return err
	}
	var exists bool
	if err := l.Pool.QueryRow(ctx, `select to_regclass('schema_migration') is not null`).Scan(&exists); err != nil {
		return fmt.Errorf("read the ledger's schema version: %w", err)
	}
	e := &SchemaError{}
	for _, m := range ms {
		e.Want = max(e.Want, m.Version)
	}
	if !exists {
		return e
	}
	rows, err := l.Pool.Query(ctx, `select version from schema_migration order by version`)
	if err != nil {
		return fmt.Errorf("read the ledger's schema version: %w", err)
	}
	applied, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return fmt.Errorf("read the ledger's schema version: %w", err)
	}
	for _, v := range applied {
		e.Have = max(e.Have, v)
		if v > e.Want {
			e.Newer = append(e.Newer, v)
		}
	}
	for _, m := range ms {
		if !slices.Contains(applied, m.Version) {
			e.Missing = append(e.Missing, m.Version)
		}
	}
	if e.Have == 0 || len(e.Newer) > 0 || len(e.Missing) > 0 {
		return e
	}
	return nil
}
