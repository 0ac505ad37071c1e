package ledger

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"os"
	"os/user"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Ledger is a handle on one arkhe ledger: a pgx pool over a migrated database.
// It is safe for concurrent use. Close it when done.
type Ledger struct {
	Pool *pgxpool.Pool

	// proof is the API key Authenticate accepted (nil before): every connection of a pool made
	// by Open proves it to the ledger before its first use (arkhe_key_login), so that a ledger
	// requiring keys accepts the session's writes.
	proof atomic.Pointer[keyProof]
	// proved holds the connections (*pgconn.PgConn) that proved proof, mapped to it.
	proved sync.Map
	// keyParams are the Argon2id parameters CreateKey hashes new keys with and Authenticate
	// rehashes other keys to; the zero value means defaultArgonParams (only the package's own
	// tests set others).
	keyParams argonParams
}

// Open connects to the ledger at url (a libpq URL or key/value string; "" reads the libpq
// environment) with a pool of up to maxConns connections (0: pgxpool's default). Each session
// reports the OS account the program runs as in the setting arkhe.os_user, which audit records
// carry. It does not migrate; call Init for that (and CheckSchema to refuse a database without
// the ledger).
func Open(ctx context.Context, url string, maxConns int32) (*Ledger, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database URL: %w", err)
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	// the OS account the program runs as, for the actor of audit records (arkhe.os_user: as
	// reported by the client; the database role is the database's own knowledge)
	if _, set := cfg.ConnConfig.RuntimeParams["arkhe.os_user"]; !set {
		if name := osUser(); name != "" {
			cfg.ConnConfig.RuntimeParams["arkhe.os_user"] = name
		}
	}
	l := &Ledger{}
	cfg.PrepareConn = l.proveConn
	cfg.BeforeClose = func(c *pgx.Conn) { l.proved.Delete(c.PgConn()) }
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to ledger: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to ledger: %w", err)
	}
	l.Pool = pool
	return l, nil
}

// Close releases the pool. The sessions that proved an API key forget it first
// (arkhe_key_logout), so their records do not outlive them.
func (l *Ledger) Close() {
	if l.proof.Load() != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		for _, c := range l.Pool.AcquireAllIdle(ctx) {
			_, _ = c.Exec(ctx, `select arkhe_key_logout()`)
			c.Release()
		}
		cancel()
	}
	l.Pool.Close()
}

// Init applies pending migrations (idempotent: a second call changes nothing) with layout
// (LayoutAuto: the ledger's own, else detected from the citus extension; see Migrate).
func (l *Ledger) Init(ctx context.Context, layout Layout) (MigrateResult, error) {
	conn, err := l.Pool.Acquire(ctx)
	if err != nil {
		return MigrateResult{}, fmt.Errorf("init ledger: %w", err)
	}
	defer conn.Release()
	return Migrate(ctx, conn.Conn(), layout)
}

// ShoulderRule is the rule an active shoulder follows (the first-digit convention): what a
// registration refused by shoulder_active_first_digit is told.
const ShoulderRule = "an active shoulder must be one or more consonants (bcdfghjkmnpqrstvwxz) followed by one digit, " +
	"e.g. /x9 or /bc7; register other forms as --status reserved"

// naanRule explains a refused NAAN insert: a check violation or an over-long value breaks the
// NAAN form (draft-kunze-ark §2.3); a refused privilege is ruleOperatorOnly; anything else is
// ruleSeeDatabaseError.
func naanRule(err error) string {
	switch SQLState(err) {
	case CodeCheckViolation, "22001": // 22001 string_data_right_truncation: over 16 octets
		return "a NAAN is 1-16 digits or lowercase consonants bcdfghjkmnpqrstvwxz (draft-kunze-ark §2.3)"
	case CodeInsufficientPrivilege:
		return ruleOperatorOnly
	}
	return ruleSeeDatabaseError
}

// registrationRule returns rule when err carries SQLSTATE code, ruleOperatorOnly for a refused
// privilege, else ruleSeeDatabaseError.
func registrationRule(err error, code, rule string) string {
	switch SQLState(err) {
	case code:
		return rule
	case CodeInsufficientPrivilege:
		return ruleOperatorOnly
	}
	return ruleSeeDatabaseError
}

// NAAN is a Name Assigning Authority Number registration (draft-kunze-ark §2.3:
// a string of betanumerics, at most 16 octets; "099999" is not "99999").
type NAAN struct {
	NAAN            string
	Name            string
	IsAuthoritative bool
	Redirect        string
	Policy          string
	CreatedAt       time.Time
}

