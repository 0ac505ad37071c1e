package pipeline

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/arkhe-ledger/arkhe/textin"
	"github.com/parquet-go/parquet-go"
)

// FuzzParquetManifest opens any bytes as a Parquet manifest: an open error (a *ManifestError),
// or records, row errors and io.EOF; never a panic.
func FuzzParquetManifest(f *testing.F) {
	type row struct {
		ID    string  `parquet:"request_id"`
		URL   *string `parquet:"url,optional"`
		Title string  `parquet:"what"`
	}
	u := "https://example.org/1"
	for _, rows := range [][]row{{{ID: "a", URL: &u, Title: "t"}, {ID: "b"}}, {{ID: "\x00\xff"}}} {
		var buf bytes.Buffer
		w := parquet.NewGenericWriter[row](&buf)
		if _, err := w.Write(rows); err != nil {
			f.Fatal(err)
		}
		if err := w.Close(); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
		b := buf.Bytes()
		f.Add(b[:len(b)/2])
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "fuzz.parquet")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := OpenManifest(p, Mapping{})
		if err != nil {
			var me *ManifestError
			if !errors.As(err, &me) {
				t.Fatalf("open error %T %v", err, err)
			}
			return
		}
		defer r.Close()
		for n := 0; n < 1_000_000; n++ {
			_, err := r.Next(context.Background())
			if errors.Is(err, io.EOF) {
				return
			}
			var re *textin.RowError
			var me *ManifestError
			switch {
			case err == nil, errors.As(err, &re):
			case errors.As(err, &me):
				return
			default:
				t.Fatalf("error %T %v", err, err)
			}
		}
		t.Fatal("reader does not end")
	})
}

// FuzzMintMap opens any bytes as a mint map, in each of its formats (the first byte picks it):
// an open error (a *ManifestError), or rows, row errors naming a field and io.EOF; never a panic.
func FuzzMintMap(f *testing.F) {
	f.Add([]byte("0request_id,ark,status,url,who,what,when,commitment\nr1,ark:99999/x9a,minted,https://example.org/,,,,\n,ark:/x,new\n"))
	f.Add([]byte("0request_id,ark,status\nr1,ark:99999/x9a,replayed\n\"r2,\n"))
	f.Add([]byte(`1{"request_id":"r1","ark":"ark:99999/x9a","status":"minted","url":null,"who":"w","what":null,"when":null,"commitment":null}` + "\n{\"ark\":3}\n"))
	dir := f.TempDir()
	var buf bytes.Buffer
	w, err := CreateMintMap(filepath.Join(dir, "seed.parquet"))
	if err != nil {
		f.Fatal(err)
	}
	u := "https://example.org/1"
	_ = w.Write(MintMapRow{RequestID: "r1", ARK: "ark:99999/x9a", Status: StatusMinted, URL: &u})
	if err := w.Close(); err != nil {
		f.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "seed.parquet"))
	if err != nil {
		f.Fatal(err)
	}
	buf.WriteByte('2')
	buf.Write(b)
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		p := filepath.Join(dir, "fuzz"+[]string{".csv", ".jsonl", ".parquet"}[int(data[0])%3])
		if err := os.WriteFile(p, data[1:], 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := OpenMintMap(p)
		if err != nil {
			var me *ManifestError
			if !errors.As(err, &me) {
				t.Fatalf("open error %T %v", err, err)
			}
			return
		}
		defer r.Close()
		for n := 0; n < 1_000_000; n++ {
			e, err := r.Next(context.Background())
			if errors.Is(err, io.EOF) {
				return
			}
			var re *textin.RowError
			var me *ManifestError
			switch {
			case err == nil:
				if e.RequestID == "" || e.ARK == "" || (e.Status != StatusMinted && e.Status != StatusReplayed) {
					t.Fatalf("row without request ID, ARK or status accepted: %+v", e)
				}
			case errors.As(err, &re):
				if re.Loc.File != p {
					t.Fatalf("row error without the file: %v", re)
				}
			case errors.As(err, &me):
				return
			default:
				t.Fatalf("error %T %v", err, err)
			}
		}
		t.Fatal("reader does not end")
	})
}

// FuzzChangeManifest opens any bytes as a change manifest (the first byte picks CSV, JSON Lines,
// Parquet, or CSV or JSON Lines gzip-compressed and cut short): an open error (a
// *ManifestError), or rows, row errors naming the file and io.EOF; never a panic, and every
// accepted row's columns and values are valid UTF-8.
func FuzzChangeManifest(f *testing.F) {
	f.Add([]byte("0ark,url,what\nark:/99999/x91,https://a.example.org/,\nark:/99999/x92,x\n\"bad,\n"))
	f.Add([]byte("0\ufeff\"ark\",url\nark:/99999/x91,caf\xe9\n"))
	f.Add([]byte("1{\"ark\":\"ark:/99999/x91\",\"url\":null,\"what\":\"\\u00e9\"}\n{\"ark\":\"a\",\"ark\":\"b\"}\n{\"ark\":\"\\ud800\"}\n"))
	f.Add([]byte("3ark,url\nark:/99999/x91,https://a.example.org/\nark:/99999/x92,https://b.example.org/\n"))
	f.Add([]byte("4{\"ark\":\"ark:/99999/x91\"}\n{\"ark\":\"ark:/99999/x92\"}\n"))
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[changeWhat](&buf)
	if _, err := w.Write([]changeWhat{{ARK: "ark:/99999/x91", What: "t"}, {ARK: "ark:/99999/x92", What: "\xff"}}); err != nil {
		f.Fatal(err)
	}
	if err := w.Close(); err != nil {
		f.Fatal(err)
	}
	f.Add(append([]byte("2"), buf.Bytes()...))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		kind, body := int(data[0])%5, data[1:]
		p := filepath.Join(dir, "fuzz"+[]string{".csv", ".jsonl", ".parquet", ".csv.gz", ".jsonl.gz"}[kind])
		if kind >= 3 {
			var gz bytes.Buffer
			zw := gzip.NewWriter(&gz)
			_, _ = zw.Write(body)
			_ = zw.Close()
			body = gz.Bytes()
			if data[0]&0x80 != 0 {
				body = body[:len(body)*int(data[0]&0x7)/8]
			}
		}
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := OpenChangeManifest(p, map[string]string{"url": "link"}, "ark")
		if err != nil {
			var me *ManifestError
			if !errors.As(err, &me) {
				t.Fatalf("open error %T %v", err, err)
			}
			return
		}
		defer r.Close()
		for n := 0; n < 1_000_000; n++ {
			row, rerr, err := r.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			var me *ManifestError
			switch {
			case err != nil && errors.As(err, &me):
				return
			case err != nil:
				t.Fatalf("error %T %v", err, err)
			case rerr != nil:
				if rerr.Loc.File != p {
					t.Fatalf("row error without the file: %v", rerr)
				}
			default:
				if row.Loc.File != p {
					t.Fatalf("row without the file: %+v", row)
				}
				for k, v := range row.Cols {
					if !utf8.ValidString(k) || !utf8.ValidString(v) {
						t.Fatalf("row with invalid UTF-8 accepted: %q=%q", k, v)
					}
				}
			}
		}
		t.Fatal("reader does not end")
	})
}
