package importer

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/legacy"
	"github.com/arkhe-ledger/arkhe/loader"
	"github.com/arkhe-ledger/arkhe/textin"
)

// batchWriter is the writing goroutine of an filePass: it owns the transaction, the conflict
// set and its counts.
type batchWriter struct {
	p         *filePass
	counts    *Counts
	restart   bool
	seenTable bool // import_seen exists (detect)

	// per batch, reused
	kept     []int32
	outcome  []int8
	existing []bool
	keys     []string // keys to probe
	probe    []int32  // their positions in kept

	// arks sends the new ARKs, one batch in flight on the transaction's connection while this
	// goroutine encodes the next. Every other use of the connection goes through tx, which
	// waits for it first.
	arks *loader.ARKWriter
	row  loader.ARKRow // the row being added, reused

	// fresh caches, per NAAN, whether the ledger held no ARK of it when this pass first met it
	fresh  map[string]bool
	filter *keyFilter // the keys this pass inserted into fresh NAANs
}

// flush writes one batch: the names it leaves out (import_skipped), NAAN records, the shoulders
// its shoulder records and rows need (createShoulders), the comparison of the other shoulder
// records with the ledger, then the rows.
// Its COPY may still be in flight when it returns; drain waits for it.
func (w *batchWriter) flush(ctx context.Context, b *batch) error {
	if len(b.skipped) > 0 {
		tx, err := w.tx()
		if err != nil {
			return err
		}
		if err := recordSkipped(ctx, tx, w.p.path, w.p.runID, b.skipped); err != nil {
			return err
		}
	}
	for i := range b.naans {
		if err := w.naanRecord(ctx, &b.naans[i]); err != nil {
			return err
		}
	}
	creates, err := w.createShoulders(ctx, b)
	if err != nil {
		return err
	}
	for i := range b.shoulders {
		if !creates[i] {
			if err := w.shoulderRecord(ctx, &b.shoulders[i]); err != nil {
				return err
			}
		}
	}
	if len(b.rows) == 0 {
		return nil
	}
	w.settle(b.rows)
	if err := w.rejectSettled(b.rows); err != nil {
		return err
	}
	if len(w.kept) == 0 {
		return nil
	}
	if w.restart {
		return w.detect(ctx, b.rows)
	}
	return w.write(ctx, b.rows)
}

// tx returns the file's transaction once the COPY in flight, if any, has finished: the one way
// the writer reaches the connection, so nothing can overtake a batch still being inserted.
func (w *batchWriter) tx() (pgx.Tx, error) {
	if err := w.drain(); err != nil {
		return nil, err
	}
	return w.p.tx, nil
}

// drain waits for the COPY in flight, if any, and returns its outcome; the writing goroutine
// calls it last.
func (w *batchWriter) drain() error { return w.arks.Wait() }

// sent turns the outcome of the COPY of the batch ending at line last into the import's error.
func (w *batchWriter) sent(last int) func(want, inserted int64, err error) error {
	return func(want, inserted int64, err error) error {
		switch {
		case ledger.IsUniqueViolation(err):
			return fmt.Errorf("import %s: another writer added one of the ARKs of the batch ending at line %d while it was being imported; nothing of this file was written, run the import again: %w",
				w.p.path, last, err)
		case err != nil:
			return fmt.Errorf("import %s: insert the batch ending at line %d: %w", w.p.path, last, err)
		case inserted != want:
			return fmt.Errorf("import %s: inserted %d ARKs, expected %d", w.p.path, inserted, want)
		}
		return nil
	}
}

