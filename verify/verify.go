package verify

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/arkhe-ledger/arkhe/ledger"
)

// Severity grades a check: an error breaks a promise of the ledger; a warning is a
// registration that will cause trouble but has not yet.
type Severity string

// The severities.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// The checks' stable names, the same in every run so schedulers and dashboards can
// key on them. The package documentation gives the rule behind each.
const (
	CheckSyntax             = "ark.syntax"
	CheckNormalized         = "ark.normalized"
	CheckWidth              = "ark.width"
	CheckCheckCharacter     = "ark.check_character"
	CheckNAANExists         = "ark.naan_exists"
	CheckShoulderExists     = "ark.shoulder_exists"
	CheckShoulderNAAN       = "ark.shoulder_naan"
	CheckShoulderPrefix     = "ark.shoulder_prefix"
	CheckMintedAfterRetired = "shoulder.minted_after_retired"
	CheckPinnedToRetired    = "client.pinned_to_retired"
	CheckReceiptARKExists   = "receipt.ark_exists"
	CheckReceiptNAAN        = "receipt.naan_of_client"
	CheckRequestUnique      = "receipt.request_unique"
	CheckReceiptMissing     = "ark.receipt_missing"
	CheckReceiptLayout      = "receipt.layout"
	CheckChangeChain        = "change.chain"
	CheckDigest             = "ledger.digest"
	CheckSchema             = "schema.triggers"
	CheckSignals            = "ledger.signals"
	CheckRollback           = "ledger.rollback"
)

// Check describes one audit check.
type Check struct {
	Name     string   // stable name, e.g. "ark.check_character"
	Severity Severity // error or warning
	Rule     string   // the rule, one line, with its source
}

// checks is the catalog, in report order.
var checks = [...]Check{
	{CheckSyntax, SeverityError, "the ledger key parses as an ARK and uses only the allowed characters (draft-kunze-ark §2, §3.2)"},
	{CheckNormalized, SeverityError, "the ledger key is stored in normalized form (draft-kunze-ark §3.2)"},
	{CheckWidth, SeverityError, "NAAN <= 16, name <= 255, key <= 272 octets"},
	{CheckCheckCharacter, SeverityError, "the check character verifies in the shoulder's zone (NCDA)"},
	{CheckNAANExists, SeverityError, "the ARK's NAAN is registered"},
	{CheckShoulderExists, SeverityError, "the ARK's shoulder is registered"},
	{CheckShoulderNAAN, SeverityError, "the ARK's shoulder belongs to its NAAN"},
	{CheckShoulderPrefix, SeverityError, "the name starts with its shoulder, the longest registered one that matches"},
	{CheckMintedAfterRetired, SeverityError, "no ARK was created in a shoulder after it was retired (retired is one-way)"},
	{CheckPinnedToRetired, SeverityWarning, "no active minting client is pinned to a retired shoulder"},
	{CheckReceiptARKExists, SeverityError, "every receipt points at an ARK in the ledger"},
	{CheckReceiptNAAN, SeverityError, "every receipt's client is registered and belongs to the ARK's NAAN"},
	{CheckRequestUnique, SeverityError, "no request ID of a client maps to two ARKs"},
	{CheckReceiptMissing, SeverityError, "every ARK minted by arkhe has its receipt"},
	{CheckReceiptLayout, SeverityError, "on one node a mint receipt is the ark row's request_id and payload_digest (read through mint_receipt): the receipt table holds none"},
	{CheckChangeChain, SeverityError, "each ARK's changes are numbered 1, 2, ... and each starts where the previous ended; the last ends at the current target and status, and its number is the ARK's change count"},
	{CheckDigest, SeverityError, "the ARKs recorded by the last clean audit are all still there, unaltered"},
	{CheckSchema, SeverityError, "the delete-refusing, append-only and ledger triggers exist, are enabled and unmodified"},
	{CheckSignals, SeverityError, "--since: nothing changed the ledger's tables behind its paths since the last full audit (file nodes, statistics counters, schema)"},
	{CheckRollback, SeverityError, "--baseline: no shoulder holds fewer ARKs or has fewer draws, and the ledger's high-water mark is not lower, than the baseline file kept outside the ledger recorded (an ARK is never deleted; a restored backup forgets published names, which random draws may hand out again)"},
}

// Checks returns the audit's checks in report order (a fresh slice).
func Checks() []Check { return append([]Check(nil), checks[:]...) }

// severityOf returns the severity of the check named name.
func severityOf(name string) Severity {
	for _, c := range checks {
		if c.Name == name {
			return c.Severity
		}
	}
	return SeverityError
}

