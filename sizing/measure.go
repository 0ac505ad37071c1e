package sizing

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/ledger"
)

// Querier is what Measure needs of a connection: *pgxpool.Pool, *pgx.Conn and pgx.Tx all
// satisfy it.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// The ledger's growing tables (ledger/migrations/0001_ledger.sql). TableReceipt names the
// receipts: on a single node arkhe keeps them on the ark row and shows them through the
// mint_receipt view, so Measure reports them as a TableSize of that name carved out of ark
// (TableSize.PartOf); on Citus they are a table of their own (receipt), reported under that
// name; the bench layouts that keep a receipt table give it that name.
const (
	TableARK     = "ark"
	TableReceipt = "mint_receipt"
	TableChange  = "ark_change"
)

// MinMeasuredRows is the row count from which a table's measured per-row cost is used for
// projections; below it the empty relation's pages dominate and the model is used instead.
const MinMeasuredRows = 10_000

// MinPerRowRows is the row count below which a per-row (or per-ARK) cost is not presented as a
// measurement: a table of a few hundred rows costs mostly its empty pages (8 KiB each), so
// "ARK_CHANGE per row 16384 B" would be an artefact, not a finding. CompareLine.TooFewRows marks
// such a line.
const MinPerRowRows = 1_000

// DefaultCollisionWarning is the collision rate (collisions / draws) from which a shoulder is
// flagged: a draw collides with probability (ARKs minted) / (blade space), so a rate of 0.1 %
// means the shoulder's blade space is about 0.1 % used, long before it fills but the
// early-warning signal that a namespace is filling up (a rising collision
// rate is the only one).
const DefaultCollisionWarning = 0.001

// fieldSampleRows bounds the rows read to measure average field lengths: above it the ark table
// (and a receipt table, where there is one) is sampled (TABLESAMPLE SYSTEM).
const fieldSampleRows = 2_000_000

// MeasureOptions tune Measure.
type MeasureOptions struct {
	// CollisionWarning is the collision rate from which a shoulder is flagged (0:
	// DefaultCollisionWarning).
	CollisionWarning float64
}

// Measurement is a live ledger's size, table by table, with what the model and the
// projections need. It holds no internal key: tables, indexes, NAANs and shoulders are named by
// their public names.
type Measurement struct {
	Database   string       `json:"database"`
	Server     string       `json:"server_version"`
	MeasuredAt time.Time    `json:"measured_at"`
	Tables     []TableSize  `json:"tables"`
	ARKs       int64        `json:"arks"`
	Receipts   int64        `json:"receipts"`
	Changes    int64        `json:"changes"`
	Fields     Fields       `json:"fields"` // the ledger's average field lengths and shares
	WAL        WAL          `json:"wal"`
	Namespaces []NAANUse    `json:"namespaces"`
	Settings   ServerMemory `json:"settings"`
	// Nodes is, on a Citus cluster, what each node holds (every shard placement); nil on a
	// single node. The Tables then sum every placement on every node.
	Nodes []NodeUse `json:"nodes,omitempty"`
}

// ServerMemory are the server settings that sizing compares against, in octets.
type ServerMemory struct {
	SharedBuffers int64 `json:"shared_buffers"`
	MaxWALSize    int64 `json:"max_wal_size"`
}

// TableSize is one table on disk, in octets. Total = Heap + Maps + TOAST + TOASTIndex +
// IndexBytes() (pg_total_relation_size).
type TableSize struct {
	Name string `json:"name"`
	Rows int64  `json:"rows"`
	// Heap is the main fork (pg_relation_size(t, 'main')).
	Heap int64 `json:"heap"`
	// Maps are the free-space and visibility maps (and an unlogged table's init fork).
	Maps int64 `json:"maps"`
	// TOAST is the table's TOAST relation (all forks), TOASTIndex the TOAST relation's index.
	TOAST      int64       `json:"toast"`
	TOASTIndex int64       `json:"toast_index"`
	Indexes    []IndexSize `json:"indexes"`
	Total      int64       `json:"total"`
	// PartOf names the table this one is a share of, "" for a relation of its own: Measure
	// reports the receipts on the ark row as TableReceipt with PartOf "ark" (heap: the receipt
	// columns' share, ReceiptHeapShare per receipt; indexes: ark_receipt), and the ark table
	// without them, so the tables still add up to the ledger's octets.
	PartOf string `json:"part_of,omitempty"`
}

