package targethealth

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/linkcheck"
)

// ExclusionSpec names what an exclusion leaves out: exactly one of Manager (a manager's
// name), Shoulder (stored or bare form) and Host (a host name, or a URL whose host is meant).
type ExclusionSpec struct {
	// NAAN narrows Manager and Shoulder to one NAAN; needed when the name is held in several.
	NAAN     string
	Manager  string
	Shoulder string
	Host     string
	// Reason says why (kept with the exclusion); By who asks (a client_id or a person's name;
	// "" records the database role of the session).
	Reason, By string
}

// Exclusion is one exclusion as `arkhe linkcheck exclusions` lists it.
type Exclusion struct {
	// Kind is "manager", "shoulder" or "host"; NAAN and Name the manager's or shoulder's NAAN
	// and name ("/x9"), or "" and the host name.
	Kind, NAAN, Name string
	// Host is the host name of a host exclusion ("" otherwise).
	Host      string
	Reason    string
	CreatedAt time.Time
	CreatedBy string
	// EndedAt is when the exclusion was lifted; nil while it holds.
	EndedAt *time.Time
	EndedBy string

	managerID, shoulderID int64
}

// resolve returns the exclusion's (manager_id, shoulder_id, host), exactly one set.
func resolveExclusion(ctx context.Context, l *ledger.Ledger, sp ExclusionSpec) (*int64, *int64, *string, error) {
	n := 0
	for _, v := range []string{sp.Manager, sp.Shoulder, sp.Host} {
		if v != "" {
			n++
		}
	}
	if n != 1 {
		return nil, nil, nil, &SelectionError{What: "exclusion", Rule: "name exactly one of a manager, a shoulder and a host"}
	}
	switch {
	case sp.Manager != "":
		ids, err := managerIDs(ctx, l, sp.NAAN, sp.Manager)
		if err != nil {
			return nil, nil, nil, err
		}
		if len(ids) > 1 {
			return nil, nil, nil, &SelectionError{What: fmt.Sprintf("manager %q", sp.Manager), Rule: "is registered in several NAANs: name the NAAN"}
		}
		return &ids[0], nil, nil, nil
	case sp.Shoulder != "":
		sh := ark.StoredShoulder(sp.Shoulder)
		rows, err := l.Pool.Query(ctx, `select id from shoulder where shoulder = $1 and ($2 = '' or naan = $2)`, sh, sp.NAAN)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("read shoulder %s: %w", sh, err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return nil, nil, nil, fmt.Errorf("read shoulder %s: %w", sh, err)
		}
		what := fmt.Sprintf("shoulder %s", sh)
		switch {
		case len(ids) == 0:
			return nil, nil, nil, &SelectionError{What: what, Rule: "is not registered"}
		case len(ids) > 1:
			return nil, nil, nil, &SelectionError{What: what, Rule: "is registered in several NAANs: name the NAAN"}
		}
		return nil, &ids[0], nil, nil
	}
	h, err := exclusionHost(sp.Host)
	if err != nil {
		return nil, nil, nil, err
	}
	return nil, nil, &h, nil
}

// exclusionHost returns the host key of a host name or URL: lower case, without port or a
// trailing dot, as linkcheck.HostKey gives it for a target.
func exclusionHost(v string) (string, error) {
	raw := strings.TrimSpace(v)
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	h, err := linkcheck.HostKey(raw)
	if err != nil || h == "" || len(h) > 253 {
		return "", &SelectionError{What: fmt.Sprintf("host %q", v), Rule: "is not a host name (e.g. repository.example.org)"}
	}
	return h, nil
}

// AddExclusion leaves a manager's, a shoulder's or a host's targets out of every link-check
// run until EndExclusion. created is false when the same exclusion is already open.
func AddExclusion(ctx context.Context, l *ledger.Ledger, sp ExclusionSpec) (created bool, err error) {
	m, s, h, err := resolveExclusion(ctx, l, sp)
	if err != nil {
		return false, err
	}
	tag, err := l.Pool.Exec(ctx, `insert into link_exclusion (manager_id, shoulder_id, host, reason, created_by)
		values ($1, $2, $3, nullif($4, ''), coalesce(nullif($5, ''), session_user)) on conflict do nothing`, m, s, h, sp.Reason, sp.By)
	if err != nil {
		return false, fmt.Errorf("add link-check exclusion: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// EndExclusion lifts an open exclusion: the row gets its end time and stays, so the
// history of exclusions is kept. ended is false when no such exclusion is open.
func EndExclusion(ctx context.Context, l *ledger.Ledger, sp ExclusionSpec) (ended bool, err error) {
	m, s, h, err := resolveExclusion(ctx, l, sp)
	if err != nil {
		return false, err
	}
	tag, err := l.Pool.Exec(ctx, `update link_exclusion set ended_at = greatest(now(), created_at), ended_by = coalesce(nullif($4, ''), session_user)
		where ended_at is null and manager_id is not distinct from $1 and shoulder_id is not distinct from $2
		  and host is not distinct from $3`, m, s, h, sp.By)
	if err != nil {
		return false, fmt.Errorf("lift link-check exclusion: %w", err)
	}
	return tag.RowsAffected() > 0, nil
}

// Exclusions returns the open exclusions, or every exclusion ever made with all, oldest first.
func Exclusions(ctx context.Context, l *ledger.Ledger, all bool) ([]Exclusion, error) {
	rows, err := l.Pool.Query(ctx, `select coalesce(e.manager_id, 0), coalesce(e.shoulder_id, 0), coalesce(e.host, ''),
			coalesce(m.naan, s.naan, ''), coalesce(m.name, s.shoulder, e.host), coalesce(e.reason, ''), e.created_at,
			coalesce(e.created_by, ''), e.ended_at, coalesce(e.ended_by, '')
		from link_exclusion e left join manager m on m.id = e.manager_id left join shoulder s on s.id = e.shoulder_id
		where $1 or e.ended_at is null
		order by e.created_at, e.id`, all)
	if err != nil {
		return nil, fmt.Errorf("read link-check exclusions: %w", err)
	}
	defer rows.Close()
	var out []Exclusion
	for rows.Next() {
		var e Exclusion
		if err := rows.Scan(&e.managerID, &e.shoulderID, &e.Host, &e.NAAN, &e.Name, &e.Reason, &e.CreatedAt,
			&e.CreatedBy, &e.EndedAt, &e.EndedBy); err != nil {
			return nil, fmt.Errorf("read link-check exclusions: %w", err)
		}
		switch {
		case e.managerID != 0:
			e.Kind = "manager"
		case e.shoulderID != 0:
			e.Kind = "shoulder"
		default:
			e.Kind = "host"
		}
		out = append(out, e)
	}
	return out, rows.Err()
}
