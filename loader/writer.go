package loader

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/ledger"
)

// The one writer of ark rows. Every bulk write of table ark — a mint's new ARKs, an import's —
// fills ARKRow values and encodes them here, through ledger's binary COPY encoder, into
// COPY ark (...) FROM STDIN (FORMAT binary). The kinds of bulk write differ only in the columns
// they send (an arkKind: a subset of arkColumnNames, in that order) and in when they send:
// a mint streams each batch while encoding it (copyReader), an import fills one batch while the
// server inserts the one before (ARKWriter). A new kind of bulk write is a new arkKind beside
// mintARKs and importARKs (a bulk change COPYs its rows into a staging table the same way) and,
// when it must overlap encoding and sending differently, its own sender over copyReader; the
// row type and the encoding stay one.

// ARKRow is one new row of table ark as a bulk write sends it. A nil pointer or slice goes as
// NULL; a column the write's kind does not send takes the table's default (NULL for every
// column an ARKRow carries; change_seq, which a row carries not, is 0 by default and NULL, the
// same count in no octets, where a kind sends it).
type ARKRow struct {
	Key        string // ark: "NAAN/name", normalized (ark.Parse), the primary key
	NAAN       string // naan
	ShoulderID int64  // shoulder_id: the registered shoulder the name falls under
	Name       string // assigned_name: the name after "NAAN/", shoulder included

	URL        *string // url: the target, at most 2048 octets
	Commitment *string // commitment
	Who        *string // erc_who
	What       *string // erc_what
	When       *string // erc_when
	Metadata   []byte  // metadata: a JSON text, sent as jsonb (the server refuses invalid JSON)

	Status   *string // status: "reserved" or "unavailable"; nil is public
	Reason   *string // tombstone_reason
	Original *string // original: the spelling a legacy export gave, when it differs
	CheckOK  *bool   // check_ok: whether the NCDA check character verified; nil: none

	CreatedAt   *time.Time // created_at
	UpdatedAt   *time.Time // updated_at
	CreatedBy   *int64     // created_by: the client's id
	ImportRunID *int64     // import_run_id: the import run that wrote the row

	// RequestID and PayloadDigest are the mint's idempotency receipt on the ark row (single
	// layout): the client's request ID and the first ledger.ReceiptDigestOctets octets of the
	// payload digest.
	RequestID     *string
	PayloadDigest []byte
}

// arkColumn is a column of table ark a bulk write may send; arkColumnNames is their one order.
type arkColumn uint8

const (
	colARK arkColumn = iota
	colNAAN
	colShoulderID
	colName
	colURL
	colCommitment
	colWho
	colWhat
	colWhen
	colChangeSeq
	colMetadata
	colStatus
	colReason
	colOriginal
	colCheckOK
	colCreatedAt
	colUpdatedAt
	colCreatedBy
	colImportRunID
	colRequestID
	colPayloadDigest
)

var arkColumnNames = [...]string{"ark", "naan", "shoulder_id", "assigned_name", "url", "commitment",
	"erc_who", "erc_what", "erc_when", "change_seq", "metadata", "status", "tombstone_reason", "original", "check_ok",
	"created_at", "updated_at", "created_by", "import_run_id", "request_id", "payload_digest"}

// arkKind is the column set of one kind of bulk write, in arkColumnNames order, and its COPY
// into table: ark for the writes that insert ARKs; a write that changes ARKs in bulk COPYs the
// same columns into a staging table of its own and applies them from there.
type arkKind struct {
	cols    []arkColumn
	names   []string
	copySQL string
}

func newARKKind(table string, cols ...arkColumn) *arkKind {
	k := &arkKind{cols: cols}
	for _, c := range cols {
		k.names = append(k.names, arkColumnNames[c])
	}
	k.copySQL = "copy " + table + " (" + strings.Join(k.names, ", ") + ") from stdin (format binary)"
	return k
}

// The kinds of bulk write of ark rows. A mint sends the ERC and the target of a new ARK and,
// on one node, its receipt (on Citus the receipt is a row of table receipt, mint_copy.go); an
// import sends what the legacy export held, with the run that wrote it.
var (
	mintARKs = newARKKind("ark", colARK, colNAAN, colShoulderID, colName, colURL, colCommitment, colWho, colWhat, colWhen,
		colChangeSeq, colCreatedAt, colCreatedBy, colRequestID, colPayloadDigest)
	mintCitusARKs = newARKKind("ark", mintARKs.cols[:len(mintARKs.cols)-2]...)
	importARKs    = newARKKind("ark", colARK, colNAAN, colShoulderID, colName, colURL, colCommitment, colWho, colWhat, colWhen,
		colMetadata, colStatus, colReason, colOriginal, colCheckOK, colCreatedAt, colUpdatedAt, colCreatedBy, colImportRunID)
)

