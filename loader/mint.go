package loader

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/pipeline"
	"github.com/arkhe-ledger/arkhe/textin"
)

// This file is the mint job: its configuration and policies, the sink PrepareMint returns
// (the pipeline.Sink of a streaming mint run) and Mint, which runs a manifest through it.

// DefaultMaxDraws is how many blades one row may draw before it fails with a *CollisionError
// (at most ten draws per row).
const DefaultMaxDraws = 10

// NameCheckThreshold is the expected number of collisions per batch with the ARKs that were in
// the ledger before the run (the run's own are caught by runNames) at or above which CheckAuto
// looks every drawn name up in the ledger before COPY. Below it, going to COPY directly costs a
// retried batch with probability about the expected number, looking up costs a share of the
// batch's COPY time: the threshold is below the break-even `arkhe bench mint --name-check`
// measures.
const NameCheckThreshold = 0.05

// ChunkRows is how many rows of a batch one COPY sends under CheckChunks, each chunk under its
// own savepoint: a chunk the ledger refuses for an existing name costs that chunk again and a
// lookup of its names, not the batch.
const ChunkRows = 1000

// ChunkCollisionLimit is the expected number of collisions per chunk of ChunkRows with the
// ARKs in the ledger before the run up to which CheckAuto, when it looks names up at all, COPYs
// in savepointed chunks instead of looking every drawn name up before COPY (single layout).
// A refused chunk costs on average half a chunk sent again and the chunk's lookup, against a
// lookup of every name of every chunk: the limit is below the break-even that
// `arkhe bench mint --preload N --name-check chunks` against `--name-check always` measures.
const ChunkCollisionLimit = 0.25

// receiptSample is how many request IDs of a batch are looked up to decide whether the batch
// replays (ReceiptCheck CheckAuto).
const receiptSample = 32

// maxBatchAttempts bounds the attempts at one batch in a row during which no concurrent run
// committed one of its request IDs (conflicts that make no progress, rows the server refuses);
// past it the run stops with an error.
const maxBatchAttempts = 64

// SQLSTATEs the sink retries a batch on.
const (
	codeDeadlock      = "40P01" // deadlock_detected: two runs inserting the same receipts
	codeSerialization = "40001" // serialization_failure
	// codeInternal is internal_error, which Citus reports for any error a worker raised
	// during COPY (the worker's SQLSTATE is dropped, its message kept).
	codeInternal = "XX000"
)

// Check is a policy for looking rows up in the ledger before COPY.
type Check uint8

// Check policies. CheckAuto decides per batch (see batch.go); CheckAlways looks every
// batch up; CheckNever goes to COPY directly and looks up only after a refused COPY;
// CheckChunks (names only) COPYs each batch in chunks of ChunkRows under a savepoint each and
// looks up only the names of a chunk the ledger refused.
const (
	CheckAuto Check = iota
	CheckAlways
	CheckNever
	CheckChunks
)

// String returns "auto", "always", "never" or "chunks".
func (c Check) String() string {
	switch c {
	case CheckAlways:
		return "always"
	case CheckNever:
		return "never"
	case CheckChunks:
		return "chunks"
	}
	return "auto"
}

// ParseCheck parses "auto", "always", "never" or "chunks" (the last for names only:
// PrepareMint refuses it as a receipt check).
func ParseCheck(s string) (Check, error) {
	switch s {
	case "", "auto":
		return CheckAuto, nil
	case "always":
		return CheckAlways, nil
	case "never":
		return CheckNever, nil
	case "chunks":
		return CheckChunks, nil
	}
	return CheckAuto, fmt.Errorf("check policy %q: want auto, always, never or chunks", s)
}