// IndexSize is one index on disk: Bytes is its main fork (pg_relation_size of the index, the
// per-index figure of pg_stat_user_indexes), Maps its free-space map (a B-tree gets one once VACUUM
// has looked at it).
type IndexSize struct {
	Name       string `json:"name"`
	Method     string `json:"method"` // btree, brin, hash, ...
	Primary    bool   `json:"primary,omitempty"`
	Unique     bool   `json:"unique,omitempty"`
	Definition string `json:"definition"`
	Bytes      int64  `json:"bytes"`
	Maps       int64  `json:"maps"`
}

// IndexBytes returns the octets of all the table's own indexes, every fork (the TOAST index not
// included).
func (t TableSize) IndexBytes() int64 {
	var s int64
	for _, ix := range t.Indexes {
		s += ix.Bytes + ix.Maps
	}
	return s
}

// TOASTBytes returns TOAST + TOASTIndex.
func (t TableSize) TOASTBytes() int64 { return t.TOAST + t.TOASTIndex }

// HeapBytes returns Heap + Maps.
func (t TableSize) HeapBytes() int64 { return t.Heap + t.Maps }

// WAL is what is known of the WAL the ledger's runs wrote.
type WAL struct {
	// Runs are import or mint runs that recorded the WAL they wrote, from pg_current_wal_lsn()
	// before and after, as a "wal_bytes" number in import_run.counts or in the detail of their
	// audit_event ('mint' or 'import'), with the ARKs written as "minted", "imported" or "rows";
	// newest first, at most 5.
	Runs []RunWAL `json:"runs,omitempty"`
	// ClusterBytes is pg_stat_wal.wal_bytes: all the WAL the server wrote since StatsReset,
	// for every database on it. 0 and StatsReset zero when unknown (PostgreSQL before 14).
	ClusterBytes int64     `json:"cluster_bytes"`
	StatsReset   time.Time `json:"stats_reset"`
}

// RunWAL is the WAL one run recorded.
type RunWAL struct {
	Source  string    `json:"source"`
	Started time.Time `json:"started_at"`
	Rows    int64     `json:"rows"` // ARKs it wrote (counts "minted", "imported" or "rows"), 0 if unknown
	Bytes   int64     `json:"wal_bytes"`
}

// Table returns the measured table named name and whether there is one.
func (m *Measurement) Table(name string) (TableSize, bool) {
	for _, t := range m.Tables {
		if t.Name == name {
			return t, true
		}
	}
	return TableSize{}, false
}

// Total returns the octets of every measured table.
func (m *Measurement) Total() int64 {
	var s int64
	for _, t := range m.Tables {
		s += t.Total
	}
	return s
}

// Measure measures the ledger q is connected to: every table of the current schema with its
// heap, maps, TOAST and each index (pg_relation_size, pg_total_relation_size), exact row counts,
// the average field lengths of ark and its receipts (read in full up to 2 million rows, sampled
// above), the receipts on the ark row as a share of ark of their own (TableReceipt, PartOf
// "ark"; splitReceipts), the WAL runs recorded, the server's shared_buffers and max_wal_size, and the
// namespaces (shoulders used per NAAN and length, ARKs and collisions per shoulder). It only
// reads. Errors wrap the failing query's.
func Measure(ctx context.Context, q Querier, o MeasureOptions) (*Measurement, error) {
	if o.CollisionWarning <= 0 {
		o.CollisionWarning = DefaultCollisionWarning
	}
	m := &Measurement{MeasuredAt: time.Now().UTC()}
	if err := q.QueryRow(ctx, `select current_database(), current_setting('server_version'),
		pg_size_bytes(current_setting('shared_buffers')), pg_size_bytes(current_setting('max_wal_size'))`).
		Scan(&m.Database, &m.Server, &m.Settings.SharedBuffers, &m.Settings.MaxWALSize); err != nil {
		return nil, fmt.Errorf("measure: server settings: %w", err)
	}
	tables, err := MeasureTables(ctx, q)
	if err != nil {
		return nil, err
	}
	m.Tables = tables
	kinds, err := citusTables(ctx, q)
	if err != nil {
		return nil, err
	}
	if len(kinds) > 0 {
		if m.Nodes, err = measurePlacements(ctx, q, m.Tables, kinds); err != nil {
			return nil, err
		}
		// on Citus the receipts are a table of their own, read through the mint_receipt view
		if _, ok := m.Table(TableReceipt); !ok {
			for i := range m.Tables {
				if m.Tables[i].Name == citusReceiptTable {
					m.Tables[i].Name = TableReceipt
				}
			}
		}
	}
	_, receiptTable := m.Table(TableReceipt)
	for _, t := range m.Tables {
		switch t.Name {
		case TableARK:
			m.ARKs = t.Rows
		case TableReceipt:
			m.Receipts = t.Rows
		case TableChange:
			m.Changes = t.Rows
		}
	}
	onRow := false
	if !receiptTable && m.ARKs > 0 {
		if onRow, err = hasColumn(ctx, q, TableARK, receiptRequestID); err != nil {
			return nil, err
		}
		if onRow {
			if err := q.QueryRow(ctx, `select count(*) from ark where request_id is not null`).Scan(&m.Receipts); err != nil {
				return nil, fmt.Errorf("measure: count receipts: %w", err)
			}
		}
	}
	if m.Fields, err = measureFields(ctx, q, m.ARKs, m.Receipts, receiptTable); err != nil {
		return nil, err
	}
	if onRow {
		m.Tables = splitReceipts(m.Tables, m.Receipts, ReceiptHeapShare(m.Fields))
	}
	if m.WAL, err = measureWAL(ctx, q); err != nil {
		return nil, err
	}
	rows, err := measureShoulders(ctx, q)
	if err != nil {
		return nil, err
	}
	m.Namespaces = Namespaces(rows, o.CollisionWarning)
	return m, nil
}

