package ledger

import (
	"encoding/binary"
	"time"
)

// The binary COPY encoder: what package loader's bulk writers send to
// COPY ... FROM STDIN (FORMAT binary), encoded straight from their rows, without pgx's generic
// per-value encoding (no [][]any, no boxing, no encode-plan lookup per value).
//
// The stream is the header (the signature "PGCOPY\n\377\r\n\0", 32-bit flags 0 and a 32-bit
// header extension length 0), then per tuple a 16-bit field count and per field a 32-bit length
// (-1 for NULL) followed by the value in its type's binary send format, then the trailer: a
// field count of -1. All integers are big-endian. Each Append function appends to dst and
// returns the extended slice, as the append built-in does.

// PGEpochMicros is 2000-01-01T00:00:00Z in Unix microseconds: the origin of PostgreSQL's binary
// timestamp and timestamptz, which count microseconds from it.
const PGEpochMicros = 946_684_800_000_000

// copyHeader is the signature "PGCOPY\n\377\r\n\0", flags 0 and header extension length 0.
const copyHeader = "PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00"

// AppendCopyHeader appends the 19-byte header that starts a binary COPY stream.
func AppendCopyHeader(dst []byte) []byte { return append(dst, copyHeader...) }

// AppendCopyTrailer appends the trailer that ends a binary COPY stream (a field count of -1).
func AppendCopyTrailer(dst []byte) []byte { return binary.BigEndian.AppendUint16(dst, 0xffff) }

// AppendTuple starts a tuple of n fields; n fields must follow.
func AppendTuple(dst []byte, n int) []byte { return binary.BigEndian.AppendUint16(dst, uint16(n)) }

// AppendNull appends a NULL field.
func AppendNull(dst []byte) []byte { return binary.BigEndian.AppendUint32(dst, 0xffffffff) }

// AppendText appends a text (or varchar) field. s must be valid UTF-8 without NUL bytes: the
// server refuses anything else and aborts the whole COPY.
func AppendText(dst []byte, s string) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(s)))
	return append(dst, s...)
}

// AppendTextPtr appends *s as text, or NULL for nil.
func AppendTextPtr(dst []byte, s *string) []byte {
	if s == nil {
		return AppendNull(dst)
	}
	return AppendText(dst, *s)
}

// AppendOptional appends s as text when has is true, else NULL.
func AppendOptional(dst []byte, has bool, s string) []byte {
	if !has {
		return AppendNull(dst)
	}
	return AppendText(dst, s)
}

// AppendInt8 appends a bigint field.
func AppendInt8(dst []byte, v int64) []byte {
	dst = binary.BigEndian.AppendUint32(dst, 8)
	return binary.BigEndian.AppendUint64(dst, uint64(v))
}

// AppendInt8Ptr appends *v as bigint, or NULL for nil.
func AppendInt8Ptr(dst []byte, v *int64) []byte {
	if v == nil {
		return AppendNull(dst)
	}
	return AppendInt8(dst, *v)
}

// AppendBoolPtr appends *v as boolean (one byte, 1 or 0), or NULL for nil.
func AppendBoolPtr(dst []byte, v *bool) []byte {
	if v == nil {
		return AppendNull(dst)
	}
	dst = binary.BigEndian.AppendUint32(dst, 1)
	if *v {
		return append(dst, 1)
	}
	return append(dst, 0)
}

// AppendTimestamptz appends t as timestamptz: microseconds since PGEpochMicros, finer parts
// truncated.
func AppendTimestamptz(dst []byte, t time.Time) []byte {
	return AppendInt8(dst, t.UnixMicro()-PGEpochMicros)
}

// AppendTimestamptzPtr appends *t as timestamptz, or NULL for nil.
func AppendTimestamptzPtr(dst []byte, t *time.Time) []byte {
	if t == nil {
		return AppendNull(dst)
	}
	return AppendTimestamptz(dst, *t)
}

// AppendJSONB appends b, a JSON text, as jsonb (format version 1, then the text), or NULL for
// nil. The server parses the text and refuses invalid JSON.
func AppendJSONB(dst []byte, b []byte) []byte {
	if b == nil {
		return AppendNull(dst)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(b)+1))
	dst = append(dst, 1)
	return append(dst, b...)
}

// AppendBytea appends b as bytea.
func AppendBytea(dst []byte, b []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(b)))
	return append(dst, b...)
}

// ReceiptDigestOctets is how many octets of a row's 16-octet payload digest (pipeline.PayloadDigest)
// a new receipt stores on its ARK row (one node): the first 8, 64 bits, enough to tell a changed
// payload from a replay. A receipt written with all 16 (before, or in the receipt table on
// Citus) is compared on its own length.
const ReceiptDigestOctets = 8
