package loader

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/pipeline"
)

// This file is how a mint run survives concurrent runs and faults.
//
// Concurrent runs: every batch writes its receipts in request-ID order (orderByRequestID), the
// order of the receipt index. Two transactions inserting overlapping request IDs then wait for
// each other in one direction only — a transaction waits only for one that already holds a
// request ID further on than everything the waiter holds — so they never deadlock: the later
// one waits until the first commits, fails on the first receipt it finds taken, reads the
// receipts the first one committed and replays them (writeBatch), sending only the rest
// again. A batch gives up only after maxBatchAttempts attempts in a row during which no
// concurrent run committed any of its request IDs.
//
// Faults: Write retries a batch after a fault — a lost connection, a server shutting down,
// restarting or refusing connections, a lock or statement timeout, or no answer within the
// batch deadline (a frozen server: keepalives do not work on a Unix socket) — with exponential
// back-off for at most RetryPolicy.For from the batch's first fault, reconnecting when the
// connection is gone. Faults are classified by SQLSTATE and by the error's type (pgconn, net,
// syscall), never by message text. A batch whose connection was lost may have committed: the
// next attempt reads the receipt of one row that attempt would have minted, and if it holds
// the ARK drawn for it, the attempt committed (a batch commits whole) and is taken as it was;
// otherwise the batch is sent again after reading all its receipts.
//
// Counters: a draw is one blade tried for a row in a batch that committed, either the one the
// row minted or one that collided (named an existing ARK, or one held by another row of the
// run); blades drawn in attempts that were rolled back, and for rows that replayed in the end,
// are not draws. So for every shoulder draws = minted ARKs + collisions, in the ledger's
// shoulder_tally and in the run summary, whatever was retried. The summary counts minted and
// replayed rows when their batch commits, so a run that stops reports what it committed.

// Defaults of RetryPolicy.
const (
	// DefaultRetryFor is how long a batch keeps retrying after its first fault.
	DefaultRetryFor = 5 * time.Minute
	// DefaultBatchTimeout is the deadline of one attempt at a batch; the session's
	// lock_timeout is half of it and its statement_timeout three quarters.
	DefaultBatchTimeout = 2 * time.Minute
	// maxBackoff caps the wait between two attempts.
	maxBackoff = 30 * time.Second
)

// RetryPolicy says how a mint run rides out faults.
type RetryPolicy struct {
	// For is how long a batch keeps retrying after its first fault (0: DefaultRetryFor; negative:
	// a fault stops the run at once).
	For time.Duration
	// BatchTimeout is the client-side deadline of one attempt at a batch, so a frozen server
	// is detected (0: DefaultBatchTimeout). The session's lock_timeout is half of it and its
	// statement_timeout three quarters, so a server that still answers ends a wait on a lock held
	// by a frozen session itself, and says so, before the client gives up on the connection.
	BatchTimeout time.Duration
	// Notify, if set, is told of every retry and of every batch that resumed after one; it is
	// called from the workers' goroutines, concurrently.
	Notify func(RetryNotice)
}

// withDefaults fills in the zero values.
func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.For == 0 {
		p.For = DefaultRetryFor
	}
	if p.BatchTimeout <= 0 {
		p.BatchTimeout = DefaultBatchTimeout
	}
	return p
}

// RetryNotice is a retry after a fault, or (Resumed) the batch that got through after one.
type RetryNotice struct {
	Worker  int
	Attempt int           // the attempt that failed (1 for the first), or that got through
	Cause   string        // what happened, e.g. "connection lost"
	Err     error         // the error of the failed attempt
	Wait    time.Duration // until the next attempt
	Left    time.Duration // of RetryPolicy.For, after Wait
	// Resumed is set on the notice of a batch that got through after faults; Committed says
	// whether the attempt the fault interrupted had committed (its receipts said so).
	Resumed, Committed bool
}

