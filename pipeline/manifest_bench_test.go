package pipeline

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/textin"
)

// benchRows is the size of the synthetic manifests.
const benchRows = 200000

// writeBenchCSV writes a manifest shaped like `arkhe bench mint` input:
// request_id,url,who,what,when with a quoted who.
func writeBenchCSV(b *testing.B) string {
	b.Helper()
	p := filepath.Join(b.TempDir(), "bench.csv")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "request_id,url,who,what,when")
	for i := range benchRows {
		fmt.Fprintf(w, "req-%08d,https://example.org/objects/%08d,\"Smith, John\",Title of object number %d,c. 1900\n", i, i, i)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return p
}

// benchRead reads path to the end b.N times and reports rows/s.
func benchRead(b *testing.B, path, mapping string) {
	b.Helper()
	m, err := ParseMapping(mapping)
	if err != nil {
		b.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	b.ReportAllocs()
	ctx := context.Background()
	rows := 0
	b.ResetTimer()
	for range b.N {
		r, err := OpenManifest(path, m)
		if err != nil {
			b.Fatal(err)
		}
		for {
			rec, err := r.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if rec.Has&HasRequestID == 0 {
				b.Fatal("record without request ID")
			}
			rows++
		}
		_ = r.Close()
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}

func BenchmarkReadCSV(b *testing.B) {
	benchRead(b, writeBenchCSV(b), "")
}

// BenchmarkReadCSVWide reads the 33-column NYPL CSV (932 rows).
func BenchmarkReadCSVWide(b *testing.B) {
	benchRead(b, fixtures.SharedData(b, "nypl-publicdomain/pd_collections.csv"), nyplCSVMapping)
}

// BenchmarkReadJSONL reads the Tate artworks (69,202 real lines, 1.7 KB
// each, mostly unmapped subject trees) uncompressed.
func BenchmarkReadJSONL(b *testing.B) {
	src, err := os.Open(fixtures.SharedData(b, "tategallery-collection/artworks.jsonl.gz"))
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	zr, err := gzip.NewReader(src)
	if err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(b.TempDir(), "tate.jsonl")
	dst, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(dst, zr); err != nil {
		b.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		b.Fatal(err)
	}
	benchRead(b, p, tateMapping)
}

// BenchmarkReadJSONLGzip reads the real Tate file as shipped (gzip).
func BenchmarkReadJSONLGzip(b *testing.B) {
	benchRead(b, fixtures.SharedData(b, "tategallery-collection/artworks.jsonl.gz"), tateMapping)
}

// BenchmarkReadJSONLSmall reads short JSON lines shaped like the CSV bench.
func BenchmarkReadJSONLSmall(b *testing.B) {
	benchRead(b, writeBenchJSONL(b), "")
}

// BenchmarkReadJSONLSmallEncodingJSON is the library baseline for BenchmarkReadJSONLSmall: the
// same lines decoded with encoding/json into a map, the five fields taken out as strings. It is
// why jsonmanifest.go scans only the mapped keys itself.
func BenchmarkReadJSONLSmallEncodingJSON(b *testing.B) {
	p := writeBenchJSONL(b)
	st, err := os.Stat(p)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	b.ReportAllocs()
	rows := 0
	b.ResetTimer()
	for range b.N {
		f, err := os.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				b.Fatal(err)
			}
			var r Record
			for _, k := range []string{"request_id", "url", "who", "what", "when"} {
				if v, ok := m[k].(string); ok {
					switch k {
					case "request_id":
						r.RequestID = v
					case "url":
						r.URL = v
					case "who":
						r.Who = v
					case "what":
						r.What = v
					case "when":
						r.When = v
					}
				}
			}
			rows++
		}
		_ = f.Close()
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}

// writeBenchJSONL writes benchRows short JSON lines with the five default fields.
func writeBenchJSONL(b *testing.B) string {
	b.Helper()
	p := filepath.Join(b.TempDir(), "bench.jsonl")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := range benchRows {
		fmt.Fprintf(w, `{"request_id":"req-%08d","url":"https://example.org/objects/%08d","who":"Smith, John","what":"Title of object number %d","when":"c. 1900"}`+"\n", i, i, i)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	_ = f.Close()
	return p
}

func BenchmarkReadParquet(b *testing.B) {
	type row struct {
		RequestID string `parquet:"request_id"`
		URL       string `parquet:"url"`
		Who       string `parquet:"who"`
		What      string `parquet:"what"`
		When      string `parquet:"when"`
	}
	rows := make([]row, benchRows)
	for i := range rows {
		rows[i] = row{fmt.Sprintf("req-%08d", i), fmt.Sprintf("https://example.org/objects/%08d", i), "Smith, John", fmt.Sprintf("Title of object number %d", i), "c. 1900"}
	}
	benchRead(b, writeParquet(b, "bench.parquet", rows), "")
}

func BenchmarkValidate(b *testing.B) {
	var r Record
	r.Set(FieldRequestID, "req-00000001")
	r.Set(FieldURL, "https://example.org/objects/00000001")
	r.Set(FieldWho, "Smith, John")
	r.Set(FieldWhat, "Title of object number 1")
	r.Set(FieldWhen, "c. 1900")
	lim := textin.DefaultLimits()
	b.ReportAllocs()
	for range b.N {
		if err := Validate(&r, lim); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPayloadDigest(b *testing.B) {
	var r Record
	r.Set(FieldRequestID, "req-00000001")
	r.Set(FieldURL, "https://example.org/objects/00000001")
	r.Set(FieldWho, "Smith, John")
	r.Set(FieldWhat, "Title of object number 1")
	r.Set(FieldWhen, "c. 1900")
	b.ReportAllocs()
	for range b.N {
		_ = PayloadDigest(&r)
	}
}