// DefaultExamples is how many example subjects each check keeps when Config.Examples is 0.
const DefaultExamples = 10

// Config configures Run. The zero value runs a full audit keeping DefaultExamples examples.
type Config struct {
	// Since limits the ARK-level checks and change.chain to what changed since the last clean
	// audit (see the package documentation); without one, the audit is full.
	Since bool
	// Examples is how many example subjects each check keeps (the smallest, in byte order);
	// 0 means DefaultExamples, negative none.
	Examples int
	// Workers is how many goroutines check ARKs; 0 means runtime.GOMAXPROCS(0).
	Workers int
	// Findings, if set, receives every finding (not only the examples), from one goroutine at
	// a time, in no particular order. An error from it stops the audit.
	Findings func(FindingRow) error
	// Progress, if set, is called now and then with the number of ARKs checked so far, from
	// any goroutine.
	Progress func(arks int64)
	// ClientID is recorded as the audit event's client_id ("" for none).
	ClientID string
	// AcceptDigest records this audit's numbers as the next baseline even though ledger.digest
	// has findings (they are still reported), provided no other check has error findings: for
	// an operator who has investigated the differences (the audit event records it).
	AcceptDigest bool
	// Connections is how many connections the audit uses, 1 to 3 and never more than the pool
	// holds; 0 means one for a ledger whose ark table is under smallLedgerPages (2 MiB) on the
	// single layout, else three.
	Connections int
	// Baseline is the path of the baseline file kept outside the ledger ("" for none): the
	// largest ARK count and draws per shoulder, ARK count and high-water mark a full audit has
	// seen (JSON). ledger.rollback compares the ledger with it; a full audit without
	// ledger.rollback findings then replaces it atomically, each number the larger of the
	// file's and the ledger's. A file that does not exist yet is written by the first such
	// audit; one that cannot be read or parsed fails the audit before it starts.
	Baseline string
}

// Validate reports a Config that Run would refuse.
func (c Config) Validate() error {
	if c.Workers < 0 {
		return fmt.Errorf("verify: workers %d: want 0 (one per CPU) or more", c.Workers)
	}
	if c.Connections < 0 || c.Connections > lanes {
		return fmt.Errorf("verify: connections %d: want 0 (by the ledger's size) to %d", c.Connections, lanes)
	}
	return nil
}

// CheckResult is the outcome of one check.
type CheckResult struct {
	Check
	// Count is the number of findings: ARKs for ARK-level checks, receipts, clients, triggers,
	// or (ledger.digest) shoulders and blocks whose numbers differ.
	Count int64
	// Examples are up to Config.Examples subjects, the smallest in byte order: canonical ARKs
	// "ark:NAAN/name", or e.g. "shoulder 99999/x9", "client c1", "trigger ark_no_delete on ark".
	Examples []string
	// Note says how the check ran when it did not run in full, e.g. that ledger.digest had no
	// earlier audit to compare with; "" otherwise.
	Note string
}

// Result is what an audit found.
type Result struct {
	Started  time.Time     // when the audit's snapshot was taken (database clock)
	Duration time.Duration // wall time of Run
	// Full is false for an audit limited by Config.Since.
	Full bool
	// Baseline is the time of the clean audit the digest was compared with; nil when none.
	Baseline *time.Time
	// ARKs is the number of ARKs in the ledger; Checked those that went through the ARK-level
	// checks (all of them in a full audit).
	ARKs, Checked int64
	// Checks holds every check, in the order of Checks(), with zero counts for those that pass.
	Checks []CheckResult
	// SummaryStored is true when this audit recorded its audit_summary row (it had no error
	// findings, or only ledger.digest ones with Config.AcceptDigest), so the next one compares
	// with it.
	SummaryStored bool
	// Connections is how many connections the audit used (see Config.Connections).
	Connections int
	// BaselineWritten is true when this audit replaced (or created) Config.Baseline.
	BaselineWritten bool
}

// Findings returns the total number of findings.
func (r *Result) Findings() int64 {
	var n int64
	for _, c := range r.Checks {
		n += c.Count
	}
	return n
}

// Errors returns the number of findings of checks with severity error.
func (r *Result) Errors() int64 {
	var n int64
	for _, c := range r.Checks {
		if c.Severity == SeverityError {
			n += c.Count
		}
	}
	return n
}

// Clean reports whether the audit found nothing.
func (r *Result) Clean() bool { return r.Findings() == 0 }