// AddNAAN registers a NAAN. Registering one that exists is a no-op returning created=false when
// every value asked is the one it holds (Name, Redirect and Policy when given, IsAuthoritative
// always); when one differs it is a *RegistrationError naming each differing field with the
// value held and the value asked, and nothing changes.
func (l *Ledger) AddNAAN(ctx context.Context, n NAAN) (created bool, err error) {
	tag, err := l.Pool.Exec(ctx, `insert into naan (naan, name, is_authoritative, redirect, na_policy)
		values ($1, $2, $3, nullif($4, ''), nullif($5, '')) on conflict (naan) do nothing`,
		n.NAAN, n.Name, n.IsAuthoritative, n.Redirect, n.Policy)
	if err != nil {
		return false, &RegistrationError{What: "NAAN " + n.NAAN, Rule: naanRule(err), Err: err}
	}
	if tag.RowsAffected() == 1 {
		return true, nil
	}
	var have NAAN
	if err := l.Pool.QueryRow(ctx, `select coalesce(name, ''), is_authoritative, coalesce(redirect, ''), coalesce(na_policy, '')
		from naan where naan = $1`, n.NAAN).Scan(&have.Name, &have.IsAuthoritative, &have.Redirect, &have.Policy); err != nil {
		return false, fmt.Errorf("read NAAN %s: %w", n.NAAN, err)
	}
	var d differences
	d.text("name", have.Name, n.Name, n.Name != "")
	d.bool("authoritative", have.IsAuthoritative, n.IsAuthoritative)
	d.text("redirect", have.Redirect, n.Redirect, n.Redirect != "")
	d.text("policy", have.Policy, n.Policy, n.Policy != "")
	return false, d.refusal("NAAN "+n.NAAN, "")
}

// differences collects the fields in which a registration asked differs from the one held.
type differences []string

// text adds field when asked (only when given) differs from have; "" reads as none.
func (d *differences) text(field, have, asked string, given bool) {
	if given && have != asked {
		*d = append(*d, fmt.Sprintf("%s %s (asked %s)", field, quotedOrNone(have), quotedOrNone(asked)))
	}
}

// bool adds field when asked differs from have.
func (d *differences) bool(field string, have, asked bool) {
	if have != asked {
		*d = append(*d, fmt.Sprintf("%s %t (asked %t)", field, have, asked))
	}
}

// refusal returns nil for no differences, else a *RegistrationError for what naming each, and
// how to change the registration when change is not "".
func (d differences) refusal(what, change string) error {
	if len(d) == 0 {
		return nil
	}
	rule := "is registered already with " + strings.Join(d, ", ") + "; nothing changed"
	if change != "" {
		rule += " (" + change + ")"
	}
	return &RegistrationError{What: what, Rule: rule}
}

// quotedOrNone quotes s, or returns none for "".
func quotedOrNone(s string) string {
	if s == "" {
		return "none"
	}
	return fmt.Sprintf("%q", s)
}

// ListNAANs returns every NAAN in the ledger, ordered by NAAN string.
func (l *Ledger) ListNAANs(ctx context.Context) ([]NAAN, error) {
	rows, err := l.Pool.Query(ctx, `select naan, coalesce(name, ''), is_authoritative, coalesce(redirect, ''),
		coalesce(na_policy, ''), created_at from naan order by naan`)
	if err != nil {
		return nil, fmt.Errorf("list NAANs: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (NAAN, error) {
		var n NAAN
		err := r.Scan(&n.NAAN, &n.Name, &n.IsAuthoritative, &n.Redirect, &n.Policy, &n.CreatedAt)
		return n, err
	})
}

// CommitmentLevels are the NLM permanence ratings, strongest first.
var CommitmentLevels = [...]string{
	"Permanent: Unchanging Content", "Permanent: Stable Content",
	"Permanent: Dynamic Content", "Not Guaranteed",
}

// Manager is an organisation holding shoulders under a NAAN. Name is
// internal only, never published. QuotaPerDay 0 means no limit.
type Manager struct {
	NAAN            string
	Name            string
	CommitmentLevel string
	QuotaPerDay     int
	DefaultShoulder string // "/x9"; "" for none
	Active          bool
	Shoulders       int // in lists: how many shoulders it holds
	// DepartedAt is when the manager left (departed, or was succeeded); nil while it has not.
	DepartedAt *time.Time
	// Successors, in lists: the chain of successions from this manager on, its own successor
	// first (["B", "C"] for a manager succeeded by B, which C succeeded); empty for none.
	Successors []string
}

