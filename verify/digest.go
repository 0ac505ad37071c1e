package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/ledger"
)

// The digest: the sum mod 2^64 of
// hashtextextended(ark.ark, ark.seq) — PostgreSQL's 64-bit hash of the ledger key seeded with
// the insertion number, computed by the client (hashTextExtended) from the streamed key and
// seq — over a set of ARKs, per shoulder and per block of 2^blockShift seq values. A sum is
// order-independent, so the workers add up in any order. Binding seq into the hash makes a
// deleted and re-inserted ARK differ too.
const (
	// receiptHash is the per-ARK hash of the receipt comparison, in SQL over a key column;
	// the ARK pass computes the same with hashTextExtended(key, 0).
	receiptHash = `hashtextextended(%s, 0)`
	// blockShift: a block is seq >> blockShift.
	blockShift = 16
)

// snapshotInfo is an audit's snapshot and where it was taken.
type snapshotInfo struct {
	exported string    // pg_export_snapshot(), for the other connections
	text     string    // pg_current_snapshot(), "xmin:xmax:xip,..."
	at       time.Time // now() of the audit's transaction
	origin   string    // system identifier "/" database oid
	xmin     uint64
	xmax     uint64
	xip      []uint64
}

// parseSnapshot parses the text form of pg_snapshot, "xmin:xmax:xip1,xip2,...".
func parseSnapshot(s string) (xmin, xmax uint64, xip []uint64, err error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return 0, 0, nil, fmt.Errorf("snapshot %q: want xmin:xmax:xip", s)
	}
	if xmin, err = strconv.ParseUint(parts[0], 10, 64); err != nil {
		return 0, 0, nil, fmt.Errorf("snapshot %q: %w", s, err)
	}
	if xmax, err = strconv.ParseUint(parts[1], 10, 64); err != nil {
		return 0, 0, nil, fmt.Errorf("snapshot %q: %w", s, err)
	}
	if parts[2] != "" {
		for _, x := range strings.Split(parts[2], ",") {
			v, err := strconv.ParseUint(x, 10, 64)
			if err != nil {
				return 0, 0, nil, fmt.Errorf("snapshot %q: %w", s, err)
			}
			xip = append(xip, v)
		}
	}
	if xmin > xmax {
		return 0, 0, nil, fmt.Errorf("snapshot %q: xmin above xmax", s)
	}
	return xmin, xmax, xip, nil
}

// baseline is the last clean audit's audit_summary row.
type baseline struct {
	at        time.Time
	snapshot  string
	origin    string
	xmin      uint64
	xmax      uint64
	xip       []uint64
	mark      int64
	count     int64
	digest    uint64
	shoulders map[string]int64
	blocks    map[int64]blockSum
	signals   *signals // the tamper signals it recorded; nil for none
}

// blockSum is a count and digest.
type blockSum struct {
	n int64
	d uint64
}

func (b *blockSum) add(o blockSum) { b.n += o.n; b.d += o.d }

