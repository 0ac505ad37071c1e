package ledger

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/linkcheck"
)

// TestNAAN is the NAAN shared for test ARKs (99999); a link-check run leaves its ARKs out
// unless asked.
const TestNAAN = "99999"

// linkCheckLock is the advisory lock a link-check run holds, so that two runs never check (and
// count the failures of) the same targets at once (an arbitrary constant).
const linkCheckLock = 7_2_11_5_0_15

// LinkSelection narrows the ARKs a link-check run reads. The zero value selects every public
// ARK with a target outside the test NAAN.
type LinkSelection struct {
	// NAAN keeps only the ARKs of this NAAN; "" for all. Naming the test NAAN includes it.
	NAAN string
	// Shoulder keeps only the ARKs of this shoulder, stored ("/x9") or bare ("x9"); "" for all.
	// Without NAAN it matches that shoulder string in every NAAN.
	Shoulder string
	// Manager keeps only the ARKs of this manager's shoulders, by name; "" for all. A name
	// held by managers of several NAANs needs NAAN.
	Manager string
	// IncludeTest includes the ARKs of the test NAAN 99999.
	IncludeTest bool
}

// LinkSelectionError reports a selection or an exclusion naming a manager or shoulder the
// ledger does not hold, or one that is ambiguous. Rule says which, in words.
type LinkSelectionError struct {
	What string // e.g. `manager "m1"`
	Rule string
}

// Error returns "What: Rule".
func (e *LinkSelectionError) Error() string { return e.What + ": " + e.Rule }

// linkSel is a LinkSelection resolved to the ledger's keys, with the open exclusions.
type linkSel struct {
	naan, shoulder string
	managers       []int64 // empty: every manager
	includeTest    bool
	exManagers     []int64
	exShoulders    []int64
	exHosts        map[string]bool
}

