package importer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/legacy"
	"github.com/arkhe-ledger/arkhe/report"
	"github.com/arkhe-ledger/arkhe/textin"
)

// ReconcileConfig configures Reconcile (`arkhe reconcile`).
type ReconcileConfig struct {
	// Exports are the legacy export files compared with the ledger, read in order; gzip and xz
	// compressed files are read transparently.
	Exports []string
	// Format is the format of every export; "" detects it per file.
	Format legacy.Format
	// Out is the difference report's path and OutFormat its format (report.Parquet, CSV, JSONL).
	Out       string
	OutFormat report.Format
	// Apply accepts the export's value for every ARK whose target, status, tombstone reason, ERC
	// kernel, commitment or metadata differ: exactly one ARK_CHANGE row per changed ARK, through
	// ark_repoint (target only) or ark_apply_export (ledger/migrations/0001_ledger.sql), in the
	// same transaction as the comparison. ARKs only in the export, only in the ledger, spelled
	// differently, held twice in the exports with different values, or asked to go back to
	// reserved are reported and never changed.
	Apply bool
	// ClientID, if set, is the registered client the apply acts as (recorded as by_client).
	ClientID string
	// IncludeReserved and IncludeTest mean what they mean to `arkhe import`
	// (Config): without them an export's reserved ARK, or an ARK of the test NAAN
	// 99999, that the ledger does not hold is skipped and counted (ReservedSkipped, TestSkipped),
	// not reported as only_in_export, because a default import leaves it out. One the ledger
	// holds is compared as usual.
	IncludeReserved, IncludeTest bool
	// Progress, if set, is called with the number of records read so far, now and then.
	Progress func(read int64)
}

// Validate checks the configuration before anything is read.
func (c *ReconcileConfig) Validate() error {
	if len(c.Exports) == 0 {
		return errors.New("reconcile: give at least one export file")
	}
	if c.Out == "" {
		return errors.New("reconcile: no report path")
	}
	switch c.OutFormat {
	case report.Parquet, report.CSV, report.JSONL:
	default:
		return fmt.Errorf("reconcile: report format %v: want parquet, csv or jsonl", c.OutFormat)
	}
	if c.Format != "" {
		if _, err := legacy.ParseFormat(string(c.Format)); err != nil {
			return fmt.Errorf("reconcile: %w", err)
		}
	}
	for _, e := range c.Exports {
		if _, err := os.Stat(e); err != nil {
			return fmt.Errorf("reconcile: %w", err)
		}
	}
	return nil
}

// ReconcileSummary is what Reconcile found and did.
type ReconcileSummary struct {
	// Read counts every record read; Compared the export's ARK records compared with the ledger
	// (the staged ones less ReservedSkipped and TestSkipped).
	Read, Compared int64
	// SkippedNonARK counts identifiers of other schemes by kind; Registry the NAAN, shoulder and
	// refused records, which reconcile does not compare.
	SkippedNonARK map[string]int64
	Registry      int64
	// ReservedSkipped and TestSkipped count export ARKs absent from the ledger that were left
	// out because they are reserved or of the test NAAN 99999 (see ReconcileConfig.IncludeReserved).
	ReservedSkipped, TestSkipped int64
	// Rejected counts records that could not be read or normalized; FirstRejects holds the first
	// few of them (file, line, reason).
	Rejected     int64
	FirstRejects []string
	// Truncated lists the exports that end mid-record (every complete record was compared).
	Truncated []*legacy.TruncatedError
	// Kinds counts differences per kind (DiffOnlyInExport, ...): one per report row,
	// except status_differs, counted once per ARK (a status and its tombstone reason are one
	// difference, reported as up to two rows).
	Kinds map[string]int64
	// Rows is the number of report rows; Report the report's path.
	Rows   int64
	Report string
	// Covered is the number of shoulders the exports cover: only_in_ledger is limited to them.
	Covered int
	// Ambiguous counts ARKs the exports hold more than once with different values (never applied).
	Ambiguous int64
	// Applied counts ARKs changed by --apply: Repointed through ark_repoint, Changed through
	// ark_apply_export (status, reason, ERC, metadata); NotApplied those held back (ambiguous, or
	// a status going back to reserved).
	Repointed, Changed, NotApplied int64
	Elapsed                        time.Duration
}

