package ledger

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// maxTargetOctets is the longest target URL the ledger stores (ark.url is varchar(2048)).
const maxTargetOctets = 2048

// ARKChangeEntry is one ARK_CHANGE row as shown to a user: when, what, before and after target
// and status, the reason (ChangeReason: a tombstone's, an applied export's, or the --reason of
// a repoint), who (By: a client_id, never an internal key; "" when none) and the recorded
// by_text without the reason (Note, e.g. "arkhe ark repoint" or the export a reconcile applied).
type ARKChangeEntry struct {
	At                        *time.Time
	Action                    string // update, tombstone, metadata, restore
	BeforeURL, AfterURL       string
	BeforeStatus, AfterStatus string
	Reason                    string
	By                        string
	Note                      string
}

// ARKRecord is one ARK as `arkhe ark show` prints it. Strings are "" where the ledger holds NULL;
// CreatedBy is the creating client's client_id ("" for an imported ARK); RequestID the mint
// receipt's request ID ("" when none, e.g. imported); Metadata the ARK's other fields as a JSON
// object (what an import kept of arklet's and EZID's fields beyond the ERC kernel; "" when none);
// History the ARK_CHANGE rows oldest first.
type ARKRecord struct {
	ARK             string // "ark:NAAN/name"
	NAAN            string
	Shoulder        string // stored form "/x9"
	Target          string
	Who, What, When string // ERC kernel
	Commitment      string
	Status          string // public, reserved, unavailable
	TombstoneReason string
	TombstonedAt    *time.Time
	CreatedAt       *time.Time
	UpdatedAt       *time.Time
	CreatedBy       string
	Original        string
	RequestID       string
	Metadata        string
	History         []ARKChangeEntry
}

// repointNote is the by_text of a change made by RepointARK. A reason given follows it after
// ": " (ark_repoint records no reason of its own), which ChangeReason reads back.
const repointNote = "arkhe ark repoint"

// changeReasonSQL is the reason of the ark_change row h: its reason column (a tombstone, an
// applied export), else the reason a repoint recorded after repointNote in by_text.
const changeReasonSQL = `coalesce(h.reason, case when starts_with(h.by_text, '` + repointNote + `: ')
	then substr(h.by_text, length('` + repointNote + `: ') + 1) end)`

// changeNoteSQL is the by_text of the ark_change row h without a repoint's reason.
const changeNoteSQL = `case when starts_with(h.by_text, '` + repointNote + `: ') then '` + repointNote + `' else h.by_text end`

// ShowARK reads the ARK with ledger key key ("NAAN/name", ark.ARK.Key()) and its ARK_CHANGE
// history. An ARK not in the ledger is an *UnknownARKError.
func (l *Ledger) ShowARK(ctx context.Context, key string) (ARKRecord, error) {
	var r ARKRecord
	err := l.Pool.QueryRow(ctx, `select a.naan, coalesce(s.shoulder, ''), coalesce(a.url, ''), coalesce(a.erc_who, ''),
		coalesce(a.erc_what, ''), coalesce(a.erc_when, ''), coalesce(a.commitment, ''), ark_status_text(a.status), coalesce(a.tombstone_reason, ''),
		a.tombstoned_at, a.created_at, a.updated_at, coalesce(c.client_id, ''), coalesce(a.original, ''), coalesce(a.request_id, ''),
		coalesce(a.metadata::text, '')
		from ark a left join shoulder s on s.id = a.shoulder_id left join client c on c.id = a.created_by
		where a.ark = $1`, key).Scan(&r.NAAN, &r.Shoulder, &r.Target, &r.Who, &r.What, &r.When, &r.Commitment, &r.Status,
		&r.TombstoneReason, &r.TombstonedAt, &r.CreatedAt, &r.UpdatedAt, &r.CreatedBy, &r.Original, &r.RequestID, &r.Metadata)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, &UnknownARKError{ARK: "ark:" + key}
	}
	if err != nil {
		return r, fmt.Errorf("read ark:%s: %w", key, err)
	}
	r.ARK = "ark:" + key
	rows, err := l.Pool.Query(ctx, `select h.at, h.action, coalesce(h.before_url, ''), coalesce(h.after_url, ''),
		coalesce(h.before_status, ''), coalesce(h.after_status, ''), coalesce(`+changeReasonSQL+`, ''),
		coalesce(c.client_id, ''), coalesce(`+changeNoteSQL+`, '')
		from ark_change h left join client c on c.id = h.by_client
		where h.ark = $1 order by h.seq`, key)
	if err != nil {
		return r, fmt.Errorf("read history of ark:%s: %w", key, err)
	}
	r.History, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (ARKChangeEntry, error) {
		var h ARKChangeEntry
		err := row.Scan(&h.At, &h.Action, &h.BeforeURL, &h.AfterURL, &h.BeforeStatus, &h.AfterStatus, &h.Reason, &h.By, &h.Note)
		return h, err
	})
	if err != nil {
		return r, fmt.Errorf("read history of ark:%s: %w", key, err)
	}
	return r, nil
}

