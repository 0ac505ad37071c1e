package export

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/arkhe-ledger/arkhe/ledger"
)

// Watermark is the point an export read the ledger up to: the high-water of the ARK insertion
// number (every minted or imported ARK takes the next) and of the ARK_CHANGE mark (every repoint,
// tombstone, restore or metadata change takes the next), both read at one instant while no
// writer of either table was running. An ARK changed after a watermark has a larger insertion
// number or an ARK_CHANGE row with a larger mark.
type Watermark struct {
	ARK    int64 // high-water of ark.seq; 0 for a ledger that never held an ARK
	Change int64 // high-water of ark_change.mark; 0 before the first change
}

// String is the watermark as an export prints it and ParseWatermark reads it: "ARK:Change".
func (w Watermark) String() string { return fmt.Sprintf("%d:%d", w.ARK, w.Change) }

// ParseWatermark reads a watermark printed by an export ("A:C", two non-negative decimal
// integers). Other text returns an error wrapping ErrBadWatermark.
func ParseWatermark(s string) (Watermark, error) {
	a, c, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return Watermark{}, fmt.Errorf("%q: %w", s, ErrBadWatermark)
	}
	an, err1 := strconv.ParseInt(a, 10, 64)
	cn, err2 := strconv.ParseInt(c, 10, 64)
	if err1 != nil || err2 != nil || an < 0 || cn < 0 || strings.HasPrefix(a, "+") || strings.HasPrefix(c, "+") {
		return Watermark{}, fmt.Errorf("%q: %w", s, ErrBadWatermark)
	}
	return Watermark{ARK: an, Change: cn}, nil
}

// Mark reads the ledger's watermark now (arkhe_export_mark(), in a transaction of its own). It
// waits for the transactions writing ark or ark_change to end, and writers that start meanwhile
// wait for it; it returns as soon as it has read.
func Mark(ctx context.Context, l *ledger.Ledger) (Watermark, error) {
	var w Watermark
	if err := l.Pool.QueryRow(ctx, `select ark_mark, change_mark from arkhe_export_mark()`).Scan(&w.ARK, &w.Change); err != nil {
		return Watermark{}, fmt.Errorf("export: read the watermark: %w", err)
	}
	return w, nil
}