// Check returns the result of the check named name (zero CheckResult if unknown).
func (r *Result) Check(name string) CheckResult {
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	return CheckResult{}
}

// recorder counts findings per check, keeps the smallest examples and forwards every finding
// to the sink. It is safe for concurrent use.
type recorder struct {
	mu       sync.Mutex
	keep     int
	counts   map[string]int64
	examples map[string][]string
	notes    map[string]string
	sink     func(FindingRow) error
	err      error // the first sink error
}

func newRecorder(keep int, sink func(FindingRow) error) *recorder {
	return &recorder{keep: keep, counts: map[string]int64{}, examples: map[string][]string{},
		notes: map[string]string{}, sink: sink}
}

// add records one finding of check about subject (an "ark:..." string or e.g. "client c1");
// arkStr is the canonical ARK the finding is about or "" when it is about no single ARK.
func (r *recorder) add(check, subject, arkStr, detail string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts[check]++
	ex := r.examples[check]
	if r.keep > 0 {
		i := sort.SearchStrings(ex, subject)
		if (i < len(ex) && ex[i] == subject) || (len(ex) == r.keep && i == len(ex)) {
			// a duplicate subject, or larger than every kept example
		} else {
			ex = append(ex, "")
			copy(ex[i+1:], ex[i:])
			ex[i] = subject
			if len(ex) > r.keep {
				ex = ex[:r.keep]
			}
			r.examples[check] = ex
		}
	}
	if r.sink != nil && r.err == nil {
		row := FindingRow{Check: check, Severity: string(severityOf(check)), Detail: detail}
		if arkStr != "" {
			a := arkStr
			row.ARK = &a
		}
		r.err = r.sink(row)
	}
}

// note adds note to the note of check (notes are joined by "; ").
func (r *recorder) note(check, note string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev := r.notes[check]; prev != "" {
		note = prev + "; " + note
	}
	r.notes[check] = note
}

// count returns the number of findings of check so far.
func (r *recorder) count(check string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[check]
}

// failed returns the first sink error, if any.
func (r *recorder) failed() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return fmt.Errorf("verify: write finding: %w", r.err)
	}
	return nil
}

// results returns the check results in catalog order.
func (r *recorder) results() []CheckResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]CheckResult, 0, len(checks))
	for _, c := range checks {
		out = append(out, CheckResult{Check: c, Count: r.counts[c.Name],
			Examples: append([]string(nil), r.examples[c.Name]...), Note: r.notes[c.Name]})
	}
	return out
}

// lanes is how many connections an audit uses at most: the ARK pass (with the digest), the
// receipts and clients, and change.chain with the catalog checks.
const lanes = 3

// smallLedgerPages is the size of the ark table, in 8 KiB pages (2 MiB), below which an audit
// runs on one connection by default: there, opening two more connections (a server process
// each) costs about as much as it saves.
const smallLedgerPages = 256

// audit is the state of one Run.
type audit struct {
	cfg      Config
	rec      *recorder
	snap     snapshotInfo // this audit's snapshot
	base     *baseline    // the last clean audit, nil when none
	usable   bool         // base's snapshot can be applied to this ledger (xmin comparisons)
	citus    bool         // the ledger's layout is LayoutCitus: no snapshot, seq or xid spans the nodes
	since    bool         // ARK-level checks limited to what changed since base
	arkPages int64        // the ark table's size in pages when the audit began (on Citus the coordinator's: 0)
	shoulder map[int64]*shoulderInfo
	naans    map[string]bool
	clients  map[int64]clientInfo
	changed  map[string]bool // ARKs with an ARK_CHANGE row the baseline could not see
	digest   digestResult
	receipts blockSum    // count and receiptHash sum of all receipts
	history  historySum  // ARKs with a history (the ARK pass), for change.chain
	chain    chainTotals // the ARK_CHANGE side of change.chain (full audit)
	sig      *signals    // this audit's tamper signals
	// the protected tables that refuse DELETE and UPDATE (signalTables)
	noDelete, appendOnly map[string]bool
	fresh                int64 // --since: ARKs numbered above the baseline's mark
	// receiptsInPass: receipts are ark columns read through the migrations' mint_receipt view
	// (the single layout), so the ARK pass reads them; else receiptTotals reads the view
	receiptsInPass bool
	// recoveryRuns are the import runs of recoveries from mint maps: their ARKs count as
	// minted by arkhe (they carry their receipts)
	recoveryRuns []int64
	// receiptNAANSuspect: some receipts may fail receipt.naan_of_client
	receiptNAANSuspect bool
	checked            int64
	file               *baselineFile    // Config.Baseline as read before the audit; nil when none
	draws              map[string]int64 // shoulder_tally.draws by shoulder label (read with Config.Baseline)
}