// ValidateTarget checks a target URL: absolute http or https with a host, at most
// 2048 octets (ark.url is varchar(2048)). The error names the rule broken.
func ValidateTarget(target string) error {
	if len(target) > maxTargetOctets {
		return fmt.Errorf("target is %d octets; at most %d are stored", len(target), maxTargetOctets)
	}
	u, err := url.Parse(target)
	if err != nil {
		return fmt.Errorf("target %q is not a URL: %w", target, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("target %q must be an absolute http or https URL", target)
	}
	return nil
}

// RepointARK moves the ARK with ledger key key to target through ark_repoint (the repoint path:
// one ARK_CHANGE row), acting as the registered client clientID, which must be
// active, unexpired, act for an active manager (if any), hold scope ark:update and reach the
// ARK's shoulder (a manager client: its manager's, or one of a manager its manager succeeded,
// along the chain of successions). reason, if given, is
// recorded with the change. It returns changed=false when the ARK already points there.
// Errors: *UnknownARKError, *ARKRefusedError, or a wrapped database error.
func (l *Ledger) RepointARK(ctx context.Context, key, target, clientID, reason string) (changed bool, err error) {
	if err := ValidateTarget(target); err != nil {
		return false, &ARKRefusedError{ARK: "ark:" + key, Rule: err.Error()}
	}
	by := repointNote
	if r := strings.TrimSpace(reason); r != "" {
		by += ": " + r
	}
	return changeARK(ctx, l.Pool, key, clientID, "ark:update", `select ark_repoint($1, $2, $3, $4)`, target, by)
}

// RepointARKOn is RepointARK on q (a connection that proved the client's API key, on a ledger
// requiring keys), with byText recorded as the change's by_text (e.g. "arkhe api"). The rules and
// errors are RepointARK's.
func RepointARKOn(ctx context.Context, q Querier, key, target, clientID, byText string) (changed bool, err error) {
	if err := ValidateTarget(target); err != nil {
		return false, &ARKRefusedError{ARK: "ark:" + key, Rule: err.Error()}
	}
	return changeARK(ctx, q, key, clientID, "ark:update", `select ark_repoint($1, $2, $3, $4)`, target, byText)
}

// TombstoneARK withdraws the ARK with ledger key key through ark_tombstone (status unavailable,
// the reason and the time, one ARK_CHANGE row), acting as clientID, which
// must be active, unexpired, act for an active manager (if any), hold scope ark:tombstone and
// reach the ARK's shoulder (as for RepointARK, along the chain of successions). reason is
// required. It returns changed=false when the ARK is tombstoned already.
// Errors: *UnknownARKError, *ARKRefusedError, or a wrapped database error.
func (l *Ledger) TombstoneARK(ctx context.Context, key, reason, clientID string) (changed bool, err error) {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return false, &ARKRefusedError{ARK: "ark:" + key, Rule: "a tombstone needs a reason (--reason)"}
	}
	return changeARK(ctx, l.Pool, key, clientID, "ark:tombstone", `select ark_tombstone($1, $2, $3, $4)`, reason, "arkhe ark tombstone")
}

// TombstoneARKOn is TombstoneARK on q (a connection that proved the client's API key, on a
// ledger requiring keys, or a transaction), with byText recorded as the change's by_text (e.g.
// "arkhe api"). The rules and errors are TombstoneARK's.
func TombstoneARKOn(ctx context.Context, q Querier, key, reason, clientID, byText string) (changed bool, err error) {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return false, &ARKRefusedError{ARK: "ark:" + key, Rule: "a tombstone needs a reason"}
	}
	return changeARK(ctx, q, key, clientID, "ark:tombstone", `select ark_tombstone($1, $2, $3, $4)`, reason, byText)
}