// Findings reports whether anything differs or could not be read (exit 1).
func (s *ReconcileSummary) Findings() bool {
	return s.Rows > 0 || s.Rejected > 0 || len(s.Truncated) > 0
}

// reconcileStageDDL holds the exports' ARKs, normalized exactly as `arkhe import` does
// (legacy.NormalizeRecord), in the order read.
const reconcileStageDDL = `create temp table reconcile_stage (
	seq         bigint not null,
	ark         text collate "C" not null,
	shoulder_id bigint,
	spelling    text,
	url         text,
	status      text not null,
	reason      text,
	erc_who     text,
	erc_what    text,
	erc_when    text,
	commitment  text,
	metadata    jsonb,
	source      text not null,
	skip        text
) on commit drop`

var reconcileStageColumns = []string{"seq", "ark", "shoulder_id", "spelling", "url", "status", "reason", "erc_who",
	"erc_what", "erc_when", "commitment", "metadata", "source", "skip"}

// reconcileDiffSQL compares each staged ARK with the ledger, in export order.
const reconcileDiffSQL = `select s.ark, s.source, s.spelling, s.url, s.status, s.reason, s.erc_who, s.erc_what, s.erc_when,
	s.commitment, s.metadata::text, s.shoulder_id,
	a.ark is not null, a.original, a.url, ark_status_text(a.status), a.tombstone_reason, a.erc_who, a.erc_what, a.erc_when,
	a.commitment, a.metadata::text, a.shoulder_id, s.metadata is distinct from a.metadata, s.skip
from reconcile_stage s left join ark a on a.ark = s.ark
order by s.seq`

// reconcileOnlyInLedgerSQL lists the ledger's ARKs in the covered shoulders that no export holds.
const reconcileOnlyInLedgerSQL = `select a.ark, a.url from ark a
where a.shoulder_id = any($1::bigint[]) and not exists (select 1 from reconcile_stage s where s.ark = a.ark)
order by a.ark`

// reconcileOnlyInLedgerCitusSQL is reconcileOnlyInLedgerSQL for the citus layout: Citus plans
// no correlated subquery between a distributed table and a local (temporary) one; as an outer
// join the staged keys are read once and joined on every shard.
const reconcileOnlyInLedgerCitusSQL = `select a.ark, a.url from ark a
left join (select ark from reconcile_stage) s on s.ark = a.ark
where a.shoulder_id = any($1::bigint[]) and s.ark is null
order by a.ark`

// reconcileApplySQL accepts the exports' values: one call per changed ARK, in key order. An ARK
// the exports hold twice with different values, or whose status would go back to reserved, is
// left alone.
const reconcileApplySQL = reconcileChangedCTE + `
select count(*) filter (where done = 'repointed'), count(*) filter (where done = 'changed'),
	count(*) filter (where done = 'held')
from (select ` + reconcileApplyCall + ` as done
	from (select * from d where d_url or d_other order by ark) d) x`

// reconcileChangedCTE is d: the staged ARKs the exports hold once (or identically), joined
// with the ledger's, with what differs (d_url, d_other) and whether the status would go back
// to reserved.
const reconcileChangedCTE = `with s as (
	select distinct on (ark) * from (
		select r.*, min(r.h) over (partition by r.ark) as hmin, max(r.h) over (partition by r.ark) as hmax
		from (select r.*, md5((r.url, r.status, r.reason, r.erc_who, r.erc_what, r.erc_when, r.commitment, r.metadata)::text) as h
		      from reconcile_stage r) r) r
	where hmin = hmax
	order by ark, seq),
d as (
	select s.*, a.url is distinct from s.url as d_url,
		(ark_status_text(a.status), a.tombstone_reason, a.erc_who, a.erc_what, a.erc_when, a.commitment, a.metadata)
		is distinct from (s.status, s.reason, s.erc_who, s.erc_what, s.erc_when, s.commitment, s.metadata) as d_other,
		s.status = 'reserved' and a.status is distinct from 'reserved' as to_reserved
	from s join ark a on a.ark = s.ark)`

