package ledger

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/ark"
)

// ReportFilter selects the rows of ChangeRows and ARKRows (`arkhe report changes|arks`). The
// zero value selects every row.
type ReportFilter struct {
	// Since and Until bound the time, Since inclusive and Until exclusive: ARK_CHANGE.at for
	// ChangeRows, ark.created_at for ARKRows. A row without a time is left out when either is
	// set. nil: unbounded.
	Since, Until *time.Time
	// NAAN keeps only the rows of this NAAN; "" for all.
	NAAN string
	// Shoulder keeps only the rows of this shoulder, in stored ("/x9") or bare ("x9") form;
	// "" for all. Without NAAN it matches that shoulder string in every NAAN.
	Shoulder string
	// Manager keeps only the rows of ARKs under this manager's shoulders, by name (LinkRows
	// only); "" for all.
	Manager string
	// BrokenOnly keeps only the ARKs whose target is broken (LinkRows only).
	BrokenOnly bool
}

// Validate reports a filter that can select nothing by construction: Until not after Since.
func (f ReportFilter) Validate() error {
	if f.Since != nil && f.Until != nil && !f.Until.After(*f.Since) {
		return fmt.Errorf("report: --until %s is not after --since %s", f.Until.UTC().Format(time.RFC3339), f.Since.UTC().Format(time.RFC3339))
	}
	return nil
}

// args returns the filter as the four query parameters $1..$4.
func (f ReportFilter) args() []any {
	shoulder := f.Shoulder
	if shoulder != "" {
		shoulder = ark.StoredShoulder(shoulder)
	}
	return []any{f.Since, f.Until, f.NAAN, shoulder}
}

// changeQuery streams ARK_CHANGE with the ARK in canonical form and the client's public
// client_id (never an internal key), ordered by ARK (octet order) and, within one ARK, in the
// order its changes were made (ARK_CHANGE.seq, numbered per ARK from 1). A change of an ARK
// missing from the ledger still appears (NAAN from its key, shoulder "").
const changeQuery = `select 'ark:' || h.ark, coalesce(a.naan, split_part(h.ark, '/', 1)), coalesce(s.shoulder, ''),
		h.at, h.action, h.before_url, h.after_url, coalesce(cl.client_id, nullif(h.by_text, '')), ` + changeReasonSQL + `
	from ark_change h
	left join ark a on a.ark = h.ark
	left join shoulder s on s.id = a.shoulder_id
	left join client cl on cl.id = h.by_client
	where ($1::timestamptz is null or h.at >= $1) and ($2::timestamptz is null or h.at < $2)
	  and ($3::text = '' or coalesce(a.naan, split_part(h.ark, '/', 1)) = $3)
	  and ($4::text = '' or s.shoulder = $4)
	order by h.ark, h.seq`

// ChangeRows streams the ARK_CHANGE rows selected by f as report rows (see ChangeRow
// for the columns), by ARK and, within one ARK, in the order its changes were made, from one snapshot, in bounded memory: the
// rows come off the connection as the iteration consumes them. An error ends the sequence
// (yielded once, with a zero row); stopping early releases the connection.
func ChangeRows(ctx context.Context, l *Ledger, f ReportFilter) iter.Seq2[ChangeRow, error] {
	return streamRows(ctx, l, "ARK_CHANGE", changeQuery, f, func(r pgx.Rows) (ChangeRow, error) {
		var c ChangeRow
		err := r.Scan(&c.ARK, &c.NAAN, &c.Shoulder, &c.At, &c.Action, &c.BeforeURL, &c.AfterURL, &c.By, &c.Reason)
		return c, err
	})
}

// arkQuery streams the ARKs, in the ledger's physical order (close to insertion order; no sort).
const arkQuery = `select 'ark:' || a.ark, a.naan, coalesce(s.shoulder, ''), a.url, a.erc_who, a.erc_what, a.erc_when,
		a.commitment, ark_status_text(a.status), a.tombstone_reason, a.created_at, a.updated_at, a.metadata::text
	from ark a
	left join shoulder s on s.id = a.shoulder_id
	where ($1::timestamptz is null or a.created_at >= $1) and ($2::timestamptz is null or a.created_at < $2)
	  and ($3::text = '' or a.naan = $3)
	  and ($4::text = '' or s.shoulder = $4)`

