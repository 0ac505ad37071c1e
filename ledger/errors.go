package ledger

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// The ledger's errors: the SQLSTATE codes of its own triggers and functions and of PostgreSQL
// that callers branch on, the predicates over them, and the error types its operations return.
// Errors are classified by SQLSTATE, never by message text (a Citus worker's message is
// re-raised with another code, and messages change between releases).

// SQLSTATE codes raised by the ledger's own triggers and functions, and the PostgreSQL codes
// callers branch on.
const (
	CodeDeleteRefused = "AK001" // nothing is deleted
	CodeUpdateRefused = "AK002" // identity columns, append-only tables, the repoint path
	CodeRetiredOneWay = "AK003" // a retired shoulder stays retired; a manager's departure and succession are one-way
	CodeReachRefused  = "AK004" // reach comes from the client's registration only
	CodeCredentialFit = "AK005" // machine clients hold no password, person clients no API key
	CodeRoleBinding   = "AK006" // the client is bound to a database role the session is not in
	// CodeKeyRequired: the ledger requires keys (init --require-keys) and the session has not
	// proved the API key of the client its write acts as (arkhe_key_login).
	CodeKeyRequired = "AK009"
	// CodeSuccessionRefused: a manager's successor must be another active manager of the same
	// NAAN, and a chain of successions never comes back to a manager on it.
	CodeSuccessionRefused = "AK008"
	// CodeKeyRefused: the API key a single mint names is not registered, revoked or locked.
	CodeKeyRefused = "AK020"
	// CodeQuotaUsed: the daily quota of new ARKs of the shoulder's manager is used up (UTC day).
	CodeQuotaUsed = "AK021"
	// CodeRequestReused: a mint's request ID was used by the same client for another payload.
	CodeRequestReused = "AK022"
	// CodeNamesTaken: every candidate name a single mint was given is in the ledger.
	CodeNamesTaken = "AK023"
	// CodeInsufficientPrivilege is PostgreSQL's insufficient_privilege: the session's role may
	// not do this (a writer's DELETE, an auditor's INSERT into ark, ...).
	CodeInsufficientPrivilege = "42501"
	// CodeUndefinedObject is PostgreSQL's undefined_object (e.g. a database role that does not exist).
	CodeUndefinedObject = "42704"
	// CodeUniqueViolation is PostgreSQL's unique_violation.
	CodeUniqueViolation = "23505"
	// CodeDeadlockDetected is PostgreSQL's deadlock_detected.
	CodeDeadlockDetected = "40P01"
	// CodeForeignKeyViolation is PostgreSQL's foreign_key_violation.
	CodeForeignKeyViolation = "23503"
	// CodeCheckViolation is PostgreSQL's check_violation.
	CodeCheckViolation = "23514"
	// CodeIOError is PostgreSQL's io_error. A Citus coordinator raises it when it can no longer
	// send a COPY's rows to a shard on a worker, or end that COPY: the connection to the worker
	// was lost (the worker restarted or crashed, or its backend was ended).
	CodeIOError = "58030"
)

// SQLState returns the SQLSTATE of err if it wraps a *pgconn.PgError, else "".
func SQLState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// IsUniqueViolation reports whether err wraps PostgreSQL's unique_violation (23505): a row whose
// key the ledger holds (an ARK, a receipt, a registration). Citus reports a worker's violation
// during COPY as internal_error (XX000), for which it is false: a bulk writer that must tell
// the two apart looks the keys up.
func IsUniqueViolation(err error) bool { return SQLState(err) == CodeUniqueViolation }

// IsDeadlock reports whether err wraps PostgreSQL's deadlock_detected (40P01): the statement was
// the victim of a lock cycle with another transaction and was rolled back; the same work sent
// again may pass.
func IsDeadlock(err error) bool { return SQLState(err) == CodeDeadlockDetected }

// IsWorkerCopyLost reports whether err wraps io_error (58030): on Citus, the coordinator lost
// its connection to a worker in the middle of a COPY into one of that worker's shards (an
// INSERT ... SELECT and a multi-row INSERT copy rows too), so the statement failed on a fault of
// the cluster, not on its data. The transaction is rolled back; once the worker is back, the
// same work can be sent again. On a single node the code is a server-side I/O error (a file
// that could not be read or written), which a retry may also outlast.
func IsWorkerCopyLost(err error) bool { return SQLState(err) == CodeIOError }

