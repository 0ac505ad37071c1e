package loader

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// The reach and quota checks of a mint run: before it (PrepareMint) and when the ledger refuses
// a batch during it. Reach comes from the client's registration only.

// resolveMintTarget implements the reach checks of PrepareMint: the client's own
// (mintClient), then the shoulder it mints in (mintShoulder) and whether its reach covers it
// (shoulderReach), then the manager's quota used today.
func resolveMintTarget(ctx context.Context, l *ledger.Ledger, clientID, shoulderArg string) (MintTarget, error) {
	t, c, err := mintClient(ctx, l, clientID)
	if err != nil {
		return t, err
	}
	status, holderActive, found, err := mintShoulder(ctx, l, &t, c, shoulderArg)
	if err != nil || !found {
		return t, err
	}
	if rule := shoulderReach(&t, c, status, holderActive); rule != "" {
		t.NoNewMints = &ReachError{ClientID: clientID, Shoulder: t.NAAN + t.Shoulder, Rule: rule}
		return t, nil
	}
	if t.ManagerID != 0 {
		if err := l.Pool.QueryRow(ctx, `select coalesce((select minted from mint_quota
			where manager_id = $1 and day = (now() at time zone 'utc')::date), 0)`, t.ManagerID).Scan(&t.QuotaUsed); err != nil {
			return t, fmt.Errorf("read quota counter: %w", err)
		}
	}
	return t, nil
}

// mintingClient is what the reach checks read of a client beyond its MintTarget fields.
type mintingClient struct {
	manager, pinned, managerDefault int64 // ids; 0 for none
	naan                            string
}

// mintClient reads client clientID into a MintTarget and refuses, with a *ReachError, a client
// that is not registered, deactivated, expired, without scope ark:mint, or acting for a manager
// that is no longer active.
func mintClient(ctx context.Context, l *ledger.Ledger, clientID string) (MintTarget, mintingClient, error) {
	var t MintTarget
	var c mintingClient
	refuse := func(rule string) (MintTarget, mintingClient, error) {
		return MintTarget{}, c, &ReachError{ClientID: clientID, Rule: rule}
	}
	var (
		scopes                         []string
		active, expired, managerActive bool
		expiresAt                      *time.Time
		managerName                    string
	)
	err := l.Pool.QueryRow(ctx, `select c.id, c.client_id, c.naan, coalesce(c.manager_id, 0), c.authority,
			coalesce(c.shoulder_id, 0), c.allowed_scopes, c.active, c.expires_at,
			c.expires_at is not null and c.expires_at <= now(), coalesce(m.default_shoulder_id, 0),
			coalesce(m.active, true), coalesce(m.name, '')
		from client c left join manager m on m.id = c.manager_id
		where c.client_id = $1`, clientID).Scan(&t.ClientPK, &t.ClientID, &t.NAAN, &c.manager, &t.Authority,
		&c.pinned, &scopes, &active, &expiresAt, &expired, &c.managerDefault, &managerActive, &managerName)
	c.naan = t.NAAN
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return refuse("the client is not registered (see `arkhe client list`)")
	case err != nil:
		return t, c, fmt.Errorf("read client %q: %w", clientID, err)
	case !active:
		return refuse("the client is deactivated")
	case expired:
		return refuse("the client's registration expired at " + expiresAt.UTC().Format(time.RFC3339))
	case !slices.Contains(scopes, "ark:mint"):
		return refuse(fmt.Sprintf("the client does not hold scope ark:mint (it holds %s)", strings.Join(scopes, " ")))
	case !managerActive:
		return refuse(fmt.Sprintf("the client acts for manager %q, which is no longer active (departed, succeeded or set inactive); an inactive manager's clients mint nothing", managerName))
	}
	return t, c, nil
}

