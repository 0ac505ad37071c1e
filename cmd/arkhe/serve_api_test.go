package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// TestServeAPI runs `arkhe serve --api` as a process of its own: a mint with a key answers
// arklet's shape, an EZID mint with HTTP Basic and the same key answers success without a second
// derivation, /metrics counts both, a resolution of the new ARK redirects, and the access log
// has the requests without the key.
func TestServeAPI(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	pool := pgtest.New(t)
	k := registerAPIMinter(t, pool)
	logPath := filepath.Join(t.TempDir(), "access.log")
	cmd, sc, errb, base := startServe(t, url, "--api", "--access-log", logPath)
	if want := "arkhe serve: arklet's API (POST /mint, PUT /update, POST /bulk_mint, PUT /bulk_update) on " + base; !sc.Scan() || sc.Text() != want {
		t.Fatalf("serve --api's second line: %q, want %q", sc.Text(), want)
	}
	if want := "arkhe serve: EZID's API for ARKs (/shoulder/ark:/..., /id/ark:/...) on " + base; !sc.Scan() || sc.Text() != want {
		t.Fatalf("serve --api's third line: %q, want %q", sc.Text(), want)
	}
	post := func(key string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+"/mint", strings.NewReader(`{"naan": 12345, "shoulder": "/t2", "url": "https://example.org/a"}`))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status, body := post(k.Key)
	if status != 200 || !strings.HasPrefix(body, `{"ark":"ark:/12345/t2`) {
		t.Fatalf("POST /mint: %d %q", status, body)
	}
	// EZID's mint through the same mux, HTTP Basic with the client's id and key: the key the
	// Bearer mint proved, so no second derivation (the /metrics check below)
	req, _ := http.NewRequest(http.MethodPost, base+"/shoulder/ark:/12345/t2", strings.NewReader("_target: https://example.org/e\n"))
	req.SetBasicAuth("svc", k.Key)
	req.Header.Set("Content-Type", "text/plain; charset=UTF-8")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	eb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 || !strings.HasPrefix(string(eb), "success: ark:/12345/t2") {
		t.Fatalf("POST /shoulder/ark:/12345/t2: %d %q", resp.StatusCode, eb)
	}
	if status, _ := post(k.Key[:len(k.Key)-1] + "x"); status != 403 {
		t.Fatalf("POST /mint with a wrong key: %d, want 403", status)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	minted := strings.TrimSuffix(strings.TrimPrefix(body, `{"ark":"`), `"}`)
	resp, err = noRedirect.Get(base + "/" + minted)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 302 || resp.Header.Get("Location") != "https://example.org/a" {
		t.Fatalf("GET /%s: %d %q", minted, resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, err = http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	mt, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"arkhe_api_minted_total 2\n", "arkhe_api_refused_total 1\n", "arkhe_api_key_derivations_total 2\n"} {
		if !strings.Contains(string(mt), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, mt)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if !sc.Scan() || sc.Text() != "arkhe serve: stopped" {
		t.Errorf("after SIGTERM: %q", sc.Text())
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("arkhe serve after SIGTERM: %v; stderr:\n%s", err, errb.String())
	}
	log, _ := os.ReadFile(logPath)
	secret := k.Key[len("arkhe_"+k.Prefix+"_"):]
	if !strings.Contains(string(log), `"POST /mint HTTP/1.1" 200 `) || !strings.Contains(string(log), `"POST /mint HTTP/1.1" 403 `) {
		t.Errorf("access log lacks the mints:\n%s", log)
	}
	if strings.Contains(string(log), secret) || strings.Contains(string(log), k.Prefix) || strings.Contains(errb.String(), secret) {
		t.Errorf("the key reached a log:\n%s\nstderr:\n%s", log, errb.String())
	}
}

// registerAPIMinter registers NAAN 12345, manager m1, shoulder /t2 and the machine client svc
// (manager authority, scope ark:mint) on pool's ledger and returns a new API key of svc.
func registerAPIMinter(t *testing.T, pool *pgxpool.Pool) ledger.NewKey {
	t.Helper()
	ctx := context.Background()
	l := &ledger.Ledger{Pool: pool}
	if _, err := l.AddNAAN(ctx, ledger.NAAN{NAAN: "12345", Name: "test"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AddManager(ctx, ledger.Manager{NAAN: "12345", Name: "m1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AddShoulder(ctx, ledger.Shoulder{NAAN: "12345", Shoulder: "/t2", Manager: "m1"}, 0); err != nil {
		t.Fatal(err)
	}
	if err := l.AddClient(ctx, ledger.Client{ClientID: "svc", NAAN: "12345", Manager: "m1", Authority: "manager", Scopes: []string{"ark:mint"}}); err != nil {
		t.Fatal(err)
	}
	k, err := l.CreateKey(ctx, "svc")
	if err != nil {
		t.Fatal(err)
	}
	return k
}
