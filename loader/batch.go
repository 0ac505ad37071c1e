package loader

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/pipeline"
	"github.com/arkhe-ledger/arkhe/textin"
)

// This file is the mint sink's worker: per batch the idempotency receipts, blade drawing with
// collision redraw, and one transaction that COPYs the ARKs with their receipts: a receipt is
// the ark row's request_id and payload_digest columns, so one COPY of ark rows writes both.
//
// Collisions and duplicates: a batch is never thrown away for one
// collision. Names are drawn in Go; a name another row of the run holds — in the same batch or
// in another worker's uncommitted one — is caught by an in-process set (inflight) and redrawn.
// A name this run committed earlier may be drawn again (the birthday bound of the run's own
// draws): the run keeps the hashes of its committed names in a fixed-size bit set
// (runNames) and looks only the names it may hold up in the ledger. When the ledger held enough
// ARKs before the run that a collision with them is likely in a batch (the expected number,
// batch × ARKs / 29^blade length, is at least NameCheckThreshold), or once one was seen, the
// names are checked against the ledger in one of two ways. On one node, while a chunk of
// ChunkRows rows is expected to hold few collisions (ChunkCollisionLimit), the batch goes to COPY
// in chunks, each under a savepoint: a chunk refused for a unique violation is rolled back alone,
// its names are looked up, those that exist are counted and redrawn, and the chunk goes again
// (every COPYed row has its key checked by the primary key anyway, so a chunk that holds no
// existing name costs no lookup). Denser, and on Citus, every drawn
// name is looked up before COPY (`ark = any($1)`, sorted), hits are counted and redrawn, and
// only the redrawn names are looked up again. In a sparse ledger neither would pay for itself,
// so the batch goes to COPY directly; if COPY then fails with a unique
// violation or a deadlock (a rare collision, a concurrent run, a receipt that exists), the batch
// is rolled back, the conflicting names and receipts are found by querying the ledger (never
// by reading the error, whose text and constraint name differ between engines; one 23505 on the ark COPY may be ark_pkey or
// ark_receipt, so both are looked up), and the batch is retried. Receipts work the same
// way: a sample of each batch's request IDs is looked up first; if any exists (a re-run) the
// whole batch's receipts are read and its rows replay.
//
// The citus layout: receipts are rows of the receipt table (distributed by request ID: a key
// unique across the cluster must contain the distribution column), so a batch COPYs its ark
// rows without a receipt and then its receipt rows, in the same distributed transaction, and
// replays read the receipt table. Citus reports every error a worker raises during COPY as
// XX000 (internal_error) with the worker's message: a unique violation (a drawn name or a
// request ID that exists), the reach trigger, a row's data. The sink tells them apart the same
// way as above, by querying: after an XX000 it looks the batch's receipts and names up; if
// either exists the batch is retried as after a conflict, else it reads the client's reach
// again (changed: the run stops with a *ReachError), else a row's data was refused and the row
// is found by re-sending halves (the line number of a COPY error on Citus is where the
// coordinator noticed it, not the row).
//
// The citus layout's sessions: a mint worker's session runs Citus's multi-shard statements in
// sequential mode (citus.multi_shard_modify_mode), over one connection per node that Citus keeps
// from one transaction to the next. In the default parallel mode every COPY and every multi-shard
// lookup opens a connection per shard placement it touches (up to
// citus.max_adaptive_executor_pool_size per node, and the receipt COPY another set, since a
// connection that wrote one shard in the transaction is not handed out for another), and Citus
// keeps one per node when the transaction ends (citus.max_cached_conns_per_worker): each batch
// started tens of new backends on every worker, and a new backend's start (its caches, Citus's
// metadata, the trigger functions compiled again) cost the worker more processor time than the
// batch's rows. The rows and what each statement checks are the same in either mode.
//
// Counters: each batch adds its draws and collisions to the shoulder's shoulder_tally row, and
// its new mints to mint_quota, as the last statements of its own transaction — crash-safe and
// exact (a rolled-back batch counts nothing), and the row locks are held only while committing.
// A mint batch writes no registration table (shoulder, manager, client).

// receiptRow is a receipt read from the ledger: the ARK it gave and its payload digest, of
// digestLen octets (ledger.ReceiptDigestOctets on a receipt written by this arkhe, 16 on one written
// before, or on Citus).
type receiptRow struct {
	ark       string // printed form
	digest    [16]byte
	digestLen uint8
}

// matches reports whether the receipt was written for a payload with digest d: its stored
// octets equal d's first octets. A receipt without a digest matches nothing.
func (r *receiptRow) matches(d *[16]byte) bool {
	n := int(r.digestLen)
	return n > 0 && bytes.Equal(r.digest[:n], d[:n])
}

