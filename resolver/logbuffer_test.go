package resolver_test

import (
	"bytes"
	"errors"
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
