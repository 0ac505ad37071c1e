package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
)

// TestServeAPIRateLimit runs `arkhe serve --api --api-rate 0.001 --api-burst 1` as a process of
// its own: a client's first mint is 200, its second 429 with Retry-After and the rule in
// arklet's JSON shape; resolution of the minted ARK is not limited; /metrics counts the 429.
// A negative --api-rate is a usage error.
func TestServeAPIRateLimit(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	pool := pgtest.New(t)
	k := registerAPIMinter(t, pool)
	if code, _, errOut := arkhe(t, url, "", "serve", "--api", "--api-rate", "-1"); code != exitCannot || !strings.Contains(errOut, "--api-rate") {
		t.Fatalf("serve --api-rate -1: exit %d, %q; want a usage error naming the flag", code, errOut)
	}
	_, sc, errb, base := startServe(t, url, "--api", "--api-rate", "0.001", "--api-burst", "1")
	for i := 0; i < 2; i++ { // the API's two lines
		if !sc.Scan() || !strings.HasPrefix(sc.Text(), "arkhe serve: ") {
			t.Fatalf("serve --api line %d: %q; stderr:\n%s", i+2, sc.Text(), errb.String())
		}
	}
	mint := func() (int, string, http.Header) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+"/mint", strings.NewReader(`{"naan": 12345, "shoulder": "/t2", "url": "https://example.org/a"}`))
		req.Header.Set("Authorization", "Bearer "+k.Key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	status, body, _ := mint()
	if status != 200 || !strings.HasPrefix(body, `{"ark":"ark:/12345/t2`) {
		t.Fatalf("first mint: %d %q", status, body)
	}
	minted := strings.TrimSuffix(strings.TrimPrefix(body, `{"ark":"`), `"}`)
	status, body2, h := mint()
	if status != 429 || h.Get("Retry-After") == "" || h.Get("Content-Type") != "application/json" ||
		!strings.HasPrefix(body2, `{"__all__":["client svc: rate limit: at most 0.001 requests a second on average, 1 at once; retry after `) {
		t.Fatalf("second mint: %d %q (Retry-After %q, %s), want 429 with the rule", status, body2, h.Get("Retry-After"), h.Get("Content-Type"))
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for i := 0; i < 3; i++ {
		resp, err := noRedirect.Get(base + "/" + minted)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 302 {
			t.Fatalf("resolution %d of %s: %d, want 302 (resolution is not limited)", i+1, minted, resp.StatusCode)
		}
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	mt, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"arkhe_api_throttled_total 1\n", "arkhe_api_minted_total 1\n"} {
		if !strings.Contains(string(mt), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, mt)
		}
	}
}