// detect replaces write for the rest of a pass that will be run again (a conflict spanned
// batches after its first row was inserted): nothing more goes into ark; the batch's keys are
// only checked against ark and against the keys of earlier detecting batches, kept with a digest
// of their values in a temporary table (bounded memory), so that the next pass knows every
// conflicting ARK of the file.
func (w *batchWriter) detect(ctx context.Context, rows []arkItem) error {
	tx, err := w.tx()
	if err != nil {
		return err
	}
	if !w.seenTable {
		if _, err := tx.Exec(ctx, `create temp table import_seen (ark text collate "C" primary key, digest bytea not null) on commit drop`); err != nil {
			return fmt.Errorf("import %s: %w", w.p.path, err)
		}
		w.seenTable = true
	}
	if cap(w.existing) < len(w.kept) {
		w.existing = make([]bool, len(w.kept))
	}
	w.existing = w.existing[:len(w.kept)]
	clear(w.existing)
	w.keys, w.probe = w.keys[:0], w.probe[:0]
	for k, i := range w.kept {
		w.keys = append(w.keys, rows[i].row.Key())
		w.probe = append(w.probe, int32(k))
	}
	var counts Counts // this pass's counts are discarded
	saved := w.counts
	w.counts = &counts
	_, err = w.classify(ctx, rows)
	w.counts = saved
	if err != nil {
		return err
	}
	digests := make([][]byte, len(w.kept))
	w.keys, w.probe = w.keys[:0], w.probe[:0]
	for k, i := range w.kept {
		if !w.existing[k] {
			digests[k] = rowDigest(&rows[i].row)
			w.keys = append(w.keys, rows[i].row.Key())
			w.probe = append(w.probe, int32(k))
		}
	}
	if len(w.keys) == 0 {
		return nil
	}
	res, err := tx.Query(ctx, `select k.rec::int, s.digest from unnest($1::text[]) with ordinality k(ark, rec)
		cross join lateral (select digest from import_seen where import_seen.ark = k.ark limit 1) s`, w.keys)
	if err != nil {
		return fmt.Errorf("import %s: %w", w.p.path, err)
	}
	seen := make([]bool, len(w.keys))
	for res.Next() {
		var rec int32
		var d []byte
		if err := res.Scan(&rec, &d); err != nil {
			res.Close()
			return fmt.Errorf("import %s: %w", w.p.path, err)
		}
		rec--
		if rec < 0 || int(rec) >= len(w.keys) {
			res.Close()
			return fmt.Errorf("import %s: unexpected row %d", w.p.path, rec)
		}
		seen[rec] = true
		if string(d) != string(digests[w.probe[rec]]) {
			w.p.conflicts[w.keys[rec]] = struct{}{}
		}
	}
	res.Close()
	if err := res.Err(); err != nil {
		return fmt.Errorf("import %s: %w", w.p.path, err)
	}
	var fresh [][]any
	for j, key := range w.keys {
		if !seen[j] {
			fresh = append(fresh, []any{key, digests[w.probe[j]]})
		}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"import_seen"}, []string{"ark", "digest"}, pgx.CopyFromRows(fresh)); err != nil {
		return fmt.Errorf("import %s: %w", w.p.path, err)
	}
	return nil
}

// rowDigest is a SHA-256 over the values SameContent compares.
func rowDigest(r *legacy.Row) []byte {
	h := sha256.New()
	for _, p := range []*string{r.Target, r.Reason, r.Who, r.What, r.When, r.Commitment} {
		if p == nil {
			h.Write([]byte{0})
			continue
		}
		h.Write([]byte{1})
		h.Write([]byte(strconv.Itoa(len(*p))))
		h.Write([]byte{':'})
		h.Write([]byte(*p))
	}
	h.Write([]byte(r.Status))
	h.Write([]byte{0})
	if r.Metadata != nil {
		h.Write([]byte{1})
		h.Write(r.Metadata)
	}
	return h.Sum(nil)
}

// Outcomes of settle for each row of a batch.
const (
	outcomeKeep int8 = iota
	outcomeConflict
	outcomeCollapsed
)

// settle decides, within the batch, which rows go on to the ledger: a row whose ARK is in conflict
// (now or earlier in the file) does not; of identical rows for one ARK only the first does.
func (w *batchWriter) settle(rows []arkItem) {
	w.kept = w.kept[:0]
	outcome := make([]int8, len(rows))
	first := make(map[string]int32, len(rows))
	var dups []int32
	for i := range rows {
		k := rows[i].row.Key()
		if _, bad := w.p.conflicts[k]; bad {
			outcome[i] = outcomeConflict
			continue
		}
		if _, ok := first[k]; ok {
			dups = append(dups, int32(i))
			continue
		}
		first[k] = int32(i)
	}
	for _, i := range dups {
		k := rows[i].row.Key()
		j := first[k]
		if _, bad := w.p.conflicts[k]; bad || !rows[i].row.SameContent(&rows[j].row) {
			w.p.conflicts[k] = struct{}{}
			outcome[i] = outcomeConflict
			continue
		}
		outcome[i] = outcomeCollapsed
	}
	for k, j := range first {
		if _, bad := w.p.conflicts[k]; bad {
			outcome[j] = outcomeConflict
		}
	}
	for i := range rows {
		if outcome[i] == outcomeKeep {
			w.kept = append(w.kept, int32(i))
		}
	}
	w.outcome = outcome
}

