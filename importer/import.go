package importer

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/ulikunitz/xz"
	"golang.org/x/sync/errgroup"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/legacy"
	"github.com/arkhe-ledger/arkhe/loader"
	"github.com/arkhe-ledger/arkhe/textin"
)

// DefaultBatch is how many records the importer classifies and inserts at a time.
const DefaultBatch = 20_000

// TestNAAN is the NAAN shared for test ARKs; its ARKs are imported only on
// request.
const TestNAAN = "99999"

// Config configures Run (`arkhe import`).
type Config struct {
	// Inputs are the export files, imported in order, each in its own transaction and import
	// run. gzip and xz compressed files are read transparently.
	Inputs []string
	// Format is the export format of every input; "" detects it per file (legacy.DetectFormat).
	Format legacy.Format
	// IncludeReserved imports EZID `reserved` ARKs (skipped and counted otherwise).
	IncludeReserved bool
	// IncludeTest imports ARKs of the test NAAN 99999 (skipped and counted otherwise).
	IncludeTest bool
	// DryRun does all the work inside the transaction and rolls it back: the counts and the
	// reject file are exact, the ledger is unchanged and no import run is recorded.
	DryRun bool
	// ClientID, if set, is the registered client the import acts as: it must be active and hold
	// the ark:import scope; a client whose authority is not "system" imports only its own NAAN.
	// It is recorded as the ARKs' created_by and the run's client.
	ClientID string
	// CheckZone is the check zone of shoulders the import creates for names whose shoulder is
	// not registered ("" means none).
	CheckZone ark.Zone
	// RejectsPath is where the reject file goes (RejectHeader); "" writes none.
	RejectsPath string
	// BatchSize is the number of records classified and inserted at a time (0: DefaultBatch).
	BatchSize int
	// Progress, if set, is called from one goroutine every few thousand records read and at the
	// end of each pass over a file.
	Progress func(Progress)
}

// Validate checks the configuration before any input is read.
func (c *Config) Validate() error {
	if len(c.Inputs) == 0 {
		return errors.New("import: give at least one export file")
	}
	if c.Format != "" {
		if _, err := legacy.ParseFormat(string(c.Format)); err != nil {
			return fmt.Errorf("import: %w", err)
		}
	}
	if c.CheckZone != "" && !c.CheckZone.Valid() {
		return fmt.Errorf("import: check zone %q: want naan_name, name_only or none", c.CheckZone)
	}
	if c.BatchSize < 0 {
		return errors.New("import: batch size must be positive")
	}
	return nil
}

// Progress reports how far the import of one file has read.
type Progress struct {
	File string
	Pass int   // 1, or 2 when the file is read again (see Run)
	Read int64 // records read so far in this pass
	// Octets is how much of the file this pass has read, in octets as stored (a compressed
	// file's compressed octets, counted as they are read from it); Size is the file's size (0
	// when unknown), so Octets/Size is the share of the file read.
	Octets, Size int64
}

// progressEvery is how many records an import reads between two progress reports.
const progressEvery = 2048

// countingFile counts the octets read from an export file; the reading goroutine adds, the one
// that reports progress loads.
type countingFile struct {
	r    io.Reader
	n    atomic.Int64
	size int64
}

// exportFile is one pass's open export: the file, the count of its octets read (progress), the
// SHA-256 of what was read (the import run's digest) and the legacy reader over it.
type exportFile struct {
	f       *os.File
	counted *countingFile
	h       hash.Hash
	r       legacy.Reader
}

// openExport opens path and a reader of format over it, counting and hashing what is read.
// Errors name the path. Close closes both.
func openExport(path string, format legacy.Format) (*exportFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	e := &exportFile{f: f, counted: &countingFile{r: f}, h: sha256.New()}
	if st, err := f.Stat(); err == nil {
		e.counted.size = st.Size()
	}
	if e.r, err = legacy.NewReader(io.TeeReader(e.counted, e.h), path, format); err != nil {
		f.Close()
		return nil, fmt.Errorf("import %s: %w", path, err)
	}
	return e, nil
}

// digest reads what the reader left of the file and returns the hex SHA-256 of the whole file.
func (e *exportFile) digest() (string, error) {
	if _, err := io.Copy(e.h, e.f); err != nil {
		return "", err
	}
	return hex.EncodeToString(e.h.Sum(nil)), nil
}

// Close closes the reader, then the file.
func (e *exportFile) Close() {
	e.r.Close()
	e.f.Close()
}

// Read implements io.Reader.
func (c *countingFile) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// progress is the report of a pass over path that has read records.
func (c *countingFile) progress(path string, pass int, records int64) Progress {
	return Progress{File: path, Pass: pass, Read: records, Octets: c.n.Load(), Size: c.size}
}