func measureTables(ctx context.Context, q Querier) ([]TableSize, error) {
	rows, err := q.Query(ctx, `select c.oid::bigint, c.relname::text,
			pg_relation_size(c.oid, 'main'),
			pg_relation_size(c.oid, 'fsm') + pg_relation_size(c.oid, 'vm') + pg_relation_size(c.oid, 'init'),
			case when c.reltoastrelid <> 0 then pg_table_size(c.reltoastrelid) else 0 end,
			case when c.reltoastrelid <> 0 then pg_indexes_size(c.reltoastrelid) else 0 end,
			pg_total_relation_size(c.oid)
		from pg_class c join pg_namespace n on n.oid = c.relnamespace
		where n.nspname = current_schema() and c.relkind in ('r', 'm')
		order by c.relname`)
	if err != nil {
		return nil, fmt.Errorf("measure: list tables: %w", err)
	}
	type rel struct {
		oid int64
		t   TableSize
	}
	rels, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (rel, error) {
		var x rel
		err := r.Scan(&x.oid, &x.t.Name, &x.t.Heap, &x.t.Maps, &x.t.TOAST, &x.t.TOASTIndex, &x.t.Total)
		return x, err
	})
	if err != nil {
		return nil, fmt.Errorf("measure: list tables: %w", err)
	}
	byOID := make(map[int64]int, len(rels))
	oids := make([]int64, len(rels))
	out := make([]TableSize, len(rels))
	for i, x := range rels {
		byOID[x.oid] = i
		oids[i] = x.oid
		out[i] = x.t
	}
	irows, err := q.Query(ctx, `select i.indrelid::bigint, ic.relname::text, am.amname::text, i.indisprimary,
			i.indisunique, pg_get_indexdef(i.indexrelid), pg_relation_size(i.indexrelid),
			pg_total_relation_size(i.indexrelid) - pg_relation_size(i.indexrelid)
		from pg_index i join pg_class ic on ic.oid = i.indexrelid join pg_am am on am.oid = ic.relam
		where i.indrelid = any($1::bigint[]::oid[])
		order by pg_relation_size(i.indexrelid) desc, ic.relname`, oids)
	if err != nil {
		return nil, fmt.Errorf("measure: list indexes: %w", err)
	}
	defer irows.Close()
	for irows.Next() {
		var owner int64
		var ix IndexSize
		if err := irows.Scan(&owner, &ix.Name, &ix.Method, &ix.Primary, &ix.Unique, &ix.Definition, &ix.Bytes, &ix.Maps); err != nil {
			return nil, fmt.Errorf("measure: list indexes: %w", err)
		}
		if i, ok := byOID[owner]; ok {
			out[i].Indexes = append(out[i].Indexes, ix)
		}
	}
	if err := irows.Err(); err != nil {
		return nil, fmt.Errorf("measure: list indexes: %w", err)
	}
	return out, nil
}

// hasColumn reports whether table of the current schema has column.
func hasColumn(ctx context.Context, q Querier, table, column string) (bool, error) {
	var ok bool
	err := q.QueryRow(ctx, `select exists (select 1 from information_schema.columns
		where table_schema = current_schema() and table_name = $1 and column_name = $2)`, table, column).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("measure: columns of %s: %w", table, err)
	}
	return ok, nil
}