// reconcileApplyCall applies one row of d: held, repointed (ark_repoint) or changed
// (ark_apply_export); $1 the client, $2 by_text, $3 the run.
const reconcileApplyCall = `case
		when to_reserved then 'held'
		when not d_other then case when ark_repoint(ark, url, $1::bigint, $2::text, now(), $3::bigint) then 'repointed' end
		else case when ark_apply_export(ark, url, status, reason, erc_who, erc_what, erc_when, commitment, metadata,
		                                $1::bigint, $2::text, $3::bigint) then 'changed' end
		end`

// reconcileTodoCitusSQL and reconcileApplyCitusSQL are reconcileApplySQL in two statements for
// the citus layout: Citus would push a query joining ark down to the shards, where the repoint
// functions' own distributed queries are refused; so the rows to change are kept in a local
// temporary table first, and the functions are called from a query over it alone, on the
// coordinator.
const (
	reconcileTodoCitusSQL = `create temp table reconcile_todo on commit drop as ` + reconcileChangedCTE + `
select * from d where d_url or d_other`
	reconcileApplyCitusSQL = `select count(*) filter (where done = 'repointed'), count(*) filter (where done = 'changed'),
	count(*) filter (where done = 'held')
from (select ` + reconcileApplyCall + ` as done
	from (select * from reconcile_todo order by ark) d) x`
)

// reconcileAmbiguousSQL counts ARKs held more than once with different values.
const reconcileAmbiguousSQL = `select count(*) from (select ark from reconcile_stage
	group by ark having count(distinct md5((url, status, reason, erc_who, erc_what, erc_when, commitment, metadata)::text)) > 1) x`

// Staged skip marks: why `arkhe import` would leave an export ARK out by default.
const (
	reconcileSkipTest     = "test"
	reconcileSkipReserved = "reserved"
)

// reconcileMaxFirstRejects bounds ReconcileSummary.FirstRejects.
const reconcileMaxFirstRejects = 5