// mintWorker settles and writes the batches of one pipeline worker on its own connection.
type mintWorker struct {
	s          *MintSink
	id         int
	conn       *pgxpool.Conn
	names      *nameDrawer
	clientPK   int64
	shoulderID int64
	naan       string
	dense      bool  // this worker saw a ledger collision
	replays    bool  // this worker saw a receipt conflict after an optimistic COPY
	resumed    bool  // the batch is sent again after a fault: read all its receipts first
	session    bool  // the connection's session settings are made: timeouts, on Citus sequential mode (retry.go)
	reserved   int64 // quota reserved for the current attempt

	// per-batch scratch, reused
	first     map[string]int32 // request ID → its first row in the batch
	firstOf   []int32          // per row: the first row of its request ID in the batch
	hash      []uint64         // per row: hash of the name drawn (inflight, runNames)
	receipt   map[string]receiptRow
	hits      map[string]struct{}
	name      []string // per row: printed ARK drawn, "" for none
	draws     []uint8
	collided  []uint8 // per row: draws that named an existing or held name (drawCounts)
	verified  []bool
	serverRej []*textin.RowError
	mint      []int32  // rows to mint, in order
	keys      []string // ledger keys of the rows being copied
	anames    []string // assigned names of the rows being copied
	copyIdx   []int32  // rows being copied
	strs      []string
	claimed   []uint64 // hashes of the names this batch claimed in s.inflight
	conflicts []int32  // rows rejected for a receipt with a different payload
	follow    []int32  // later occurrences of a request ID that follow their first row
	chunk     []int32  // rows of the chunk being copied (CheckChunks)
	copyBuf   []byte   // binary COPY chunk, reused
}

// Close implements pipeline.SinkWorker. The connection goes back to the ledger's pool with
// the server's lock_timeout and statement_timeout again (connect set the batches' own for the
// session), on Citus its multi-shard modify mode too; one whose reset fails is closed instead,
// so no later query of the ledger's pool inherits a batch's deadline or mode.
func (w *mintWorker) Close() error {
	if w.conn != nil {
		if w.session {
			ctx, cancel := context.WithTimeout(context.Background(), resetTimeout)
			q := `reset lock_timeout; reset statement_timeout`
			if w.s.citus {
				q += `; reset citus.multi_shard_modify_mode`
			}
			if _, err := w.conn.Exec(ctx, q); err != nil {
				_ = w.conn.Conn().Close(ctx) // the pool drops a closed connection
			}
			cancel()
			w.session = false
		}
		w.conn.Release()
		w.conn = nil
	}
	return nil
}

// resetTimeout bounds restoring a worker's session settings when it closes.
const resetTimeout = 5 * time.Second

func (w *mintWorker) reset(n int) {
	clear(w.first)
	clear(w.receipt)
	w.firstOf = resize(w.firstOf, n)
	w.hash = resize(w.hash, n)
	w.name = resize(w.name, n)
	w.draws = resize(w.draws, n)
	w.collided = resize(w.collided, n)
	w.verified = resize(w.verified, n)
	w.serverRej = resize(w.serverRej, n)
}

// resize returns s with length n and every element zero.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// writeBatch settles every row of b and commits the new ARKs and their receipts in one
// transaction, retrying the batch after conflicts; Write (retry.go) retries it after faults.
// Each attempt loads the receipts when they are to be checked (loadAttemptReceipts), settles
// the rows, commits (commitAttempt), and on a refusal decides whether to try again (refused).
func (w *mintWorker) writeBatch(ctx context.Context, b *pipeline.Batch) error {
	rows := b.Rows
	w.reset(len(rows))
	defer func() {
		w.s.inflight.release(w.claimed)
		w.claimed = w.claimed[:0]
	}()
	for i := range rows {
		rid := rows[i].Record.RequestID
		if f, ok := w.first[rid]; ok {
			w.firstOf[i] = f
		} else {
			w.first[rid], w.firstOf[i] = int32(i), int32(i)
		}
	}
	var st batchState
	var err error
	if st.checkReceipts, err = w.receiptCheck(ctx, rows); err != nil {
		return err
	}
	var chunked bool
	st.checkNames, chunked = w.nameCheck(len(rows))
	for {
		if st.stalled++; st.stalled > maxBatchAttempts {
			return fmt.Errorf("mint batch of %d rows: still conflicting after %d attempts without a concurrent run committing", len(rows), maxBatchAttempts)
		}
		if st.checkReceipts && !st.loaded {
			if err := w.loadAttemptReceipts(ctx, rows, &st); err != nil {
				return err
			}
		}
		t0 := time.Now()
		ledgerHits, err := w.settle(ctx, b, st.checkNames)
		if err != nil {
			return err
		}
		w.s.since(phaseSettle, t0)
		if ledgerHits > 0 && w.s.cfg.NameCheck == CheckAuto {
			w.dense = true
			w.s.dense.Store(true)
		}
		err = w.commitAttempt(ctx, b, chunked && !st.checkNames)
		if err == nil {
			return nil
		}
		if err := w.refused(ctx, b, err, &st); err != nil {
			return err
		}
	}
}

// batchState is what writeBatch knows of its batch from one attempt to the next.
type batchState struct {
	checkReceipts bool // look the batch's receipts up before settling
	loaded        bool // w.receipt holds them for this attempt
	checkNames    bool // look the drawn names up before COPY
	conflicted    bool // an attempt conflicted with the ledger
	stalled       int  // attempts since receipts last turned up
	known         int  // receipts known
}

// receiptCheck says whether the batch's receipts are looked up before its first attempt:
// always with a daily quota or a shoulder that stops new mints (replays must not count), once
// replays were seen, after a resumed run, or by policy; under CheckAuto when a sample of the
// batch's request IDs holds one.
func (w *mintWorker) receiptCheck(ctx context.Context, rows []pipeline.Row) (bool, error) {
	switch {
	case w.s.t.QuotaPerDay > 0 || w.s.t.NoNewMints != nil || w.replays || w.resumed || w.s.cfg.ReceiptCheck == CheckAlways:
		return true, nil
	case w.s.cfg.ReceiptCheck == CheckAuto:
		t0 := time.Now()
		check, err := w.sampleReceipts(ctx, rows)
		if err != nil {
			return false, err
		}
		w.s.since(phaseReceipts, t0)
		return check, nil
	}
	return false, nil
}

