package ledger

import (
	"context"
	"fmt"
	"sort"
)

// ImportFormatMintMap is import_run.format of a recovery from mint maps (arkhe import
// --input-format mint-map): the ARKs such a run put back were minted by arkhe and carry their
// mint receipts, like the ARKs of no import run.
const ImportFormatMintMap = "mint-map"

// Floor is what a ledger's counters must be at least after it was restored from a backup: the
// audit baseline file's numbers, kept outside the ledger (verify.ReadBaseline reads them).
// HighWater is the largest insertion number (ark.seq) the ledger had handed out; Draws are the
// blades each shoulder had drawn (shoulder_tally.draws), by label NAAN + shoulder as stored
// ("99999/x9").
type Floor struct {
	HighWater int64
	Draws     map[string]int64
}

// Raised is one counter RaiseCounters raised: What is "ark.seq" or "shoulder LABEL", Was the
// value before, To the value now. NoShoulder marks a label of the floor that names no
// registered shoulder (nothing was raised; Was and To are 0).
type Raised struct {
	What       string
	Was, To    int64
	NoShoulder bool
}

// RaiseCounters raises the ledger's counters to at least f through the ledger's function
// arkhe_raise_ark_seq, in q's transaction (or on its own when q is a pool): ark.seq's sequence
// (its next value is then above f.HighWater; on Citus the coordinator's) and each shoulder's
// draws. A counter already at or above its floor is left as it is, so a second call changes
// nothing. It returns the counters raised, in label order after ark.seq. Only the ledger's
// owner and operator may call the function: for any other role the error satisfies
// IsInsufficientPrivilege. A negative number is refused (SQLSTATE 22023).
func RaiseCounters(ctx context.Context, q querier, f Floor) ([]Raised, error) {
	labels := make([]string, 0, len(f.Draws))
	for l := range f.Draws {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	draws := make([]int64, len(labels))
	for i, l := range labels {
		draws[i] = f.Draws[l]
	}
	rows, err := q.Query(ctx, `select what, was, raised_to from arkhe_raise_ark_seq($1, $2, $3)`, f.HighWater, labels, draws)
	if err != nil {
		return nil, fmt.Errorf("raise the ledger's counters: %w", err)
	}
	defer rows.Close()
	var out []Raised
	for rows.Next() {
		var r Raised
		var was, to *int64
		if err := rows.Scan(&r.What, &was, &to); err != nil {
			return nil, fmt.Errorf("raise the ledger's counters: %w", err)
		}
		if was == nil || to == nil {
			r.NoShoulder = true
		} else {
			r.Was, r.To = *was, *to
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("raise the ledger's counters: %w", err)
	}
	return out, nil
}