// Reconcile compares legacy exports with the ledger and writes the differences to a report
// (DiffRow): only_in_export, only_in_ledger (limited to the shoulders the exports cover),
// target_differs, status_differs (status or tombstone reason), metadata_differs (ERC who, what,
// when, commitment, metadata; one row per field), spelling_only (the export spells the ARK
// differently from the ledger's recorded spelling beyond the label form and NMA). Records are normalized exactly as `arkhe import` does; non-ARK identifiers are
// skipped and counted.
//
// It streams in bounded memory whatever the sizes: the exports are COPYed into a temporary table
// in one pass, then compared by key set-based on the server (a left join and an anti join), and
// the result streamed into the report; Go holds only the set of covered shoulders. The
// comparison runs in one repeatable-read transaction; with cfg.Apply the changes are made in
// that same transaction (see ReconcileConfig.Apply) and recorded as an import run of command
// "reconcile", whose by_text names the export files and their digests.
//
// The report is written whatever it holds (an empty report says "no differences"). Errors: a
// configuration or reading error, a database error (the transaction is rolled back: nothing is
// applied), a report write error.
func Reconcile(ctx context.Context, l *ledger.Ledger, cfg ReconcileConfig) (ReconcileSummary, error) {
	start := time.Now()
	sum := ReconcileSummary{Kinds: map[string]int64{}}
	if err := cfg.Validate(); err != nil {
		return sum, err
	}
	conn, err := l.Pool.Acquire(ctx)
	if err != nil {
		return sum, fmt.Errorf("reconcile: %w", err)
	}
	defer conn.Release()
	clientPK, err := reconcileClient(ctx, conn, cfg.ClientID)
	if err != nil {
		return sum, err
	}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		return sum, fmt.Errorf("reconcile: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var layout string
	if err := tx.QueryRow(ctx, `select arkhe_layout()`).Scan(&layout); err != nil {
		return sum, fmt.Errorf("reconcile: read the ledger's layout: %w", err)
	}
	citus := ledger.Layout(layout) == ledger.LayoutCitus
	onlyInLedger := reconcileOnlyInLedgerSQL
	if citus {
		onlyInLedger = reconcileOnlyInLedgerCitusSQL
	}
	if _, err := tx.Exec(ctx, reconcileStageDDL); err != nil {
		return sum, fmt.Errorf("reconcile: staging table: %w", err)
	}
	digests, err := reconcileStage(ctx, tx, &cfg, &sum)
	if err != nil {
		return sum, err
	}
	if _, err := tx.Exec(ctx, `create index on reconcile_stage (ark); analyze reconcile_stage`); err != nil {
		return sum, fmt.Errorf("reconcile: index the staged export: %w", err)
	}

	w, err := report.Create[DiffRow](cfg.Out, cfg.OutFormat)
	if err != nil {
		return sum, fmt.Errorf("reconcile: %w", err)
	}
	defer w.Abort()
	covered := map[int64]struct{}{}
	if err := reconcileCompare(ctx, tx, w, &sum, covered, cfg.IncludeReserved, cfg.IncludeTest); err != nil {
		return sum, err
	}
	sum.Compared -= sum.ReservedSkipped + sum.TestSkipped
	ids := make([]int64, 0, len(covered))
	for id := range covered {
		ids = append(ids, id)
	}
	sum.Covered = len(ids)
	if err := reconcileOnlyInLedger(ctx, tx, onlyInLedger, w, &sum, ids); err != nil {
		return sum, err
	}
	if err := tx.QueryRow(ctx, reconcileAmbiguousSQL).Scan(&sum.Ambiguous); err != nil {
		return sum, fmt.Errorf("reconcile: %w", err)
	}
	if cfg.Apply {
		if err := reconcileApply(ctx, tx, &cfg, &sum, clientPK, digests, citus); err != nil {
			return sum, err
		}
	}
	sum.Rows = w.Rows()
	if err := w.Close(); err != nil {
		return sum, fmt.Errorf("reconcile: %w", err)
	}
	sum.Report = cfg.Out
	if err := tx.Commit(ctx); err != nil {
		return sum, fmt.Errorf("reconcile: commit: %w", err)
	}
	sum.Elapsed = time.Since(start)
	return sum, nil
}

// reconcileClient returns the key of the active client clientID the applied changes are
// recorded as, nil for "" (none).
func reconcileClient(ctx context.Context, conn *pgxpool.Conn, clientID string) (*int64, error) {
	if clientID == "" {
		return nil, nil
	}
	var pk int64
	var active bool
	if err := conn.QueryRow(ctx, `select id, active from client where client_id = $1`, clientID).Scan(&pk, &active); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("reconcile: client %q is not registered", clientID)
		}
		return nil, fmt.Errorf("reconcile: read client: %w", err)
	}
	if !active {
		return nil, fmt.Errorf("reconcile: client %s is not active", clientID)
	}
	return &pk, nil
}