// managerIDs returns the keys of the managers named name (in naan when not "").
func (l *Ledger) managerIDs(ctx context.Context, naan, name string) ([]int64, error) {
	rows, err := l.Pool.Query(ctx, `select id from manager where name = $1 and ($2 = '' or naan = $2) order by naan`, name, naan)
	if err != nil {
		return nil, fmt.Errorf("read manager %s: %w", name, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("read manager %s: %w", name, err)
	}
	what := fmt.Sprintf("manager %q", name)
	switch {
	case len(ids) == 0 && naan != "":
		return nil, &LinkSelectionError{What: what, Rule: "is not registered in NAAN " + naan}
	case len(ids) == 0:
		return nil, &LinkSelectionError{What: what, Rule: "is not registered"}
	}
	return ids, nil
}

// resolve turns sel into keys and reads the open exclusions.
func (l *Ledger) resolveLinkSelection(ctx context.Context, sel LinkSelection) (linkSel, error) {
	r := linkSel{naan: sel.NAAN, includeTest: sel.IncludeTest || sel.NAAN == TestNAAN, exHosts: map[string]bool{}}
	if sel.Shoulder != "" {
		r.shoulder = ark.StoredShoulder(sel.Shoulder)
	}
	if sel.Manager != "" {
		ids, err := l.managerIDs(ctx, sel.NAAN, sel.Manager)
		if err != nil {
			return r, err
		}
		r.managers = ids
	}
	exs, err := l.LinkExclusions(ctx, false)
	if err != nil {
		return r, err
	}
	for _, e := range exs {
		switch {
		case e.managerID != 0:
			r.exManagers = append(r.exManagers, e.managerID)
		case e.shoulderID != 0:
			r.exShoulders = append(r.exShoulders, e.shoulderID)
		case e.Host != "":
			r.exHosts[e.Host] = true
		}
	}
	return r, nil
}

// args returns the selection's named query arguments.
func (s linkSel) args() pgx.NamedArgs {
	return pgx.NamedArgs{"naan": s.naan, "shoulder": s.shoulder, "managers": nonNil(s.managers),
		"include_test": s.includeTest, "test_naan": TestNAAN,
		"ex_shoulders": nonNil(s.exShoulders), "ex_managers": nonNil(s.exManagers)}
}

func nonNil(a []int64) []int64 {
	if a == nil {
		return []int64{}
	}
	return a
}

// linkFilter is the WHERE part every selection shares: public ARKs with a target, the
// selection, the exclusions by manager and shoulder (hosts are left out by the source). It can
// be NULL (a migrated shoulder has no manager): a WHERE reads that as false, and linkNeverQuery,
// which reads it as a column, coalesces it.
const linkFilter = `ark_status_text(a.status) = 'public' and a.url is not null and a.url <> ''
	and (@naan::text = '' or a.naan = @naan::text) and (@include_test::boolean or a.naan <> @test_naan::text)
	and (@shoulder::text = '' or s.shoulder = @shoulder::text)
	and (cardinality(@managers::bigint[]) = 0 or s.manager_id = any(@managers::bigint[]))
	and not (a.shoulder_id = any(@ex_shoulders::bigint[]))
	and not (coalesce(s.manager_id, 0) = any(@ex_managers::bigint[]))`

// linkStateColumns are the link_state columns scanStateRow reads, in its order.
const linkStateColumns = `l.target, l.checked_at, l.final_url, l.status_code, l.error_class, l.outcome,
	l.mime_type, l.size, l.duration_ms, l.body_hash, l.hash_alg, l.consecutive_failures,
	l.first_failure_at, l.last_success_at, l.broken, l.good_host, l.good_media_type, l.good_size`

// stateRow holds the nullable link_state columns of one row.
type stateRow struct {
	target, finalURL, errClass, outcome, mime, hashAlg, goodHost, goodMT *string
	checked, firstFail, lastSuccess                                      *time.Time
	status                                                               *int16
	size, goodSize                                                       *int64
	durMS, failures                                                      *int32
	hash                                                                 []byte
	broken                                                               *bool
}

func (r *stateRow) dest() []any {
	return []any{&r.target, &r.checked, &r.finalURL, &r.status, &r.errClass, &r.outcome, &r.mime, &r.size,
		&r.durMS, &r.hash, &r.hashAlg, &r.failures, &r.firstFail, &r.lastSuccess, &r.broken, &r.goodHost,
		&r.goodMT, &r.goodSize}
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func tm(p *time.Time) time.Time {
	if p == nil {
		return time.Time{}
	}
	return p.UTC()
}

// state rebuilds the linkcheck.State a row stores; the zero State (never checked) when the row
// is all NULL (no link_state row).
func (r *stateRow) state() linkcheck.State {
	s := linkcheck.State{Target: str(r.target), GoodSize: -1, GoodHost: str(r.goodHost), GoodMediaType: str(r.goodMT),
		FirstFailure: tm(r.firstFail), LastSuccess: tm(r.lastSuccess)}
	if r.failures != nil {
		s.ConsecutiveFailures = int(*r.failures)
	}
	if r.broken != nil {
		s.Broken = *r.broken
	}
	if r.goodSize != nil {
		s.GoodSize = *r.goodSize
	}
	if r.checked == nil {
		return s
	}
	c := linkcheck.Check{Time: r.checked.UTC(), Target: s.Target, FinalURL: str(r.finalURL),
		Error: linkcheck.ErrorClass(str(r.errClass)), Outcome: linkcheck.Outcome(str(r.outcome)),
		MIME: str(r.mime), Size: -1, HashAlg: str(r.hashAlg)}
	if r.status != nil {
		c.Status = int(*r.status)
	}
	if r.size != nil {
		c.Size = *r.size
	}
	if r.durMS != nil {
		c.Duration = time.Duration(*r.durMS) * time.Millisecond
	}
	if r.hash != nil {
		c.BodyHash = hex.EncodeToString(r.hash)
	}
	s.Last = c
	return s
}

// stateArgs returns the named arguments of the link_state columns that hold s (a State whose
// check was of s.Target), due at due.
func stateArgs(s linkcheck.State, redirects int, due time.Time) (pgx.NamedArgs, error) {
	c := s.Last
	opt := func(v string) *string {
		if v == "" {
			return nil
		}
		return &v
	}
	optTime := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		return &t
	}
	optSize := func(n int64) *int64 {
		if n < 0 {
			return nil
		}
		return &n
	}
	a := pgx.NamedArgs{"target": s.Target, "checked_at": optTime(c.Time), "final_url": opt(c.FinalURL),
		"error_class": opt(string(c.Error)), "outcome": opt(string(c.Outcome)), "mime_type": opt(c.MIME),
		"size": optSize(c.Size), "hash_alg": opt(c.HashAlg), "consecutive_failures": s.ConsecutiveFailures,
		"first_failure_at": optTime(s.FirstFailure), "last_success_at": optTime(s.LastSuccess),
		"broken": s.Broken, "good_host": opt(s.GoodHost), "good_media_type": opt(s.GoodMediaType),
		"good_size": optSize(s.GoodSize), "due_at": optTime(due)}
	var status *int16
	if c.Status > 0 {
		v := int16(c.Status)
		status = &v
	}
	a["status_code"] = status
	var dur *int32
	if c.Duration > 0 {
		v := int32(min(c.Duration.Milliseconds(), 1<<31-1))
		dur = &v
	}
	a["duration_ms"] = dur
	var red *int16
	if !c.Time.IsZero() {
		v := int16(min(redirects, 1<<15-1))
		red = &v
	}
	a["redirects"] = red
	var hash []byte
	if c.BodyHash != "" {
		b, err := hex.DecodeString(c.BodyHash)
		if err != nil {
			return nil, fmt.Errorf("body hash %q of %s is not hex: %w", c.BodyHash, s.Target, err)
		}
		hash = b
	}
	a["body_hash"] = hash
	return a, nil
}

// eventArgs adds the transitions ts as the arrays ev_kinds, ev_ats, ev_reasons and their
// number ev_n to a.
func eventArgs(a pgx.NamedArgs, ts []linkcheck.Transition) {
	kinds := make([]string, len(ts))
	ats := make([]time.Time, len(ts))
	reasons := make([]string, len(ts))
	for i, t := range ts {
		kinds[i], ats[i], reasons[i] = string(t.Kind), t.Time, t.Reason
	}
	a["ev_kinds"], a["ev_ats"], a["ev_reasons"], a["ev_n"] = kinds, ats, reasons, len(ts)
}

// linkStateInsertColumns and linkStateInsertValues are the columns a check writes and the
// named arguments stateArgs gives them.
const (
	linkStateInsertColumns = `target, checked_at, final_url, status_code, error_class, outcome, mime_type, size,
		duration_ms, redirects, body_hash, hash_alg, consecutive_failures, first_failure_at, last_success_at,
		broken, good_host, good_media_type, good_size, due_at`
	linkStateInsertValues = `@target::text, @checked_at::timestamptz, @final_url::text, @status_code::smallint,
		@error_class::text, @outcome::text, @mime_type::text, @size::bigint, @duration_ms::integer,
		@redirects::smallint, @body_hash::bytea, @hash_alg::text, @consecutive_failures::integer,
		@first_failure_at::timestamptz, @last_success_at::timestamptz, @broken::boolean, @good_host::text,
		@good_media_type::text, @good_size::bigint, @due_at::timestamptz`
)

// ---------------------------------------------------------------- the source

// LinkSourceConfig configures a LinkSource.
type LinkSourceConfig struct {
	// Selection narrows the ARKs read.
	Selection LinkSelection
	// Now is the time against which "due" is judged, fixed for the source's life so that a
	// target checked during the run is not due again in it; zero: the time NewLinkSource is
	// called.
	Now time.Time
	// PageSize is the number of rows read per query (default 1,000); memory holds one page.
	PageSize int
}

// LinkSourceStats count what a LinkSource yielded, by phase, and what it left out.
type LinkSourceStats struct {
	// Failing, Never and Good count the targets handed out (Next) from each phase: failing
	// targets due again, targets never checked (or reset by a repoint), good targets due again.
	// They add up to the targets the run read.
	Failing, Never, Good int64
	// ExcludedHost counts targets left out because their host is excluded.
	ExcludedHost int64
}

// LinkSource is the linkcheck.TargetSource of a ledger: the due targets of public ARKs, in
// the order a run should check them (linkcheck.Rank, then linkcheck.DueAt): failing targets
// whose due time has come, earliest first; then targets never checked, in ledger-key order;
// then good targets whose due time has come, earliest first. Reserved and tombstoned ARKs,
// ARKs without a target, the test NAAN (unless selected) and excluded managers, shoulders and
// hosts are left out. It reads a page at a time by keyset (no transaction stays open), so
// memory is one page whatever the ledger's size, and the due targets are found through the
// partial indexes on link_state's due time, never by reading every state row. Not safe for
// concurrent use (linkcheck.Run reads it from one goroutine).
type LinkSource struct {
	l      *Ledger
	sel    linkSel
	now    time.Time
	page   int
	phase  int // 0 failing, 1 never checked, 2 good, 3 done
	buf    []linkcheck.Target
	pos    int
	last   bool // the page in buf is the phase's last
	curDue time.Time
	curKey string
	stats  LinkSourceStats
}

// NewLinkSource resolves cfg's selection and reads the open exclusions. An unknown manager is
// a *LinkSelectionError.
func (l *Ledger) NewLinkSource(ctx context.Context, cfg LinkSourceConfig) (*LinkSource, error) {
	sel, err := l.resolveLinkSelection(ctx, cfg.Selection)
	if err != nil {
		return nil, err
	}
	s := &LinkSource{l: l, sel: sel, now: cfg.Now, page: cfg.PageSize}
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

func (s *LinkSource) resetCursor() {
	s.curDue, s.curKey = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), ""
	if s.phase == 1 && s.sel.naan != "" {
		s.curKey = s.sel.naan + "/"
	}
	s.buf, s.pos, s.last = s.buf[:0], 0, false
}

// Stats returns what the source has yielded so far.
func (s *LinkSource) Stats() LinkSourceStats { return s.stats }

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
func (s *LinkSource) Next(ctx context.Context) (linkcheck.Target, error) {
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
func (s *LinkSource) fetch(ctx context.Context) error {
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

// ---------------------------------------------------------------- the sink

// LinkSinkConfig configures a LinkSink.
type LinkSinkConfig struct {
	// Policy gives each stored state its due time (linkcheck.DueAt); zero fields take the defaults.
	Policy linkcheck.Policy
	// Committers is the number of transactions in flight at once (default 2).
	Committers int
	// MaxBatch is the most checks committed in one transaction (default 128).
	MaxBatch int
}

// LinkSinkStats count what a LinkSink stored.
type LinkSinkStats struct {
	// Stored is the number of checks whose state was written.
	Stored int64
	// Stale is the number of checks not written because the ARK's target changed while the
	// check ran (the repoint already reset the state for the new target).
	Stale int64
	// Events is the number of link_event rows appended.
	Events int64
	// Commits is the number of transactions committed.
	Commits int64
}

// LinkSink is the linkcheck.ResultSink of a ledger: each check upserts the ARK's link_state
// row and appends one link_event row per transition, in one transaction with the other checks
// that arrived meanwhile (group commit: no check waits for a batch to fill). Record returns
// nil only after that transaction committed, so a check Record acknowledged survives a killed
// run. A check of a target the ARK no longer points to (repointed during the run) is dropped
// and counted as stale: the state row is written only while its target is the target checked.
// Safe for concurrent use; Close it after the run.
type LinkSink struct {
	l      *Ledger
	cfg    LinkSinkConfig
	reqs   chan *linkReq
	wg     sync.WaitGroup
	mu     sync.Mutex
	stats  LinkSinkStats
	closed bool
}

type linkReq struct {
	r    linkcheck.Result
	next linkcheck.State
	ts   []linkcheck.Transition
	done chan error
}

// NewLinkSink starts the sink's committers.
func (l *Ledger) NewLinkSink(cfg LinkSinkConfig) *LinkSink {
	if cfg.Committers <= 0 {
		cfg.Committers = 2
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 128
	}
	s := &LinkSink{l: l, cfg: cfg, reqs: make(chan *linkReq)}
	for range cfg.Committers {
		s.wg.Add(1)
		go s.committer()
	}
	return s
}

// ErrLinkSinkClosed is returned by Record after Close.
var ErrLinkSinkClosed = errors.New("link check sink is closed")

// Record stores one check (see LinkSink); it blocks until the check is committed.
func (s *LinkSink) Record(ctx context.Context, r linkcheck.Result, next linkcheck.State, ts []linkcheck.Transition) error {
	q := &linkReq{r: r, next: next, ts: ts, done: make(chan error, 1)}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrLinkSinkClosed
	}
	s.mu.Unlock()
	select {
	case s.reqs <- q:
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-q.done
}

// Close stops the committers once every pending check is committed. Call it after the run,
// when no Record is in progress.
func (s *LinkSink) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	close(s.reqs)
	s.wg.Wait()
}

// Stats returns what the sink has stored so far.
func (s *LinkSink) Stats() LinkSinkStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

func (s *LinkSink) committer() {
	defer s.wg.Done()
	batch := make([]*linkReq, 0, s.cfg.MaxBatch)
	for first := range s.reqs {
		batch = append(batch[:0], first)
	fill:
		for len(batch) < s.cfg.MaxBatch {
			select {
			case q, ok := <-s.reqs:
				if !ok {
					break fill
				}
				batch = append(batch, q)
			default:
				break fill
			}
		}
		err := s.commit(batch)
		for _, q := range batch {
			q.done <- err
		}
	}
}

// linkRecordSQL writes one check: the upsert of the state (only while the ARK's target and
// the state's are the target checked: a repoint during the check makes it stale), the events
// numbered from the ARK's event_seq, and returns 1 when written.
const linkRecordSQL = `with up as (
	insert into link_state as l (ark, ` + linkStateInsertColumns + `, event_seq)
	select a.ark, ` + linkStateInsertValues + `, @ev_n::integer from ark a
	where a.ark = @ark::text and a.url is not distinct from @target::text
	on conflict (ark) do update set
		target = excluded.target, checked_at = excluded.checked_at, final_url = excluded.final_url,
		status_code = excluded.status_code, error_class = excluded.error_class, outcome = excluded.outcome,
		mime_type = excluded.mime_type, size = excluded.size, duration_ms = excluded.duration_ms,
		redirects = excluded.redirects, body_hash = excluded.body_hash, hash_alg = excluded.hash_alg,
		consecutive_failures = excluded.consecutive_failures, first_failure_at = excluded.first_failure_at,
		last_success_at = excluded.last_success_at, broken = excluded.broken, good_host = excluded.good_host,
		good_media_type = excluded.good_media_type, good_size = excluded.good_size, due_at = excluded.due_at,
		import_run_id = null, event_seq = l.event_seq + excluded.event_seq
	where l.target is not distinct from excluded.target
	returning l.ark, l.event_seq
), ev as (
	insert into link_event (ark, seq, at, kind, target, reason)
	select up.ark, up.event_seq - @ev_n::integer + e.i::integer, e.at, e.kind, @target::text, e.reason
	from up cross join unnest(@ev_kinds::text[], @ev_ats::timestamptz[], @ev_reasons::text[])
		with ordinality as e(kind, at, reason, i)
	returning 1
)
select count(*) from up`

func (s *LinkSink) commit(batch []*linkReq) error {
	ctx := context.Background()
	b := &pgx.Batch{}
	for _, q := range batch {
		a, err := stateArgs(q.next, len(q.r.Redirects), linkcheck.DueAt(q.next, s.cfg.Policy))
		if err != nil {
			return fmt.Errorf("record the check of %s: %w", q.r.Key, err)
		}
		a["ark"] = q.r.Key
		a["target"] = q.r.Check.Target
		eventArgs(a, q.ts)
		b.Queue(linkRecordSQL, a)
	}
	tx, err := s.l.Pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("record %d checks: %w", len(batch), err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	br := tx.SendBatch(ctx, b)
	var stored, stale, events int64
	for _, q := range batch {
		var n int64
		if err := br.QueryRow().Scan(&n); err != nil {
			_ = br.Close()
			return fmt.Errorf("record the check of %s: %w", q.r.Key, err)
		}
		if n > 0 {
			stored++
			events += int64(len(q.ts))
		} else {
			stale++
		}
	}
	if err := br.Close(); err != nil {
		return fmt.Errorf("record %d checks: %w", len(batch), err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("record %d checks: commit: %w", len(batch), err)
	}
	s.mu.Lock()
	s.stats.Stored += stored
	s.stats.Stale += stale
	s.stats.Events += events
	s.stats.Commits++
	s.mu.Unlock()
	return nil
}

// ---------------------------------------------------------------- one run at a time

// LinkCheckBusyError reports that another link-check run holds the ledger's link-check lock.
type LinkCheckBusyError struct{}

// Error says what to do.
func (*LinkCheckBusyError) Error() string {
	return "another arkhe linkcheck run is working on this ledger; runs never overlap (each would count the other's failures): try again when it ends"
}

// LockLinkCheck takes the ledger's link-check lock (a session advisory lock on a connection of
// its own) so that two runs never check the same targets at once; release gives it back. A
// lock held by another session is a *LinkCheckBusyError.
func (l *Ledger) LockLinkCheck(ctx context.Context) (release func(), err error) {
	conn, err := l.Pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("link check lock: %w", err)
	}
	var ok bool
	if err := conn.QueryRow(ctx, `select pg_try_advisory_lock($1)`, linkCheckLock).Scan(&ok); err != nil {
		conn.Release()
		return nil, fmt.Errorf("link check lock: %w", err)
	}
	if !ok {
		conn.Release()
		return nil, &LinkCheckBusyError{}
	}
	return func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), `select pg_advisory_unlock($1)`, linkCheckLock)
		conn.Release()
	}, nil
}