// splitReceipts carves the receipts on the ark row out of the ark TableSize: a TableReceipt
// entry (PartOf "ark") holding receipts × heapShare heap octets and the ark_receipt index, and
// ark without them. Totals are kept: ark's and the receipts' add up to pg_total_relation_size
// of ark.
func splitReceipts(tables []TableSize, receipts int64, heapShare float64) []TableSize {
	out := make([]TableSize, 0, len(tables)+1)
	for _, t := range tables {
		if t.Name != TableARK {
			out = append(out, t)
			continue
		}
		r := TableSize{Name: TableReceipt, Rows: receipts, PartOf: TableARK}
		r.Heap = min(t.Heap, int64(math.Round(float64(receipts)*heapShare)))
		t.Heap -= r.Heap
		var keep []IndexSize
		for _, ix := range t.Indexes {
			if ix.Name == receiptIndex {
				r.Indexes = append(r.Indexes, ix)
			} else {
				keep = append(keep, ix)
			}
		}
		t.Indexes = keep
		r.Total = r.Heap + r.IndexBytes()
		t.Total -= r.Total
		out = append(out, t, r)
	}
	return out
}

// measureFields reads the average field lengths (octets) and shares of ark and of the receipts:
// from the receipt table when receiptTable, else from ark's receipt columns.
func measureFields(ctx context.Context, q Querier, arks, receipts int64, receiptTable bool) (Fields, error) {
	f := Fields{}
	if arks > 0 {
		var avgNAAN, avgName, url, what, who, when *float64
		var n, nURL, nWhat, nWho, nWhen int64
		err := q.QueryRow(ctx, `select count(*), avg(octet_length(naan)), avg(octet_length(assigned_name)),
				count(url), avg(octet_length(url)), count(erc_what), avg(octet_length(erc_what)),
				count(erc_who), avg(octet_length(erc_who)), count(erc_when), avg(octet_length(erc_when))
			from ark`+sample(arks)).
			Scan(&n, &avgNAAN, &avgName, &nURL, &url, &nWhat, &what, &nWho, &who, &nWhen, &when)
		if err != nil {
			return f, fmt.Errorf("measure: field lengths of ark: %w", err)
		}
		if n > 0 {
			f.NAAN, f.Name = deref(avgNAAN), deref(avgName)
			f.URL, f.URLShare = deref(url), float64(nURL)/float64(n)
			f.What, f.WhatShare = deref(what), float64(nWhat)/float64(n)
			f.Who, f.WhoShare = deref(who), float64(nWho)/float64(n)
			f.When, f.WhenShare = deref(when), float64(nWhen)/float64(n)
		}
	}
	if receipts > 0 {
		var avg *float64
		sql := `select avg(octet_length(request_id)) from ark` + sample(arks)
		if receiptTable {
			sql = `select avg(octet_length(request_id)) from mint_receipt` + sample(receipts)
		}
		if err := q.QueryRow(ctx, sql).Scan(&avg); err != nil {
			return f, fmt.Errorf("measure: field lengths of receipts: %w", err)
		}
		f.RequestID = deref(avg)
	}
	return f, nil
}

