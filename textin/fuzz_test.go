package textin

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// lineEndsReference applies NewLineEndReader's rule to a whole string: when the first line end
// is a CR not followed by LF, every CRLF, CR and LF becomes one LF; otherwise nothing changes.
func lineEndsReference(s string) string {
	i := strings.IndexAny(s, "\r\n")
	if i < 0 || s[i] == '\n' || i+1 < len(s) && s[i+1] == '\n' {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(s, "\r", "\n")
}

// FuzzLineEndReader compares NewLineEndReader, read in pieces of every size, with the rule
// applied to the whole input at once.
func FuzzLineEndReader(f *testing.F) {
	for _, s := range []string{"", "a\rb", "a\r\nb\rc", "a\rb\r\nc\nd", "\r", "\r\r\n\n", "x\n\ry\r"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want := lineEndsReference(string(data))
		for name, r := range map[string]io.Reader{
			"whole":    bytes.NewReader(data),
			"one byte": iotest.OneByteReader(bytes.NewReader(data)),
			"half":     iotest.HalfReader(bytes.NewReader(data)),
			"data+EOF": iotest.DataErrReader(bytes.NewReader(data)),
		} {
			got, err := io.ReadAll(NewLineEndReader(r))
			if err != nil || string(got) != want {
				t.Fatalf("%s: %q -> %q, %v; want %q", name, data, got, err, want)
			}
		}
	})
}

// FuzzTextReader feeds any bytes to the gzip and xz decoders: opening fails, or reading ends in
// io.EOF or one sticky *DecodeError that counts the line ends handed on; never a panic.
func FuzzTextReader(f *testing.F) {
	f.Add(gzipBytes(f, "request_id\n1\n2\n"))
	f.Add(gzipBytes(f, "request_id\n1\n2\n")[:20])
	f.Add(append(gzipBytes(f, "a\n"), 0x1f, 0x8b, 8, 0))
	f.Add([]byte("\xfd7zXZ\x00\x00\x04\xe6\xd6\xb4F"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, c := range []Compression{CompressionGzip, CompressionXZ} {
			r, err := NewTextReader(bytes.NewReader(data), c)
			if err != nil {
				continue
			}
			got, err := io.ReadAll(io.LimitReader(r, 1<<20))
			if err == nil {
				continue // the stream ended cleanly (or is longer than the limit)
			}
			var de *DecodeError
			if !errors.As(err, &de) || de.Compression != c || de.Lines != int64(bytes.Count(got, []byte{'\n'})) {
				t.Fatalf("%s: %v after %d line ends", c, err, bytes.Count(got, []byte{'\n'}))
			}
			if _, again := r.Read(make([]byte, 8)); again != err {
				t.Fatalf("%s: not sticky: %v then %v", c, err, again)
			}
		}
	})
}

// FuzzCSVScanner checks the scanner's contract on any input with a small bound: every call
// returns a record, a *CSVError or io.EOF; record lines never go back; no field of a record
// starting on a line read again spans lines; the number of calls is bounded by the input's
// lines (each line is read at most twice).
func FuzzCSVScanner(f *testing.F) {
	for _, s := range []string{"a,b\n", "a,\"b\nc\"\n", "a,\"b\nc,d\n", "a,\"x\"y\nb\n", "\"\"\"\"\n", "a,\"" + strings.Repeat("x\n", 30)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sc := NewCSVScanner(bytes.NewReader(data), 40, false)
		lines := bytes.Count(data, []byte{'\n'}) + 1
		prev := 0
		for calls := 0; ; calls++ {
			if calls > 2*lines+2 {
				t.Fatalf("%d calls for %d lines", calls, lines)
			}
			fields, line, err := sc.Scan()
			if errors.Is(err, io.EOF) {
				return
			}
			var ce *CSVError
			switch {
			case err == nil:
				if len(fields) == 0 || line < 1 || line > lines {
					t.Fatalf("record %q on line %d of %d", fields, line, lines)
				}
			case errors.As(err, &ce):
				if ce.StartLine < 1 || ce.Line < ce.StartLine || ce.Err == nil || ce.Error() == "" {
					t.Fatalf("bad error %+v", ce)
				}
				line = ce.StartLine
			default:
				t.Fatalf("error %T %v", err, err)
			}
			if line < prev {
				// Lines read again come after the broken record's first line only.
				t.Fatalf("line %d after line %d", line, prev)
			}
			prev = line
		}
	})
}
