package loader

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/pipeline"
	"github.com/arkhe-ledger/arkhe/textin"
)

// This file is the bulk change (arkhe update): a manifest of change rows, read in batches, each
// batch staged by COPY into ark_update_stage and applied in one call of ark_update_apply, in the
// batch's own transaction. The database does what a single change does for every ARK of the
// batch: it locks them in ARK order, checks the client's reach per shoulder, appends one
// ARK_CHANGE row per changed ARK and updates the ark rows through the repoint path, and leaves a
// receipt per applied row.

// The columns of a change manifest. A row names its ARK by ColARK (any spelling ark.Parse reads)
// or by ColMintRequestID (a request ID of the client's own mint receipts); the other columns are
// what changes. A column the manifest lacks is left alone; a present column with an empty value
// empties the ARK's value (stored NULL, as a mint stores an absent field), except status and
// reason, where an empty value leaves the ARK alone. ColStatus is "public"
// or "unavailable" (a tombstone, which needs ColReason); ColReason is recorded in ARK_CHANGE and
// is the tombstone's reason. ColChangeID is the change request ID; without it the row's is
// derived from its content (ChangeID).
const (
	ColARK           = "ark"
	ColMintRequestID = "request_id"
	ColChangeID      = "change_id"
	ColURL           = "url"
	ColWho           = "who"
	ColWhat          = "what"
	ColWhen          = "when"
	ColCommitment    = "commitment"
	ColStatus        = "status"
	ColReason        = "reason"
)

// changeColumns are the changed columns in their mask bit order (bit i is changeColumns[i]).
var changeColumns = [...]string{ColURL, ColWho, ColWhat, ColWhen, ColCommitment, ColStatus, ColReason}

const (
	maskURL = 1 << iota
	maskWho
	maskWhat
	maskWhen
	maskCommitment
	maskStatus
	maskReason
)

// DefaultUpdateBatch is the change rows per batch (one transaction each).
const DefaultUpdateBatch = 10_000

// ChangeRow is one row of a change manifest.
type ChangeRow struct {
	Loc textin.Location
	// ARK is the ledger key ("NAAN/name") once known.
	ARK string
	// MintRequestID names the ARK by a mint receipt of the client, when ARK is not given.
	MintRequestID string
	// ChangeID is the change request ID (given, or ChangeID of the row).
	ChangeID string
	// Mask says which changed columns the manifest holds (bit i: changeColumns[i]); Values
	// holds them in the same order.
	Mask   int
	Values [len(changeColumns)]string
	digest [16]byte
}

// ContentDigest returns SHA-256 over "arkhe change v1" 0x00, the ledger key, then for each
// changed column in the order url, who, what, when, commitment, status, reason: 0x00 when the
// manifest lacks it, else 0x01, its length as a big-endian uint64 and its octets.
func (r *ChangeRow) ContentDigest() [32]byte {
	h := sha256.New()
	h.Write([]byte("arkhe change v1\x00"))
	h.Write([]byte(r.ARK))
	var n [8]byte
	for i := range changeColumns {
		if r.Mask&(1<<i) == 0 {
			h.Write([]byte{0})
			continue
		}
		binary.BigEndian.PutUint64(n[:], uint64(len(r.Values[i])))
		h.Write([]byte{1})
		h.Write(n[:])
		h.Write([]byte(r.Values[i]))
	}
	var d [32]byte
	h.Sum(d[:0])
	return d
}

// DerivedChangeID is the change request ID of a row without one: "sha256:" and the first 32 hex
// digits of ContentDigest, so the same change of the same ARK has the same ID in every run.
func DerivedChangeID(d [32]byte) string { return "sha256:" + hex.EncodeToString(d[:16]) }

// The outcomes of a change row.
const (
	OutcomeChanged   = "changed"   // the ARK changed: one ARK_CHANGE row
	OutcomeUnchanged = "unchanged" // the row asked for what the ARK holds: no history
	OutcomeEarlier   = "earlier"   // its receipt exists: applied by an earlier run
	OutcomeRejected  = "rejected"  // see the reject file
)

