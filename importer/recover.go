package importer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/loader"
	"github.com/arkhe-ledger/arkhe/pipeline"
	"github.com/arkhe-ledger/arkhe/textin"
)

// MintMapFormat is the import format of a mint map (`arkhe import --input-format mint-map`),
// recorded as the import run's format (ledger.ImportFormatMintMap).
const MintMapFormat = ledger.ImportFormatMintMap

// The kinds of line a recovery from mint maps adds to the reject file (beside KindRejected).
const (
	// KindChangedAfterMint: the ARK is in the ledger under the mint map's request ID, and
	// field holds another value than the map's (changed after the mint, e.g. by arkhe update);
	// nothing is overwritten. One line per differing field.
	KindChangedAfterMint = "changed-after-mint"
	// KindPayloadUnknown: the ARK was put back from a mint map written before mint maps
	// recorded the payload; its target and ERC are unknown and left empty (never invented).
	KindPayloadUnknown = "payload unknown"
)

// PayloadUnknownNote is the reason of a KindPayloadUnknown line.
const PayloadUnknownNote = "put back from a mint map without the payload columns (written before mint maps recorded them): " +
	"its target and ERC are unknown and left empty, and its receipt records the empty payload, so a re-run of its manifest row is " +
	"refused as another payload rather than given a new ARK; set the target with arkhe update"

// RecoverConfig configures Recover (`arkhe import --input-format mint-map`).
type RecoverConfig struct {
	// Inputs are the mint maps (pipeline.OpenMintMap), recovered in order, each in its own
	// transaction and import run.
	Inputs []string
	// ClientID is the registered client whose mint maps these are: the request IDs are its, the
	// receipts put back name it. It must be active and hold the ark:import scope; a client whose
	// authority is not "system" recovers ARKs of its own NAAN only.
	ClientID string
	// Floor, when set, is raised to before any map is read (ledger.RaiseCounters): the audit
	// baseline file's high-water mark and draws, so no ARK put back or minted afterwards takes
	// a number the lost ones had, and the draws are not behind. Needs the operator role or the
	// owner.
	Floor *ledger.Floor
	// RejectsPath is where the reject file goes (RejectHeader); "" writes none.
	RejectsPath string
	// BatchSize is the number of rows classified and written at a time (0: DefaultBatch).
	BatchSize int
	// DryRun classifies every row and rolls back: the counts and the reject file are exact,
	// the ledger is unchanged (the floor is not raised).
	DryRun bool
}

// RecoverCounts are the counts of a recovery (per map, or summed); they are also stored in
// import_run.counts.
type RecoverCounts struct {
	// Read counts every row read, bad ones included.
	Read int64 `json:"read"`
	// Recovered ARKs were absent from the ledger and are put back with their receipts;
	// PayloadUnknown of them from a map without the payload columns.
	Recovered      int64 `json:"recovered"`
	PayloadUnknown int64 `json:"payload_unknown"`
	// Present ARKs are in the ledger under the row's request ID with the row's values (or the
	// map records no values to compare), including a row repeated within the run.
	Present int64 `json:"present"`
	// ChangedAfterMint ARKs are in the ledger under the row's request ID with another value:
	// reported per field, left alone.
	ChangedAfterMint int64 `json:"changed_after_mint"`
	// Rejected rows did not land (reject file kind "rejected"): unreadable, outside the
	// client's reach, under no registered shoulder, an ARK held under another request ID or
	// client, or a request ID that holds another ARK.
	Rejected int64 `json:"rejected"`
}

// Add adds o to c.
func (c *RecoverCounts) Add(o RecoverCounts) {
	c.Read += o.Read
	c.Recovered += o.Recovered
	c.PayloadUnknown += o.PayloadUnknown
	c.Present += o.Present
	c.ChangedAfterMint += o.ChangedAfterMint
	c.Rejected += o.Rejected
}