// String renders "connection lost (ERR); retrying in 2s, 4m58s left", or for a resumed batch
// which of its attempts committed.
func (n RetryNotice) String() string {
	if n.Resumed {
		if n.Committed {
			return fmt.Sprintf("worker %d: the batch got through on attempt %d: the interrupted attempt had committed (its receipts say so), so nothing was sent twice", n.Worker, n.Attempt)
		}
		return fmt.Sprintf("worker %d: the batch got through on attempt %d, sent again after its receipts were read", n.Worker, n.Attempt)
	}
	return fmt.Sprintf("worker %d: %s (%v); retrying in %s, %s left", n.Worker, n.Cause, n.Err,
		n.Wait.Round(100*time.Millisecond), n.Left.Round(time.Second))
}

// faultCounters are a run's committed outcomes and its faults, for the summary and the audit
// event; safe for concurrent use.
type faultCounters struct {
	minted, replayed, draws, collisions atomic.Int64 // in committed batches
	retried, deadlocks                  atomic.Int64
}

// count adds a committed batch.
func (f *faultCounters) count(b *pipeline.Batch) {
	var minted, replayed int64
	for i := range b.Rows {
		switch b.Rows[i].Outcome {
		case pipeline.OutcomeMinted:
			minted++
		case pipeline.OutcomeReplayed:
			replayed++
		}
	}
	f.minted.Add(minted)
	f.replayed.Add(replayed)
	f.draws.Add(b.Draws)
	f.collisions.Add(b.Collisions)
}

// committedSummary returns sum with minted, replayed, draws and collisions as committed (the
// reorder buffer writes rows out in manifest order, so when a run stops, committed rows may not
// have reached it).
func (s *MintSink) committedSummary(sum pipeline.Summary) pipeline.Summary {
	f := &s.faults
	sum.Minted, sum.Replayed = f.minted.Load(), f.replayed.Load()
	sum.Draws, sum.Collisions = f.draws.Load(), f.collisions.Load()
	return sum
}

// orderByRequestID puts the rows to mint in request-ID order (octet order, the receipt
// index's COLLATE "C"), so that concurrent runs insert receipts in one order and never
// deadlock (see the file comment).
func (w *mintWorker) orderByRequestID(rows []pipeline.Row) {
	slices.SortFunc(w.mint, func(a, b int32) int {
		return strings.Compare(rows[a].Record.RequestID, rows[b].Record.RequestID)
	})
}

// drawCounts returns the draws and collisions of the batch as settled (see the file comment):
// per minted row its collisions and the blade it mints; per row that ran out of draws, its
// collisions.
func (w *mintWorker) drawCounts(rows []pipeline.Row) (draws, collisions int64) {
	for i := range rows {
		c := int64(w.collided[i])
		switch r := &rows[i]; {
		case r.Outcome == pipeline.OutcomeMinted:
			draws += c + 1
			collisions += c
		case c > 0 && r.Outcome == pipeline.OutcomeRejected && r.Reject != nil:
			if _, ok := r.Reject.Err.(*CollisionError); ok {
				draws += c
				collisions += c
			}
		}
	}
	return draws, collisions
}

// lostAttempt is an attempt at a batch that failed on a fault after settling its rows: it may
// have committed (a lost COMMIT reply, or a frozen session that went on), in which case all of
// its rows did. rows and arks are the rows it minted and their ARKs, draws and collisions its
// counts.
type lostAttempt struct {
	rows              []int32
	arks              []string
	draws, collisions int64
}

// same reports whether a and o are one attempt: every attempt draws new names.
func (a *lostAttempt) same(o *lostAttempt) bool {
	return a.rows[0] == o.rows[0] && a.arks[0] == o.arks[0]
}