// prepare reads, on the lead connection, the audit's snapshot, the last clean audit, and the
// registrations the ARK pass needs.
func (a *audit) prepare(ctx context.Context, ln *lane) error {
	s := &a.snap
	err := ln.tx.QueryRow(ctx, `select pg_export_snapshot(), pg_current_snapshot()::text, now(),
		case when has_function_privilege('pg_control_system()', 'execute')
		     then (select system_identifier::text from pg_control_system()) else '' end
		|| '/' || (select oid::text from pg_database where datname = current_database()),
		pg_relation_size('ark') / current_setting('block_size')::bigint`).
		Scan(&s.exported, &s.text, &s.at, &s.origin, &a.arkPages)
	if err != nil {
		return fmt.Errorf("verify: take snapshot: %w", err)
	}
	if s.xmin, s.xmax, s.xip, err = parseSnapshot(s.text); err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	var layout string
	if err := ln.tx.QueryRow(ctx, `select arkhe_layout()`).Scan(&layout); err != nil {
		return fmt.Errorf("verify: read the ledger's layout: %w", err)
	}
	a.citus = ledger.Layout(layout) == ledger.LayoutCitus
	var b baseline
	var digest int64
	var shoulders map[string]int64
	var blocks [][3]int64
	err = ln.tx.QueryRow(ctx, `select at, snapshot::text, origin, high_water, ark_count, digest, shoulders, blocks, signals
		from audit_summary order by id desc limit 1`).
		Scan(&b.at, &b.snapshot, &b.origin, &b.mark, &b.count, &digest, &shoulders, &blocks, &b.signals)
	switch {
	case err == nil:
		if b.xmin, b.xmax, b.xip, err = parseSnapshot(b.snapshot); err != nil {
			return fmt.Errorf("verify: last audit summary: %w", err)
		}
		b.digest = uint64(digest)
		b.shoulders = shoulders
		b.blocks = map[int64]blockSum{}
		for _, bl := range blocks {
			b.blocks[bl[0]] = blockSum{n: bl[1], d: uint64(bl[2])}
		}
		a.base = &b
		// The stored snapshot applies only to the same cluster and database, with the
		// transaction counter moved forward by less than 2^31 (so 32-bit xmin ages resolve).
		a.usable = b.origin == s.origin && b.xmax <= s.xmax && s.xmax-b.xmin < math.MaxInt32-1<<24 && !a.citus
	case errors.Is(err, pgx.ErrNoRows):
		// no earlier clean audit
	default:
		return fmt.Errorf("verify: read last audit summary: %w", err)
	}
	if a.sig, err = a.readSignals(ctx, ln); err != nil {
		return err
	}
	a.since = a.cfg.Since && a.base != nil && a.usable && !a.citus && a.base.signals != nil
	switch {
	case a.cfg.Since && a.citus:
		a.rec.note(CheckDigest, "--since needs one snapshot of the whole ledger, which Citus does not have across nodes: this audit is a full one")
	case a.cfg.Since && a.base != nil && a.base.signals == nil:
		a.rec.note(CheckSignals, "the last clean audit recorded no tamper signals: this audit is a full one and records them")
	}
	if a.base != nil && a.usable && !a.citus {
		if err := a.loadChanged(ctx, ln); err != nil {
			return err
		}
	}
	if err := ln.tx.QueryRow(ctx, `select coalesce(array_agg(id order by id), '{}') from import_run where format = $1`,
		ledger.ImportFormatMintMap).Scan(&a.recoveryRuns); err != nil {
		return fmt.Errorf("verify: read the recoveries from mint maps: %w", err)
	}
	if a.shoulder, err = loadShoulders(ctx, ln); err != nil {
		return err
	}
	if a.clients, err = loadClients(ctx, ln); err != nil {
		return err
	}
	if a.cfg.Baseline != "" {
		if err := a.readDraws(ctx, ln); err != nil {
			return err
		}
	}
	if !a.citus {
		if a.receiptsInPass, err = receiptsAreColumns(ctx, ln); err != nil {
			return err
		}
	}
	rows, err := ln.tx.Query(ctx, `select naan from naan`)
	if err != nil {
		return fmt.Errorf("verify: read NAANs: %w", err)
	}
	a.naans = map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return fmt.Errorf("verify: read NAANs: %w", err)
		}
		a.naans[n] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("verify: read NAANs: %w", err)
	}
	return nil
}

// ageRef lets SQL decide, from age(xmin) alone, whether a row's inserting transaction was
// visible to the baseline's snapshot. age(x) is (int32)(now - x) for the 32-bit xid x, where
// now is fixed for the whole transaction (GetStableLatestTransactionId); with now as a 64-bit
// xid, the row's full xid is now - age, and "visible to the baseline" — xid < xmin, or
// xid < xmax and not in xip — becomes age > now - xmin, or age > now - xmax and age not in
// {now - xip}. Frozen and bootstrap xids have age 2^31-1: always visible.
type ageRef struct {
	now  uint64 // the transaction's "now", as a 64-bit xid
	t1   int64  // now - baseline xmin
	t2   int64  // now - baseline xmax
	xips []int64
}

