package metrics

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEncodeAndWrite(t *testing.T) {
	fams := []Family{
		G("arkhe_x_total_seconds", "how long\nit took", 1.5),
		{Name: "arkhe_x_checks", Help: `checks by "outcome"`, Type: Gauge, Samples: []Sample{
			{Labels: []Label{{"outcome", "good"}}, Value: 3},
			{Labels: []Label{{"outcome", "fa\"il\\ed\n"}, {"host", "a.example"}}, Value: math.Inf(1)},
		}},
		{Name: "arkhe_x_empty", Help: "no samples", Type: Counter},
	}
	path := filepath.Join(t.TempDir(), "arkhe.prom")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, fams); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := `# HELP arkhe_x_total_seconds how long\nit took
# TYPE arkhe_x_total_seconds gauge
arkhe_x_total_seconds 1.5
# HELP arkhe_x_checks checks by "outcome"
# TYPE arkhe_x_checks gauge
arkhe_x_checks{outcome="good"} 3
arkhe_x_checks{outcome="fa\"il\\ed\n",host="a.example"} +Inf
`
	if string(b) != want {
		t.Errorf("file:\n%s\nwant:\n%s", b, want)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Errorf("directory holds %d files, want the metrics file only", len(ents))
	}
	// a bad name leaves the old file as it was
	var ne *NameError
	if err := Write(path, []Family{G("bad-name", "", 1)}); !errors.As(err, &ne) {
		t.Fatalf("bad name: %v", err)
	}
	if b2, _ := os.ReadFile(path); string(b2) != want {
		t.Error("a failed Write changed the file")
	}
	if err := Encode(&strings.Builder{}, []Family{{Name: "a", Samples: []Sample{{Labels: []Label{{"__x", "v"}}}}}}); !errors.As(err, &ne) {
		t.Errorf("reserved label: %v", err)
	}
	if err := Encode(&strings.Builder{}, []Family{G("a", "", 1), G("a", "", 2)}); !errors.As(err, &ne) {
		t.Errorf("duplicate family: %v", err)
	}
}