// reconcileStage COPYs the ARK records of every export, normalized as `arkhe import` does, into
// reconcile_stage (created by the caller), counting what it read into sum, and returns each
// export's "sha256:<hex>  <base name>".
func reconcileStage(ctx context.Context, tx pgx.Tx, cfg *ReconcileConfig, sum *ReconcileSummary) ([]string, error) {
	index, err := LoadShoulderIndex(ctx, tx)
	if err != nil {
		return nil, fmt.Errorf("reconcile: %w", err)
	}
	digests := make([]string, 0, len(cfg.Exports))
	src := &reconcileSource{sum: sum, index: index, progress: cfg.Progress}
	for _, path := range cfg.Exports {
		d, err := src.open(ctx, path, cfg.Format)
		if err != nil {
			return nil, err
		}
		_, err = tx.CopyFrom(ctx, pgx.Identifier{"reconcile_stage"}, reconcileStageColumns, src)
		if cerr := src.close(); err == nil {
			err = cerr
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("reconcile %s: %w", path, err)
		}
		digests = append(digests, d+"  "+filepath.Base(path))
	}
	sum.Compared = src.seq
	return digests, nil
}

// reconcileCompare streams the left join into the report and collects the covered shoulders.
// An export ARK absent from the ledger that is reserved or of the test NAAN is counted as skipped
// unless includeReserved or includeTest says otherwise; an only_in_export row carries the export's
// target (field "target") and says why the ledger lacks the ARK in its note.
func reconcileCompare(ctx context.Context, tx pgx.Tx, w *report.Writer[DiffRow], sum *ReconcileSummary, covered map[int64]struct{}, includeReserved, includeTest bool) error {
	rows, err := tx.Query(ctx, reconcileDiffSQL)
	if err != nil {
		return fmt.Errorf("reconcile: compare: %w", err)
	}
	defer rows.Close()
	out := &diffOut{w: w, sum: sum, batch: make([]DiffRow, 0, 1024)}
	for rows.Next() {
		var p stagedPair
		if err := rows.Scan(&p.key, &p.source, &p.sSpelling, &p.sURL, &p.sStatus, &p.sReason, &p.sWho, &p.sWhat, &p.sWhen, &p.sCommit, &p.sMeta, &p.sShoulder,
			&p.found, &p.aOriginal, &p.aURL, &p.aStatus, &p.aReason, &p.aWho, &p.aWhat, &p.aWhen, &p.aCommit, &p.aMeta, &p.aShoulder, &p.metaDiffers, &p.skip); err != nil {
			return fmt.Errorf("reconcile: compare: %w", err)
		}
		if !p.found {
			switch {
			case p.skip != nil && *p.skip == reconcileSkipTest && !includeTest:
				sum.TestSkipped++
				continue
			case p.skip != nil && *p.skip == reconcileSkipReserved && !includeReserved:
				sum.ReservedSkipped++
				continue
			}
		}
		if p.sShoulder != nil {
			covered[*p.sShoulder] = struct{}{}
		}
		if !p.found {
			if err := out.emit(DiffOnlyInExport, "ark:"+p.key, reconcileStrp("target"), p.sURL, nil, &p.source, p.whyMissing()); err != nil {
				return err
			}
			continue
		}
		covered[*p.aShoulder] = struct{}{}
		if err := out.differences(&p); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reconcile: compare: %w", err)
	}
	return out.flush()
}

// stagedPair is one row of reconcileDiffSQL: a staged export ARK (s...) and the ledger's row
// of it (a..., found false when the ledger has none).
type stagedPair struct {
	key, source, sStatus                                           string
	sSpelling, sURL, sReason, sWho, sWhat, sWhen, sCommit, sMeta   *string
	sShoulder, aShoulder                                           *int64
	found, metaDiffers                                             bool
	aOriginal, aURL, aStatus, aReason, aWho, aWhat, aWhen, aCommit *string
	aMeta, skip                                                    *string
}

// whyMissing is the note of an only_in_export row: why the ledger lacks the ARK.
func (p *stagedPair) whyMissing() string {
	switch {
	case p.skip != nil && *p.skip == reconcileSkipTest:
		return "an ARK of the test NAAN 99999 (arkhe import leaves it out without --include-test)"
	case p.skip != nil && *p.skip == reconcileSkipReserved:
		return "reserved in the export (arkhe import leaves it out without --include-reserved)"
	case p.sShoulder == nil:
		return "its NAAN or shoulder is not registered in the ledger (arkhe import creates the shoulder reserved)"
	}
	return "not imported (arkhe import brings it in)"
}