// rejectSettled writes the conflict and collapse lines decided by settle.
func (w *batchWriter) rejectSettled(rows []arkItem) error {
	var lines map[string][]string // key -> "line N" of every conflicting row in the batch
	for i, o := range w.outcome {
		if o != outcomeConflict {
			continue
		}
		if lines == nil {
			lines = map[string][]string{}
		}
		k := rows[i].row.Key()
		lines[k] = append(lines[k], strconv.Itoa(rows[i].row.Source.Line))
	}
	for i, o := range w.outcome {
		r := &rows[i].row
		switch o {
		case outcomeConflict:
			w.counts.Conflicts++
			reason := "rows of this file normalize to the same ARK with different values; neither is imported"
			if ls := lines[r.Key()]; len(ls) > 1 {
				reason += " (rows at lines " + strings.Join(ls, ", ") + " in this batch)"
			}
			if err := w.p.rej.write(KindConflict, r.Source, r.ARK.Original, r.ARK.String(), "id", reason, nil, nil, ""); err != nil {
				return err
			}
		case outcomeCollapsed:
			w.counts.Collapsed++
			if err := w.p.rej.write(KindCollapsed, r.Source, r.ARK.Original, r.ARK.String(), "id",
				"identical to an earlier row for the same ARK; both are one ARK", nil, nil, ""); err != nil {
				return err
			}
		}
	}
	return nil
}

// write classifies the kept rows against the ledger by key (probeSQL) and COPYs the new
// ones into ark, in the file's transaction. The COPY is left in flight (send): the next batch is
// normalized and encoded while the server inserts this one, as a single streaming COPY would.
func (w *batchWriter) write(ctx context.Context, rows []arkItem) error {
	if cap(w.existing) < len(w.kept) {
		w.existing = make([]bool, len(w.kept))
	}
	w.existing = w.existing[:len(w.kept)]
	clear(w.existing)
	// Only keys that may be in the ledger are probed: every key of a NAAN that had ARKs before
	// this run, and a key of a NAAN new to the ledger only when the filter of keys this run
	// inserted says it may have been inserted already (no false negatives).
	w.keys, w.probe = w.keys[:0], w.probe[:0]
	for k, i := range w.kept {
		r := &rows[i].row
		fresh, err := w.freshNAAN(ctx, r.ARK.NAAN)
		if err != nil {
			return err
		}
		if !fresh || w.filter.mayContain(r.Key()) {
			w.keys = append(w.keys, r.Key())
			w.probe = append(w.probe, int32(k))
		}
	}
	nExisting := 0
	if len(w.keys) > 0 {
		var err error
		if nExisting, err = w.classify(ctx, rows); err != nil {
			return err
		}
	}
	if nExisting == len(w.kept) {
		return nil
	}
	// encode while the previous batch's COPY is in flight; the keys join the filter now (a COPY
	// that fails ends the import, so the filter is never consulted after a failure)
	for k, i := range w.kept {
		if w.existing[k] {
			continue
		}
		w.add(&rows[i])
		w.filter.add(rows[i].row.Key())
		switch c := rows[i].check; {
		case c == nil:
			w.counts.CheckNone++
		case *c:
			w.counts.CheckVerified++
		default:
			w.counts.CheckFailed++
		}
	}
	if err := w.arks.Send(ctx, w.sent(rows[len(rows)-1].row.Source.Line)); err != nil {
		return err
	}
	w.counts.Imported += int64(len(w.kept) - nExisting) // counted when sent: a COPY that fails ends the import
	return nil
}

// freshNAAN reports whether the ledger held no ARK of naan when this pass first met it (the
// keys of the ledger are "NAAN/name", so the primary key answers by a range).
func (w *batchWriter) freshNAAN(ctx context.Context, naan string) (bool, error) {
	if f, ok := w.fresh[naan]; ok {
		return f, nil
	}
	tx, err := w.tx()
	if err != nil {
		return false, err
	}
	var found bool
	if err := tx.QueryRow(ctx, `select exists (select 1 from ark where ark >= $1 and ark < $2)`,
		naan+"/", naan+"0").Scan(&found); err != nil {
		return false, fmt.Errorf("import %s: look up NAAN %s: %w", w.p.path, naan, err)
	}
	if w.fresh == nil {
		w.fresh = map[string]bool{}
	}
	w.fresh[naan] = !found
	return !found, nil
}

// diffFields names the fields the importer compares with the ledger.
var diffFields = [...]string{"target", "status", "tombstone_reason", "who", "what", "when", "commitment", "metadata"}