// UpdateJob is one `arkhe update` run.
type UpdateJob struct {
	// ClientID is the registered client the changes act as; required.
	ClientID string
	// Inputs are the change manifests (.csv or .jsonl/.ndjson, each optionally .gz), in order.
	Inputs []string
	// Map renames manifest columns: change column -> the manifest's column.
	Map map[string]string
	// BatchSize is the rows per batch (0: DefaultUpdateBatch).
	BatchSize int
	// LastWins applies the last of several rows of one ARK with different values in a batch
	// instead of rejecting them all.
	LastWins bool
	// DryRun applies every batch and rolls it back: the counts and the reject file are those of
	// a real run; nothing changes (the ARK_CHANGE mark sequence may advance).
	DryRun bool
	// ResultPath is the result file (CSV: file, line, ark, change_id, outcome); "" for none.
	// It appears only when the run completes.
	ResultPath string
	// RejectsPath is the reject file; "" writes none.
	RejectsPath string
	// Progress, if set, is called after each batch with the counts so far.
	Progress func(UpdateSummary)
	// Retry is how a batch rides out faults and conflicts with a concurrent run, as a mint
	// batch does: each attempt has RetryPolicy.BatchTimeout (lock_timeout half of it,
	// statement_timeout three quarters), and a batch keeps trying for RetryPolicy.For from its
	// first fault (then the run stops with a *FaultError; the same command completes it).
	Retry RetryPolicy
	// Hooks are test hooks; the zero value does nothing.
	Hooks UpdateHooks
}

// UpdateHooks let tests reach into a run. They are not for production use.
type UpdateHooks struct {
	// Step, if set, is called at each step of every attempt at a batch: "staged" (after the
	// COPY), "applied" (after ark_update_apply, before COMMIT) and "committed" (after COMMIT,
	// before the outcomes are taken), with the batch's number (1-based) and the attempt's. A
	// non-nil error fails the attempt there, as a fault or a crash would: io.ErrUnexpectedEOF
	// at "committed" is a lost COMMIT reply. Cancelling the run's context from it stops the run
	// there.
	Step func(batch int64, attempt int, step string) error
}

// UpdateSummary counts a run's rows per outcome.
type UpdateSummary struct {
	Read, Changed, Unchanged, Earlier, Rejected int64
	Batches, Retries                            int64
	Elapsed                                     time.Duration
	// InputDone is how far the run has read its manifests in octets of the files as stored, of
	// InputTotal, their sizes (0 when a manifest could not be measured), for a progress display.
	InputDone, InputTotal int64
}

// UpdateReport is the outcome of Update.
type UpdateReport struct {
	Summary UpdateSummary
	// Run is the run's number (the token of its first batch).
	Run int64
	// Result and Rejects are the files written ("" for none).
	Result, Rejects string
}

type updateClient struct {
	pk        int64
	authority string
}