// diffOut writes DiffRows to the report in batches, counting them by kind in sum.Kinds.
type diffOut struct {
	w     *report.Writer[DiffRow]
	sum   *ReconcileSummary
	batch []DiffRow
}

// emit adds one DiffRow (note: at most one).
func (o *diffOut) emit(kind, arkStr string, field *string, exp, led *string, source *string, note ...string) error {
	r := DiffRow{Kind: kind, ARK: arkStr, Field: field, ExportValue: exp, LedgerValue: led, Source: source}
	if len(note) > 0 {
		r.Note = &note[0]
	}
	o.batch = append(o.batch, r)
	o.sum.Kinds[kind]++
	if len(o.batch) == cap(o.batch) {
		return o.flush()
	}
	return nil
}

// flush writes the rows emitted since the last flush.
func (o *diffOut) flush() error {
	if len(o.batch) == 0 {
		return nil
	}
	if err := o.w.Write(o.batch...); err != nil {
		return fmt.Errorf("reconcile: %w", err)
	}
	o.batch = o.batch[:0]
	return nil
}

// differences emits the differences of an ARK both sides hold: target, status and tombstone
// reason (counted as one status difference), each ERC field and the metadata, and the spelling
// (the export's against the ledger's recorded one; nil on either side is the canonical key).
func (o *diffOut) differences(p *stagedPair) error {
	arkStr, src := "ark:"+p.key, &p.source
	if !legacy.SameText(p.sURL, p.aURL) {
		if err := o.emit(DiffTargetDiffers, arkStr, reconcileStrp("target"), p.sURL, p.aURL, src); err != nil {
			return err
		}
	}
	statusRows := 0
	if p.aStatus == nil || *p.aStatus != p.sStatus {
		statusRows++
		if err := o.emit(DiffStatusDiffers, arkStr, reconcileStrp("status"), &p.sStatus, p.aStatus, src); err != nil {
			return err
		}
	}
	if !legacy.SameText(p.sReason, p.aReason) {
		statusRows++
		if err := o.emit(DiffStatusDiffers, arkStr, reconcileStrp("tombstone_reason"), p.sReason, p.aReason, src); err != nil {
			return err
		}
	}
	if statusRows == 2 { // one difference: the status and its tombstone reason
		o.sum.Kinds[DiffStatusDiffers]--
	}
	for _, f := range []struct {
		name     string
		exp, led *string
	}{{"who", p.sWho, p.aWho}, {"what", p.sWhat, p.aWhat}, {"when", p.sWhen, p.aWhen}, {"commitment", p.sCommit, p.aCommit}} {
		if !legacy.SameText(f.exp, f.led) {
			if err := o.emit(DiffMetadataDiffers, arkStr, reconcileStrp(f.name), f.exp, f.led, src); err != nil {
				return err
			}
		}
	}
	if p.metaDiffers {
		if err := o.emit(DiffMetadataDiffers, arkStr, reconcileStrp("metadata"), p.sMeta, p.aMeta, src); err != nil {
			return err
		}
	}
	expSpelling, ledSpelling := p.key, p.key
	if p.sSpelling != nil {
		expSpelling = *p.sSpelling
	}
	if p.aOriginal != nil {
		ledSpelling = *p.aOriginal
	}
	if expSpelling != ledSpelling {
		return o.emit(DiffSpellingOnly, arkStr, nil, &expSpelling, &ledSpelling, src)
	}
	return nil
}

