package verify

import (
	"context"
	"fmt"
	"strconv"
)

// change.chain's fast path for the clean case. Per ARK with a history, the last ARK_CHANGE row
// must end where the ARK is: its number is the ARK's change count (change_seq), its after target
// the ARK's target, its after status (when recorded) the ARK's status. Instead of looking up
// every such ARK, the full audit compares two multisets by count and a sum of 64-bit hashes:
// on the ARK_CHANGE side the last rows' (ARK, number, after target) and (ARK, after status),
// summed by the server; on the ARK side the same of every ARK with change_seq > 0, summed by
// the ARK pass from columns it streams anyway. The server also counts the rows that break the
// chain inside the history (a gap in the numbers, a row that does not start where the previous
// ended). Only when a count or sum differs, or a last row has no status recorded (its status
// is then not compared), does the exact query (chainCheck) run and name the ARKs.

// historyHash is the SQL of the two per-ARK hashes over the last ARK_CHANGE rows (alias x); the
// ARK pass computes the same with historySum.add. The parts are joined by chr(1), which no
// ledger key contains, and a target is marked 'u' (present) or 'n' (none).
const (
	historyTargetHash = `hashtextextended(x.ark || chr(1) || x.seq::text || chr(1) || coalesce('u' || x.after_url, 'n'), 0)`
	historyStatusHash = `hashtextextended(x.ark || chr(1) || x.after_status, 0)`
)

// historySum is the ARK side of the comparison: how many ARKs have a history, and the sums of
// their target and status hashes.
type historySum struct {
	n              int64
	target, status uint64
}

// add adds one ARK with a history: its key, change count, target (nil for none) and status;
// buf is scratch space reused between calls.
func (h *historySum) add(key []byte, changes int32, url, status []byte, buf *[]byte) {
	b := append((*buf)[:0], key...)
	b = append(b, 1)
	b = strconv.AppendInt(b, int64(changes), 10)
	b = append(b, 1)
	if url == nil {
		b = append(b, 'n')
	} else {
		b = append(b, 'u')
		b = append(b, url...)
	}
	h.target += hashTextExtended(b, 0)
	b = append(b[:len(key)], 1)
	b = append(b, status...)
	h.status += hashTextExtended(b, 0)
	h.n++
	*buf = b
}

func (h *historySum) merge(o historySum) {
	h.n += o.n
	h.target += o.target
	h.status += o.status
}

// chainTotals is the ARK_CHANGE side: the rows that break the chain inside a history, the last
// rows without a status, and the count and sums of the last rows.
type chainTotals struct {
	breaks, noStatus int64
	last             historySum
}

// chainSums reads chainTotals in one pass over ARK_CHANGE (sorted per ARK by number).
func (a *audit) chainSums(ctx context.Context, ln *lane) error {
	q := fmt.Sprintf(`select
			count(*) filter (where x.seq <> x.rn or (x.rn > 1 and (x.before_url is distinct from x.prev_url or x.before_status <> x.prev_status))),
			count(*) filter (where x.last and x.after_status is null),
			count(*) filter (where x.last),
			coalesce(sum(%s) filter (where x.last), 0)::text,
			coalesce(sum(%s) filter (where x.last and x.after_status is not null), 0)::text
		from (select c.ark, c.seq, c.before_url, c.after_url, c.before_status, c.after_status,
		             lag(c.after_url) over w as prev_url, lag(c.after_status) over w as prev_status,
		             row_number() over w as rn, lead(c.seq) over w is null as last
		      from ark_change c
		      window w as (partition by c.ark order by c.seq)) x`, historyTargetHash, historyStatusHash)
	var t chainTotals
	var target, status string
	if err := ln.tx.QueryRow(ctx, q).Scan(&t.breaks, &t.noStatus, &t.last.n, &target, &status); err != nil {
		return fmt.Errorf("verify: %s: %w", CheckChangeChain, err)
	}
	var err error
	if t.last.target, err = sumMod64(target); err != nil {
		return fmt.Errorf("verify: %s: %w", CheckChangeChain, err)
	}
	if t.last.status, err = sumMod64(status); err != nil {
		return fmt.Errorf("verify: %s: %w", CheckChangeChain, err)
	}
	a.chain = t
	return nil
}

// chainExact runs the exact change.chain query when chainSums and the ARK pass (both run
// before) leave a doubt; see above.
func (a *audit) chainExact(ctx context.Context, ln *lane) error {
	t := a.chain
	if t.breaks == 0 && t.noStatus == 0 && t.last == a.history {
		return nil
	}
	return a.chainCheck(ctx, ln)
}
