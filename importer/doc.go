// Package importer brings legacy exports (arklet, N2T, EZID, the NAAN registry, shoulder lists)
// into the ledger and compares them with it afterwards, and puts back from mint maps what a
// restored ledger forgot.
//
// Run imports, insert-only: records are read by package legacy, normalized by
// legacy.NormalizeRecord, and written with the ledger's binary COPY encoder, one transaction
// per file, recorded as an import run; bad records go to a reject file and the rest land.
// Reconcile compares exports with the ledger and writes every difference as a DiffRow; with
// Apply it accepts the export's values, recording one ARK_CHANGE row per changed ARK.
// Recover reads mint maps instead, after a restore from a backup: it puts back, with their
// mint receipts, the ARKs the restored ledger forgot, and reports those that changed since.
package importer