// MintConfig configures a mint run.
type MintConfig struct {
	// ClientID is the registered client the run acts as; required.
	ClientID string
	// Shoulder is the shoulder to mint in: "/x9" (in the client's NAAN) or "NAAN/x9"; "" picks
	// the client's pinned shoulder, else its manager's default.
	Shoulder string
	// Blades returns the blade source of one worker (nil: ark.NewRandomBlades, one per worker).
	// Tests inject ark.ScriptedBlades to force collisions.
	Blades func(worker int) ark.BladeSource
	// MaxDraws is the most blades one row draws (0: DefaultMaxDraws).
	MaxDraws int
	// NameCheck says when drawn names are looked up before COPY (zero: CheckAuto).
	NameCheck Check
	// ReceiptCheck says when request IDs are looked up before COPY (zero: CheckAuto). With a
	// daily quota every batch is looked up, since replays must not count.
	ReceiptCheck Check
	// PgxCopyFrom sends the rows with pgx.CopyFrom and a CopyFromSource instead of the sink's own
	// binary COPY encoder (copy.go); for comparison in benchmarks.
	PgxCopyFrom bool
	// Retry says how batches ride out faults (a lost connection, a restarted or frozen
	// server); the zero value retries for DefaultRetryFor with DefaultBatchTimeout per attempt.
	Retry RetryPolicy
	// EntryNodes are further nodes of a Citus cluster that take the writes (its workers, which
	// do since Citus 11), each a pool on the ledger's database there. Worker w's COPY streams
	// go to node w mod (1 + len(EntryNodes)), node 0 being the ledger.Ledger's own Pool (the
	// coordinator), so ingest is not bound to one node. Only a Citus ledger takes them
	// (PrepareMint refuses them on a single node); every node answers the same, so receipts,
	// replays and collisions behave as through the coordinator.
	EntryNodes []*pgxpool.Pool
	// Hooks are test hooks; the zero value does nothing.
	Hooks MintHooks
}

// MintHooks let tests reach into a run. They are not for production use.
type MintHooks struct {
	// CopyRow, if set, is called as COPY asks for row n (1-based) of table ("ark", whose rows
	// carry their receipts in the single layout; "receipt" in the citus layout, after the ark
	// rows) in worker's current attempt; cancelling the run's context from it aborts that COPY
	// mid-stream.
	CopyRow func(worker int, table string, n int)
	// Bisect makes the sink locate a row the server refused by re-sending halves, ignoring the
	// line number in the error's Where field.
	Bisect bool
	// LoseCommitReply, if set, is called after worker committed a batch that minted; true
	// makes the worker act as if its connection was lost before COMMIT's reply came (retry.go).
	LoseCommitReply func(worker int) bool
}

// MintTarget is where a run mints, resolved and checked by PrepareMint. Internal keys stay in
// this package's values; what a user sees is ClientID, NAAN and Shoulder.
type MintTarget struct {
	ClientPK    int64
	ClientID    string
	Authority   string // system, naan or manager
	NAAN        string
	ShoulderID  int64
	Shoulder    string // stored form, "/x9"
	BladeLength int
	CheckZone   string // naan_name, name_only or none
	ManagerID   int64  // the shoulder's manager; 0 for none
	Manager     string // its name (internal; for messages to the operator)
	QuotaPerDay int64  // the manager's quota_per_day; 0 for no limit
	QuotaUsed   int64  // new mints counted against the quota today (UTC) when the run started
	// NoNewMints, when set, is why this run mints nothing new: no shoulder could be chosen, or
	// the chosen one is not registered, out of the client's reach, or not active. Replays still
	// happen; each row that needs a new mint is rejected with this error. ShoulderID is 0 when
	// no registered shoulder was chosen.
	NoNewMints *ReachError
	// BladeTemplate is the class of each blade position ('e' a betanumeric, 'd' a digit) of a
	// shoulder that follows its old minter's template; "" for BladeLength betanumerics.
	BladeTemplate string
}

// MintStats is where a mint run's sink spent its time, summed over workers (so it can exceed
// the wall time), and how often batches were retried; for benchmarks and the run summary.
type MintStats struct {
	ReceiptLookups time.Duration // sampling and reading receipts before COPY
	NameLookups    time.Duration // looking drawn names up in the ledger
	Settle         time.Duration // deciding outcomes and drawing names, lookups excluded
	CopyARKs       time.Duration // COPY ark with the receipts (ark columns; on Citus a second COPY, of receipt rows)
	Commit         time.Duration // counters and COMMIT
	Retries        int64         // batch attempts rolled back and retried, for any reason
	Conflicts      int64         // of which after a unique violation or deadlock (found by querying)
	Refusals       int64         // of which after the server refused a row's data
	LookedUpNames  int64         // names looked up in the ledger: before COPY, or after a refused chunk
	CheckedBatches int64         // batches whose receipts were all read before COPY
	Deadlocks      int64         // of the conflicts, deadlocks the server broke (SQLSTATE 40P01)
	Faults         int64         // batch attempts that failed on a fault and were retried (retry.go)
}