// lostAttempt returns the last attempt at b as a lostAttempt, or nil when it minted nothing.
func (w *mintWorker) lostAttempt(b *pipeline.Batch) *lostAttempt {
	la := &lostAttempt{draws: b.Draws, collisions: b.Collisions}
	for _, i := range w.mint {
		if r := &b.Rows[i]; r.Outcome == pipeline.OutcomeMinted && r.ARK != "" {
			la.rows = append(la.rows, i)
			la.arks = append(la.arks, r.ARK)
		}
	}
	if len(la.rows) == 0 {
		return nil
	}
	return la
}

// claimLost credits the batch with each lost attempt that committed after all: its rows replay
// the ARKs that attempt drew for them, so they were minted by this run, and its draws and
// collisions are this run's.
func (w *mintWorker) claimLost(b *pipeline.Batch, lost []*lostAttempt) {
	for _, la := range lost {
		if r := &b.Rows[la.rows[0]]; r.Outcome != pipeline.OutcomeReplayed || r.ARK != la.arks[0] {
			continue
		}
		n := int64(0)
		for k, i := range la.rows {
			if r := &b.Rows[i]; r.Outcome == pipeline.OutcomeReplayed && r.ARK == la.arks[k] {
				r.Outcome = pipeline.OutcomeMinted
				n++
			}
		}
		b.Draws += la.draws
		b.Collisions += la.collisions
		w.s.minted.Add(n)
		if w.s.t.QuotaPerDay > 0 {
			w.s.remaining.Add(-n)
		}
	}
}

// Write implements pipeline.SinkWorker: writeBatch, retried after faults (see the file
// comment). An error that is no fault, or faults for longer than RetryPolicy.For (a
// *FaultError), stops the run; what was committed stays.
func (w *mintWorker) Write(ctx context.Context, b *pipeline.Batch) error {
	p := w.s.cfg.Retry.withDefaults()
	w.mint = w.mint[:0]     // rows of the last attempt at this batch only (lostAttempt)
	var first time.Time     // the batch's first fault
	var lost []*lostAttempt // attempts that failed after settling, the last one latest
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, p.BatchTimeout)
		var probe *lostAttempt
		if len(lost) > 0 {
			probe = lost[len(lost)-1]
		}
		committed, wrote, err := w.try(actx, b, probe)
		cancel()
		if err == nil {
			if committed {
				lost = lost[:len(lost)-1] // adopted as it was
			}
			w.claimLost(b, lost)
			if attempt > 1 && p.Notify != nil {
				p.Notify(RetryNotice{Worker: w.id, Attempt: attempt, Resumed: true, Committed: committed})
			}
			w.resumed = false
			w.s.faults.count(b)
			return nil
		}
		if ctx.Err() != nil {
			return err // the run was stopped
		}
		cause := w.faultCause(err)
		if cause == "" {
			return err
		}
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within the batch deadline of %s: %w", p.BatchTimeout, err)
		}
		if la := w.lostAttempt(b); wrote && la != nil && (len(lost) == 0 || !lost[len(lost)-1].same(la)) {
			lost = append(lost, la) // a new attempt that settled (one that failed early left the last one's rows)
		}
		w.resumed = true
		if first.IsZero() {
			first = time.Now()
		}
		left := p.For - time.Since(first)
		if p.For < 0 || left <= 0 {
			return &FaultError{Cause: cause, Err: err, Attempts: attempt, For: p.For}
		}
		wait := min(backoff(attempt), left)
		w.s.faults.retried.Add(1)
		if p.Notify != nil {
			p.Notify(RetryNotice{Worker: w.id, Attempt: attempt, Cause: cause, Err: err, Wait: wait, Left: left - wait})
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (while waiting to retry after: %s: %w)", ctx.Err(), cause, err)
		case <-t.C:
		}
	}
}