// sample returns a TABLESAMPLE clause reading about fieldSampleRows of rows, or "".
func sample(rows int64) string {
	if rows <= fieldSampleRows {
		return ""
	}
	return fmt.Sprintf(" tablesample system (%.4f)", 100*float64(fieldSampleRows)/float64(rows))
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// undefinedFunction and undefinedTable are SQLSTATEs 42883 and 42P01: pg_stat_wal before
// PostgreSQL 14, import_run in a schema that lacks it.
const (
	undefinedFunction = "42883"
	undefinedTable    = "42P01"
	undefinedColumn   = "42703"
)

func measureWAL(ctx context.Context, q Querier) (WAL, error) {
	var w WAL
	var reset *time.Time
	err := q.QueryRow(ctx, `select wal_bytes::bigint, stats_reset from pg_stat_wal`).Scan(&w.ClusterBytes, &reset)
	switch {
	case err == nil:
		if reset != nil {
			w.StatsReset = reset.UTC()
		}
	case ledger.SQLState(err) == undefinedTable || ledger.SQLState(err) == undefinedColumn:
		// before PostgreSQL 14: unknown
	default:
		return w, fmt.Errorf("measure: pg_stat_wal: %w", err)
	}
	for _, src := range []struct{ what, sql string }{
		{"import_run", `select source_file, started_at, (counts->>'wal_bytes')::bigint,
				coalesce((counts->>'minted')::bigint, (counts->>'imported')::bigint, (counts->>'rows')::bigint, 0)
			from import_run where jsonb_typeof(counts->'wal_bytes') = 'number'
			order by started_at desc limit 5`},
		{"audit_event", `select action || ' ' || coalesce(target, ''), at, (detail->>'wal_bytes')::bigint,
				coalesce((detail->>'minted')::bigint, (detail->>'imported')::bigint, (detail->>'rows')::bigint, 0)
			from audit_event where action in ('mint', 'import') and jsonb_typeof(detail->'wal_bytes') = 'number'
			order by at desc limit 5`},
	} {
		rows, err := q.Query(ctx, src.sql)
		if err != nil {
			if s := ledger.SQLState(err); s == undefinedTable || s == undefinedColumn {
				continue
			}
			return w, fmt.Errorf("measure: WAL of runs (%s): %w", src.what, err)
		}
		runs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (RunWAL, error) {
			var x RunWAL
			err := r.Scan(&x.Source, &x.Started, &x.Bytes, &x.Rows)
			x.Started = x.Started.UTC()
			return x, err
		})
		if err != nil {
			if s := ledger.SQLState(err); s == undefinedTable || s == undefinedColumn {
				continue
			}
			return w, fmt.Errorf("measure: WAL of runs (%s): %w", src.what, err)
		}
		w.Runs = append(w.Runs, runs...)
	}
	sort.SliceStable(w.Runs, func(i, j int) bool { return w.Runs[i].Started.After(w.Runs[j].Started) })
	if len(w.Runs) > 5 {
		w.Runs = w.Runs[:5]
	}
	return w, nil
}

// ShoulderRow is one shoulder as the namespace statistics read it: public names and counters
// only.
type ShoulderRow struct {
	NAAN        string
	Shoulder    string // stored form, "/x9"
	Status      string // active, reserved, delegated, retired
	BladeLength int
	ARKs        int64 // ARKs in the ledger under this shoulder
	Draws       int64 // blades mint drew for it (shoulder_tally.draws; 0 without a row)
	Collisions  int64 // draws that hit an existing ARK (shoulder_tally.collisions)
}

func measureShoulders(ctx context.Context, q Querier) ([]ShoulderRow, error) {
	rows, err := q.Query(ctx, `select n.naan::text, s.shoulder::text, s.status, s.blade_length::int,
			coalesce(a.n, 0), coalesce(t.draws, 0), coalesce(t.collisions, 0)
		from naan n
		left join shoulder s on s.naan = n.naan
		left join shoulder_tally t on t.shoulder_id = s.id
		left join (select shoulder_id, count(*) as n from ark group by shoulder_id) a on a.shoulder_id = s.id
		order by n.naan, s.shoulder`)
	if err != nil {
		return nil, fmt.Errorf("measure: shoulders: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ShoulderRow, error) {
		var x ShoulderRow
		var shoulder, status *string
		var bl *int
		var draws, coll *int64
		err := r.Scan(&x.NAAN, &shoulder, &status, &bl, &x.ARKs, &draws, &coll)
		if shoulder != nil {
			x.Shoulder, x.Status, x.BladeLength, x.Draws, x.Collisions = *shoulder, *status, *bl, *draws, *coll
		}
		return x, err
	})
	if err != nil {
		return nil, fmt.Errorf("measure: shoulders: %w", err)
	}
	return out, nil
}

// NAANUse is one NAAN's namespace: how many shoulders of each length it uses out of how many
// exist, and each shoulder's blade space.
type NAANUse struct {
	NAAN      string        `json:"naan"`
	Lengths   []LengthUse   `json:"shoulder_lengths"`
	Legacy    int           `json:"legacy_shoulders"` // shoulders outside the first-digit convention
	Shoulders []ShoulderUse `json:"shoulders"`
}

// InUse reports whether the NAAN holds an ARK or an active shoulder: the NAANs `arkhe sizing`
// lists by default (a ledger holding the imported NAAN registry has thousands of others).
func (n NAANUse) InUse() bool {
	for _, s := range n.Shoulders {
		if s.ARKs > 0 || s.Status == "active" {
			return true
		}
	}
	return false
}

