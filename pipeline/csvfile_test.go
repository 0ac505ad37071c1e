package pipeline

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCSVFileMarkRewindClose(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "r.csv")
	w := NewCSVFile(path, []string{"a", "b"})
	if _, err := w.Mark(); err != nil { // before the file exists
		t.Fatal(err)
	}
	for _, rec := range [][]string{{"1", "x"}, {"2", "y"}} {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	m2, err := w.Mark()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write([]string{"3", "z"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Rewind(m2); err != nil || w.Count() != 2 {
		t.Fatalf("rewind to 2 records: %v, count %d", err, w.Count())
	}
	if err := w.Write([]string{"4", "w"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("final file exists before Close: %v", err)
	}
	written, err := w.Close()
	if err != nil || !written {
		t.Fatalf("close: written %v, %v", written, err)
	}
	b, _ := os.ReadFile(path)
	if got, want := string(b), "a,b\n1,x\n2,y\n4,w\n"; got != want {
		t.Fatalf("file %q, want %q", got, want)
	}

	// a later run that writes and rewinds to before its first record leaves nothing, and
	// removes the stale file of the same header
	w = NewCSVFile(path, []string{"a", "b"})
	m0, _ := w.Mark()
	_ = w.Write([]string{"5", "v"})
	if err := w.Rewind(m0); err != nil {
		t.Fatal(err)
	}
	if written, err := w.Close(); err != nil || written {
		t.Fatalf("close after rewinding everything: written %v, %v", written, err)
	}
	for _, p := range []string{path, path + ".tmp"} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s still exists: %v", p, err)
		}
	}

	// a file at the path with another header is not ours: kept
	other := []byte("something,else\n")
	if err := os.WriteFile(path, other, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewCSVFile(path, []string{"a", "b"}).Close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != string(other) {
		t.Errorf("foreign file changed: %q", b)
	}
}