// Run audits the ledger behind l and returns what it found. Findings are not errors: Run
// returns an error only when the audit could not be completed (the ledger unreachable, a
// query refused, cfg invalid, the Findings sink failing), and then no summary is stored.
//
// The audit reads one consistent snapshot on up to three connections of l.Pool (repeatable
// read, read only; exported with pg_export_snapshot), then writes, in a separate transaction,
// its audit_summary row when it found no error, and in every case one audit_event row
// (action "verify", target "ledger", detail: counts per check, full or --since, whether the
// summary was stored; or the error). The ledger must be migrated (ledger.Ledger.Init).
func Run(ctx context.Context, l *ledger.Ledger, cfg Config) (*Result, error) {
	start := time.Now()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Workers == 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	keep := cfg.Examples
	if keep == 0 {
		keep = DefaultExamples
	}
	a := &audit{cfg: cfg, rec: newRecorder(keep, cfg.Findings)}
	if cfg.Baseline != "" {
		f, err := readBaselineFile(cfg.Baseline)
		if err != nil {
			return nil, err
		}
		a.file = f
	}
	res, err := a.run(ctx, l)
	if err != nil {
		detail := map[string]any{"error": err.Error(), "since": cfg.Since}
		if aerr := l.AuditEvent(context.WithoutCancel(ctx), cfg.ClientID, "", "verify", "ledger", detail); aerr != nil {
			err = errors.Join(err, aerr)
		}
		return nil, err
	}
	res.Duration = time.Since(start)
	detail := map[string]any{
		"full": res.Full, "arks": res.ARKs, "checked": res.Checked, "findings": res.Findings(),
		"errors": res.Errors(), "summary_stored": res.SummaryStored, "duration_ms": res.Duration.Milliseconds(),
		"accept_digest": cfg.AcceptDigest, "connections": res.Connections,
	}
	if cfg.Baseline != "" {
		detail["baseline_file"] = cfg.Baseline
		detail["baseline_file_written"] = res.BaselineWritten
	}
	counts := map[string]int64{}
	for _, c := range res.Checks {
		counts[c.Name] = c.Count
	}
	detail["checks"] = counts
	if res.Baseline != nil {
		detail["baseline"] = res.Baseline.UTC().Format(time.RFC3339Nano)
	}
	if err := l.AuditEvent(ctx, cfg.ClientID, "", "verify", "ledger", detail); err != nil {
		return res, fmt.Errorf("verify: %w", err)
	}
	return res, nil
}

