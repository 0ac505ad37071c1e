package ledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// This file changes what was registered: a manager's quota, commitment, default shoulder and
// state (SetManager), its departure with or without a successor (SucceedManager, DepartManager),
// and a client's scopes, expiry, pinned shoulder and state (SetClient). Each change is one
// UPDATE of one registration row in one transaction, recorded as one audit event: by the
// registration trigger on a single node, here on Citus (where that trigger fires on the
// reference table's placements, which may not write another table).

// clientScopes are the scopes a client may hold.
var clientScopes = [...]string{"ark:mint", "ark:update", "ark:tombstone", "ark:import", "ark:read"}

// Change is one registered value an update changed: Field (as printed: "quota", "scopes", ...)
// from Before to After, each as printed ("none" for no value).
type Change struct {
	Field, Before, After string
	column               string // the column as audit records name it (quota_per_day, allowed_scopes, ...)
	before, after        any    // the values as audit records carry them; nil for none
}

// String renders the change as "quota: 1000 -> 2000".
func (c Change) String() string { return c.Field + ": " + c.Before + " -> " + c.After }

// stamp prints a time as RFC 3339 in UTC; "none" for nil.
func stamp(t *time.Time) string {
	if t == nil {
		return "none"
	}
	return t.UTC().Format(time.RFC3339)
}