// loadAttemptReceipts reads the receipts of the batch's request IDs for this attempt; receipts
// that turn up after a conflict make every later batch look its receipts up, and more receipts
// than before (a concurrent run committed some) count as progress.
func (w *mintWorker) loadAttemptReceipts(ctx context.Context, rows []pipeline.Row, st *batchState) error {
	t0 := time.Now()
	if err := w.loadReceipts(ctx, rows); err != nil {
		return err
	}
	w.s.since(phaseReceipts, t0)
	w.s.loaded.Add(1)
	st.loaded = true
	if st.conflicted && len(w.receipt) > 0 {
		w.replays = true // receipts turn up past the sample: look every batch up from now on
	}
	if len(w.receipt) > st.known {
		st.known, st.stalled = len(w.receipt), 1
	}
	return nil
}

// commitAttempt commits the settled batch; on success it adds the minted names to the run's
// set and counts them, on failure it gives back the quota it reserved.
func (w *mintWorker) commitAttempt(ctx context.Context, b *pipeline.Batch, chunked bool) error {
	w.orderByRequestID(b.Rows)
	b.Draws, b.Collisions = w.drawCounts(b.Rows)
	if err := w.commit(ctx, b, chunked); err != nil {
		w.release()
		return err
	}
	for _, i := range w.mint { // before the names leave inflight (deferred release)
		w.s.runNames.add(w.hash[i])
	}
	w.s.minted.Add(int64(len(w.mint)))
	w.reserved = 0 // used
	return nil
}

// refused decides after a failed attempt: nil to try the batch again (a conflict, the quota
// read again, a row the server refused now set aside), else the error that ends the batch.
func (w *mintWorker) refused(ctx context.Context, b *pipeline.Batch, err error, st *batchState) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	w.s.retries.Add(1)
	var qe *quotaExceeded
	if errors.As(err, &qe) {
		w.s.remaining.Store(max(0, w.s.t.QuotaPerDay-(qe.minted-int64(len(w.mint)))))
		return nil
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return fmt.Errorf("mint batch: %w", err)
	}
	code, diagnosed, derr := w.refusalCode(ctx, b, pgErr)
	if derr != nil {
		return derr
	}
	switch {
	case code == ledger.CodeUniqueViolation || code == codeDeadlock || code == codeSerialization:
		// Something exists that the batch did not know of: a receipt (a re-run, a concurrent
		// run, a duplicate across batches: ark_receipt or the receipt table's key), a name (a
		// collision: ark_pkey). One ark COPY raises either; find both by querying, never from
		// the error.
		st.checkReceipts, st.loaded, st.checkNames, st.conflicted = true, false, true, true
		if diagnosed { // diagnose read the batch's receipts
			st.loaded = true
			if len(w.receipt) > 0 {
				w.replays = true // receipts turn up past the sample: look every batch up from now on
			}
		}
		w.s.conflicts.Add(1)
		if code == codeDeadlock {
			w.s.faults.deadlocks.Add(1)
		}
		clear(w.verified)
	case code == ledger.CodeKeyRequired:
		return &ledger.KeyError{ClientID: w.s.t.ClientID, Reason: "unproved", Err: err}
	case code == ledger.CodeReachRefused:
		return &ReachError{ClientID: w.s.t.ClientID, Shoulder: w.s.t.NAAN + w.s.t.Shoulder,
			Rule: "the ledger refused the batch (its reach changed during the run)", Err: err}
	case rowLevel(code):
		w.s.refusals.Add(1)
		i, rowErr, err := w.locate(ctx, b, pgErr)
		if err != nil {
			return err
		}
		w.serverRej[i] = &textin.RowError{Loc: b.Rows[i].Record.Source, Field: columnField(rowErr.ColumnName),
			Err: &ServerRefusalError{Code: rowErr.Code, Message: rowErr.Message, Column: rowErr.ColumnName}}
	default:
		return fmt.Errorf("mint batch: %w", err)
	}
	return nil
}

// refusalCode returns the SQLSTATE a refused attempt is handled by: the server's, except for
// a Citus worker's error during COPY (XX000, its SQLSTATE dropped), which is found out by
// querying (diagnose; diagnosed says the batch's receipts were read): a conflict is a unique
// violation, a changed reach the reach refusal, else a row's data (a check violation, the row
// located by re-sending halves).
func (w *mintWorker) refusalCode(ctx context.Context, b *pipeline.Batch, pgErr *pgconn.PgError) (code string, diagnosed bool, err error) {
	if !w.s.citus || pgErr.Code != codeInternal {
		return pgErr.Code, false, nil
	}
	conflict, err := w.diagnose(ctx, b.Rows)
	switch {
	case err != nil:
		return "", false, err
	case conflict:
		return ledger.CodeUniqueViolation, true, nil
	case w.reachChanged(ctx):
		return ledger.CodeReachRefused, false, nil
	}
	return ledger.CodeCheckViolation, false, nil
}

