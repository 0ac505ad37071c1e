package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/sizing"
)

// Layout is one physical schema `arkhe bench sizing` builds a ledger in: arkhe's own (the
// migrations) or a bench-only variant created in a database of its own, never a migration. Every
// layout holds the same rows: the ARKs, one receipt each, one ARK_CHANGE per ten ARKs.
type Layout struct {
	// Name is the layout's short name: "natural", "surrogate", "receipt-table", "arkhe",
	// "no-derivable" or "lean".
	Name string `json:"name"`
	// Doc says in one line what the layout does.
	Doc   string `json:"doc"`
	shape shape
}

// refKind is how a row refers to another entity.
type refKind uint8

const (
	refString refKind = iota // the canonical string (ARK key, client_id, shoulder)
	refBigint                // a bigint surrogate (interning the ARK)
)

// shape is what distinguishes the layouts.
type shape struct {
	migrations   bool    // arkhe's own schema, built by ledger.Migrate
	arkRef       refKind // how receipts and ARK_CHANGE refer to an ARK
	clientRef    refKind // created_by, the receipt's client, by_client
	shoulderRef  refKind // how an ARK refers to its shoulder
	derivable    bool    // ark keeps naan and assigned_name (derivable from the key)
	receiptOnRow bool    // request_id and payload_digest on the ark row instead of mint_receipt
}

// Layouts returns the layouts of `arkhe bench sizing`, in the order it builds them: the two of
// the surrogate-key comparison (natural, surrogate), arkhe's earlier schema with a receipt table
// (receipt-table), arkhe's schema (the migrations: receipts on the ark row), and the remaining
// lever applied to it (no-derivable), which with the receipt on the row is all the winning ones
// together (lean: the same shape as no-derivable, kept under its name for comparisons with
// earlier runs).
func Layouts() []Layout {
	table := shape{arkRef: refString, clientRef: refBigint, shoulderRef: refBigint, derivable: true}
	arkhe := table
	arkhe.receiptOnRow = true
	noDeriv := arkhe
	noDeriv.derivable = false
	mig := arkhe
	mig.migrations = true
	return []Layout{
		{Name: "natural", Doc: "natural keys everywhere: receipts and changes reference the ARK string, clients and shoulders by their strings",
			shape: shape{arkRef: refString, clientRef: refString, shoulderRef: refString, derivable: true}},
		{Name: "surrogate", Doc: "surrogate layout: ark.id bigint key (unique ARK string beside it), receipts and changes reference ark_id, clients and shoulders interned",
			shape: shape{arkRef: refBigint, clientRef: refBigint, shoulderRef: refBigint, derivable: true}},
		{Name: "receipt-table", Doc: "arkhe's schema before receipts moved to the ark row: a mint_receipt table keyed (client, request ID), referencing the ARK string", shape: table},
		{Name: "arkhe", Doc: "arkhe's schema (the migrations): receipts on the ark row (request_id, payload_digest; partial unique ark_receipt), ARK string references, clients and shoulders interned", shape: mig},
		{Name: "no-derivable", Doc: "arkhe's schema without the columns derivable from the key (naan, assigned_name)", shape: noDeriv},
		{Name: "lean", Doc: "every winning lever: the receipt on the ark row and no naan or assigned_name (since receipts moved to the row, the same shape as no-derivable)", shape: noDeriv},
	}
}

// LayoutByName returns the layout called name.
func LayoutByName(name string) (Layout, bool) {
	for _, l := range Layouts() {
		if l.Name == name {
			return l, true
		}
	}
	return Layout{}, false
}

// The bench's registration: NAAN, shoulder and client every layout's rows belong to.
const (
	layoutManager = "sizing bench"
	layoutClient  = "tate-collections-minter"
)