// reconcileOnlyInLedger streams the covered shoulders' ARKs no export holds into the report, by
// query (reconcileOnlyInLedgerSQL or its citus form).
func reconcileOnlyInLedger(ctx context.Context, tx pgx.Tx, query string, w *report.Writer[DiffRow], sum *ReconcileSummary, shoulders []int64) error {
	if len(shoulders) == 0 {
		return nil
	}
	rows, err := tx.Query(ctx, query, shoulders)
	if err != nil {
		return fmt.Errorf("reconcile: only in ledger: %w", err)
	}
	defer rows.Close()
	batch := make([]DiffRow, 0, 1024)
	for rows.Next() {
		var key string
		var url *string
		if err := rows.Scan(&key, &url); err != nil {
			return fmt.Errorf("reconcile: only in ledger: %w", err)
		}
		batch = append(batch, DiffRow{Kind: DiffOnlyInLedger, ARK: "ark:" + key, LedgerValue: url})
		sum.Kinds[DiffOnlyInLedger]++
		if len(batch) == cap(batch) {
			if err := w.Write(batch...); err != nil {
				return fmt.Errorf("reconcile: %w", err)
			}
			batch = batch[:0]
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reconcile: only in ledger: %w", err)
	}
	if len(batch) > 0 {
		if err := w.Write(batch...); err != nil {
			return fmt.Errorf("reconcile: %w", err)
		}
	}
	return nil
}

// reconcileApply accepts the exports' values (ReconcileConfig.Apply) as one recorded run: an
// import_run row and one audit event (ledger.ActionReconcileApply); citus says the ledger's
// layout is LayoutCitus.
func reconcileApply(ctx context.Context, tx pgx.Tx, cfg *ReconcileConfig, sum *ReconcileSummary, clientPK *int64, digests []string, citus bool) error {
	format := string(cfg.Format)
	if format == "" {
		format = "detected"
	}
	var run int64
	sources := make([]string, len(cfg.Exports))
	for i, e := range cfg.Exports {
		sources[i] = SourcePath(e)
	}
	if err := tx.QueryRow(ctx, `insert into import_run (source_file, format, digest, command, client_pk)
		values ($1, $2, $3, 'reconcile', $4) returning id`,
		strings.Join(sources, "\n"), format, strings.Join(digests, "\n"), clientPK).Scan(&run); err != nil {
		return fmt.Errorf("reconcile: record the run: %w", err)
	}
	names := make([]string, 0, len(digests))
	for _, d := range digests {
		names = append(names, d[:len("sha256:")+12]+" "+d[strings.Index(d, "  ")+2:])
	}
	by := "arkhe reconcile --apply " + strings.Join(names, ", ")
	apply := reconcileApplySQL
	if citus {
		if _, err := tx.Exec(ctx, reconcileTodoCitusSQL); err != nil {
			return fmt.Errorf("reconcile: apply: %w", err)
		}
		apply = reconcileApplyCitusSQL
	}
	if err := tx.QueryRow(ctx, apply, clientPK, by, run).Scan(&sum.Repointed, &sum.Changed, &sum.NotApplied); err != nil {
		return fmt.Errorf("reconcile: apply: %w", err)
	}
	sum.NotApplied += sum.Ambiguous
	counts := fmt.Sprintf(`{"compared": %d, "repointed": %d, "changed": %d, "not_applied": %d}`, sum.Compared, sum.Repointed, sum.Changed, sum.NotApplied)
	// statement_timestamp(): Citus refuses a volatile function in an UPDATE of a reference table
	if _, err := tx.Exec(ctx, `update import_run set finished_at = statement_timestamp(), counts = $2::jsonb where id = $1`, run, counts); err != nil {
		return fmt.Errorf("reconcile: record the run: %w", err)
	}
	// the run's audit event; each ARK's change is its ARK_CHANGE row
	err := ledger.RecordEvent(ctx, tx, ledger.Event{Action: ledger.ActionReconcileApply, ClientID: cfg.ClientID,
		Target: strings.Join(sources, "\n"), Detail: map[string]any{"compared": sum.Compared, "repointed": sum.Repointed,
			"changed": sum.Changed, "not_applied": sum.NotApplied, "digests": digests}})
	if err != nil {
		return fmt.Errorf("reconcile: %w", err)
	}
	return nil
}

func reconcileStrp(s string) *string { return &s }

// reconcileSource is the pgx.CopyFromSource over the ARK records of one export at a time:
// records are read, normalized and staged in one stream.
type reconcileSource struct {
	sum      *ReconcileSummary
	index    *legacy.ShoulderIndex
	progress func(int64)

	f    *os.File
	r    legacy.Reader
	path string
	ctx  context.Context
	seq  int64
	vals [14]any
	err  error
}

// open starts reading path and returns "sha256:<hex>" of the file's bytes as stored.
func (s *reconcileSource) open(ctx context.Context, path string, format legacy.Format) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("reconcile: %w", err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		f.Close()
		return "", fmt.Errorf("reconcile: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return "", fmt.Errorf("reconcile: %w", err)
	}
	r, err := legacy.NewReader(f, path, format)
	if err != nil {
		f.Close()
		return "", fmt.Errorf("reconcile: %w", err)
	}
	s.f, s.r, s.path, s.ctx, s.err = f, r, path, ctx, nil
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

func (s *reconcileSource) close() error {
	s.r.Close()
	err := s.f.Close()
	if s.err != nil {
		return s.err
	}
	return err
}

// Next reads up to the next ARK record, counting everything else.
func (s *reconcileSource) Next() bool {
	for {
		it, err := s.r.Next(s.ctx)
		if err == io.EOF {
			return false
		}
		if err != nil {
			var re *textin.RowError
			var te *legacy.TruncatedError
			switch {
			case errors.As(err, &re):
				s.sum.Read++
				s.reject(re.Error())
				continue
			case errors.As(err, &te):
				s.sum.Truncated = append(s.sum.Truncated, te)
				continue
			default:
				s.err = err
				return false
			}
		}
		s.sum.Read++
		if s.progress != nil && s.sum.Read%65536 == 0 {
			s.progress(s.sum.Read)
		}
		rec := it.Record
		if rec == nil {
			s.sum.Registry++
			continue
		}
		if rec.Kind != "ark" {
			if s.sum.SkippedNonARK == nil {
				s.sum.SkippedNonARK = map[string]int64{}
			}
			s.sum.SkippedNonARK[rec.Kind]++
			continue
		}
		row, err := legacy.NormalizeRecord(rec)
		if err != nil {
			s.reject(err.Error()) // LOC: ID: field F: reason
			continue
		}
		for _, r := range row.Refused { // the row itself is compared as import keeps it: reserved, without the value
			s.reject(r.Error() + "; " + KeptReservedNote)
		}
		s.seq++
		var shoulder *int64
		e := s.index.Longest(row.ARK.NAAN, row.ARK.Name)
		if e == nil {
			e = s.index.Get(row.ARK.NAAN, row.ARK.Shoulder)
		}
		if e != nil {
			id := e.ID
			shoulder = &id
		}
		loc := rec.Source.String()
		v := &s.vals
		v[0], v[1], v[2], v[3], v[4], v[5], v[6] = s.seq, row.Key(), shoulder, row.Original, row.Target, row.Status, row.Reason
		var skip *string
		switch {
		case row.ARK.NAAN == TestNAAN:
			skip = reconcileStrp(reconcileSkipTest)
		case row.Status == "reserved" && len(row.Refused) == 0:
			skip = reconcileStrp(reconcileSkipReserved)
		}
		v[7], v[8], v[9], v[10], v[11], v[12], v[13] = row.Who, row.What, row.When, row.Commitment, row.Metadata, loc, skip
		return true
	}
}

func (s *reconcileSource) reject(msg string) {
	s.sum.Rejected++
	if len(s.sum.FirstRejects) < reconcileMaxFirstRejects {
		s.sum.FirstRejects = append(s.sum.FirstRejects, msg)
	}
}

func (s *reconcileSource) Values() ([]any, error) { return s.vals[:], nil }

func (s *reconcileSource) Err() error { return s.err }