// diagnose tells, after Citus reported a worker's COPY error as XX000, whether the batch
// conflicted with the ledger: it reads the receipts of the batch's request IDs (into w.receipt)
// and looks up the names of the rows it tried to mint; a receipt of such a row or an existing
// name is a conflict. (A conflicting row that was uncommitted made the COPY wait for its
// transaction, so it is committed and visible now.)
func (w *mintWorker) diagnose(ctx context.Context, rows []pipeline.Row) (bool, error) {
	t0 := time.Now()
	if err := w.loadReceipts(ctx, rows); err != nil {
		return false, err
	}
	w.s.since(phaseReceipts, t0)
	for _, i := range w.mint {
		if _, ok := w.receipt[rows[i].Record.RequestID]; ok {
			return true, nil
		}
	}
	err := w.lookUpNames(ctx, w.mint)
	return len(w.hits) > 0, err
}

// lookUpNames looks the drawn names of rows idx up in the ledger and leaves those that exist in
// w.hits (existing), counting the time and the names in the sink's statistics.
func (w *mintWorker) lookUpNames(ctx context.Context, idx []int32) error {
	w.keys = w.keys[:0]
	for _, i := range idx {
		w.keys = append(w.keys, w.name[i][4:])
	}
	t0 := time.Now()
	err := w.existing(ctx, w.keys)
	w.s.since(phaseNames, t0)
	w.s.looked.Add(int64(len(w.keys)))
	return err
}

// rowLevel reports whether SQLSTATE code is about one row's data: class 22 (data exception:
// 22021 bad encoding, 22P05 untranslatable, 22001 too long), 54000 (program limit: an index
// entry too large), 23514 (check violation).
func rowLevel(code string) bool {
	return strings.HasPrefix(code, "22") || code == "54000" || code == ledger.CodeCheckViolation
}

// columnField maps an ark column to its manifest field name.
func columnField(col string) string {
	switch col {
	case "url":
		return "url"
	case "erc_who":
		return "who"
	case "erc_what":
		return "what"
	case "erc_when":
		return "when"
	case "commitment":
		return "commitment"
	case "request_id":
		return "request_id"
	}
	return ""
}

// nameCheck decides how a batch of n rows meets the ARKs that were in the ledger before the
// run: lookup, every drawn name is looked up before COPY; chunked, the batch is sent in
// savepointed chunks and only a refused chunk's names are looked up; neither, the batch goes to
// COPY directly. (Names minted earlier in this run are caught by s.runNames in every case.)
func (w *mintWorker) nameCheck(n int) (lookup, chunked bool) {
	switch w.s.cfg.NameCheck {
	case CheckAlways:
		return true, false
	case CheckNever:
		return false, false
	case CheckChunks:
		return false, true
	}
	density := float64(w.s.arkRows0) / w.s.space // chance that one draw names an existing ARK
	if !w.dense && !w.s.dense.Load() && float64(n)*density < NameCheckThreshold {
		return false, false
	}
	if !w.s.citus && ChunkRows*density <= ChunkCollisionLimit {
		return false, true
	}
	return true, false
}

// sampleReceipts reports whether any of a sample of the batch's request IDs has a receipt.
func (w *mintWorker) sampleReceipts(ctx context.Context, rows []pipeline.Row) (bool, error) {
	w.strs = w.strs[:0]
	step := max(1, len(rows)/receiptSample)
	for i := 0; i < len(rows); i += step {
		w.strs = append(w.strs, rows[i].Record.RequestID)
	}
	w.strs = append(w.strs, rows[len(rows)-1].Record.RequestID)
	var hit bool
	err := w.conn.QueryRow(ctx, w.s.q.sample, w.clientPK, w.strs).Scan(&hit)
	if err != nil {
		return false, fmt.Errorf("look up receipts: %w", err)
	}
	return hit, nil
}

// loadReceipts reads the receipts of every distinct request ID of the batch into w.receipt.
func (w *mintWorker) loadReceipts(ctx context.Context, rows []pipeline.Row) error {
	clear(w.receipt)
	w.strs = w.strs[:0]
	for i := range rows {
		if rid := rows[i].Record.RequestID; w.firstOf[i] == int32(i) {
			w.strs = append(w.strs, rid)
		}
	}
	slices.Sort(w.strs) // see existing
	res, err := w.conn.Query(ctx, w.s.q.load, w.clientPK, w.strs)
	if err != nil {
		return fmt.Errorf("look up receipts: %w", err)
	}
	defer res.Close()
	var rid, key string
	var digest []byte
	for res.Next() {
		if err := res.Scan(&rid, &key, &digest); err != nil {
			return fmt.Errorf("look up receipts: %w", err)
		}
		var r receiptRow
		r.ark = "ark:" + key
		r.digestLen = uint8(copy(r.digest[:], digest))
		w.receipt[rid] = r
	}
	if err := res.Err(); err != nil {
		return fmt.Errorf("look up receipts: %w", err)
	}
	return nil
}

// existing looks the ledger keys up and leaves those that exist in w.hits.
//
// The keys go sorted: PostgreSQL sorts an = ANY array before probing the index and its sort
// returns at once on sorted input. The array is
// COLLATE "C", the key's collation, so the primary key's index serves it whatever the database's
// default collation.
func (w *mintWorker) existing(ctx context.Context, keys []string) error {
	clear(w.hits)
	w.strs = append(w.strs[:0], keys...)
	slices.Sort(w.strs)
	res, err := w.conn.Query(ctx, `select ark from ark where ark = any($1::text[] collate "C")`, w.strs)
	if err != nil {
		return fmt.Errorf("look up drawn names: %w", err)
	}
	defer res.Close()
	var k string
	for res.Next() {
		if err := res.Scan(&k); err != nil {
			return fmt.Errorf("look up drawn names: %w", err)
		}
		w.hits[k] = struct{}{}
	}
	if err := res.Err(); err != nil {
		return fmt.Errorf("look up drawn names: %w", err)
	}
	return nil
}

