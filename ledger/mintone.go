package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Single-ARK mint (ark_mint_one) and the online check of an API key: what a server does per
// request, on a connection of its choosing.

// Querier is what the single-ARK operations run on: a pool, a connection or a transaction.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	Begin(ctx context.Context) (pgx.Tx, error)
}

// ShoulderInfo is what a single mint needs of a shoulder: its internal key (ID, never shown),
// NAAN, stored form ("/x9"), blade length, check zone (naan_name, name_only or none), blade
// template ("" for BladeLength betanumerics) and status.
type ShoulderInfo struct {
	ID            int64
	NAAN          string
	Shoulder      string
	BladeLength   int
	CheckZone     string
	BladeTemplate string
	Status        string
}

// LookupShoulder reads shoulder (stored form "/x9") of naan. found is false when it is not
// registered.
func LookupShoulder(ctx context.Context, q Querier, naan, shoulder string) (s ShoulderInfo, found bool, err error) {
	err = q.QueryRow(ctx, `select id, naan, shoulder, blade_length, check_zone, coalesce(blade_template, ''), status
		from shoulder where naan = $1 and shoulder = $2`, naan, shoulder).
		Scan(&s.ID, &s.NAAN, &s.Shoulder, &s.BladeLength, &s.CheckZone, &s.BladeTemplate, &s.Status)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, false, nil
	}
	if err != nil {
		return s, false, fmt.Errorf("read shoulder %s%s: %w", naan, shoulder, err)
	}
	return s, true, nil
}

// MintOneRequest is one ARK to mint with ark_mint_one. ClientID is the registered client the mint
// acts as; KeyPrefix names the API key it presented ("" when it authenticated otherwise), which
// must be the client's, active and not locked; RequestID (required: every ARK arkhe mints has
// its receipt) with Digest (16 octets, the payload's) is its receipt; Names are the candidate assigned names in the order to try (shoulder + blade +
// check character, no NAAN); the other fields are the ARK's ("" or nil for none; Metadata a JSON
// object).
type MintOneRequest struct {
	ClientID   string
	KeyPrefix  string
	RequestID  string
	Digest     [16]byte
	ShoulderID int64
	Names      []string
	URL        string
	Commitment string
	Who        string
	What       string
	When       string
	Metadata   []byte
}

// MintOneResult is what MintOne minted, or replayed: Key is the ledger key "NAAN/name";
// Replayed is true when the request ID's receipt answered; Collisions counts the candidate names
// that were taken.
type MintOneResult struct {
	Key        string
	Replayed   bool
	Collisions int
}

// MintOne mints one ARK through ark_mint_one on q, insert-only, in one statement: the key is
// checked (registered, active, not locked), a receipt of the request ID answers with its ARK,
// the client's reach, the shoulder, the manager's daily quota and the counters are checked and
// written in the database, and the audit event ark.mint is recorded. A refusal of the ledger's
// is a *MintRefusedError (see its codes); a unique violation (on Citus, a name taken between the
// function's look-up and its insert) is returned wrapped, for the caller to draw again; any other
// error is wrapped.
func MintOne(ctx context.Context, q Querier, r MintOneRequest) (MintOneResult, error) {
	var res MintOneResult
	nz := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	var meta any
	if len(r.Metadata) > 0 {
		meta = string(r.Metadata)
	}
	var key *string
	err := q.QueryRow(ctx, `select ark, replayed, collisions from ark_mint_one($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::jsonb)`,
		r.ClientID, nz(r.KeyPrefix), nz(r.RequestID), r.Digest[:], r.ShoulderID, r.Names, nz(r.URL), nz(r.Commitment), nz(r.Who), nz(r.What),
		nz(r.When), meta).Scan(&key, &res.Replayed, &res.Collisions)
	if err != nil {
		return res, mintError(err)
	}
	if key != nil {
		res.Key = *key
	}
	return res, nil
}

// mintError classifies an error of a single mint: a refusal of the ledger's is a
// *MintRefusedError, anything else is wrapped.
func mintError(err error) error {
	var pgErr *pgconn.PgError
	switch c := SQLState(err); c {
	case CodeKeyRefused, CodeQuotaUsed, CodeRequestReused, CodeNamesTaken, CodeReachRefused, CodeRoleBinding,
		CodeKeyRequired, CodeForeignKeyViolation:
		if errors.As(err, &pgErr) {
			return &MintRefusedError{Code: c, Rule: pgErr.Message, Err: err}
		}
	}
	return fmt.Errorf("mint one ARK: %w", err)
}

