package resolver_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/arkhe-ledger/arkhe/resolver"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// TestLogBufferClose checks that Close writes every line held, whole and in order, and that a
// second Close is harmless.
func TestLogBufferClose(t *testing.T) {
	var out lockedBuffer
	l := resolver.NewLogBuffer(&out, time.Hour)
	want := ""
	for _, line := range []string{"one\n", "two\n", "three\n"} {
		if _, err := l.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
		want += line
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := out.b.String(); got != want {
		t.Errorf("after Close: %q, want %q", got, want)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestLogBufferError checks that a write error of the log's file is reported by Close.
func TestLogBufferError(t *testing.T) {
	l := resolver.NewLogBuffer(failWriter{}, time.Hour)
	if _, err := l.Write([]byte("line\n")); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err == nil || err.Error() != "disk full" {
		t.Errorf("Close: %v, want disk full", err)
	}
}

// TestAccessLogLine checks one Combined Log Format line written over a real socket: the
// request line, status and byte count, and a User-Agent whose `"`, `\` and tab are escaped.
func TestAccessLogLine(t *testing.T) {
	var out lockedBuffer
	h := resolver.AccessLog(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(404)
		io.WriteString(w, "nope\n")
	}), &out)
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, err := http.NewRequest("GET", srv.URL+"/ark:99999/x?info", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("User-Agent", "a\"b\\c\td")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	out.mu.Lock()
	line := out.b.String()
	out.mu.Unlock()
	re := regexp.MustCompile(`^127\.0\.0\.1 - - \[[0-9]{2}/[A-Z][a-z]{2}/[0-9]{4}:[0-9:]{8} [+-][0-9]{4}\] "GET /ark:99999/x\?info HTTP/1\.1" 404 5 "-" "a\\"b\\\\c\\x09d"\n$`)
	if !re.MatchString(line) {
		t.Errorf("access log line %q", line)
	}
}