// classify probes the kept rows' keys: a key this run inserted in an earlier batch is a
// collapsed duplicate when identical and a conflict otherwise (the file is then read again); a
// key that was in the ledger before is unchanged or a difference. It marks w.existing and
// returns how many keys were found.
func (w *batchWriter) classify(ctx context.Context, rows []arkItem) (int, error) {
	tx, err := w.tx()
	if err != nil {
		return 0, err
	}
	sql := probeSQL
	var at map[string][]int32 // citus: key -> its positions in w.keys
	if w.p.citus {
		sql = probeCitusSQL
		at = make(map[string][]int32, len(w.keys))
		for i, k := range w.keys {
			at[k] = append(at[k], int32(i)+1)
		}
	}
	res, err := tx.Query(ctx, sql, w.keys, w.p.runID)
	if err != nil {
		return 0, fmt.Errorf("import %s: classify: %w", w.p.path, err)
	}
	defer res.Close()
	n := 0
	var led [8]*string
	var recs []int32
	for res.Next() {
		var rec int32
		var key string
		var ours bool
		var status string
		if w.p.citus {
			err = res.Scan(&key, &ours, &led[0], &status, &led[2], &led[3], &led[4], &led[5], &led[6], &led[7])
			recs = at[key]
		} else {
			err = res.Scan(&rec, &ours, &led[0], &status, &led[2], &led[3], &led[4], &led[5], &led[6], &led[7])
			recs = append(recs[:0], rec)
		}
		if err != nil {
			return n, fmt.Errorf("import %s: classify: %w", w.p.path, err)
		}
		led[1] = &status
		for _, rec := range recs {
			if err := w.classifyOne(rec, ours, &led, rows); err != nil {
				return n, err
			}
			n++
		}
	}
	if err := res.Err(); err != nil {
		return n, fmt.Errorf("import %s: classify: %w", w.p.path, err)
	}
	return n, nil
}

// classifyOne settles the kept row at 1-based position rec of w.keys, found in the ledger with
// the values led (ours: inserted by this run).
func (w *batchWriter) classifyOne(rec int32, ours bool, led *[8]*string, rows []arkItem) error {
	rec--
	if rec < 0 || int(rec) >= len(w.probe) || w.existing[w.probe[rec]] {
		return fmt.Errorf("import %s: classify: unexpected row %d", w.p.path, rec)
	}
	k := w.probe[rec]
	w.existing[k] = true
	r := &rows[w.kept[k]].row
	exp := [8]*string{r.Target, &r.Status, r.Reason, r.Who, r.What, r.When, r.Commitment, nil}
	if r.Metadata != nil {
		m := string(r.Metadata)
		exp[7] = &m
	}
	var d [8]bool
	same := true
	for f := range d {
		if f == 7 {
			d[f] = !sameJSON(exp[f], led[f])
		} else {
			d[f] = !legacy.SameText(exp[f], led[f])
		}
		same = same && !d[f]
	}
	switch {
	case ours && same:
		w.counts.Collapsed++
		if err := w.p.rej.write(KindCollapsed, r.Source, r.ARK.Original, r.ARK.String(), "id",
			"identical to an earlier row for the same ARK; both are one ARK", nil, nil, ""); err != nil {
			return err
		}
	case ours:
		// a conflict with a row of an earlier batch that was already inserted: the pass is
		// finished to find every such ARK, then rolled back and run again
		w.p.conflicts[r.Key()] = struct{}{}
		w.restart = true
		w.counts.Conflicts++
	case same:
		w.counts.Unchanged++
	default:
		w.counts.Differences++
		for f := range d {
			if !d[f] {
				continue
			}
			if err := w.p.rej.write(KindDifference, r.Source, r.ARK.Original, r.ARK.String(), diffFields[f],
				"the ARK is in the ledger with another value; left alone (arkhe reconcile --apply accepts the export's value)",
				exp[f], led[f], ""); err != nil {
				return err
			}
		}
	}
	return nil
}

