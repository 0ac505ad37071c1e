package pipeline

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

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