// AddManager registers a manager. An existing one with the same NAAN and name is left as it is:
// when every value given (commitment, quota, default shoulder) is the one it holds, it returns
// created=false; when one differs it is a *RegistrationError naming it (nothing changed;
// SetManager changes a registration). A new manager holds no shoulder yet, so DefaultShoulder
// given for one is a *RegistrationError too (add the shoulder, then make it the default).
func (l *Ledger) AddManager(ctx context.Context, m Manager) (created bool, err error) {
	what := fmt.Sprintf("manager %q of NAAN %s", m.Name, m.NAAN)
	if m.CommitmentLevel != "" && !validCommitment(m.CommitmentLevel) {
		return false, &RegistrationError{What: "manager " + m.Name,
			Rule: fmt.Sprintf("commitment level must be one of the NLM ratings: %s", strings.Join(CommitmentLevels[:], "; "))}
	}
	if m.QuotaPerDay < 0 {
		return false, &RegistrationError{What: what, Rule: quotaRule}
	}
	m.DefaultShoulder = storedShoulder(m.DefaultShoulder)
	have, found, err := readManager(ctx, l.Pool, m.NAAN, m.Name, false)
	if err != nil {
		return false, err
	}
	if !found {
		if m.DefaultShoulder != "" {
			return false, &RegistrationError{What: what, Rule: "a new manager holds no shoulder yet: register it, then its shoulder with `shoulder add --default` (or `manager set --default-shoulder`)"}
		}
		var quota *int
		if m.QuotaPerDay > 0 {
			quota = &m.QuotaPerDay
		}
		tag, err := l.Pool.Exec(ctx, `insert into manager (naan, name, commitment_level, quota_per_day)
			values ($1, $2, nullif($3, ''), $4) on conflict (naan, name) do nothing`,
			m.NAAN, m.Name, m.CommitmentLevel, quota)
		if err != nil {
			return false, &RegistrationError{What: "manager " + m.Name, Rule: registrationRule(err, CodeForeignKeyViolation, "its NAAN must be registered first"), Err: err}
		}
		if tag.RowsAffected() == 1 {
			return true, nil
		}
		// registered meanwhile by another session: compare with that
		if have, _, err = readManager(ctx, l.Pool, m.NAAN, m.Name, false); err != nil {
			return false, err
		}
	}
	var differ []string
	if m.CommitmentLevel != "" && m.CommitmentLevel != have.CommitmentLevel {
		differ = append(differ, fmt.Sprintf("commitment %s (asked %s)", orNone(have.CommitmentLevel), m.CommitmentLevel))
	}
	if m.QuotaPerDay > 0 && m.QuotaPerDay != have.QuotaPerDay {
		differ = append(differ, fmt.Sprintf("quota %s (asked %d)", quotaText(have.QuotaPerDay), m.QuotaPerDay))
	}
	if m.DefaultShoulder != "" && m.DefaultShoulder != have.DefaultShoulder {
		differ = append(differ, fmt.Sprintf("default shoulder %s (asked %s)", orNone(have.DefaultShoulder), m.DefaultShoulder))
	}
	if len(differ) > 0 {
		return false, &RegistrationError{What: what, Rule: "is registered already with " + strings.Join(differ, ", ") +
			"; nothing changed (`manager set` changes a registration)"}
	}
	return false, nil
}

// readManager reads manager name of naan through q (locking its row when forUpdate), with its
// default shoulder, departure and direct successor (Successors holds that one only). found is
// false when there is no such manager.
func readManager(ctx context.Context, q querier, naan, name string, forUpdate bool) (m managerRow, found bool, err error) {
	lock := ""
	if forUpdate {
		lock = " for update of m"
	}
	err = q.QueryRow(ctx, `select m.id, m.naan, m.name, coalesce(m.commitment_level, ''), coalesce(m.quota_per_day, 0),
		coalesce(d.shoulder, ''), m.active, m.departed_at, coalesce(n.name, '')
		from manager m left join shoulder d on d.id = m.default_shoulder_id left join manager n on n.id = m.succeeded_by_id
		where m.naan = $1 and m.name = $2`+lock, naan, name).Scan(&m.id, &m.NAAN, &m.Name, &m.CommitmentLevel, &m.QuotaPerDay,
		&m.DefaultShoulder, &m.Active, &m.DepartedAt, &m.successor)
	if errors.Is(err, pgx.ErrNoRows) {
		return m, false, nil
	}
	if err != nil {
		return m, false, fmt.Errorf("read manager %q of NAAN %s: %w", name, naan, err)
	}
	return m, true, nil
}

// managerRow is a manager as this package reads it: the registration and its internal key.
type managerRow struct {
	Manager
	id        int64
	successor string // the direct successor's name; "" for none
}

// quotaRule is what a refused quota is told.
const quotaRule = "a quota is a positive number of new mints per UTC day, or 0 for no limit"

// quotaText prints a quota: the number, or "none" for no limit.
func quotaText(q int) string {
	if q <= 0 {
		return "none"
	}
	return fmt.Sprint(q)
}

// orNone returns s, or "none" for "".
func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// storedShoulder returns a shoulder in its stored form, with its slash ("x9" -> "/x9"); "" stays "".
func storedShoulder(s string) string {
	if s != "" && !strings.HasPrefix(s, "/") {
		return "/" + s
	}
	return s
}

