// Package sizing says what each ARK costs on disk: a structural model of arkhe's rows,
// the measurement of a live ledger, projections to a billion ARKs and namespace arithmetic. The
// layouts `arkhe bench sizing` builds and measures with it, and their rows, are in package bench.
//
// # The model
//
// The capacity rule of thumb (docs/design.md) budgets a ledger at mintings × 400 B + repointings × 260 B + audit
// (362 B per ARK with url, title, who and when; 158 B url only; 258 B per ARK_CHANGE row).
// ArkheModel replaces the rule of thumb by arithmetic on PostgreSQL's page layout: tuple header
// and null bitmap, alignment, line pointers, page headers, B-tree leaf fill (FillBuilt,
// FillRandom, FillRuns), for arkhe's own columns (ledger/migrations) filled as arkhe mint
// fills them, given average field lengths (Fields). Fed a ledger's own field lengths it predicted
// ark + receipts + ark_change within 1.1 % of the measurement when receipts had a table of
// their own: -1.1 % at 100 thousand, -0.8 % at 1 million ARKs minted by `arkhe mint` from
// Tate-like manifests, +0.1 % on the Tate collection (69,202 ARKs); the target was 10 %. On
// the lean rows of migration 0007 it predicts `arkhe mint` of the Tate collection within 0.1 %
// (the target is 5 %) and the ark table `arkhe bench sizing` builds from 20,000 Tate-like rows
// within 4 %.
//
// # What arkhe keeps
//
// arkhe keeps each receipt on its ark row: request_id and payload_digest
// columns, unique per client in the partial index ark_receipt (created_by, request_id) where
// request_id is not null; the mint_receipt view shows them under the receipt vocabulary. The
// model splits a minted row in two (ArkheModel): the ARK (Costs.ARK, the row without the
// receipt columns, ark_pkey, ark_seq_brin) and its receipt (Costs.Receipt: the heap octets the
// two columns add, ReceiptHeapShare, and ark_receipt). Measure reports the receipts the same way,
// as a TableReceipt entry carved out of ark (TableSize.PartOf "ark": receipts ×
// ReceiptHeapShare at the ledger's own request ID length, and the ark_receipt index), so the
// receipt cost keeps its own line and ark + receipts still add up to ark's
// pg_total_relation_size.
//
// # Lean rows (migration 0007)
//
// A minted row stores its status as the enum ark_status (4 octets instead of the 7 of the text
// 'public'; plain SQL's status = 'public' keeps its meaning), its change count as NULL (its
// default 0), and the first 8 octets of its payload digest; ark_receipt is packed full
// (fillfactor 100), and arkhe mint's workers take contiguous runs of the manifest, so each
// appends its own run of request IDs to ark_receipt instead of both interleaving rows there.
// `arkhe mint` of the Tate collection (`make run`: 69,202 ARKs, two workers, PostgreSQL 15, as
// loaded, no REINDEX, `arkhe sizing`), octets per ARK, before (migrations 0001-0006), with status
// stored as NULL for 'public' (a variant measured and not taken then, because plain SQL's
// status = 'public' would miss every minted ARK; migration 0012 took it), and after (0007, status
// the enum):
//
//	relation              before   status NULL    after (enum)
//	ark heap (+ maps)      269.0   253.9 253.9    258.2 258.2
//	ark TOAST                0.1     0.1   0.1      0.1   0.1
//	ark_pkey                54.8    55.8  54.2     55.0  54.2
//	ark_seq_brin             0.7     0.7   0.7      0.7   0.7
//	ark_receipt             48.8    29.0  29.0     28.8  29.2
//	all-in                 398.3   356.1 354.5    359.4 359.0
//
// The heap's 11 octets: the 8-octet digest and change_seq NULL (its 4 octets and the alignment
// after it); status as NULL would save another 4.3 (the enum's 4 octets, padded to 4). The
// receipt index's 20: contiguous runs (leaves 0.60 full before, 0.89 after at the default
// fillfactor) and fillfactor 100 (0.98 full).
//
// # Status public as NULL (migration 0012)
//
// The Tate ledger as loaded stayed at the edge of the 360 B target with 0007: 27 fresh loads on
// one day gave 357.3 to 361.8 B per ARK all-in, median 359.3, 9 of them over 360. The heap is
// the same on every load (274.4 B per ARK then); the spread is ark_pkey's (54.6 to 57.1 B), whose
// leaves random blades fill to about two thirds: PostgreSQL splits a full leaf that is not the
// rightmost in half, and a unique single-column index never gets the split after the new item
// that keeps ark_receipt's runs full. Of the levers measured on a copy of the ledger's rows, only
// status NULL saves enough: column order saves nothing (the tuple's end is padded to 8 octets
// either way: 274.2 against 274.3), a 6-octet digest 1.4, and ARK-ordered batches cost the
// receipt index more than they save in ark_pkey. With 0012 a minted (and an imported public) ARK
// stores its status as NULL; the heap is 270.1 to 270.3 B per ARK, and 315 fresh loads on one day
// gave 352.2 to 358.4 B all-in, median 355.5, except two at 361.3 and 362.1, where ark_receipt
// came out at 32.4 and about 35.6 B per ARK instead of its usual 28.6 to 29.6 (the heap and
// ark_pkey were ordinary; the cause was not found, and 150 loads hunting for a third did not
// reproduce it).
//
// # Measured margins (PostgreSQL 15, `arkhe bench sizing`, 2 workers as arkhe mint), before 0007
//
// Octets per ARK of ark + receipt, heap + TOAST + every index, as loaded (after REINDEX); the
// real Tate collection (url 78, title 30, who 23, when 7 octets) and Tate-like generated rows (url
// 57, title 43, who 19, when 5) at 100 thousand and 1 million ARKs, measured before receipts
// moved to the ark row (receipt-table was then arkhe's 0001 schema, and the receipt-on-row
// layout of those runs is what 0001 is now; no-derivable then kept the receipt table):
//
//	layout           Tate 69,202    100 k        1 M
//	natural          511 (475)      495 (461)    496 (459)
//	surrogate        478 (442)      459 (428)    461 (427)
//	receipt-table    460 (428)      441 (414)    442 (413)
//	arkhe (0001)     387 (359)      380 (354)    382 (353)
//	no-derivable*    444 (416)      428 (402)    429 (400)
//	lean             377 (347)      369 (341)    370 (340)
//
// (* with the receipt table; on arkhe's current schema no-derivable is the lean shape.)
//
// Index fill after concurrent random inserts varies by a few octets per ARK from run to run.
//
// The levers, whole ledger per ARK (receipts and one ARK_CHANGE per ten ARKs included), Tate and
// 1 million:
//
//   - receipt columns on the ark row instead of a receipt table: -76 B (-15 %), -61 B
//     (-13 %); it also halves the COPY work of a mint (one COPY per batch instead of two).
//     arkhe took it: receipts are ark columns in 0001;
//   - a bigint surrogate ark.id referenced by receipts and changes instead of the ARK string:
//     +10 B (+1.9 %), +15 B (+3.1 %): the narrower references do not pay for the surrogate's own
//     primary key, because an ARK is referenced about once (so the ARK string stays
//     the reference);
//   - interning the client and the shoulder to bigint instead of their strings: -49 B (-8.9 %),
//     -55 B (-10.3 %), the lever that makes the surrogate layout look better than natural keys;
//   - dropping naan and assigned_name, derivable from the key: -19 B (-3.8 %), -13 B (-2.8 %);
//   - REINDEX after minting: -34 B (-6.6 %), -31 B (-6.5 %). Random blades fill ark_pkey to about
//     0.69 of a leaf and mint's hash-routed workers fill the receipt key (then
//     mint_receipt_pkey, now ark_receipt) to 0.58; a rebuild packs both to 0.90;
//   - all of the winning ones (lean): -86 B (-17 %), -73 B (-15 %); with REINDEX -118 B (-23 %),
//     -104 B (-22 %).
//
// With a receipt table, arkhe's schema was 460 B per ARK all-in on Tate, over the 400 B
// budget: the ark table alone (317 B) was well under the data model's 362 B, and the receipts
// (143 B) were what the budget leaves out. With the receipt on the ark row (387 B on Tate in
// the bench) arkhe's schema is within 400 B as minted: `arkhe mint` of the Tate collection
// measures 391 B per ARK all-in (ark 317 B; receipts 74 B, their columns' heap share 25 B and
// ark_receipt 49 B), and the model predicts that ledger within 0.1 %. The lean layout reaches
// 347 B after REINDEX; the 330 B aim needs more than the five levers. Migration 0007 (above)
// brings arkhe's own schema to 356 B as minted.
//
// WAL: a bulk mint writes about 1.37 octets of WAL per octet of ark + receipt it adds
// (WALPerLedgerByte: 605 B per ARK for arkhe's schema), and pg_wal peaks at max_wal_size when
// checkpoints keep up.
//
// No internal key (seq, shoulder or client keys, bench surrogates) appears in anything this
// package returns for display: tables, indexes, NAANs and shoulders are named by their public
// names; internal keys are the database's own.
package sizing