// mintShoulder reads into t the shoulder the client mints in: shoulderArg ("/x9" in the
// client's NAAN, or "NAAN/x9"), else the client's pinned shoulder, else its manager's default.
// When there is none, or shoulderArg is not registered, it sets t.NoNewMints and reports
// found false. It returns the shoulder's status and whether its manager is active.
func mintShoulder(ctx context.Context, l *ledger.Ledger, t *MintTarget, c mintingClient, shoulderArg string) (status string, holderActive, found bool, err error) {
	const shoulderCols = `select s.id, s.naan, s.shoulder, coalesce(s.manager_id, 0), s.status, s.blade_length,
			coalesce(s.blade_template, ''), s.check_zone, coalesce(m.name, ''), coalesce(m.quota_per_day, 0), coalesce(m.active, true)
		from shoulder s left join manager m on m.id = s.manager_id `
	scan := func(row pgx.Row) error {
		return row.Scan(&t.ShoulderID, &t.NAAN, &t.Shoulder, &t.ManagerID, &status, &t.BladeLength, &t.BladeTemplate, &t.CheckZone,
			&t.Manager, &t.QuotaPerDay, &holderActive)
	}
	switch {
	case shoulderArg != "":
		naan, sh := c.naan, shoulderArg
		if i := strings.IndexByte(shoulderArg, '/'); i > 0 {
			naan, sh = shoulderArg[:i], shoulderArg[i:]
		}
		sh = ark.StoredShoulder(sh)
		err = scan(l.Pool.QueryRow(ctx, shoulderCols+`where s.naan = $1 and s.shoulder = $2`, naan, sh))
		if errors.Is(err, pgx.ErrNoRows) {
			t.ShoulderID, t.NAAN, t.Shoulder = 0, c.naan, ""
			t.NoNewMints = &ReachError{ClientID: t.ClientID, Shoulder: naan + sh, Rule: "the shoulder is not registered"}
			return "", false, false, nil
		}
	case c.pinned != 0:
		err = scan(l.Pool.QueryRow(ctx, shoulderCols+`where s.id = $1`, c.pinned))
	case c.managerDefault != 0:
		err = scan(l.Pool.QueryRow(ctx, shoulderCols+`where s.id = $1`, c.managerDefault))
	default:
		t.NoNewMints = &ReachError{ClientID: t.ClientID, Rule: "no shoulder to mint in: give --shoulder, pin the client to a shoulder, or set its manager's default shoulder"}
		return "", false, false, nil
	}
	if err != nil {
		return "", false, false, fmt.Errorf("read shoulder: %w", err)
	}
	return status, holderActive, true, nil
}

// shoulderReach returns the rule by which client c may not mint in t's shoulder, "" when it
// may: reach comes from the client's registration only (its pin and authority), and only an
// active shoulder held by an active manager (or none) mints.
func shoulderReach(t *MintTarget, c mintingClient, status string, holderActive bool) string {
	switch {
	case c.pinned != 0 && c.pinned != t.ShoulderID:
		return "the client is pinned to another shoulder"
	case t.Authority == "manager" && (c.manager == 0 || c.manager != t.ManagerID):
		return "the shoulder is not one of the client's manager's shoulders (authority manager)"
	case t.Authority == "naan" && t.NAAN != c.naan:
		return "the shoulder is outside the client's NAAN " + c.naan + " (authority naan)"
	case t.Authority != "manager" && t.Authority != "naan" && t.Authority != "system":
		return "unknown authority " + t.Authority
	case status != "active":
		return "the shoulder is " + status + "; only an active shoulder mints (a retired or reserved shoulder never does)"
	case !holderActive:
		return fmt.Sprintf("the shoulder is held by manager %q, which is no longer active (departed, succeeded or set inactive); it keeps its ARKs and mints again once an active manager holds it", t.Manager)
	}
	return ""
}

// reachChanged reports whether the run's client may no longer mint in its shoulder (the
// checks of PrepareMint, read again); a failed read counts as unchanged.
func (w *mintWorker) reachChanged(ctx context.Context) bool {
	t, err := resolveMintTarget(ctx, w.s.l, w.s.cfg.ClientID, w.s.cfg.Shoulder)
	if IsReachRefused(err) {
		return true
	}
	return err == nil && (t.NoNewMints != nil || t.ShoulderID != w.shoulderID)
}