// ImportARKColumns returns the columns of table ark an import sends, in the order of its COPY, as
// a new slice (a benchmark's floor sends the same).
func ImportARKColumns() []string { return append([]string(nil), importARKs.names...) }

// appendTuple appends r as one tuple of k's columns.
func (k *arkKind) appendTuple(dst []byte, r *ARKRow) []byte {
	dst = ledger.AppendTuple(dst, len(k.cols))
	for _, c := range k.cols {
		switch c {
		case colARK:
			dst = ledger.AppendText(dst, r.Key)
		case colNAAN:
			dst = ledger.AppendText(dst, r.NAAN)
		case colShoulderID:
			dst = ledger.AppendInt8(dst, r.ShoulderID)
		case colName:
			dst = ledger.AppendText(dst, r.Name)
		case colURL:
			dst = ledger.AppendTextPtr(dst, r.URL)
		case colCommitment:
			dst = ledger.AppendTextPtr(dst, r.Commitment)
		case colWho:
			dst = ledger.AppendTextPtr(dst, r.Who)
		case colWhat:
			dst = ledger.AppendTextPtr(dst, r.What)
		case colWhen:
			dst = ledger.AppendTextPtr(dst, r.When)
		case colChangeSeq:
			dst = ledger.AppendNull(dst) // no change yet: NULL means 0, in no octets
		case colMetadata:
			dst = ledger.AppendJSONB(dst, r.Metadata)
		case colStatus:
			dst = ledger.AppendTextPtr(dst, r.Status)
		case colReason:
			dst = ledger.AppendTextPtr(dst, r.Reason)
		case colOriginal:
			dst = ledger.AppendTextPtr(dst, r.Original)
		case colCheckOK:
			dst = ledger.AppendBoolPtr(dst, r.CheckOK)
		case colCreatedAt:
			dst = ledger.AppendTimestamptzPtr(dst, r.CreatedAt)
		case colUpdatedAt:
			dst = ledger.AppendTimestamptzPtr(dst, r.UpdatedAt)
		case colCreatedBy:
			dst = ledger.AppendInt8Ptr(dst, r.CreatedBy)
		case colImportRunID:
			dst = ledger.AppendInt8Ptr(dst, r.ImportRunID)
		case colRequestID:
			dst = ledger.AppendTextPtr(dst, r.RequestID)
		case colPayloadDigest:
			if r.PayloadDigest == nil {
				dst = ledger.AppendNull(dst)
			} else {
				dst = ledger.AppendBytea(dst, r.PayloadDigest)
			}
		}
	}
	return dst
}

// copyChunk is how many bytes a copyReader encodes at a time.
const copyChunk = 64 << 10

// copyReader is the io.Reader of one binary COPY: the header, n tuples encoded by tuple, the
// trailer. pgconn reads it from its own goroutine while sending, so encoding overlaps the network.
// pgconn.CopyFrom may return on an error while that goroutine is still in Read; close waits for
// such a Read to finish and makes later ones fail, so the rows and the buffer can be reused.
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

// ARKWriter sends an import's new ARKs to table ark in batches, inside the caller's transaction,
// with one batch in flight on the transaction's connection while the caller fills the next (as
// one streaming COPY would overlap them). The caller must not use the transaction while a batch
// is in flight: Wait first. Not safe for concurrent use.
type ARKWriter struct {
	tx      pgx.Tx
	kind    *arkKind
	bufs    [2][]byte // one being sent, one being filled
	n       [2]int64  // the rows in each
	cur     int       // index into bufs of the one being filled
	pending chan error
}

// NewImportWriter returns an ARKWriter of import rows (ImportARKColumns) into tx.
func NewImportWriter(tx pgx.Tx) *ARKWriter { return &ARKWriter{tx: tx, kind: importARKs} }

// Add appends r to the batch being filled; r is encoded now and may be reused.
func (w *ARKWriter) Add(r *ARKRow) {
	b := w.bufs[w.cur]
	if w.n[w.cur] == 0 {
		b = ledger.AppendCopyHeader(b[:0])
	}
	w.bufs[w.cur] = w.kind.appendTuple(b, r)
	w.n[w.cur]++
}

