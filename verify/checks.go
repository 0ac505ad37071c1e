package verify

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// shoulderInfo is a registered shoulder as the ARK pass needs it.
type shoulderInfo struct {
	naan   string
	stored string // "/x9"
	bare   string // "x9"; "" for the NAAN-wide shoulder "/"
	label  string // "99999/x9"
	zone   ark.Zone
	// adopted: the shoulder was adopted (a migrated shoulder given a manager and a zone to
	// mint with); the ARKs imported before keep the verdict their import recorded
	adopted bool
	retired *time.Time
	// retiredMicros is retired as microseconds since 2000-01-01 UTC (binary timestamptz).
	retiredMicros int64
	// longer are the shoulders of the same NAAN whose bare form extends this one's, longest
	// first: a name matching one of them belongs there (longest prefix).
	longer []*shoulderInfo
}

// loadShoulders reads every shoulder, keyed by its internal id (used only to join, never shown).
func loadShoulders(ctx context.Context, ln *lane) (map[int64]*shoulderInfo, error) {
	rows, err := ln.tx.Query(ctx, `select id, naan, shoulder, check_zone, adopted_at is not null, retired_at from shoulder`)
	if err != nil {
		return nil, fmt.Errorf("verify: read shoulders: %w", err)
	}
	defer rows.Close()
	out := map[int64]*shoulderInfo{}
	byNAAN := map[string][]*shoulderInfo{}
	for rows.Next() {
		var id int64
		var s shoulderInfo
		var zone string
		if err := rows.Scan(&id, &s.naan, &s.stored, &zone, &s.adopted, &s.retired); err != nil {
			return nil, fmt.Errorf("verify: read shoulders: %w", err)
		}
		z, err := ark.ParseZone(zone)
		if err != nil {
			return nil, fmt.Errorf("verify: shoulder %s of NAAN %s: %w", s.stored, s.naan, err)
		}
		s.zone = z
		s.bare = ark.BareShoulder(s.stored)
		s.label = s.naan + s.stored
		if s.retired != nil {
			s.retiredMicros = s.retired.UnixMicro() - ledger.PGEpochMicros
		}
		out[id] = &s
		byNAAN[s.naan] = append(byNAAN[s.naan], &s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("verify: read shoulders: %w", err)
	}
	for _, list := range byNAAN {
		for _, s := range list {
			for _, t := range list {
				if len(t.bare) > len(s.bare) && strings.HasPrefix(t.bare, s.bare) {
					s.longer = append(s.longer, t)
				}
			}
			// longest first
			for i := 1; i < len(s.longer); i++ {
				for j := i; j > 0 && len(s.longer[j].bare) > len(s.longer[j-1].bare); j-- {
					s.longer[j], s.longer[j-1] = s.longer[j-1], s.longer[j]
				}
			}
		}
	}
	return out, nil
}

// streamLayout says which optional columns the ARK pass streams: each is left out when it
// would be the same for every row, so the server sends only what varies.
type streamLayout struct {
	xmin     bool // the row's inserting transaction (only with a usable baseline)
	receipt  bool // the receipt's client (the single layout, where receipts are ark columns)
	created  bool // created_at of ARKs of retired shoulders (only when a shoulder is retired)
	scoped   bool // the --since pass: only ARKs new or changed since the baseline
	mark     int64
	changed  map[string]bool // ARKs with an ARK_CHANGE row the baseline could not see
	ref      ageRef
	baseline bool // whether a baseline exists
	usable   bool // whether its snapshot applies (xmin comparisons)
}

// fields returns the number of columns.
func (l streamLayout) fields() int {
	n := 8
	for _, b := range []bool{l.xmin, l.receipt, l.created} {
		if b {
			n++
		}
	}
	return n
}

// streamQuery returns the binary COPY of the ARK pass, one row per ARK: the ledger key, the
// shoulder id and seq (internal: a join key and the digest's seed, never shown), minted by
// arkhe (import_run_id is null, or a recovery from mint maps put it back), check_ok, and for an ARK with a history (change_seq > 0) its
// change count, target and status (change.chain's comparison); then the optional columns of
// the layout. Plain columns and boolean tests only: the hashes, and whether a row counts
// against the baseline (from its xmin), are computed by the client, so the server does little
// more than for a COPY of those columns.
func (a *audit) streamQuery(ln *lane) (string, streamLayout) {
	lay := streamLayout{ref: ln.age, baseline: a.base != nil && !a.citus, usable: a.usable, changed: a.changed}
	if a.base != nil {
		lay.mark = a.base.mark
	}
	minted := "a.import_run_id is null"
	if len(a.recoveryRuns) > 0 {
		ids := make([]string, len(a.recoveryRuns))
		for i, id := range a.recoveryRuns {
			ids[i] = strconv.FormatInt(id, 10)
		}
		minted = fmt.Sprintf("(a.import_run_id is null or a.import_run_id = any('{%s}'::bigint[]))", strings.Join(ids, ","))
	}
	cols := []string{"a.ark", "a.shoulder_id", "a.seq", minted, "a.check_ok",
		"case when a.change_seq > 0 then a.change_seq end", "case when a.change_seq > 0 then a.url end",
		"case when a.change_seq > 0 then ark_status_text(a.status) end"}
	if a.base != nil && a.usable && !a.citus && !a.since { // on Citus every ARK counts (compareGrowing)
		lay.xmin = true
		cols = append(cols, "a.xmin")
	}
	if a.receiptsInPass {
		lay.receipt = true
		cols = append(cols, "case when a.request_id is not null then a.created_by end")
	}
	var retired []string
	for id, s := range a.shoulder {
		if s.retired != nil {
			retired = append(retired, strconv.FormatInt(id, 10))
		}
	}
	sort.Strings(retired)
	if len(retired) > 0 {
		lay.created = true
		cols = append(cols, fmt.Sprintf("case when a.shoulder_id = any('{%s}'::bigint[]) then a.created_at end", strings.Join(retired, ",")))
	}
	from := "ark a"
	if a.since {
		// new since the baseline (above its mark; a row numbered below it but invisible to its
		// snapshot was being written then, which the statistics signal notices), or changed
		// through the repoint path since
		lay.scoped = true
		sel := strings.Join(cols, ", ")
		// the changed ARKs as a literal array (COPY takes no parameters): looked up by the
		// primary key, however many the planner would guess
		return fmt.Sprintf(`copy (select %s from ark a where a.seq > %d
			union all select %s from ark a where a.seq <= %d and a.ark = any (%s::text[])) to stdout (format binary)`,
			sel, a.base.mark, sel, a.base.mark, textArrayLiteral(a.changedKeys())), lay
	}
	return fmt.Sprintf(`copy (select %s from %s) to stdout (format binary)`, strings.Join(cols, ", "), from), lay
}

// arkPass streams the ARKs (binary COPY) to cfg.Workers goroutines that run the ARK-level
// checks and add up the digest, the receipts and the current state of ARKs with a history.
func (a *audit) arkPass(ctx context.Context, ln *lane) error {
	query, lay := a.streamQuery(ln)
	workers := a.cfg.Workers
	batches := make(chan []byte, 2*workers)
	free := make(chan []byte, 2*workers+2)
	g, gctx := errgroup.WithContext(ctx)
	var done atomic.Int64
	stats := make([]*passStats, workers)
	for w := range workers {
		ps := newPassStats()
		stats[w] = ps
		g.Go(func() error {
			for b := range batches {
				n, err := a.checkBatch(b, lay, ps)
				if err != nil {
					return err
				}
				select {
				case free <- b:
				default:
				}
				total := done.Add(n)
				if a.cfg.Progress != nil {
					a.cfg.Progress(total)
				}
			}
			return nil
		})
	}
	g.Go(func() error {
		defer close(batches)
		sp := newCopySplitter(gctx, lay.fields(), batches, free)
		if _, err := ln.tx.Conn().PgConn().CopyTo(gctx, sp, query); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("verify: stream ARKs: %w", err)
		}
		return sp.finish()
	})
	if err := g.Wait(); err != nil {
		return err
	}
	a.mergeStats(stats)
	return nil
}