// Findings reports counts that make the run "done with findings" (exit 1): rejected rows and
// ARKs changed after their mint, all listed in the reject file. (Rows put back without a
// payload are listed too, as a note, but are no finding: the name is safe.)
func (c *RecoverCounts) Findings() bool { return c.Rejected > 0 || c.ChangedAfterMint > 0 }

// RecoverFile is what recovering one mint map did.
type RecoverFile struct {
	File string
	// Digest is the SHA-256 of the file's bytes (hex), recorded in import_run.
	Digest  string
	Counts  RecoverCounts
	Elapsed time.Duration
}

// RecoverReport is what Recover did.
type RecoverReport struct {
	Files []RecoverFile
	Total RecoverCounts
	// Raised lists the counters the floor raised (none when they were at or above it).
	Raised []ledger.Raised
	// Rejects is the reject file written, "" when there was nothing to report; RejectRows the
	// rows it holds.
	Rejects    string
	RejectRows int64
	DryRun     bool
	Elapsed    time.Duration
}

// Recover puts back into l the ARKs that mint maps name and the ledger does not hold: the
// recovery of a ledger restored from a backup older than some of its mints (docs/recovery.md).
//
// Each map is read with pipeline.OpenMintMap and recovered in one transaction recorded as an
// import run (format MintMapFormat) and an audit event (ledger.ActionImport). Per row, by its
// ARK and by the client's request ID:
//
//   - the ARK is absent and the request ID has no receipt: the ARK is put back, insert-only,
//     through loader.WriteRecovered (the one writer of ark rows) with the map's payload, the
//     client as created_by, the import run, and its mint receipt (request ID and the payload's
//     digest, pipeline.PayloadDigest, as its mint wrote it): a re-run of the manifest then
//     replays the same ARK instead of drawing a new one. Its created_at is left NULL (a mint
//     map does not record when). From a map without payload columns it is put back with no
//     target or ERC and a KindPayloadUnknown line (never invented data);
//   - the ARK is in the ledger under the request ID: present when the values agree (or the map
//     records none), else changed after the mint, one KindChangedAfterMint line per field,
//     nothing overwritten;
//   - the ARK is in the ledger under another client's or request ID's receipt, or without one
//     (imported): rejected with the rule (an ARK is one request's, for ever); so is a request ID
//     whose receipt names another ARK (a request ID holds one ARK), a name under no registered
//     shoulder of its NAAN, an ARK outside the client's NAAN (authority other than system),
//     and a row the reader or the mint's own rules (pipeline.Validate) refuse (file, line,
//     field).
//
// With cfg.Floor the ledger's counters are first raised to it (ledger.RaiseCounters), so the
// ARKs put back, and every later mint, take insertion numbers above the recorded high-water
// mark. The report covers the maps done so far; an error stops the run (the failing map's
// transaction is rolled back, earlier maps stay).
func Recover(ctx context.Context, l *ledger.Ledger, cfg RecoverConfig) (RecoverReport, error) {
	start := time.Now()
	rep := RecoverReport{DryRun: cfg.DryRun}
	if len(cfg.Inputs) == 0 {
		return rep, errors.New("import: give at least one mint map")
	}
	if cfg.ClientID == "" {
		return rep, errors.New("import: a mint map is recovered for the client whose request IDs it holds: give --client")
	}
	if cfg.BatchSize < 0 {
		return rep, errors.New("import: batch size must be positive")
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = DefaultBatch
	}
	client, err := loadClient(ctx, l, cfg.ClientID)
	if err != nil {
		return rep, err
	}
	if cfg.Floor != nil && !cfg.DryRun {
		raised, err := ledger.RaiseCounters(ctx, l.Pool, *cfg.Floor)
		if ledger.IsInsufficientPrivilege(err) {
			return rep, fmt.Errorf("import: --baseline: raising the ledger's counters (arkhe_raise_ark_seq) is the operator's or the owner's: connect as a member of one: %w", err)
		}
		if err != nil {
			return rep, fmt.Errorf("import: --baseline: %w", err)
		}
		rep.Raised = raised
	}
	rej := newRejectFile(cfg.RejectsPath)
	var runErr error
	for _, path := range cfg.Inputs {
		res, err := recoverFile(ctx, l, &cfg, client, rej, path)
		if err != nil {
			runErr = fileFault(ctx, path, err)
			break
		}
		rep.Files = append(rep.Files, res)
		rep.Total.Add(res.Counts)
	}
	p, err := rej.close()
	rep.Rejects, rep.RejectRows = p, rej.count()
	if runErr == nil {
		runErr = err
	}
	rep.Elapsed = time.Since(start)
	return rep, runErr
}

