package pipeline

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/arkhe-ledger/arkhe/textin"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

type pqManifestRow struct {
	ID    string   `parquet:"id"`
	Acno  int64    `parquet:"acno"`
	Title *string  `parquet:"title,optional"`
	URL   string   `parquet:"url"`
	Year  uint32   `parquet:"year"`
	Flag  bool     `parquet:"flag"`
	Size  float64  `parquet:"size"`
	Tags  []string `parquet:"tags,list"`
	Key   [16]byte `parquet:"key,uuid"`
}

// writeParquet writes rows to dir/name with small row groups and pages, so
// reading crosses row-group and page boundaries.
func writeParquet[T any](t testing.TB, name string, rows []T, opts ...parquet.WriterOption) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	opts = append([]parquet.WriterOption{parquet.Compression(&zstd.Codec{})}, opts...)
	w := parquet.NewGenericWriter[T](f, opts...)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParquetManifestRoundTrip(t *testing.T) {
	t.Parallel()
	title := "The Preaching of Warning"
	empty := ""
	var key [16]byte
	if _, err := hex.Decode(key[:], []byte("5cd94760c52a012fbcd43c075448cc4b")); err != nil {
		t.Fatal(err)
	}
	rows := []pqManifestRow{
		{ID: "A00001", Acno: 1035, Title: &title, URL: "http://www.tate.org.uk/a00001", Year: 4000000000, Flag: true, Size: 394.5, Tags: []string{"x"}, Key: key},
		{ID: "A00002", Acno: -7, Title: nil, URL: "", Year: 0, Flag: false, Size: 1e21},
		{ID: "A00003", Acno: 0, Title: &empty, URL: "http://www.tate.org.uk/a00003"},
	}
	p := writeParquet(t, "m.parquet", rows, parquet.MaxRowsPerRowGroup(2))
	r := mustOpen(t, p, "request_id=id,who=title,what=acno,when=year,url=url,commitment=flag")
	recs, bad := drainManifest(t, r)
	if len(recs) != 3 || len(bad) != 0 {
		t.Fatalf("records %d, bad %v", len(recs), bad)
	}
	want := []Record{
		{RequestID: "A00001", Who: title, What: "1035", When: "4000000000", URL: "http://www.tate.org.uk/a00001", Commitment: "true",
			Has: HasRequestID | HasWho | HasWhat | HasWhen | HasURL | HasCommitment, Source: textin.Location{File: p, Record: 1}},
		// NULL title and "" url are absent.
		{RequestID: "A00002", What: "-7", When: "0", Commitment: "false",
			Has: HasRequestID | HasWhat | HasWhen | HasCommitment, Source: textin.Location{File: p, Record: 2}},
		{RequestID: "A00003", What: "0", When: "0", URL: "http://www.tate.org.uk/a00003", Commitment: "false",
			Has: HasRequestID | HasWhat | HasWhen | HasURL | HasCommitment, Source: textin.Location{File: p, Record: 3}},
	}
	for i := range want {
		if recs[i] != want[i] {
			t.Errorf("record %d:\n got %+v\nwant %+v", i+1, recs[i], want[i])
		}
	}
	if s := recs[0].Source.String(); s != p+" (record 1)" {
		t.Errorf("Source.String() = %q", s)
	}
	// Floats and UUIDs become text too.
	r = mustOpen(t, p, "request_id=key,what=size")
	recs, _ = drainManifest(t, r)
	if recs[0].RequestID != "5cd94760-c52a-012f-bcd4-3c075448cc4b" || recs[0].What != "394.5" || recs[1].What != "1e+21" {
		t.Errorf("uuid/float records = %+v", recs[:2])
	}
}

func TestParquetManifestManyPages(t *testing.T) {
	t.Parallel()
	// 20,000 rows in 4 KiB pages and 3,000-row groups: every value must be
	// copied out before the next page replaces it.
	type row struct {
		ID   string `parquet:"request_id"`
		What string `parquet:"what"`
	}
	rows := make([]row, 20000)
	for i := range rows {
		rows[i] = row{ID: fmt.Sprintf("req-%06d", i), What: strings.Repeat(string(rune('a'+i%26)), i%50+1)}
	}
	p := writeParquet(t, "many.parquet", rows, parquet.PageBufferSize(4096), parquet.MaxRowsPerRowGroup(3000))
	recs, bad := drainManifest(t, mustOpen(t, p, ""))
	if len(recs) != len(rows) || len(bad) != 0 {
		t.Fatalf("read %d records, %d bad", len(recs), len(bad))
	}
	for i, rec := range recs {
		if rec.RequestID != rows[i].ID || rec.What != rows[i].What || rec.Source.Record != i+1 {
			t.Fatalf("record %d = %+v, want %+v", i+1, rec, rows[i])
		}
	}
}

func TestParquetManifestSchemaErrors(t *testing.T) {
	t.Parallel()
	p := writeParquet(t, "m.parquet", []pqManifestRow{{ID: "x"}})
	m, _ := ParseMapping("request_id=id,who=creator")
	_, err := OpenManifest(p, m)
	if !errors.Is(err, ErrMissingColumn) || !strings.Contains(err.Error(), `no leaf column "creator" for who`) {
		t.Errorf("missing column: %v", err)
	}
	m, _ = ParseMapping("request_id=id,who=tags.list.element")
	_, err = OpenManifest(p, m)
	if err == nil || !strings.Contains(err.Error(), "repeats (a list)") {
		t.Errorf("list column: %v", err)
	}
	_, err = OpenManifest(p, Mapping{}) // no request_id column
	var me *ManifestError
	if !errors.As(err, &me) || !errors.Is(err, ErrMissingColumn) {
		t.Errorf("default request_id: %v", err)
	}
	bogus := writeTemp(t, "bogus.parquet", "PAR1 not really")
	if _, err := OpenManifest(bogus, Mapping{}); !errors.As(err, &me) {
		t.Errorf("bogus file: %v", err)
	}
}

// TestParquetHostileFooter: a Parquet file whose footer claims more bytes than the file holds is
// refused when opened, before anything of that size is allocated (parquet-go would allocate the
// stated length, up to 4 GiB, first).
func TestParquetHostileFooter(t *testing.T) {
	p := writeParquet(t, "ok.parquet", []pqManifestRow{{ID: "A1", URL: "https://e.org/1"}})
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	n := len(b)
	b[n-8], b[n-7], b[n-6], b[n-5] = 0, 0, 0, 0xf0 // footer length 4,026,531,840
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = OpenManifest(p, Mapping{})
	runtime.ReadMemStats(&after)
	var me *ManifestError
	if !errors.As(err, &me) || !strings.Contains(err.Error(), fmt.Sprintf("parquet: footer length 4026531840 exceeds the file's %d bytes", n)) {
		t.Errorf("err = %v", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("opening allocated %d bytes", grew)
	}
	for _, cut := range [][]byte{b[:n-1], []byte("PAR1")} {
		if err := os.WriteFile(p, cut, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenManifest(p, Mapping{}); !errors.As(err, &me) || !strings.Contains(err.Error(), "truncated") {
			t.Errorf("%d bytes: %v", len(cut), err)
		}
	}
}