// run does the audit proper.
func (a *audit) run(ctx context.Context, l *ledger.Ledger) (*Result, error) {
	conns := make([]*pgxpoolConn, 0, lanes)
	defer func() {
		for _, c := range conns {
			c.release(ctx)
		}
	}()
	flushOwnStatistics(ctx, l.Pool)
	lead, err := acquire(ctx, l, "")
	if err != nil {
		return nil, err
	}
	conns = append(conns, lead)
	if err := a.prepare(ctx, &lead.lane); err != nil {
		return nil, err
	}
	n := a.connections(l.Pool.Config().MaxConns)
	for len(conns) < n {
		c, err := acquire(ctx, l, a.snap.exported)
		if err != nil {
			return nil, err
		}
		conns = append(conns, c)
	}
	// Work per lane, balanced for three connections; with fewer, lanes share a connection.
	// On the single layout receipts are ark columns, which the ARK pass reads.
	work := [lanes][]func(context.Context, *lane) error{
		{a.arkPass},
		{a.clientCheck, a.schemaCheck},
		{a.requestUniqueCheck},
	}
	if !a.citus {
		work[1] = append(work[1], a.receiptTableCheck)
	}
	if !a.receiptsInPass {
		work[1] = append([]func(context.Context, *lane) error{a.receiptTotals, a.receiptNAANCheck}, work[1]...)
	}
	if a.since {
		work[2] = append(work[2], a.chainCheck)
	} else {
		work[2] = append(work[2], a.chainSums)
	}
	// What depends on the ARK pass and the counts of the other lanes, on the lead connection,
	// still in the snapshot; each runs a query only when its count shows a finding.
	after := []func(context.Context, *lane) error{a.receiptExact, a.compareBaselineFile}
	if a.receiptsInPass {
		after = append(after, a.receiptNAANCheck)
	}
	if a.since {
		a.rec.note(CheckDigest, fmt.Sprintf("--since: the digest was not recomputed; the tamper signals (%s) stand in for it until the next full audit", CheckSignals))
	} else {
		after = append(after, a.compareDigest, a.chainExact)
	}
	if a.cfg.Since && a.base != nil && (a.since || a.citus) {
		after = append(after, a.compareSignals)
	}
	g, gctx := errgroup.WithContext(ctx)
	for i := range conns {
		var mine []func(context.Context, *lane) error
		for j := i; j < lanes; j += len(conns) {
			mine = append(mine, work[j]...)
		}
		ln := &conns[i].lane
		g.Go(func() error {
			if err := a.ageReference(gctx, ln); err != nil {
				return err
			}
			for _, f := range mine {
				if err := f(gctx, ln); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := a.rec.failed(); err != nil {
		return nil, err
	}
	for _, f := range after {
		if err := f(ctx, &conns[0].lane); err != nil {
			return nil, err
		}
	}
	newest := ""
	if a.cfg.Baseline != "" && !a.since && a.digest.total.n > 0 {
		if newest, err = a.newestARK(ctx, &conns[0].lane, a.digest.mark); err != nil {
			return nil, err
		}
	}
	for _, c := range conns {
		if err := c.tx.Commit(ctx); err != nil {
			return nil, fmt.Errorf("verify: end snapshot: %w", err)
		}
	}
	for _, c := range conns {
		c.release(ctx)
	}
	used := len(conns)
	conns = nil
	if err := a.rec.failed(); err != nil {
		return nil, err
	}
	res := &Result{Started: a.snap.at, Full: !a.since, ARKs: a.digest.total.n, Checked: a.checked,
		Checks: a.rec.results(), Connections: used}
	if a.since {
		res.ARKs = a.base.count + a.fresh
	}
	if a.base != nil {
		t := a.base.at
		res.Baseline = &t
	}
	errs := res.Errors()
	if a.cfg.AcceptDigest {
		errs -= res.Check(CheckDigest).Count
	}
	if errs == 0 && !a.since {
		if err := a.storeSummary(ctx, l); err != nil {
			return nil, err
		}
		res.SummaryStored = true
	}
	if a.cfg.Baseline != "" && !a.since && res.Check(CheckRollback).Count == 0 {
		if err := writeBaselineFile(a.cfg.Baseline, a.nextBaselineFile(newest)); err != nil {
			return nil, err
		}
		res.BaselineWritten = true
	}
	return res, nil
}

// lane is one connection of the audit: its snapshot transaction and the reference its age()
// calls measure from.
type lane struct {
	tx  pgx.Tx
	age ageRef
}

// pgxpoolConn is one connection of the audit.
type pgxpoolConn struct {
	lane
	release func(context.Context)
}

// connections returns how many connections the audit uses (Config.Connections), at most
// poolSize; prepare has read the ark table's size.
func (a *audit) connections(poolSize int32) int {
	n := a.cfg.Connections
	if n == 0 {
		n = lanes
		// on Citus the coordinator's ark holds no rows: the size would be the shards'
		if !a.citus && a.arkPages < smallLedgerPages {
			n = 1
		}
	}
	return max(1, min(n, int(poolSize)))
}

// acquire takes a connection from l and starts a repeatable-read, read-only transaction on it,
// adopting snapshot when it is not "".
func acquire(ctx context.Context, l *ledger.Ledger, snapshot string) (*pgxpoolConn, error) {
	c, err := l.Pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("verify: connect: %w", err)
	}
	tx, err := c.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		c.Release()
		return nil, fmt.Errorf("verify: begin: %w", err)
	}
	pc := &pgxpoolConn{lane: lane{tx: tx}, release: func(ctx context.Context) {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		c.Release()
	}}
	if snapshot != "" {
		if _, err := tx.Exec(ctx, "set transaction snapshot '"+snapshot+"'"); err != nil {
			pc.release(ctx)
			return nil, fmt.Errorf("verify: share snapshot: %w", err)
		}
	}
	// work_mem is raised so that the set-based checks' hash joins and sorts stay in memory. JIT
	// compilation costs more than it saves on these single-pass scans.
	// The audit's connections already run in parallel: no parallel workers on top.
	if _, err := tx.Exec(ctx, "set local work_mem = '64MB'; set local jit = off; set local max_parallel_workers_per_gather = 0"); err != nil {
		pc.release(ctx)
		return nil, fmt.Errorf("verify: %w", err)
	}
	return pc, nil
}
