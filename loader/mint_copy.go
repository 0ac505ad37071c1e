package loader

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/pipeline"
)

// This file streams a mint batch to COPY: its ark rows through the one writer of ark rows
// (writer.go), and on Citus its receipts, rows of table receipt.

// fillARK sets the fields of row that differ from one ARK of the attempt to the next: those of
// the k-th row to COPY (w.copyIdx, prepared by prepareCopy).
func (w *mintWorker) fillARK(row *ARKRow, rows []pipeline.Row, k int) {
	r := &rows[w.copyIdx[k]]
	rec := &r.Record
	row.Key, row.Name = w.keys[k], w.anames[k]
	row.URL = optional(rec.Has&pipeline.HasURL != 0, &rec.URL)
	row.Commitment = optional(rec.Has&pipeline.HasCommitment != 0, &rec.Commitment)
	row.Who = optional(rec.Has&pipeline.HasWho != 0, &rec.Who)
	row.What = optional(rec.Has&pipeline.HasWhat != 0, &rec.What)
	row.When = optional(rec.Has&pipeline.HasWhen != 0, &rec.When)
	row.RequestID, row.PayloadDigest = &rec.RequestID, r.Digest[:ledger.ReceiptDigestOctets]
}

// copyReceiptsSQL is the second COPY of the citus layout, after the ark rows without a receipt
// (mintCitusARKs): the receipts, rows of the receipt table.
const copyReceiptsSQL = `copy receipt (client_pk, request_id, ark, payload_digest, created_at) from stdin (format binary)`

// copyBinary COPYs the ARKs of rows w.copyIdx (prepared by prepareCopy) with their receipts
// inside tx: in the single layout one COPY of ark rows that carry their receipt; in the citus
// layout a COPY of ark rows, then a COPY of receipt rows.
func (w *mintWorker) copyBinary(ctx context.Context, tx pgx.Tx, rows []pipeline.Row, at time.Time) error {
	hook := w.s.cfg.Hooks.CopyRow
	citus := w.s.citus
	kind := mintARKs
	if citus {
		kind = mintCitusARKs
	}
	row := ARKRow{NAAN: w.naan, ShoulderID: w.shoulderID, CreatedAt: &at, CreatedBy: &w.clientPK}
	arks := &copyReader{n: len(w.copyIdx), buf: w.copyBuf[:0], tuple: func(dst []byte, k int) []byte {
		if hook != nil {
			hook(w.id, "ark", k+1)
		}
		w.fillARK(&row, rows, k)
		return kind.appendTuple(dst, &row)
	}}
	t0 := time.Now()
	defer w.s.since(phaseCopyARKs, t0)
	_, err := tx.Conn().PgConn().CopyFrom(ctx, arks, kind.copySQL)
	arks.close()
	w.copyBuf = arks.buf[:0]
	if err != nil || !citus {
		return err
	}
	receipts := &copyReader{n: len(w.copyIdx), buf: w.copyBuf[:0], tuple: func(dst []byte, k int) []byte {
		if hook != nil {
			hook(w.id, "receipt", k+1)
		}
		r := &rows[w.copyIdx[k]]
		dst = ledger.AppendTuple(dst, 5)
		dst = ledger.AppendInt8(dst, w.clientPK)
		dst = ledger.AppendText(dst, r.Record.RequestID)
		dst = ledger.AppendText(dst, w.keys[k])
		dst = ledger.AppendBytea(dst, r.Digest[:])
		return ledger.AppendTimestamptz(dst, at)
	}}
	_, err = tx.Conn().PgConn().CopyFrom(ctx, receipts, copyReceiptsSQL)
	receipts.close()
	w.copyBuf = receipts.buf[:0]
	return err
}
