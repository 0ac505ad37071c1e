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