const (
	phaseReceipts = iota
	phaseNames
	phaseSettle
	phaseCopyARKs
	phaseCommit
	numPhases
)

// MintSink is the COPY sink of bulk mint; it implements pipeline.Sink. Create it with
// PrepareMint. It is safe for its workers' concurrent use.
type MintSink struct {
	l        *ledger.Ledger
	cfg      MintConfig
	t        MintTarget
	space    float64 // 29^blade length
	arkRows0 int64   // estimated ARKs in the ledger when the run started
	citus    bool    // the ledger's layout is ledger.LayoutCitus: receipts are rows of the receipt table
	q        *receiptQueries

	minted    atomic.Int64 // committed new mints in this run
	dense     atomic.Bool  // a ledger collision was seen: look names up before every COPY
	remaining atomic.Int64 // quota left today (with QuotaPerDay > 0)

	inflight inflight // names drawn for uncommitted batches, all workers
	runNames runNames // names committed by this run

	phases                  [numPhases]atomic.Int64 // nanoseconds
	retries, looked, loaded atomic.Int64
	conflicts, refusals     atomic.Int64
	faults                  faultCounters // committed outcomes and faults ridden out (retry.go)
}

func (s *MintSink) since(phase int, t0 time.Time) { s.phases[phase].Add(int64(time.Since(t0))) }

// Stats returns where the sink spent its time so far.
func (s *MintSink) Stats() MintStats {
	d := func(p int) time.Duration { return time.Duration(s.phases[p].Load()) }
	return MintStats{ReceiptLookups: d(phaseReceipts), NameLookups: d(phaseNames), Settle: d(phaseSettle) - d(phaseNames),
		CopyARKs: d(phaseCopyARKs), Commit: d(phaseCommit),
		Retries: s.retries.Load(), Conflicts: s.conflicts.Load(), Refusals: s.refusals.Load(),
		LookedUpNames: s.looked.Load(), CheckedBatches: s.loaded.Load(),
		Deadlocks: s.faults.deadlocks.Load(), Faults: s.faults.retried.Load()}
}

