package ledger

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/jackc/pgx/v5"
)

// UnknownSubject is a subject whose bearer token verified but that names no registered client:
// the issuer that signed it, the subject (the token's authorized party, azp), when it was seen
// first and last, how many times, and the address it came from last (invalid when unknown).
type UnknownSubject struct {
	ID                  int64
	Issuer, Subject     string
	FirstSeen, LastSeen time.Time
	Seen                int64
	Addr                netip.Addr
}

// ClientSubject returns the subject type ("machine" or "person") and whether client clientID is
// active, with found false when no client has that client_id.
func ClientSubject(ctx context.Context, q Querier, clientID string) (subjectType string, active, found bool, err error) {
	err = q.QueryRow(ctx, `select subject_type, active from client where client_id = $1`, clientID).Scan(&subjectType, &active)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, false, nil
	}
	if err != nil {
		return "", false, false, fmt.Errorf("look up client %s: %w", clientID, err)
	}
	return subjectType, active, true, nil
}

// NoteUnknownSubject records that a verified token of issuer named subject, which no client is
// registered as, was presented from addr (invalid: not known): the first time a row with seen 1,
// then last_seen moved to now and seen increased by one (arkhe_note_unknown_subject, which the
// writer role may run). It returns the row's id and its seen count after this call.
func NoteUnknownSubject(ctx context.Context, q Querier, issuer, subject string, addr netip.Addr) (id, seen int64, err error) {
	var ip *string
	if addr.IsValid() {
		s := addr.Unmap().String()
		ip = &s
	}
	err = q.QueryRow(ctx, `select id, seen from arkhe_note_unknown_subject($1, $2, $3::inet)`, issuer, subject, ip).Scan(&id, &seen)
	if err != nil {
		return 0, 0, fmt.Errorf("record unknown subject %s of %s: %w", subject, issuer, err)
	}
	return id, seen, nil
}

// ListUnknownSubjects returns the unknown subjects no client is registered as now (a subject
// registered since drops out: the match is made by this query), newest last_seen first.
func (l *Ledger) ListUnknownSubjects(ctx context.Context) ([]UnknownSubject, error) {
	rows, err := l.Pool.Query(ctx, `select u.id, coalesce(u.issuer, ''), u.subject, u.first_seen, u.last_seen, u.seen,
		coalesce(host(u.ip), '')
		from unknown_subject u
		where not exists (select from client c where c.client_id = u.subject)
		order by u.last_seen desc, u.id`)
	if err != nil {
		return nil, fmt.Errorf("list unknown subjects: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (UnknownSubject, error) {
		var (
			u  UnknownSubject
			ip string
		)
		if err := r.Scan(&u.ID, &u.Issuer, &u.Subject, &u.FirstSeen, &u.LastSeen, &u.Seen, &ip); err != nil {
			return u, err
		}
		if ip != "" {
			a, err := netip.ParseAddr(ip)
			if err != nil {
				return u, fmt.Errorf("unknown subject %d: address %q: %w", u.ID, ip, err)
			}
			u.Addr = a
		}
		return u, nil
	})
}

// UnknownSubjectByID returns the unknown subject of id, found false when there is none.
func (l *Ledger) UnknownSubjectByID(ctx context.Context, id int64) (u UnknownSubject, found bool, err error) {
	var ip string
	err = l.Pool.QueryRow(ctx, `select u.id, coalesce(u.issuer, ''), u.subject, u.first_seen, u.last_seen, u.seen,
		coalesce(host(u.ip), '') from unknown_subject u where u.id = $1`, id).
		Scan(&u.ID, &u.Issuer, &u.Subject, &u.FirstSeen, &u.LastSeen, &u.Seen, &ip)
	if errors.Is(err, pgx.ErrNoRows) {
		return u, false, nil
	}
	if err != nil {
		return u, false, fmt.Errorf("unknown subject %d: %w", id, err)
	}
	if ip != "" {
		if u.Addr, err = netip.ParseAddr(ip); err != nil {
			return u, false, fmt.Errorf("unknown subject %d: address %q: %w", id, ip, err)
		}
	}
	return u, true, nil
}