// Update runs one bulk change: it reads the manifests in batches and applies each batch through
// ark_update_apply (see the file comment), writing one result row per row read (in manifest
// order), one reject per refused row and one audit event (action "update") per run, failed or
// not. Refusals of a row (an unknown ARK, one outside the client's reach, a bad value) are
// rejects; an error stops the run with what was committed kept. A re-run of the same manifests
// applies nothing twice: every row applied before reports OutcomeEarlier.
func Update(ctx context.Context, l *ledger.Ledger, job UpdateJob) (rep UpdateReport, err error) {
	if job.ClientID == "" {
		return rep, &ReachError{Rule: "no client given (--client)"}
	}
	if job.BatchSize <= 0 {
		job.BatchSize = DefaultUpdateBatch
	}
	var c updateClient
	err = l.Pool.QueryRow(ctx, `select id, authority from client where client_id = $1`, job.ClientID).Scan(&c.pk, &c.authority)
	if errors.Is(err, pgx.ErrNoRows) {
		return rep, &ReachError{ClientID: job.ClientID, Rule: fmt.Sprintf("client %q is not registered", job.ClientID)}
	}
	if err != nil {
		return rep, fmt.Errorf("update: read client %s: %w", job.ClientID, err)
	}
	t0 := time.Now()
	var res *pipeline.CSVFile
	if job.ResultPath != "" {
		res = pipeline.NewCSVFile(job.ResultPath, []string{"file", "line", "ark", "change_id", "outcome"})
	}
	var rw *pipeline.RejectWriter
	if job.RejectsPath != "" {
		rw = pipeline.NewRejectWriter(job.RejectsPath)
	}
	u := &updater{l: l, job: job, c: c, res: res, rw: rw, seen: newRunNames(), seed: maphash.MakeSeed()}
	err = u.run(ctx)
	rep.Summary, rep.Run = u.sum, u.runID
	rep.Summary.Elapsed = time.Since(t0)
	if res != nil {
		if err != nil { // a result file appears only for a run that completed
			_ = os.Remove(job.ResultPath + ".tmp")
		} else if written, cerr := res.Close(); cerr != nil {
			err = cerr
		} else if written {
			rep.Result = job.ResultPath
		}
	}
	if rw != nil {
		if cerr := rw.Close(); cerr != nil && err == nil {
			err = cerr
		}
		if rw.Count() > 0 {
			rep.Rejects = job.RejectsPath
		}
	}
	s := rep.Summary
	detail := map[string]any{"inputs": job.Inputs, "run": rep.Run, "read": s.Read, "changed": s.Changed,
		"unchanged": s.Unchanged, "earlier": s.Earlier, "rejected": s.Rejected, "dry_run": job.DryRun,
		"elapsed_s": s.Elapsed.Seconds(), "batch": job.BatchSize, "retries": s.Retries, "rejects": rep.Rejects}
	runStatus(detail, err, s.Rejected)
	aerr := withFaults(context.WithoutCancel(ctx), RetryPolicy{}, func(ctx context.Context) error {
		return ledger.RecordEvent(ctx, l.Pool, ledger.Event{ClientID: job.ClientID, Authority: c.authority,
			Action: "update", Target: "client:" + job.ClientID, Detail: detail})
	})
	if aerr != nil && err == nil {
		err = aerr
	}
	return rep, err
}

type updater struct {
	l     *ledger.Ledger
	job   UpdateJob
	c     updateClient
	res   *pipeline.CSVFile
	rw    *pipeline.RejectWriter
	sum   UpdateSummary
	runID int64
	buf   []byte
	// seen holds the hashes of the ARKs of the run's committed batches, so that only the rows
	// whose ARK may be among them are looked up among the run's earlier receipts (check_run)
	seen runNames
	seed maphash.Seed
	pos  func() int64 // octets of the manifests read so far
}

// mayRepeat reports whether the ARK of row r may have been changed by an earlier batch of the
// run (the set has false positives, never false negatives).
func (u *updater) mayRepeat(r *ChangeRow) bool {
	return u.seen.maybe(maphash.String(u.seed, r.ARK))
}

func (u *updater) run(ctx context.Context) error {
	for _, in := range u.job.Inputs {
		st, err := os.Stat(in)
		if err != nil {
			u.sum.InputTotal = 0
			break
		}
		u.sum.InputTotal += st.Size()
	}
	var before int64 // the octets of the manifests read before this one
	for _, in := range u.job.Inputs {
		rd, err := openChangeManifest(in, u.job.Map)
		if err != nil {
			return err
		}
		u.pos = func() int64 { return before + rd.position() }
		err = u.file(ctx, rd)
		_ = rd.Close()
		if err != nil {
			return err
		}
		if st, err := os.Stat(in); err == nil {
			before += st.Size()
		}
	}
	return nil
}