// PrepareMint resolves and checks where cfg.ClientID mints, before any input is read: the client is registered, active, unexpired and holds
// ark:mint, and its manager (if any) is active; the shoulder is cfg.Shoulder, else the client's pinned shoulder, else its manager's
// default; it is within the client's reach (the pinned one; its manager's for authority
// manager; its NAAN's for authority naan; any for system) and active (a reserved, delegated or
// retired shoulder never mints) and held by an active manager (or none); and the shoulder's
// manager has quota left today. A refusal is
// a *ReachError naming the rule. The ledger's reach trigger (SQLSTATE AK004) enforces the same
// rules on every batch.
func PrepareMint(ctx context.Context, l *ledger.Ledger, cfg MintConfig) (*MintSink, error) {
	if cfg.ClientID == "" {
		return nil, &ReachError{Rule: "no client given (--client)"}
	}
	if cfg.MaxDraws <= 0 {
		cfg.MaxDraws = DefaultMaxDraws
	}
	if cfg.MaxDraws > 255 {
		cfg.MaxDraws = 255
	}
	if cfg.ReceiptCheck == CheckChunks {
		return nil, fmt.Errorf("prepare mint: receipt check %q: chunks is a policy for drawn names only: want auto, always or never", cfg.ReceiptCheck)
	}
	if cfg.Blades == nil {
		cfg.Blades = func(int) ark.BladeSource { return ark.NewRandomBlades() }
	}
	var layout string
	if err := l.Pool.QueryRow(ctx, `select arkhe_layout()`).Scan(&layout); err != nil {
		return nil, fmt.Errorf("prepare mint: read the ledger's layout: %w", err)
	}
	t, err := resolveMintTarget(ctx, l, cfg.ClientID, cfg.Shoulder)
	if err != nil {
		return nil, err
	}
	if t.NoNewMints == nil {
		if _, err := ark.NewMinter(t.NAAN, t.Shoulder, t.BladeLength, ark.NewScriptedBlades()); err != nil {
			t.NoNewMints = &ReachError{ClientID: t.ClientID, Shoulder: t.NAAN + t.Shoulder, Rule: "the shoulder cannot mint", Err: err}
		}
	}
	s := &MintSink{l: l, cfg: cfg, t: t, inflight: inflight{seed: maphash.MakeSeed()},
		runNames: newRunNames(), citus: ledger.Layout(layout) == ledger.LayoutCitus, q: &singleReceipts}
	if s.citus {
		s.q = &citusReceipts
	} else if len(cfg.EntryNodes) > 0 {
		return nil, fmt.Errorf("prepare mint: %d further entry nodes given, but the ledger is laid out for one node: several database URLs need a Citus ledger",
			len(cfg.EntryNodes))
	}
	if t.NoNewMints == nil {
		s.space = ark.BladeSpace(t.BladeLength)
		if t.BladeTemplate != "" {
			s.space = ark.Template(t.BladeTemplate).Space()
		}
	}
	// A run that cannot mint anything new still replays; it is refused before reading input
	// only when the client has no receipt at all, so no row could succeed.
	refusal := t.NoNewMints
	if t.QuotaPerDay > 0 && refusal == nil {
		left := t.QuotaPerDay - t.QuotaUsed
		if left <= 0 {
			refusal = &ReachError{ClientID: t.ClientID, Shoulder: t.NAAN + t.Shoulder,
				Rule: fmt.Sprintf("the daily quota of %d new ARKs of manager %q is used up today (UTC); run again after 00:00 UTC", t.QuotaPerDay, t.Manager)}
		}
		s.remaining.Store(max(left, 0))
	}
	if refusal != nil {
		var any bool
		if err := l.Pool.QueryRow(ctx, s.q.any, t.ClientPK).Scan(&any); err != nil {
			return nil, fmt.Errorf("prepare mint: look up receipts: %w", err)
		}
		if !any {
			return nil, refusal
		}
	}
	// reltuples: an estimate (-1 before the first ANALYZE); a stale one only delays the switch
	// to looking names up until the first collision is seen. On Citus the coordinator's ark is
	// an empty shell: the shards' estimates are summed.
	estimate := `select reltuples from pg_class where oid = 'ark'::regclass`
	if s.citus {
		estimate = `select coalesce(sum(greatest(result::float8, 0)), 0) from run_command_on_shards('ark',
			$$select reltuples from pg_class where oid = '%s'::regclass$$) where success`
	}
	var est float64
	if err := l.Pool.QueryRow(ctx, estimate).Scan(&est); err != nil {
		return nil, fmt.Errorf("prepare mint: estimate ledger size: %w", err)
	}
	s.arkRows0 = int64(max(est, 0))
	return s, nil
}

// receiptQueries are the sink's reads of receipts in one layout: any (does client $1 hold a
// receipt), sample (does any of request IDs $2 of client $1 have one) and load (request_id,
// ark, payload_digest of request IDs $2 of client $1). Request IDs are compared in COLLATE "C",
// the key's collation, so the index serves them whatever the database's default collation.
type receiptQueries struct{ any, sample, load string }

// singleReceipts read receipts from the ark rows, through the ark_receipt partial index
// (created_by, request_id) where request_id is not null: one index probe per request ID (the
// LIMIT keeps the planner from turning the probes into a join), whatever the table's
// statistics say. Written as request_id = any($2), the planner of a ledger without statistics
// yet (a fresh or small one, a re-run right after the first run) scanned every receipt of the
// client and compared each with the whole array, a cost that grows with the receipts held
// instead of the request IDs asked.
var singleReceipts = receiptQueries{
	any: `select exists (select 1 from ark where created_by = $1 and request_id is not null)`,
	sample: `select exists (select 1 from unnest($2::text[]) as r(id), lateral (select 1 from ark
		where created_by = $1 and request_id = r.id collate "C" and request_id is not null limit 1) a)`,
	load: `select r.id, a.ark, a.payload_digest from unnest($2::text[]) as r(id), lateral (select ark, payload_digest from ark
		where created_by = $1 and request_id = r.id collate "C" and request_id is not null limit 1) a`,
}