// Counts are the counts of one import (per file, or summed); they are also stored in
// import_run.counts.
type Counts struct {
	// Read counts every record read: identifiers, NAAN and shoulder records, refused and bad ones.
	Read int64 `json:"read"`
	// Imported ARKs are new in the ledger.
	Imported int64 `json:"imported"`
	// Unchanged ARKs were in the ledger already with the same target, status and metadata.
	Unchanged int64 `json:"unchanged"`
	// Differences are ARKs in the ledger with a different value: reported, left alone.
	Differences int64 `json:"differences"`
	// Conflicts are source rows that normalize to the same ARK as another row with different
	// values (neither imported); ConflictARKs the ARKs concerned.
	Conflicts    int64 `json:"conflicts"`
	ConflictARKs int64 `json:"conflict_arks"`
	// Collapsed rows were identical to an earlier row of the same ARK.
	Collapsed int64 `json:"collapsed"`
	// SkippedNonARK counts identifiers (and shoulder records, "doi shoulder") of other schemes.
	SkippedNonARK map[string]int64 `json:"skipped_non_ark,omitempty"`
	// ReservedSkipped and TestSkipped count ARKs left out without --include-reserved/--include-test.
	ReservedSkipped int64 `json:"reserved_skipped"`
	TestSkipped     int64 `json:"test_skipped"`
	// Rejected counts bad records (reject file kind "rejected").
	Rejected int64 `json:"rejected"`
	// Refused counts records of models the file's format does not import: arklet user/key
	// records (they hold credentials), and records another format imports (an EZID dump's
	// link-check results or shoulders); FileResult.Refusals names them.
	Refused int64 `json:"refused"`
	// KeptReserved counts records with a value refused (a target that is not http(s) or
	// carries userinfo, a value over a limit or not valid text, an unknown status): the ARK is
	// imported reserved without the value, so its name is never reissued, and the reject file
	// has one "kept reserved" line per refused value.
	KeptReserved int64 `json:"kept_reserved"`
	// NAANRecords and ShoulderRecords count registry records read.
	NAANRecords     int64 `json:"naan_records"`
	ShoulderRecords int64 `json:"shoulder_records"`
	// NAANsCreated and ShouldersCreated count rows created, from records or for imported ARKs.
	NAANsCreated     int64 `json:"naans_created"`
	ShouldersCreated int64 `json:"shoulders_created"`
	// RegistryFilled counts existing NAANs/shoulders whose empty columns a record filled;
	// RegistryUnchanged those that matched; RegistryDifferences those with a differing value.
	RegistryFilled      int64 `json:"registry_filled"`
	RegistryUnchanged   int64 `json:"registry_unchanged"`
	RegistryDifferences int64 `json:"registry_differences"`
	// CheckVerified, CheckFailed and CheckNone are the check-character verdicts of the imported
	// ARKs under their shoulders' zones (none: zone "none").
	CheckVerified int64 `json:"check_verified"`
	CheckFailed   int64 `json:"check_failed"`
	CheckNone     int64 `json:"check_none"`
	// LinkRecords counts the records of a legacy link checker read (EZID's link-check state);
	// LinkLoaded those stored as an ARK's link state, LinkBroken of them broken;
	// LinkNeverChecked those whose target the legacy checker never checked (nothing to keep);
	// LinkKept those whose ARK already had a link state, which import never overwrites;
	// LinkDefaultTarget those about EZID's default self-reference target, which an import
	// keeps as "no target" (so there is no target to keep a state for). LinkNotInLedger counts
	// those whose ARK is not in the ledger (in the reject file, to import again once the
	// identifiers are); ARKs with another target in the ledger are Differences.
	LinkRecords       int64 `json:"link_records,omitempty"`
	LinkNotInLedger   int64 `json:"link_not_in_ledger,omitempty"`
	LinkLoaded        int64 `json:"link_loaded,omitempty"`
	LinkBroken        int64 `json:"link_broken,omitempty"`
	LinkNeverChecked  int64 `json:"link_never_checked,omitempty"`
	LinkKept          int64 `json:"link_kept,omitempty"`
	LinkDefaultTarget int64 `json:"link_default_target,omitempty"`
}

// Add adds o to c.
func (c *Counts) Add(o Counts) {
	c.Read += o.Read
	c.Imported += o.Imported
	c.Unchanged += o.Unchanged
	c.Differences += o.Differences
	c.Conflicts += o.Conflicts
	c.ConflictARKs += o.ConflictARKs
	c.Collapsed += o.Collapsed
	for k, v := range o.SkippedNonARK {
		if c.SkippedNonARK == nil {
			c.SkippedNonARK = map[string]int64{}
		}
		c.SkippedNonARK[k] += v
	}
	c.ReservedSkipped += o.ReservedSkipped
	c.TestSkipped += o.TestSkipped
	c.Rejected += o.Rejected
	c.Refused += o.Refused
	c.KeptReserved += o.KeptReserved
	c.NAANRecords += o.NAANRecords
	c.ShoulderRecords += o.ShoulderRecords
	c.NAANsCreated += o.NAANsCreated
	c.ShouldersCreated += o.ShouldersCreated
	c.RegistryFilled += o.RegistryFilled
	c.RegistryUnchanged += o.RegistryUnchanged
	c.RegistryDifferences += o.RegistryDifferences
	c.CheckVerified += o.CheckVerified
	c.CheckFailed += o.CheckFailed
	c.CheckNone += o.CheckNone
	c.LinkRecords += o.LinkRecords
	c.LinkLoaded += o.LinkLoaded
	c.LinkBroken += o.LinkBroken
	c.LinkNeverChecked += o.LinkNeverChecked
	c.LinkKept += o.LinkKept
	c.LinkDefaultTarget += o.LinkDefaultTarget
	c.LinkNotInLedger += o.LinkNotInLedger
}