func validCommitment(s string) bool {
	for _, c := range CommitmentLevels {
		if c == s {
			return true
		}
	}
	return false
}

// SetDefaultShoulder makes shoulder (e.g. "/x9") the manager's default mint target. The database
// refuses a shoulder the manager does not hold.
func (l *Ledger) SetDefaultShoulder(ctx context.Context, naan, manager, shoulder string) error {
	tag, err := l.Pool.Exec(ctx, `update manager m set default_shoulder_id = s.id
		from shoulder s where m.naan = $1 and m.name = $2 and s.naan = $1 and s.shoulder = $3`,
		naan, manager, shoulder)
	if err != nil {
		return &RegistrationError{What: "default shoulder " + shoulder, Rule: registrationRule(err, CodeForeignKeyViolation, "the manager must hold the shoulder"), Err: err}
	}
	if tag.RowsAffected() == 0 {
		return &RegistrationError{What: "default shoulder " + shoulder, Rule: fmt.Sprintf("no manager %q or shoulder %s in NAAN %s", manager, shoulder, naan)}
	}
	return nil
}

// ListManagers returns the managers of naan ("" for all), ordered by NAAN and name, each with
// its departure and its chain of successors.
func (l *Ledger) ListManagers(ctx context.Context, naan string) ([]Manager, error) {
	rows, err := l.Pool.Query(ctx, `select m.naan, m.name, coalesce(m.commitment_level, ''), coalesce(m.quota_per_day, 0),
		coalesce(d.shoulder, ''), m.active, (select count(*) from shoulder s where s.manager_id = m.id),
		m.departed_at, coalesce(n.name, '')
		from manager m left join shoulder d on d.id = m.default_shoulder_id left join manager n on n.id = m.succeeded_by_id
		where $1::text = '' or m.naan = $1::text order by m.naan, m.name`, naan)
	if err != nil {
		return nil, fmt.Errorf("list managers: %w", err)
	}
	successor := map[[2]string]string{} // (NAAN, name) -> the direct successor (same NAAN)
	ms, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Manager, error) {
		var m Manager
		var next string
		err := r.Scan(&m.NAAN, &m.Name, &m.CommitmentLevel, &m.QuotaPerDay, &m.DefaultShoulder, &m.Active, &m.Shoulders,
			&m.DepartedAt, &next)
		if next != "" {
			successor[[2]string{m.NAAN, m.Name}] = next
		}
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("list managers: %w", err)
	}
	for i, m := range ms {
		seen := map[string]bool{m.Name: true} // a chain never cycles (the database refuses one)
		for next, ok := successor[[2]string{m.NAAN, m.Name}]; ok && !seen[next]; next, ok = successor[[2]string{m.NAAN, next}] {
			ms[i].Successors = append(ms[i].Successors, next)
			seen[next] = true
		}
	}
	return ms, nil
}

// Shoulder is a namespace under a NAAN. Shoulder is stored
// with its slash ("/x9"). Status is active, reserved, delegated or retired.
type Shoulder struct {
	NAAN        string
	Shoulder    string
	Manager     string // manager name; "" for none
	Status      string
	CheckZone   string // naan_name, name_only, none
	BladeLength int
	Minted      int64 // in lists: ARKs in the shoulder
	Draws       int64 // blade draws by mint runs
	Collisions  int64 // draws that hit an existing name
	CreatedAt   time.Time
	RetiredAt   *time.Time

	// BladeTemplate is the class of each blade position, 'e' a betanumeric and 'd' a digit, of
	// a shoulder that mints its old minter's form (shoulder adopt --minter-state); "" for
	// BladeLength betanumerics.
	BladeTemplate string
}

// shoulderDrawTries bounds the random search for an unused shoulder name.
const shoulderDrawTries = 1000

// AddShoulder is RegisterShoulder without saying whether the shoulder was registered now.
func (l *Ledger) AddShoulder(ctx context.Context, s Shoulder, drawLength int) (string, error) {
	got, _, err := l.RegisterShoulder(ctx, s, drawLength)
	return got, err
}

