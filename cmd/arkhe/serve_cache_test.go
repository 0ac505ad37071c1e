package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
)

// TestServeCache runs `arkhe serve` with its cache (the default) as a process of its own: an ARK
// asked twice is answered from the cache the second time (/metrics counts the hit), and after
// `arkhe ark repoint` the first request once the notification arrived (the flush /metrics
// counts, waited for on it, never on time) answers the new target. A negative --cache-entries is
// a usage error.
func TestServeCache(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	pool := pgtest.New(t)
	seedSizingLedger(t, pool, 3)
	if code, _, errOut := arkhe(t, url, "", "serve", "--cache-entries", "-1"); code != 2 || !strings.Contains(errOut, "--cache-entries -1: not negative") {
		t.Errorf("--cache-entries -1: exit %d, %q", code, errOut)
	}
	_, _, errb, base := startServe(t, url)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(p string) (int, string, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+p, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v; stderr:\n%s", p, err, errb)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Location"), string(b)
	}
	// waitMetric asks /metrics until it holds line (each ask is a new state of the cache's to
	// read, not a pause: the test's context bounds the wait)
	waitMetric := func(line string) string {
		t.Helper()
		for {
			_, _, m := get("/metrics")
			if strings.Contains(m, "\n"+line+"\n") {
				return m
			}
			if t.Context().Err() != nil {
				t.Fatalf("/metrics never held %q:\n%s", line, m)
			}
		}
	}
	waitMetric("arkhe_resolver_cache_on 1")
	key := "99999/x900000003b"
	for range 2 {
		if s, loc, _ := get("/ark:" + key); s != 302 || loc != "https://example.org/works/3" {
			t.Errorf("GET %s: %d %q", key, s, loc)
		}
	}
	m := waitMetric("arkhe_resolver_cache_flushes_total 0")
	for _, want := range []string{"arkhe_resolver_cache_hits_total 1", "arkhe_resolver_cache_misses_total 1", "arkhe_resolver_cache_entries 1"} {
		if !strings.Contains(m, "\n"+want+"\n") {
			t.Errorf("/metrics lacks %q:\n%s", want, m)
		}
	}
	if code, out, errOut := arkhe(t, url, "", "ark", "repoint", "ark:/"+key, "https://example.org/new", "--client", "sizing-cli-minter"); code != 0 {
		t.Fatalf("ark repoint: exit %d\n%s%s", code, out, errOut)
	}
	waitMetric("arkhe_resolver_cache_flushes_total 1")
	if s, loc, _ := get("/ark:" + key); s != 302 || loc != "https://example.org/new" {
		t.Errorf("after the repoint: %d %q; stderr:\n%s", s, loc, errb)
	}
}