// ageReference fixes ln's age() reference: age('3'::xid) (3 is the first normal xid) gives
// the 32-bit now, and the snapshot's 64-bit xmax (which now is at or after, within 2^31)
// gives the epoch.
func (a *audit) ageReference(ctx context.Context, ln *lane) error {
	var age3 int32
	if err := ln.tx.QueryRow(ctx, `select age('3'::xid)`).Scan(&age3); err != nil {
		return fmt.Errorf("verify: read transaction age reference: %w", err)
	}
	now32 := uint32(3 + uint32(age3))
	now := a.snap.xmax + uint64(now32-uint32(a.snap.xmax))
	r := ageRef{now: now}
	if a.base != nil && a.usable {
		r.t1 = int64(now - a.base.xmin)
		r.t2 = int64(now - a.base.xmax)
		for _, x := range a.base.xip {
			if x >= a.base.xmin && x < a.base.xmax {
				r.xips = append(r.xips, int64(now-x))
			}
		}
	}
	ln.age = r
	return nil
}

// changedSince returns a query of the ARKs with an ARK_CHANGE row the baseline could not see.
func (a *audit) changedSince() string {
	return fmt.Sprintf(`select distinct ark from ark_change where not pg_visible_in_snapshot(xact, '%s'::pg_snapshot)`, a.base.snapshot)
}

// digestResult is what the ARK pass computed for the digest, the receipts and change.chain.
type digestResult struct {
	total     blockSum           // every ARK of this audit's snapshot
	mark      int64              // max seq
	shoulders map[string]int64   // ARKs per shoulder label
	blocks    map[int64]blockSum // per block
	then      blockSum           // the ARKs that count in the comparison with the baseline
	thenShd   map[string]int64   // ... per shoulder label
	thenBlk   map[int64]blockSum // ... per block
	minted    blockSum           // ARKs minted by arkhe: count and sum of receiptHash
}

// groupKey groups the ARK pass's digest numbers: shoulder id, block, and whether the ARK
// counts against the baseline.
type groupKey struct {
	shoulder, block int64
	then            bool
}

// groupSum is the count, digest and max seq of a group.
type groupSum struct {
	n   int64
	d   uint64
	max int64
}

// passStats is what one worker of the ARK pass accumulates; merged by mergeStats.
type passStats struct {
	groups   map[groupKey]*groupSum
	minted   blockSum
	receipts blockSum // the single layout's receipts (ark columns): count and receiptHash sum
	// receiptNAANSuspect: a receipt's client is not registered or not of the ARK's NAAN
	receiptNAANSuspect bool
	history            historySum // ARKs with a history, for change.chain
	buf                []byte     // scratch space of history.add
	checked            int64
	fresh              int64 // --since: ARKs numbered above the baseline's mark
}

func newPassStats() *passStats { return &passStats{groups: map[groupKey]*groupSum{}} }

// mergeStats combines the workers' numbers into a.digest and a.checked.
func (a *audit) mergeStats(all []*passStats) {
	d := digestResult{shoulders: map[string]int64{}, blocks: map[int64]blockSum{}, thenShd: map[string]int64{},
		thenBlk: map[int64]blockSum{}}
	for _, ps := range all {
		a.fresh += ps.fresh
		d.minted.add(ps.minted)
		if a.receiptsInPass { // else receiptTotals reads them
			a.receipts.add(ps.receipts)
			a.receiptNAANSuspect = a.receiptNAANSuspect || ps.receiptNAANSuspect
		}
		a.history.merge(ps.history)
		a.checked += ps.checked
		for k, g := range ps.groups {
			label := unregisteredShoulder
			if sh := a.shoulder[k.shoulder]; sh != nil {
				label = sh.label
			}
			bs := blockSum{n: g.n, d: g.d}
			d.total.add(bs)
			d.mark = max(d.mark, g.max)
			d.shoulders[label] += g.n
			b := d.blocks[k.block]
			b.add(bs)
			d.blocks[k.block] = b
			if k.then {
				d.then.add(bs)
				d.thenShd[label] += g.n
				tb := d.thenBlk[k.block]
				tb.add(bs)
				d.thenBlk[k.block] = tb
			}
		}
	}
	a.digest = d
}

// sumMod64 parses a decimal sum (numeric text) and reduces it mod 2^64.
func sumMod64(s string) (uint64, error) {
	v, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return 0, fmt.Errorf("sum %q is not an integer", s)
	}
	return new(big.Int).And(v, new(big.Int).SetUint64(math.MaxUint64)).Uint64(), nil
}