// RegisterShoulder registers a shoulder and returns it ("/x9") with created=true. If s.Shoulder
// is empty, one is drawn at random (crypto/rand, never a sequence: a sequence would leak the
// order organisations joined) among the unused first-digit shoulders of length drawLength
// (characters after the slash, >= 2). An active shoulder must follow the first-digit
// convention; the database refuses otherwise. A given shoulder that exists is a no-op returning
// created=false when it is registered as asked (Manager when given; Status, CheckZone and
// BladeLength with their defaults; no blade template); when a field differs it is a
// *RegistrationError naming each (a retired shoulder stays retired and is never reused).
func (l *Ledger) RegisterShoulder(ctx context.Context, s Shoulder, drawLength int) (shoulder string, created bool, err error) {
	if s.Status == "" {
		s.Status = "active"
	}
	if s.CheckZone == "" {
		s.CheckZone = "naan_name"
	}
	if s.BladeLength == 0 {
		s.BladeLength = 8
	}
	// the manager first: a name that matches nothing refuses the registration (a VALUES insert,
	// whose count Citus reports as inserted; it counts an INSERT ... SELECT's rows as selected)
	managerID, err := l.lookupID(ctx, `select id from manager where naan = $1 and name = $2`, s.NAAN, s.Manager)
	if err != nil {
		what := "shoulder " + s.Shoulder + " of NAAN " + s.NAAN
		if s.Shoulder == "" {
			what = "shoulder of NAAN " + s.NAAN
		}
		rule := fmt.Sprintf("no manager %q in NAAN %s", s.Manager, s.NAAN)
		switch {
		case SQLState(err) == CodeInsufficientPrivilege:
			rule = ruleOperatorOnly
		case !errors.Is(err, errNotRegistered):
			rule = ruleSeeDatabaseError
		}
		return "", false, &RegistrationError{What: what, Rule: rule, Err: err}
	}
	insert := func(name string) (bool, error) {
		tag, err := l.Pool.Exec(ctx, `insert into shoulder (naan, shoulder, manager_id, status, check_zone, blade_length)
			values ($1, $2, $3, $4, $5, $6) on conflict (naan, shoulder) do nothing`,
			s.NAAN, name, managerID, s.Status, s.CheckZone, s.BladeLength)
		if err != nil {
			rule := ruleSeeDatabaseError
			switch SQLState(err) {
			case CodeCheckViolation:
				rule = "status is active, reserved or delegated; check zone naan_name, name_only or none; blade length 1-64"
				var pgErr *pgconn.PgError
				if errors.As(err, &pgErr) && pgErr.ConstraintName == "shoulder_active_first_digit" {
					rule = ShoulderRule
				}
			case CodeForeignKeyViolation:
				rule = "the NAAN must be registered first"
			case CodeInsufficientPrivilege:
				rule = ruleOperatorOnly
			}
			return false, &RegistrationError{What: fmt.Sprintf("shoulder %s of NAAN %s", name, s.NAAN), Rule: rule, Err: err}
		}
		return tag.RowsAffected() == 1, nil
	}
	if s.Shoulder != "" {
		if !strings.HasPrefix(s.Shoulder, "/") {
			s.Shoulder = "/" + s.Shoulder
		}
		ok, err := insert(s.Shoulder)
		if err != nil {
			return "", false, err
		}
		if !ok {
			return s.Shoulder, false, l.sameShoulder(ctx, s)
		}
		return s.Shoulder, true, nil
	}
	if drawLength < 2 {
		return "", false, &RegistrationError{What: "shoulder", Rule: "a drawn shoulder has at least 2 characters (one consonant and a digit)"}
	}
	for i := 0; i < shoulderDrawTries; i++ {
		name, err := drawShoulder(drawLength)
		if err != nil {
			return "", false, err
		}
		ok, err := insert(name)
		if err != nil {
			return "", false, err
		}
		if ok {
			return name, true, nil
		}
	}
	return "", false, &RegistrationError{What: "shoulder", Rule: fmt.Sprintf("no unused shoulder of length %d found in %d random draws; the namespace is nearly full, use a longer length", drawLength, shoulderDrawTries)}
}

// sameShoulder returns nil when shoulder s (its defaults applied) is registered as asked, else a
// *RegistrationError naming each field that differs.
func (l *Ledger) sameShoulder(ctx context.Context, s Shoulder) error {
	var have Shoulder
	err := l.Pool.QueryRow(ctx, `select coalesce(m.name, ''), s.status, s.check_zone, s.blade_length, coalesce(s.blade_template, '')
		from shoulder s left join manager m on m.id = s.manager_id where s.naan = $1 and s.shoulder = $2`, s.NAAN, s.Shoulder).Scan(
		&have.Manager, &have.Status, &have.CheckZone, &have.BladeLength, &have.BladeTemplate)
	if err != nil {
		return fmt.Errorf("read shoulder %s of NAAN %s: %w", s.Shoulder, s.NAAN, err)
	}
	var d differences
	d.text("manager", have.Manager, s.Manager, s.Manager != "")
	d.text("status", have.Status, s.Status, true)
	d.text("check zone", have.CheckZone, s.CheckZone, true)
	if have.BladeLength != s.BladeLength {
		d = append(d, fmt.Sprintf("blade length %d (asked %d)", have.BladeLength, s.BladeLength))
	}
	d.text("blade template", have.BladeTemplate, "", true)
	change := "shoulders are unique per NAAN; `shoulder retire` retires one, `client set` and `manager set` change who mints where"
	if have.Status == "retired" {
		change = "a retired shoulder is never reused"
	}
	return d.refusal(fmt.Sprintf("shoulder %s of NAAN %s", s.Shoulder, s.NAAN), change)
}

