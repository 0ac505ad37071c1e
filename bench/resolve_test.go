package bench

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestResolveMix: the mix's shares of plain ARKs, suffixes, unknown names and ?info, and its
// two label forms, over a sample of keys; the same seed gives the same mix.
func TestResolveMix(t *testing.T) {
	keys := make([]string, 10000)
	for i := range keys {
		keys[i] = "99999/x9" + strconv.Itoa(i)
	}
	paths := resolveMix(keys, 1)
	if len(paths) != len(keys) {
		t.Fatalf("%d paths, want %d", len(paths), len(keys))
	}
	var suffix, unknown, info, classic, modern int
	for _, p := range paths {
		switch {
		case strings.HasSuffix(p, "/page/3.jpg"):
			suffix++
		case strings.Contains(p, "unknown"):
			unknown++
		case strings.HasSuffix(p, "?info"):
			info++
		case strings.HasPrefix(p, "/ark:/"):
			classic++
		case strings.HasPrefix(p, "/ark:99999/"):
			modern++
		default:
			t.Fatalf("path %q is of no kind of the mix", p)
		}
	}
	within := func(name string, got int, share float64) {
		if want := share * float64(len(paths)); float64(got) < 0.8*want || float64(got) > 1.2*want {
			t.Errorf("%s: %d of %d, want about %.0f", name, got, len(paths), want)
		}
	}
	within("suffix", suffix, 0.10)
	within("unknown", unknown, 0.05)
	within("info", info, 0.05)
	within("classic", classic, 0.40)
	within("modern", modern, 0.40)
	if again := resolveMix(keys, 1); strings.Join(again, "\n") != strings.Join(paths, "\n") {
		t.Error("the same seed drew another mix")
	}
}

// TestParseWrk reads the script's summary line among wrk's own output.
func TestParseWrk(t *testing.T) {
	out := "Running 10s test @ http://127.0.0.1:1\n  2 threads and 64 connections\nARKHE-WRK 200000 10000000 1 2 3 400 5 1500 9000\n"
	lr, err := parseWrk(out)
	if err != nil {
		t.Fatal(err)
	}
	if lr.Requests != 200000 || lr.Elapsed != 10*time.Second || lr.RPS != 20000 || lr.Errors != 11 || lr.Non2xx3xx != 400 ||
		lr.P50 != 1500*time.Microsecond || lr.P99 != 9*time.Millisecond {
		t.Errorf("parsed %+v", lr)
	}
	if _, err := parseWrk("no summary\n"); err == nil {
		t.Error("output without the summary line parsed")
	}
}
