package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
)

// TestServe runs `arkhe serve` as a process of its own and asks it with curl: a redirect (HEAD),
// a description (?info), a repoint answered at once, /healthz, /metrics, the access log, and a
// graceful stop on SIGTERM.
func TestServe(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	pool := pgtest.New(t)
	seedSizingLedger(t, pool, 3)
	logPath := filepath.Join(t.TempDir(), "access.log")
	cmd := exec.Command(os.Args[0], "--database-url", url, "--quiet", "serve", "--listen", "127.0.0.1:0", "--access-log", logPath)
	cmd.Env = append(os.Environ(), asArkheEnv+"=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		cmd.Wait()
		t.Fatalf("arkhe serve printed nothing; stderr:\n%s", errb.String())
	}
	m := regexp.MustCompile(`^arkhe serve: resolving on (http://127\.0\.0\.1:[0-9]+)$`).FindStringSubmatch(sc.Text())
	if m == nil {
		t.Fatalf("first line %q", sc.Text())
	}
	base := m[1]
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
		`arkhe_resolver_requests_total{outcome="not_found"} 1`, `arkhe_resolver_request_seconds_bucket{le="+Inf"} 4`, "arkhe_resolver_request_seconds_count 4"} {
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