// changeARK checks the client's reach over the ARK and runs one change function
// (ark_repoint or ark_tombstone, whose parameters are ark, value, by_client, by_text) in one
// transaction. The function locks the ARK row and checks the client again in the database
// (reach, scopes, binding to a database role), so a change through plain SQL gets the same
// answer; a refusal there is an *ARKRefusedError with the database's statement of the rule.
func changeARK(ctx context.Context, q Querier, key, clientID, scope, call, value, byText string) (bool, error) {
	printed := "ark:" + key
	refuse := func(rule string) (bool, error) { return false, &ARKRefusedError{ARK: printed, Rule: rule} }
	if clientID == "" {
		return refuse("name the registered client the change acts as (--client)")
	}
	tx, err := q.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("%s: %w", printed, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var sID, sManager *int64
	var sNAAN, sShoulder string
	err = tx.QueryRow(ctx, `select s.id, s.naan, s.shoulder, s.manager_id from ark a join shoulder s on s.id = a.shoulder_id
		where a.ark = $1`, key).Scan(&sID, &sNAAN, &sShoulder, &sManager)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, &UnknownARKError{ARK: printed}
	}
	if err != nil {
		return false, fmt.Errorf("%s: %w", printed, err)
	}
	var (
		pk                int64
		active            bool
		expires           *time.Time
		scopes            []string
		authority, cNAAN  string
		cManager, cPinned *int64
		expired           bool
		managerActive     bool
		managerName       string
	)
	err = tx.QueryRow(ctx, `select c.id, c.active, c.expires_at, c.allowed_scopes, c.authority, c.naan, c.manager_id, c.shoulder_id,
		c.expires_at is not null and c.expires_at <= now(), coalesce(m.active, true), coalesce(m.name, '')
		from client c left join manager m on m.id = c.manager_id where c.client_id = $1`, clientID).
		Scan(&pk, &active, &expires, &scopes, &authority, &cNAAN, &cManager, &cPinned, &expired, &managerActive, &managerName)
	if errors.Is(err, pgx.ErrNoRows) {
		return refuse(fmt.Sprintf("client %q is not registered", clientID))
	}
	if err != nil {
		return false, fmt.Errorf("%s: read client %s: %w", printed, clientID, err)
	}
	switch {
	case !active:
		return refuse(fmt.Sprintf("client %s is not active", clientID))
	case expired:
		return refuse(fmt.Sprintf("client %s expired at %s", clientID, expires.UTC().Format(time.RFC3339)))
	case !slices.Contains(scopes, scope):
		return refuse(fmt.Sprintf("client %s lacks scope %s (it holds: %s)", clientID, scope, strings.Join(scopes, " ")))
	case !managerActive:
		return refuse(fmt.Sprintf("client %s acts for manager %q, which is no longer active (departed, succeeded or set inactive); a successor's clients act for its ARKs", clientID, managerName))
	}
	reach := false
	switch authority {
	case "system":
		reach = true
	case "naan":
		reach = cNAAN == sNAAN
	case "manager":
		reach = cManager != nil && sManager != nil && *cManager == *sManager
		if !reach && cManager != nil && sManager != nil {
			// a successor's clients repoint and tombstone the ARKs of the managers it succeeded,
			// along the chain (the database's own rule, arkhe_succeeds)
			if err := tx.QueryRow(ctx, `select arkhe_succeeds($1, $2)`, *cManager, *sManager).Scan(&reach); err != nil {
				return false, fmt.Errorf("%s: read the chain of successions: %w", printed, err)
			}
		}
	}
	if reach && cPinned != nil && (sID == nil || *cPinned != *sID) {
		reach = false
	}
	if !reach {
		return refuse(fmt.Sprintf("client %s (authority %s) does not reach shoulder %s of NAAN %s", clientID, authority, sShoulder, sNAAN))
	}
	var changed bool
	if err := tx.QueryRow(ctx, call, key, value, pk, byText).Scan(&changed); err != nil {
		// the database checks the client again (reach, scopes, its database role binding) and
		// states the rule it applied
		var pgErr *pgconn.PgError
		switch SQLState(err) {
		case CodeReachRefused, CodeRoleBinding, CodeKeyRequired, CodeInsufficientPrivilege:
			if errors.As(err, &pgErr) {
				return refuse(pgErr.Message)
			}
		}
		return false, fmt.Errorf("%s: %w", printed, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("%s: commit: %w", printed, err)
	}
	return changed, nil
}
