package pipeline

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// mintMapRows are rows with awkward request IDs (quotes, comma, newline,
// non-ASCII) and enough of them to fill a Parquet row group.
func mintMapRows() []MintMapRow {
	rows := []MintMapRow{
		{RequestID: "A00001", ARK: "ark:99999/x9b2c4d6f8h", Status: StatusMinted, URL: ptr("https://example.org/a?x=1,2"),
			Who: ptr(`Ann "A" O'Neil`), What: ptr("Title\nwith a line break"), When: ptr("1901"), Commitment: ptr("kept")},
		{RequestID: `say "hi", then` + "\n" + "bye", ARK: "ark:99999/x9k7m3n5p1q", Status: StatusReplayed, What: ptr("é ‘x’ \u2028")},
		{RequestID: "cmoa:things/0014c57c-472d-4ad7-b930-216b5f16cca5", ARK: "ark:99999/x9zz", Status: StatusMinted},
		{RequestID: "é ‘x’ \u2028 \\ \t", ARK: "ark:99999/x9tab", Status: StatusMinted},
	}
	for i := range 200000 {
		rows = append(rows, MintMapRow{RequestID: fmt.Sprintf("req-%07d", i), ARK: fmt.Sprintf("ark:99999/x9%08d", i), Status: StatusMinted,
			URL: ptr(fmt.Sprintf("https://example.org/%d", i))})
	}
	return rows
}

func ptr(s string) *string { return &s }

// cell is the CSV text of an optional value.
func cell(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func writeMintMap(t *testing.T, path string, rows []MintMapRow) {
	t.Helper()
	w, err := CreateMintMap(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s visible before Close: %v", path, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if entries, err := os.ReadDir(filepath.Dir(path)); err != nil || len(entries) != 1 || entries[0].Name() != filepath.Base(path) {
		t.Errorf("after Close the directory holds %v (%v), want only %s", entries, err, filepath.Base(path))
	}
}

func TestMintMapCSV(t *testing.T) {
	t.Parallel()
	rows := mintMapRows()
	path := filepath.Join(t.TempDir(), "mintmap.csv")
	writeMintMap(t, path, rows)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	all, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(all[0], []string{"request_id", "ark", "status", "url", "who", "what", "when", "commitment"}) || len(all) != len(rows)+1 {
		t.Fatalf("header %q, %d lines", all[0], len(all))
	}
	for i, r := range rows {
		want := []string{r.RequestID, r.ARK, r.Status, cell(r.URL), cell(r.Who), cell(r.What), cell(r.When), cell(r.Commitment)}
		if got := all[i+1]; !reflect.DeepEqual(got, want) {
			t.Fatalf("row %d = %q, want %q", i+1, got, want)
		}
	}
}

func TestMintMapJSONL(t *testing.T) {
	t.Parallel()
	rows := mintMapRows()
	path := filepath.Join(t.TempDir(), "mintmap.jsonl")
	writeMintMap(t, path, rows)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	i := 0
	for sc.Scan() {
		var got MintMapRow
		if err := json.Unmarshal(sc.Bytes(), &got); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if !reflect.DeepEqual(got, rows[i]) {
			t.Fatalf("line %d = %+v, want %+v", i+1, got, rows[i])
		}
		i++
	}
	if sc.Err() != nil || i != len(rows) {
		t.Errorf("read %d lines, want %d (%v)", i, len(rows), sc.Err())
	}
}

func TestMintMapParquet(t *testing.T) {
	t.Parallel()
	rows := mintMapRows()
	path := filepath.Join(t.TempDir(), "mintmap.parquet")
	writeMintMap(t, path, rows)
	got, err := parquet.ReadFile[MintMapRow](path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rows) {
		t.Fatalf("read %d rows, want %d", len(got), len(rows))
	}
	for i := range rows {
		if !reflect.DeepEqual(got[i], rows[i]) {
			t.Fatalf("row %d = %+v, want %+v", i+1, got[i], rows[i])
		}
	}
	// Columns, compression and row groups as documented.
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	if cols := pf.Schema().Columns(); !reflect.DeepEqual(cols, [][]string{{"request_id"}, {"ark"}, {"status"}, {"url"}, {"who"}, {"what"}, {"when"}, {"commitment"}}) {
		t.Errorf("columns = %v", cols)
	}
	if n := len(pf.RowGroups()); n != 2 { // 200,004 rows in groups of 131,072
		t.Errorf("%d row groups, want 2", n)
	}
	for _, rg := range pf.Metadata().RowGroups {
		for _, c := range rg.Columns {
			if c.MetaData.Codec.String() != "ZSTD" {
				t.Errorf("column %v codec %v, want ZSTD", c.MetaData.PathInSchema, c.MetaData.Codec)
			}
		}
	}
	// The same rows read back through the manifest reader.
	r := mustOpen(t, path, "request_id=request_id,url=ark,what=status")
	rec, err := r.Next(t.Context())
	if err != nil || rec.RequestID != "A00001" || rec.URL != "ark:99999/x9b2c4d6f8h" || rec.What != "minted" {
		t.Errorf("first row via OpenManifest = %+v, %v", rec, err)
	}
}

func TestMintMapAbortAndErrors(t *testing.T) {
	t.Parallel()
	for _, ext := range []string{".csv", ".jsonl", ".parquet"} {
		dir := t.TempDir()
		path := filepath.Join(dir, "mintmap"+ext)
		w, err := CreateMintMap(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(MintMapRow{RequestID: "r", ARK: "ark:99999/x9a", Status: "new"}); err == nil {
			t.Errorf("%s: unknown status accepted", ext)
		}
		if err := w.Write(MintMapRow{RequestID: "", ARK: "ark:99999/x9a", Status: StatusMinted}); err == nil {
			t.Errorf("%s: empty request ID accepted", ext)
		}
		if err := w.Write(MintMapRow{RequestID: "r", ARK: "ark:99999/x9a", Status: StatusMinted}); err != nil {
			t.Fatal(err)
		}
		if err := w.Abort(); err != nil {
			t.Fatal(err)
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != 0 {
			t.Errorf("%s: Abort left %v", ext, entries)
		}
		if err := w.Close(); err != nil {
			t.Errorf("%s: Close after Abort = %v", ext, err)
		}
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: Close after Abort created the mint map", ext)
		}
	}
	if _, err := CreateMintMap(filepath.Join(t.TempDir(), "m.xlsx")); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("xlsx: %v", err)
	}
	if _, err := CreateMintMap(filepath.Join(t.TempDir(), "no", "dir", "m.csv")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing dir: %v", err)
	}
	// An earlier complete mint map stays until the new one is complete.
	dir := t.TempDir()
	path := filepath.Join(dir, "m.csv")
	if err := os.WriteFile(path, []byte("request_id,ark,status\nold,ark:99999/x9o,minted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, _ := CreateMintMap(path)
	_ = w.Write(MintMapRow{RequestID: "new", ARK: "ark:99999/x9n", Status: StatusMinted})
	_ = w.Abort()
	if b, _ := os.ReadFile(path); string(b) != "request_id,ark,status\nold,ark:99999/x9o,minted\n" {
		t.Errorf("aborted run changed the old mint map: %q", b)
	}
}
