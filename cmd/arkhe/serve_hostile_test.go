package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
)

// rawGet sends request (a whole HTTP/1.1 request, as bytes, Connection: close) to addr and
// returns the status code of the answer.
func rawGet(t *testing.T, addr, request string) int {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 30*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatalf("write %q: %v", request[:min(len(request), 60)], err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("read the answer to %q: %v", request[:min(len(request), 60)], err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestServeHostile runs `arkhe serve` (header timeout 1 s) under a hostile mix over loopback:
// slow clients sending a request's headers one byte every 300 ms hold connections while bad
// escapes, over-long paths, control characters, dot-segments and a too-large header are sent;
// none is answered with a 5xx, an ordinary request is still answered while the slow clients
// hang, and the server cuts every slow client off (its header timeout) instead of waiting.
func TestServeHostile(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	pool := pgtest.New(t)
	seedSizingLedger(t, pool, 3)
	_, _, errb, base := startServe(t, url, "--header-timeout", "1s", "--max-connections", "32", "--access-log", t.TempDir()+"/access.log")
	addr := strings.TrimPrefix(base, "http://")
	const slow = 8
	var wg sync.WaitGroup
	cut := make(chan time.Duration, slow)
	started := make(chan struct{}, slow)
	stop := make(chan struct{})
	defer func() { close(stop); wg.Wait() }()
	for i := 0; i < slow; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.DialTimeout("tcp", addr, 30*time.Second)
			if err != nil {
				t.Errorf("slow client: dial: %v", err)
				started <- struct{}{}
				return
			}
			defer c.Close()
			req := "GET /ark:/99999/x900000003b HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("a", 200) + "\r\n\r\n"
			t0 := time.Now()
			tick := time.NewTicker(300 * time.Millisecond)
			defer tick.Stop()
			first := true
			for j := 0; j < len(req); j++ {
				if _, err := c.Write([]byte{req[j]}); err != nil {
					cut <- time.Since(t0) // the server closed it
					return
				}
				if first {
					started <- struct{}{}
					first = false
				}
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
			t.Errorf("slow client: sent every byte of its request over %s without being cut off", time.Since(t0))
		}()
	}
	for i := 0; i < slow; i++ {
		<-started
	}
	// while they hang: every hostile request gets a 4xx, an ordinary one its redirect
	hostile := []string{
		"/ark:99999/x9%zz",                              // bad escape
		"/ark:99999/x9%4",                               // truncated escape
		"/ark:99999/" + strings.Repeat("x", 5000),       // over-long path
		"/ark:99999/x9/../../etc/passwd",                // dot-segments
		"/ark:99999/x9/%2e%2e/secret",                   // encoded dot-segment
		"/ark:99999/x9\x01abc",                          // control character
		"/ark:99999/x9\x7f",                             // DEL
		"/ark:99999/x9 abc",                             // a space: a malformed request line
		"/" + strings.Repeat("%41", 4000),               // huge, all escapes
		"/ark:" + strings.Repeat("/", 3000) + "99999/x", // a run of slashes
	}
	for _, p := range hostile {
		st := rawGet(t, addr, "GET "+p+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		if st >= 500 || st < 400 {
			t.Errorf("GET %q: %d, want a 4xx", p[:min(len(p), 60)], st)
		}
	}
	if st := rawGet(t, addr, "GET /ark:/99999/x9 HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("b", 64<<10)+"\r\nConnection: close\r\n\r\n"); st != 431 {
		t.Errorf("a 64 KiB header: %d, want 431", st)
	}
	if st := rawGet(t, addr, "GET /ark:/99999/x900000003b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); st != 302 {
		t.Errorf("an ordinary request beside the slow clients: %d, want 302", st)
	}
	// every slow client is cut off by the header timeout, long before its last byte
	deadline := time.After(2 * time.Minute)
	for i := 0; i < slow; i++ {
		select {
		case d := <-cut:
			if d > 30*time.Second {
				t.Errorf("a slow client was cut off after %s", d)
			}
		case <-deadline:
			t.Fatalf("%d of %d slow clients not cut off; stderr:\n%s", slow-i, slow, errb.String())
		}
	}
	if st := rawGet(t, addr, "GET /ark:/99999/x900000003b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); st != 302 {
		t.Errorf("after the slow clients: %d, want 302", st)
	}
}
