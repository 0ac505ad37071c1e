package verify

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzBaselineFile: reading any bytes as a baseline file never panics; a file it accepts has no
// negative number, and writing it back and reading it again gives the same record.
func FuzzBaselineFile(f *testing.F) {
	f.Add([]byte(`{"format": "arkhe-verify-baseline/1", "at": "2026-12-03T02:00:04Z", "arks": 50, "high_water": 7000000050,
		"newest_ark": "ark:99999/x9b7", "shoulders": {"99999/x9": {"arks": 50, "draws": 52}}}`))
	f.Add([]byte(`{"format": "arkhe-verify-baseline/1"}`))
	f.Add([]byte(`{"format": "arkhe-verify-baseline/1", "arks": -1}`))
	f.Add([]byte(`{"format": "arkhe-verify-baseline/1", "shoulders": {"": {"draws": 1e3}}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "baseline.json")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := readBaselineFile(path)
		if err != nil {
			return
		}
		if got == nil {
			t.Fatal("an existing file read as none")
		}
		if got.ARKs < 0 || got.HighWater < 0 {
			t.Fatalf("accepted negative numbers: %+v", got)
		}
		for l, c := range got.Shoulders {
			if c.ARKs < 0 || c.Draws < 0 {
				t.Fatalf("accepted negative numbers for %q: %+v", l, c)
			}
		}
		if err := writeBaselineFile(path, got); err != nil {
			t.Fatal(err)
		}
		again, err := readBaselineFile(path)
		if err != nil {
			t.Fatalf("a file written from an accepted one is refused: %v", err)
		}
		if !got.At.Equal(again.At) {
			t.Fatalf("at %v read back as %v", got.At, again.At)
		}
		again.At = got.At
		if len(got.Shoulders) == 0 && len(again.Shoulders) == 0 {
			again.Shoulders = got.Shoulders
		}
		if !reflect.DeepEqual(got, again) {
			t.Fatalf("read back %+v, wrote %+v", again, got)
		}
	})
}
