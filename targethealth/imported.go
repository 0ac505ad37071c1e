package targethealth

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/linkcheck"
)

// ImportedState is the state a legacy link checker kept for one ARK.
type ImportedState struct {
	// Key is the ledger key "NAAN/name".
	Key string
	// State is the state to store; State.Target is the target it is about and must be the
	// ARK's target in the ledger.
	State linkcheck.State
	// Events are appended to the ARK's link_event history with the state.
	Events []linkcheck.Transition
}

// ImportOutcome says what ImportStates did with one ImportedState.
type ImportOutcome int

// The outcomes of ImportStates.
const (
	// ImportStored: the state was stored.
	ImportStored ImportOutcome = iota
	// ImportNotInLedger: the ARK is not in the ledger; nothing is invented.
	ImportNotInLedger
	// ImportTargetDiffers: the ledger's target for the ARK is another URL; the state is about a
	// target the ARK no longer has, so it is not stored.
	ImportTargetDiffers
	// ImportKept: the ARK already has a link state (arkhe's own checks or an earlier import),
	// which is left alone: import never overwrites.
	ImportKept
)

// ImportResult is the outcome of one ImportedState; LedgerTarget is the ledger's target for
// ImportTargetDiffers ("" when the ARK has none).
type ImportResult struct {
	Outcome      ImportOutcome
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

// ImportStates stores legacy link-check states in tx, insert-only, recorded with import run
// runID; each state's due time follows policy (zero fields: the defaults). It returns one result
// per row, in order.
func ImportStates(ctx context.Context, tx pgx.Tx, runID int64, policy linkcheck.Policy, rows []ImportedState) ([]ImportResult, error) {
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
	out := make([]ImportResult, len(rows))
	for i, r := range rows {
		var found, inserted int64
		var url string
		if err := br.QueryRow().Scan(&found, &url, &inserted); err != nil {
			_ = br.Close()
			return nil, fmt.Errorf("import the link state of %s: %w", r.Key, err)
		}
		switch {
		case found == 0:
			out[i].Outcome = ImportNotInLedger
		case url != r.State.Target:
			out[i] = ImportResult{Outcome: ImportTargetDiffers, LedgerTarget: url}
		case inserted == 0:
			out[i].Outcome = ImportKept
		}
	}
	if err := br.Close(); err != nil {
		return nil, fmt.Errorf("import link states: %w", err)
	}
	return out, nil
}