// IsReachRefused reports whether err wraps the ledger's reach refusal (AK004): the client may not
// write in that shoulder, since reach comes from the client's registration only.
func IsReachRefused(err error) bool { return SQLState(err) == CodeReachRefused }

// IsInsufficientPrivilege reports whether err wraps PostgreSQL's insufficient_privilege (42501):
// the session's database role is not a member of the ledger role the statement needs.
func IsInsufficientPrivilege(err error) bool { return SQLState(err) == CodeInsufficientPrivilege }

// RegistrationError is a refusal of a registration command, naming the rule. Callers show it as is.
type RegistrationError struct {
	What string // e.g. "shoulder /x9 of NAAN 99999"
	Rule string // the rule that refused it; "see the database error" when no rule explains it
	Err  error  // the database error, if any (kept for errors.As and SQLState)
}

// ruleSeeDatabaseError is the RegistrationError.Rule of a database error no known rule explains;
// only then does Error() append the database's own text.
const ruleSeeDatabaseError = "see the database error"

// Error returns "What: Rule", and the database error's text only when no rule explains the refusal.
func (e *RegistrationError) Error() string {
	if e.Err != nil && e.Rule == ruleSeeDatabaseError {
		return fmt.Sprintf("%s: %s: %v", e.What, e.Rule, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.What, e.Rule)
}

// ruleOperatorOnly is the RegistrationError.Rule of a registration the database refused for the
// session's role (insufficient_privilege): on a ledger with roles, registration is the
// operator role's.
const ruleOperatorOnly = "registration is the operator role's, and this session's database role is not a member of it"

// Unwrap returns the database error, if any.
func (e *RegistrationError) Unwrap() error { return e.Err }

// errNotRegistered is returned by lookupID when a name matches no row.
var errNotRegistered = errors.New("not registered")

// AdoptRefusal says why AdoptShoulder refused; callers branch on it.
type AdoptRefusal string

// The refusals of AdoptShoulder.
const (
	AdoptNotRegistered   AdoptRefusal = "not_registered"   // no such shoulder
	AdoptNotFirstDigit   AdoptRefusal = "not_first_digit"  // the shoulder does not follow the first-digit convention
	AdoptRetired         AdoptRefusal = "retired"          // retired is one-way
	AdoptDelegated       AdoptRefusal = "delegated"        // its minting happens elsewhere
	AdoptNoManager       AdoptRefusal = "no_manager"       // the manager is not registered in the NAAN
	AdoptManagerInactive AdoptRefusal = "manager_inactive" // the manager is not active
	AdoptHeld            AdoptRefusal = "held"             // another manager holds the shoulder
	AdoptSkippedNames    AdoptRefusal = "skipped_names"    // names an import left out are not in the ledger
	AdoptMinterShoulder  AdoptRefusal = "minter_shoulder"  // the minter state is another shoulder's
	AdoptIssuedMissing   AdoptRefusal = "issued_missing"   // the old minter issued more names than the ledger holds
	AdoptZoneDisagrees   AdoptRefusal = "zone_disagrees"   // the existing ARKs verify under different zones
	AdoptTemplateZone    AdoptRefusal = "template_zone"    // the minter's check character and the zone disagree
	AdoptCannotMint      AdoptRefusal = "cannot_mint"      // names of the chosen form would not fit the ledger
	AdoptDatabaseRefused AdoptRefusal = "database_refused" // the database refused the change (Err)
)

// AdoptError is a refusal of AdoptShoulder: nothing changed, and the shoulder keeps its status.
type AdoptError struct {
	NAAN, Shoulder string
	Refusal        AdoptRefusal
	Rule           string // the rule that refused it, with what was found
	Err            error  // the database's refusal, if any
}

// Error returns "shoulder S of NAAN N not adopted: RULE" (and the database's error when no rule
// explains it).
func (e *AdoptError) Error() string {
	s := fmt.Sprintf("shoulder %s of NAAN %s not adopted: %s", e.Shoulder, e.NAAN, e.Rule)
	if e.Err != nil && e.Rule == ruleSeeDatabaseError {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the database's error, if any.
func (e *AdoptError) Unwrap() error { return e.Err }

// UnknownARKError reports an ARK that is not in the ledger. ARK is the printed form "ark:NAAN/name".
type UnknownARKError struct {
	ARK string
}

// Error returns "ark:NAAN/name is not in the ledger".
func (e *UnknownARKError) Error() string { return e.ARK + " is not in the ledger" }

// ARKRefusedError is a refusal of a single-ARK change (repoint, tombstone) before the ledger is
// touched: the client is not registered, not active, expired, lacks the scope, or does not reach
// the ARK's shoulder; or the target or reason is not acceptable. Rule says which, in words.
type ARKRefusedError struct {
	ARK  string // "ark:NAAN/name"
	Rule string
}

// Error returns "ark:NAAN/name: RULE".
func (e *ARKRefusedError) Error() string { return e.ARK + ": " + e.Rule }

// KeyError is an API key refused for client ClientID: Reason is "missing" (the ledger requires
// keys and none was given), "malformed", "unknown" (no such key for that client), "revoked",
// "locked" (LockedUntil says until when), "wrong", or "unproved" (the database refused a write,
// AK009, because the session had not proved the client's key: Err is its error).
type KeyError struct {
	ClientID    string
	Prefix      string // "" when the key was missing or malformed
	Reason      string
	LockedUntil *time.Time
	Err         error // the parse error of a malformed key, the database's refusal of an unproved one
}

// Error states the refusal and what to do, never the key.
func (e *KeyError) Error() string {
	key := "API key"
	if e.Prefix != "" {
		key = fmt.Sprintf("API key %s_%s", KeyLabel, e.Prefix)
	}
	switch e.Reason {
	case "missing":
		if e.ClientID == "" {
			return "this ledger requires writing commands to act as a registered client (--client) with its API key, in a file named by --api-key-file or in ARKHE_API_KEY (never on the command line)"
		}
		return fmt.Sprintf("client %s: this ledger requires the client's API key for writing commands; put it in a file named by --api-key-file or in ARKHE_API_KEY (never on the command line)", e.ClientID)
	case "malformed":
		return fmt.Sprintf("client %s: %v", e.ClientID, e.Err)
	case "unknown":
		return fmt.Sprintf("client %s: %s is not a key of this client", e.ClientID, key)
	case "revoked":
		return fmt.Sprintf("client %s: %s was revoked; ask the operator for a new one (arkhe client key create)", e.ClientID, key)
	case "locked":
		until := ""
		if e.LockedUntil != nil {
			until = " until " + e.LockedUntil.UTC().Format(time.RFC3339)
		}
		return fmt.Sprintf("client %s: %s is locked%s after %d wrong attempts in a row; wait, or ask the operator for a new key", e.ClientID, key, until, KeyMaxFailures)
	case "unproved":
		return fmt.Sprintf("client %s: the ledger requires the client's API key, and this session has not proved it; give it in a file named by --api-key-file or in ARKHE_API_KEY", e.ClientID)
	default:
		return fmt.Sprintf("client %s: %s is wrong (the attempt was counted; %d in a row lock the key for %s)", e.ClientID, key, KeyMaxFailures, KeyLockDuration)
	}
}

// Unwrap returns the parse error or the database's refusal, if any.
func (e *KeyError) Unwrap() error { return e.Err }

// LayoutError is a layout Migrate cannot apply: an unknown name, LayoutCitus asked for on a
// database without the citus extension, or a layout other than the one the ledger was created
// with (a layout never changes).
type LayoutError struct {
	Want Layout // the layout asked for
	Have Layout // the existing ledger's layout; "" for a new ledger
	Rule string // what forbids it
}

// Error names the layout asked for and the rule.
func (e *LayoutError) Error() string {
	return fmt.Sprintf("ledger layout %q: %s", e.Want, e.Rule)
}

// RolesError is a refusal of InitRoles: a bad prefix, a ledger whose roles have other names (a
// ledger's roles never change), or a session that may not create roles or hand the ledger over.
type RolesError struct {
	Rule string
	Err  error // the database error, if any
}

// Error states the rule, and the database error when there is one.
func (e *RolesError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("ledger roles: %s: %v", e.Rule, e.Err)
	}
	return "ledger roles: " + e.Rule
}

// Unwrap returns the database error, if any.
func (e *RolesError) Unwrap() error { return e.Err }

// SchemaError is a database that does not hold the ledger schema this arkhe works with: no
// ledger at all (Have empty), one that lacks migrations this arkhe knows (Missing: run `arkhe
// init`), or one newer than this arkhe (Newer: use a newer arkhe). Only `arkhe init` creates or
// upgrades the schema; every other command refuses such a database and changes nothing.
type SchemaError struct {
	Have    int   // the newest migration the ledger recorded; 0 for no ledger
	Want    int   // the newest migration this arkhe knows
	Missing []int // migrations this arkhe knows that the ledger lacks
	Newer   []int // migrations the ledger recorded that this arkhe does not know
}

// Error says what the database holds and what to do.
func (e *SchemaError) Error() string {
	switch {
	case e.Have == 0:
		return "this database holds no arkhe ledger; create one with `arkhe init`"
	case len(e.Newer) > 0:
		return fmt.Sprintf("the ledger's schema is version %d, newer than this arkhe knows (%d): use a newer arkhe", e.Have, e.Want)
	default:
		return fmt.Sprintf("the ledger's schema is version %d and this arkhe needs version %d (missing %s): upgrade it with `arkhe init`",
			e.Have, e.Want, joinInts(e.Missing))
	}
}

// RoleError is a session refused before any work because its database role has none of the
// ledger roles the work needs (CheckRole). Error names the roles and the grant that fixes it.
type RoleError struct {
	Login string   // the session's database role (current_user)
	Kinds []string // the role kinds that would do (RoleAuditor, ...), in the order asked
	Roles []string // their names on this ledger, by Kinds
}

// Error says which role is needed, that the login lacks it, and how to grant it.
func (e *RoleError) Error() string {
	kinds, names := strings.Join(e.Kinds, ", "), strings.Join(e.Roles, ", ")
	if len(e.Roles) == 1 {
		return fmt.Sprintf("this needs the ledger's %s role %s, and the database role %s is not a member of it; "+
			"grant it (as a superuser): grant %s to %s", kinds, names, e.Login, sqlName(e.Roles[0]), sqlName(e.Login))
	}
	return fmt.Sprintf("this needs one of the ledger's roles %s (%s), and the database role %s is a member of none; "+
		"grant one (as a superuser), e.g.: grant %s to %s", names, kinds, e.Login, sqlName(e.Roles[len(e.Roles)-1]), sqlName(e.Login))
}

// MintRefusedError is a single mint (MintOne) the ledger refused, with the database's statement
// of the rule: Code is the SQLSTATE (CodeKeyRefused, CodeQuotaUsed, CodeRequestReused,
// CodeNamesTaken, CodeReachRefused, CodeRoleBinding, CodeKeyRequired, CodeForeignKeyViolation
// for an unregistered shoulder) and Rule the message.
type MintRefusedError struct {
	Code string
	Rule string
	Err  error
}

// Error returns "mint refused (CODE): RULE".
func (e *MintRefusedError) Error() string { return "mint refused (" + e.Code + "): " + e.Rule }

// Unwrap returns the database's error.
func (e *MintRefusedError) Unwrap() error { return e.Err }

// IsMintRefused reports whether err is a *MintRefusedError with SQLSTATE code ("" for any).
func IsMintRefused(err error, code string) bool {
	var m *MintRefusedError
	return errors.As(err, &m) && (code == "" || m.Code == code)
}

// MintBatchError is a MintMany call the ledger was not asked to run: no mints, more than
// MaxMintMany, or mints of more than one client and key. Rule says which.
type MintBatchError struct{ Rule string }

// Error returns "mint batch refused: RULE".
func (e *MintBatchError) Error() string { return "mint batch refused: " + e.Rule }

// IsMintBatchRefused reports whether err is a *MintBatchError.
func IsMintBatchRefused(err error) bool {
	var m *MintBatchError
	return errors.As(err, &m)
}