// stampValue is t for an audit record; nil for nil.
func stampValue(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// ManagerUpdate names the registered values SetManager changes; a nil field stays as it is.
type ManagerUpdate struct {
	QuotaPerDay     *int    // new mints per UTC day; 0 for no limit
	CommitmentLevel *string // one of CommitmentLevels
	DefaultShoulder *string // "/x9", a shoulder the manager holds; "" for none
	// Active false stops the manager's clients (mint, import, repoint, tombstone) and its
	// shoulders (mint) at once; true lets them act again. A departed manager stays inactive.
	Active *bool
}

// departedRule is what a change a departed manager cannot take is told.
func departedRule(m managerRow) string {
	how := "departed at " + stamp(m.DepartedAt)
	if m.successor != "" {
		how += fmt.Sprintf(" (succeeded by %q)", m.successor)
	}
	return how + "; a departed manager stays inactive and holds no default shoulder: register a new manager"
}

// SetManager changes the registered values u names of manager name of naan and returns what
// changed, from what to what (none when it held those values already: nothing is written). One
// audit event records the change: manager.enable or manager.disable when only the state
// changed, else manager.set. Refusals are *RegistrationError: no such manager, a commitment
// that is not an NLM rating, a negative quota, a default shoulder the manager does not hold, a
// departed manager made active or given a default shoulder, a session outside the operator
// role.
func (l *Ledger) SetManager(ctx context.Context, naan, name string, u ManagerUpdate) ([]Change, error) {
	what := fmt.Sprintf("manager %q of NAAN %s", name, naan)
	if u.CommitmentLevel != nil && !validCommitment(*u.CommitmentLevel) {
		return nil, &RegistrationError{What: what,
			Rule: fmt.Sprintf("commitment level must be one of the NLM ratings: %s", strings.Join(CommitmentLevels[:], "; "))}
	}
	if u.QuotaPerDay != nil && *u.QuotaPerDay < 0 {
		return nil, &RegistrationError{What: what, Rule: quotaRule}
	}
	tx, err := l.Pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	have, found, err := readManager(ctx, tx, naan, name, true)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, &RegistrationError{What: what, Rule: "not registered (see `arkhe manager list`)"}
	}
	want := have.Manager
	if u.QuotaPerDay != nil {
		want.QuotaPerDay = *u.QuotaPerDay
	}
	if u.CommitmentLevel != nil {
		want.CommitmentLevel = *u.CommitmentLevel
	}
	if u.Active != nil {
		want.Active = *u.Active
	}
	if u.DefaultShoulder != nil {
		want.DefaultShoulder = storedShoulder(*u.DefaultShoulder)
	}
	var defaultID *int64 // the default shoulder's key; nil for none
	if want.DefaultShoulder != "" {
		var holder string
		defaultID = new(int64)
		err := tx.QueryRow(ctx, `select s.id, coalesce(m.name, '') from shoulder s left join manager m on m.id = s.manager_id
			where s.naan = $1 and s.shoulder = $2`, naan, want.DefaultShoulder).Scan(defaultID, &holder)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, &RegistrationError{What: what, Rule: fmt.Sprintf("no shoulder %s in NAAN %s (see `arkhe shoulder list`)", want.DefaultShoulder, naan)}
		}
		if err != nil {
			return nil, fmt.Errorf("%s: read shoulder %s: %w", what, want.DefaultShoulder, err)
		}
		if holder != name {
			return nil, &RegistrationError{What: what, Rule: fmt.Sprintf("a default shoulder is one the manager holds; %s is held by %s", want.DefaultShoulder, holderText(holder))}
		}
	}
	if have.DepartedAt != nil && (want.Active || want.DefaultShoulder != "") {
		return nil, &RegistrationError{What: what, Rule: departedRule(have)}
	}
	var changes []Change
	if want.QuotaPerDay != have.QuotaPerDay {
		changes = append(changes, Change{Field: "quota", Before: quotaText(have.QuotaPerDay), After: quotaText(want.QuotaPerDay),
			column: "quota_per_day", before: quotaValue(have.QuotaPerDay), after: quotaValue(want.QuotaPerDay)})
	}
	if want.CommitmentLevel != have.CommitmentLevel {
		changes = append(changes, Change{Field: "commitment", Before: orNone(have.CommitmentLevel), After: want.CommitmentLevel,
			column: "commitment_level", before: nullable(have.CommitmentLevel), after: want.CommitmentLevel})
	}
	if want.DefaultShoulder != have.DefaultShoulder {
		changes = append(changes, Change{Field: "default shoulder", Before: orNone(have.DefaultShoulder), After: orNone(want.DefaultShoulder),
			column: "default_shoulder", before: nullable(have.DefaultShoulder), after: nullable(want.DefaultShoulder)})
	}
	if want.Active != have.Active {
		changes = append(changes, Change{Field: "active", Before: fmt.Sprint(have.Active), After: fmt.Sprint(want.Active),
			column: "active", before: have.Active, after: want.Active})
	}
	if len(changes) == 0 {
		return nil, nil
	}
	// plain values only: Citus evaluates no function of a column in an UPDATE of a reference table
	_, err = tx.Exec(ctx, `update manager set quota_per_day = $2, commitment_level = $3, active = $4, default_shoulder_id = $5
		where id = $1`, have.id, quotaValue(want.QuotaPerDay), nullable(want.CommitmentLevel), want.Active, defaultID)
	if err != nil {
		rule := ruleSeeDatabaseError
		var pgErr *pgconn.PgError
		switch SQLState(err) {
		case CodeForeignKeyViolation:
			rule = "a default shoulder is one the manager holds"
		case CodeCheckViolation:
			rule = quotaRule
			if errors.As(err, &pgErr) && pgErr.ConstraintName == "manager_departed" {
				rule = "a departed manager stays inactive and holds no default shoulder: register a new manager"
			}
		case CodeInsufficientPrivilege:
			rule = ruleOperatorOnly
		}
		return nil, &RegistrationError{What: what, Rule: rule, Err: err}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("%s: commit: %w", what, err)
	}
	return changes, nil
}

// holderText names a shoulder's manager for a message: the quoted name, or "no manager".
func holderText(name string) string {
	if name == "" {
		return "no manager"
	}
	return fmt.Sprintf("%q", name)
}

// quotaValue is a quota as stored: nil (no limit) for 0.
func quotaValue(q int) any {
	if q <= 0 {
		return nil
	}
	return q
}