// KeyCheck is an API key the ledger accepted online (CheckKey): the client it belongs to, its
// prefix and the Argon2id hash of its secret under the stored salt and parameters (what
// arkhe_key_login takes). Derived reports whether this check ran Argon2id.
type KeyCheck struct {
	ClientID string
	Prefix   string
	Hash     []byte
	Derived  bool
}

// CheckKey checks a printed API key for a server: the client is the key's own (found by its
// prefix). A key that is malformed, not registered, revoked or locked is refused before any
// Argon2id work (a locked key is neither compared nor counted, so a brute force against it costs
// the server no hashing); otherwise its secret is hashed with the key's parameters and the
// ledger compares (arkhe_key_verify: a failure is counted, and locks the key after
// KeyMaxFailures in a row). A refusal is a *KeyError (Reason malformed, unknown, revoked, locked
// or wrong; Derived in the returned value says whether Argon2id ran); other errors are wrapped.
func CheckKey(ctx context.Context, q Querier, key string) (KeyCheck, error) {
	var kc KeyCheck
	prefix, secret, err := ParseKey(key)
	if err != nil {
		return kc, &KeyError{Reason: "malformed", Err: err}
	}
	kc.Prefix = prefix
	var (
		subject, state string
		locked         *time.Time
		head           *string
	)
	err = q.QueryRow(ctx, `select k.client_id, k.subject_type, k.state, k.locked_until, arkhe_key_params($1)
		from arkhe_key_state($1) k`, prefix).Scan(&kc.ClientID, &subject, &state, &locked, &head)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return kc, &KeyError{Prefix: prefix, Reason: "unknown"}
	case err != nil:
		return kc, fmt.Errorf("check API key: %w", err)
	case state != "active":
		return kc, &KeyError{ClientID: kc.ClientID, Prefix: prefix, Reason: state, LockedUntil: locked}
	case subject != "machine":
		return kc, &KeyError{ClientID: kc.ClientID, Prefix: prefix, Reason: "unknown",
			Err: fmt.Errorf("client %s is a person: people sign in, machine clients hold keys", kc.ClientID)}
	case head == nil:
		return kc, &KeyError{ClientID: kc.ClientID, Prefix: prefix, Reason: "unknown"}
	}
	p, salt, err := parsePHCHead(*head)
	if err != nil {
		return kc, fmt.Errorf("check API key %s_%s: %w", KeyLabel, prefix, err)
	}
	kc.Hash = deriveKey(secret, p, salt)
	kc.Derived = true
	var verdict string
	if err := q.QueryRow(ctx, `select arkhe_key_verify($1, $2, $3)`, kc.ClientID, prefix, kc.Hash).Scan(&verdict); err != nil {
		return kc, fmt.Errorf("check API key: %w", err)
	}
	if verdict == "ok" {
		return kc, nil
	}
	ke := &KeyError{ClientID: kc.ClientID, Prefix: prefix, Reason: verdict}
	if verdict == "wrong" {
		_ = q.QueryRow(ctx, `select arkhe_key_locked_until($1)`, prefix).Scan(&ke.LockedUntil)
		if ke.LockedUntil != nil {
			ke.Reason = "locked"
		}
	}
	return kc, ke
}

// KeyUsable reports whether API key prefix may be used now, as the ledger holds it: registered,
// active (not revoked) and not locked; a refusal is a *KeyError. It does no hashing: a server
// that proved the key's secret earlier calls it on each later request.
func KeyUsable(ctx context.Context, q Querier, prefix string) error {
	var (
		clientID, state string
		locked          *time.Time
	)
	err := q.QueryRow(ctx, `select client_id, state, locked_until from arkhe_key_state($1)`, prefix).Scan(&clientID, &state, &locked)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return &KeyError{Prefix: prefix, Reason: "unknown"}
	case err != nil:
		return fmt.Errorf("check API key: %w", err)
	case state != "active":
		return &KeyError{ClientID: clientID, Prefix: prefix, Reason: state, LockedUntil: locked}
	}
	return nil
}

// LoginKey proves the key kc checked to the session of conn (arkhe_key_login), so that on a
// ledger requiring keys the database accepts that session's writes for the key's client. A
// verdict other than ok is a *KeyError.
func LoginKey(ctx context.Context, q Querier, kc KeyCheck) error {
	var verdict string
	if err := q.QueryRow(ctx, `select arkhe_key_login($1, $2, $3)`, kc.ClientID, kc.Prefix, kc.Hash).Scan(&verdict); err != nil {
		return fmt.Errorf("prove API key %s_%s: %w", KeyLabel, kc.Prefix, err)
	}
	if verdict != "ok" {
		return &KeyError{ClientID: kc.ClientID, Prefix: kc.Prefix, Reason: verdict}
	}
	return nil
}