// fileDigest returns the hex SHA-256 of the file at path.
func fileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// recovery is the recovery of one mint map inside its transaction.
type recovery struct {
	cfg    *RecoverConfig
	client *clientInfo
	rej    *rejectFile
	path   string
	tx     pgx.Tx
	citus  bool
	runID  int64
	counts RecoverCounts
	// shoulders caches, per NAAN, its registered shoulders (bare form -> id)
	shoulders map[string]map[string]int64
	// queued holds, per ledger key, the request ID of the row this map puts back in the
	// batch being written; byRID the key of each such request ID
	queued map[string]string
	byRID  map[string]string
}

// recoverFile recovers one mint map in one transaction.
func recoverFile(ctx context.Context, l *ledger.Ledger, cfg *RecoverConfig, client *clientInfo, rej *rejectFile, path string) (RecoverFile, error) {
	start := time.Now()
	res := RecoverFile{File: path}
	r, err := pipeline.OpenMintMap(path)
	if err != nil {
		return res, fmt.Errorf("import: %w", err)
	}
	defer r.Close()
	if res.Digest, err = fileDigest(path); err != nil {
		return res, fmt.Errorf("import %s: %w", path, err)
	}
	conn, err := l.Pool.Acquire(ctx)
	if err != nil {
		return res, fmt.Errorf("import %s: %w", path, err)
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return res, fmt.Errorf("import %s: %w", path, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var layout string
	if err := tx.QueryRow(ctx, `select arkhe_layout()`).Scan(&layout); err != nil {
		return res, fmt.Errorf("import %s: read the ledger's layout: %w", path, err)
	}
	rc := &recovery{cfg: cfg, client: client, rej: rej, path: path, tx: tx, citus: ledger.Layout(layout) == ledger.LayoutCitus,
		shoulders: map[string]map[string]int64{}}
	if rc.citus {
		// the import run (a reference table) and the COPYs of ark and receipt rows share the
		// transaction: sequential mode lets them interleave (see importFile)
		if _, err := tx.Exec(ctx, `set local citus.multi_shard_modify_mode to 'sequential'`); err != nil {
			return res, fmt.Errorf("import %s: %w", path, err)
		}
	}
	if err := tx.QueryRow(ctx, `insert into import_run (source_file, format, dry_run, command, client_pk)
		values ($1, $2, $3, 'import', $4) returning id`, SourcePath(path), MintMapFormat, cfg.DryRun, client.pk).Scan(&rc.runID); err != nil {
		return res, fmt.Errorf("import %s: record the run: %w", path, err)
	}
	batch := make([]pipeline.MintMapEntry, 0, min(cfg.BatchSize, 4096))
	for {
		e, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if re, ok := textin.AsRowError(err); ok {
			rc.counts.Read++
			if err := rc.reject(re.Loc, e.ARK, "", re.Field, rowErrorReason(re)); err != nil {
				return res, err
			}
			continue
		}
		if err != nil {
			return res, fmt.Errorf("import: %w", err)
		}
		rc.counts.Read++
		batch = append(batch, e)
		if len(batch) >= cfg.BatchSize {
			if err := rc.batch(ctx, batch); err != nil {
				return res, err
			}
			batch = batch[:0]
		}
	}
	if err := rc.batch(ctx, batch); err != nil {
		return res, err
	}
	res.Counts = rc.counts
	counts, err := json.Marshal(res.Counts)
	if err != nil {
		return res, err
	}
	if _, err := tx.Exec(ctx, `update import_run set finished_at = statement_timestamp(), digest = $2, counts = $3 where id = $1`,
		rc.runID, "sha256:"+res.Digest, counts); err != nil {
		return res, fmt.Errorf("import %s: record the run: %w", path, err)
	}
	ev := ledger.Event{Action: ledger.ActionImport, Target: SourcePath(path), ClientID: client.id, Authority: client.authority,
		Detail: map[string]any{"format": MintMapFormat, "digest": "sha256:" + res.Digest, "counts": res.Counts}}
	if err := ledger.RecordEvent(ctx, tx, ev); err != nil {
		return res, fmt.Errorf("import %s: %w", path, err)
	}
	if cfg.DryRun {
		if err := tx.Rollback(ctx); err != nil {
			return res, fmt.Errorf("import %s: %w", path, err)
		}
	} else if err := tx.Commit(ctx); err != nil {
		return res, fmt.Errorf("import %s: commit: %w", path, err)
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// rowErrorReason is a row error's reason with its cause.
func rowErrorReason(re *textin.RowError) string {
	reason := re.Reason
	if re.Err != nil {
		if reason != "" {
			reason += ": "
		}
		reason += re.Err.Error()
	}
	return reason
}

// reject writes one rejected row and counts it.
func (rc *recovery) reject(loc textin.Location, spelled, canonical, field, reason string) error {
	rc.counts.Rejected++
	return rc.rej.write(KindRejected, loc, spelled, canonical, field, reason, nil, nil, "")
}

// ledgerARK is an ARK of the ledger a batch names: its values and whether it was imported.
type ledgerARK struct {
	vals     [5]*string // url, who, what, when, commitment
	imported *int64     // import run, nil for a minted ARK
}

// receiptOf is a receipt found by ARK: the client and request ID it is for.
type receiptOf struct {
	client    *string
	requestID string
}

// payloadFields names the payload columns in the order of ledgerARK.vals.
var payloadFields = [5]string{"url", "who", "what", "when", "commitment"}

// entryValues returns a row's payload in the order of payloadFields, "" read as absent.
func entryValues(e *pipeline.MintMapEntry) [5]*string {
	v := [5]*string{e.URL, e.Who, e.What, e.When, e.Commitment}
	for i, p := range v {
		if p != nil && *p == "" {
			v[i] = nil
		}
	}
	return v
}

// batch classifies one batch of rows against the ledger and puts back the absent ARKs.
func (rc *recovery) batch(ctx context.Context, rows []pipeline.MintMapEntry) error {
	if len(rows) == 0 {
		return nil
	}
	parsed := make([]ark.ARK, len(rows))
	keys := make([]string, 0, len(rows))
	rids := make([]string, 0, len(rows))
	ok := make([]bool, len(rows))
	for i := range rows {
		e := &rows[i]
		a, err := ark.Parse(e.ARK)
		switch {
		case err != nil:
			if err := rc.reject(e.Source, e.ARK, "", "ark", "not an ARK: "+err.Error()); err != nil {
				return err
			}
			continue
		case a.Qualifier != "":
			if err := rc.reject(e.Source, e.ARK, a.String(), "ark", "a minted ARK has no qualifier (suffix "+a.Qualifier+")"); err != nil {
				return err
			}
			continue
		case rc.client.authority != "system" && a.NAAN != rc.client.naan:
			if err := rc.reject(e.Source, e.ARK, a.String(), "ark", fmt.Sprintf("outside the reach of client %s: it recovers ARKs of its NAAN %s only (authority %s)",
				rc.client.id, rc.client.naan, rc.client.authority)); err != nil {
				return err
			}
			continue
		}
		rec := e.Record()
		if re := pipeline.Validate(&rec, textin.DefaultLimits()); re != nil {
			// the rule a mint applies to its manifest rows: a row the mint would have refused
			// was never minted from this payload
			if err := rc.reject(e.Source, e.ARK, a.String(), re.Field, rowErrorReason(re)); err != nil {
				return err
			}
			continue
		}
		parsed[i], ok[i] = a, true
		keys = append(keys, a.Key())
		rids = append(rids, e.RequestID)
	}
	arks, err := rc.lookUpARKs(ctx, keys)
	if err != nil {
		return err
	}
	held, err := rc.lookUpRequests(ctx, rids)
	if err != nil {
		return err
	}
	// the receipts of ARKs in the ledger that the row's request ID does not hold: whose are they?
	var others []string
	for i := range rows {
		if !ok[i] {
			continue
		}
		k := parsed[i].Key()
		if _, in := arks[k]; in && held[rows[i].RequestID] != k {
			others = append(others, k)
		}
	}
	byARK, err := rc.lookUpReceiptsByARK(ctx, others)
	if err != nil {
		return err
	}
	rc.queued, rc.byRID = map[string]string{}, map[string]string{}
	var put []loader.ARKRow
	var digests [][16]byte
	var putIdx []int
	for i := range rows {
		if !ok[i] {
			continue
		}
		e, a := &rows[i], parsed[i]
		k, canon := a.Key(), a.String()
		rid := e.RequestID
		if led, in := arks[k]; in {
			if held[rid] != k {
				how := "not imported"
				if led.imported != nil {
					how = fmt.Sprintf("imported by import run %d", *led.imported)
				}
				reason := fmt.Sprintf("ARK %s is in the ledger without a mint receipt (%s): a mint map of client %s cannot claim it for request ID %q; left alone",
					canon, how, rc.client.id, rid)
				if rs := byARK[k]; len(rs) > 0 {
					owner := "an unregistered client"
					if rs[0].client != nil {
						owner = "client " + *rs[0].client
					}
					reason = fmt.Sprintf("ARK %s is in the ledger under %s's request ID %q, not request ID %q of client %s: an ARK is one request's; left alone",
						canon, owner, rs[0].requestID, rid, rc.client.id)
				}
				if err := rc.reject(e.Source, e.ARK, canon, "ark", reason); err != nil {
					return err
				}
				continue
			}
			if err := rc.present(e, canon, led); err != nil {
				return err
			}
			continue
		}
		if other, has := held[rid]; has {
			if err := rc.reject(e.Source, e.ARK, canon, "request_id", fmt.Sprintf("request ID %q of client %s holds ARK ark:%s in the ledger, not %s: a request ID holds one ARK; %s is not put back",
				rid, rc.client.id, other, canon, canon)); err != nil {
				return err
			}
			continue
		}
		// absent: put back, unless this batch puts it back already
		if prev, dup := rc.queued[k]; dup {
			if prev == rid {
				rc.counts.Present++ // a row repeated within the run
				continue
			}
			if err := rc.reject(e.Source, e.ARK, canon, "ark", fmt.Sprintf("ARK %s is named for request ID %q earlier in this batch, and here for request ID %q: an ARK is one request's",
				canon, prev, rid)); err != nil {
				return err
			}
			continue
		}
		if prev, dup := rc.byRID[rid]; dup {
			if err := rc.reject(e.Source, e.ARK, canon, "request_id", fmt.Sprintf("request ID %q names ARK ark:%s earlier in this batch, and here %s: a request ID holds one ARK",
				rid, prev, canon)); err != nil {
				return err
			}
			continue
		}
		shoulder, err := rc.shoulderOf(ctx, a)
		if err != nil {
			return err
		}
		if shoulder == 0 {
			if err := rc.reject(e.Source, e.ARK, canon, "ark", fmt.Sprintf("no registered shoulder of NAAN %s holds the name %s: register it (arkhe shoulder add), then recover again",
				a.NAAN, a.Name)); err != nil {
				return err
			}
			continue
		}
		rc.queued[k], rc.byRID[rid] = rid, k
		vals := entryValues(e)
		rec := e.Record()
		pk, run := rc.client.pk, rc.runID
		put = append(put, loader.ARKRow{Key: k, NAAN: a.NAAN, ShoulderID: shoulder, Name: a.Name,
			URL: vals[0], Who: vals[1], What: vals[2], When: vals[3], Commitment: vals[4],
			CreatedBy: &pk, ImportRunID: &run, RequestID: &rid})
		digests = append(digests, pipeline.PayloadDigest(&rec))
		putIdx = append(putIdx, i)
	}
	if len(put) == 0 {
		return nil
	}
	n, err := loader.WriteRecovered(ctx, rc.tx, rc.citus, put, digests, time.Now())
	last := rows[len(rows)-1].Source
	switch {
	case ledger.IsUniqueViolation(err):
		return fmt.Errorf("import %s: another writer added one of the ARKs or request IDs of the batch ending at %s while it was being recovered; nothing of this file was written, run the import again: %w",
			rc.path, last, err)
	case err != nil && rc.citus && ledger.SQLState(err) == codeCitusInternal:
		return fmt.Errorf("import %s: a worker refused the batch ending at %s (another writer added one of its ARKs or request IDs while it was being recovered, or a row broke a rule of the ledger); nothing of this file was written: %w",
			rc.path, last, err)
	case err != nil:
		return fmt.Errorf("import %s: put back the batch ending at %s: %w", rc.path, last, err)
	case n != int64(len(put)):
		return fmt.Errorf("import %s: put back %d ARKs, expected %d", rc.path, n, len(put))
	}
	for _, i := range putIdx {
		rc.counts.Recovered++
		if !rows[i].PayloadKnown {
			rc.counts.PayloadUnknown++
			if err := rc.rej.write(KindPayloadUnknown, rows[i].Source, rows[i].ARK, parsed[i].String(), "url", PayloadUnknownNote, nil, nil, ""); err != nil {
				return err
			}
		}
	}
	return nil
}

// codeCitusInternal is the SQLSTATE Citus reports a worker's error during COPY with
// (internal_error), whatever the worker's own was.
const codeCitusInternal = "XX000"

// present settles a row whose ARK is in the ledger under its request ID: present when the
// values agree or the map records none, else changed after the mint (one line per field).
func (rc *recovery) present(e *pipeline.MintMapEntry, canon string, led ledgerARK) error {
	if !e.PayloadKnown {
		rc.counts.Present++
		return nil
	}
	vals := entryValues(e)
	changed := false
	for f := range payloadFields {
		if textEqual(vals[f], led.vals[f]) {
			continue
		}
		changed = true
		if err := rc.rej.write(KindChangedAfterMint, e.Source, e.ARK, canon, payloadFields[f],
			fmt.Sprintf("ARK %s is in the ledger under request ID %q with another %s than it was minted with (changed after the mint): left alone", canon, e.RequestID, payloadFields[f]),
			vals[f], led.vals[f], ""); err != nil {
			return err
		}
	}
	if changed {
		rc.counts.ChangedAfterMint++
	} else {
		rc.counts.Present++
	}
	return nil
}

// textEqual compares two optional values, "" as absent.
func textEqual(a, b *string) bool {
	if a != nil && *a == "" {
		a = nil
	}
	if b != nil && *b == "" {
		b = nil
	}
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// lookUpARKs reads the ledger's ARKs among keys.
func (rc *recovery) lookUpARKs(ctx context.Context, keys []string) (map[string]ledgerARK, error) {
	out := map[string]ledgerARK{}
	if len(keys) == 0 {
		return out, nil
	}
	res, err := rc.tx.Query(ctx, `select a.ark, a.url, a.erc_who, a.erc_what, a.erc_when, a.commitment, a.import_run_id
		from ark a where a.ark = any($1::text[] collate "C")`, keys)
	if err != nil {
		return nil, fmt.Errorf("import %s: look the ARKs up: %w", rc.path, err)
	}
	defer res.Close()
	for res.Next() {
		var k string
		var a ledgerARK
		if err := res.Scan(&k, &a.vals[0], &a.vals[1], &a.vals[2], &a.vals[3], &a.vals[4], &a.imported); err != nil {
			return nil, fmt.Errorf("import %s: look the ARKs up: %w", rc.path, err)
		}
		out[k] = a
	}
	if err := res.Err(); err != nil {
		return nil, fmt.Errorf("import %s: look the ARKs up: %w", rc.path, err)
	}
	return out, nil
}

// lookUpRequests reads the client's receipts among request IDs rids: request ID -> ledger key.
func (rc *recovery) lookUpRequests(ctx context.Context, rids []string) (map[string]string, error) {
	out := map[string]string{}
	if len(rids) == 0 {
		return out, nil
	}
	res, err := rc.tx.Query(ctx, `select r.request_id, r.ark from mint_receipt r
		where r.client_pk = $1 and r.request_id = any($2::text[] collate "C")`, rc.client.pk, rids)
	if err != nil {
		return nil, fmt.Errorf("import %s: look the receipts up: %w", rc.path, err)
	}
	defer res.Close()
	for res.Next() {
		var rid, k string
		if err := res.Scan(&rid, &k); err != nil {
			return nil, fmt.Errorf("import %s: look the receipts up: %w", rc.path, err)
		}
		out[rid] = k
	}
	if err := res.Err(); err != nil {
		return nil, fmt.Errorf("import %s: look the receipts up: %w", rc.path, err)
	}
	return out, nil
}

// lookUpReceiptsByARK reads the receipts that name keys, with their clients.
func (rc *recovery) lookUpReceiptsByARK(ctx context.Context, keys []string) (map[string][]receiptOf, error) {
	out := map[string][]receiptOf{}
	if len(keys) == 0 {
		return out, nil
	}
	res, err := rc.tx.Query(ctx, `select r.ark, c.client_id, r.request_id from mint_receipt r
		left join client c on c.id = r.client_pk
		where r.ark = any($1::text[] collate "C") order by r.ark, r.request_id`, keys)
	if err != nil {
		return nil, fmt.Errorf("import %s: look the ARKs' receipts up: %w", rc.path, err)
	}
	defer res.Close()
	for res.Next() {
		var k string
		var r receiptOf
		if err := res.Scan(&k, &r.client, &r.requestID); err != nil {
			return nil, fmt.Errorf("import %s: look the ARKs' receipts up: %w", rc.path, err)
		}
		out[k] = append(out[k], r)
	}
	if err := res.Err(); err != nil {
		return nil, fmt.Errorf("import %s: look the ARKs' receipts up: %w", rc.path, err)
	}
	return out, nil
}

// shoulderOf returns the registered shoulder of a's NAAN that holds its name by longest
// prefix (the NAAN-wide "/" last), or 0 when none does.
func (rc *recovery) shoulderOf(ctx context.Context, a ark.ARK) (int64, error) {
	sh, ok := rc.shoulders[a.NAAN]
	if !ok {
		sh = map[string]int64{}
		res, err := rc.tx.Query(ctx, `select id, shoulder from shoulder where naan = $1`, a.NAAN)
		if err != nil {
			return 0, fmt.Errorf("import %s: read the shoulders of NAAN %s: %w", rc.path, a.NAAN, err)
		}
		for res.Next() {
			var id int64
			var s string
			if err := res.Scan(&id, &s); err != nil {
				res.Close()
				return 0, fmt.Errorf("import %s: read the shoulders of NAAN %s: %w", rc.path, a.NAAN, err)
			}
			sh[strings.TrimPrefix(s, "/")] = id
		}
		res.Close()
		if err := res.Err(); err != nil {
			return 0, fmt.Errorf("import %s: read the shoulders of NAAN %s: %w", rc.path, a.NAAN, err)
		}
		rc.shoulders[a.NAAN] = sh
	}
	best, id := -1, int64(0)
	for bare, sid := range sh {
		if strings.HasPrefix(a.Name, bare) && len(bare) > best {
			best, id = len(bare), sid
		}
	}
	return id, nil
}