// SkippedNonARKTotal sums SkippedNonARK.
func (c *Counts) SkippedNonARKTotal() int64 {
	var n int64
	for _, v := range c.SkippedNonARK {
		n += v
	}
	return n
}

// Findings reports counts that make the run "done with rejects or findings" (exit 1): every
// record the reject file lists (rejected, refused, link-check results of ARKs not in the
// ledger, conflicts, collapsed duplicates, differences with the ledger).
func (c *Counts) Findings() bool {
	return c.Rejected > 0 || c.Refused > 0 || c.LinkNotInLedger > 0 || c.Conflicts > 0 || c.Collapsed > 0 ||
		c.Differences > 0 || c.RegistryDifferences > 0
}

// FileResult is what importing one file did.
type FileResult struct {
	File   string
	Format legacy.Format
	// Digest is the SHA-256 of the file's bytes as stored (hex), recorded in import_run.
	Digest string
	Counts Counts
	// Truncated is set when the file ends mid-record: every complete record was imported.
	Truncated *legacy.TruncatedError
	// Refusals holds, per refused model in the order first met, its first refused record and
	// how many were refused, for the operator.
	Refusals []Refusal
	// Passes is 2 when a conflict spanning batches made the file be read again.
	Passes  int
	Elapsed time.Duration
}

// Refusal is one model whose records an import refused: the first record refused (what the
// model's records are, why, where) and the number of records refused.
type Refusal struct {
	legacy.Refused
	Records int64
}

// refusals collects the refused records of one file, per model in the order first met.
type refusals struct {
	list  []Refusal
	index map[string]int
}

// add counts one refused record.
func (r *refusals) add(rf *legacy.Refused) {
	if r.index == nil {
		r.index = map[string]int{}
	}
	i, ok := r.index[rf.Model]
	if !ok {
		i = len(r.list)
		r.index[rf.Model] = i
		r.list = append(r.list, Refusal{Refused: *rf})
	}
	r.list[i].Records++
}

// Report is what Run did.
type Report struct {
	Files []FileResult
	Total Counts
	// Rejects is the reject file written, "" when there was nothing to report.
	Rejects string
	// RejectRows is the number of rows the reject file holds (counted also when no reject file
	// was asked for): every record that did not become a ledger row of its own.
	RejectRows int64
	DryRun     bool
	Elapsed    time.Duration
}

// Truncated reports whether any file ended mid-record.
func (r *Report) Truncated() bool {
	for _, f := range r.Files {
		if f.Truncated != nil {
			return true
		}
	}
	return false
}

// clientInfo is the client an import acts as.
type clientInfo struct {
	pk        int64
	id        string
	naan      string
	authority string
}