// loadChanged reads the ARKs with an ARK_CHANGE row the baseline's snapshot could not see: a
// row of one of them updated since counts against the baseline (the repoint path explains the
// update). It holds the ARKs changed since the last clean audit, not the ledger.
func (a *audit) loadChanged(ctx context.Context, ln *lane) error {
	rows, err := ln.tx.Query(ctx, a.changedSince())
	if err != nil {
		return fmt.Errorf("verify: read the ARKs changed since the last audit: %w", err)
	}
	defer rows.Close()
	a.changed = map[string]bool{}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return fmt.Errorf("verify: read the ARKs changed since the last audit: %w", err)
		}
		a.changed[k] = true
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("verify: read the ARKs changed since the last audit: %w", err)
	}
	return nil
}

// changedKeys returns the ARKs loadChanged read, sorted.
func (a *audit) changedKeys() []string {
	keys := make([]string, 0, len(a.changed))
	for k := range a.changed {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// textArrayLiteral returns keys as an SQL string literal of a text array: each element
// double-quoted with \ and " escaped, the literal's ' doubled (standard_conforming_strings).
func textArrayLiteral(keys []string) string {
	var b strings.Builder
	b.WriteString("'{")
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		for _, c := range []byte(k) {
			switch c {
			case '\\', '"':
				b.WriteByte('\\')
			case '\'':
				b.WriteByte('\'')
			}
			b.WriteByte(c)
		}
		b.WriteByte('"')
	}
	b.WriteString("}'")
	return b.String()
}

// visible reports whether a row inserted by the transaction xmin (32 bits, as stored) was
// visible to the baseline's snapshot, by the rule of ageRef: age(xmin) as PostgreSQL computes
// it for the reference transaction, then the comparison visibleToBase makes in SQL.
func (r ageRef) visible(xmin uint32) bool {
	age := int64(math.MaxInt32)
	if xmin >= 3 { // not a frozen or bootstrap xid
		age = int64(int32(uint32(r.now) - xmin))
	}
	if age <= r.t2 {
		return false
	}
	if age > r.t1 {
		return true
	}
	for _, x := range r.xips {
		if age == x {
			return false
		}
	}
	return true
}

// checkBatch adds up and checks every tuple of one batch and returns how many.
func (a *audit) checkBatch(b []byte, lay streamLayout, ps *passStats) (int64, error) {
	r := tupleReader{b: b}
	var n int64
	for r.next() {
		key := r.field()
		sid, _, err := r.int64Field()
		if err != nil {
			return n, err
		}
		seq, _, err := r.int64Field()
		if err != nil {
			return n, err
		}
		minted := r.boolField()
		checkOK := r.field()
		changes, hasHistory, err := r.int32Field()
		if err != nil {
			return n, err
		}
		url := r.field()
		status := r.field()
		then := false
		if lay.baseline && !lay.scoped && seq <= lay.mark {
			then = true
			if lay.xmin {
				x := r.field()
				if len(x) != 4 {
					return n, fmt.Errorf("%w: xid of %d octets", errCopyFormat, len(x))
				}
				then = lay.ref.visible(binary.BigEndian.Uint32(x)) || lay.changed[string(key)]
			}
		} else if lay.xmin {
			r.field()
		}
		var client int64
		var hasReceipt bool
		if lay.receipt {
			if client, hasReceipt, err = r.int64Field(); err != nil {
				return n, err
			}
		}
		var created int64
		var hasCreated bool
		if lay.created {
			if created, hasCreated, err = r.int64Field(); err != nil {
				return n, err
			}
		}
		if key == nil {
			return n, fmt.Errorf("verify: %w: an ARK without a key", errCopyFormat)
		}
		k := groupKey{shoulder: sid, block: seq >> blockShift, then: then}
		g := ps.groups[k]
		if g == nil {
			g = &groupSum{}
			ps.groups[k] = g
		}
		g.n++
		g.d += hashTextExtended(key, uint64(seq))
		g.max = max(g.max, seq)
		if minted || hasReceipt {
			h := hashTextExtended(key, 0)
			if minted {
				ps.minted.add(blockSum{n: 1, d: h})
			}
			if hasReceipt {
				ps.receipts.add(blockSum{n: 1, d: h})
				if c, ok := a.clients[client]; !ok || (c.authority != "system" && !hasNAAN(key, c.naan)) {
					ps.receiptNAANSuspect = true
				}
			}
		}
		if hasHistory {
			ps.history.add(key, changes, url, status, &ps.buf)
		}
		n++
		ps.checked++
		if lay.scoped && seq > lay.mark {
			ps.fresh++
		}
		// an imported ARK whose failing check character the import recorded is not a finding;
		// nor is one imported without a verdict (its shoulder's zone was none then) into a
		// shoulder adopted since: it keeps the verdict of its import
		sh := a.shoulder[sid]
		knownBad := !minted && ((len(checkOK) == 1 && checkOK[0] == 0) || (checkOK == nil && sh != nil && sh.adopted))
		a.checkARK("ark:"+string(key), sh, knownBad, created, hasCreated)
	}
	return n, nil
}

// hasNAAN reports whether the ledger key starts with "naan/".
func hasNAAN(key []byte, naan string) bool {
	return len(key) > len(naan) && key[len(naan)] == '/' && string(key[:len(naan)]) == naan
}

// checkARK runs the ARK-level checks on one ledger key, given with the label as stored
// ("ark:" + key: one allocation per ARK). sh is its shoulder (nil when not registered);
// knownBad says the import recorded a failing check character; created is created_at in
// microseconds since 2000, given only for ARKs of retired shoulders.
func (a *audit) checkARK(stored string, sh *shoulderInfo, knownBad bool, created int64, hasCreated bool) {
	key := stored[len("ark:"):]
	p, err := ark.Parse(stored)
	if err != nil {
		var le *ark.LimitError
		if errors.As(err, &le) {
			a.rec.add(CheckWidth, stored, stored, le.Error())
		} else {
			a.rec.add(CheckSyntax, stored, stored, err.Error())
		}
		return
	}
	if p.Key() != key {
		a.rec.add(CheckNormalized, stored, stored,
			fmt.Sprintf("stored as %q, normalized %q (draft-kunze-ark §3.2)", key, p.Key()))
		return
	}
	if !a.naans[p.NAAN] {
		a.rec.add(CheckNAANExists, stored, stored, fmt.Sprintf("NAAN %s is not registered", p.NAAN))
	}
	if sh == nil {
		a.rec.add(CheckShoulderExists, stored, stored, "the ARK's shoulder is not registered")
		return
	}
	if sh.naan != p.NAAN {
		a.rec.add(CheckShoulderNAAN, stored, stored,
			fmt.Sprintf("its shoulder %s belongs to NAAN %s, not %s", sh.stored, sh.naan, p.NAAN))
	}
	if !strings.HasPrefix(p.Name, sh.bare) {
		a.rec.add(CheckShoulderPrefix, stored, stored,
			fmt.Sprintf("name %s does not start with its shoulder %s", p.Name, sh.stored))
	} else {
		for _, l := range sh.longer {
			if strings.HasPrefix(p.Name, l.bare) {
				a.rec.add(CheckShoulderPrefix, stored, stored,
					fmt.Sprintf("name %s falls under the longer shoulder %s, not %s (longest prefix)", p.Name, l.stored, sh.stored))
				break
			}
		}
	}
	if sh.zone != ark.ZoneNone {
		if err := ark.VerifyDetail(p, sh.zone); err != nil && !knownBad {
			a.rec.add(CheckCheckCharacter, stored, stored,
				fmt.Sprintf("%v (zone %s of shoulder %s)", err, sh.zone, sh.label))
		}
	}
	if sh.retired != nil && hasCreated && created > sh.retiredMicros {
		at := time.UnixMicro(created + ledger.PGEpochMicros).UTC()
		a.rec.add(CheckMintedAfterRetired, stored, stored,
			fmt.Sprintf("created %s, after shoulder %s was retired at %s", at.Format(time.RFC3339Nano), sh.label,
				sh.retired.UTC().Format(time.RFC3339Nano)))
	}
}

// schemaCheck runs schema.triggers.
func (a *audit) schemaCheck(ctx context.Context, ln *lane) error {
	if err := checkSchema(ctx, ln.tx, a.rec, a.citus); err != nil {
		return fmt.Errorf("verify: %s: %w", CheckSchema, err)
	}
	return nil
}

// clientCheck runs client.pinned_to_retired.
func (a *audit) clientCheck(ctx context.Context, ln *lane) error {
	rows, err := ln.tx.Query(ctx, `select c.client_id, s.naan || s.shoulder, s.retired_at
		from client c join shoulder s on s.id = c.shoulder_id
		where c.active and s.status = 'retired' and 'ark:mint' = any (c.allowed_scopes)
		  and (c.expires_at is null or c.expires_at > now())
		order by c.client_id`)
	if err != nil {
		return fmt.Errorf("verify: %s: %w", CheckPinnedToRetired, err)
	}
	defer rows.Close()
	for rows.Next() {
		var client, shoulder string
		var retired *time.Time
		if err := rows.Scan(&client, &shoulder, &retired); err != nil {
			return fmt.Errorf("verify: %s: %w", CheckPinnedToRetired, err)
		}
		when := ""
		if retired != nil {
			when = " at " + retired.UTC().Format(time.RFC3339)
		}
		a.rec.add(CheckPinnedToRetired, "client "+client, "",
			fmt.Sprintf("client %s is active, may mint, and is pinned to shoulder %s, retired%s: its mints will be refused", client, shoulder, when))
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("verify: %s: %w", CheckPinnedToRetired, err)
	}
	return nil
}

// mintReceiptView is the single layout's mint_receipt view as PostgreSQL prints it
// (pg_get_viewdef, runs of white space as one space): the receipts are the ark rows with a
// request ID.
const mintReceiptView = `SELECT ark.created_by AS client_pk, ark.request_id, ark.ark, ark.payload_digest, ark.created_at FROM ark WHERE (ark.request_id IS NOT NULL);`

// receiptsAreColumns reports whether mint_receipt is the single layout's view of ark's receipt
// columns, unchanged; then the ARK pass reads the receipts with the ARKs.
func receiptsAreColumns(ctx context.Context, ln *lane) (bool, error) {
	var def *string
	if err := ln.tx.QueryRow(ctx, `select pg_get_viewdef(to_regclass('mint_receipt'))`).Scan(&def); err != nil {
		return false, fmt.Errorf("verify: read the mint_receipt view: %w", err)
	}
	return def != nil && strings.Join(strings.Fields(*def), " ") == mintReceiptView, nil
}

// receiptTableCheck runs receipt.layout on the single layout, where a mint receipt is the ark
// row's created_by, request_id and payload_digest (read through mint_receipt) and the receipt
// table, kept so both layouts have one description, must hold none (the migrations' constraint
// receipt_on_ark_row refuses every row): a row there is outside every receipt check.
func (a *audit) receiptTableCheck(ctx context.Context, ln *lane) error {
	var n int64
	if err := ln.tx.QueryRow(ctx, `select count(*) from receipt`).Scan(&n); err != nil {
		return fmt.Errorf("verify: %s: %w", CheckReceiptLayout, err)
	}
	if n > 0 {
		a.rec.add(CheckReceiptLayout, "table receipt", "", fmt.Sprintf("table receipt holds %d rows on a single-node ledger, whose mint receipts are the ark rows' request_id and payload_digest (read through mint_receipt): no receipt check reads them", n))
	}
	return nil
}

// clientInfo is a registered client as the receipt checks need it.
type clientInfo struct{ naan, authority string }

// loadClients reads every client, keyed by its internal id (used only to join, never shown).
func loadClients(ctx context.Context, ln *lane) (map[int64]clientInfo, error) {
	rows, err := ln.tx.Query(ctx, `select id, naan, authority from client`)
	if err != nil {
		return nil, fmt.Errorf("verify: read clients: %w", err)
	}
	defer rows.Close()
	out := map[int64]clientInfo{}
	for rows.Next() {
		var id int64
		var c clientInfo
		if err := rows.Scan(&id, &c.naan, &c.authority); err != nil {
			return nil, fmt.Errorf("verify: read clients: %w", err)
		}
		out[id] = c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("verify: read clients: %w", err)
	}
	return out, nil
}

// receiptNAANBad is the condition of receipt.naan_of_client over mint_receipt r left join
// client c: the client is not registered, or (unless its authority is system) its NAAN is not
// the ARK's.
const receiptNAANBad = `c.id is null or (c.authority <> 'system' and c.naan <> split_part(r.ark, '/', 1))`

// receiptTotals counts the receipts and sums their receiptHash, for the fast path of
// receipt.ark_exists and ark.receipt_missing, and finds whether any may fail
// receipt.naan_of_client, in one scan without a join: per client, the smallest and largest
// receipt ARK. In byte order (every key is COLLATE "C") every string between two that start
// with "NAAN/" starts with it too, so when both do for the client's NAAN, all its receipts
// are in that NAAN.
func (a *audit) receiptTotals(ctx context.Context, ln *lane) error {
	q := fmt.Sprintf(`select client_pk, count(*), sum(%s)::text, min(ark), max(ark) from mint_receipt group by client_pk`,
		fmt.Sprintf(receiptHash, "ark"))
	rows, err := ln.tx.Query(ctx, q)
	if err != nil {
		return fmt.Errorf("verify: count receipts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, n int64
		var sum, lo, hi string
		if err := rows.Scan(&id, &n, &sum, &lo, &hi); err != nil {
			return fmt.Errorf("verify: count receipts: %w", err)
		}
		s, err := sumMod64(sum)
		if err != nil {
			return fmt.Errorf("verify: count receipts: %w", err)
		}
		a.receipts.add(blockSum{n: n, d: s})
		c, ok := a.clients[id]
		if !ok || (c.authority != "system" && !(strings.HasPrefix(lo, c.naan+"/") && strings.HasPrefix(hi, c.naan+"/"))) {
			a.receiptNAANSuspect = true
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("verify: count receipts: %w", err)
	}
	return nil
}

// The anti-joins of receipt.ark_exists and ark.receipt_missing, and their forms for the citus
// layout (outer joins).
const (
	receiptARKExistsSQL = `select r.ark, r.request_id, c.client_id from mint_receipt r
		left join client c on c.id = r.client_pk
		where not exists (select 1 from ark a where a.ark = r.ark)
		order by r.ark, r.request_id`
	receiptMissingSQL = `select a.ark from ark a
		where ` + mintedByArkhe + ` and not exists (select 1 from mint_receipt r where r.ark = a.ark)
		order by a.ark`
	receiptARKExistsCitusSQL = `select r.ark, r.request_id, c.client_id from mint_receipt r
		left join ark a on a.ark = r.ark
		left join client c on c.id = r.client_pk
		where a.ark is null
		order by r.ark, r.request_id`
	receiptMissingCitusSQL = `select a.ark from ark a
		left join (select ark from mint_receipt) r on r.ark = a.ark
		where ` + mintedByArkhe + ` and r.ark is null
		order by a.ark`
)

// mintedByArkhe is true of an ARK row a that arkhe minted: written by no import run, or put
// back from mint maps by a recovery (its import run's format ledger.ImportFormatMintMap). Such
// an ARK has its mint receipt.
const mintedByArkhe = `(a.import_run_id is null or a.import_run_id in (select id from import_run where format = '` + ledger.ImportFormatMintMap + `'))`

// receiptExact runs receipt.ark_exists and ark.receipt_missing by anti-join, unless the
// multiset of receipt ARKs equals that of minted ARKs (same count and hash sum, from
// receiptTotals and the ARK pass; it runs after both), which rules both out.
func (a *audit) receiptExact(ctx context.Context, ln *lane) error {
	if a.receipts == a.digest.minted {
		return nil
	}
	// On Citus receipts (by request ID) and ARKs (by the ARK string) are distributed apart:
	// Citus plans no correlated subquery between them, but the outer join
	arkExists, receiptMissing := receiptARKExistsSQL, receiptMissingSQL
	if a.citus {
		arkExists, receiptMissing = receiptARKExistsCitusSQL, receiptMissingCitusSQL
	}
	rows, err := ln.tx.Query(ctx, arkExists)
	if err != nil {
		return fmt.Errorf("verify: %s: %w", CheckReceiptARKExists, err)
	}
	for rows.Next() {
		var key, request string
		var client *string
		if err := rows.Scan(&key, &request, &client); err != nil {
			rows.Close()
			return fmt.Errorf("verify: %s: %w", CheckReceiptARKExists, err)
		}
		s := "ark:" + key
		a.rec.add(CheckReceiptARKExists, s, s, fmt.Sprintf("the receipt of %s for request ID %q points at %s, which is not in the ledger", clientName(client), request, s))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("verify: %s: %w", CheckReceiptARKExists, err)
	}
	rows, err = ln.tx.Query(ctx, receiptMissing)
	if err != nil {
		return fmt.Errorf("verify: %s: %w", CheckReceiptMissing, err)
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		if err := rows.Scan(&key); err != nil {
			return fmt.Errorf("verify: %s: %w", CheckReceiptMissing, err)
		}
		s := "ark:" + key
		a.rec.add(CheckReceiptMissing, s, s, "minted by arkhe (no import run, or put back from a mint map) but no receipt records it")
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("verify: %s: %w", CheckReceiptMissing, err)
	}
	return nil
}

// clientName names a receipt's client for a finding: its public client_id, never its key.
func clientName(client *string) string {
	if client == nil {
		return "an unregistered client"
	}
	return "client " + *client
}

// receiptNAANCheck lists the findings of receipt.naan_of_client, when receiptTotals (run
// before on this lane) found a client whose receipts may fail it.
func (a *audit) receiptNAANCheck(ctx context.Context, ln *lane) error {
	if !a.receiptNAANSuspect {
		return nil
	}
	rows, err := ln.tx.Query(ctx, `select r.ark, r.request_id, c.client_id, c.naan from mint_receipt r
		left join client c on c.id = r.client_pk
		where `+receiptNAANBad+`
		order by r.ark, r.request_id`)
	if err != nil {
		return fmt.Errorf("verify: %s: %w", CheckReceiptNAAN, err)
	}
	defer rows.Close()
	for rows.Next() {
		var key, request string
		var client, naan *string
		if err := rows.Scan(&key, &request, &client, &naan); err != nil {
			return fmt.Errorf("verify: %s: %w", CheckReceiptNAAN, err)
		}
		s := "ark:" + key
		detail := fmt.Sprintf("the receipt for request ID %q of %s is held by a client that is not registered", request, s)
		if client != nil {
			arkNAAN, _, _ := strings.Cut(key, "/")
			detail = fmt.Sprintf("the receipt for request ID %q is held by client %s of NAAN %s, but %s is in NAAN %s", request, *client, *naan, s, arkNAAN)
		}
		a.rec.add(CheckReceiptNAAN, s, s, detail)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("verify: %s: %w", CheckReceiptNAAN, err)
	}
	return nil
}

// requestUniqueCheck runs receipt.request_unique: trusted to a valid unique index of ark on
// exactly (created_by, request_id), whole or partial on "request_id is not null" (the ledger's
// ark_receipt; receipts are ark columns), when there is one, else by
// grouping the receipts.
func (a *audit) requestUniqueCheck(ctx context.Context, ln *lane) error {
	var indexed bool
	err := ln.tx.QueryRow(ctx, `select exists (
		select 1 from pg_index i
		where i.indrelid = 'ark'::regclass and i.indisunique and i.indisvalid and i.indisready
		  and (i.indpred is null or pg_get_expr(i.indpred, i.indrelid) = '(request_id IS NOT NULL)')
		  and i.indexprs is null and i.indnatts = 2
		  and (select array_agg(a.attname::text order by a.attname) from pg_attribute a
		       where a.attrelid = i.indrelid and a.attnum = any (i.indkey)) = array['created_by', 'request_id'])`).Scan(&indexed)
	if err != nil {
		return fmt.Errorf("verify: %s: %w", CheckRequestUnique, err)
	}
	if indexed {
		return nil
	}
	rows, err := ln.tx.Query(ctx, `select c.client_id, r.request_id, count(distinct r.ark), (array_agg(distinct r.ark order by r.ark))[1:3]
		from mint_receipt r left join client c on c.id = r.client_pk
		group by r.client_pk, c.client_id, r.request_id
		having count(distinct r.ark) > 1
		order by 2, 1`)
	if err != nil {
		return fmt.Errorf("verify: %s: %w", CheckRequestUnique, err)
	}
	defer rows.Close()
	for rows.Next() {
		var client *string
		var request string
		var n int64
		var keys []string
		if err := rows.Scan(&client, &request, &n, &keys); err != nil {
			return fmt.Errorf("verify: %s: %w", CheckRequestUnique, err)
		}
		arks := make([]string, len(keys))
		for i, k := range keys {
			arks[i] = "ark:" + k
		}
		more := ""
		if int64(len(arks)) < n {
			more = ", ..."
		}
		a.rec.add(CheckRequestUnique, arks[0], arks[0],
			fmt.Sprintf("request ID %q of %s maps to %d ARKs: %s%s", request, clientName(client), n, strings.Join(arks, ", "), more))
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("verify: %s: %w", CheckRequestUnique, err)
	}
	return nil
}

// chainCheck runs change.chain with window functions over ARK_CHANGE, each ARK's rows in the
// order of their number (seq, from 1 per ARK): the rows are numbered 1, 2, ... without a gap,
// each starts where the previous ended, and the last is compared with the ARK by a primary-key
// lookup (OFFSET 0 keeps the planner from turning the lookups into a scan of every ARK): its
// target and status, and the ARK's change count (change_seq) equal to the last number. The
// check costs what the history holds, not what the ledger holds. One finding per ARK, for its
// first break.
func (a *audit) chainCheck(ctx context.Context, ln *lane) error {
	scope := ""
	var args []any
	if a.since {
		scope = "where c.ark = any ($1)"
		args = append(args, a.changedKeys())
	}
	q := fmt.Sprintf(`select x.ark, x.rn, x.seq, x.before_url, x.prev_url, x.before_status, x.prev_status,
			x.after_url, x.after_status, cur.found, cur.url, cur.status, cur.change_seq
		from (select c.ark, c.seq, c.before_url, c.after_url, c.before_status, c.after_status,
		             lag(c.after_url) over w as prev_url, lag(c.after_status) over w as prev_status,
		             row_number() over w as rn, lead(c.seq) over w is null as last
		      from ark_change c %s
		      window w as (partition by c.ark order by c.seq)) x
		left join lateral (select true as found, a.url, ark_status_text(a.status) as status,
		                          coalesce(a.change_seq, 0) as change_seq from ark a
		                   where a.ark = x.ark and x.last offset 0) cur on true
		where x.seq <> x.rn
		   or (x.rn > 1 and (x.before_url is distinct from x.prev_url or x.before_status <> x.prev_status))
		   or (x.last and (cur.found is null or cur.url is distinct from x.after_url or x.after_status <> cur.status
		                   or cur.change_seq <> x.seq))
		order by x.ark, x.rn`, scope)
	rows, err := ln.tx.Query(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("verify: %s: %w", CheckChangeChain, err)
	}
	defer rows.Close()
	prev := ""
	for rows.Next() {
		var key string
		var rn, seq int64
		var beforeURL, prevURL, beforeStatus, prevStatus, afterURL, afterStatus, url, status *string
		var found *bool
		var count *int64
		if err := rows.Scan(&key, &rn, &seq, &beforeURL, &prevURL, &beforeStatus, &prevStatus, &afterURL, &afterStatus,
			&found, &url, &status, &count); err != nil {
			return fmt.Errorf("verify: %s: %w", CheckChangeChain, err)
		}
		if key == prev {
			continue
		}
		prev = key
		s := "ark:" + key
		var detail string
		switch {
		case seq != rn:
			detail = fmt.Sprintf("change %d of the history is numbered %d: changes are numbered from 1 without a gap, so one is missing", rn, seq)
		case rn > 1 && !sameString(beforeURL, prevURL):
			detail = fmt.Sprintf("change %d starts from target %s, but change %d ended at %s", rn, quoted(beforeURL), rn-1, quoted(prevURL))
		case rn > 1 && beforeStatus != nil && prevStatus != nil && *beforeStatus != *prevStatus:
			detail = fmt.Sprintf("change %d starts from status %s, but change %d ended at %s", rn, *beforeStatus, rn-1, *prevStatus)
		case found == nil:
			detail = fmt.Sprintf("%d ARK_CHANGE rows for an ARK that is not in the ledger", rn)
		case !sameString(afterURL, url):
			detail = fmt.Sprintf("the last change (change %d) ends at target %s, but the ARK points to %s", rn, quoted(afterURL), quoted(url))
		case afterStatus != nil && status != nil && *afterStatus != *status:
			detail = fmt.Sprintf("the last change (change %d) ends at status %s, but the ARK's status is %s", rn, quoted(afterStatus), quoted(status))
		default:
			detail = fmt.Sprintf("the ARK counts %d changes (change_seq), but its history holds %d", derefInt(count), rn)
		}
		a.rec.add(CheckChangeChain, s, s, detail)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("verify: %s: %w", CheckChangeChain, err)
	}
	return nil
}

// derefInt returns *n, or 0 for nil.
func derefInt(n *int64) int64 {
	if n == nil {
		return 0
	}
	return *n
}

func sameString(x, y *string) bool {
	if x == nil || y == nil {
		return x == nil && y == nil
	}
	return *x == *y
}

// quoted renders a nullable value for a finding: %q, or "(none)" for NULL.
func quoted(s *string) string {
	if s == nil {
		return "(none)"
	}
	return strconv.Quote(*s)
}