func rejectRow(r *pipeline.Row, field string, err error) {
	r.Outcome = pipeline.OutcomeRejected
	r.ARK = ""
	r.Reject = &textin.RowError{Loc: r.Record.Source, Field: field, Err: err}
}

// settle decides every row's outcome for one attempt: replays from receipts, the rows to mint
// (first occurrences without a receipt) with names drawn and checked against the ledger (all of
// them when checkNames, else those runNames may hold), quota, and the later occurrences of
// request IDs. It returns how many drawn names hit an existing ARK in a check
// of all names.
func (w *mintWorker) settle(ctx context.Context, b *pipeline.Batch, checkNames bool) (int, error) {
	rows := b.Rows
	w.mint = w.mint[:0]
	w.conflicts = w.conflicts[:0]
	w.follow = w.follow[:0]
	for i := range rows {
		r := &rows[i]
		r.Outcome, r.ARK, r.Reject = pipeline.OutcomePending, "", nil
		if rej := w.serverRej[i]; rej != nil {
			r.Outcome, r.Reject = pipeline.OutcomeRejected, rej
			continue
		}
		rid := r.Record.RequestID
		if rc, ok := w.receipt[rid]; ok {
			if rc.matches(&r.Digest) {
				r.Outcome, r.ARK = pipeline.OutcomeReplayed, rc.ark
			} else {
				rejectRow(r, "request_id", &ReceiptConflictError{RequestID: rid, ARK: rc.ark})
				w.conflicts = append(w.conflicts, int32(i))
			}
			continue
		}
		if int(w.firstOf[i]) == i {
			w.mint = append(w.mint, int32(i))
		} else {
			w.follow = append(w.follow, int32(i))
		}
	}
	if err := w.nameConflicts(ctx, rows); err != nil {
		return 0, err
	}
	if no := w.s.t.NoNewMints; no != nil {
		for _, i := range w.mint {
			rejectRow(&rows[i], "", no)
		}
		w.mint = w.mint[:0]
	}
	// quota: the first rows needing a new mint get it, the rest are rejected;
	// reserved before drawing so no name is drawn for a row that cannot mint
	if q := w.s.t.QuotaPerDay; q > 0 {
		w.reserved = w.s.reserve(int64(len(w.mint)))
		for _, i := range w.mint[w.reserved:] {
			rejectRow(&rows[i], "", &QuotaError{Manager: w.s.t.Manager, Quota: q})
			w.name[i] = ""
		}
		w.mint = w.mint[:w.reserved]
	}
	// names: keep those drawn in an earlier attempt (still claimed), draw the missing ones
	for _, i := range w.mint {
		if w.name[i] == "" {
			if err := w.draw(b, i); err != nil {
				return 0, err
			}
		}
	}
	// Look names up in the ledger: all of them with checkNames, else those that may have been
	// minted earlier in this run (s.runNames); CheckNever looks none up before COPY.
	ledgerHits := 0
	if checkNames || w.s.cfg.NameCheck != CheckNever {
		for {
			w.keys = w.keys[:0]
			w.copyIdx = w.copyIdx[:0]
			for _, i := range w.mint {
				if w.name[i] != "" && !w.verified[i] && (checkNames || w.s.runNames.maybe(w.hash[i])) {
					w.keys = append(w.keys, w.name[i][4:])
					w.copyIdx = append(w.copyIdx, i)
				}
			}
			if len(w.keys) == 0 {
				break
			}
			t0 := time.Now()
			if err := w.existing(ctx, w.keys); err != nil {
				return 0, err
			}
			w.s.since(phaseNames, t0)
			w.s.looked.Add(int64(len(w.keys)))
			for k, i := range w.copyIdx {
				if _, hit := w.hits[w.keys[k]]; !hit {
					w.verified[i] = true
					continue
				}
				if checkNames {
					ledgerHits++
				}
				b.Collisions++
				w.collided[i]++
				if err := w.draw(b, i); err != nil {
					return 0, err
				}
			}
		}
	}
	w.settleMinted(rows)
	return ledgerHits, nil
}

// settleMinted gives the rows to mint (w.mint) their outcome and ARK, and the later occurrences
// of their request IDs (w.follow) theirs: it drops the rows that ran out of draws (their share of
// the quota goes back). Called when settling, and again after a chunk's names were redrawn.
func (w *mintWorker) settleMinted(rows []pipeline.Row) {
	kept := w.mint[:0]
	for _, i := range w.mint {
		if rows[i].Outcome != pipeline.OutcomeRejected {
			kept = append(kept, i)
		}
	}
	w.mint = kept
	if extra := w.reserved - int64(len(w.mint)); w.s.t.QuotaPerDay > 0 && extra > 0 {
		// rows that ran out of draws give their share of the quota back
		w.s.remaining.Add(extra)
		w.reserved = int64(len(w.mint))
	}
	for _, i := range w.mint {
		rows[i].Outcome, rows[i].ARK = pipeline.OutcomeMinted, w.name[i]
	}
	// later occurrences follow their first
	for _, i := range w.follow {
		r := &rows[i]
		f := &rows[w.firstOf[i]]
		switch {
		case f.Outcome == pipeline.OutcomeRejected:
			rejectRow(r, "request_id", &FirstRejectedError{RequestID: r.Record.RequestID, First: f.Record.Source})
		case f.Digest == r.Digest:
			r.Outcome, r.ARK = pipeline.OutcomeReplayed, f.ARK
		default:
			rejectRow(r, "request_id", &ReceiptConflictError{RequestID: r.Record.RequestID, ARK: f.ARK, First: f.Record.Source})
		}
	}
}