// unregisteredShoulder labels ARKs whose shoulder row is missing.
const unregisteredShoulder = "(unregistered shoulder)"

// compareDigest runs ledger.digest: this audit's numbers for the ARKs that count against the
// baseline must equal the baseline's, in total, per shoulder and per block. It names a
// mismatching block by the first and last ARK left in it (looked up on ln), never by seq.
func (a *audit) compareDigest(ctx context.Context, ln *lane) error {
	if a.base == nil {
		a.rec.note(CheckDigest, "no earlier clean audit to compare with; this audit records the first baseline")
		return nil
	}
	if a.citus {
		return a.compareGrowing(ctx, ln)
	}
	b, d := a.base, a.digest
	when := b.at.UTC().Format(time.RFC3339)
	if !a.usable {
		a.rec.note(CheckDigest, "the last clean audit's snapshot does not apply to this database (another cluster, a restore, or over 2^31 transactions since); every ARK at or below its mark was compared")
	}
	if d.then == (blockSum{n: b.count, d: b.digest}) && equalCounts(b.shoulders, d.thenShd) && equalBlocks(b.blocks, d.thenBlk) {
		return nil
	}
	found := false
	labels := map[string]bool{}
	for l := range b.shoulders {
		labels[l] = true
	}
	for l := range d.thenShd {
		labels[l] = true
	}
	for _, l := range sortedKeys(labels) {
		was, now := b.shoulders[l], d.thenShd[l]
		if was == now {
			continue
		}
		found = true
		subject := "shoulder " + l
		if l == unregisteredShoulder {
			subject = "ARKs of unregistered shoulders"
		}
		a.rec.add(CheckDigest, subject, "", fmt.Sprintf("%s: %d ARKs recorded by the last clean audit (%s), %d of them found now", subject, was, when, now))
	}
	blocks := map[int64]bool{}
	for k := range b.blocks {
		blocks[k] = true
	}
	for k := range d.thenBlk {
		blocks[k] = true
	}
	keys := make([]int64, 0, len(blocks))
	for k := range blocks {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	for _, k := range keys {
		was, now := b.blocks[k], d.thenBlk[k]
		if was == now {
			continue
		}
		found = true
		where := "a run of ARKs none of which is left"
		first, last, err := a.blockEnds(ctx, ln, k)
		if err != nil {
			return err
		}
		if first != "" {
			where = fmt.Sprintf("ARKs from %s to %s", first, last)
		}
		detail := fmt.Sprintf("%s: %d recorded by the last clean audit (%s), %d found now", where, was.n, when, now.n)
		if was.n == now.n {
			detail += "; the same number, but altered (digest differs)"
		}
		a.rec.add(CheckDigest, where, "", detail)
	}
	if !found {
		a.rec.add(CheckDigest, "ledger", "", fmt.Sprintf("the ARKs recorded by the last clean audit (%s): %d then, %d now; digest differs", when, b.count, d.then.n))
	}
	return nil
}

// compareGrowing is ledger.digest on Citus, where no snapshot, transaction id or insertion
// number spans the nodes: Citus draws seq per node (node group g from g·2^48+1), so a block of
// 2^blockShift seq values holds ARKs inserted through one node, in the order that node drew
// them. Without the last clean audit's snapshot the ARKs it saw cannot be singled out; instead
// every ARK counts, and the numbers may only grow: per shoulder the count, per block the count
// (a block that was complete at the last audit keeps exactly its ARKs: the same count and
// digest; one still being filled, or holding ARKs then still being inserted, may only gain).
// A deleted ARK is found unless its block gained as many ARKs since; a moved one changes its
// shoulders' counts, an altered key or seq the block's digest.
func (a *audit) compareGrowing(ctx context.Context, ln *lane) error {
	b, d := a.base, a.digest
	when := b.at.UTC().Format(time.RFC3339)
	a.rec.note(CheckDigest, "Citus: no snapshot spans the nodes, so every ARK is compared: a shoulder's count and a block of each node's insertion numbers may only grow, and a block that did not grow must hold the same ARKs")
	for _, l := range sortedKeys(keySet(b.shoulders)) {
		if was, now := b.shoulders[l], d.shoulders[l]; now < was {
			subject := "shoulder " + l
			if l == unregisteredShoulder {
				subject = "ARKs of unregistered shoulders"
			}
			a.rec.add(CheckDigest, subject, "", fmt.Sprintf("%s: %d ARKs recorded by the last clean audit (%s), %d now", subject, was, when, now))
		}
	}
	keys := make([]int64, 0, len(b.blocks))
	for k := range b.blocks {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	for _, k := range keys {
		was, now := b.blocks[k], d.blocks[k]
		if now.n > was.n || now == was {
			continue
		}
		where := "a run of ARKs none of which is left"
		first, last, err := a.blockEnds(ctx, ln, k)
		if err != nil {
			return err
		}
		if first != "" {
			where = fmt.Sprintf("ARKs from %s to %s", first, last)
		}
		detail := fmt.Sprintf("%s: %d recorded by the last clean audit (%s), %d found now", where, was.n, when, now.n)
		if was.n == now.n {
			detail += "; the same number, but altered (digest differs)"
		}
		a.rec.add(CheckDigest, where, "", detail)
	}
	return nil
}

// keySet returns the keys of m as a set.
func keySet(m map[string]int64) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// blockEnds returns the canonical ARKs first and last inserted, at or below the baseline's
// mark (on Citus, whose mark is one node's, anywhere), in block k ("" when none is left); the
// BRIN index on seq keeps it to the block's pages.
func (a *audit) blockEnds(ctx context.Context, ln *lane, k int64) (string, string, error) {
	lo := k << blockShift
	hi := lo + (1 << blockShift) - 1
	if !a.citus { // on Citus the mark is one node's
		hi = min(hi, a.base.mark)
	}
	var first, last *string
	err := ln.tx.QueryRow(ctx, `with b as (select seq, ark from ark where seq between $1 and $2)
		select (select 'ark:' || ark from b order by seq limit 1), (select 'ark:' || ark from b order by seq desc limit 1)`,
		lo, hi).Scan(&first, &last)
	if err != nil {
		return "", "", fmt.Errorf("verify: name a digest block: %w", err)
	}
	if first == nil || last == nil {
		return "", "", nil
	}
	return *first, *last, nil
}

func equalCounts(x, y map[string]int64) bool {
	for k, v := range x {
		if y[k] != v {
			return false
		}
	}
	for k, v := range y {
		if x[k] != v {
			return false
		}
	}
	return true
}

func equalBlocks(x, y map[int64]blockSum) bool {
	if len(x) != len(y) {
		return false
	}
	for k, v := range x {
		if w, ok := y[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// storeSummary appends this audit's audit_summary row (table audit_summary of the ledger schema).
func (a *audit) storeSummary(ctx context.Context, l *ledger.Ledger) error {
	d := a.digest
	blocks := make([][3]int64, 0, len(d.blocks))
	for k, v := range d.blocks {
		blocks = append(blocks, [3]int64{k, v.n, int64(v.d)})
	}
	sort.Slice(blocks, func(i, j int) bool { return blocks[i][0] < blocks[j][0] })
	bj, err := json.Marshal(blocks)
	if err != nil {
		return fmt.Errorf("verify: summary: %w", err)
	}
	sj, err := json.Marshal(d.shoulders)
	if err != nil {
		return fmt.Errorf("verify: summary: %w", err)
	}
	gj, err := json.Marshal(a.sig)
	if err != nil {
		return fmt.Errorf("verify: summary: %w", err)
	}
	_, err = l.Pool.Exec(ctx, `insert into audit_summary (at, snapshot, origin, high_water, ark_count, digest, shoulders, blocks, full_audit, signals)
		values ($1, $2::pg_snapshot, $3, $4, $5, $6, $7::jsonb, $8::jsonb, $9, $10::jsonb)`,
		a.snap.at, a.snap.text, a.snap.origin, d.mark, d.total.n, int64(d.total.d), string(sj), string(bj), !a.since, string(gj))
	if err != nil {
		return fmt.Errorf("verify: store audit summary: %w", err)
	}
	return nil
}