const shoulderConsonants = "bcdfghjkmnpqrstvwxz"

// drawShoulder draws "/" + (length-1) consonants + one digit from crypto/rand.
func drawShoulder(length int) (string, error) {
	var b strings.Builder
	b.WriteByte('/')
	for i := 0; i < length; i++ {
		alphabet := shoulderConsonants
		if i == length-1 {
			alphabet = "0123456789"
		}
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		if err != nil {
			return "", fmt.Errorf("draw shoulder: %w", err)
		}
		b.WriteByte(alphabet[n.Int64()])
	}
	return b.String(), nil
}

// RetireShoulder sets a shoulder's status to retired, for ever (retired is one-way:
// nobody can rule out that the world used a name meanwhile).
// Retiring a retired shoulder is a no-op returning changed=false.
func (l *Ledger) RetireShoulder(ctx context.Context, naan, shoulder string) (changed bool, err error) {
	tag, err := l.Pool.Exec(ctx, `update shoulder set status = 'retired', retired_at = now()
		where naan = $1 and shoulder = $2 and status <> 'retired'`, naan, shoulder)
	if err != nil {
		return false, fmt.Errorf("retire shoulder %s of NAAN %s: %w", shoulder, naan, err)
	}
	if tag.RowsAffected() == 1 {
		return true, nil
	}
	var exists bool
	if err := l.Pool.QueryRow(ctx, `select exists (select 1 from shoulder where naan = $1 and shoulder = $2)`, naan, shoulder).Scan(&exists); err != nil {
		return false, fmt.Errorf("retire shoulder %s: %w", shoulder, err)
	}
	if !exists {
		return false, &RegistrationError{What: fmt.Sprintf("shoulder %s of NAAN %s", shoulder, naan), Rule: "not registered"}
	}
	return false, nil
}

// ShoulderDependents names who still relies on shoulder (e.g. "/x9") of naan: the managers whose
// default shoulder it is and the active clients pinned to it, each sorted by name. Both are empty
// for an unknown shoulder.
func (l *Ledger) ShoulderDependents(ctx context.Context, naan, shoulder string) (managers, clients []string, err error) {
	err = l.Pool.QueryRow(ctx, `select
		coalesce((select array_agg(m.name order by m.name) from manager m join shoulder s on s.id = m.default_shoulder_id
		          where s.naan = $1 and s.shoulder = $2), '{}'),
		coalesce((select array_agg(c.client_id order by c.client_id) from client c join shoulder s on s.id = c.shoulder_id
		          where s.naan = $1 and s.shoulder = $2 and c.active), '{}')`, naan, shoulder).Scan(&managers, &clients)
	if err != nil {
		return nil, nil, fmt.Errorf("dependents of shoulder %s of NAAN %s: %w", shoulder, naan, err)
	}
	return managers, clients, nil
}

// ListShoulders returns the shoulders of naan ("" for all) with their minted counts. The counts
// take one grouped pass over the NAAN's ARKs (ark has no index on shoulder_id; a count per
// shoulder would scan the table once per shoulder).
func (l *Ledger) ListShoulders(ctx context.Context, naan string) ([]Shoulder, error) {
	rows, err := l.Pool.Query(ctx, `with minted as (
			select shoulder_id, count(*) as n from ark where $1::text = '' or naan = $1::text group by shoulder_id)
		select s.naan, s.shoulder, coalesce(m.name, ''), s.status, s.check_zone, s.blade_length,
		coalesce(s.blade_template, ''), coalesce(k.n, 0), coalesce(t.draws, 0), coalesce(t.collisions, 0), s.created_at, s.retired_at
		from shoulder s left join manager m on m.id = s.manager_id left join minted k on k.shoulder_id = s.id
		left join shoulder_tally t on t.shoulder_id = s.id
		where $1::text = '' or s.naan = $1::text order by s.naan, s.shoulder`, naan)
	if err != nil {
		return nil, fmt.Errorf("list shoulders: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Shoulder, error) {
		var s Shoulder
		err := r.Scan(&s.NAAN, &s.Shoulder, &s.Manager, &s.Status, &s.CheckZone, &s.BladeLength, &s.BladeTemplate, &s.Minted,
			&s.Draws, &s.Collisions, &s.CreatedAt, &s.RetiredAt)
		return s, err
	})
}

