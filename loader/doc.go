// Package loader writes rows into the ledger in bulk, over ledger's pool and its binary COPY
// encoder; package ledger itself writes one row at a time.
//
// Every bulk write of table ark goes through one writer (writer.go): a row is an ARKRow, a kind
// of bulk write is the set of ark columns it sends, and the tuples are encoded by one function.
// Four kinds exist:
//
//   - Mint (PrepareMint, Mint): new ARKs from a manifest, as a pipeline.Sink. Per batch it
//     checks idempotency receipts (a request ID minted before replays its ARK; the same request
//     ID with another payload is refused), draws blades with collision redraw, and COPYs the
//     ARKs with their receipts in one transaction, after the reach and quota checks of the
//     client's registration (reach comes from the registration only, and the database checks
//     it again per row). Minting never becomes an update: an existing ARK is never written.
//     Faults (a lost connection, a restarted or frozen server) are ridden out per RetryPolicy.
//   - Import (NewImportWriter): the new ARKs an import found absent from the ledger, sent in
//     batches inside the import's transaction with one batch in flight while the next is encoded.
//   - Recovery (WriteRecovered): ARKs a restored ledger forgot, put back from mint maps with
//     their mint receipts, inside the recovery's transaction (importer.Recover): an import's
//     columns and, on one node, the receipt columns; on Citus a second COPY of receipt rows.
//   - Update (Update): changes of existing ARKs from a change manifest, batch by batch: each
//     batch's rows are COPYed, in the same binary encoding, into the staging table
//     ark_update_stage and applied by one call of the ledger's ark_update_apply, which changes
//     them through the repoint path (one ARK_CHANGE row per changed ARK, reach checked per
//     shoulder in the database) and leaves a receipt per applied row, so a re-run applies
//     nothing twice.
//
// A further kind of bulk write is a column set beside these (arkKind) and, where it overlaps
// encoding and sending in its own way, a sender over the same encoder.
//
// The errors a mint returns are types of errors.go; callers branch on them with errors.As.
package loader