func (u *updater) file(ctx context.Context, rd *changeReader) error {
	var batch []ChangeRow
	var rejects []*textin.RowError // per row of batch, nil for none
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := u.batch(ctx, batch, rejects)
		batch, rejects = batch[:0], rejects[:0]
		return err
	}
	for {
		r, rerr, err := rd.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		batch = append(batch, r)
		rejects = append(rejects, rerr)
		if len(batch) >= u.job.BatchSize {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// batch settles one batch: it resolves mint request IDs to ARKs, rejects duplicates, applies the
// rest, and writes the results in manifest order.
func (u *updater) batch(ctx context.Context, rows []ChangeRow, rejects []*textin.RowError) error {
	u.sum.Read += int64(len(rows))
	u.sum.Batches++
	if err := u.resolve(ctx, rows, rejects); err != nil {
		return err
	}
	outcome := make([]string, len(rows))
	for i := range rows {
		if rejects[i] == nil {
			d := rows[i].ContentDigest()
			copy(rows[i].digest[:], d[:16])
			if rows[i].ChangeID == "" {
				rows[i].ChangeID = DerivedChangeID(d)
			}
		}
	}
	// the same ARK twice in the batch: identical rows apply once; different values are all
	// rejected, or the last applies (LastWins)
	byARK := map[string][]int{}
	for i := range rows {
		if rejects[i] == nil {
			byARK[rows[i].ARK] = append(byARK[rows[i].ARK], i)
		}
	}
	var apply []int
	for _, idx := range byARK {
		if len(idx) == 1 {
			apply = append(apply, idx[0])
			continue
		}
		same := true
		for _, i := range idx[1:] {
			same = same && rows[i].digest == rows[idx[0]].digest && rows[i].ChangeID == rows[idx[0]].ChangeID
		}
		switch {
		case same:
			apply = append(apply, idx[0])
			for _, i := range idx[1:] {
				outcome[i] = OutcomeEarlier
			}
		case u.job.LastWins:
			last := idx[len(idx)-1]
			apply = append(apply, last)
			for _, i := range idx[:len(idx)-1] {
				rejects[i] = &textin.RowError{Loc: rows[i].Loc, ID: "ark:" + rows[i].ARK, Field: ColARK,
					Reason: fmt.Sprintf("superseded by the row at %s (--last-wins)", rows[last].Loc)}
			}
		default:
			var at []string
			for _, i := range idx {
				at = append(at, rows[i].Loc.String())
			}
			for _, i := range idx {
				rejects[i] = &textin.RowError{Loc: rows[i].Loc, ID: "ark:" + rows[i].ARK, Field: ColARK,
					Reason: "the same ARK is named with different values at " + strings.Join(at, ", ") + "; none is applied (--last-wins applies the last)"}
			}
		}
	}
	slices.SortFunc(apply, func(a, b int) int { return strings.Compare(rows[a].ARK, rows[b].ARK) })
	if len(apply) > 0 {
		if err := u.apply(ctx, rows, apply, outcome, rejects); err != nil {
			return err
		}
	}
	for i := range rows {
		if rejects[i] != nil {
			outcome[i] = OutcomeRejected
			if u.rw != nil {
				if err := u.rw.Write(*rejects[i], rows[i].ChangeID); err != nil {
					return err
				}
			}
		}
		switch outcome[i] {
		case OutcomeChanged:
			u.sum.Changed++
		case OutcomeUnchanged:
			u.sum.Unchanged++
		case OutcomeEarlier:
			u.sum.Earlier++
		case OutcomeRejected:
			u.sum.Rejected++
		}
		if u.res != nil {
			printed := ""
			if rows[i].ARK != "" {
				printed = "ark:" + rows[i].ARK
			}
			line := ""
			if rows[i].Loc.Line > 0 {
				line = fmt.Sprint(rows[i].Loc.Line)
			}
			if err := u.res.Write([]string{rows[i].Loc.File, line, printed, rows[i].ChangeID, outcome[i]}); err != nil {
				return err
			}
		}
	}
	if u.job.Progress != nil {
		if u.pos != nil {
			u.sum.InputDone = u.pos()
		}
		u.job.Progress(u.sum)
	}
	return nil
}

// resolve finds the ARK of each row that names it by a mint request ID, among the client's own
// receipts; a request ID without one is a reject.
func (u *updater) resolve(ctx context.Context, rows []ChangeRow, rejects []*textin.RowError) error {
	var ids []string
	for i := range rows {
		if rejects[i] == nil && rows[i].ARK == "" {
			ids = append(ids, rows[i].MintRequestID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	found := make(map[string]string, len(ids))
	q, err := u.l.Pool.Query(ctx, `select request_id, ark from mint_receipt where client_pk = $1 and request_id = any($2::text[] collate "C")`, u.c.pk, ids)
	if err != nil {
		return fmt.Errorf("update: look up mint receipts: %w", err)
	}
	for q.Next() {
		var id, key string
		if err := q.Scan(&id, &key); err != nil {
			q.Close()
			return fmt.Errorf("update: look up mint receipts: %w", err)
		}
		found[id] = key
	}
	q.Close()
	if err := q.Err(); err != nil {
		return fmt.Errorf("update: look up mint receipts: %w", err)
	}
	for i := range rows {
		if rejects[i] == nil && rows[i].ARK == "" {
			key, ok := found[rows[i].MintRequestID]
			if !ok {
				rejects[i] = &textin.RowError{Loc: rows[i].Loc, Field: ColMintRequestID,
					Reason: fmt.Sprintf("client %s holds no mint receipt for request ID %q (a row names an ARK by a request ID of the client's own mints)", u.job.ClientID, rows[i].MintRequestID)}
				continue
			}
			rows[i].ARK = key
		}
	}
	return nil
}

// stageCopy COPYs a batch's rows into ark_update_stage; check_run marks a row whose ARK may
// have been changed by an earlier batch of the run (mayRepeat), which ark_update_apply looks up.
const stageCopy = `copy ark_update_stage (token, idx, ark, request_id, digest, mask, check_run, url, erc_who, erc_what, erc_when, commitment, status, reason) from stdin (format binary)`

// apply stages rows idx (in ARK order) and applies them in one transaction (rolled back under
// DryRun), retrying the batch after a fault or a conflict with a concurrent run (retryableChange)
// with mint's back-off, for at most RetryPolicy.For from the batch's first fault. An attempt
// whose COMMIT reply was lost may have committed: the next attempt finds the receipts it left
// (this run's), and its rows are reported with the outcomes that attempt gave them.
func (u *updater) apply(ctx context.Context, rows []ChangeRow, idx []int, outcome []string, rejects []*textin.RowError) error {
	p := u.job.Retry.withDefaults()
	var first time.Time
	var lost map[int]string // outcomes of an attempt that may have committed
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, p.BatchTimeout)
		sent, err := u.applyOnce(actx, rows, idx, outcome, rejects, attempt, lost)
		cancel()
		if err == nil {
			if attempt > 1 && p.Notify != nil {
				p.Notify(RetryNotice{Worker: 1, Attempt: attempt, Resumed: true})
			}
			return nil
		}
		if sent != nil {
			lost = sent
		}
		if ctx.Err() != nil {
			return err // the run was stopped
		}
		cause := retryableChange(err)
		if cause == "" {
			return err
		}
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within the batch deadline of %s: %w", p.BatchTimeout, err)
		}
		if first.IsZero() {
			first = time.Now()
		}
		left := p.For - time.Since(first)
		if p.For < 0 || left <= 0 {
			return &FaultError{Cause: cause, Err: err, Attempts: attempt, For: p.For}
		}
		wait := min(backoff(attempt), left)
		u.sum.Retries++
		if p.Notify != nil {
			p.Notify(RetryNotice{Worker: 1, Attempt: attempt, Cause: cause, Err: err, Wait: wait, Left: left - wait})
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

// retryableChange says what fault err is, or "" when a retry would not help: a fault as a mint
// batch rides out (faultOf: a deadlock the server broke, a serialization failure, a lost
// connection, a server shutting down or restarting, a lock or statement timeout, no answer
// within the batch deadline), or a conflict with a concurrent run: a unique violation (a
// concurrent run changed one of the ARKs, its ARK_CHANGE seq or receipt, first, and the next
// attempt sees its receipt or its new state), which on Citus may arrive from a worker as
// internal_error. By SQLSTATE and error type only.
func retryableChange(err error) string {
	switch ledger.SQLState(err) {
	case ledger.CodeUniqueViolation, codeInternal:
		return "a concurrent run changed the same ARKs"
	}
	return faultOf(err)
}

// applyOnce is one attempt at a batch. sent is the outcomes the attempt settled, once it sent
// COMMIT (so it may have committed although err is set); lost is the outcomes of an earlier
// attempt that may have committed.
func (u *updater) applyOnce(ctx context.Context, rows []ChangeRow, idx []int, outcome []string, rejects []*textin.RowError,
	attempt int, lost map[int]string) (sent map[int]string, err error) {
	step := func(name string) error {
		if u.job.Hooks.Step == nil {
			return nil
		}
		return u.job.Hooks.Step(u.sum.Batches, attempt, name)
	}
	tx, err := u.l.Pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	d := u.job.Retry.withDefaults().BatchTimeout.Milliseconds()
	lock, stmt := strconv.FormatInt(max(d/2, 1), 10), strconv.FormatInt(max(d*3/4, 1), 10)
	var token int64
	if err := tx.QueryRow(ctx, `select nextval('ark_update_token'), set_config('lock_timeout', $1, true), set_config('statement_timeout', $2, true)`,
		lock, stmt).Scan(&token, nil, nil); err != nil {
		return nil, fmt.Errorf("update: draw a batch token: %w", err)
	}
	if u.runID == 0 {
		u.runID = token
	}
	b := ledger.AppendCopyHeader(u.buf[:0])
	checkRun := false
	for _, i := range idx {
		r := &rows[i]
		repeat := u.mayRepeat(r)
		checkRun = checkRun || repeat
		b = ledger.AppendTuple(b, 14)
		b = ledger.AppendInt8(b, token)
		b = binary.BigEndian.AppendUint32(b, 4)
		b = binary.BigEndian.AppendUint32(b, uint32(i))
		b = ledger.AppendText(b, r.ARK)
		b = ledger.AppendText(b, r.ChangeID)
		b = ledger.AppendBytea(b, r.digest[:])
		b = binary.BigEndian.AppendUint32(b, 4)
		b = binary.BigEndian.AppendUint32(b, uint32(r.Mask))
		b = ledger.AppendBoolPtr(b, &repeat)
		for c := range changeColumns {
			b = ledger.AppendOptional(b, r.Mask&(1<<c) != 0, r.Values[c])
		}
	}
	b = ledger.AppendCopyTrailer(b)
	u.buf = b
	if _, err := tx.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(b), stageCopy); err != nil {
		return nil, fmt.Errorf("update: stage %d rows: %w", len(idx), err)
	}
	if err := step("staged"); err != nil {
		return nil, err
	}
	by := "arkhe update"
	q, err := tx.Query(ctx, `select idx, outcome, detail from ark_update_apply($1, $2, $3, $4, $5)`, token, u.runID, checkRun, u.c.pk, by)
	if err != nil {
		return nil, fmt.Errorf("update: apply: %w", err)
	}
	type res struct {
		out, detail string
	}
	got := make(map[int]res, len(idx))
	for q.Next() {
		var i int32
		var out string
		var detail *string
		if err := q.Scan(&i, &out, &detail); err != nil {
			q.Close()
			return nil, fmt.Errorf("update: apply: %w", err)
		}
		d := ""
		if detail != nil {
			d = *detail
		}
		got[int(i)] = res{out, d}
	}
	q.Close()
	if err := q.Err(); err != nil {
		return nil, fmt.Errorf("update: apply: %w", err)
	}
	if lost != nil {
		if err := u.claimLost(ctx, tx, rows, lost, func(i int) bool { return got[i].out == OutcomeEarlier }, func(i int) {
			got[i] = res{out: lost[i]}
		}); err != nil {
			return nil, err
		}
	}
	if err := step("applied"); err != nil {
		return nil, err
	}
	if u.job.DryRun {
		err = tx.Rollback(ctx)
	} else {
		sent = make(map[int]string, len(got))
		for i, g := range got {
			sent[i] = g.out
		}
		err = tx.Commit(ctx)
	}
	if err == nil {
		err = step("committed")
	}
	if err != nil {
		return sent, fmt.Errorf("update: commit: %w", err)
	}
	for _, i := range idx {
		u.seen.add(maphash.String(u.seed, rows[i].ARK))
	}
	for _, i := range idx {
		g, ok := got[i]
		if !ok {
			return nil, fmt.Errorf("update: apply returned no outcome for %s", rows[i].Loc)
		}
		switch g.out {
		case "changed":
			outcome[i] = OutcomeChanged
		case "unchanged":
			outcome[i] = OutcomeUnchanged
		case "earlier":
			outcome[i] = OutcomeEarlier
		case "unknown":
			rejects[i] = &textin.RowError{Loc: rows[i].Loc, ID: "ark:" + rows[i].ARK, Field: ColARK, Reason: "unknown ARK: " + g.detail}
		default:
			rejects[i] = &textin.RowError{Loc: rows[i].Loc, ID: "ark:" + rows[i].ARK, Reason: "refused: " + g.detail}
		}
	}
	return nil, nil
}

// claimLost gives back their outcomes to the rows an earlier attempt that may have committed
// changed or found unchanged (lost), and that this attempt finds applied earlier (earlier),
// when their receipts are this run's: that attempt did commit, and the rows were applied by this
// run, not before it.
func (u *updater) claimLost(ctx context.Context, tx pgx.Tx, rows []ChangeRow, lost map[int]string, earlier func(int) bool, claim func(int)) error {
	var arks, ids []string
	var cand []int
	for i, out := range lost {
		if (out == OutcomeChanged || out == OutcomeUnchanged) && earlier(i) {
			cand = append(cand, i)
			arks, ids = append(arks, rows[i].ARK), append(ids, rows[i].ChangeID)
		}
	}
	if len(cand) == 0 {
		return nil
	}
	q, err := tx.Query(ctx, `select r.ark, r.request_id from update_receipt r
		join unnest($3::text[], $4::text[]) as w(ark, request_id) on r.ark = w.ark collate "C" and r.request_id = w.request_id collate "C"
		where r.client_pk = $1 and r.run = $2`, u.c.pk, u.runID, arks, ids)
	if err != nil {
		return fmt.Errorf("update: read the receipts of the batch in flight: %w", err)
	}
	ours := map[[2]string]bool{}
	for q.Next() {
		var a, id string
		if err := q.Scan(&a, &id); err != nil {
			q.Close()
			return fmt.Errorf("update: read the receipts of the batch in flight: %w", err)
		}
		ours[[2]string{a, id}] = true
	}
	q.Close()
	if err := q.Err(); err != nil {
		return fmt.Errorf("update: read the receipts of the batch in flight: %w", err)
	}
	for _, i := range cand {
		if ours[[2]string{rows[i].ARK, rows[i].ChangeID}] {
			claim(i)
		}
	}
	return nil
}