// Client is a registered principal. Its reach — Authority (system, naan,
// manager), Manager, pinned Shoulder, Scopes — is a registration attribute: the database lets an
// update narrow it, never widen it. ExpiresAt is required when Authority is "naan".
type Client struct {
	ClientID    string
	NAAN        string
	Manager     string // manager name; required for authority "manager"
	SubjectType string // machine or person
	Authority   string
	Shoulder    string // pinned shoulder "/x9", or ""
	Scopes      []string
	Active      bool
	ExpiresAt   *time.Time
	// DBRole binds the client to a database login role: only sessions whose login role is it
	// or a member of it may mint, import, repoint or tombstone as the client (the database
	// refuses others, AK006). "" for none: any session with the writer's privileges may.
	DBRole string
}

// AddClient is RegisterClient without saying whether the client was registered now.
func (l *Ledger) AddClient(ctx context.Context, c Client) error {
	_, err := l.RegisterClient(ctx, c)
	return err
}

// RegisterClient registers a client and returns created=true. An existing client_id is a no-op
// returning created=false when it is registered as asked (NAAN, Manager, SubjectType, Authority,
// pinned Shoulder, the set of Scopes, ExpiresAt and DBRole all equal; its active state is not
// compared); when a field differs it is a *RegistrationError naming each, and nothing changes (a
// registration is never silently changed; SetClient changes one).
func (l *Ledger) RegisterClient(ctx context.Context, c Client) (created bool, err error) {
	if c.SubjectType == "" {
		c.SubjectType = "machine"
	}
	if c.Scopes == nil {
		c.Scopes = []string{}
	}
	// Resolve the named manager and pinned shoulder first: a name that matches nothing must refuse
	// the registration, never register a client with less pinning (wider reach) than asked.
	managerID, err := l.lookupID(ctx, `select id from manager where naan = $1 and name = $2`, c.NAAN, c.Manager)
	if err != nil {
		return false, &RegistrationError{What: "client " + c.ClientID, Rule: fmt.Sprintf("no manager %q in NAAN %s", c.Manager, c.NAAN), Err: err}
	}
	shoulderID, err := l.lookupID(ctx, `select id from shoulder where naan = $1 and shoulder = $2`, c.NAAN, c.Shoulder)
	if err != nil {
		return false, &RegistrationError{What: "client " + c.ClientID, Rule: fmt.Sprintf("no shoulder %s in NAAN %s to pin to", c.Shoulder, c.NAAN), Err: err}
	}
	_, err = l.Pool.Exec(ctx, `insert into client (client_id, naan, manager_id, subject_type, authority, shoulder_id, allowed_scopes, expires_at, db_role)
		values ($1, $2, $3, $4, $5, $6, $7, $8, nullif($9, ''))`,
		c.ClientID, c.NAAN, managerID, c.SubjectType, c.Authority, shoulderID, c.Scopes, c.ExpiresAt, c.DBRole)
	if SQLState(err) == CodeUniqueViolation {
		return false, l.sameClient(ctx, c)
	}
	if err != nil {
		rule := ruleSeeDatabaseError
		switch SQLState(err) {
		case CodeCheckViolation:
			rule = "authority naan needs --expires; authority manager needs --manager; scopes are ark:mint ark:update ark:tombstone ark:import ark:read"
		case CodeForeignKeyViolation:
			rule = "NAAN, manager and pinned shoulder must exist and belong to the same NAAN"
		case CodeReachRefused:
			rule = "a manager client can be pinned only to a shoulder its manager holds"
		case CodeUndefinedObject:
			rule = fmt.Sprintf("database role %s does not exist; create the login role first", c.DBRole)
		case CodeInsufficientPrivilege:
			rule = ruleOperatorOnly
		}
		return false, &RegistrationError{What: "client " + c.ClientID, Rule: rule, Err: err}
	}
	return true, nil
}

// sameClient returns nil when client c (its defaults applied) is registered as asked, else a
// *RegistrationError naming each field that differs.
func (l *Ledger) sameClient(ctx context.Context, c Client) error {
	var have Client
	err := l.Pool.QueryRow(ctx, `select c.naan, coalesce(m.name, ''), c.subject_type, c.authority, coalesce(s.shoulder, ''),
		c.allowed_scopes, c.expires_at, coalesce(c.db_role, '')
		from client c left join manager m on m.id = c.manager_id left join shoulder s on s.id = c.shoulder_id
		where c.client_id = $1`, c.ClientID).Scan(&have.NAAN, &have.Manager, &have.SubjectType, &have.Authority, &have.Shoulder,
		&have.Scopes, &have.ExpiresAt, &have.DBRole)
	if err != nil {
		return fmt.Errorf("read client %s: %w", c.ClientID, err)
	}
	var d differences
	d.text("NAAN", have.NAAN, c.NAAN, true)
	d.text("manager", have.Manager, c.Manager, true)
	d.text("subject", have.SubjectType, c.SubjectType, true)
	d.text("authority", have.Authority, c.Authority, true)
	d.text("pinned shoulder", have.Shoulder, c.Shoulder, true)
	if h, a := sortedSet(have.Scopes), sortedSet(c.Scopes); !slices.Equal(h, a) {
		d = append(d, fmt.Sprintf("scopes %s (asked %s)", orNone(strings.Join(h, " ")), orNone(strings.Join(a, " "))))
	}
	if !sameInstant(have.ExpiresAt, c.ExpiresAt) {
		d = append(d, fmt.Sprintf("expiry %s (asked %s)", instantText(have.ExpiresAt), instantText(c.ExpiresAt)))
	}
	d.text("database role", have.DBRole, c.DBRole, true)
	return d.refusal("client "+c.ClientID, "`client set` changes its scopes, expiry, pinned shoulder or state")
}

