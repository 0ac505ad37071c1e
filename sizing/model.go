package sizing

import (
	"math"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// The capacity figures of docs/design.md (table and every index included): the budget
// `arkhe sizing` checks a ledger against.
const (
	// BudgetPerARK is the per-minting term of "ledger ≈ mintings × 400 B + repointings × 260 B +
	// audit", in octets.
	BudgetPerARK = 400
	// BudgetPerChange is the per-repointing term of the same formula, in octets.
	BudgetPerChange = 260
	// DataModelFullRow is the data model's cost of one ARK with url, title, who and
	// when, table and every index, in octets.
	DataModelFullRow = 362
	// DataModelURLOnly is the data model's cost of one ARK with a URL and no description, table
	// alone (heap, no index), in octets.
	DataModelURLOnly = 158
	// DataModelChange is the data model's cost of one ARK_CHANGE entry (a target moved), in octets.
	DataModelChange = 258
)

// PostgreSQL's on-disk constants the model counts with (src/include/storage/bufpage.h,
// access/htup_details.h, access/itup.h, access/nbtree.h, access/heaptoast.h), valid for the
// default build (8 kB blocks, 8-byte MAXALIGN) of PostgreSQL 14 to 17.
const (
	// PageSize is the block size BLCKSZ in octets.
	PageSize = 8192
	// pageHeader is SizeOfPageHeaderData.
	pageHeader = 24
	// itemID is sizeof(ItemIdData), the line pointer of every tuple.
	itemID = 4
	// heapTupleHeader is SizeofHeapTupleHeader, before the null bitmap.
	heapTupleHeader = 23
	// maxAlign is MAXIMUM_ALIGNOF.
	maxAlign = 8
	// indexTupleHeader is sizeof(IndexTupleData).
	indexTupleHeader = 8
	// btreeSpecial is MAXALIGN(sizeof(BTPageOpaqueData)).
	btreeSpecial = 16
	// shortVarlena is the largest payload stored with a 1-byte varlena header.
	shortVarlena = 126
	// toastPointer is the size of an on-disk TOAST pointer (varattrib_1b_e + varatt_external).
	toastPointer = 18
	// toastChunk is TOAST_MAX_CHUNK_SIZE for 8 kB pages.
	toastChunk = 1996
	// toastOutOfLine is the value size from which the model treats a field as moved to TOAST
	// (TOAST_TUPLE_THRESHOLD, 2032, less the rest of a typical row).
	toastOutOfLine = 2000
	// maxHeapTuplesPerPage is MaxHeapTuplesPerPage for 8 kB pages.
	maxHeapTuplesPerPage = 291
)

// B-tree leaf fill, the fraction of a leaf page's usable space holding index tuples.
const (
	// FillBuilt is the fill of a B-tree built by CREATE INDEX or REINDEX, and of one only ever
	// appended to at its right edge (ascending keys: identity columns, times): the default
	// B-tree fillfactor, 90 (BTREE_DEFAULT_FILLFACTOR).
	FillBuilt = 0.90
	// FillRandom is the fill of a B-tree whose keys arrive in random order, as the ledger key
	// of minted ARKs does (blades are drawn at random): pages split in half and the fill settles
	// near ln 2 (it swings while pages split in waves, then settles); the value is calibrated
	// on ark_pkey by `arkhe bench sizing`.
	FillRandom = 0.69
	// FillRuns is the fill of arkhe's receipt index ark_receipt (client, request ID) as arkhe
	// mint fills it: packed full (fillfactor 100), and each worker appends a contiguous run of
	// the manifest in request-ID order, so with ascending request IDs a leaf splits at the right
	// end of a run and is not written again; the value is calibrated by `arkhe sizing`
	// (pgstatindex's avg_leaf_density) after `arkhe mint`.
	FillRuns = 0.975
)

// WALPerLedgerByte is how many octets of WAL a bulk mint writes per octet its ARKs and receipts
// occupy (heap, TOAST and indexes), full-page images included from a checkpoint on, with
// full_page_writes on, wal_level minimal and the tables created before the load; the value is
// calibrated by `arkhe bench sizing`.
const WALPerLedgerByte = 1.37

// DefaultMaxWALSize is the max_wal_size of arkhe's embedded default cluster (localpg's persistent
// settings), 4 GiB: the soft ceiling of pg_wal during a bulk run when nothing holds WAL back
// (no archiving backlog, no replication slot).
const DefaultMaxWALSize int64 = 4 << 30

// ModelFixedBytes is the size of an empty, migrated arkhe ledger (every table, TOAST table and
// index at its minimum), the part of a ledger that does not grow with the ARKs. TestFixedBytes
// checks it against a fresh ledger.
const ModelFixedBytes = 600_000

// Column describes one table column for the model: its storage and its average content.
type Column struct {
	// Name is the column name, as in the schema.
	Name string
	// Len is the fixed length in octets (8 for bigint, timestamptz and xid8; 1 for boolean); 0
	// for a variable-length (varlena) type.
	Len int
	// Align is the type's alignment in octets: 1, 2, 4 or 8 (pg_type.typalign c, s, i, d).
	Align int
	// Avg is, for a varlena column, the average payload octets of a non-null value (the varlena
	// header not included). Ignored for fixed-length columns.
	Avg float64
	// Present is the fraction of rows in which the value is not null, 0 to 1.
	Present float64
	// Exact marks a varlena column whose values have (nearly) all the same length, Avg rounded
	// (ledger keys, assigned names and NAANs under one shoulder, accession-number request IDs):
	// the padding after it is then computed for that length rather than taken at its
	// expectation.
	Exact bool
}

func int8Col(name string) Column { return Column{Name: name, Len: 8, Align: 8, Present: 1} }

// int4Col is an always-present integer column (4 octets, typalign i).
func int4Col(name string) Column { return Column{Name: name, Len: 4, Align: 4, Present: 1} }

// textCol is a varlena column (text, varchar, bytea, jsonb: typalign i) holding avg octets when
// present; present 0 gives an always-null column.
func textCol(name string, avg, present float64) Column {
	if avg <= 0 {
		present = 0
	}
	return Column{Name: name, Align: 4, Avg: avg, Present: present}
}

// constCol is an always-present varlena column whose values (nearly) all have the length avg
// (Exact).
func constCol(name string, avg float64) Column {
	c := textCol(name, avg, 1)
	c.Exact = true
	return c
}

func nullCol(name string, length, align int) Column {
	return Column{Name: name, Len: length, Align: align}
}

// stored returns the in-row octets of a present value of c, whether it is a short (1-byte
// header, unaligned) varlena, and the octets moved out of line to TOAST.
func (c Column) stored() (inRow float64, short bool, toasted float64) {
	if c.Len > 0 {
		return float64(c.Len), false, 0
	}
	switch {
	case c.Avg > toastOutOfLine:
		return toastPointer, true, c.Avg
	case c.Avg <= shortVarlena:
		return 1 + c.Avg, true, 0
	default:
		return 4 + c.Avg, false, 0
	}
}

// TupleBytes returns the expected length in octets of a heap tuple of cols (header, null bitmap,
// data with alignment padding), before the tuple is MAXALIGNed on the page. Where an offset is
// not known exactly (after a variable-length or sometimes-null column) alignment padding is
// counted at its expectation, (align − 1) / 2.
func TupleBytes(cols []Column) float64 {
	hasNull := false
	for _, c := range cols {
		if c.Present < 1 {
			hasNull = true
		}
	}
	hoff := heapTupleHeader
	if hasNull {
		hoff += (len(cols) + 7) / 8
	}
	hoff = alignUp(hoff, maxAlign)
	return float64(hoff) + dataBytes(cols)
}

// dataBytes is the expected data length of cols laid out from an offset aligned to 8. It
// follows what is known of the offset: exactly (only always-present columns of constant length
// so far), or only its alignment (after a column that is sometimes null or of varying length);
// an unknown offset pads at the expectation (align − known alignment) / 2.
func dataBytes(cols []Column) float64 {
	off, exact, aligned := 0.0, true, maxAlign
	offR := 0 // the offset of the rounded lengths, while exact
	for _, c := range cols {
		if c.Present <= 0 {
			continue
		}
		size, short, _ := c.stored()
		sizeR := int(math.Round(size))
		pad := 0.0
		if !short && c.Align > 1 {
			if exact {
				pad = float64(alignUp(offR, c.Align) - offR)
			} else {
				pad = padding(aligned, c.Align)
			}
		}
		// what is known after the column when it is present
		after := aligned
		if !short && c.Align > aligned {
			after = c.Align
		}
		constant := c.Len > 0 || c.Exact
		if constant {
			after = min(after, lowBit(sizeR))
		} else {
			after = 1
		}
		off += c.Present * (pad + size)
		offR += int(pad) + sizeR
		if c.Present < 1 || !constant {
			exact = false
		}
		if c.Present < 1 {
			after = min(after, aligned)
		}
		aligned = after
		if exact {
			aligned = lowBit(offR)
		}
	}
	return off
}

// lowBit returns the largest power of two dividing n, at most maxAlign (maxAlign for 0).
func lowBit(n int) int {
	for a := maxAlign; a > 1; a /= 2 {
		if n%a == 0 {
			return a
		}
	}
	return 1
}

// padding is the expected padding that aligns an offset known only to be a multiple of
// aligned to align.
func padding(aligned, align int) float64 {
	if aligned >= align {
		return 0
	}
	return float64(align-aligned) / 2
}

func alignUp(n, align int) int { return (n + align - 1) / align * align }

// constantLength reports whether every row of cols has the same length: no column sometimes
// null, no varlena of varying length.
func constantLength(cols []Column) bool {
	for _, c := range cols {
		if c.Present > 0 && (c.Present < 1 || (c.Len == 0 && !c.Exact)) {
			return false
		}
	}
	return true
}

// maxAligned returns the expected MAXALIGNed size of an item of expected length n, whose length
// is constant (exact) or varies.
func maxAligned(n float64, exact bool) float64 {
	if exact {
		return float64(alignUp(int(math.Round(n)), maxAlign))
	}
	return n + float64(maxAlign-1)/2
}

// HeapBytesPerRow returns the heap octets one row of cols costs: its MAXALIGNed tuple and line
// pointer, with the page header and the space left at the end of a page that the next tuple
// did not fit in spread over the rows (fillfactor 100, the default).
func HeapBytesPerRow(cols []Column) float64 {
	exact := constantLength(cols)
	item := maxAligned(TupleBytes(cols), exact) + itemID
	usable := float64(PageSize - pageHeader)
	if !exact {
		usable -= item / 2
	}
	perPage := usable / item
	if exact {
		perPage = math.Floor(perPage)
	}
	if perPage > maxHeapTuplesPerPage {
		perPage = maxHeapTuplesPerPage
	}
	return PageSize / perPage
}

// TOASTBytesPerRow returns the octets per row that fields PostgreSQL moves out of line (over
// its TOAST threshold, about 2 kB) cost in the table's TOAST relation, assuming incompressible
// content: chunks of 1,996 octets, four to a page, and one TOAST-index entry per chunk.
func TOASTBytesPerRow(cols []Column) float64 {
	total := 0.0
	for _, c := range cols {
		_, _, out := c.stored()
		if out > 0 && c.Present > 0 {
			chunks := math.Ceil(out / toastChunk)
			total += c.Present * chunks * (PageSize/4 + 32)
		}
	}
	return total
}

// BTreeBytesPerEntry returns the octets one entry of a B-tree index on key costs: its MAXALIGNed
// index tuple and line pointer on a leaf filled to fill (FillBuilt, FillRandom,
// FillRuns), plus the
// internal pages above the leaves. Keys are taken as always present.
func BTreeBytesPerEntry(key []Column, fill float64) float64 {
	exact := constantLength(key)
	data := dataBytes(key)
	item := maxAligned(indexTupleHeader+data, exact) + itemID
	usable := float64(PageSize-pageHeader-btreeSpecial) * fill
	leaf := item * PageSize / usable
	// one downlink per leaf page in the level above, which the model takes as 70 % full: a fraction
	// item/(usable·0.7/fill) of the leaf level
	internal := leaf * item / (float64(PageSize-pageHeader-btreeSpecial) * 0.7)
	return leaf + internal
}

// Fields are the average contents of a ledger's rows: what a capacity plan knows beforehand.
// Octet counts are of the UTF-8 value; a zero average means the field is never present.
type Fields struct {
	// NAAN is the NAAN's length in octets (5 for 99999).
	NAAN float64 `json:"naan_octets"`
	// Name is the assigned name's length: shoulder, blade and check character (12 for a
	// 3-character shoulder and the default 8-character blade: "bc7" + 8 + 1).
	Name float64 `json:"name_octets"`
	// URL, What, Who and When are the average octets of a present target URL and ERC what
	// (title), who and when.
	URL  float64 `json:"url_octets"`
	What float64 `json:"what_octets"`
	Who  float64 `json:"who_octets"`
	When float64 `json:"when_octets"`
	// URLShare, WhatShare, WhoShare and WhenShare are the fractions of ARKs with the field, 0
	// to 1.
	URLShare  float64 `json:"url_share"`
	WhatShare float64 `json:"what_share"`
	WhoShare  float64 `json:"who_share"`
	WhenShare float64 `json:"when_share"`
	// RequestID is the average octets of a receipt's request ID.
	RequestID float64 `json:"request_id_octets"`
}

// DefaultFields are the Tate-like averages `arkhe sizing --model` plans with when not told
// otherwise: NAAN 99999, a 3-character shoulder, url 60, title 40, who 20, when 4 and request
// IDs of 8 octets, every field present.
func DefaultFields() Fields {
	return Fields{NAAN: 5, Name: 12, URL: 60, What: 40, Who: 20, When: 4,
		URLShare: 1, WhatShare: 1, WhoShare: 1, WhenShare: 1, RequestID: 8}
}

// Key returns the ledger key's average length, NAAN + "/" + Name.
func (f Fields) Key() float64 { return f.NAAN + 1 + f.Name }

// HasDescription reports whether most ARKs carry ERC who, what or when (the data model's
// 362 B case rather than its 158 B url-only case).
func (f Fields) HasDescription() bool {
	return f.WhatShare*f.What+f.WhoShare*f.Who+f.WhenShare*f.When > 0 &&
		math.Max(f.WhatShare, math.Max(f.WhoShare, f.WhenShare)) >= 0.5
}

// IndexModel is one index of a modelled table.
type IndexModel struct {
	Name    string
	Key     []Column
	Fill    float64 // FillBuilt, FillRandom or FillRuns
	Primary bool
	// BRIN marks a BRIN index: counted as fixed (a few pages per hundred thousand rows).
	BRIN bool
}

// TableModel is a table of the ledger as the model sees it: its columns in schema order (as a
// minted row fills them) and its indexes.
type TableModel struct {
	Name    string
	Columns []Column
	Indexes []IndexModel
}

// Cost returns the table's modelled per-row cost.
func (t TableModel) Cost() TableCost {
	c := TableCost{Table: t.Name, Heap: HeapBytesPerRow(t.Columns), TOAST: TOASTBytesPerRow(t.Columns)}
	for _, ix := range t.Indexes {
		per := 0.0
		if ix.BRIN {
			// one 32-octet summary per 128 heap pages
			per = 32.0 / 128 * c.Heap / PageSize
		} else {
			per = BTreeBytesPerEntry(ix.Key, ix.Fill)
		}
		c.Indexes = append(c.Indexes, IndexCost{Name: ix.Name, PerRow: per, Primary: ix.Primary})
	}
	return c
}

// TableCost is what one row of a table costs on disk, in octets, split as `arkhe sizing` shows
// it.
type TableCost struct {
	Table   string      `json:"table"`
	Heap    float64     `json:"heap"`
	TOAST   float64     `json:"toast"`
	Indexes []IndexCost `json:"indexes"`
}

// IndexCost is one index's octets per row of its table.
type IndexCost struct {
	Name    string  `json:"name"`
	PerRow  float64 `json:"per_row"`
	Primary bool    `json:"primary,omitempty"`
}

// IndexTotal returns the octets per row of all the table's indexes.
func (c TableCost) IndexTotal() float64 {
	s := 0.0
	for _, ix := range c.Indexes {
		s += ix.PerRow
	}
	return s
}

// Total returns heap + TOAST + every index, octets per row.
func (c TableCost) Total() float64 { return c.Heap + c.TOAST + c.IndexTotal() }

// PrimaryKey returns the primary key's octets per row (0 without one).
func (c TableCost) PrimaryKey() float64 {
	for _, ix := range c.Indexes {
		if ix.Primary {
			return ix.PerRow
		}
	}
	return 0
}

// Costs are the per-row costs of a ledger's three growing tables, in octets, and the part that
// does not grow. They come from the model (ArkheModel) or from a measured ledger
// (Measurement.Costs).
type Costs struct {
	ARK     TableCost `json:"ark"`         // per ARK
	Receipt TableCost `json:"receipt"`     // per receipt: its share of the ark row and the ark_receipt index
	Change  TableCost `json:"change"`      // per ARK_CHANGE row
	Fixed   float64   `json:"fixed"`       // octets that do not grow with the ledger
	Source  string    `json:"source"`      // "model" or "measured"
	WALPer  float64   `json:"wal_per_ark"` // WAL octets a bulk mint writes per ARK (with its receipt)
}

// The ark columns and the index that hold a receipt (a receipt is the ark row's
// request_id and payload_digest; ledger/migrations/0001_ledger.sql).
const (
	receiptRequestID = "request_id"
	receiptDigest    = "payload_digest"
	receiptIndex     = "ark_receipt"
)

// ArkheTables returns the model of arkhe's ark and ark_change tables
// (ledger/migrations) for rows with the average contents f, filled as `arkhe mint` fills them:
// key, NAAN, shoulder, assigned name, target, ERC who / what / when, creation time and client,
// status public and change count 0 (both stored as NULL), and the receipt
// on the row (request ID and the payload digest's first ledger.ReceiptDigestOctets octets, in
// the partial unique index ark_receipt); ARK_CHANGE rows of the repoint path (keyed by the ARK
// and its per-ARK number seq; before / after URL and status, the client). The ARK keys arrive in
// random order (drawn blades: FillRandom), the receipts' keys as mint's workers' contiguous runs
// (FillRuns), identity and time keys in ascending order (FillBuilt).
func ArkheTables(f Fields) (arkT, change TableModel) {
	key := constCol("ark", f.Key())
	reqID := constCol("request_id", f.RequestID)
	arkT = TableModel{Name: "ark", Columns: []Column{
		int8Col("seq"),
		key,
		constCol("naan", f.NAAN),
		int8Col("shoulder_id"),
		constCol("assigned_name", f.Name),
		textCol("url", f.URL, f.URLShare),
		textCol("commitment", 0, 0),
		textCol("erc_who", f.Who, f.WhoShare),
		textCol("erc_what", f.What, f.WhatShare),
		textCol("erc_when", f.When, f.WhenShare),
		textCol("metadata", 0, 0),
		nullCol("status", 4, 4), // public, stored as NULL (the enum ark_status: 4 octets, typalign i)
		textCol("tombstone_reason", 0, 0),
		nullCol("tombstoned_at", 8, 8),
		textCol("original", 0, 0),
		nullCol("check_ok", 1, 1),
		int8Col("created_at"),
		nullCol("updated_at", 8, 8),
		int8Col("created_by"),
		nullCol("updated_by", 8, 8),
		nullCol("import_run_id", 8, 8),
		nullCol("change_seq", 4, 4), // 0, stored as NULL
		reqID,
		constCol("payload_digest", ledger.ReceiptDigestOctets),
	}, Indexes: []IndexModel{
		{Name: "ark_pkey", Key: []Column{key}, Fill: FillRandom, Primary: true},
		{Name: "ark_seq_brin", BRIN: true},
		{Name: receiptIndex, Key: []Column{int8Col("created_by"), reqID}, Fill: FillRuns},
	}}
	url := textCol("url", f.URL, f.URLShare)
	change = TableModel{Name: "ark_change", Columns: []Column{
		key,
		int4Col("seq"),
		int8Col("at"),
		constCol("action", 6), // 'update'
		url,
		url,
		constCol("before_status", 6),
		constCol("after_status", 6),
		textCol("reason", 0, 0),
		textCol("before_erc", 0, 0),
		textCol("after_erc", 0, 0),
		int8Col("by_client"),
		textCol("by_text", 0, 0),
		textCol("ip", 0, 0),
		nullCol("import_run_id", 8, 8),
		int8Col("xact"),
	}, Indexes: []IndexModel{
		// (ark, seq): the changes of ARKs in random key order
		{Name: "ark_change_pkey", Key: []Column{key, int4Col("seq")}, Fill: FillRandom, Primary: true},
		{Name: "ark_change_at", Key: []Column{int8Col("at")}, Fill: FillBuilt},
	}}
	return arkT, change
}

// withoutReceipt returns the ark model t without the receipt's columns and index: the row of an
// ARK that carries no receipt (an imported one).
func withoutReceipt(t TableModel) TableModel {
	out := TableModel{Name: t.Name}
	for _, c := range t.Columns {
		if c.Name != receiptRequestID && c.Name != receiptDigest {
			out.Columns = append(out.Columns, c)
		}
	}
	for _, ix := range t.Indexes {
		if ix.Name != receiptIndex {
			out.Indexes = append(out.Indexes, ix)
		}
	}
	return out
}

// splitReceipt splits the cost of an ark row carrying its receipt into the ARK's own cost (the
// row without the receipt columns, the ark indexes but ark_receipt) and the receipt's (the
// heap and TOAST octets its columns add, alignment and page fill included, and ark_receipt),
// named TableReceipt after the view that shows receipts.
func splitReceipt(arkT TableModel) (arkC, receipt TableCost) {
	full := arkT.Cost()
	arkC = withoutReceipt(arkT).Cost()
	receipt = TableCost{Table: TableReceipt, Heap: full.Heap - arkC.Heap, TOAST: full.TOAST - arkC.TOAST}
	for _, ix := range full.Indexes {
		if ix.Name == receiptIndex {
			receipt.Indexes = append(receipt.Indexes, ix)
		}
	}
	return arkC, receipt
}

// ReceiptHeapShare returns the heap octets a receipt adds to an ark row with the average
// contents f (request ID of f.RequestID octets and the ledger.ReceiptDigestOctets-octet payload digest, each with its
// 1-octet varlena header, tuple alignment and page fill included): the receipt's part of the ark
// heap, which Measure splits out of a measured ark table.
func ReceiptHeapShare(f Fields) float64 {
	a, _ := ArkheTables(f)
	_, r := splitReceipt(a)
	return r.Heap
}

// ArkheModel returns the modelled per-row costs of arkhe's schema for rows with the average
// contents f (see ArkheTables), with ModelFixedBytes as the fixed part and WAL at
// WALPerLedgerByte of an ARK and its receipt. The receipt lives on the ark row;
// Receipt is its share (splitReceipt), ARK the rest of the row, so ARK + Receipt is a
// minted ark row and an imported ARK costs ARK alone.
func ArkheModel(f Fields) Costs {
	a, ch := ArkheTables(f)
	arkC, receipt := splitReceipt(a)
	c := Costs{ARK: arkC, Receipt: receipt, Change: ch.Cost(), Fixed: ModelFixedBytes, Source: "model"}
	c.WALPer = WALPerLedgerByte * (c.ARK.Total() + c.Receipt.Total())
	return c
}

// Plan is a ledger to size: how many ARKs, receipts and ARK_CHANGE rows.
type Plan struct {
	ARKs     int64 `json:"arks"`
	Receipts int64 `json:"receipts"`
	Changes  int64 `json:"changes"`
}

// Point is the size of a ledger of Plan's rows under some Costs, in octets (rounded to whole
// octets), with the memory and WAL it calls for.
type Point struct {
	Plan
	ARKBytes     int64 `json:"ark_bytes"`     // ark: heap, TOAST, indexes
	ReceiptBytes int64 `json:"receipt_bytes"` // receipts: their share of the ark rows and ark_receipt
	ChangeBytes  int64 `json:"change_bytes"`  // ark_change
	FixedBytes   int64 `json:"fixed_bytes"`   // the rest of the ledger
	Total        int64 `json:"total_bytes"`
	// PKIndex is the size of the ark primary key, the index that wants to stay in memory
	// (shared_buffers plus the OS page cache) for minting and resolving at speed.
	PKIndex int64 `json:"pk_index_bytes"`
	// WALWritten is the WAL a bulk run writing all these ARKs and receipts produces.
	WALWritten int64 `json:"wal_written_bytes"`
	// WALDisk is the peak of pg_wal during that run: min(WALWritten, max_wal_size), as
	// checkpoints recycle segments; with WAL archiving behind or a replication slot lagging, all
	// of WALWritten may be held.
	WALDisk int64 `json:"wal_disk_bytes"`
}

// Size returns the size of a ledger of p's rows under costs c, WAL on disk capped at maxWAL
// octets (0: DefaultMaxWALSize).
func (c Costs) Size(p Plan, maxWAL int64) Point {
	if maxWAL <= 0 {
		maxWAL = DefaultMaxWALSize
	}
	pt := Point{Plan: p,
		ARKBytes:     round(float64(p.ARKs) * c.ARK.Total()),
		ReceiptBytes: round(float64(p.Receipts) * c.Receipt.Total()),
		ChangeBytes:  round(float64(p.Changes) * c.Change.Total()),
		FixedBytes:   round(c.Fixed),
		PKIndex:      round(float64(p.ARKs) * c.ARK.PrimaryKey()),
		WALWritten:   round(float64(p.ARKs) * c.WALPer),
	}
	pt.Total = pt.ARKBytes + pt.ReceiptBytes + pt.ChangeBytes + pt.FixedBytes
	pt.WALDisk = min(pt.WALWritten, maxWAL)
	return pt
}

// Project returns c.Size at each ARK count of arks, with receipts and ARK_CHANGE rows in the
// proportions receiptsPerARK and changesPerARK (e.g. 1 and 0.1).
func (c Costs) Project(arks []int64, receiptsPerARK, changesPerARK float64, maxWAL int64) []Point {
	out := make([]Point, 0, len(arks))
	for _, n := range arks {
		out = append(out, c.Size(Plan{ARKs: n,
			Receipts: round(float64(n) * receiptsPerARK),
			Changes:  round(float64(n) * changesPerARK)}, maxWAL))
	}
	return out
}

// ProjectionARKs returns the ARK counts of the capacity projection: 1, 10 and 100 million and
// 1 billion.
func ProjectionARKs() []int64 { return []int64{1_000_000, 10_000_000, 100_000_000, 1_000_000_000} }

// PlotARKs returns the ARK counts of the plot-friendly table: a 1-2-5 series from 100 thousand
// to 1 billion.
func PlotARKs() []int64 {
	var out []int64
	for d := int64(100_000); d <= 1_000_000_000; d *= 10 {
		out = append(out, d)
		if d < 1_000_000_000 {
			out = append(out, 2*d, 5*d)
		}
	}
	return out
}

func round(f float64) int64 { return int64(math.Round(f)) }

// ShoulderCapacity returns how many first-digit shoulders of length characters (after the slash)
// one NAAN can carve out, 19^(length−1) × 10 (19 consonants, then one of 10
// digits): 190, 3,610 and 68,590 for lengths 2, 3 and 4. 0 below length 2. Exact: ark.ShoulderSpace
// up to length 12 (below 2^53), integer arithmetic from 13 to 15, math.MaxInt64 beyond.
func ShoulderCapacity(length int) int64 {
	switch {
	case length < 2:
		return 0
	case length <= 12:
		return int64(ark.ShoulderSpace(length))
	case length <= 15:
		n := int64(ark.ShoulderSpace(12))
		for l := 12; l < length; l++ {
			n *= 19
		}
		return n
	}
	return math.MaxInt64
}

// BladeCapacity returns how many blades of length betanumerics one shoulder can mint, 29^length
// (the check character adds none): 29^8 = 500,246,412,961 for the default 8. Exact up to
// length 10 (float64).
func BladeCapacity(length int) float64 { return ark.BladeSpace(length) }