// LengthUse is the use of first-digit shoulders of one length in a NAAN.
type LengthUse struct {
	Length    int     `json:"length"` // characters after the slash
	Used      int     `json:"used"`
	Available int64   `json:"available"` // ShoulderCapacity(Length)
	Fraction  float64 `json:"fraction"`  // Used / Available
}

// ShoulderUse is one shoulder's blade space and collision record.
type ShoulderUse struct {
	Shoulder    string  `json:"shoulder"`
	Status      string  `json:"status"`
	FirstDigit  bool    `json:"first_digit"` // follows the first-digit convention, so mints random blades
	BladeLength int     `json:"blade_length"`
	ARKs        int64   `json:"arks"`
	BladeSpace  float64 `json:"blade_space"` // BladeCapacity(BladeLength); 0 for a legacy shoulder
	Fraction    float64 `json:"fraction"`    // ARKs / BladeSpace
	Draws       int64   `json:"draws"`
	Collisions  int64   `json:"collisions"`
	// CollisionRate is Collisions / Draws (0 without draws); ExpectedRate is Fraction, the
	// chance that a uniformly drawn blade is taken.
	CollisionRate float64 `json:"collision_rate"`
	ExpectedRate  float64 `json:"expected_rate"`
	// Warn is set when CollisionRate or ExpectedRate reaches the warning threshold.
	Warn bool `json:"warn"`
}

// Namespaces groups shoulder rows by NAAN (rows with an empty Shoulder stand for a NAAN without
// shoulders) and computes, per NAAN, the first-digit shoulders used per length against
// ShoulderCapacity and, per shoulder, the fraction of its blade space used and its collision
// rate, flagged from warnAt (a rising rate is the sign a namespace is
// filling up). The result is ordered by NAAN,
// then shoulder.
func Namespaces(rows []ShoulderRow, warnAt float64) []NAANUse {
	if warnAt <= 0 {
		warnAt = DefaultCollisionWarning
	}
	byNAAN := map[string]*NAANUse{}
	var order []string
	for _, r := range rows {
		u, ok := byNAAN[r.NAAN]
		if !ok {
			u = &NAANUse{NAAN: r.NAAN}
			byNAAN[r.NAAN] = u
			order = append(order, r.NAAN)
		}
		if r.Shoulder == "" {
			continue
		}
		s := ShoulderUse{Shoulder: r.Shoulder, Status: r.Status, BladeLength: r.BladeLength, ARKs: r.ARKs,
			Draws: r.Draws, Collisions: r.Collisions, FirstDigit: isFirstDigit(r.Shoulder)}
		if s.FirstDigit {
			s.BladeSpace = BladeCapacity(r.BladeLength)
			if s.BladeSpace > 0 {
				s.Fraction = float64(r.ARKs) / s.BladeSpace
			}
			s.ExpectedRate = s.Fraction
		} else {
			u.Legacy++
		}
		if r.Draws > 0 {
			s.CollisionRate = float64(r.Collisions) / float64(r.Draws)
		}
		s.Warn = s.CollisionRate >= warnAt || s.ExpectedRate >= warnAt
		u.Shoulders = append(u.Shoulders, s)
	}
	sort.Strings(order)
	out := make([]NAANUse, 0, len(order))
	for _, n := range order {
		u := byNAAN[n]
		counts := map[int]int{}
		for _, s := range u.Shoulders {
			if s.FirstDigit {
				counts[len(s.Shoulder)-1]++
			}
		}
		for l, used := range counts {
			avail := ShoulderCapacity(l)
			u.Lengths = append(u.Lengths, LengthUse{Length: l, Used: used, Available: avail,
				Fraction: float64(used) / float64(avail)})
		}
		sort.Slice(u.Lengths, func(i, j int) bool { return u.Lengths[i].Length < u.Lengths[j].Length })
		sort.Slice(u.Shoulders, func(i, j int) bool { return u.Shoulders[i].Shoulder < u.Shoulders[j].Shoulder })
		out = append(out, *u)
	}
	return out
}

// isFirstDigit reports whether a stored shoulder follows the first-digit convention
// ^/[bcdfghjkmnpqrstvwxz]+[0-9]$.
func isFirstDigit(s string) bool {
	if len(s) < 3 || s[0] != '/' {
		return false
	}
	last := s[len(s)-1]
	if last < '0' || last > '9' {
		return false
	}
	return strings.Trim(s[1:len(s)-1], "bcdfghjkmnpqrstvwxz") == ""
}