// nullable is s as stored: nil for "".
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Departure is what SucceedManager or DepartManager did to a manager.
type Departure struct {
	NAAN, Manager string
	// Successor is the manager's successor: the one named to SucceedManager, or for
	// DepartManager the one it had already ("" for none).
	Successor string
	// DepartedAt is when the manager departed: now, or earlier when it had departed already.
	DepartedAt time.Time
	// Changes says what changed, from what to what; none when the manager had departed (with
	// that successor) already: nothing was written.
	Changes []Change
	// Shoulders are the shoulders it holds, sorted: they keep their ARKs and mint nothing
	// until an active manager holds them.
	Shoulders []string
	// Clients are its active clients, sorted: they act for nobody now (the database refuses
	// their mints, imports, repoints and tombstones).
	Clients []string
}

// successionRule is what a succession the database refused (AK008) is told.
const successionRule = "a successor is another active manager of the same NAAN, and a chain of successions never comes back to a manager on it"

// SucceedManager records that manager successor of the same NAAN succeeds manager name of naan,
// one-way: name departs now (if it had not: it becomes inactive for ever and loses its default
// shoulder), its clients act for nobody from this transaction on, its shoulders keep their ARKs
// and mint nothing until an active manager holds them, and successor's clients holding
// ark:update or ark:tombstone may repoint and tombstone the ARKs of name's shoulders, and of the
// shoulders of every manager name succeeded (the database computes reach along the chain). A
// successor sits in the same NAAN: an ARK's NAAN and name never change, and the NAAN stands for
// the organisation that answers for every name under it (draft-kunze-ark §2.3); when a
// collection moves to another institution, EZID and N2T keep its ARKs under their NAAN and
// change where they lead. So a manager moving institutions is succeeded by a manager registered
// under the same NAAN for the new institution, and another NAAN's clients never change these
// ARKs. One audit
// event, manager.succeed, records it. Naming the successor it has already changes nothing (no
// Changes). Refusals are *RegistrationError: no such manager or successor, a manager
// succeeding itself, a manager succeeded by another already (a succession is one-way), an
// inactive successor, a chain that would come back (the database refuses a cycle, AK008), a
// session outside the operator role.
func (l *Ledger) SucceedManager(ctx context.Context, naan, name, successor string) (Departure, error) {
	return l.depart(ctx, naan, name, successor)
}

// DepartManager records that manager name of naan departs without a successor, one-way: it
// becomes inactive for ever and loses its default shoulder, its clients act for nobody from
// this transaction on, its shoulders keep their ARKs and mint nothing until an active manager
// holds them, and its ARKs are left to the NAAN's authority (clients of authority naan or
// system; a successor may still be named later with SucceedManager). One audit event,
// manager.depart, records it. A manager that departed already changes nothing (no Changes;
// Successor names its successor if it has one). Refusals are *RegistrationError.
func (l *Ledger) DepartManager(ctx context.Context, naan, name string) (Departure, error) {
	return l.depart(ctx, naan, name, "")
}

