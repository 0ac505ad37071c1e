package bench_test

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/bench"
	"github.com/arkhe-ledger/arkhe/fixtures"
)

func TestGenerateRows(t *testing.T) {
	t.Parallel()
	a, err := bench.GenerateRows("99999", "/x9", 5000, 7)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bench.GenerateRows("99999", "x9", 5000, 7)
	if err != nil {
		t.Fatal(err)
	}
	if a.Shoulder != "/x9" || b.Shoulder != "/x9" {
		t.Errorf("shoulder %q / %q, want /x9", a.Shoulder, b.Shoulder)
	}
	seen := map[string]bool{}
	for i := range a.Rows {
		if a.Rows[i] != b.Rows[i] {
			t.Fatalf("row %d differs for the same seed: %+v / %+v", i, a.Rows[i], b.Rows[i])
		}
		key := a.Key(i)
		if seen[key] {
			t.Fatalf("duplicate key %s", key)
		}
		seen[key] = true
		parsed, err := ark.ParseKey(key)
		if err != nil || !ark.Verify(parsed, ark.ZoneNAANName) {
			t.Fatalf("row %d key %s: %v (check character must verify)", i, key, err)
		}
	}
	c, _ := bench.GenerateRows("99999", "/x9", 10, 8)
	if c.Rows[0].Name == a.Rows[0].Name {
		t.Errorf("another seed drew the same first name %s", c.Rows[0].Name)
	}
	f := a.Fields()
	// Tate-like: url ~60, title ~40, who ~20, when ~4
	for _, x := range []struct {
		what      string
		got, want float64
	}{{"url", f.URL, 60}, {"title", f.What, 40}, {"who", f.Who, 20}, {"when", f.When, 5}} {
		if x.got < 0.8*x.want || x.got > 1.2*x.want {
			t.Errorf("average %s %.1f octets, want about %.0f", x.what, x.got, x.want)
		}
	}
	if f.Key() != 17 || f.RequestID != 7 || f.URLShare != 1 {
		t.Errorf("fields %+v", f)
	}
}

func TestReadTate(t *testing.T) {
	t.Parallel()
	path := fixtures.SharedData(t, "tategallery-collection", "artworks.jsonl.gz")
	set, err := bench.ReadTate(t.Context(), path, 2000, "99999", "/x9", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Rows) != 2000 {
		t.Fatalf("%d rows, want 2000", len(set.Rows))
	}
	r := set.Rows[0]
	if r.RequestID != "A00001" || !strings.HasPrefix(r.URL, "http://www.tate.org.uk/art/artworks/") || r.Who != "Robert Blake" ||
		r.When != "date not known" || !strings.HasPrefix(r.What, "A Figure Bowing") {
		t.Errorf("first row %+v", r)
	}
	if !strings.HasPrefix(r.Name, "x9") || len(r.Name) != 11 {
		t.Errorf("name %q", r.Name)
	}
}

func TestReadTateErrorsNameTheLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.jsonl.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	gz := gzip.NewWriter(f)
	gz.Write([]byte(`{"acno":"A1","title":"t","url":"http://x/1"}` + "\n" + `{"acno":"A2","title":` + "\n"))
	gz.Close()
	f.Close()
	_, err = bench.ReadTate(t.Context(), path, 0, "99999", "/x9", 1)
	if err == nil || !strings.Contains(err.Error(), path+" line 2") {
		t.Errorf("error %v, want one naming %s line 2", err, path)
	}
	noID := filepath.Join(dir, "noid.jsonl")
	os.WriteFile(noID, []byte(`{"title":"t"}`+"\n"), 0o644)
	_, err = bench.ReadTate(t.Context(), noID, 0, "99999", "/x9", 1)
	if err == nil || !strings.Contains(err.Error(), "line 1: field acno") {
		t.Errorf("error %v, want one naming line 1 and field acno", err)
	}
}
