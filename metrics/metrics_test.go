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

// TestHistogram: le buckets are cumulative and inclusive of their bound, +Inf holds every
// observation, _sum and _count follow, and the text is what Prometheus parses.
func TestHistogram(t *testing.T) {
	h, err := NewHistogram([]float64{0.001, 0.01, 0.1})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []float64{0.0005, 0.001, 0.002, 0.05, 0.05, 3} {
		h.Observe(v)
	}
	if h.Count() != 6 {
		t.Errorf("Count %d, want 6", h.Count())
	}
	if got, want := h.Sum(), 0.0005+0.001+0.002+0.05+0.05+3; math.Abs(got-want) > 1e-12 {
		t.Errorf("Sum %v, want %v", got, want)
	}
	var b strings.Builder
	if err := Encode(&b, []Family{h.Family("arkhe_x_seconds", "latency", Label{"route", "ark"})}); err != nil {
		t.Fatal(err)
	}
	want := `# HELP arkhe_x_seconds latency
# TYPE arkhe_x_seconds histogram
arkhe_x_seconds_bucket{route="ark",le="0.001"} 2
arkhe_x_seconds_bucket{route="ark",le="0.01"} 3
arkhe_x_seconds_bucket{route="ark",le="0.1"} 5
arkhe_x_seconds_bucket{route="ark",le="+Inf"} 6
arkhe_x_seconds_sum{route="ark"} 3.1035
arkhe_x_seconds_count{route="ark"} 6
`
	if b.String() != want {
		t.Errorf("histogram:\n%s\nwant:\n%s", b.String(), want)
	}
	for _, bad := range [][]float64{nil, {1, 1}, {2, 1}, {math.NaN()}, {1, math.Inf(1)}} {
		if _, err := NewHistogram(bad); !IsBucketError(err) {
			t.Errorf("NewHistogram(%v): %v, want a BucketError", bad, err)
		}
	}
	// a suffix outside a histogram, or an unknown one inside, is refused
	if err := Encode(&strings.Builder{}, []Family{{Name: "a", Type: Counter, Samples: []Sample{{Suffix: "_sum"}}}}); !IsNameError(err) {
		t.Errorf("counter with a suffix: %v", err)
	}
	if err := Encode(&strings.Builder{}, []Family{{Name: "a", Type: HistogramType, Samples: []Sample{{Suffix: "_total"}}}}); !IsNameError(err) {
		t.Errorf("histogram with suffix _total: %v", err)
	}
}

// TestHistogramConcurrent: observations from many goroutines are all counted and summed.
func TestHistogramConcurrent(t *testing.T) {
	h, err := NewHistogram([]float64{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	const goroutines, each = 8, 1000
	done := make(chan struct{})
	for g := 0; g < goroutines; g++ {
		go func() {
			for i := 0; i < each; i++ {
				h.Observe(1.5)
			}
			done <- struct{}{}
		}()
	}
	for g := 0; g < goroutines; g++ {
		<-done
	}
	if h.Count() != goroutines*each || h.Sum() != 1.5*goroutines*each {
		t.Errorf("Count %d Sum %v, want %d and %v", h.Count(), h.Sum(), goroutines*each, 1.5*goroutines*each)
	}
}