// Send waits for the batch in flight, if any, and returns its error; else it starts the COPY of
// the batch filled since the last Send (nothing when it is empty) and returns nil. done, called
// when that COPY ends, turns its outcome into the error a later Send or Wait returns: the rows
// the server inserted (each added row, unless err) and the server's error (classify it with
// ledger's predicates, e.g. ledger.IsUniqueViolation for a key another writer added first).
func (w *ARKWriter) Send(ctx context.Context, done func(want, inserted int64, err error) error) error {
	if err := w.Wait(); err != nil {
		return err
	}
	want := w.n[w.cur]
	if want == 0 {
		return nil
	}
	buf := ledger.AppendCopyTrailer(w.bufs[w.cur])
	w.bufs[w.cur] = buf
	w.n[w.cur] = 0
	w.cur ^= 1
	ch := make(chan error, 1)
	w.pending = ch
	conn := w.tx.Conn().PgConn()
	sql := w.kind.copySQL
	go func() {
		tag, err := conn.CopyFrom(ctx, bytes.NewReader(buf), sql)
		ch <- done(want, tag.RowsAffected(), err)
	}()
	return nil
}

// Wait waits for the batch in flight, if any, and returns the error its done returned; the
// transaction is the caller's again when it returns.
func (w *ARKWriter) Wait() error {
	if w.pending == nil {
		return nil
	}
	err := <-w.pending
	w.pending = nil
	return err
}

// recoverARKs is the column set of a recovery from mint maps: an import's columns with the
// mint's receipt on the ark row (single layout); recoverCitusARKs leaves the receipt out (on
// Citus it is a row of table receipt).
var (
	recoverARKs      = newARKKind("ark", append(append([]arkColumn(nil), importARKs.cols...), colRequestID, colPayloadDigest)...)
	recoverCitusARKs = importARKs
)

// WriteRecovered inserts rows, ARKs a recovery from mint maps puts back, each with its mint
// receipt, inside tx: rows[i] must carry the import run (ImportRunID), the client (CreatedBy)
// and the receipt's request ID (RequestID); digests[i] is the receipt's payload digest
// (pipeline.PayloadDigest of the payload minted). On one node (citus false) one COPY of ark
// rows writes both, the receipt as the row's request_id and the digest's first
// ledger.ReceiptDigestOctets octets, as a mint writes it; on Citus a COPY of ark rows without
// a receipt, then a COPY of receipt rows (client, request ID, ARK, the whole digest, created at
// receiptAt). Insert-only: an ARK or a receipt that exists fails the COPY (classify the error
// with ledger's predicates; on Citus a worker's error is XX000). It returns how many ARKs the
// server inserted.
func WriteRecovered(ctx context.Context, tx pgx.Tx, citus bool, rows []ARKRow, digests [][16]byte, receiptAt time.Time) (int64, error) {
	if len(rows) != len(digests) {
		return 0, fmt.Errorf("write recovered ARKs: %d rows and %d digests", len(rows), len(digests))
	}
	if len(rows) == 0 {
		return 0, nil
	}
	kind := recoverARKs
	if citus {
		kind = recoverCitusARKs
	}
	arks := &copyReader{n: len(rows), tuple: func(dst []byte, i int) []byte {
		r := rows[i]
		if !citus {
			r.PayloadDigest = digests[i][:ledger.ReceiptDigestOctets]
		}
		return kind.appendTuple(dst, &r)
	}}
	tag, err := tx.Conn().PgConn().CopyFrom(ctx, arks, kind.copySQL)
	arks.close()
	if err != nil || !citus {
		return tag.RowsAffected(), err
	}
	inserted := tag.RowsAffected()
	receipts := &copyReader{n: len(rows), tuple: func(dst []byte, i int) []byte {
		r := &rows[i]
		var client int64
		if r.CreatedBy != nil {
			client = *r.CreatedBy
		}
		var rid string
		if r.RequestID != nil {
			rid = *r.RequestID
		}
		dst = ledger.AppendTuple(dst, 5)
		dst = ledger.AppendInt8(dst, client)
		dst = ledger.AppendText(dst, rid)
		dst = ledger.AppendText(dst, r.Key)
		dst = ledger.AppendBytea(dst, digests[i][:])
		return ledger.AppendTimestamptz(dst, receiptAt)
	}}
	_, err = tx.Conn().PgConn().CopyFrom(ctx, receipts, copyReceiptsSQL)
	receipts.close()
	return inserted, err
}
