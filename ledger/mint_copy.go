package ledger

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

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
			r.buf = AppendCopyHeader(r.buf)
			r.header = true
		}
		for len(r.buf) < copyChunk && r.i < r.n {
			r.buf = r.tuple(r.buf, r.i)
			r.i++
		}
		if r.i >= r.n {
			r.buf = AppendCopyTrailer(r.buf)
			r.done = true
		}
	}
	n := copy(p, r.buf[r.off:])
	r.off += n
	return n, nil
}

// copyARKsSQL names the columns in the order the tuples are encoded; request_id and
// payload_digest are the receipt, on the ark row.
const copyARKsSQL = `copy ark (ark, naan, shoulder_id, assigned_name, url, commitment, erc_who, erc_what, erc_when,
	created_at, created_by, request_id, payload_digest) from stdin (format binary)`

// copyBinary COPYs the ARKs of rows w.copyIdx (prepared by prepareCopy), receipts included, in
// one COPY inside tx.
func (w *mintWorker) copyBinary(ctx context.Context, tx pgx.Tx, rows []pipeline.Row, at time.Time) error {
	hook := w.s.cfg.Hooks.CopyRow
	arks := &copyReader{n: len(w.copyIdx), buf: w.copyBuf[:0], tuple: func(dst []byte, k int) []byte {
		if hook != nil {
			hook(w.id, "ark", k+1)
		}
		r := &rows[w.copyIdx[k]]
		rec := &r.Record
		dst = AppendTuple(dst, 13)
		dst = AppendText(dst, w.keys[k])
		dst = AppendText(dst, w.naan)
		dst = AppendInt8(dst, w.shoulderID)
		dst = AppendText(dst, w.anames[k])
		dst = AppendOptional(dst, rec.Has&pipeline.HasURL != 0, rec.URL)
		dst = AppendOptional(dst, rec.Has&pipeline.HasCommitment != 0, rec.Commitment)
		dst = AppendOptional(dst, rec.Has&pipeline.HasWho != 0, rec.Who)
		dst = AppendOptional(dst, rec.Has&pipeline.HasWhat != 0, rec.What)
		dst = AppendOptional(dst, rec.Has&pipeline.HasWhen != 0, rec.When)
		dst = AppendTimestamptz(dst, at)
		dst = AppendInt8(dst, w.clientPK)
		dst = AppendText(dst, rec.RequestID)
		return AppendBytea(dst, r.Digest[:])
	}}
	t0 := time.Now()
	_, err := tx.Conn().PgConn().CopyFrom(ctx, arks, copyARKsSQL)
	arks.close()
	w.copyBuf = arks.buf[:0]
	w.s.since(phaseCopyARKs, t0)
	return err
}
