package targethealth

import (
	"context"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/linkcheck"
)

// SinkConfig configures a Sink.
type SinkConfig struct {
	// Policy gives each stored state its due time (linkcheck.DueAt); zero fields take the defaults.
	Policy linkcheck.Policy
	// Committers is the number of transactions in flight at once (default 2).
	Committers int
	// MaxBatch is the most checks committed in one transaction (default 128).
	MaxBatch int
}

// SinkStats count what a Sink stored.
type SinkStats struct {
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

// Sink is the linkcheck.ResultSink of a ledger: each check upserts the ARK's link_state
// row and appends one link_event row per transition, in one transaction with the other checks
// that arrived meanwhile (group commit: no check waits for a batch to fill). Record returns
// nil only after that transaction committed, so a check Record acknowledged survives a killed
// run. A check of a target the ARK no longer points to (repointed during the run) is dropped
// and counted as stale: the state row is written only while its target is the target checked.
// Safe for concurrent use; Close it after the run.
type Sink struct {
	l      *ledger.Ledger
	cfg    SinkConfig
	reqs   chan *linkReq
	wg     sync.WaitGroup
	mu     sync.Mutex
	stats  SinkStats
	closed bool
}

type linkReq struct {
	r    linkcheck.Result
	next linkcheck.State
	ts   []linkcheck.Transition
	done chan error
}

// NewSink starts the sink's committers.
func NewSink(l *ledger.Ledger, cfg SinkConfig) *Sink {
	if cfg.Committers <= 0 {
		cfg.Committers = 2
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 128
	}
	s := &Sink{l: l, cfg: cfg, reqs: make(chan *linkReq)}
	for range cfg.Committers {
		s.wg.Add(1)
		go s.committer()
	}
	return s
}

// Record stores one check (see Sink); it blocks until the check is committed.
func (s *Sink) Record(ctx context.Context, r linkcheck.Result, next linkcheck.State, ts []linkcheck.Transition) error {
	q := &linkReq{r: r, next: next, ts: ts, done: make(chan error, 1)}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrSinkClosed
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
func (s *Sink) Close() {
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
func (s *Sink) Stats() SinkStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

func (s *Sink) committer() {
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

func (s *Sink) commit(batch []*linkReq) error {
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
