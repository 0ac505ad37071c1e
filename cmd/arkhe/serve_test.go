package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// TestServe runs `arkhe serve` without its cache as a process of its own and asks it with curl: a
// redirect (HEAD), a description (?info), a repoint answered at once, /healthz, /metrics, the
// access log, and a graceful stop on SIGTERM. TestServeCache runs it with its cache.
func TestServe(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	pool := pgtest.New(t)
	seedSizingLedger(t, pool, 3)
	logPath := filepath.Join(t.TempDir(), "access.log")
	cmd, sc, errb, base := startServe(t, url, "--access-log", logPath, "--cache-entries", "0")
	curl := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("curl", append([]string{"-sS"}, args...)...).Output()
		if err != nil {
			t.Fatalf("curl %v: %v", args, err)
		}
		return strings.ReplaceAll(string(out), "\r\n", "\n")
	}
	key := "99999/x900000003b"
	if h := curl("-I", base+"/ark:/"+key+"/p.jpg"); !strings.HasPrefix(h, "HTTP/1.1 302 Found\n") ||
		!strings.Contains(h, "\nLocation: https://example.org/works/3/p.jpg\n") {
		t.Errorf("curl -I:\n%s", h)
	}
	if b := curl(base + "/ark:" + key + "?info"); !strings.HasPrefix(b, "erc:\nwho: Someone 3\nwhat: A title 3\nwhen: 1900\nwhere: ark:"+key+"\n") {
		t.Errorf("?info:\n%s", b)
	}
	if _, err := pool.Exec(context.Background(), `select ark_repoint('`+key+`', 'https://example.org/new', (select id from client), null)`); err != nil {
		t.Fatal(err)
	}
	if h := curl("-I", base+"/ark:"+key); !strings.Contains(h, "\nLocation: https://example.org/new\n") {
		t.Errorf("after a repoint:\n%s", h)
	}
	if b := curl("-i", base+"/healthz"); !strings.HasPrefix(b, "HTTP/1.1 200 OK\n") || !strings.HasSuffix(b, "\nok\n") {
		t.Errorf("/healthz:\n%s", b)
	}
	curl(base + "/ark:99999/nosuch")
	mt := curl(base + "/metrics")
	for _, want := range []string{`arkhe_resolver_requests_total{outcome="redirect"} 2`, `arkhe_resolver_requests_total{outcome="description"} 1`,
		`arkhe_resolver_requests_total{outcome="not_found"} 1`, "# TYPE arkhe_resolver_request_seconds histogram",
		`arkhe_resolver_request_seconds_bucket{le="+Inf"} 4`, "arkhe_resolver_request_seconds_count 4"} {
		if !strings.Contains(mt, want+"\n") {
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
	lines := strings.Split(strings.TrimSuffix(string(log), "\n"), "\n")
	clf := regexp.MustCompile(`^127\.0\.0\.1 - - \[[0-9]{2}/[A-Z][a-z]{2}/[0-9]{4}:[0-9:]{8} [+-][0-9]{4}\] "HEAD /ark:/99999/x900000003b/p.jpg HTTP/1.1" 302 0 "-" "curl/[^"]+"$`)
	if len(lines) != 6 || !clf.MatchString(lines[0]) {
		t.Errorf("access log (%d lines):\n%s", len(lines), log)
	}
}

// startServe starts `arkhe serve` on a free loopback port as a process of its own and returns
// it, its stdout (the first line read), its stderr and its base URL.
func startServe(t *testing.T, url string, args ...string) (*exec.Cmd, *bufio.Scanner, *strings.Builder, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"--database-url", url, "--quiet", "serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), asArkheEnv+"=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errb := &strings.Builder{}
	cmd.Stderr = errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		_ = cmd.Wait()
		t.Fatalf("arkhe serve printed nothing; stderr:\n%s", errb.String())
	}
	m := regexp.MustCompile(`^arkhe serve: resolving on (http://127\.0\.0\.1:[0-9]+)$`).FindStringSubmatch(sc.Text())
	if m == nil {
		t.Fatalf("first line %q; stderr:\n%s", sc.Text(), errb.String())
	}
	return cmd, sc, errb, m[1]
}

// TestServeAsResolverRole runs `arkhe serve` with a login that holds only the resolver role of
// `arkhe init --roles`: it resolves, describes and answers /healthz, and the login reads no
// other table.
func TestServeAsResolverRole(t *testing.T) {
	t.Parallel()
	su := pgtest.URL(t)
	pool := pgtest.New(t)
	seedSizingLedger(t, pool, 3)
	ctx := context.Background()
	var db string
	if err := pool.QueryRow(ctx, `select current_database()`).Scan(&db); err != nil {
		t.Fatal(err)
	}
	prefix := db + "_"
	t.Cleanup(func() { // before pgtest drops the database; kept with it when the test fails
		if t.Failed() {
			return
		}
		var ids []string
		for _, r := range []string{"owner", "operator", "writer", "auditor", "resolver", "res"} {
			ids = append(ids, pgx.Identifier{prefix + r}.Sanitize())
		}
		for _, q := range []string{"reassign owned by " + ids[0] + " to current_user", "drop owned by " + strings.Join(ids, ", "), "drop role " + strings.Join(ids, ", ")} {
			if _, err := pool.Exec(ctx, q); err != nil {
				t.Errorf("%s: %v", q, err)
				return
			}
		}
	})
	if code, out, errOut := arkhe(t, su, "", "init", "--roles", "--role-prefix", prefix); code != 0 || !strings.Contains(out, prefix+"resolver") {
		t.Fatalf("init --roles: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := pool.Exec(ctx, "create role "+pgx.Identifier{prefix + "res"}.Sanitize()+" login in role "+pgx.Identifier{prefix + "resolver"}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	u, err := pgtest.AsRole(su, prefix+"res")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range []string{`select count(*) from ark_change`, `select count(*) from client`, `select created_by from ark limit 1`} {
		var n any
		if err := conn.QueryRow(ctx, q).Scan(&n); ledger.SQLState(err) != ledger.CodeInsufficientPrivilege {
			t.Errorf("%s as the resolver role: %v, want insufficient privilege", q, err)
		}
	}
	_, _, errb, base := startServe(t, u)
	get := func(p string) (int, string, string) {
		t.Helper()
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := c.Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Location"), string(b)
	}
	if s, loc, _ := get("/ark:/99999/x900000003b/p"); s != 302 || loc != "https://example.org/works/3/p" {
		t.Errorf("redirect as the resolver role: %d %q; stderr:\n%s", s, loc, errb)
	}
	if s, _, b := get("/ark:/99999/x9??"); s != 200 || !strings.Contains(b, "arks: 3\n") || !strings.Contains(b, "who: m\n") {
		t.Errorf("shoulder description as the resolver role: %d %q; stderr:\n%s", s, b, errb)
	}
	if s, _, b := get("/ark:/99999/nosuch"); s != 404 || !strings.Contains(b, "NAAN 99999 (test)") {
		t.Errorf("unknown name as the resolver role: %d %q", s, b)
	}
	if s, _, _ := get("/healthz"); s != 200 {
		t.Errorf("/healthz as the resolver role: %d", s)
	}
	// the cache's listener reads the notify triggers and listens as the resolver role too
	for {
		if _, _, m := get("/metrics"); strings.Contains(m, "\narkhe_resolver_cache_on 1\n") {
			break
		}
		if t.Context().Err() != nil {
			t.Fatalf("the cache never turned on as the resolver role; stderr:\n%s", errb)
		}
	}
}
