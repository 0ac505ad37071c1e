package textin

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/ulikunitz/xz"
)

func TestLineEndReader(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"", ""},
		{"abc", "abc"},
		{"a\nb\rc\n", "a\nb\rc\n"},         // LF first: a later bare CR is data
		{"a\r\nb\rc\r\n", "a\r\nb\rc\r\n"}, // CRLF first: the same
		{"a\rb\rc", "a\nb\nc"},             // CR-only
		{"a\rb\r", "a\nb\n"},
		{"abc\r", "abc\n"},                 // the only line end is a final CR
		{"a\r\rb", "a\n\nb"},               // an empty line
		{"a\rb\r\nc\nd\r", "a\nb\nc\nd\n"}, // CR first: CRLF and LF end one line each
		{"\r\r\n\n", "\n\n\n"},
		{"x,\"a\rb\"\ry\r", "x,\"a\nb\"\ny\n"}, // a line break in a quoted field
	}
	readers := map[string]func(io.Reader) io.Reader{
		"whole":    func(r io.Reader) io.Reader { return r },
		"one byte": iotest.OneByteReader,
		"half":     iotest.HalfReader,
		"data+EOF": iotest.DataErrReader,
	}
	for _, c := range cases {
		for name, wrap := range readers {
			got, err := io.ReadAll(NewLineEndReader(wrap(strings.NewReader(c.in))))
			if err != nil || string(got) != c.want {
				t.Errorf("%s %q: got %q, %v; want %q", name, c.in, got, err, c.want)
			}
		}
	}
}

// gzipBytes compresses data as one gzip member.
func gzipBytes(t testing.TB, data string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// writeTempBytes writes content to name in a new temporary directory.
// numberedCSV returns a CSV manifest of n rows, "request_id,what" then "r1,what 1" ...
func numberedCSV(n int) string {
	var b strings.Builder
	b.WriteString("request_id,what\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "r%d,what %d\n", i, i)
	}
	return b.String()
}

// numberedJSONL returns n JSON lines {"request_id":"r1","what":"what 1"} ...
// TestManifestTruncatedGzip: a manifest cut in the middle of its gzip stream yields every whole
// row, then one row error where the stream breaks, then io.EOF (for CSV and JSON Lines).
// TestManifestCorruptGzip: a second gzip member with a broken header, and a member whose CRC-32
// does not match its data, are findings where they are met.
// TestTextReaderTruncatedXZ: an xz stream cut short is a *DecodeError after its whole lines.
func TestTextReaderTruncatedXZ(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	xw, err := xz.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	// Hex digits compress to about half, so the LZMA2 chunks (at most 64 KiB compressed) are
	// many: the cut stream still holds whole ones.
	var b strings.Builder
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 10000 {
		fmt.Fprintf(&b, "r%d,%016x%016x\n", i, rng.Uint64(), rng.Uint64())
	}
	data := b.String()
	if _, err := xw.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if err := xw.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := NewTextReader(bytes.NewReader(buf.Bytes()[:buf.Len()/2]), CompressionXZ)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	var de *DecodeError
	if !errors.As(err, &de) || de.Compression != CompressionXZ || de.Lines != int64(bytes.Count(got, []byte{'\n'})) || de.Lines == 0 {
		t.Fatalf("err = %v (%d lines read)", err, bytes.Count(got, []byte{'\n'}))
	}
	if !strings.HasPrefix(data, string(got)) {
		t.Error("the decoded part differs from the data")
	}
	if _, again := r.Read(make([]byte, 10)); again != err {
		t.Errorf("not sticky: %v", again)
	}
}

// TestTextReaderSourceError: an I/O error of the file under the decompressor comes through as
// itself, not as a *DecodeError.
func TestTextReaderSourceError(t *testing.T) {
	t.Parallel()
	boom := errors.New("disk on fire")
	gz := gzipBytes(t, numberedCSV(5000))
	src := io.MultiReader(bytes.NewReader(gz[:len(gz)/2]), iotest.ErrReader(boom))
	r, err := NewTextReader(src, CompressionGzip)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(r)
	var de *DecodeError
	if err != boom || errors.As(err, &de) {
		t.Errorf("err = %#v, want the source's own error", err)
	}
}

// TestManifestCROnly: CSV and JSON Lines manifests with CR-only line ends read every row, with
// the right line numbers; a line break in a quoted field reads as LF.
// readValidated reads a manifest to the end and validates each record as Run does: it returns
// the good records and every row error, the reader's and Validate's, in file order.
// TestManifestMidFileBOM: a byte order mark anywhere but at the start of the file rejects its
// row, naming the line and the field: two CSV files joined (the second header and first row
// carry a BOM), a JSON line starting with one, a value holding one.
// TestTextReaderGzipCutInHeader: a .gz cut inside its header cannot be read at all; the error says
// the file is cut short, not only "unexpected EOF".
func TestTextReaderGzipCutInHeader(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte("request_id\nr1\n")); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := NewTextReader(bytes.NewReader(buf.Bytes()[:6]), CompressionGzip)
	if err == nil || !strings.Contains(err.Error(), "ends inside its gzip header") || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a .gz of 6 bytes: %v", err)
	}
}
