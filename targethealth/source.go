package targethealth

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/linkcheck"
)

// SourceConfig configures a Source.
type SourceConfig struct {
	// Selection narrows the ARKs read.
	Selection Selection
	// Now is the time against which "due" is judged, fixed for the source's life so that a
	// target checked during the run is not due again in it; zero: the time NewSource is
	// called.
	Now time.Time
	// PageSize is the number of rows read per query (default 1,000); memory holds one page.
	PageSize int
}

// SourceStats count what a Source yielded, by phase, and what it left out.
type SourceStats struct {
	// Failing, Never and Good count the targets handed out (Next) from each phase: failing
	// targets due again, targets never checked (or reset by a repoint), good targets due again.
	// They add up to the targets the run read.
	Failing, Never, Good int64
	// ExcludedHost counts targets left out because their host is excluded.
	ExcludedHost int64
}

// Source is the linkcheck.TargetSource of a ledger: the due targets of public ARKs, in
// the order a run should check them (linkcheck.Rank, then linkcheck.DueAt): failing targets
// whose due time has come, earliest first; then targets never checked, in ledger-key order;
// then good targets whose due time has come, earliest first. Reserved and tombstoned ARKs,
// ARKs without a target, the test NAAN (unless selected) and excluded managers, shoulders and
// hosts are left out. It reads a page at a time by keyset (no transaction stays open), so
// memory is one page whatever the ledger's size, and the due targets are found through the
// partial indexes on link_state's due time, never by reading every state row. Not safe for
// concurrent use (linkcheck.Run reads it from one goroutine).
type Source struct {
	l      *ledger.Ledger
	sel    linkSel
	now    time.Time
	page   int
	phase  int // 0 failing, 1 never checked, 2 good, 3 done
	buf    []linkcheck.Target
	pos    int
	last   bool // the page in buf is the phase's last
	curDue time.Time
	curKey string
	stats  SourceStats
}

// NewSource resolves cfg's selection and reads the open exclusions. An unknown manager is
// a *SelectionError.
func NewSource(ctx context.Context, l *ledger.Ledger, cfg SourceConfig) (*Source, error) {
	sel, err := resolveSelection(ctx, l, cfg.Selection)
	if err != nil {
		return nil, err
	}
	s := &Source{l: l, sel: sel, now: cfg.Now, page: cfg.PageSize}
	if s.now.IsZero() {
		s.now = time.Now()
	}
	if s.page <= 0 {
		s.page = 1000
	}
	s.resetCursor()
	return s, nil
}

// noKeyAbove is above every ledger key: a key starts with a NAAN character, at most 'z'.
const noKeyAbove = "{"

func (s *Source) resetCursor() {
	s.curDue, s.curKey = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), ""
	if s.phase == 1 && s.sel.naan != "" {
		s.curKey = s.sel.naan + "/"
	}
	s.buf, s.pos, s.last = s.buf[:0], 0, false
}

// Stats returns what the source has yielded so far.
func (s *Source) Stats() SourceStats { return s.stats }

// The page queries of the three phases. Each names its partial index's predicate literally
// (l.failing / not l.failing) so the planner can use it.
const (
	linkDueFailingQuery = `select l.ark, a.url, ` + linkStateColumns + `, l.due_at, true
	from link_state l join ark a on a.ark = l.ark join shoulder s on s.id = a.shoulder_id
	where l.failing and l.due_at <= @now and (l.due_at, l.ark) > (@cur_due::timestamptz, @cur_key::text)
	  and ` + linkFilter + `
	order by l.due_at, l.ark limit @page`
	linkDueGoodQuery = `select l.ark, a.url, ` + linkStateColumns + `, l.due_at, true
	from link_state l join ark a on a.ark = l.ark join shoulder s on s.id = a.shoulder_id
	where not l.failing and l.due_at <= @now and (l.due_at, l.ark) > (@cur_due::timestamptz, @cur_key::text)
	  and ` + linkFilter + `
	order by l.due_at, l.ark limit @page`
	// linkNeverQuery finds a page of ARKs without a checked state first, by key, on indexes
	// alone (ark's primary key, link_state_checked), and only then reads those ARKs: a run that
	// finds none reads the keys, not the rows. ok says whether an ARK passes the filter; the
	// ones that do not still move the cursor.
	linkNeverQuery = `select a.ark, a.url, ` + linkStateColumns + `, null::timestamptz, coalesce((` + linkFilter + `), false) as ok
	from (select k.ark from ark k
	      where k.ark > @cur_key::text and k.ark < @key_above::text
	        and not exists (select 1 from link_state c where c.ark = k.ark and c.checked_at is not null)
	      order by k.ark limit @page) n
	join ark a on a.ark = n.ark join shoulder s on s.id = a.shoulder_id left join link_state l on l.ark = a.ark
	order by a.ark`
)

// Next returns the next due target, io.EOF after the last, or ctx's error.
func (s *Source) Next(ctx context.Context) (linkcheck.Target, error) {
	for {
		if err := ctx.Err(); err != nil {
			return linkcheck.Target{}, err
		}
		if s.pos < len(s.buf) {
			t := s.buf[s.pos]
			s.buf[s.pos] = linkcheck.Target{}
			s.pos++
			// counted when handed out, not when read ahead: a run stopped by --limit or
			// --max-duration reports what it took (buf holds one phase's page at a time)
			switch s.phase {
			case 0:
				s.stats.Failing++
			case 1:
				s.stats.Never++
			case 2:
				s.stats.Good++
			}
			return t, nil
		}
		if s.phase == 3 {
			return linkcheck.Target{}, io.EOF
		}
		if s.last {
			s.phase++
			s.resetCursor()
			continue
		}
		if err := s.fetch(ctx); err != nil {
			return linkcheck.Target{}, err
		}
	}
}

// fetch reads the next page of the current phase into buf.
func (s *Source) fetch(ctx context.Context) error {
	a := s.sel.args()
	a["now"], a["cur_due"], a["cur_key"], a["page"] = s.now, s.curDue, s.curKey, s.page
	query, what := linkDueFailingQuery, "failing targets"
	switch s.phase {
	case 1:
		query, what = linkNeverQuery, "targets never checked"
		a["key_above"] = noKeyAbove
		if s.sel.naan != "" {
			a["key_above"] = s.sel.naan + "0" // '0' follows '/'
		}
	case 2:
		query, what = linkDueGoodQuery, "good targets"
	}
	rows, err := s.l.Pool.Query(ctx, query, a)
	if err != nil {
		return fmt.Errorf("link check: read %s: %w", what, err)
	}
	defer rows.Close()
	s.buf, s.pos = s.buf[:0], 0
	n := 0
	for rows.Next() {
		n++
		var key string
		var url *string
		var due *time.Time
		var ok bool
		var r stateRow
		dest := append([]any{&key, &url}, r.dest()...)
		if err := rows.Scan(append(dest, &due, &ok)...); err != nil {
			return fmt.Errorf("link check: read %s: %w", what, err)
		}
		s.curKey = key
		if due != nil {
			s.curDue = *due
		}
		if !ok || url == nil {
			continue
		}
		if h, err := linkcheck.HostKey(*url); err == nil && s.sel.exHosts[h] {
			s.stats.ExcludedHost++
			continue
		}
		s.buf = append(s.buf, linkcheck.Target{Key: key, URL: *url, Prev: r.state()})
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("link check: read %s: %w", what, err)
	}
	s.last = n < s.page
	return nil
}