// try is one attempt at batch b: reconnect if needed; if the last attempt may have committed
// (probe), look the receipt of one of its rows up and take that attempt as it was if it did
// (committed: b still holds its outcomes); else writeBatch (wrote).
func (w *mintWorker) try(ctx context.Context, b *pipeline.Batch, probe *lostAttempt) (committed, wrote bool, err error) {
	if err := w.connect(ctx); err != nil {
		return false, false, err
	}
	if probe != nil {
		var key string
		err := w.conn.QueryRow(ctx, `select ark from mint_receipt where client_pk = $1 and request_id = $2`,
			w.clientPK, b.Rows[probe.rows[0]].Record.RequestID).Scan(&key)
		switch {
		case err == nil && "ark:"+key == probe.arks[0]:
			w.adopt(b)
			return true, false, nil
		case err != nil && !errors.Is(err, pgx.ErrNoRows):
			return false, false, fmt.Errorf("look up the receipt of the batch in flight: %w", err)
		}
	}
	err = w.writeBatch(ctx, b)
	if lose := w.s.cfg.Hooks.LoseCommitReply; err == nil && len(w.mint) > 0 && lose != nil && lose(w.id) {
		// undo writeBatch's success bookkeeping as its failure path does, and drop the connection
		w.s.minted.Add(-int64(len(w.mint)))
		if w.s.t.QuotaPerDay > 0 {
			w.s.remaining.Add(int64(len(w.mint)))
		}
		_ = w.conn.Conn().Close(ctx)
		return false, true, fmt.Errorf("mint batch: commit: %w", io.ErrUnexpectedEOF)
	}
	return false, true, err
}

// adopt takes the attempt whose commit reply was lost as committed: its rows, counters and
// names are as that attempt settled them (writeBatch's success path, and the quota it gave back
// on failure taken again).
func (w *mintWorker) adopt(b *pipeline.Batch) {
	for _, i := range w.mint {
		w.s.runNames.add(w.hash[i])
	}
	w.s.minted.Add(int64(len(w.mint)))
	if w.s.t.QuotaPerDay > 0 {
		w.s.remaining.Add(-int64(len(w.mint)))
	}
	w.reserved = 0
}

// connect replaces a lost connection and sets the session's lock_timeout and
// statement_timeout (see RetryPolicy.BatchTimeout), and on Citus its
// citus.multi_shard_modify_mode to sequential (one connection per node, kept across the
// batches: see the citus layout's sessions in batch.go).
func (w *mintWorker) connect(ctx context.Context) error {
	if w.conn != nil && w.conn.Conn().IsClosed() {
		w.conn.Release() // the pool drops a closed connection
		w.conn, w.session = nil, false
	}
	if w.conn == nil {
		conn, err := w.s.pool(w.id).Acquire(ctx)
		if err != nil {
			return fmt.Errorf("reconnect: %w", err)
		}
		w.conn, w.session = conn, false
	}
	if !w.session {
		d := w.s.cfg.Retry.withDefaults().BatchTimeout.Milliseconds()
		lock, stmt := strconv.FormatInt(max(d/2, 1), 10), strconv.FormatInt(max(d*3/4, 1), 10)
		q := `select set_config('lock_timeout', $1, false), set_config('statement_timeout', $2, false)`
		if w.s.citus {
			q += `, ` + CitusMintSessionSQL
		}
		if _, err := w.conn.Exec(ctx, q, lock, stmt); err != nil {
			return fmt.Errorf("set the session's timeouts: %w", err)
		}
		w.session = true
	}
	return nil
}

// CitusMintSessionSQL is the select-list item that puts a mint worker's session on Citus in
// sequential multi-shard mode (citus.multi_shard_modify_mode): a transaction's statements go
// over one connection per node, which Citus keeps from one batch to the next, instead of a new
// worker backend per shard placement a statement touches. Anything that is to be measured
// against a mint on Citus (the bench's floor) runs its sessions with it too:
// `select ` + CitusMintSessionSQL.
const CitusMintSessionSQL = `set_config('citus.multi_shard_modify_mode', 'sequential', false)`