// nameConflicts fills in ReceiptConflictError.Fields for the rows w.conflicts: the manifest
// fields whose values differ from the existing ARK's current url, ERC who/what/when and
// commitment (the receipt keeps only a digest of the payload). A missing
// field equals a NULL column.
func (w *mintWorker) nameConflicts(ctx context.Context, rows []pipeline.Row) error {
	if len(w.conflicts) == 0 {
		return nil
	}
	keys := make([]string, 0, len(w.conflicts))
	for _, i := range w.conflicts {
		keys = append(keys, rows[i].Reject.Err.(*ReceiptConflictError).ARK[4:])
	}
	res, err := w.conn.Query(ctx, `select ark, url, erc_who, erc_what, erc_when, commitment from ark
		where ark = any($1::text[])`, keys)
	if err != nil {
		return fmt.Errorf("look up conflicting receipts: %w", err)
	}
	defer res.Close()
	current := make(map[string][5]*string, len(keys))
	for res.Next() {
		var key string
		var v [5]*string
		if err := res.Scan(&key, &v[0], &v[1], &v[2], &v[3], &v[4]); err != nil {
			return fmt.Errorf("look up conflicting receipts: %w", err)
		}
		current["ark:"+key] = v
	}
	if err := res.Err(); err != nil {
		return fmt.Errorf("look up conflicting receipts: %w", err)
	}
	fields := [5]pipeline.Field{pipeline.FieldURL, pipeline.FieldWho, pipeline.FieldWhat, pipeline.FieldWhen, pipeline.FieldCommitment}
	for _, i := range w.conflicts {
		ce := rows[i].Reject.Err.(*ReceiptConflictError)
		v, ok := current[ce.ARK]
		if !ok {
			continue
		}
		for k, f := range fields {
			val, has := rows[i].Record.Value(f)
			if has != (v[k] != nil) || (has && val != *v[k]) {
				ce.Fields = append(ce.Fields, f.String())
			}
		}
	}
	return nil
}

// reserve takes up to n new mints from the quota left today and returns how many it got.
func (s *MintSink) reserve(n int64) int64 {
	for {
		left := s.remaining.Load()
		k := min(n, max(left, 0))
		if s.remaining.CompareAndSwap(left, left-k) {
			return k
		}
	}
}

// release gives back the quota reserved by a failed attempt.
func (w *mintWorker) release() {
	if w.reserved > 0 {
		w.s.remaining.Add(w.reserved)
		w.reserved = 0
	}
}

// prepareCopy fills w.copyIdx, w.keys and w.anames for the rows idx.
func (w *mintWorker) prepareCopy(idx []int32) {
	w.copyIdx = append(w.copyIdx[:0], idx...)
	w.keys = w.keys[:0]
	w.anames = w.anames[:0]
	skip := 4 + len(w.naan) + 1 // "ark:" NAAN "/"
	for _, i := range idx {
		n := w.name[i]
		w.keys = append(w.keys, n[4:])
		w.anames = append(w.anames, n[skip:])
	}
}

// copyRows COPYs the ARKs of rows idx with their receipts inside tx.
func (w *mintWorker) copyRows(ctx context.Context, tx pgx.Tx, b *pipeline.Batch, idx []int32, at time.Time) error {
	w.prepareCopy(idx)
	if !w.s.cfg.PgxCopyFrom {
		return w.copyBinary(ctx, tx, b.Rows, at)
	}
	t0 := time.Now()
	defer w.s.since(phaseCopyARKs, t0)
	as := &arkSource{w: w, rows: b.Rows, row: ARKRow{NAAN: w.naan, ShoulderID: w.shoulderID, CreatedAt: &at, CreatedBy: &w.clientPK}}
	if !w.s.citus {
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"ark"}, mintARKs.names, as)
		return err
	}
	as.columns = len(mintCitusARKs.names)
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"ark"}, mintCitusARKs.names, as); err != nil {
		return err
	}
	rs := &receiptSource{w: w, rows: b.Rows, clientPK: w.clientPK, createdAt: at}
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"receipt"}, []string{"client_pk", "request_id", "ark", "payload_digest", "created_at"}, rs)
	return err
}