// Costs returns the measured per-row costs of the ledger: each growing table's heap (with its
// maps), TOAST and indexes divided by its rows; a table with fewer than MinMeasuredRows rows
// takes the model's cost instead (model, e.g. ArkheModel(m.Fields)). Fixed is every other
// table. WALPer comes from the recorded runs when one wrote at least MinMeasuredRows ARKs, else
// from the model's ratio WALPerLedgerByte.
func (m *Measurement) Costs(model Costs) Costs {
	c := Costs{Source: "measured", ARK: model.ARK, Receipt: model.Receipt, Change: model.Change}
	modelled := 0
	for _, t := range m.Tables {
		var dst *TableCost
		switch t.Name {
		case TableARK:
			dst = &c.ARK
		case TableReceipt:
			dst = &c.Receipt
		case TableChange:
			dst = &c.Change
		default:
			c.Fixed += float64(t.Total)
			continue
		}
		if t.Rows < MinMeasuredRows {
			modelled++
			c.Fixed += float64(t.Total)
			continue
		}
		*dst = measuredCost(t)
	}
	if modelled == 3 {
		c.Source = "model"
	}
	receiptsPerARK := 1.0
	if m.ARKs > 0 {
		receiptsPerARK = float64(m.Receipts) / float64(m.ARKs)
	}
	c.WALPer = WALPerLedgerByte * (c.ARK.Total() + receiptsPerARK*c.Receipt.Total())
	for _, r := range m.WAL.Runs {
		if r.Rows >= MinMeasuredRows {
			c.WALPer = float64(r.Bytes) / float64(r.Rows)
			break
		}
	}
	return c
}

// measuredCost divides a table's sizes by its rows.
func measuredCost(t TableSize) TableCost {
	n := float64(t.Rows)
	c := TableCost{Table: t.Name, Heap: float64(t.HeapBytes()) / n, TOAST: float64(t.TOASTBytes()) / n}
	for _, ix := range t.Indexes {
		c.Indexes = append(c.Indexes, IndexCost{Name: ix.Name, PerRow: float64(ix.Bytes+ix.Maps) / n, Primary: ix.Primary})
	}
	return c
}

// Comparison is a measured ledger held against the model: the capacity figures of
// docs/design.md and
// arkhe's structural model (ArkheModel) fed with the ledger's own field lengths.
type Comparison struct {
	Lines []CompareLine `json:"lines"`
	// AllIn is the measured ark + receipt octets per ARK (heap, TOAST, indexes), the figure
	// the 400 B budget is about.
	AllIn float64 `json:"all_in_per_ark"`
	// WithinBudget is AllIn ≤ BudgetPerARK; ModelWithin10 is the structural model's prediction
	// of ark (receipts included) + ark_change within 10 % of the measurement.
	WithinBudget  bool   `json:"within_budget"`
	ModelWithin10 bool   `json:"model_within_10pct"`
	Verdict       string `json:"verdict"`
}

// CompareLine is one measured figure against its model figure, octets.
type CompareLine struct {
	What     string  `json:"what"`
	Measured float64 `json:"measured"`
	Model    float64 `json:"model"`
	// DiffPct is (Measured − Model) / Model × 100.
	DiffPct float64 `json:"diff_pct"`
	// Source names the model figure: "design model", "budget" or "structural model".
	Source string `json:"source"`
	// Total marks a line of whole-ledger octets rather than octets per ARK or row.
	Total bool `json:"total,omitempty"`
	// TooFewRows marks a per-row line whose table holds fewer than MinPerRowRows rows: Measured
	// is mostly empty pages and is no finding.
	TooFewRows bool `json:"too_few_rows,omitempty"`
}

func line(what string, measured, model float64, source string) CompareLine {
	d := 0.0
	if model != 0 {
		d = (measured - model) / model * 100
	}
	return CompareLine{What: what, Measured: measured, Model: model, DiffPct: d, Source: source}
}