// SQLSTATEs of faults a batch is retried after (besides class 08, connection exception).
const (
	codeAdminShutdown  = "57P01" // the server is shutting down (smart or fast), or the session was terminated
	codeCrashShutdown  = "57P02" // another server process crashed; sessions are reset
	codeCannotConnect  = "57P03" // the server is starting up or in recovery
	codeTooManyConns   = "53300" // too_many_connections
	codeLockTimeout    = "55P03" // lock_not_available: lock_timeout passed
	codeQueryCanceled  = "57014" // query_canceled: statement_timeout passed
	classConnException = "08"
)

// faultCause says what fault err is, or "" when it is none (an error of the data, of the
// schema, of reach, ...: retrying would not help). By SQLSTATE and error type only.
func (w *mintWorker) faultCause(err error) string {
	if cause := faultOf(err); cause != "" {
		return cause
	}
	if w.conn != nil && w.conn.Conn().IsClosed() {
		return "connection lost"
	}
	return ""
}

// FaultCause says, in words, what fault of the database or the connection err is ("connection
// lost", "the server is shutting down or ended the session", ...), or "" when err is none (an
// error of the data, of the schema, of reach: trying again would not help). It classifies as a
// mint batch's retries do: by SQLSTATE and by the error's type, never by message text. For
// writers without retries of their own (import), to say that the same command completes the job.
func FaultCause(err error) string { return faultOf(err) }

// faultOf is faultCause without a worker's connection: what fault err is by its SQLSTATE and
// type, or "" when it is none.
func faultOf(err error) string {
	var unexplained *unexplainedWorkerError
	if errors.As(err, &unexplained) {
		return "a Citus worker ended the batch, and no row of it is refused alone (the worker's session ended)"
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch code := pgErr.Code; {
		case strings.HasPrefix(code, classConnException):
			return "connection lost"
		case code == codeAdminShutdown:
			return "the server is shutting down or ended the session"
		case code == codeCrashShutdown:
			return "the server is resetting after a crash"
		case code == codeCannotConnect:
			return "the server is starting up"
		case code == codeTooManyConns:
			return "the server has no free connection"
		case code == codeLockTimeout:
			return "a lock wait passed lock_timeout (the session holding it may be frozen)"
		case code == codeQueryCanceled:
			return "a statement passed statement_timeout"
		case code == codeDeadlock || code == codeSerialization:
			return "a concurrent transaction conflicted"
		case ledger.IsWorkerCopyLost(err):
			return "the connection to a Citus worker was lost during a COPY"
		}
		return ""
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err):
		return "the server did not answer"
	case errors.As(err, &connectErr):
		return "cannot connect to the server"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNREFUSED),
		errors.As(err, &netErr):
		return "connection lost"
	case pgconn.SafeToRetry(err):
		return "connection error"
	}
	return ""
}

// withFaults runs op, again after each fault (faultOf) with backoff, until it succeeds, fails
// with an error that is no fault, or p.For (with its default) has passed since the first fault;
// a negative p.For runs op once. It returns op's last error. The run's closing audit event goes
// through it, so a server restarting as a run ends does not lose the run's record.
func withFaults(ctx context.Context, p RetryPolicy, op func(context.Context) error) error {
	p = p.withDefaults()
	var first time.Time
	for n := 1; ; n++ {
		actx, cancel := context.WithTimeout(ctx, p.BatchTimeout)
		err := op(actx)
		cancel()
		if err == nil || p.For < 0 || faultOf(err) == "" {
			return err
		}
		if first.IsZero() {
			first = time.Now()
		}
		wait := backoff(n)
		if time.Since(first)+wait > p.For {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// backoff is the wait before attempt n+1: 1 s doubling up to 30 s, each drawn between half and
// all of it so that workers and runs do not retry in step.
func backoff(n int) time.Duration {
	d := min(time.Second<<min(n-1, 5), maxBackoff)
	return d/2 + rand.N(d/2+1)
}