// citusReceipts read the receipt table (its key (client_pk, request_id); the request IDs
// prune the shards). The sample is a count, not EXISTS: Citus plans an EXISTS over a
// distributed table as a subplan whose rows go to an intermediate result first, and a count is
// one query per shard the request IDs hash to, each an index probe per request ID.
var citusReceipts = receiptQueries{
	any: `select exists (select 1 from receipt where client_pk = $1)`,
	sample: `select count(*) > 0 from receipt
		where client_pk = $1 and request_id = any($2::text[] collate "C")`,
	load: `select request_id, ark, payload_digest from receipt
		where client_pk = $1 and request_id = any($2::text[] collate "C")`,
}

// MaxWorkers implements pipeline.WorkerLimiter: 1 under a daily quota, so the first rows in
// manifest order that need a new mint get the quota left (when a run reaches the quota the
// remaining rows are rejected), else 0 (no limit).
func (s *MintSink) MaxWorkers() int {
	if s.t.QuotaPerDay > 0 && s.t.NoNewMints == nil {
		return 1
	}
	return 0
}

// Target returns where the run mints.
func (s *MintSink) Target() MintTarget { return s.t }

// Minted returns the new mints committed so far by this sink.
func (s *MintSink) Minted() int64 { return s.minted.Load() }

// pool returns the pool worker writes through: node worker mod (1 + len(EntryNodes)).
func (s *MintSink) pool(worker int) *pgxpool.Pool {
	if n := worker % (1 + len(s.cfg.EntryNodes)); n > 0 {
		return s.cfg.EntryNodes[n-1]
	}
	return s.l.Pool
}

// OpenWorker implements pipeline.Sink: it holds one pooled connection for the run and draws
// blades from cfg.Blades(worker). The first worker of each pool connects here, so a server that
// cannot be reached stops the run before a row is read; the others connect with their first
// batch, so a run too small to reach them (a batch or two) opens no server process for them.
func (s *MintSink) OpenWorker(ctx context.Context, worker int) (pipeline.SinkWorker, error) {
	var conn *pgxpool.Conn
	if worker <= len(s.cfg.EntryNodes) {
		var err error
		if conn, err = s.pool(worker).Acquire(ctx); err != nil {
			return nil, fmt.Errorf("mint worker %d: connect: %w", worker, err)
		}
	}
	release := func() {
		if conn != nil {
			conn.Release()
		}
	}
	src := s.cfg.Blades(worker)
	if src == nil {
		release()
		return nil, fmt.Errorf("mint worker %d: no blade source", worker)
	}
	var d *nameDrawer
	if s.t.NoNewMints == nil {
		var err error
		if d, err = newNameDrawer(s.t, src); err != nil {
			release()
			return nil, err
		}
	}
	w := &mintWorker{s: s, id: worker, conn: conn, names: d,
		first: map[string]int32{}, receipt: map[string]receiptRow{}, hits: map[string]struct{}{},
		clientPK: s.t.ClientPK, shoulderID: s.t.ShoulderID, naan: s.t.NAAN}
	return w, nil
}

// MintJob is one `arkhe mint` run as a library call: the sink's configuration, the manifests and
// the outputs.
type MintJob struct {
	Mint MintConfig
	// Inputs are the manifests, minted in order.
	Inputs []string
	// Mapping and Limits as in pipeline.RunConfig.
	Mapping pipeline.Mapping
	Limits  textin.Limits
	// Workers and BatchSize as in pipeline.RunConfig (0: the defaults, 2 and 100,000).
	Workers, BatchSize int
	// MintMapPath is the mint map to write (.csv, .jsonl, .ndjson or .parquet); "" writes none.
	// It appears only when the run completes (temp file + rename).
	MintMapPath string
	// RejectsPath is the reject file; "" writes none (rejects are still counted).
	RejectsPath string
	// Progress is passed to pipeline.Run.
	Progress func(pipeline.Progress)
}

// MintReport is the outcome of ledger.Ledger.Mint.
type MintReport struct {
	Summary pipeline.Summary
	Target  MintTarget
	// ShoulderDraws and ShoulderCollisions are the shoulder's counters in the ledger after the
	// run (all runs so far).
	ShoulderDraws, ShoulderCollisions int64
	// MintMap and Rejects are the files written ("" for none).
	MintMap, Rejects string
	// Stats is where the sink spent its time.
	Stats MintStats
}

