package ledger

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
)

// The audit vocabulary: the action of every audit_event row. A change of one thing is named
// "object.verb"; a run of a command is named after the command. Registration changes (naan,
// manager, shoulder, client, credential rows) are recorded by the database itself, in the
// changing transaction, whoever makes them and however (arkhe or plain SQL); so are a repoint
// and a tombstone outside a run, by ark_repoint and ark_tombstone. Runs are recorded by the
// library with RecordEvent. Per-ARK detail of a run stays in ARK_CHANGE.
const (
	ActionNAANAdd           = "naan.add"            // a NAAN registered (by `naan add` or an import)
	ActionNAANSet           = "naan.set"            // a NAAN's registration changed (an import fills empty values)
	ActionManagerAdd        = "manager.add"         // a manager registered
	ActionManagerSet        = "manager.set"         // a manager's registration changed
	ActionManagerEnable     = "manager.enable"      // a manager made active again
	ActionManagerDisable    = "manager.disable"     // a manager made inactive
	ActionManagerSucceed    = "manager.succeed"     // a manager's successor set (it departs, if it had not)
	ActionManagerDepart     = "manager.depart"      // a manager departed without a successor (its ARKs left to the NAAN's authority)
	ActionShoulderAdd       = "shoulder.add"        // a shoulder registered (by `shoulder add` or an import)
	ActionShoulderSet       = "shoulder.set"        // a shoulder's registration changed
	ActionShoulderRetire    = "shoulder.retire"     // a shoulder retired (one-way)
	ActionClientAdd         = "client.add"          // a client registered
	ActionClientSet         = "client.set"          // a client's registration changed (reach, binding, expiry)
	ActionClientEnable      = "client.enable"       // a disabled client made active again
	ActionClientDisable     = "client.disable"      // a client made inactive
	ActionKeyCreate         = "key.create"          // an API key issued
	ActionKeyRevoke         = "key.revoke"          // an API key revoked (its row kept)
	ActionKeyRehash         = "key.rehash"          // an API key's hash replaced (new Argon2id parameters)
	ActionKeyFail           = "key.fail"            // a wrong API key presented (counted)
	ActionKeyLock           = "key.lock"            // an API key locked after too many failures in a row
	ActionARKRepoint        = "ark.repoint"         // one ARK repointed outside a run
	ActionARKTombstone      = "ark.tombstone"       // one ARK tombstoned
	ActionARKMint           = "ark.mint"            // one ARK minted outside a run (ark_mint_one: the online API)
	ActionMint              = "mint"                // a mint run (target ark:NAAN/shoulder, detail the counts)
	ActionImport            = "import"              // an import of one file (target the file, detail the counts)
	ActionReconcileApply    = "reconcile.apply"     // reconcile --apply (target the exports, detail the counts)
	ActionVerify            = "verify"              // an integrity audit (target "ledger", detail the findings)
	ActionLedgerRoles       = "ledger.roles"        // init --roles created or re-granted the ledger's roles
	ActionLedgerRequireKeys = "ledger.require_keys" // init --require-keys: writing commands need the client's key
)

// Event is one audit record in the vocabulary above. The actor is the client (ClientID, ""
// for none: an operator at the command line) together with the database role and the OS user,
// which the database fills in: the role is the session's login role (session_user), whatever
// the statement says, and the OS user is what the session reported (arkhe sets it from the
// account it runs as, see Open). Before and After say what changed from what to what (nil
// when not applicable); Detail carries further fields, e.g. a run's counts.
type Event struct {
	Action    string
	ClientID  string
	Authority string // the client's authority, "" for none
	Target    string
	Before    any
	After     any
	Detail    map[string]any
}

// Execer is what RecordEvent writes through: a pool, a connection, or the transaction whose
// change the event records (then the record commits or rolls back with it).
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// RecordEvent appends ev to audit_event through q. The detail column is a JSON object holding
// Detail's fields and, when set, "before" and "after". An audit record has no foreign keys: it
// outlives what it describes. Errors name the action.
func RecordEvent(ctx context.Context, q Execer, ev Event) error {
	d := map[string]any{}
	for k, v := range ev.Detail {
		d[k] = v
	}
	if ev.Before != nil {
		d["before"] = ev.Before
	}
	if ev.After != nil {
		d["after"] = ev.After
	}
	var detail []byte
	if len(d) > 0 {
		b, err := json.Marshal(d)
		if err != nil {
			return fmt.Errorf("audit event %s: %w", ev.Action, err)
		}
		detail = b
	}
	_, err := q.Exec(ctx, `insert into audit_event (client_id, authority, action, target, detail)
		values (nullif($1, ''), nullif($2, ''), $3, nullif($4, ''), $5::jsonb)`,
		ev.ClientID, ev.Authority, ev.Action, ev.Target, detail)
	if err != nil {
		return fmt.Errorf("audit event %s: %w", ev.Action, err)
	}
	return nil
}

// AuditEvent appends one audit_event row (no foreign keys: the record outlives what it
// describes); detail is marshalled to jsonb by pgx. It is RecordEvent for callers whose detail
// is not a map.
func (l *Ledger) AuditEvent(ctx context.Context, clientID, authority, action, target string, detail any) error {
	return auditEvent(ctx, l.Pool, clientID, authority, action, target, detail)
}

// auditEvent is AuditEvent through e: the pool, or a transaction whose change the event records.
func auditEvent(ctx context.Context, e Execer, clientID, authority, action, target string, detail any) error {
	_, err := e.Exec(ctx, `insert into audit_event (client_id, authority, action, target, detail)
		values (nullif($1, ''), nullif($2, ''), $3, nullif($4, ''), $5)`, clientID, authority, action, target, detail)
	if err != nil {
		return fmt.Errorf("audit event %s: %w", action, err)
	}
	return nil
}