// ddl returns the bench-only schema of a shape (not for migrations): the payload columns of
// arkhe's ark table (ledger/migrations/0001_ledger.sql) with the shape's keys and references,
// foreign keys where arkhe has them, COLLATE "C" identifiers.
func (s shape) ddl() string {
	ref := func(k refKind, str string) string {
		if k == refBigint {
			return "bigint"
		}
		return str
	}
	var b strings.Builder
	b.WriteString(`create type ark_status as enum ('public', 'reserved', 'unavailable');
create table naan (naan varchar(16) collate "C" primary key);
create table client (id bigint generated always as identity primary key, client_id varchar(255) collate "C" not null unique, naan varchar(16) collate "C" not null references naan);
`)
	if s.shoulderRef == refBigint {
		b.WriteString(`create table shoulder (id bigint generated always as identity primary key, naan varchar(16) collate "C" not null references naan, shoulder varchar(255) collate "C" not null, unique (naan, shoulder), unique (id, naan));
`)
	} else {
		b.WriteString(`create table shoulder (naan varchar(16) collate "C" not null references naan, shoulder varchar(255) collate "C" not null, primary key (naan, shoulder));
`)
	}
	b.WriteString("create table ark (\n")
	if s.arkRef == refBigint {
		b.WriteString("    id bigint generated always as identity primary key,\n    ark varchar(272) collate \"C\" not null unique,\n")
	} else {
		b.WriteString("    seq bigint generated always as identity,\n    ark varchar(272) collate \"C\" primary key,\n")
	}
	if s.derivable || s.shoulderRef == refString {
		b.WriteString("    naan varchar(16) collate \"C\" not null,\n")
	}
	if s.shoulderRef == refBigint {
		b.WriteString("    shoulder_id bigint not null,\n")
	} else {
		b.WriteString("    shoulder varchar(255) collate \"C\" not null,\n")
	}
	if s.derivable {
		b.WriteString("    assigned_name varchar(255) collate \"C\" not null,\n")
	}
	client := ref(s.clientRef, `varchar(255) collate "C"`)
	fmt.Fprintf(&b, `    url varchar(2048), commitment text, erc_who text, erc_what text, erc_when text, metadata jsonb,
    status ark_status, tombstone_reason text, tombstoned_at timestamptz, original text collate "C",
    check_ok boolean, created_at timestamptz, updated_at timestamptz, created_by %s, updated_by %s, import_run_id bigint,
    change_seq integer default 0`, client, client)
	if s.receiptOnRow {
		b.WriteString(",\n    request_id varchar(255) collate \"C\", payload_digest bytea,\n    unique (created_by, request_id) with (fillfactor = 100)")
	}
	switch {
	case s.shoulderRef == refString:
		b.WriteString(",\n    foreign key (naan, shoulder) references shoulder (naan, shoulder)")
	case s.derivable:
		b.WriteString(",\n    foreign key (shoulder_id, naan) references shoulder (id, naan)")
	default:
		b.WriteString(",\n    foreign key (shoulder_id) references shoulder (id)")
	}
	b.WriteString(");\n")
	if s.arkRef == refString {
		b.WriteString("create index ark_seq_brin on ark using brin (seq);\n")
	}
	arkRef := ref(s.arkRef, `varchar(272) collate "C"`)
	arkCol, target := "ark", "ark (ark)"
	if s.arkRef == refBigint {
		arkCol, target = "ark_id", "ark (id)"
	}
	clientCol := "client_pk"
	if s.clientRef == refString {
		clientCol = "client_id"
	}
	if !s.receiptOnRow {
		fmt.Fprintf(&b, `create table mint_receipt (%s %s not null, request_id varchar(255) collate "C" not null,
    %s %s not null references %s, payload_digest bytea not null, created_at timestamptz not null,
    primary key (%s, request_id) with (fillfactor = 100));
`, clientCol, client, arkCol, arkRef, target, clientCol)
	}
	fmt.Fprintf(&b, `create table ark_change (%s %s not null references %s, seq integer not null,
    at timestamptz, action text not null, before_url varchar(2048), after_url varchar(2048),
    before_status text, after_status text, reason text, before_erc jsonb, after_erc jsonb, by_client %s, by_text text,
    ip inet, import_run_id bigint, xact xid8 not null default pg_current_xact_id(),
    primary key (%s, seq));
create index ark_change_at on ark_change (at);
`, arkCol, arkRef, target, client, arkCol)
	return b.String()
}

