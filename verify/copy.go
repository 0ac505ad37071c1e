package verify

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
)

// PostgreSQL binary COPY format (https://www.postgresql.org/docs/current/sql-copy.html,
// "Binary Format"): an 11-octet signature, a 32-bit flags field, a 32-bit header extension
// length and the extension; then tuples, each a 16-bit field count and per field a 32-bit
// length (-1 for NULL) and the value; a field count of -1 ends the data.
const copySignature = "PGCOPY\n\xff\r\n\x00"

// copyHeaderLen is the fixed part of the header: signature, flags, extension length.
const copyHeaderLen = 11 + 4 + 4

// copyBatchBytes is about how many octets of whole tuples the splitter hands to a worker.
const copyBatchBytes = 256 << 10

// errCopyFormat is wrapped by errors about malformed binary COPY data.
var errCopyFormat = errors.New("malformed binary COPY data")

// copySplitter is the io.Writer given to pgconn's CopyTo: it consumes the header, cuts the
// stream into batches of whole tuples and sends them on out, recycling buffers from free.
// Memory is bounded by the capacity of out and free. It is used by one goroutine.
type copySplitter struct {
	ctx     context.Context
	fields  int // fields per tuple
	out     chan<- []byte
	free    chan []byte
	buf     []byte // current batch: whole tuples up to scan, then a partial one
	scan    int    // end of the whole tuples in buf
	header  bool   // header consumed
	trailer bool   // end marker seen
	tuples  int64
}

func newCopySplitter(ctx context.Context, fields int, out chan<- []byte, free chan []byte) *copySplitter {
	return &copySplitter{ctx: ctx, fields: fields, out: out, free: free, buf: make([]byte, 0, copyBatchBytes+4096)}
}

// Write takes the next piece of COPY data (pgconn passes one CopyData message at a time, but
// any split works).
func (s *copySplitter) Write(p []byte) (int, error) {
	if s.trailer {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, fmt.Errorf("%w: data after the end marker", errCopyFormat)
	}
	s.buf = append(s.buf, p...)
	if !s.header {
		if len(s.buf) < copyHeaderLen {
			return len(p), nil
		}
		if string(s.buf[:len(copySignature)]) != copySignature {
			return 0, fmt.Errorf("%w: bad signature", errCopyFormat)
		}
		ext := int(binary.BigEndian.Uint32(s.buf[15:19]))
		if len(s.buf) < copyHeaderLen+ext {
			return len(p), nil
		}
		s.buf = append(s.buf[:0], s.buf[copyHeaderLen+ext:]...)
		s.header = true
	}
	for {
		n, err := tupleLen(s.buf[s.scan:], s.fields)
		if err != nil {
			return 0, err
		}
		if n == 0 {
			break
		}
		if n < 0 {
			s.trailer = true
			s.buf = s.buf[:s.scan]
			break
		}
		s.scan += n
		s.tuples++
	}
	if s.scan >= copyBatchBytes {
		if err := s.send(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// send hands the whole tuples of the current batch to a worker and keeps the partial rest.
func (s *copySplitter) send() error {
	if s.scan == 0 {
		return nil
	}
	var next []byte
	select {
	case next = <-s.free:
		next = next[:0]
	default:
		next = make([]byte, 0, copyBatchBytes+4096)
	}
	next = append(next, s.buf[s.scan:]...)
	select {
	case s.out <- s.buf[:s.scan]:
	case <-s.ctx.Done():
		return s.ctx.Err()
	}
	s.buf, s.scan = next, 0
	return nil
}

// finish sends the last batch; it fails when the stream ended inside a tuple or without the
// end marker.
func (s *copySplitter) finish() error {
	if !s.header || !s.trailer || len(s.buf) != s.scan {
		return fmt.Errorf("%w: the stream ended early", errCopyFormat)
	}
	return s.send()
}

// tupleLen returns the length of the tuple at the start of b: 0 when b does not yet hold all
// of it, -1 for the end marker (which must be all of b).
func tupleLen(b []byte, fields int) (int, error) {
	if len(b) < 2 {
		return 0, nil
	}
	nf := int(int16(binary.BigEndian.Uint16(b)))
	if nf == -1 {
		if len(b) != 2 {
			return 0, fmt.Errorf("%w: data after the end marker", errCopyFormat)
		}
		return -1, nil
	}
	if nf != fields {
		return 0, fmt.Errorf("%w: tuple of %d fields, want %d", errCopyFormat, nf, fields)
	}
	off := 2
	for i := 0; i < nf; i++ {
		if len(b) < off+4 {
			return 0, nil
		}
		l := int(int32(binary.BigEndian.Uint32(b[off:])))
		off += 4
		if l < -1 {
			return 0, fmt.Errorf("%w: field length %d", errCopyFormat, l)
		}
		if l > 0 {
			off += l
		}
	}
	if len(b) < off {
		return 0, nil
	}
	return off, nil
}

// tupleReader decodes the fields of the tuples of one batch, in order. Fields returned as
// slices alias the batch.
type tupleReader struct {
	b   []byte
	off int
}

// next starts the next tuple; false at the end of the batch.
func (r *tupleReader) next() bool {
	if r.off >= len(r.b) {
		return false
	}
	r.off += 2 // the field count, checked by the splitter
	return true
}

// field returns the next field's octets, nil for NULL.
func (r *tupleReader) field() []byte {
	l := int(int32(binary.BigEndian.Uint32(r.b[r.off:])))
	r.off += 4
	if l < 0 {
		return nil
	}
	v := r.b[r.off : r.off+l : r.off+l]
	r.off += l
	return v
}

// int64Field returns the next field as a big-endian int8 (bigint, timestamptz); ok is false for
// NULL.
func (r *tupleReader) int64Field() (int64, bool, error) {
	v := r.field()
	if v == nil {
		return 0, false, nil
	}
	if len(v) != 8 {
		return 0, false, fmt.Errorf("%w: 8-octet field of %d octets", errCopyFormat, len(v))
	}
	return int64(binary.BigEndian.Uint64(v)), true, nil
}

// int32Field returns the next field as a big-endian int4; ok is false for NULL.
func (r *tupleReader) int32Field() (int32, bool, error) {
	v := r.field()
	if v == nil {
		return 0, false, nil
	}
	if len(v) != 4 {
		return 0, false, fmt.Errorf("%w: 4-octet field of %d octets", errCopyFormat, len(v))
	}
	return int32(binary.BigEndian.Uint32(v)), true, nil
}

// boolField returns the next field as a bool; false for NULL.
func (r *tupleReader) boolField() bool {
	v := r.field()
	return len(v) == 1 && v[0] != 0
}