// ARKRows streams the ARKs selected by f as report rows (see ARKRow for the columns),
// in the ledger's physical order, like ChangeRows.
func ARKRows(ctx context.Context, l *Ledger, f ReportFilter) iter.Seq2[ARKRow, error] {
	return streamRows(ctx, l, "ARK", arkQuery, f, func(r pgx.Rows) (ARKRow, error) {
		var a ARKRow
		err := r.Scan(&a.ARK, &a.NAAN, &a.Shoulder, &a.Target, &a.Who, &a.What, &a.When,
			&a.Commitment, &a.Status, &a.TombstoneReason, &a.CreatedAt, &a.UpdatedAt, &a.Metadata)
		return a, err
	})
}

// streamRows runs query with f's parameters and yields each row through scan.
func streamRows[T any](ctx context.Context, l *Ledger, what, query string, f ReportFilter,
	scan func(pgx.Rows) (T, error)) iter.Seq2[T, error] {
	return streamQuery(ctx, l, what, query, f, f.args(), scan)
}

// streamQuery runs query with args (after validating f) and yields each row through scan.
func streamQuery[T any](ctx context.Context, l *Ledger, what, query string, f ReportFilter, args []any,
	scan func(pgx.Rows) (T, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		if err := f.Validate(); err != nil {
			yield(zero, err)
			return
		}
		rows, err := l.Pool.Query(ctx, query, args...)
		if err != nil {
			yield(zero, fmt.Errorf("report: read %s: %w", what, err))
			return
		}
		defer rows.Close()
		var n int64
		for rows.Next() {
			n++
			v, err := scan(rows)
			if err != nil {
				yield(zero, fmt.Errorf("report: read %s row %d: %w", what, n, err))
				return
			}
			if !yield(v, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(zero, fmt.Errorf("report: read %s: %w", what, err))
		}
	}
}

// linkQuery streams the link state of every ARK that has one, with its manager and shoulder, in
// the ledger's physical order; %s is the broken-only condition.
const linkQuery = `select 'ark:' || l.ark, a.naan, coalesce(s.shoulder, ''), m.name, a.url, l.target, ark_status_text(a.status),
		l.checked_at, l.outcome, l.status_code, l.error_class, l.final_url, l.mime_type, l.size, l.duration_ms,
		l.redirects, encode(l.body_hash, 'hex'), l.hash_alg, l.consecutive_failures, l.first_failure_at,
		l.last_success_at, l.broken, l.due_at, l.import_run_id is not null
	from link_state l
	join ark a on a.ark = l.ark
	left join shoulder s on s.id = a.shoulder_id
	left join manager m on m.id = s.manager_id
	where ($1::timestamptz is null or l.checked_at >= $1) and ($2::timestamptz is null or l.checked_at < $2)
	  and ($3::text = '' or a.naan = $3) and ($4::text = '' or s.shoulder = $4) and ($5::text = '' or m.name = $5)`

// LinkRows streams the link state of the ARKs selected by f (see LinkRow for the columns): Since
// and Until bound the last check's time, Manager and BrokenOnly narrow it (`arkhe report links`,
// --manager for a report per owner). Streamed like ChangeRows; --broken-only reads the broken
// ones through their index.
func LinkRows(ctx context.Context, l *Ledger, f ReportFilter) iter.Seq2[LinkRow, error] {
	q := linkQuery
	if f.BrokenOnly {
		q += " and l.broken"
	}
	return streamQuery(ctx, l, "link state", q, f, append(f.args(), f.Manager), func(r pgx.Rows) (LinkRow, error) {
		var x LinkRow
		err := r.Scan(&x.ARK, &x.NAAN, &x.Shoulder, &x.Manager, &x.Target, &x.CheckedTarget, &x.Status, &x.CheckedAt,
			&x.Outcome, &x.StatusCode, &x.ErrorClass, &x.FinalURL, &x.MIMEType, &x.Size, &x.DurationMS, &x.Redirects,
			&x.BodyHash, &x.HashAlg, &x.ConsecutiveFailures, &x.FirstFailureAt, &x.LastSuccessAt, &x.Broken, &x.DueAt, &x.Imported)
		return x, err
	})
}