// BuildOptions tune Build.
type BuildOptions struct {
	// Workers is the number of concurrent loaders (connections), as arkhe mint's sink workers:
	// the rows are cut into contiguous runs of Batch rows, dealt to the workers in turn, so the
	// receipts' (client, request ID) key arrives as each worker's ascending runs, as minting
	// writes it. 0: 2 (pipeline.DefaultWorkers).
	Workers int
	// Batch is the rows per transaction of one worker (ARKs and their receipts, as mint commits
	// them); 0: 10,000.
	Batch int
	// ChangeEvery appends one ARK_CHANGE row per this many ARKs; 0: 10, negative: none.
	ChangeEvery int
	// NoAutovacuum turns autovacuum off on every table of the layout (autovacuum_enabled and
	// toast.autovacuum_enabled), so the sizes measured do not depend on whether autovacuum
	// happened to run before the measurement (its first pass adds each table's free-space and
	// visibility maps, 32 KiB). Tests set it; a benchmark measures what a live server does.
	NoAutovacuum bool
	// Progress, if set, is called after each batch with the ARKs loaded so far (from the
	// workers' goroutines, one call at a time).
	Progress func(done int)
}

// BuildResult is one layout built and measured.
type BuildResult struct {
	Layout   Layout `json:"layout"`
	ARKs     int64  `json:"arks"`
	Receipts int64  `json:"receipts"`
	Changes  int64  `json:"changes"`
	// Load is the time to COPY the ARKs and receipts in transactions of Batch rows, the
	// mint's write path; ChangeLoad the time to COPY the ARK_CHANGE rows.
	Load       time.Duration `json:"load_ns"`
	ChangeLoad time.Duration `json:"change_load_ns"`
	// WALBytes is the WAL the loads wrote (pg_current_wal_lsn() before and after, from a
	// checkpoint, so with the full-page images a bulk run writes); 0 when unknown.
	WALBytes int64 `json:"wal_bytes"`
	// Loaded are the tables as loaded (indexes filled by random-order inserts, as minting fills
	// them), Rebuilt the same after REINDEX.
	Loaded  []sizing.TableSize `json:"loaded"`
	Rebuilt []sizing.TableSize `json:"rebuilt"`
}

// ARKsPerSecond returns the load throughput: ARKs (with their receipts) per second.
func (r *BuildResult) ARKsPerSecond() float64 {
	if r.Load <= 0 {
		return 0
	}
	return float64(r.ARKs) / r.Load.Seconds()
}

// PerARK returns the octets per ARK of each growing table in tables (as loaded or rebuilt):
// ark (with the receipt columns when they are on the row, as in arkhe's schema), mint_receipt
// (layouts with a receipt table), ark_change, the rest.
func (r *BuildResult) PerARK(tables []sizing.TableSize) (arkB, receiptB, changeB, restB float64) {
	n := float64(r.ARKs)
	if n == 0 {
		return 0, 0, 0, 0
	}
	for _, t := range tables {
		v := float64(t.Total) / n
		switch t.Name {
		case sizing.TableARK:
			arkB = v
		case sizing.TableReceipt:
			receiptB = v
		case sizing.TableChange:
			changeB = v
		default:
			restB += v
		}
	}
	return arkB, receiptB, changeB, restB
}

// AllIn returns ark + receipt octets per ARK (heap, TOAST, indexes): the figure of the size
// target.
func (r *BuildResult) AllIn(tables []sizing.TableSize) float64 {
	a, rc, _, _ := r.PerARK(tables)
	return a + rc
}

// Growing returns the octets per ARK of the growing tables: ark, receipts and ark_change, the
// tables that do not grow with the ARKs left out.
func (r *BuildResult) Growing(tables []sizing.TableSize) float64 {
	a, rc, c, _ := r.PerARK(tables)
	return a + rc + c
}

// Ledger returns every table's octets per ARK, changes included.
func (r *BuildResult) Ledger(tables []sizing.TableSize) float64 {
	a, rc, c, rest := r.PerARK(tables)
	return a + rc + c + rest
}

