package loader

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"
)

// TestARKKinds: each kind sends its columns in the one order, and its COPY names them.
func TestARKKinds(t *testing.T) {
	for _, c := range []struct {
		kind *arkKind
		want string
	}{
		{mintARKs, "ark naan shoulder_id assigned_name url commitment erc_who erc_what erc_when change_seq created_at created_by request_id payload_digest"},
		{mintCitusARKs, "ark naan shoulder_id assigned_name url commitment erc_who erc_what erc_when change_seq created_at created_by"},
		{importARKs, "ark naan shoulder_id assigned_name url commitment erc_who erc_what erc_when metadata status tombstone_reason original check_ok created_at updated_at created_by import_run_id"},
	} {
		if got := strings.Join(c.kind.names, " "); got != c.want {
			t.Errorf("columns %q, want %q", got, c.want)
		}
		if want := "copy ark (" + strings.ReplaceAll(c.want, " ", ", ") + ") from stdin (format binary)"; c.kind.copySQL != want {
			t.Errorf("COPY %q, want %q", c.kind.copySQL, want)
		}
	}
}

// TestARKTuple: a tuple holds the kind's field count, then each field's length (-1 for NULL)
// and value, in the kind's order.
func TestARKTuple(t *testing.T) {
	url := "https://example.org/1"
	pk := int64(7)
	r := ARKRow{Key: "99999/x9b", NAAN: "99999", ShoulderID: 3, Name: "x9b", URL: &url, CreatedBy: &pk}
	k := newARKKind("ark", colARK, colShoulderID, colURL, colWho, colChangeSeq, colCreatedBy)
	b := k.appendTuple(nil, &r)
	var fields []string
	if n := binary.BigEndian.Uint16(b); n != 6 {
		t.Fatalf("field count %d, want 6", n)
	}
	for b = b[2:]; len(b) > 0; {
		n := int32(binary.BigEndian.Uint32(b))
		b = b[4:]
		if n < 0 {
			fields = append(fields, "NULL")
			continue
		}
		fields = append(fields, string(b[:n]))
		b = b[n:]
	}
	want := []string{"99999/x9b", "\x00\x00\x00\x00\x00\x00\x00\x03", url, "NULL", "NULL", "\x00\x00\x00\x00\x00\x00\x00\x07"}
	if strings.Join(fields, "|") != strings.Join(want, "|") {
		t.Fatalf("fields %q, want %q", fields, want)
	}
}

// BenchmarkARKTupleMint encodes mint tuples of the single layout (the client CPU a minted row
// costs in the encoder).
func BenchmarkARKTupleMint(b *testing.B) {
	at := time.Now()
	pk := int64(7)
	url, what, rid := "https://example.org/x/12345", "A title of a work", "req-0000123"
	row := ARKRow{Key: "99999/x9bcdfghjk", NAAN: "99999", ShoulderID: 3, Name: "x9bcdfghjk", URL: &url, What: &what,
		CreatedAt: &at, CreatedBy: &pk, RequestID: &rid, PayloadDigest: make([]byte, 8)}
	buf := make([]byte, 0, 1<<20)
	for b.Loop() {
		if len(buf) > 1<<19 {
			buf = buf[:0]
		}
		buf = mintARKs.appendTuple(buf, &row)
	}
}