// depart is SucceedManager (successor given) and DepartManager (successor "").
func (l *Ledger) depart(ctx context.Context, naan, name, successor string) (Departure, error) {
	what := fmt.Sprintf("manager %q of NAAN %s", name, naan)
	d := Departure{NAAN: naan, Manager: name, Successor: successor}
	if successor == name {
		return d, &RegistrationError{What: what, Rule: "a manager does not succeed itself"}
	}
	tx, err := l.Pool.Begin(ctx)
	if err != nil {
		return d, fmt.Errorf("%s: %w", what, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	have, found, err := readManager(ctx, tx, naan, name, true)
	if err != nil {
		return d, err
	}
	if !found {
		return d, &RegistrationError{What: what, Rule: "not registered (see `arkhe manager list`)"}
	}
	var nextID *int64
	if successor != "" {
		next, found, err := readManager(ctx, tx, naan, successor, false)
		if err != nil {
			return d, err
		}
		switch {
		case !found:
			return d, &RegistrationError{What: what, Rule: fmt.Sprintf("no manager %q in NAAN %s to succeed it (a successor is a manager of the same NAAN: the NAAN answers for every ARK under it)", successor, naan)}
		case have.successor == successor:
			// named already: nothing changes
		case have.successor != "":
			return d, &RegistrationError{What: what, Rule: fmt.Sprintf("was succeeded by %q at %s; a succession is one-way", have.successor, stamp(have.DepartedAt))}
		case next.successor != "":
			return d, &RegistrationError{What: what, Rule: fmt.Sprintf("the successor must be active, and %q was succeeded by %q: name the last manager of its chain", successor, next.successor)}
		case !next.Active:
			return d, &RegistrationError{What: what, Rule: fmt.Sprintf("the successor must be active, and %q is not", successor)}
		}
		nextID = &next.id
	}
	if have.DepartedAt != nil && (successor == "" || have.successor == successor) {
		// departed (with that successor) already
		d.DepartedAt, d.Successor = *have.DepartedAt, have.successor
		return d, nil
	}
	// plain values only: Citus evaluates no function of a column in an UPDATE of a reference table
	set, args := "active = false, default_shoulder_id = null", []any{have.id}
	if have.DepartedAt == nil {
		set += ", departed_at = now()"
	}
	if nextID != nil {
		set += ", succeeded_by_id = $2"
		args = append(args, *nextID)
	}
	err = tx.QueryRow(ctx, `update manager set `+set+` where id = $1 returning departed_at`, args...).Scan(&d.DepartedAt)
	if err != nil {
		rule := ruleSeeDatabaseError
		switch SQLState(err) {
		case CodeSuccessionRefused:
			rule = successionRule
		case CodeRetiredOneWay:
			rule = "a departure and a succession are one-way"
		case CodeInsufficientPrivilege:
			rule = ruleOperatorOnly
		}
		return d, &RegistrationError{What: what, Rule: rule, Err: err}
	}
	if have.Active {
		d.Changes = append(d.Changes, Change{Field: "active", Before: "true", After: "false", column: "active", before: true, after: false})
	}
	if have.DefaultShoulder != "" {
		d.Changes = append(d.Changes, Change{Field: "default shoulder", Before: have.DefaultShoulder, After: "none",
			column: "default_shoulder", before: have.DefaultShoulder, after: nil})
	}
	if have.DepartedAt == nil {
		d.Changes = append(d.Changes, Change{Field: "departed", Before: "none", After: stamp(&d.DepartedAt),
			column: "departed_at", before: nil, after: stampValue(&d.DepartedAt)})
	}
	if successor != "" {
		d.Changes = append(d.Changes, Change{Field: "succeeded by", Before: "none", After: successor,
			column: "succeeded_by", before: nil, after: successor})
	}
	if err := tx.QueryRow(ctx, `select
		coalesce((select array_agg(shoulder order by shoulder) from shoulder where manager_id = $1), '{}'),
		coalesce((select array_agg(client_id order by client_id) from client where manager_id = $1 and active), '{}')`,
		have.id).Scan(&d.Shoulders, &d.Clients); err != nil {
		return d, fmt.Errorf("%s: read its shoulders and clients: %w", what, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return d, fmt.Errorf("%s: commit: %w", what, err)
	}
	return d, nil
}

// ClientUpdate names the registered values SetClient changes; a nil field (and NoExpiry false)
// stays as it is. Narrowing a client's reach is always possible; widening it (a scope added, a
// pin removed or moved, a later expiry or none) is the operator role's decision, and the
// database refuses it to anyone else (on a ledger without roles, to everyone: register a new
// client there).
type ClientUpdate struct {
	Scopes    []string   // the client's scopes from now on, each one of ark:mint, ark:update, ark:tombstone, ark:import, ark:read; nil: unchanged
	ExpiresAt *time.Time // a new expiry
	NoExpiry  bool       // remove the expiry: the client never expires (not with ExpiresAt)
	Shoulder  *string    // pin the client to this shoulder ("/x9"); "" removes the pin
	Active    *bool      // false stops the client at once; true lets it act again
}

// clientRow is a client as SetClient reads it.
type clientRow struct {
	id                        int64
	naan, authority, shoulder string
	scopes                    []string
	expiresAt                 *time.Time
	active                    bool
}

// SetClient changes the registered values u names of client clientID and returns what
// changed, from what to what (none when it held those values already: nothing is written). One
// audit event records it: client.enable or client.disable when only the state changed, else
// client.set. Refusals are *RegistrationError: no such client or shoulder, an unknown scope,
// both an expiry and none, a widening of its reach by a session outside the operator role (or
// on a ledger without roles; the database refuses it, AK004), a manager client pinned to a
// shoulder its manager does not hold, a client of authority naan without an expiry.
func (l *Ledger) SetClient(ctx context.Context, clientID string, u ClientUpdate) ([]Change, error) {
	what := "client " + clientID
	if u.ExpiresAt != nil && u.NoExpiry {
		return nil, &RegistrationError{What: what, Rule: "give a new expiry or none, not both"}
	}
	scopes, err := scopeSet(what, u.Scopes)
	if err != nil {
		return nil, err
	}
	tx, err := l.Pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var have clientRow
	err = tx.QueryRow(ctx, `select c.id, c.naan, c.authority, coalesce(s.shoulder, ''), c.allowed_scopes, c.expires_at, c.active
		from client c left join shoulder s on s.id = c.shoulder_id where c.client_id = $1 for update of c`, clientID).
		Scan(&have.id, &have.naan, &have.authority, &have.shoulder, &have.scopes, &have.expiresAt, &have.active)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, &RegistrationError{What: what, Rule: "not registered (see `arkhe client list`)"}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	want := have
	if scopes != nil {
		want.scopes = scopes
	}
	if u.ExpiresAt != nil {
		want.expiresAt = u.ExpiresAt
	}
	if u.NoExpiry {
		want.expiresAt = nil
	}
	if u.Shoulder != nil {
		want.shoulder = storedShoulder(*u.Shoulder)
	}
	if u.Active != nil {
		want.active = *u.Active
	}
	var pinID *int64 // the pinned shoulder's key; nil for none
	if want.shoulder != "" {
		pinID = new(int64)
		err := tx.QueryRow(ctx, `select id from shoulder where naan = $1 and shoulder = $2`, have.naan, want.shoulder).Scan(pinID)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, &RegistrationError{What: what, Rule: fmt.Sprintf("no shoulder %s in NAAN %s to pin to (see `arkhe shoulder list`)", want.shoulder, have.naan)}
		}
		if err != nil {
			return nil, fmt.Errorf("%s: read shoulder %s: %w", what, want.shoulder, err)
		}
	}
	cs, widened := clientChanges(have, &want)
	if len(cs) == 0 {
		return nil, nil
	}
	// plain values only: Citus evaluates no function of a column in an UPDATE of a reference table
	_, err = tx.Exec(ctx, `update client set allowed_scopes = $2, expires_at = $3, active = $4, shoulder_id = $5
		where id = $1`, have.id, want.scopes, want.expiresAt, want.active, pinID)
	if err != nil {
		return nil, &RegistrationError{What: what, Rule: l.clientSetRule(ctx, err, widened), Err: err}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("%s: commit: %w", what, err)
	}
	return cs, nil
}

// scopeSet returns the scopes of a client update without repeats, nil for nil (unchanged); an
// unknown scope is a *RegistrationError of what.
func scopeSet(what string, given []string) ([]string, error) {
	if given == nil {
		return nil, nil
	}
	scopes := []string{}
	for _, s := range given {
		if !slices.Contains(clientScopes[:], s) {
			return nil, &RegistrationError{What: what, Rule: fmt.Sprintf("unknown scope %q; scopes are %s", s, strings.Join(clientScopes[:], " "))}
		}
		if !slices.Contains(scopes, s) {
			scopes = append(scopes, s)
		}
	}
	return scopes, nil
}

// clientChanges returns what changes from client row have to *want, and in words how it widens
// the client's reach (a scope added, an expiry later or removed, a pin removed or moved); a
// scope set equal to have's keeps have's order in *want.
func clientChanges(have clientRow, want *clientRow) (cs []Change, widened []string) {
	sameScopes := len(want.scopes) == len(have.scopes) && !slices.ContainsFunc(want.scopes, func(s string) bool { return !slices.Contains(have.scopes, s) })
	if sameScopes {
		want.scopes = have.scopes // the same set: kept in its order, unchanged
	} else {
		cs = append(cs, Change{Field: "scopes", Before: scopesText(have.scopes), After: scopesText(want.scopes),
			column: "allowed_scopes", before: have.scopes, after: want.scopes})
		for _, s := range want.scopes {
			if !slices.Contains(have.scopes, s) {
				widened = append(widened, "scope "+s+" added")
			}
		}
	}
	sameExpiry := (want.expiresAt == nil) == (have.expiresAt == nil) && (want.expiresAt == nil || want.expiresAt.Equal(*have.expiresAt))
	if !sameExpiry {
		cs = append(cs, Change{Field: "expires", Before: expiryText(have.expiresAt), After: expiryText(want.expiresAt),
			column: "expires_at", before: stampValue(have.expiresAt), after: stampValue(want.expiresAt)})
		switch {
		case have.expiresAt != nil && want.expiresAt == nil:
			widened = append(widened, "expiry removed")
		case have.expiresAt != nil && want.expiresAt.After(*have.expiresAt):
			widened = append(widened, "a later expiry")
		}
	}
	if want.shoulder != have.shoulder {
		cs = append(cs, Change{Field: "pinned shoulder", Before: orNone(have.shoulder), After: orNone(want.shoulder),
			column: "shoulder", before: nullable(have.shoulder), after: nullable(want.shoulder)})
		switch {
		case have.shoulder != "" && want.shoulder == "":
			widened = append(widened, "pin "+have.shoulder+" removed")
		case have.shoulder != "":
			widened = append(widened, "pin moved from "+have.shoulder+" to "+want.shoulder)
		}
	}
	if want.active != have.active {
		cs = append(cs, Change{Field: "active", Before: fmt.Sprint(have.active), After: fmt.Sprint(want.active),
			column: "active", before: have.active, after: want.active})
	}
	return cs, widened
}

// clientSetRule explains the database's refusal err of a client update that widens the
// client's reach as widened says (empty when it narrows it).
func (l *Ledger) clientSetRule(ctx context.Context, err error, widened []string) string {
	var pgErr *pgconn.PgError
	switch SQLState(err) {
	case CodeReachRefused:
		if len(widened) == 0 {
			return "a manager client can be pinned only to a shoulder its manager holds"
		}
		how := strings.Join(widened, ", ")
		if _, hasRoles, rerr := l.LedgerRoles(ctx); rerr == nil && !hasRoles {
			return "this widens the client's reach (" + how + "), which is the operator role's decision, and a ledger without roles has none: " +
				"narrowing is always possible; register a new client for wider reach (or give the ledger roles: arkhe init --roles)"
		}
		return "this widens the client's reach (" + how + "), which is the operator role's decision, and this session's database role is not a member of it"
	case CodeCheckViolation:
		if errors.As(err, &pgErr) && pgErr.ConstraintName == "client_naan_expires" {
			return "a client of authority naan always has an expiry"
		}
		return "scopes are " + strings.Join(clientScopes[:], " ")
	case CodeInsufficientPrivilege:
		return ruleOperatorOnly
	}
	return ruleSeeDatabaseError
}

// scopesText prints scopes space-separated; "none" for none.
func scopesText(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, " ")
}

// expiryText prints an expiry; "never" for none.
func expiryText(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return stamp(t)
}