// commit writes the attempt: COPY ark (receipts included; with chunked in savepointed chunks,
// copyChunks), the quota counter (mint_quota) and the shoulder's draw and collision counters
// (shoulder_tally, never the shoulder row), in one transaction. The counters are upserted last
// so their row locks are held only while committing.
func (w *mintWorker) commit(ctx context.Context, b *pipeline.Batch, chunked bool) (err error) {
	if len(w.mint) == 0 && b.Draws == 0 {
		return nil
	}
	var opts pgx.TxOptions
	if !w.s.citus {
		opts.BeginQuery = beginBatchSingle
	}
	tx, err := w.conn.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	at := time.Now().UTC().Truncate(time.Microsecond)
	switch {
	case len(w.mint) > 0 && chunked:
		if err := w.copyChunks(ctx, tx, b, at); err != nil {
			return err
		}
	case len(w.mint) > 0:
		if err := w.copyRows(ctx, tx, b, w.mint, at); err != nil {
			return err
		}
	}
	t0 := time.Now()
	defer w.s.since(phaseCommit, t0)
	var qb pgx.Batch
	if w.s.t.ManagerID != 0 && len(w.mint) > 0 {
		qb.Queue(`insert into mint_quota (manager_id, day, minted) values ($1, (now() at time zone 'utc')::date, $2)
			on conflict (manager_id, day) do update set minted = mint_quota.minted + excluded.minted
			returning minted`, w.s.t.ManagerID, int64(len(w.mint)))
	}
	qb.Queue(`insert into shoulder_tally as t (shoulder_id, draws, collisions) values ($1, $2, $3)
			on conflict (shoulder_id) do update set draws = t.draws + excluded.draws, collisions = t.collisions + excluded.collisions`,
		w.shoulderID, b.Draws, b.Collisions)
	br := tx.SendBatch(ctx, &qb)
	if w.s.t.ManagerID != 0 && len(w.mint) > 0 {
		var minted int64
		if err := br.QueryRow().Scan(&minted); err != nil {
			_ = br.Close()
			return err
		}
		if q := w.s.t.QuotaPerDay; q > 0 && minted > q {
			_ = br.Close()
			return &quotaExceeded{minted: minted}
		}
	}
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return err
	}
	if err := br.Close(); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// beginBatchSingle begins a batch's transaction on the single layout, in the same round trip,
// with work_mem at 1 MB for that transaction only. The ark table's statement triggers read the
// statement's new rows from a transition table, which PostgreSQL keeps in memory up to work_mem
// and then writes to a temporary file: with 1 MB a batch holds no more of the server's memory
// than that, whatever the server's work_mem. The batch's other statements (the counters'
// upserts, a chunk's name lookups) need far less. On Citus the triggers run on the workers, whose
// sessions do not take the coordinator's SET LOCAL, so the layout begins plainly.
const beginBatchSingle = "begin; set local work_mem = '1MB'"

// chunkSavepoint is the savepoint each chunk of a CheckChunks COPY goes under.
const chunkSavepoint = "arkhe_mint_chunk"

// copyChunks COPYs the rows w.mint in chunks of ChunkRows inside tx, each under a savepoint
// (CheckChunks). A chunk refused for a unique violation (on Citus, for any worker's error) is
// rolled back to its savepoint and its names are looked up in the ledger: those that exist are
// counted as collisions and redrawn (a row out of draws is rejected) and the chunk goes again.
// If none exists the conflict is a receipt, or the error is not about names: it is returned and
// the batch is rolled back and retried as after any refused COPY. After redraws the rows'
// outcomes and the batch's draw counters are settled again.
func (w *mintWorker) copyChunks(ctx context.Context, tx pgx.Tx, b *pipeline.Batch, at time.Time) error {
	rows := b.Rows
	redrawn := false
	for start := 0; start < len(w.mint); start += ChunkRows {
		w.chunk = append(w.chunk[:0], w.mint[start:min(start+ChunkRows, len(w.mint))]...)
		sp := "savepoint " + chunkSavepoint // a chunk sent again stays under its savepoint
		if start > 0 {
			sp = "release savepoint " + chunkSavepoint + "; " + sp
		}
		if _, err := tx.Exec(ctx, sp); err != nil {
			return fmt.Errorf("mint chunk: %w", err)
		}
		for len(w.chunk) > 0 {
			err := w.copyRows(ctx, tx, b, w.chunk, at)
			if err == nil {
				break
			}
			if !ledger.IsUniqueViolation(err) && !(w.s.citus && ledger.SQLState(err) == codeInternal) {
				return err
			}
			if _, rerr := tx.Exec(ctx, "rollback to savepoint "+chunkSavepoint); rerr != nil {
				return fmt.Errorf("mint chunk: %w (after %w)", rerr, err)
			}
			if lerr := w.lookUpNames(ctx, w.chunk); lerr != nil {
				return lerr
			}
			if len(w.hits) == 0 {
				return err // a receipt, or not about names
			}
			kept := w.chunk[:0]
			for _, i := range w.chunk {
				if _, hit := w.hits[w.name[i][4:]]; hit {
					w.collided[i]++
					if err := w.draw(b, i); err != nil {
						return err
					}
				}
				if rows[i].Outcome != pipeline.OutcomeRejected {
					kept = append(kept, i)
				}
			}
			w.chunk = kept
			redrawn = true
		}
	}
	if redrawn {
		w.settleMinted(rows)
		b.Draws, b.Collisions = w.drawCounts(rows)
	}
	return nil
}

// copyLine returns the row number in a COPY error's context ("COPY ark, line 3, column url:
// ..."), or 0. (This reads only the position PostgreSQL reports; what conflicts is
// never read from an error, whose text differs between engines.)
func copyLine(where string) int {
	rest, ok := strings.CutPrefix(where, "COPY ")
	if !ok {
		return 0
	}
	_, rest, ok = strings.Cut(rest, ", line ")
	if !ok {
		return 0
	}
	end := 0
	for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
		end++
	}
	n, err := strconv.Atoi(rest[:end])
	if err != nil {
		return 0
	}
	return n
}