// Mint runs one bulk mint end to end: PrepareMint (a refusal is a *ReachError and nothing is
// written), then pipeline.Run over job.Inputs with the COPY sink, the mint map committed by
// rename only when the run completes (else removed), the reject file, and one audit_event
// (action "mint", target "ark:NAAN/shoulder", detail the counts) per run that got past the
// checks, failed or not. The report carries the summary so far also with an error.
func Mint(ctx context.Context, l *ledger.Ledger, job MintJob) (rep MintReport, err error) {
	sink, err := PrepareMint(ctx, l, job.Mint)
	if err != nil {
		return rep, err
	}
	rep.Target = sink.Target()
	// the shoulder's counters as the ledger holds them when the run ends, however it ends (also
	// before its first row), so that a summary never reports totals it did not read
	defer func() {
		if d, c, cerr := shoulderCounters(context.WithoutCancel(ctx), l, rep.Target.ShoulderID); cerr == nil {
			rep.ShoulderDraws, rep.ShoulderCollisions = d, c
		}
	}()
	rc := pipeline.RunConfig{Inputs: job.Inputs, Mapping: job.Mapping, Limits: job.Limits, Workers: job.Workers,
		BatchSize: job.BatchSize, Sink: sink, Progress: job.Progress}
	if err := rc.Validate(); err != nil {
		return rep, err
	}
	var mm pipeline.MintMapWriter
	if job.MintMapPath != "" {
		if mm, err = pipeline.CreateMintMap(job.MintMapPath); err != nil {
			return rep, err
		}
		rc.MintMap = mm
	}
	var rw *pipeline.RejectWriter
	if job.RejectsPath != "" {
		rw = pipeline.NewRejectWriter(job.RejectsPath)
		rc.Rejects = rw
	}
	rep.Summary, err = pipeline.Run(ctx, rc)
	rep.Summary = sink.committedSummary(rep.Summary)
	rep.Stats = sink.Stats()
	if mm != nil {
		if err != nil {
			_ = mm.Abort()
		} else if cerr := mm.Close(); cerr != nil {
			err = cerr
		} else {
			rep.MintMap = job.MintMapPath
		}
	}
	if rw != nil {
		cerr := rw.Close()
		if cerr != nil && err == nil {
			err = cerr
		}
		if cerr == nil && rw.Count() > 0 { // never name a reject file that could not be written
			rep.Rejects = job.RejectsPath
		}
	}
	actx := context.WithoutCancel(ctx)
	s := rep.Summary
	detail := map[string]any{
		"inputs": job.Inputs, "read": s.Read, "minted": s.Minted, "replayed": s.Replayed, "rejected": s.Rejected,
		"draws": s.Draws, "collisions": s.Collisions, "elapsed_s": s.Elapsed.Seconds(),
		"batch": rc.BatchSize, "workers": rc.Workers, "mint_map": rep.MintMap, "rejects": rep.Rejects,
		"faults_ridden_out": rep.Stats.Faults,
	}
	runStatus(detail, err, s.Rejected)
	aerr := withFaults(actx, job.Mint.Retry, func(ctx context.Context) error {
		return l.AuditEvent(ctx, rep.Target.ClientID, rep.Target.Authority, "mint",
			"ark:"+rep.Target.NAAN+rep.Target.Shoulder, detail)
	})
	if aerr != nil && err == nil {
		err = aerr
	}
	return rep, err
}

// runStatus sets the status of a run's audit event detail: "failed" with the error when err is
// not nil, else "partial" when rows were rejected, else "done".
func runStatus(detail map[string]any, err error, rejected int64) {
	switch {
	case err != nil:
		detail["status"], detail["error"] = "failed", err.Error()
	case rejected > 0:
		detail["status"] = "partial"
	default:
		detail["status"] = "done"
	}
}

// shoulderCounters reads a shoulder's draw and collision counters.
func shoulderCounters(ctx context.Context, l *ledger.Ledger, shoulderID int64) (draws, collisions int64, err error) {
	err = l.Pool.QueryRow(ctx, `select coalesce(sum(draws), 0)::bigint, coalesce(sum(collisions), 0)::bigint
		from shoulder_tally where shoulder_id = $1`, shoulderID).Scan(&draws, &collisions)
	return draws, collisions, err
}