// ---------------------------------------------------------------- exclusions

// LinkExclusionSpec names what an exclusion leaves out: exactly one of Manager (a manager's
// name), Shoulder (stored or bare form) and Host (a host name, or a URL whose host is meant).
type LinkExclusionSpec struct {
	// NAAN narrows Manager and Shoulder to one NAAN; needed when the name is held in several.
	NAAN     string
	Manager  string
	Shoulder string
	Host     string
	// Reason says why (kept with the exclusion); By who asks (a client_id or a person's name;
	// "" records the database role of the session).
	Reason, By string
}

// LinkExclusion is one exclusion as `arkhe linkcheck exclusions` lists it.
type LinkExclusion struct {
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
func (l *Ledger) resolveExclusion(ctx context.Context, sp LinkExclusionSpec) (*int64, *int64, *string, error) {
	n := 0
	for _, v := range []string{sp.Manager, sp.Shoulder, sp.Host} {
		if v != "" {
			n++
		}
	}
	if n != 1 {
		return nil, nil, nil, &LinkSelectionError{What: "exclusion", Rule: "name exactly one of a manager, a shoulder and a host"}
	}
	switch {
	case sp.Manager != "":
		ids, err := l.managerIDs(ctx, sp.NAAN, sp.Manager)
		if err != nil {
			return nil, nil, nil, err
		}
		if len(ids) > 1 {
			return nil, nil, nil, &LinkSelectionError{What: fmt.Sprintf("manager %q", sp.Manager), Rule: "is registered in several NAANs: name the NAAN"}
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
			return nil, nil, nil, &LinkSelectionError{What: what, Rule: "is not registered"}
		case len(ids) > 1:
			return nil, nil, nil, &LinkSelectionError{What: what, Rule: "is registered in several NAANs: name the NAAN"}
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
		return "", &LinkSelectionError{What: fmt.Sprintf("host %q", v), Rule: "is not a host name (e.g. repository.example.org)"}
	}
	return h, nil
}

// AddLinkExclusion leaves a manager's, a shoulder's or a host's targets out of every link-check
// run until EndLinkExclusion. created is false when the same exclusion is already open.
func (l *Ledger) AddLinkExclusion(ctx context.Context, sp LinkExclusionSpec) (created bool, err error) {
	m, s, h, err := l.resolveExclusion(ctx, sp)
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

// EndLinkExclusion lifts an open exclusion: the row gets its end time and stays, so the
// history of exclusions is kept. ended is false when no such exclusion is open.
func (l *Ledger) EndLinkExclusion(ctx context.Context, sp LinkExclusionSpec) (ended bool, err error) {
	m, s, h, err := l.resolveExclusion(ctx, sp)
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

// LinkExclusions returns the open exclusions, or every exclusion ever made with all, oldest first.
func (l *Ledger) LinkExclusions(ctx context.Context, all bool) ([]LinkExclusion, error) {
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
	var out []LinkExclusion
	for rows.Next() {
		var e LinkExclusion
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

// ---------------------------------------------------------------- import of a legacy checker's state

// LinkImport is the state a legacy link checker kept for one ARK.
type LinkImport struct {
	// Key is the ledger key "NAAN/name".
	Key string
	// State is the state to store; State.Target is the target it is about and must be the
	// ARK's target in the ledger.
	State linkcheck.State
	// Events are appended to the ARK's link_event history with the state.
	Events []linkcheck.Transition
}

// LinkImportOutcome says what ImportLinkStates did with one LinkImport.
type LinkImportOutcome int

// The outcomes of ImportLinkStates.
const (
	// LinkImported: the state was stored.
	LinkImported LinkImportOutcome = iota
	// LinkNotInLedger: the ARK is not in the ledger; nothing is invented.
	LinkNotInLedger
	// LinkTargetDiffers: the ledger's target for the ARK is another URL; the state is about a
	// target the ARK no longer has, so it is not stored.
	LinkTargetDiffers
	// LinkKept: the ARK already has a link state (arkhe's own checks or an earlier import),
	// which is left alone: import never overwrites.
	LinkKept
)

// LinkImportResult is the outcome of one LinkImport; LedgerTarget is the ledger's target for
// LinkTargetDiffers ("" when the ARK has none).
type LinkImportResult struct {
	Outcome      LinkImportOutcome
	LedgerTarget string
}

// linkImportSQL stores one imported state when the ARK exists with that target and has no state.
const linkImportSQL = `with a as (select ark, url from ark where ark = @ark::text),
ins as (
	insert into link_state (ark, ` + linkStateInsertColumns + `, event_seq, import_run_id)
	select a.ark, ` + linkStateInsertValues + `, @ev_n::integer, @run::bigint from a
	where a.url is not distinct from @target::text
	on conflict (ark) do nothing
	returning ark
), ev as (
	insert into link_event (ark, seq, at, kind, target, reason, import_run_id)
	select ins.ark, e.i::integer, e.at, e.kind, @target::text, e.reason, @run::bigint
	from ins cross join unnest(@ev_kinds::text[], @ev_ats::timestamptz[], @ev_reasons::text[])
		with ordinality as e(kind, at, reason, i)
	returning 1
)
select (select count(*) from a), coalesce((select url from a), ''), (select count(*) from ins)`

// ImportLinkStates stores legacy link-check states in tx, insert-only, recorded with import run
// runID; each state's due time follows policy (zero fields: the defaults). It returns one result
// per row, in order.
func ImportLinkStates(ctx context.Context, tx pgx.Tx, runID int64, policy linkcheck.Policy, rows []LinkImport) ([]LinkImportResult, error) {
	b := &pgx.Batch{}
	for _, r := range rows {
		a, err := stateArgs(r.State, 0, linkcheck.DueAt(r.State, policy))
		if err != nil {
			return nil, fmt.Errorf("import the link state of %s: %w", r.Key, err)
		}
		a["ark"], a["run"] = r.Key, runID
		eventArgs(a, r.Events)
		b.Queue(linkImportSQL, a)
	}
	br := tx.SendBatch(ctx, b)
	out := make([]LinkImportResult, len(rows))
	for i, r := range rows {
		var found, inserted int64
		var url string
		if err := br.QueryRow().Scan(&found, &url, &inserted); err != nil {
			_ = br.Close()
			return nil, fmt.Errorf("import the link state of %s: %w", r.Key, err)
		}
		switch {
		case found == 0:
			out[i].Outcome = LinkNotInLedger
		case url != r.State.Target:
			out[i] = LinkImportResult{Outcome: LinkTargetDiffers, LedgerTarget: url}
		case inserted == 0:
			out[i].Outcome = LinkKept
		}
	}
	if err := br.Close(); err != nil {
		return nil, fmt.Errorf("import link states: %w", err)
	}
	return out, nil
}