// locate returns the row of b the server refused in the last COPY of w.mint: from the line
// number of pgErr.Where, or by re-sending halves in transactions that are rolled back.
//
// It also returns the error that describes the row: pgErr, or on Citus the row's own.
//
// On Citus a worker's error (XX000) carries the line the coordinator was at when it noticed,
// not the refused row's, and with rows refused on several workers it may be any of theirs: so
// the halves are always re-sent, and the row found is re-sent alone, to confirm that it is
// refused by itself and to read its own error.
func (w *mintWorker) locate(ctx context.Context, b *pipeline.Batch, pgErr *pgconn.PgError) (int32, *pgconn.PgError, error) {
	remote := w.s.citus && pgErr.Code == codeInternal
	if !w.s.cfg.Hooks.Bisect && !remote {
		if n := copyLine(pgErr.Where); n >= 1 && n <= len(w.copyIdx) { // the rows of the last COPY (a chunk's)
			return w.copyIdx[n-1], pgErr, nil
		}
	}
	refused := func(err error) bool {
		var pe *pgconn.PgError
		return errors.As(err, &pe) && (rowLevel(pe.Code) || w.s.citus && pe.Code == codeInternal)
	}
	cand := slices.Clone(w.mint)
	for len(cand) > 1 {
		half := cand[:len(cand)/2]
		err := w.probe(ctx, b, half)
		switch {
		case err == nil:
			cand = cand[len(cand)/2:]
		case refused(err):
			cand = half
		default:
			return 0, nil, fmt.Errorf("locate the refused row: %w", err)
		}
	}
	if len(cand) == 0 {
		return 0, nil, fmt.Errorf("locate the refused row: empty batch: %w", pgErr)
	}
	if remote {
		err := w.probe(ctx, b, cand)
		var own *pgconn.PgError
		if !refused(err) || !errors.As(err, &own) {
			return 0, nil, &unexplainedWorkerError{Err: pgErr}
		}
		return cand[0], own, nil
	}
	return cand[0], pgErr, nil
}

// probe COPYs the rows idx in a transaction that is always rolled back.
func (w *mintWorker) probe(ctx context.Context, b *pipeline.Batch, idx []int32) error {
	tx, err := w.conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	return w.copyRows(ctx, tx, b, idx, time.Now().UTC())
}

// digest16 lets pgx encode a receipt digest as bytea without allocating (pgtype.BytesValuer).
type digest16 [16]byte

// BytesValue implements pgtype.BytesValuer.
func (d *digest16) BytesValue() ([]byte, error) { return d[:], nil }

// optional returns p when the field is present, else a nil *string (NULL).
func optional(has bool, p *string) *string {
	if has {
		return p
	}
	return nil
}

// arkSource is the pgx.CopyFromSource of the ark rows of one attempt, in mintARKs' columns
// (mintCitusARKs' when columns says so): it walks the batch in place, so no [][]any is
// materialized; values are pointers into the batch and into row (no allocation).
type arkSource struct {
	w       *mintWorker
	rows    []pipeline.Row
	i       int
	row     ARKRow
	columns int // how many of the values go: all, or those without the receipt (citus layout)
	vals    [14]any
}

// Next implements pgx.CopyFromSource; it calls the CopyRow hook.
func (s *arkSource) Next() bool {
	s.i++
	if s.w.s.cfg.Hooks.CopyRow != nil && s.i <= len(s.w.copyIdx) {
		s.w.s.cfg.Hooks.CopyRow(s.w.id, "ark", s.i)
	}
	return s.i <= len(s.w.copyIdx)
}

// Values implements pgx.CopyFromSource: pointers into the batch, absent fields as nil *string.
func (s *arkSource) Values() ([]any, error) {
	r := &s.row
	s.w.fillARK(r, s.rows, s.i-1)
	s.vals = [14]any{&r.Key, &r.NAAN, &r.ShoulderID, &r.Name, r.URL, r.Commitment, r.Who, r.What, r.When,
		nil, r.CreatedAt, r.CreatedBy, r.RequestID, r.PayloadDigest}
	if s.columns > 0 {
		return s.vals[:s.columns], nil
	}
	return s.vals[:], nil
}

// Err implements pgx.CopyFromSource; the source never fails.
func (s *arkSource) Err() error { return nil }

// receiptSource is the pgx.CopyFromSource of the receipt rows of one attempt in the citus
// layout: client_pk, request_id, ark, payload_digest, created_at.
type receiptSource struct {
	w         *mintWorker
	rows      []pipeline.Row
	i         int
	clientPK  any
	createdAt any
	vals      [5]any
}

// Next implements pgx.CopyFromSource; it calls the CopyRow hook.
func (s *receiptSource) Next() bool {
	s.i++
	if s.w.s.cfg.Hooks.CopyRow != nil && s.i <= len(s.w.copyIdx) {
		s.w.s.cfg.Hooks.CopyRow(s.w.id, "receipt", s.i)
	}
	return s.i <= len(s.w.copyIdx)
}

// Values implements pgx.CopyFromSource.
func (s *receiptSource) Values() ([]any, error) {
	k := s.i - 1
	r := &s.rows[s.w.copyIdx[k]]
	s.vals = [5]any{s.clientPK, &r.Record.RequestID, &s.w.keys[k], (*digest16)(&r.Digest), s.createdAt}
	return s.vals[:], nil
}

// Err implements pgx.CopyFromSource; the source never fails.
func (s *receiptSource) Err() error { return nil }