// sameJSON compares two JSON texts as values (jsonb renders keys in its own order and spacing).
func sameJSON(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if *a == *b {
		return true
	}
	var va, vb any
	if json.Unmarshal([]byte(*a), &va) != nil || json.Unmarshal([]byte(*b), &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// add adds the ARK of r to the batch being sent, the run's client and import run as its writer.
func (w *batchWriter) add(r *arkItem) {
	row := &w.row
	*row = loader.ARKRow{Key: r.row.Key(), NAAN: r.row.ARK.NAAN, ShoulderID: r.entry.ID, Name: r.row.ARK.Name,
		URL: r.row.Target, Commitment: r.row.Commitment, Who: r.row.Who, What: r.row.What, When: r.row.When,
		Metadata: r.row.Metadata, Reason: r.row.Reason, Original: r.row.Original, CheckOK: r.check,
		CreatedAt: r.row.Created, UpdatedAt: r.row.Updated, CreatedBy: w.p.clientPK, ImportRunID: &w.p.runID}
	if r.row.Status != string(legacy.StatusPublic) { // NULL means public
		row.Status = &r.row.Status
	}
	w.arks.Add(row)
}

// createNAANSQL creates NAAN $1 for import run $2 (its name unknown until a registry import
// fills it) unless the ledger holds it.
const createNAANSQL = `insert into naan (naan, import_run_id) values ($1, $2) on conflict (naan) do nothing`

// ensureNAAN creates naan (name unknown until a registry import fills it) if it is missing.
func (w *batchWriter) ensureNAAN(ctx context.Context, naan string) error {
	if w.p.naans[naan] {
		return nil
	}
	tx, err := w.tx()
	if err != nil {
		return err
	}
	tag, err := tx.Exec(ctx, createNAANSQL, naan, w.p.runID)
	if err != nil {
		return fmt.Errorf("import %s: create NAAN %s: %w", w.p.path, naan, err)
	}
	w.counts.NAANsCreated += tag.RowsAffected()
	w.p.naans[naan] = true
	return nil
}

// legacyShoulderNote is the note of a shoulder an import creates for the ARKs it brings.
const legacyShoulderNote = "legacy shoulder created by arkhe import for imported ARKs (a legacy shoulder outside the consonants-then-digit form never mints)"

// newShoulder is a shoulder a batch needs that the ledger lacked when the pass read its shoulders:
// its entry (ID 0 until created) and the record that describes it (nil: it is created for
// imported ARKs).
type newShoulder struct {
	e   *legacy.ShoulderEntry
	rec *legacy.ShoulderRecord
}

// values returns the minter, redirect and note the shoulder is created with ("" is stored as NULL).
func (s newShoulder) values() (minter, redirect, note string) {
	if s.rec != nil {
		return shoulderRecordValues(s.rec)
	}
	return "", "", legacyShoulderNote
}

// createShouldersSQL inserts legacy (reserved) shoulders, one per element of its arrays (NAAN,
// shoulder with its slash, check zone, minter, redirect, note; "" as NULL) for import run $7, and
// returns those it created: a shoulder another transaction created first is left alone.
const createShouldersSQL = `insert into shoulder (naan, shoulder, status, check_zone, minter, redirect, note, import_run_id)
	select s.naan, s.shoulder, 'reserved', s.zone, nullif(s.minter, ''), nullif(s.redirect, ''), nullif(s.note, ''), $7::bigint
	from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) s(naan, shoulder, zone, minter, redirect, note)
	on conflict (naan, shoulder) do nothing
	returning id, naan, shoulder`

// createShoulders creates the shoulders batch b needs that the ledger lacks (entries with ID 0)
// and sets their IDs: first those of its shoulder records, each with the values of the first
// record of the batch that names it (later ones are compared with it, as with any shoulder in
// the ledger), then those of its rows, as legacy shoulders. Every shoulder is created reserved,
// after its NAAN (ensureNAAN) and before the COPY of the rows under it. One statement inserts
// them all and, only when another transaction created some of them first, one more reads those
// IDs. It returns, per shoulder record of b, whether that record created its shoulder.
func (w *batchWriter) createShoulders(ctx context.Context, b *batch) ([]bool, error) {
	creates := make([]bool, len(b.shoulders))
	var todo []newShoulder
	var claimed map[*legacy.ShoulderEntry]bool
	claim := func(e *legacy.ShoulderEntry, rec *legacy.ShoulderRecord) bool {
		if e.ID != 0 || claimed[e] {
			return false
		}
		if claimed == nil {
			claimed = map[*legacy.ShoulderEntry]bool{}
		}
		claimed[e] = true
		todo = append(todo, newShoulder{e: e, rec: rec})
		return true
	}
	for i := range b.shoulders {
		creates[i] = claim(b.shoulders[i].entry, b.shoulders[i].rec)
	}
	for i := range b.rows {
		claim(b.rows[i].entry, nil)
	}
	if len(todo) == 0 {
		return creates, nil
	}
	for _, s := range todo {
		if err := w.ensureNAAN(ctx, s.e.NAAN); err != nil {
			return nil, err
		}
	}
	n := len(todo)
	naans, stored, zones := make([]string, n), make([]string, n), make([]string, n)
	minters, redirects, notes := make([]string, n), make([]string, n), make([]string, n)
	at := make(map[string]*legacy.ShoulderEntry, n) // NAAN + stored shoulder (a NAAN holds no slash)
	for i, s := range todo {
		naans[i], stored[i], zones[i] = s.e.NAAN, s.e.Stored(), string(s.e.Zone)
		minters[i], redirects[i], notes[i] = s.values()
		at[naans[i]+stored[i]] = s.e
	}
	tx, err := w.tx()
	if err != nil {
		return nil, err
	}
	created := 0
	res, err := tx.Query(ctx, createShouldersSQL, naans, stored, zones, minters, redirects, notes, w.p.runID)
	if err == nil {
		for res.Next() {
			var id int64
			var naan, shoulder string
			if err = res.Scan(&id, &naan, &shoulder); err != nil {
				break
			}
			e := at[naan+shoulder]
			if e == nil || e.ID != 0 {
				err = fmt.Errorf("created shoulder %s of NAAN %s, which was not asked for", shoulder, naan)
				break
			}
			e.ID = id
			created++
		}
		res.Close()
		if err == nil {
			err = res.Err()
		}
	}
	if err != nil {
		return nil, w.shoulderFailure(ctx, todo, err)
	}
	w.counts.ShouldersCreated += int64(created)
	if created < len(todo) {
		if err := w.readShoulderIDs(ctx, todo, at); err != nil {
			return nil, err
		}
	}
	return creates, nil
}

// readShoulderIDs sets the IDs of the shoulders of todo that are still 0: shoulders another
// transaction created after this pass read the ledger's shoulders. at maps NAAN + stored
// shoulder to their entries.
func (w *batchWriter) readShoulderIDs(ctx context.Context, todo []newShoulder, at map[string]*legacy.ShoulderEntry) error {
	var naans, stored []string
	for _, s := range todo {
		if s.e.ID == 0 {
			naans, stored = append(naans, s.e.NAAN), append(stored, s.e.Stored())
		}
	}
	tx, err := w.tx()
	if err != nil {
		return err
	}
	res, err := tx.Query(ctx, `select s.id, s.naan, s.shoulder from unnest($1::text[], $2::text[]) k(naan, shoulder)
		join shoulder s on s.naan = k.naan and s.shoulder = k.shoulder`, naans, stored)
	if err != nil {
		return fmt.Errorf("import %s: read shoulder %s of NAAN %s: %w", w.p.path, stored[0], naans[0], err)
	}
	for res.Next() {
		var id int64
		var naan, shoulder string
		if err := res.Scan(&id, &naan, &shoulder); err != nil {
			res.Close()
			return fmt.Errorf("import %s: read shoulder %s of NAAN %s: %w", w.p.path, shoulder, naan, err)
		}
		if e := at[naan+shoulder]; e != nil {
			e.ID = id
		}
	}
	res.Close()
	if err := res.Err(); err != nil {
		return fmt.Errorf("import %s: read shoulder %s of NAAN %s: %w", w.p.path, stored[0], naans[0], err)
	}
	for _, s := range todo {
		if s.e.ID == 0 {
			return fmt.Errorf("import %s: create shoulder %s of NAAN %s: neither created nor found in the ledger", w.p.path, s.e.Stored(), s.e.NAAN)
		}
	}
	return nil
}

// shoulderFailure returns the error of a createShoulders statement that failed (err), naming the
// shoulder that failed. The failure aborted the file's transaction, and with it the import of the
// file; to find the shoulder, the pass is rolled back to its savepoint and the shoulders of todo
// are created again one at a time, each after its NAAN, until one fails. When none does (the
// failure was not one shoulder's), the error names the batch's first shoulder and their number.
func (w *batchWriter) shoulderFailure(ctx context.Context, todo []newShoulder, err error) error {
	first := todo[0].e
	batchErr := fmt.Errorf("import %s: create shoulder %s of NAAN %s and %d more of the batch: %w",
		w.p.path, first.Stored(), first.NAAN, len(todo)-1, err)
	if len(todo) == 1 {
		batchErr = fmt.Errorf("import %s: create shoulder %s of NAAN %s: %w", w.p.path, first.Stored(), first.NAAN, err)
	}
	if len(todo) == 1 || ctx.Err() != nil {
		return batchErr
	}
	tx, terr := w.tx()
	if terr != nil {
		return batchErr
	}
	if _, rerr := tx.Exec(ctx, `rollback to savepoint `+passSavepoint); rerr != nil {
		return batchErr
	}
	for _, s := range todo {
		e := s.e
		if _, err := tx.Exec(ctx, createNAANSQL, e.NAAN, w.p.runID); err != nil {
			return fmt.Errorf("import %s: create NAAN %s: %w", w.p.path, e.NAAN, err)
		}
		minter, redirect, note := s.values()
		if _, err := tx.Exec(ctx, createShouldersSQL, []string{e.NAAN}, []string{e.Stored()}, []string{string(e.Zone)},
			[]string{minter}, []string{redirect}, []string{note}, w.p.runID); err != nil {
			return fmt.Errorf("import %s: create shoulder %s of NAAN %s: %w", w.p.path, e.Stored(), e.NAAN, err)
		}
	}
	return batchErr
}

// shoulderRecordValues maps a shoulder record onto minter, redirect and note.
func shoulderRecordValues(s *legacy.ShoulderRecord) (minter, redirect, note string) {
	redirect = s.Target
	if redirect == "" {
		redirect = s.Redirect
	}
	note = s.Name
	if s.Description != "" {
		if note != "" {
			note += ": "
		}
		note += s.Description
	}
	return s.Minter, redirect, note
}

// shoulderRecord compares a record with its shoulder in the ledger (one the record did not
// create, see createShoulders): empty columns are filled, differing ones reported.
func (w *batchWriter) shoulderRecord(ctx context.Context, it *shoulderItem) error {
	e := it.entry
	minter, redirect, note := shoulderRecordValues(it.rec)
	tx, err := w.tx()
	if err != nil {
		return err
	}
	var cur [3]*string
	if err := tx.QueryRow(ctx, `select minter, redirect, note from shoulder where id = $1`, e.ID).Scan(&cur[0], &cur[1], &cur[2]); err != nil {
		return fmt.Errorf("import %s: read shoulder %s of NAAN %s: %w", w.p.path, e.Stored(), e.NAAN, err)
	}
	id := e.NAAN + e.Stored()
	if it.rec.Prefix != "" {
		id = it.rec.Prefix
	}
	return w.compareFill(ctx, it.rec.Source, id, "shoulder", []string{"minter", "redirect", "note"},
		[]string{minter, redirect, note}, cur[:], `update shoulder set minter = coalesce(minter, nullif($2, '')),
		redirect = coalesce(redirect, nullif($3, '')), note = coalesce(note, nullif($4, '')) where id = $1`, e.ID)
}

// compareFill compares a registry record's values with the ledger's current ones: a value the
// ledger lacks is filled (fillSQL with key and the values, an empty value as NULL), a differing
// one is reported.
func (w *batchWriter) compareFill(ctx context.Context, loc textin.Location, id, table string, fields, vals []string, cur []*string, fillSQL string, key any) error {
	fill, differ := false, false
	for i := range fields {
		v := vals[i]
		switch {
		case v == "":
		case cur[i] == nil:
			fill = true
		case *cur[i] != v:
			differ = true
			if err := w.p.rej.write(KindDifference, loc, id, "", table+"."+fields[i],
				"the "+table+" is in the ledger with another value; left alone", &vals[i], cur[i], ""); err != nil {
				return err
			}
		}
	}
	switch {
	case differ:
		w.counts.RegistryDifferences++
	case fill:
		w.counts.RegistryFilled++
	default:
		w.counts.RegistryUnchanged++
	}
	if fill {
		args := []any{key}
		for _, v := range vals {
			if v == "" {
				args = append(args, nil) // nothing to fill
			} else {
				args = append(args, v)
			}
		}
		tx, err := w.tx()
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, fillSQL, args...); err != nil {
			return fmt.Errorf("import %s: fill %s %s: %w", w.p.path, table, id, err)
		}
	}
	return nil
}

// naanRecord creates the record's NAAN or compares it with the ledger's (insert-only: empty
// columns filled, differing ones reported). Registry NAANs are not authoritative here (arkhe
// forwards them to their redirect); an arklet site's own NAAN is.
func (w *batchWriter) naanRecord(ctx context.Context, it *naanItem) error {
	n := it.rec
	// who keeps the registry's whole `who` (Native (=) Name (=) ACRONYM) when it says more than
	// the name; redirect is the resolver template, where the base URL
	who := ""
	if n.NameNative != "" || n.Acronym != "" {
		who = joinNonEmpty(" (=) ", n.NameNative, n.Name, n.Acronym)
	}
	redirect := n.Target
	policy := ""
	if n.OrgType != "" || n.Policy != "" || n.Tenure != "" || n.PolicyURL != "" {
		policy = n.OrgType + " | " + n.Policy + " | " + n.Tenure + " | " + n.PolicyURL
	}
	registered := ""
	if n.When != nil {
		registered = n.When.UTC().Format(time.RFC3339)
	}
	vals := []string{n.Name, who, redirect, n.Where, policy, registered, n.Description}
	fields := []string{"name", "who", "redirect", "where", "na_policy", "registered_at", "note"}
	for i, v := range vals {
		if p := legacy.CheckText(fields[i], v); p != nil {
			w.counts.Rejected++
			return w.p.rej.write(KindRejected, n.Source, n.NAAN, "", fields[i], p.Reason, nil, nil, "")
		}
	}
	authoritative := w.p.format == legacy.ArkletJSON
	tx, err := w.tx()
	if err != nil {
		return err
	}
	tag, err := tx.Exec(ctx, `insert into naan (naan, name, is_authoritative, redirect, na_policy, who, erc_where,
		registered_at, note, import_run_id)
		values ($1, nullif($2, ''), $3, nullif($4, ''), nullif($5, ''), nullif($6, ''), nullif($7, ''),
		        nullif($8, '')::timestamptz, nullif($9, ''), $10)
		on conflict (naan) do nothing`,
		it.naan, n.Name, authoritative, redirect, policy, who, n.Where, registered, n.Description, w.p.runID)
	if err != nil {
		return fmt.Errorf("import %s: NAAN %s: %w", w.p.path, it.naan, err)
	}
	w.p.naans[it.naan] = true
	if tag.RowsAffected() == 1 {
		w.counts.NAANsCreated++
		return nil
	}
	var cur [7]*string
	if err := tx.QueryRow(ctx, `select name, who, redirect, erc_where, na_policy,
		to_char(registered_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), note from naan where naan = $1`, it.naan).
		Scan(&cur[0], &cur[1], &cur[2], &cur[3], &cur[4], &cur[5], &cur[6]); err != nil {
		return fmt.Errorf("import %s: read NAAN %s: %w", w.p.path, it.naan, err)
	}
	// $7 is a timestamptz parameter, not text cast in the statement: Citus refuses a stable
	// function (the text-to-timestamptz cast) inside COALESCE in an UPDATE of a reference table
	return w.compareFill(ctx, n.Source, it.naan, "naan", fields, vals, cur[:],
		`update naan set name = coalesce(name, nullif($2, '')), who = coalesce(who, nullif($3, '')),
		redirect = coalesce(redirect, nullif($4, '')), erc_where = coalesce(erc_where, nullif($5, '')),
		na_policy = coalesce(na_policy, nullif($6, '')), registered_at = coalesce(registered_at, $7::timestamptz),
		note = coalesce(note, nullif($8, '')) where naan = $1`, it.naan)
}

func joinNonEmpty(sep string, parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}

// keyFilter is a blocked Bloom filter over the keys an import pass inserted: mayContain never
// misses a key that was added, and wrongly says yes for a small share of others (those are probed,
// which costs a lookup, never a wrong answer). A key's bits all lie in one 64-bit word, so adding or
// testing it touches one cache line (four random lines made it the writer's largest cost). Its size
// is fixed when created, so memory stays bounded whatever the file's size; a blocked filter
// matches other keys more often than a classic one of the same size, and those needless probes
// cost less than the cache misses it saves.
type keyFilter struct {
	words []uint64
	mask  uint64 // len(words)-1
	seed  maphash.Seed
}

// keyFilterHashes is the number of bits per key (within its word).
const keyFilterHashes = 4

// newKeyFilter returns a filter of about sizeHint/2 bits (sizeHint: the file's size in octets, a
// record taking well over 100), between 2^20 and 2^28 bits (128 KiB to 32 MiB).
func newKeyFilter(sizeHint int64) *keyFilter {
	n := uint64(1) << 20
	for n < uint64(sizeHint)/2 && n < 1<<28 {
		n <<= 1
	}
	return &keyFilter{words: make([]uint64, n/64), mask: n/64 - 1, seed: maphash.MakeSeed()}
}

// slot returns the key's word and the bits it sets there: the hash's low bits choose the word,
// four 6-bit fields of its high half the bits.
func (f *keyFilter) slot(key string) (*uint64, uint64) {
	h := maphash.String(f.seed, key)
	var m uint64
	for i := range uint64(keyFilterHashes) {
		m |= 1 << (h >> (40 + 6*i) & 63)
	}
	return &f.words[h&f.mask], m
}

func (f *keyFilter) add(key string) {
	w, m := f.slot(key)
	*w |= m
}

func (f *keyFilter) mayContain(key string) bool {
	w, m := f.slot(key)
	return *w&m == m
}
