package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/arkhe-ledger/arkhe/api"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// TestRateLimit: with a per-client rate limit (one request per 1,000 s, bursts of 2) a client's
// third request is 429 with Retry-After (whole seconds, up to the 1,000 s the next token takes)
// and the rule in the body: {"__all__": [rule]} on arklet's paths, "error: too many requests -
// rule" on EZID's, the key presented as Bearer or as HTTP Basic; nothing is written past the
// limit. Another client has a bucket of its own. The refusals are counted in
// arkhe_api_throttled_total (and refused). Invalid limits are a *ConfigError.
func TestRateLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.DB{Kind: pgtest.KindSingle, Pool: pgtest.New(t)}
	s := newSite(t, db, api.Config{RatePerSecond: 0.001, RateBurst: 2})
	must(t, s.l.AddClient(ctx, ledger.Client{ClientID: "other", NAAN: "12345", Manager: "m1", Authority: "manager",
		Scopes: []string{"ark:mint"}}))
	ok, err := s.l.CreateKey(ctx, "other")
	must(t, err)
	for i := 0; i < 2; i++ {
		if status, body, _ := s.mint(nil); status != 200 {
			t.Fatalf("mint %d within the burst: %d %q", i+1, status, body)
		}
	}
	checkRetry := func(what string, resp *http.Response) {
		t.Helper()
		n, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		if err != nil || n < 1 || n > 1000 {
			t.Fatalf("%s: Retry-After %q, want whole seconds from 1 to 1000", what, resp.Header.Get("Retry-After"))
		}
	}
	status, body, resp := s.mint(nil)
	var e map[string][]string
	if status != 429 || json.Unmarshal([]byte(body), &e) != nil || len(e["__all__"]) != 1 ||
		!strings.HasPrefix(e["__all__"][0], "client svc: rate limit: at most 0.001 requests a second on average, 2 at once; retry after ") {
		t.Fatalf("mint past the burst: %d %q, want 429 {\"__all__\": [rule]}", status, body)
	}
	checkRetry("mint past the burst", resp)
	if status, body, _ := s.do(http.MethodPut, "/update", map[string]any{"ark": "ark:/12345/t2x", "url": "https://example.org/b"},
		"Authorization", "Bearer "+s.key); status != 429 {
		t.Fatalf("update past the burst: %d %q, want 429", status, body)
	}
	status, body, resp = s.ezid(http.MethodPost, "/shoulder/ark:/12345/t2", "_target: https://example.org/e\n", true)
	if status != 429 || !strings.HasPrefix(body, "error: too many requests - client svc: rate limit: ") {
		t.Fatalf("EZID mint (HTTP Basic) past the burst: %d %q, want 429 error: too many requests - rule", status, body)
	}
	checkRetry("EZID mint", resp)
	status, body, _ = s.do(http.MethodPost, "/shoulder/ark:/12345/t2", "_target: https://example.org/e\n",
		"Authorization", "Bearer "+s.key, "Content-Type", "text/plain; charset=UTF-8")
	if status != 429 || !strings.HasPrefix(body, "error: too many requests - ") {
		t.Fatalf("EZID mint (Bearer) past the burst: %d %q", status, body)
	}
	// another client's bucket is its own
	if status, body, _ := s.do(http.MethodPost, "/mint", map[string]any{"naan": 12345, "shoulder": "/t2"},
		"Authorization", "Bearer "+ok.Key, "Content-Type", "application/json"); status != 200 {
		t.Fatalf("mint by another client: %d %q", status, body)
	}
	if n := s.count(`select count(*) from ark`); n != 3 {
		t.Fatalf("%d ARKs, want the 3 within the limits", n)
	}
	if st := s.srv.Stats(); st.Throttled != 4 || st.Refused != 4 {
		t.Fatalf("Stats: throttled %d, refused %d; want 4 and 4", st.Throttled, st.Refused)
	}
	found := false
	for _, f := range s.srv.Metrics() {
		if f.Name == "arkhe_api_throttled_total" && len(f.Samples) == 1 && f.Samples[0].Value == 4 {
			found = true
		}
	}
	if !found {
		t.Fatal("Metrics: no arkhe_api_throttled_total 4")
	}
	for _, c := range []api.Config{{RatePerSecond: -1}, {RateBurst: -1, RatePerSecond: 1}, {RateBurst: 5}} {
		if _, err := api.New(ctx, nil, c); !api.IsConfigError(err) {
			t.Errorf("New(%+v): %v, want a *ConfigError", c, err)
		}
	}
}
