package verify

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"testing"
)

// copyStream builds a binary COPY stream of tuples with the given fields (nil is NULL).
func copyStream(tuples [][][]byte) []byte {
	var b bytes.Buffer
	b.WriteString(copySignature)
	b.Write([]byte{0, 0, 0, 0, 0, 0, 0, 0})
	for _, t := range tuples {
		binary.Write(&b, binary.BigEndian, int16(len(t)))
		for _, f := range t {
			if f == nil {
				binary.Write(&b, binary.BigEndian, int32(-1))
				continue
			}
			binary.Write(&b, binary.BigEndian, int32(len(f)))
			b.Write(f)
		}
	}
	binary.Write(&b, binary.BigEndian, int16(-1))
	return b.Bytes()
}

// split feeds data to a splitter in pieces of size step and returns the batches' tuples.
func split(data []byte, fields, step int) ([][]byte, error) {
	out := make(chan []byte, 1<<16)
	sp := newCopySplitter(context.Background(), fields, out, make(chan []byte, 1))
	for len(data) > 0 {
		n := min(step, len(data))
		if _, err := sp.Write(data[:n]); err != nil {
			return nil, err
		}
		data = data[n:]
	}
	if err := sp.finish(); err != nil {
		return nil, err
	}
	close(out)
	var fieldsOut [][]byte
	for b := range out {
		r := tupleReader{b: b}
		for r.next() {
			for range fields {
				fieldsOut = append(fieldsOut, r.field())
			}
		}
	}
	return fieldsOut, nil
}

func TestCopySplitter(t *testing.T) {
	t.Parallel()
	var tuples [][][]byte
	for i := 0; i < 20000; i++ { // over several batches
		tuples = append(tuples, [][]byte{[]byte("99999/x9" + string(rune('a'+i%26))), nil, {byte(i)}})
	}
	data := copyStream(tuples)
	for _, step := range []int{1, 7, 4096, len(data)} {
		got, err := split(data, 3, step)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if len(got) != 3*len(tuples) {
			t.Fatalf("step %d: %d fields, want %d", step, len(got), 3*len(tuples))
		}
		for i, tu := range tuples {
			for j, f := range tu {
				if !bytes.Equal(got[3*i+j], f) || (f == nil) != (got[3*i+j] == nil) {
					t.Fatalf("step %d: tuple %d field %d = %q, want %q", step, i, j, got[3*i+j], f)
				}
			}
		}
	}
	for name, bad := range map[string][]byte{
		"truncated":    data[:len(data)-5],
		"no trailer":   data[:len(data)-2],
		"signature":    append([]byte("PGCOPX"), data[6:]...),
		"after end":    append(append([]byte{}, data...), 0),
		"field count":  copyStream([][][]byte{{[]byte("a")}}),
		"empty stream": nil,
	} {
		if _, err := split(bad, 3, 5); !errors.Is(err, errCopyFormat) {
			t.Errorf("%s: %v, want errCopyFormat", name, err)
		}
	}
}

// FuzzCopySplitter: arbitrary input never panics; it is either refused with errCopyFormat or
// split into whole tuples of the expected field count.
func FuzzCopySplitter(f *testing.F) {
	f.Add(copyStream([][][]byte{{[]byte("k"), nil}}), 3)
	f.Add(copyStream(nil), 1)
	f.Add([]byte("PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x04\x00\x02\x00\x00\x00\x01a\xff\xff"), 2)
	f.Fuzz(func(t *testing.T, data []byte, step int) {
		if step < 1 || step > 1<<20 {
			step = 1 + len(data)
		}
		got, err := split(data, 2, step)
		if err != nil {
			if !errors.Is(err, errCopyFormat) {
				t.Fatalf("error %v does not wrap errCopyFormat", err)
			}
			return
		}
		if len(got)%2 != 0 {
			t.Fatalf("%d fields for 2-field tuples", len(got))
		}
	})
}

func TestParseSnapshot(t *testing.T) {
	t.Parallel()
	xmin, xmax, xip, err := parseSnapshot("10:20:12,15")
	if err != nil || xmin != 10 || xmax != 20 || len(xip) != 2 || xip[0] != 12 || xip[1] != 15 {
		t.Errorf("parseSnapshot = %d %d %v %v", xmin, xmax, xip, err)
	}
	if _, _, xip, err := parseSnapshot("5:5:"); err != nil || xip != nil {
		t.Errorf("empty xip: %v %v", xip, err)
	}
	for _, bad := range []string{"", "1:2", "a:2:", "3:2:", "1:2:x", "1:2:3:4"} {
		if _, _, _, err := parseSnapshot(bad); err == nil {
			t.Errorf("parseSnapshot(%q) accepted", bad)
		}
	}
}

// FuzzParseSnapshot: never panics; accepted input has xmin <= xmax.
func FuzzParseSnapshot(f *testing.F) {
	f.Add("10:20:12,15")
	f.Add("1:1:")
	f.Fuzz(func(t *testing.T, s string) {
		xmin, xmax, _, err := parseSnapshot(s)
		if err == nil && xmin > xmax {
			t.Fatalf("accepted %q with xmin %d > xmax %d", s, xmin, xmax)
		}
	})
}