// Build creates layout l in the empty database of pool, loads rows into it as arkhe mint writes
// (Workers concurrent connections, each COPYing its ARKs and their receipts in transactions of
// Batch rows; ARK keys in drawn order, so their index fills by random inserts), appends one
// ARK_CHANGE per ChangeEvery ARKs, and measures every table as loaded and after REINDEX.
// CHECKPOINT needs superuser; without it WALBytes counts no full-page images. Errors name the
// layout and step.
func Build(ctx context.Context, pool *pgxpool.Pool, l Layout, rows *RowSet, o BuildOptions) (*BuildResult, error) {
	if o.Workers <= 0 {
		o.Workers = 2
	}
	if o.Batch <= 0 {
		o.Batch = 10_000
	}
	if o.ChangeEvery == 0 {
		o.ChangeEvery = 10
	}
	fail := func(step string, err error) (*BuildResult, error) {
		return nil, fmt.Errorf("layout %s: %s: %w", l.Name, step, err)
	}
	s := l.shape
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fail("connect", err)
	}
	defer conn.Release()
	if s.migrations {
		if _, err := ledger.Migrate(ctx, conn.Conn(), ledger.LayoutAuto); err != nil {
			return fail("migrate", err)
		}
	} else if _, err := conn.Exec(ctx, s.ddl()); err != nil {
		return fail("create schema", err)
	}
	if o.NoAutovacuum {
		if err := autovacuumOff(ctx, conn.Conn()); err != nil {
			return fail("turn autovacuum off", err)
		}
	}
	var clientKey, shoulderKey int64
	if err := register(ctx, conn.Conn(), s, rows, &clientKey, &shoulderKey); err != nil {
		return fail("register", err)
	}
	res := &BuildResult{Layout: l, ARKs: int64(len(rows.Rows))}
	_, _ = conn.Exec(ctx, "checkpoint")
	var lsn0 string
	if err := conn.QueryRow(ctx, "select pg_current_wal_lsn()::text").Scan(&lsn0); err != nil {
		return fail("read WAL position", err)
	}
	arkCols, arkRow := s.arkColumns(rows, clientKey, shoulderKey)
	recCols, recRow := s.receiptColumns(rows, clientKey)
	streams := make([][]int, o.Workers)
	for i := range rows.Rows {
		w := i / o.Batch % o.Workers
		streams[w] = append(streams[w], i)
	}
	var mu sync.Mutex
	done := 0
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	for _, idx := range streams {
		g.Go(func() error {
			wc, err := pool.Acquire(gctx)
			if err != nil {
				return err
			}
			defer wc.Release()
			for lo := 0; lo < len(idx); lo += o.Batch {
				batch := idx[lo:min(lo+o.Batch, len(idx))]
				if err := pgx.BeginFunc(gctx, wc, func(tx pgx.Tx) error {
					if _, err := tx.CopyFrom(gctx, pgx.Identifier{sizing.TableARK}, arkCols, rowSource(batch, arkRow)); err != nil {
						return fmt.Errorf("copy ark: %w", err)
					}
					if s.receiptOnRow {
						return nil
					}
					return copyRefs(gctx, tx, s, sizing.TableReceipt, recCols, rowSource(batch, recRow), clientKey)
				}); err != nil {
					return fmt.Errorf("load a batch of %d rows: %w", len(batch), err)
				}
				if o.Progress != nil {
					mu.Lock()
					done += len(batch)
					o.Progress(done)
					mu.Unlock()
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return fail("load", err)
	}
	res.Load = time.Since(start)
	res.Receipts = res.ARKs
	if o.ChangeEvery > 0 {
		chCols, chRow := s.changeColumns(rows, clientKey)
		var idx []int
		for i := 0; i < len(rows.Rows); i += o.ChangeEvery {
			idx = append(idx, i)
		}
		start = time.Now()
		if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			return copyRefs(ctx, tx, s, sizing.TableChange, chCols, rowSource(idx, chRow), clientKey)
		}); err != nil {
			return fail("load ark_change", err)
		}
		res.ChangeLoad = time.Since(start)
		res.Changes = int64(len(idx))
	}
	var wal int64
	if err := conn.QueryRow(ctx, "select pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::bigint", lsn0).Scan(&wal); err != nil {
		return fail("read WAL position", err)
	}
	res.WALBytes = wal
	if res.Loaded, err = sizing.MeasureTables(ctx, conn); err != nil {
		return fail("measure", err)
	}
	for _, t := range res.Loaded {
		if _, err := conn.Exec(ctx, "reindex table "+pgx.Identifier{t.Name}.Sanitize()); err != nil {
			return fail("reindex "+t.Name, err)
		}
	}
	if res.Rebuilt, err = sizing.MeasureTables(ctx, conn); err != nil {
		return fail("measure after reindex", err)
	}
	return res, nil
}

// autovacuumOff turns autovacuum off on every ordinary table of the current schema and its
// TOAST table.
func autovacuumOff(ctx context.Context, conn *pgx.Conn) error {
	rows, err := conn.Query(ctx, `select c.oid::regclass::text from pg_class c
		where c.relnamespace = current_schema()::regnamespace and c.relkind in ('r', 'p') order by 1`)
	if err != nil {
		return err
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, t := range tables {
		if _, err := conn.Exec(ctx, "alter table "+t+" set (autovacuum_enabled = off, toast.autovacuum_enabled = off)"); err != nil {
			return fmt.Errorf("%s: %w", t, err)
		}
	}
	return nil
}

// copyRefs COPYs rows that refer to an ARK (receipts, ARK_CHANGE) into table. With a bigint
// surrogate the rows name the ARK by its key and go through a staging table, joined to ark for
// ark.id, as a surrogate layout's mint or repoint must look the surrogate up; cols then name
// "ark" where the table has "ark_id".
func copyRefs(ctx context.Context, tx pgx.Tx, s shape, table string, cols []string, src pgx.CopyFromSource, clientKey int64) error {
	if s.arkRef != refBigint {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{table}, cols, src); err != nil {
			return fmt.Errorf("copy %s: %w", table, err)
		}
		return nil
	}
	stage := table + "_stage"
	if _, err := tx.Exec(ctx, fmt.Sprintf(`create temp table if not exists %s (like %s including defaults) on commit delete rows;
		alter table %s drop column if exists ark_id, drop column if exists id, add column if not exists ark text`,
		stage, table, stage)); err != nil {
		return fmt.Errorf("stage %s: %w", table, err)
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{stage}, cols, src); err != nil {
		return fmt.Errorf("copy %s: %w", stage, err)
	}
	var target, source []string
	for _, c := range cols {
		if c == "ark" {
			target, source = append(target, "ark_id"), append(source, "a.id")
		} else {
			target, source = append(target, c), append(source, "s."+c)
		}
	}
	if _, err := tx.Exec(ctx, fmt.Sprintf(`insert into %s (%s) select %s from %s s join ark a on a.ark = s.ark`,
		table, strings.Join(target, ", "), strings.Join(source, ", "), stage)); err != nil {
		return fmt.Errorf("insert %s: %w", table, err)
	}
	return nil
}

// register inserts the NAAN, shoulder and client of the bench (for arkhe's schema also a
// manager, and a client whose reach lets it mint on the shoulder) and returns the client's and
// shoulder's keys (0 for a string-keyed shoulder).
func register(ctx context.Context, conn *pgx.Conn, s shape, rows *RowSet, clientKey, shoulderKey *int64) error {
	if _, err := conn.Exec(ctx, `insert into naan (naan) values ($1)`, rows.NAAN); err != nil {
		return err
	}
	if s.migrations {
		if _, err := conn.Exec(ctx, `insert into manager (naan, name) values ($1, $2)`, rows.NAAN, layoutManager); err != nil {
			return err
		}
		if err := conn.QueryRow(ctx, `insert into shoulder (naan, shoulder, manager_id)
			values ($1::text, $2::text, (select id from manager where naan = $1::text and name = $3::text)) returning id`,
			rows.NAAN, rows.Shoulder, layoutManager).Scan(shoulderKey); err != nil {
			return err
		}
		return conn.QueryRow(ctx, `insert into client (client_id, naan, subject_type, authority, allowed_scopes)
			values ($1, $2, 'machine', 'system', '{ark:mint}') returning id`, layoutClient, rows.NAAN).Scan(clientKey)
	}
	if s.shoulderRef == refBigint {
		if err := conn.QueryRow(ctx, `insert into shoulder (naan, shoulder) values ($1, $2) returning id`,
			rows.NAAN, rows.Shoulder).Scan(shoulderKey); err != nil {
			return err
		}
	} else if _, err := conn.Exec(ctx, `insert into shoulder (naan, shoulder) values ($1, $2)`, rows.NAAN, rows.Shoulder); err != nil {
		return err
	}
	return conn.QueryRow(ctx, `insert into client (client_id, naan) values ($1, $2) returning id`, layoutClient, rows.NAAN).Scan(clientKey)
}

// rowSource streams the rows idx of a row function to COPY without materializing the batch.
func rowSource(idx []int, row func(i int) []any) pgx.CopyFromSource {
	k := 0
	return pgx.CopyFromFunc(func() ([]any, error) {
		if k >= len(idx) {
			return nil, nil
		}
		v := row(idx[k])
		k++
		return v, nil
	})
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (s shape) clientValue(key int64) any {
	if s.clientRef == refBigint {
		return key
	}
	return layoutClient
}

// arkColumns returns the COPY columns of ark and the values of row i, as mint writes them.
func (s shape) arkColumns(rows *RowSet, clientKey, shoulderKey int64) ([]string, func(i int) []any) {
	cols := []string{"ark"}
	if s.derivable || s.shoulderRef == refString {
		cols = append(cols, "naan")
	}
	if s.shoulderRef == refBigint {
		cols = append(cols, "shoulder_id")
	} else {
		cols = append(cols, "shoulder")
	}
	if s.derivable {
		cols = append(cols, "assigned_name")
	}
	// status takes its default ('public') and change_seq goes as NULL (0), as mint writes them
	cols = append(cols, "url", "erc_who", "erc_what", "erc_when", "change_seq", "created_at", "created_by")
	if s.receiptOnRow {
		cols = append(cols, "request_id", "payload_digest")
	}
	client := s.clientValue(clientKey)
	return cols, func(i int) []any {
		r := &rows.Rows[i]
		v := make([]any, 0, len(cols))
		v = append(v, rows.Key(i))
		if s.derivable || s.shoulderRef == refString {
			v = append(v, rows.NAAN)
		}
		if s.shoulderRef == refBigint {
			v = append(v, shoulderKey)
		} else {
			v = append(v, rows.Shoulder)
		}
		if s.derivable {
			v = append(v, r.Name)
		}
		v = append(v, nullable(r.URL), nullable(r.Who), nullable(r.What), nullable(r.When), nil, r.CreatedAt, client)
		if s.receiptOnRow {
			v = append(v, r.RequestID, r.Digest[:ledger.ReceiptDigestOctets])
		}
		return v
	}
}

// receiptColumns returns the COPY columns of mint_receipt and the values of row i's receipt; the
// ARK is named by its key (copyRefs turns it into ark_id for a surrogate layout).
func (s shape) receiptColumns(rows *RowSet, clientKey int64) ([]string, func(i int) []any) {
	clientCol := "client_pk"
	if s.clientRef == refString {
		clientCol = "client_id"
	}
	client := s.clientValue(clientKey)
	return []string{clientCol, "request_id", "ark", "payload_digest", "created_at"}, func(i int) []any {
		r := &rows.Rows[i]
		return []any{client, r.RequestID, rows.Key(i), r.Digest[:ledger.ReceiptDigestOctets], r.CreatedAt}
	}
}

// changeColumns returns the COPY columns of ark_change and the values of a repoint of row i's
// ARK a day after it was minted, to a new URL of the same length: the ARK's first change (seq 1).
func (s shape) changeColumns(rows *RowSet, clientKey int64) ([]string, func(i int) []any) {
	client := s.clientValue(clientKey)
	return []string{"ark", "seq", "at", "action", "before_url", "after_url", "before_status", "after_status", "by_client"}, func(i int) []any {
		r := &rows.Rows[i]
		after := r.URL
		if strings.HasPrefix(after, "http://") {
			after = "https://" + after[len("http://"):]
		} else if after != "" {
			after = after[:len(after)-1] + "2"
		}
		return []any{rows.Key(i), int32(1), r.CreatedAt.Add(24 * time.Hour), "update", nullable(r.URL), nullable(after),
			"public", "public", client}
	}
}

// Lever is one schema choice of the size targets, measured: octets per ARK before and after it,
// on the same rows.
type Lever struct {
	Name string `json:"name"`
	// From and To are the layouts compared ("arkhe", "arkhe rebuilt", ...).
	From string `json:"from"`
	To   string `json:"to"`
	// AllIn* are ark + receipt octets per ARK; Ledger* every growing table (ark, receipts,
	// ark_change), without the fixed tables, which differ between arkhe's migrations and the
	// bench-only schemas (see Growing).
	AllInBefore  float64 `json:"all_in_before"`
	AllInAfter   float64 `json:"all_in_after"`
	LedgerBefore float64 `json:"ledger_before"`
	LedgerAfter  float64 `json:"ledger_after"`
	// Saved is LedgerBefore − LedgerAfter, SavedPct the same in % of LedgerBefore.
	Saved    float64 `json:"saved_per_ark"`
	SavedPct float64 `json:"saved_pct"`
}

// Levers derives the size levers from built layouts (those missing are skipped): a receipt
// table vs receipt columns on the ark row (receipt-table to arkhe), bigint surrogates vs
// natural ARK references and interning client ids and shoulders (both against receipt-table,
// which like natural and surrogate keeps a receipt table), dropping the columns derivable from
// the key, index fill after random inserts vs after REINDEX, and all the winning ones together
// (receipt-table to lean).
func Levers(results []*BuildResult) []Lever {
	get := func(name string) *BuildResult {
		for _, r := range results {
			if r.Layout.Name == name {
				return r
			}
		}
		return nil
	}
	var out []Lever
	add := func(name string, from *BuildResult, fromT []sizing.TableSize, fromName string, to *BuildResult, toT []sizing.TableSize, toName string) {
		l := Lever{Name: name, From: fromName, To: toName,
			AllInBefore: from.AllIn(fromT), AllInAfter: to.AllIn(toT),
			LedgerBefore: from.Growing(fromT), LedgerAfter: to.Growing(toT)}
		l.Saved = l.LedgerBefore - l.LedgerAfter
		if l.LedgerBefore > 0 {
			l.SavedPct = l.Saved / l.LedgerBefore * 100
		}
		out = append(out, l)
	}
	pair := func(name, from, to string) {
		f, t := get(from), get(to)
		if f != nil && t != nil {
			add(name, f, f.Loaded, from, t, t.Loaded, to)
		}
	}
	pair("receipt columns on the ark row instead of a receipt table", "receipt-table", "arkhe")
	pair("bigint surrogate ark.id in receipts and changes instead of the ARK string", "receipt-table", "surrogate")
	pair("interning client ids and shoulders to bigint instead of their strings", "natural", "receipt-table")
	pair("dropping naan and assigned_name (derivable from the key)", "arkhe", "no-derivable")
	if a := get("arkhe"); a != nil {
		add("REINDEX after the random-order inserts of minting (index fill)", a, a.Loaded, "arkhe", a, a.Rebuilt, "arkhe rebuilt")
	}
	pair("all the winning levers (lean)", "receipt-table", "lean")
	if a, l := get("receipt-table"), get("lean"); a != nil && l != nil {
		add("lean, and REINDEX after the load", a, a.Loaded, "receipt-table", l, l.Rebuilt, "lean rebuilt")
	}
	return out
}
