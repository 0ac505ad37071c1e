package loader

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/pipeline"
)

// This file streams a mint batch to COPY in PostgreSQL's binary COPY format, encoded straight from
// the batch: no [][]any, no per-value encode-plan lookup, no boxing. It is what pgx.CopyFrom with
// a CopyFromSource sends, minus pgx's generic encoding, which cost the mint about a microsecond of
// client CPU per row (the client shares the machine's cores with the server during a bulk load;
// measured with `arkhe bench mint --cpuprofile`).

// copyChunk is how many bytes a copyReader encodes at a time.
const copyChunk = 64 << 10

// copyReader is the io.Reader of one binary COPY: the header, n tuples encoded by tuple, the
// trailer. pgconn reads it from its own goroutine while sending, so encoding overlaps the network.
// pgconn.CopyFrom may return on an error while that goroutine is still in Read; close waits for
// such a Read to finish and makes later ones fail, so the batch and the buffer can be reused.
type copyReader struct {
	mu     sync.Mutex
	closed bool
	n, i   int
	tuple  func(dst []byte, i int) []byte
	buf    []byte
	off    int
	header bool
	done   bool
}

// errCopyClosed is what a Read after close returns.
var errCopyClosed = errors.New("copy source closed")

// close ends the reader (see copyReader).
func (r *copyReader) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
}

// Read implements io.Reader, encoding about copyChunk bytes of tuples at a time.
func (r *copyReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, errCopyClosed
	}
	for r.off >= len(r.buf) {
		if r.done {
			return 0, io.EOF
		}
		r.buf, r.off = r.buf[:0], 0
		if !r.header {
			r.buf = ledger.AppendCopyHeader(r.buf)
			r.header = true
		}
		for len(r.buf) < copyChunk && r.i < r.n {
			r.buf = r.tuple(r.buf, r.i)
			r.i++
		}
		if r.i >= r.n {
			r.buf = ledger.AppendCopyTrailer(r.buf)
			r.done = true
		}
	}
	n := copy(p, r.buf[r.off:])
	r.off += n
	return n, nil
}

// copyARKsSQL names the columns in the order the tuples are encoded; status takes its default
// ('public') and change_seq goes as NULL (0, stored in no octets); request_id and payload_digest
// are the receipt, on the ark row (the single layout), the digest's first ledger.ReceiptDigestOctets
// octets.
const copyARKsSQL = `copy ark (ark, naan, shoulder_id, assigned_name, url, commitment, erc_who, erc_what, erc_when,
	change_seq, created_at, created_by, request_id, payload_digest) from stdin (format binary)`

// copyCitusARKsSQL and copyReceiptsSQL are the two COPYs of the citus layout: the ark rows
// without a receipt (their first 12 columns), then the receipts, rows of the receipt table.
const (
	copyCitusARKsSQL = `copy ark (ark, naan, shoulder_id, assigned_name, url, commitment, erc_who, erc_what, erc_when,
	change_seq, created_at, created_by) from stdin (format binary)`
	copyReceiptsSQL = `copy receipt (client_pk, request_id, ark, payload_digest, created_at) from stdin (format binary)`
)

// copyBinary COPYs the ARKs of rows w.copyIdx (prepared by prepareCopy) with their receipts
// inside tx: in the single layout one COPY of ark rows that carry their receipt; in the citus
// layout a COPY of ark rows, then a COPY of receipt rows.
func (w *mintWorker) copyBinary(ctx context.Context, tx pgx.Tx, rows []pipeline.Row, at time.Time) error {
	hook := w.s.cfg.Hooks.CopyRow
	citus := w.s.citus
	arks := &copyReader{n: len(w.copyIdx), buf: w.copyBuf[:0], tuple: func(dst []byte, k int) []byte {
		if hook != nil {
			hook(w.id, "ark", k+1)
		}
		r := &rows[w.copyIdx[k]]
		rec := &r.Record
		if citus {
			dst = ledger.AppendTuple(dst, 12)
		} else {
			dst = ledger.AppendTuple(dst, 14)
		}
		dst = ledger.AppendText(dst, w.keys[k])
		dst = ledger.AppendText(dst, w.naan)
		dst = ledger.AppendInt8(dst, w.shoulderID)
		dst = ledger.AppendText(dst, w.anames[k])
		dst = ledger.AppendOptional(dst, rec.Has&pipeline.HasURL != 0, rec.URL)
		dst = ledger.AppendOptional(dst, rec.Has&pipeline.HasCommitment != 0, rec.Commitment)
		dst = ledger.AppendOptional(dst, rec.Has&pipeline.HasWho != 0, rec.Who)
		dst = ledger.AppendOptional(dst, rec.Has&pipeline.HasWhat != 0, rec.What)
		dst = ledger.AppendOptional(dst, rec.Has&pipeline.HasWhen != 0, rec.When)
		dst = ledger.AppendNull(dst) // change_seq 0
		dst = ledger.AppendTimestamptz(dst, at)
		dst = ledger.AppendInt8(dst, w.clientPK)
		if citus {
			return dst
		}
		dst = ledger.AppendText(dst, rec.RequestID)
		return ledger.AppendBytea(dst, r.Digest[:ledger.ReceiptDigestOctets])
	}}
	t0 := time.Now()
	defer w.s.since(phaseCopyARKs, t0)
	sql := copyARKsSQL
	if citus {
		sql = copyCitusARKsSQL
	}
	_, err := tx.Conn().PgConn().CopyFrom(ctx, arks, sql)
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
