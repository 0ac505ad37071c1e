package linkcheck

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

// TestHostTableBounded: hosts leave the table once idle and past their
// interval, so it holds only hosts with work.
func TestHostTableBounded(t *testing.T) {
	t.Parallel()
	cfg, err := Config{Contact: testContact, PerHostInterval: time.Hour}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	s := newSched(cfg, time.Now())
	ctx := t.Context()
	for i := range 100 {
		key := "h" + strconv.Itoa(i) + ".example"
		if !s.admit(ctx, key, item{t: Target{Key: key}}) {
			t.Fatal("admit refused")
		}
	}
	s.sourceDone()
	for range 100 {
		_, h, ok := s.next(ctx)
		if !ok {
			t.Fatal("next ended early")
		}
		s.release(h, time.Now(), 0)
	}
	if _, _, ok := s.next(ctx); ok {
		t.Fatal("a 101st target")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.hosts) != 100 || len(s.cooling) != 100 {
		t.Fatalf("%d hosts, %d cooling; want 100 within their interval", len(s.hosts), len(s.cooling))
	}
	s.evict(time.Now().Add(2 * time.Hour))
	if len(s.hosts) != 0 || len(s.cooling) != 0 || len(s.runnable) != 0 {
		t.Errorf("%d hosts left after their intervals passed", len(s.hosts))
	}
	if len(s.stats) != 100 || s.stats["h7.example"].Seen != 1 || s.stats["h7.example"].Requests != 1 {
		t.Errorf("stats %d, %+v", len(s.stats), s.stats["h7.example"])
	}
}

func TestHostCap(t *testing.T) {
	t.Parallel()
	cfg, _ := Config{Contact: testContact, HostQueue: 50, MaxDuration: 10 * time.Second,
		HostIntervals: map[string]time.Duration{"slow.example": 5 * time.Second}}.withDefaults()
	now := time.Now()
	s := newSched(cfg, now)
	if c := s.hostCap(&host{interval: time.Second}, now); c != 11 {
		t.Errorf("10 s left at 1 s: cap %d, want 11", c)
	}
	if c := s.hostCap(&host{interval: 100 * time.Millisecond}, now); c != 50 {
		t.Errorf("10 s left at 100 ms: cap %d, want HostQueue 50", c)
	}
	if c := s.hostCap(&host{interval: time.Second}, now.Add(11*time.Second)); c != 0 {
		t.Errorf("after the deadline: cap %d", c)
	}
}

// TestMaxDuration: with the time already up, nothing is checked and every
// target read is counted as not checked.
func TestMaxDuration(t *testing.T) {
	t.Parallel()
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	var targets []Target
	for i := range 5 {
		targets = append(targets, Target{Key: strconv.Itoa(i), URL: srv.URL + "/" + strconv.Itoa(i)})
	}
	cfg := testConfig()
	cfg.MaxDuration = time.Nanosecond
	sum, _ := run(t, cfg, targets)
	if sum.Stop != StopMaxDuration || sum.Checked != 0 || sum.Deferred+sum.Unchecked != sum.Read {
		t.Errorf("%+v", sum)
	}
}

// TestSlowHosts: a host whose targets at its interval take longer than the
// good window is reported.
func TestSlowHosts(t *testing.T) {
	t.Parallel()
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "0")
	}))
	var targets []Target
	for i := range 6 {
		targets = append(targets, Target{Key: strconv.Itoa(i), URL: srv.URL + "/" + strconv.Itoa(i)})
	}
	cfg := testConfig()
	cfg.Policy.GoodWindow = 25 * time.Millisecond // 6 targets at 5 ms: 30 ms
	sum, _ := run(t, cfg, targets)
	if len(sum.SlowHosts) != 1 || sum.SlowHosts[0].Host != "127.0.0.1" || sum.SlowHosts[0].PassTime() != 30*time.Millisecond {
		t.Errorf("slow hosts %+v", sum.SlowHosts)
	}
	cfg.Policy.GoodWindow = 30 * time.Millisecond // not longer than the window
	if sum, _ = run(t, cfg, targets); len(sum.SlowHosts) != 0 {
		t.Errorf("slow hosts %+v", sum.SlowHosts)
	}
}
