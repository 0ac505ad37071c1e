// Package sizing says what each ARK costs on disk: a structural model of arkhe's rows,
// the measurement of a live ledger, projections to a billion ARKs and namespace arithmetic. The
// layouts `arkhe bench sizing` builds and measures with it, and their rows, are in package bench.
//
// # The model
//
// ArkheModel replaces the capacity rule of thumb (docs/design.md) by arithmetic on
// PostgreSQL's page layout: tuple header and null bitmap, alignment, line pointers, page
// headers and B-tree leaf fill (FillBuilt, FillRandom, FillRuns), for arkhe's own columns
// (ledger/migrations) filled as arkhe mint fills them, given average field lengths (Fields).
// Its accuracy against a measured ledger is checked by the tests and `arkhe bench sizing`,
// not stated here.
//
// # What arkhe keeps
//
// arkhe keeps each receipt on its ark row: request_id and payload_digest columns, unique per
// client in the partial index ark_receipt (created_by, request_id) where request_id is not
// null; the mint_receipt view shows them under the receipt vocabulary. The model splits a
// minted row in two (ArkheModel): the ARK (Costs.ARK: the row without the receipt columns,
// ark_pkey, ark_seq_brin) and its receipt (Costs.Receipt: the heap octets the two columns add,
// ReceiptHeapShare, and ark_receipt). Measure reports the receipts the same way, as a
// TableReceipt entry carved out of ark (TableSize.PartOf "ark": receipts × ReceiptHeapShare at
// the ledger's own request ID length, and the ark_receipt index), so the receipt cost keeps its
// own line and ark + receipts still add up to ark's pg_total_relation_size.
//
// The model follows the lean row of the migrations: status as the enum ark_status and NULL
// for 'public', the change count NULL for its default 0, the first 8 octets of the payload
// digest, and ark_receipt packed full (fillfactor 100) by workers that each append a
// contiguous run of request IDs. `arkhe bench sizing` builds and measures these layouts beside
// the others (natural and surrogate keys, a receipt table, interned clients): docs/sizing.md.
//
// No internal key (seq, shoulder or client keys, bench surrogates) appears in anything this
// package returns for display: tables, indexes, NAANs and shoulders are named by their public
// names; internal keys are the database's own.
package sizing