// Compare holds m against the model: per ARK, the ark table (table and indexes) against the data
// model's 362 B (or, for a ledger without description, its heap against 158 B); the receipts on
// their own line, against the structural model (the 400 B does not mention them); ark + receipt
// against the 400 B budget; an ARK_CHANGE row against 258 B; and ark (receipts included) +
// ark_change in total against the structural model for the ledger's own field lengths and row counts. An
// empty ledger compares nothing and says so.
func Compare(m *Measurement) Comparison {
	var cmp Comparison
	if m.ARKs == 0 {
		cmp.Verdict = "the ledger holds no ARK yet: nothing to measure; the projections use the model"
		return cmp
	}
	model := ArkheModel(m.Fields)
	n := float64(m.ARKs)
	at, _ := m.Table(TableARK)
	rt, _ := m.Table(TableReceipt)
	ct, _ := m.Table(TableChange)
	if m.Fields.HasDescription() {
		cmp.Lines = append(cmp.Lines, line("ark, table and indexes, per ARK", float64(at.Total)/n, DataModelFullRow, "design model (url+title+who+when)"))
	} else {
		cmp.Lines = append(cmp.Lines, line("ark, table alone, per ARK", float64(at.HeapBytes()+at.TOASTBytes())/n, DataModelURLOnly, "design model (url only)"))
	}
	perARKReceipt := float64(rt.Total) / n
	modelReceipt := model.Receipt.Total() * float64(m.Receipts) / n
	cmp.Lines = append(cmp.Lines, line("receipts, per ARK (not in the 400 B)", perARKReceipt, modelReceipt, "structural model"))
	cmp.AllIn = float64(at.Total+rt.Total) / n
	cmp.Lines = append(cmp.Lines, line("ark + receipt, per ARK (all-in)", cmp.AllIn, BudgetPerARK, "budget (design model)"))
	if m.Changes > 0 {
		cmp.Lines = append(cmp.Lines, line("ARK_CHANGE, per row", float64(ct.Total)/float64(m.Changes), DataModelChange, "design model"))
	}
	for i := range cmp.Lines {
		rows := m.ARKs
		if strings.HasPrefix(cmp.Lines[i].What, "ARK_CHANGE") {
			rows = m.Changes
		}
		cmp.Lines[i].TooFewRows = rows < MinPerRowRows
	}
	measured3 := float64(at.Total + rt.Total + ct.Total)
	pred := model.Size(Plan{ARKs: m.ARKs, Receipts: m.Receipts, Changes: m.Changes}, 0)
	predicted3 := float64(pred.ARKBytes + pred.ReceiptBytes + pred.ChangeBytes)
	ml := line("ark + receipts + changes, total", measured3, predicted3, "structural model")
	ml.Total = true
	cmp.Lines = append(cmp.Lines, ml)
	cmp.WithinBudget = cmp.AllIn <= BudgetPerARK
	cmp.ModelWithin10 = math.Abs(ml.DiffPct) <= 10
	var v strings.Builder
	if cmp.WithinBudget {
		fmt.Fprintf(&v, "within budget: %.0f B per ARK all-in (ark + receipt) is %.1f%% under the design model's 400 B", cmp.AllIn, (BudgetPerARK-cmp.AllIn)/BudgetPerARK*100)
	} else {
		fmt.Fprintf(&v, "over budget: %.0f B per ARK all-in (ark + receipt) is %.1f%% over the design model's 400 B", cmp.AllIn, (cmp.AllIn-BudgetPerARK)/BudgetPerARK*100)
		if m.Receipts > 0 && float64(at.Total)/n <= BudgetPerARK {
			fmt.Fprintf(&v, "; the ark table alone (%.0f B) fits, the receipts (%.0f B) are what the 400 B leaves out", float64(at.Total)/n, perARKReceipt)
		}
	}
	if m.ARKs < MinMeasuredRows {
		fmt.Fprintf(&v, "; with %d ARKs the empty tables' pages dominate, so the figures are not yet per-row costs", m.ARKs)
	} else if cmp.ModelWithin10 {
		fmt.Fprintf(&v, "; the structural model predicts this ledger within %.1f%%", math.Abs(ml.DiffPct))
	} else {
		fmt.Fprintf(&v, "; the structural model is off by %.1f%% here (check TOAST, imported rows and index bloat)", ml.DiffPct)
	}
	cmp.Verdict = v.String()
	return cmp
}

// MeasureTables measures every table of the current schema like Measure (heap, maps, TOAST,
// each index, total, exact row counts), without the ledger-specific parts, so it works on any
// schema (the bench layouts).
func MeasureTables(ctx context.Context, q Querier) ([]TableSize, error) {
	tables, err := measureTables(ctx, q)
	if err != nil {
		return nil, err
	}
	for i := range tables {
		t := &tables[i]
		if err := q.QueryRow(ctx, "select count(*) from "+pgx.Identifier{t.Name}.Sanitize()).Scan(&t.Rows); err != nil {
			return nil, fmt.Errorf("measure: count rows of %s: %w", t.Name, err)
		}
	}
	return tables, nil
}