// Run brings legacy exports into the ledger l: insert-only, without re-minting,
// renaming or overwriting anything.
//
// Each file is read by the legacy package, normalized with legacy.NormalizeRecord and imported in one
// transaction recorded as an import_run (file, format, SHA-256, counts) and an audit event
// (ledger.ActionImport, target the file, detail the counts); every ARK, NAAN and
// shoulder it creates carries that run. Three goroutines overlap: the legacy reader, the
// normalizer (shoulder assignment, check characters) and the writer, which owns the transaction;
// memory holds a few batches of cfg.BatchSize records, whatever the file's size. The writer
// classifies each batch against the ledger by key, set-based (one primary-key probe per row, sent
// as one array: probeSQL), and COPYs the new ARKs straight into ark. A key is probed only
// when it may be in the ledger: always for a NAAN that had ARKs before the run, and otherwise only
// when a Bloom filter of the keys this run inserted says it may be one of them, so a fresh
// migration costs the server what a plain COPY does. An ARK found with the same target, status
// and metadata is unchanged; one with a different value is a difference written to the reject
// file and left alone (accepting it is `arkhe reconcile --apply`).
//
// Each ARK lands under its shoulder by legacy.ShoulderIndex.Assign (a primordinal shoulder that is not
// registered is created `reserved` with zone cfg.CheckZone, a name without one goes under the
// NAAN-wide "/", its NAAN created if missing); its check character is verified
// under the shoulder's zone and the verdict stored in check_ok (a real, published ARK is
// never refused for its check character). Rows of one file that normalize to the same ARK are one ARK when identical
// (collapsed) and a conflict when they differ: neither lands. When such a conflict spans batches
// after the first row was already inserted, the rest of the file is only checked for conflicts,
// then the file's work is rolled back to its start and the file read again with every
// conflicting ARK known (FileResult.Passes 2). NAAN and shoulder records (the NAAN
// registry, shoulder lists, arklet dumps) fill the naan and shoulder tables, insert-only too: a
// differing existing value is reported, an empty one filled.
//
// Bad records go to the reject file and the rest land; a file that ends mid-record imports every
// complete record and sets Truncated. The returned report covers the files done so far; an error
// stops the import (the failing file's transaction is rolled back, earlier files stay).
func Run(ctx context.Context, l *ledger.Ledger, cfg Config) (Report, error) {
	start := time.Now()
	rep := Report{DryRun: cfg.DryRun}
	if err := cfg.Validate(); err != nil {
		return rep, err
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = DefaultBatch
	}
	if cfg.CheckZone == "" {
		cfg.CheckZone = ark.ZoneNone
	}
	var client *clientInfo
	if cfg.ClientID != "" {
		c, err := loadClient(ctx, l, cfg.ClientID)
		if err != nil {
			return rep, err
		}
		client = c
	}
	rej := newRejectFile(cfg.RejectsPath)
	var runErr error
	for _, path := range cfg.Inputs {
		res, err := importFile(ctx, l, &cfg, client, rej, path)
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

// fileFault is err, the error that stopped the import of the file at path in its one
// transaction, as a *FaultError when a fault of the database or the connection caused it
// (the same command then completes the job), or err itself (ctx's cancellation included).
func fileFault(ctx context.Context, path string, err error) error {
	switch cause := loader.FaultCause(err); {
	case ctx.Err() != nil:
	case cause != "":
		return &FaultError{Path: path, Cause: cause, Err: err}
	case ledger.SQLState(err) == codeInternal:
		return &FaultError{Path: path, Err: err, Uncertain: true,
			Cause: "an error a Citus worker raised (its SQLSTATE is not passed on: a session ended by a fault, or a row it refused)"}
	}
	return err
}

// loadClient looks the client up and checks it may import (the CLI acts as a registered
// client; its reach comes from the registration).
func loadClient(ctx context.Context, l *ledger.Ledger, id string) (*clientInfo, error) {
	c := &clientInfo{id: id}
	var active bool
	var scopes []string
	var expires *time.Time
	err := l.Pool.QueryRow(ctx, `select id, naan, authority, active, allowed_scopes, expires_at from client where client_id = $1`, id).
		Scan(&c.pk, &c.naan, &c.authority, &active, &scopes, &expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("import: client %q is not registered", id)
	}
	if err != nil {
		return nil, fmt.Errorf("import: read client %s: %w", id, err)
	}
	if !active || (expires != nil && expires.Before(time.Now())) {
		return nil, fmt.Errorf("import: client %s is not active", id)
	}
	for _, s := range scopes {
		if s == "ark:import" {
			return c, nil
		}
	}
	return nil, fmt.Errorf("import: client %s does not hold the ark:import scope", id)
}

// detectFormat reads the head of path (decompressed) and detects its format.
func detectFormat(path string) (legacy.Format, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	var r io.Reader = br
	if magic, _ := br.Peek(6); len(magic) >= 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return "", fmt.Errorf("%s: %w", path, err)
		}
		r = zr
	} else if len(magic) == 6 && string(magic) == "\xfd7zXZ\x00" {
		xr, err := xz.NewReader(br)
		if err != nil {
			return "", fmt.Errorf("%s: %w", path, err)
		}
		r = xr
	}
	head := make([]byte, 64<<10)
	n, err := io.ReadFull(r, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return legacy.DetectFormat(path, head[:n])
}

// probeSQL classifies a batch against the ledger by key, set-based (one primary-key probe
// per row): for each ARK of the batch that is in the ledger it returns its position in the batch
// (1-based), whether this run inserted it, and the values the importer compares.
//
// Each key is one primary-key lookup (the LATERAL subquery with LIMIT is never flattened into a
// join), whatever the planner would guess from the stale statistics of a ledger growing inside the
// import's transaction: a hash join would read the whole ark table once per batch.
const probeSQL = `select k.rec::int, a.import_run_id is not distinct from $2::bigint, a.url, ark_status_text(a.status),
	a.tombstone_reason, a.erc_who, a.erc_what, a.erc_when, a.commitment, a.metadata::text
from unnest($1::text[]) with ordinality k(ark, rec)
cross join lateral (select * from ark where ark.ark = k.ark limit 1) a`

// probeCitusSQL is probeSQL for the citus layout, where a LATERAL subquery over the
// distributed ark cannot be pushed down: the keys go as one array, which Citus prunes to the
// shards holding them and each shard answers by its primary key; the ARK key comes back in
// place of the position (classify maps it back).
const probeCitusSQL = `select a.ark, a.import_run_id is not distinct from $2::bigint, a.url, ark_status_text(a.status),
	a.tombstone_reason, a.erc_who, a.erc_what, a.erc_when, a.commitment, a.metadata::text
from ark a where a.ark = any($1::text[] collate "C")`

// SourcePath is how import_run.source_file names an input: its absolute path, so that provenance
// names the file wherever the command ran; path as given if it cannot be made absolute.
func SourcePath(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// importFile imports one file in one transaction.
func importFile(ctx context.Context, l *ledger.Ledger, cfg *Config, client *clientInfo, rej *rejectFile, path string) (FileResult, error) {
	start := time.Now()
	res := FileResult{File: path, Format: cfg.Format}
	if res.Format == "" {
		f, err := detectFormat(path)
		if err != nil {
			return res, fmt.Errorf("import %s: %w", path, err)
		}
		res.Format = f
	} else if _, err := os.Stat(path); err != nil {
		return res, fmt.Errorf("import: %w", err)
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
	citus := ledger.Layout(layout) == ledger.LayoutCitus
	if citus {
		// One transaction per file writes registration rows (reference tables: shoulders and
		// NAANs as the file needs them) between the COPYs of ark rows (distributed, with a
		// foreign key to shoulder). Citus refuses to modify a reference table after a parallel
		// multi-shard write to a table that references it in the same transaction; in sequential
		// mode every shard is written over one connection per node, and both may interleave.
		if _, err := tx.Exec(ctx, `set local citus.multi_shard_modify_mode to 'sequential'`); err != nil {
			return res, fmt.Errorf("import %s: %w", path, err)
		}
	}
	var clientPK *int64
	if client != nil {
		clientPK = &client.pk
	}
	var runID int64
	if err := tx.QueryRow(ctx, `insert into import_run (source_file, format, dry_run, command, client_pk)
		values ($1, $2, $3, 'import', $4) returning id`, SourcePath(path), string(res.Format), cfg.DryRun, clientPK).Scan(&runID); err != nil {
		return res, fmt.Errorf("import %s: record the run: %w", path, err)
	}
	if _, err := tx.Exec(ctx, `savepoint `+passSavepoint); err != nil {
		return res, fmt.Errorf("import %s: %w", path, err)
	}
	mark, err := rej.mark()
	if err != nil {
		return res, err
	}
	if isLinkFormat(res.Format) {
		// a legacy link checker's state: one pass, no identifiers, no conflicts
		p := &linkPass{cfg: cfg, client: client, rej: rej, path: path, format: res.Format, tx: tx, runID: runID}
		if err := p.run(ctx); err != nil {
			return res, err
		}
		res.Passes, res.Counts, res.Truncated, res.Refusals, res.Digest = 1, p.counts, p.truncated, p.refusals.list, p.digest
	} else if err := importIdentifiers(ctx, cfg, client, rej, path, tx, runID, clientPK, mark, &res, citus); err != nil {
		return res, err
	}
	counts, err := json.Marshal(res.Counts)
	if err != nil {
		return res, err
	}
	// statement_timestamp(), not clock_timestamp(): Citus refuses a volatile function in an
	// UPDATE of a reference table; this statement starts when the run is done
	if _, err := tx.Exec(ctx, `update import_run set finished_at = statement_timestamp(), digest = $2, counts = $3 where id = $1`,
		runID, "sha256:"+res.Digest, counts); err != nil {
		return res, fmt.Errorf("import %s: record the run: %w", path, err)
	}
	ev := ledger.Event{Action: ledger.ActionImport, Target: SourcePath(path),
		Detail: map[string]any{"format": string(res.Format), "digest": "sha256:" + res.Digest, "counts": res.Counts}}
	if client != nil {
		ev.ClientID, ev.Authority = client.id, client.authority
	}
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

// passSavepoint is the savepoint a file's transaction takes before its first pass: a pass that
// must run again, or whose failure must be diagnosed, is rolled back to it.
const passSavepoint = "import_pass"

// importIdentifiers reads a file of identifiers (and registry records) in one or two passes
// (see Run) into tx; citus says the ledger's layout is LayoutCitus.
func importIdentifiers(ctx context.Context, cfg *Config, client *clientInfo, rej *rejectFile, path string, tx pgx.Tx,
	runID int64, clientPK *int64, mark rejectMark, res *FileResult, citus bool) error {
	conflicts := map[string]struct{}{}
	for pass := 1; ; pass++ {
		p := &filePass{cfg: cfg, client: client, rej: rej, path: path, format: res.Format, pass: pass,
			tx: tx, runID: runID, clientPK: clientPK, conflicts: conflicts, citus: citus}
		if err := p.run(ctx); err != nil {
			return err
		}
		res.Passes = pass
		if !p.restart {
			res.Counts = p.counts
			res.Truncated = p.truncated
			res.Refusals = p.refusals.list
			res.Digest = p.digest
			break
		}
		if pass >= 2 {
			return fmt.Errorf("import %s: conflicts across batches persist after a second pass (a defect)", path)
		}
		if _, err := tx.Exec(ctx, `rollback to savepoint `+passSavepoint); err != nil {
			return fmt.Errorf("import %s: %w", path, err)
		}
		if err := rej.rewind(mark); err != nil {
			return err
		}
	}
	if len(conflicts) == 0 {
		return nil
	}
	names := make([]skippedName, 0, len(conflicts))
	for key := range conflicts {
		naan, name, _ := strings.Cut(key, "/")
		names = append(names, skippedName{naan: naan, name: name, reason: SkipConflict})
	}
	return recordSkipped(ctx, tx, path, runID, names)
}

// recordSkipped appends names, left out of the ledger by import run runID, to import_skipped
// (a name recorded twice for one run is kept once).
func recordSkipped(ctx context.Context, tx pgx.Tx, path string, runID int64, names []skippedName) error {
	naans, anames, reasons := make([]string, len(names)), make([]string, len(names)), make([]string, len(names))
	for i, n := range names {
		naans[i], anames[i], reasons[i] = n.naan, n.name, n.reason
	}
	_, err := tx.Exec(ctx, `insert into import_skipped (ark, naan, assigned_name, reason, import_run_id)
		select k.naan || '/' || k.name, k.naan, k.name, k.reason, $4::bigint
		from unnest($1::text[], $2::text[], $3::text[]) k(naan, name, reason)
		on conflict do nothing`, naans, anames, reasons, runID)
	if err != nil {
		return fmt.Errorf("import %s: record the names left out: %w", path, err)
	}
	return nil
}

// filePass reads one file once: a reading goroutine runs the legacy reader, a normalizing one
// builds batches, the writing one (owner of the transaction) classifies and inserts them.
type filePass struct {
	cfg      *Config
	client   *clientInfo
	rej      *rejectFile
	path     string
	format   legacy.Format
	pass     int
	tx       pgx.Tx
	runID    int64
	clientPK *int64
	citus    bool // the ledger's layout is LayoutCitus (probeCitusSQL)
	// conflicts holds the keys of ARKs in conflict: seeded from pass 1 in pass 2, grown by the
	// writer. Only the writer touches it.
	conflicts map[string]struct{}

	index *legacy.ShoulderIndex // reader's
	naans map[string]bool

	counts    Counts // merged from reader and writer at the end
	truncated *legacy.TruncatedError
	refusals  refusals
	digest    string
	restart   bool
	file      *countingFile // the file being read, for progress
}

// arkItem is one normalized ARK row of a batch.
type arkItem struct {
	row   legacy.Row
	entry *legacy.ShoulderEntry
	check *bool // nil: the shoulder's zone is none
}

type shoulderItem struct {
	rec   *legacy.ShoulderRecord
	entry *legacy.ShoulderEntry
}

type naanItem struct {
	rec  *legacy.NAANRecord
	naan string
}

type batch struct {
	rows      []arkItem
	naans     []naanItem
	shoulders []shoulderItem
	skipped   []skippedName
}

// skippedName is a name of the export the import leaves out of the ledger (see recordSkipped).
type skippedName struct {
	naan, name string
	reason     string // SkipReserved, SkipTest or SkipConflict
}

// Why a name of an export is not in the ledger after its import, as import_skipped records it:
// a shoulder is adopted (ledger.AdoptShoulder) only when none of its names is missing for one of
// these reasons.
const (
	SkipReserved = "reserved" // an EZID reserved name, imported with --include-reserved only
	SkipTest     = "test"     // a name of the test NAAN 99999, imported with --include-test only
	SkipConflict = "conflict" // rows of one file named it with different values: neither imported
)

func (p *filePass) run(ctx context.Context) error {
	idx, err := LoadShoulderIndex(ctx, p.tx)
	if err != nil {
		return fmt.Errorf("import %s: %w", p.path, err)
	}
	p.index = idx
	p.naans = map[string]bool{}
	rows, err := p.tx.Query(ctx, `select naan from naan`)
	if err != nil {
		return fmt.Errorf("import %s: read NAANs: %w", p.path, err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return fmt.Errorf("import %s: read NAANs: %w", p.path, err)
		}
		p.naans[n] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("import %s: read NAANs: %w", p.path, err)
	}

	ex, err := openExport(p.path, p.format)
	if err != nil {
		return err
	}
	defer ex.Close()
	p.file = ex.counted
	r, counted := ex.r, ex.counted

	var rc, wc Counts
	size := counted.size
	if l := strings.ToLower(p.path); strings.HasSuffix(l, ".gz") || strings.HasSuffix(l, ".xz") {
		size *= 8 // compressed: the records take more room than the file
	}
	w := &batchWriter{p: p, counts: &wc, filter: newKeyFilter(size), arks: loader.NewImportWriter(p.tx)}
	chunks := make(chan []scanned, 8)
	batches := make(chan *batch, 2)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(chunks)
		return p.scan(gctx, r, chunks)
	})
	g.Go(func() error {
		defer close(batches)
		return p.normalize(gctx, chunks, &rc, batches)
	})
	g.Go(func() error {
		for b := range batches {
			if err := w.flush(gctx, b); err != nil {
				_ = w.drain() // the connection is the transaction's again before the pass returns
				return err
			}
		}
		return w.drain()
	})
	if err := g.Wait(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	if p.digest, err = ex.digest(); err != nil { // the digest covers the whole file
		return fmt.Errorf("import %s: %w", p.path, err)
	}
	rc.Add(wc)
	p.counts = rc
	p.counts.ConflictARKs = int64(len(p.conflicts))
	p.restart = w.restart
	return nil
}

// scanned is one result of legacy.Reader.Next: an item or a per-record error.
type scanned struct {
	it  legacy.Item
	err error
}

// scanChunk is how many scanned results travel together from scan to normalize.
const scanChunk = 512

// scan is the reading goroutine: it only runs the legacy reader (the one part that cannot be
// split) and hands its results on in chunks; a fatal error ends the pass.
func (p *filePass) scan(ctx context.Context, r legacy.Reader, out chan<- []scanned) error {
	chunk := make([]scanned, 0, scanChunk)
	send := func() error {
		if len(chunk) == 0 {
			return nil
		}
		select {
		case out <- chunk:
		case <-ctx.Done():
			return ctx.Err()
		}
		chunk = make([]scanned, 0, scanChunk)
		return nil
	}
	for {
		it, err := r.Next(ctx)
		if err == io.EOF {
			return send()
		}
		if err != nil {
			var re *textin.RowError
			var te *legacy.TruncatedError
			switch {
			case errors.As(err, &re), errors.As(err, &te):
			case ctx.Err() != nil:
				return ctx.Err()
			default:
				return fmt.Errorf("import %s: reading stopped: %w", p.path, err)
			}
		}
		chunk = append(chunk, scanned{it, err})
		if len(chunk) == scanChunk {
			if err := send(); err != nil {
				return err
			}
		}
	}
}

// batchStart is the room for rows a file's first batch starts with, when the batch size is
// larger; it grows by appending.
const batchStart = 256

// normalize is the normalizing goroutine: it owns p.index, counts into c, and turns scanned
// results into batches for the writer. The first batch starts with room for batchStart rows and
// grows as rows come; the batch after a full one is allocated at the full batch size, so a small
// file allocates little and a large one does not grow its batches by copying.
func (p *filePass) normalize(ctx context.Context, in <-chan []scanned, c *Counts, out chan<- *batch) error {
	size := p.cfg.BatchSize
	b := &batch{rows: make([]arkItem, 0, min(size, batchStart))}
	var read int64
	send := func(last bool) error {
		if len(b.rows) == 0 && len(b.naans) == 0 && len(b.shoulders) == 0 && len(b.skipped) == 0 {
			return nil
		}
		room := min(size, batchStart)
		if len(b.rows) >= size {
			room = size
		}
		select {
		case out <- b:
		case <-ctx.Done():
			return ctx.Err()
		}
		b = nil
		if !last {
			b = &batch{rows: make([]arkItem, 0, room)}
		}
		return nil
	}
	var reported int64
	for chunk := range in {
		for _, sc := range chunk {
			if err := p.item(sc, c, b, &read); err != nil {
				return err
			}
			if len(b.rows) >= size || len(b.skipped) >= size {
				if err := send(false); err != nil {
					return err
				}
			}
		}
		// records are counted as they are read, not when their batch is written
		if p.cfg.Progress != nil && read-reported >= progressEvery {
			reported = read
			p.cfg.Progress(p.file.progress(p.path, p.pass, read))
		}
	}
	if err := send(true); err != nil {
		return err
	}
	if p.cfg.Progress != nil {
		p.cfg.Progress(p.file.progress(p.path, p.pass, read))
	}
	return nil
}

// item handles one scanned result.
func (p *filePass) item(sc scanned, c *Counts, b *batch, read *int64) error {
	if sc.err != nil {
		var re *textin.RowError
		var te *legacy.TruncatedError
		switch {
		case errors.As(sc.err, &re):
			*read++
			c.Read++
			c.Rejected++
			return p.rej.write(KindRejected, re.Loc, re.ID, "", re.Field, recordErrorReason(re), nil, nil, re.Raw)
		case errors.As(sc.err, &te):
			p.truncated = te
			// on file as well as on the terminal: the finding outlives the run
			return p.rej.write(KindTruncated, te.Loc, "", "", "file", te.Reason+"; "+TruncatedNote, nil, nil, "")
		}
		return nil
	}
	*read++
	c.Read++
	it := sc.it
	switch {
	case it.Record != nil:
		return p.record(it.Record, c, b)
	case it.NAAN != nil:
		c.NAANRecords++
		n, err := legacy.NormalizeNAAN(it.NAAN.NAAN)
		if err == nil {
			err = p.reach(n)
		}
		if err != nil {
			c.Rejected++
			return p.rej.write(KindRejected, it.NAAN.Source, it.NAAN.NAAN, "", "naan", err.Error(), nil, nil, "")
		}
		b.naans = append(b.naans, naanItem{rec: it.NAAN, naan: n})
	case it.Shoulder != nil:
		return p.shoulder(it.Shoulder, c, b)
	case it.Refused != nil:
		c.Refused++
		rf := it.Refused
		p.refusals.add(rf)
		return p.rej.write(KindRefused, rf.Source, rf.Model, "", "model", rf.Reason, nil, nil, "")
	}
	return nil
}

func recordErrorReason(re *textin.RowError) string {
	if re.Err != nil {
		return re.Reason + ": " + re.Err.Error()
	}
	return re.Reason
}

// reach refuses a NAAN outside the client's reach.
func (p *filePass) reach(naan string) error {
	if p.client == nil || p.client.authority == "system" || p.client.naan == naan {
		return nil
	}
	return fmt.Errorf("NAAN %s is outside the reach of client %s (authority %s of NAAN %s)", naan, p.client.id, p.client.authority, p.client.naan)
}

// record normalizes one identifier record into b.
func (p *filePass) record(rec *legacy.Record, c *Counts, b *batch) error {
	if rec.Kind != "ark" {
		if c.SkippedNonARK == nil {
			c.SkippedNonARK = map[string]int64{}
		}
		c.SkippedNonARK[rec.Kind]++
		return nil
	}
	row, err := legacy.NormalizeRecord(rec)
	if err != nil {
		var rp *textin.RowError
		field, reason := "id", err.Error()
		if errors.As(err, &rp) {
			field, reason = rp.Field, rp.Reason
			if rp.Err != nil {
				reason += ": " + rp.Err.Error()
			}
		}
		c.Rejected++
		canonical := ""
		if row.ARK.NAAN != "" {
			canonical = row.ARK.String()
		}
		return p.rej.write(KindRejected, rec.Source, rec.ID, canonical, field, reason, nil, nil, "")
	}
	if row.ARK.NAAN == TestNAAN && !p.cfg.IncludeTest {
		c.TestSkipped++
		b.skipped = append(b.skipped, skippedName{naan: row.ARK.NAAN, name: row.ARK.Name, reason: SkipTest})
		return nil
	}
	if len(row.Refused) > 0 {
		c.KeptReserved++
		for _, r := range row.Refused {
			if err := p.rej.write(KindKeptReserved, rec.Source, rec.ID, row.ARK.String(), r.Field, r.Reason+"; "+KeptReservedNote,
				nil, nil, ""); err != nil {
				return err
			}
		}
	} else if row.Status == "reserved" && !p.cfg.IncludeReserved {
		c.ReservedSkipped++
		b.skipped = append(b.skipped, skippedName{naan: row.ARK.NAAN, name: row.ARK.Name, reason: SkipReserved})
		return nil
	}
	if err := p.reach(row.ARK.NAAN); err != nil {
		c.Rejected++
		return p.rej.write(KindRejected, rec.Source, rec.ID, row.ARK.String(), "naan", err.Error(), nil, nil, "")
	}
	e, _ := p.index.Assign(row.ARK, p.cfg.CheckZone)
	s := arkItem{row: row, entry: e}
	if e.Zone != ark.ZoneNone {
		ok := ark.VerifyDetail(row.ARK, e.Zone) == nil
		s.check = &ok
	}
	b.rows = append(b.rows, s)
	return nil
}

// shoulder validates one shoulder record and adds it to the index and b.
func (p *filePass) shoulder(s *legacy.ShoulderRecord, c *Counts, b *batch) error {
	c.ShoulderRecords++
	if s.Kind != "" && s.Kind != "ark" {
		if c.SkippedNonARK == nil {
			c.SkippedNonARK = map[string]int64{}
		}
		c.SkippedNonARK[s.Kind+" shoulder"]++
		return nil
	}
	id := s.Prefix
	if id == "" {
		id = s.NAAN + s.Shoulder
	}
	reject := func(field, reason string) error {
		c.Rejected++
		return p.rej.write(KindRejected, s.Source, id, "", field, reason, nil, nil, "")
	}
	naan, err := legacy.NormalizeNAAN(s.NAAN)
	if err != nil {
		return reject("naan", err.Error())
	}
	if err := p.reach(naan); err != nil {
		return reject("naan", err.Error())
	}
	bare := strings.TrimPrefix(s.Shoulder, "/")
	if len(bare) > 254 {
		return reject("shoulder", fmt.Sprintf("shoulder is %d octets; the limit is 254", len(bare)))
	}
	for i := 0; i < len(bare); i++ {
		if ch := bare[i]; ch <= ' ' || ch >= 0x7f || ch == '/' || ch == '?' || ch == '#' {
			return reject("shoulder", fmt.Sprintf("shoulder %q holds %q, which no ARK name can start with", s.Shoulder, ch))
		}
	}
	minter, redirect, note := shoulderRecordValues(s)
	for _, f := range [...][2]string{{"minter", minter}, {"redirect", redirect}, {"note", note}} {
		if pr := legacy.CheckText(f[0], f[1]); pr != nil {
			return reject(f[0], pr.Reason)
		}
	}
	e := p.index.Get(naan, bare)
	if e == nil {
		zone := p.cfg.CheckZone
		if p.format == legacy.ArkletJSON || s.Minter != "" {
			zone = ark.ZoneNAANName // NOID minters append an NCDA check character
		}
		e = &legacy.ShoulderEntry{NAAN: naan, Bare: bare, Zone: zone, New: true}
		p.index.Put(e)
	}
	b.shoulders = append(b.shoulders, shoulderItem{rec: s, entry: e})
	return nil
}