// sortedSet returns the distinct values of v, sorted.
func sortedSet(v []string) []string {
	s := slices.Clone(v)
	slices.Sort(s)
	return slices.Compact(s)
}

// sameInstant reports whether a and b are both nil or the same instant.
func sameInstant(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}

// instantText prints t in RFC 3339 (UTC), or "never" for nil.
func instantText(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return t.UTC().Format(time.RFC3339)
}

// lookupID returns the id that query ($1 NAAN, $2 name) finds, nil when name is "", and
// errNotRegistered when name is given but matches nothing.
func (l *Ledger) lookupID(ctx context.Context, query, naan, name string) (*int64, error) {
	if name == "" {
		return nil, nil
	}
	var id int64
	err := l.Pool.QueryRow(ctx, query, naan, name).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errNotRegistered
	}
	if err != nil {
		return nil, err
	}
	return &id, nil
}

// Registered reports whether shoulder (e.g. "/x9", "" to skip) of naan and client clientID ("" to
// skip) are registered: two index lookups, no scan of the ARKs.
func (l *Ledger) Registered(ctx context.Context, naan, shoulder, clientID string) (hasShoulder, hasClient bool, err error) {
	err = l.Pool.QueryRow(ctx, `select exists (select 1 from shoulder where naan = $1 and shoulder = $2),
		exists (select 1 from client where client_id = $3)`, naan, shoulder, clientID).Scan(&hasShoulder, &hasClient)
	if err != nil {
		return false, false, fmt.Errorf("read registration: %w", err)
	}
	return hasShoulder, hasClient, nil
}

// SetClientActive disables (active=false) or re-enables a client; the change is recorded in
// audit_event (ActionClientDisable / ActionClientEnable, target the client_id) in the same
// transaction. A disabled
// client's mints are refused by the database at once (ark_reach checks active: deactivating
// takes effect at once); its ARKs and receipts stay. Setting the state it
// already has changes nothing and returns changed=false; an unknown clientID is a
// *RegistrationError.
func (l *Ledger) SetClientActive(ctx context.Context, clientID string, active bool) (changed bool, err error) {
	action := "client.disable"
	if active {
		action = "client.enable"
	}
	tx, err := l.Pool.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("%s %s: %w", action, clientID, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var was bool
	if err := tx.QueryRow(ctx, `select active from client where client_id = $1 for update`, clientID).Scan(&was); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return false, &RegistrationError{What: "client " + clientID, Rule: "not registered"}
		}
		return false, fmt.Errorf("%s %s: %w", action, clientID, err)
	}
	if was == active {
		return false, nil
	}
	if _, err := tx.Exec(ctx, `update client set active = $2 where client_id = $1`, clientID, active); err != nil {
		return false, fmt.Errorf("%s %s: %w", action, clientID, err)
	}
	// the database records the change (client.enable / client.disable), on both layouts
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("%s %s: %w", action, clientID, err)
	}
	return true, nil
}

// ListClients returns the clients of naan ("" for all), ordered by client_id.
func (l *Ledger) ListClients(ctx context.Context, naan string) ([]Client, error) {
	rows, err := l.Pool.Query(ctx, `select c.client_id, c.naan, coalesce(m.name, ''), c.subject_type, c.authority,
		coalesce(s.shoulder, ''), c.allowed_scopes, c.active, c.expires_at, coalesce(c.db_role, '')
		from client c left join manager m on m.id = c.manager_id left join shoulder s on s.id = c.shoulder_id
		where $1::text = '' or c.naan = $1::text order by c.client_id`, naan)
	if err != nil {
		return nil, fmt.Errorf("list clients: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Client, error) {
		var c Client
		err := r.Scan(&c.ClientID, &c.NAAN, &c.Manager, &c.SubjectType, &c.Authority, &c.Shoulder, &c.Scopes, &c.Active, &c.ExpiresAt, &c.DBRole)
		return c, err
	})
}

// osUser returns the name of the OS account the program runs as, "" when it cannot be told.
func osUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return os.Getenv("USER")
}
