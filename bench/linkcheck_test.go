package bench

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
)

// TestRunLinkCheckSmall runs the link-check benchmark at a small size against the test server:
// every target of each ledger is checked, recorded and good, and a second run finds nothing due.
func TestRunLinkCheckSmall(t *testing.T) {
	res, err := RunLinkCheck(context.Background(), LinkCheckConfig{Sizes: []int{300, 600}, Hosts: 30, Latency: time.Millisecond,
		Interval: 5 * time.Millisecond, Workers: 8, ServerURL: pgtest.URL(t), Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 2 || res.Settings["server_version"] == "" {
		t.Fatalf("result %+v", res)
	}
	for i, want := range []int{300, 600} {
		r := res.Runs[i]
		if r.ARKs != want || r.Checked != int64(want) || r.Summary.Good != int64(want) || r.Rate <= 0 || r.Commits < 1 ||
			r.Bound != 6000 || r.PeakLiveHeap == 0 {
			t.Errorf("run %d: %+v", i, r)
		}
	}
}