// KeysRequired reports whether the ledger requires the client's API key for writes
// (arkhe init --require-keys).
func KeysRequired(ctx context.Context, q Querier) (bool, error) {
	var on bool
	if err := q.QueryRow(ctx, `select arkhe_keys_required()`).Scan(&on); err != nil {
		return false, fmt.Errorf("read ledger settings: %w", err)
	}
	return on, nil
}

// MaxMintMany is the most mints one MintMany call takes.
const MaxMintMany = 64

// MintManyResult is one element's outcome of MintMany: what MintOne would have returned for it,
// its result or its error (a *MintRefusedError for a refusal of the ledger's, a wrapped
// *pgconn.PgError with its SQLSTATE otherwise, as a unique violation on Citus).
type MintManyResult struct {
	MintOneResult
	Err error
}

// MintMany mints reqs (1 to MaxMintMany, all of one ClientID and KeyPrefix) through
// ark_mint_many on q in one statement, so in one transaction: each is minted as MintOne mints
// it, in order, in a subtransaction of its own, so an element the ledger refuses is rolled back
// alone and the others are minted. An element with the request ID of an earlier one is answered
// from the earlier one's receipt (Replayed, the same ARK), and a name an earlier element took
// counts as its collision. It returns one result per request, in order; an error of the call
// itself (reqs of more than one client or key, too many or none: a *MintBatchError; the
// statement or its commit failing: wrapped) means nothing was minted.
func MintMany(ctx context.Context, q Querier, reqs []MintOneRequest) ([]MintManyResult, error) {
	if len(reqs) < 1 || len(reqs) > MaxMintMany {
		return nil, &MintBatchError{Rule: fmt.Sprintf("a batch holds from 1 to %d mints, not %d", MaxMintMany, len(reqs))}
	}
	n := len(reqs)
	var (
		ids                      = make([]*string, n)
		digests                  = make([][]byte, n)
		shoulders                = make([]int64, n)
		names                    []string
		counts                   = make([]int32, n)
		urls, comms, whos, whats = make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
		whens, metas             = make([]*string, n), make([]*string, n)
	)
	nz := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	for i, r := range reqs {
		if r.ClientID != reqs[0].ClientID || r.KeyPrefix != reqs[0].KeyPrefix {
			return nil, &MintBatchError{Rule: fmt.Sprintf("mint %d is of client %s, key %q; mint 0 of client %s, key %q: a batch is of one client and key",
				i, r.ClientID, r.KeyPrefix, reqs[0].ClientID, reqs[0].KeyPrefix)}
		}
		d := r.Digest
		ids[i], digests[i], shoulders[i] = nz(r.RequestID), d[:], r.ShoulderID
		names = append(names, r.Names...)
		counts[i] = int32(len(r.Names))
		urls[i], comms[i], whos[i], whats[i], whens[i] = nz(r.URL), nz(r.Commitment), nz(r.Who), nz(r.What), nz(r.When)
		if len(r.Metadata) > 0 {
			metas[i] = nz(string(r.Metadata))
		}
	}
	if names == nil {
		names = []string{}
	}
	rows, err := q.Query(ctx, `select ord, ark, replayed, collisions, code, message
		from ark_mint_many($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13::jsonb[])`,
		reqs[0].ClientID, nz(reqs[0].KeyPrefix), ids, digests, shoulders, names, counts, urls, comms, whos, whats, whens, metas)
	if err != nil {
		return nil, fmt.Errorf("mint %d ARKs: %w", n, err)
	}
	defer rows.Close()
	out := make([]MintManyResult, n)
	seen := 0
	for rows.Next() {
		var (
			ord           int32
			key           *string
			code, message *string
			res           MintManyResult
		)
		if err := rows.Scan(&ord, &key, &res.Replayed, &res.Collisions, &code, &message); err != nil {
			return nil, fmt.Errorf("mint %d ARKs: %w", n, err)
		}
		if ord < 1 || int(ord) > n {
			return nil, fmt.Errorf("mint %d ARKs: the ledger answered for element %d", n, ord)
		}
		if key != nil {
			res.Key = *key
		}
		if code != nil {
			msg := ""
			if message != nil {
				msg = *message
			}
			res.Err = mintError(&pgconn.PgError{Severity: "ERROR", Code: *code, Message: msg})
		}
		out[ord-1] = res
		seen++
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("mint %d ARKs: %w", n, err)
	}
	if seen != n {
		return nil, fmt.Errorf("mint %d ARKs: the ledger answered for %d", n, seen)
	}
	return out, nil
}
