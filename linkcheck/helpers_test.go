package linkcheck

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sort"
	"sync"
	"testing"
	"time"
)

// testContact is the contact URL of the tests' User-Agent.
const testContact = "https://example.org/arkhe-linkcheck-test"

// testConfig is a Config for local servers: loopback allowed, short timeouts.
func testConfig() Config {
	return Config{
		Workers:         4,
		PerHostInterval: 5 * time.Millisecond,
		Contact:         testContact,
		Version:         "test",
		AllowPrivate:    true,
		ConnectTimeout:  5 * time.Second,
		RequestTimeout:  10 * time.Second,
	}
}

// collectSink keeps every record in memory.
type collectSink struct {
	mu   sync.Mutex
	recs []FileRecord
	// onRecord, when set, is called after each record is kept.
	onRecord func(FileRecord)
}

func (s *collectSink) Record(_ context.Context, r Result, next State, ts []Transition) error {
	rec := FileRecord{Result: r, State: next, Transitions: ts}
	s.mu.Lock()
	s.recs = append(s.recs, rec)
	f := s.onRecord
	s.mu.Unlock()
	if f != nil {
		f(rec)
	}
	return nil
}

// byKey returns the records keyed by ARK key; it fails the test on a duplicate.
func (s *collectSink) byKey(t *testing.T) map[string]FileRecord {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]FileRecord, len(s.recs))
	for _, r := range s.recs {
		if _, dup := m[r.Result.Key]; dup {
			t.Fatalf("two records for %s", r.Result.Key)
		}
		m[r.Result.Key] = r
	}
	return m
}

// run runs cfg over targets with a collectSink and fails the test on an error.
func run(t *testing.T, cfg Config, targets []Target) (Summary, *collectSink) {
	t.Helper()
	sink := &collectSink{}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sum, err := Run(ctx, cfg, SliceSource(targets), sink)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return sum, sink
}

// reqLog is a server-side log of requests: start and end times and the most
// requests in flight at once.
type reqLog struct {
	mu          sync.Mutex
	inFlight    int
	maxInFlight int
	spans       []span
}

type span struct {
	method, path string
	start, end   time.Time
}

// wrap logs every request h serves.
func (l *reqLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		l.mu.Lock()
		l.inFlight++
		l.maxInFlight = max(l.maxInFlight, l.inFlight)
		l.mu.Unlock()
		h.ServeHTTP(w, r)
		l.mu.Lock()
		l.inFlight--
		l.spans = append(l.spans, span{method: r.Method, path: r.URL.Path, start: start, end: time.Now()})
		l.mu.Unlock()
	})
}

// checkPolite asserts at most one request in flight and at least interval
// (less tol) between the end of one request and the start of the next, as
// the server saw them.
func (l *reqLog) checkPolite(t *testing.T, name string, interval, tol time.Duration) int {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.maxInFlight > 1 {
		t.Errorf("%s: %d requests in flight at once, want at most 1", name, l.maxInFlight)
	}
	s := append([]span(nil), l.spans...)
	sort.Slice(s, func(i, j int) bool { return s[i].start.Before(s[j].start) })
	for i := 1; i < len(s); i++ {
		if gap := s[i].start.Sub(s[i-1].end); gap < interval-tol {
			t.Errorf("%s: request %d (%s %s) started %v after the end of the previous (%s %s), want >= %v",
				name, i, s[i].method, s[i].path, gap, s[i-1].method, s[i-1].path, interval-tol)
		}
	}
	return len(s)
}

func (l *reqLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.spans)
}

// newServer starts an httptest server on 127.0.0.1 and closes it at cleanup.
func newServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

// newServerOn starts an httptest server listening on addr (e.g. "127.0.0.2:0").
func newServerOn(t *testing.T, addr string, h http.Handler) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	return newServerLn(t, ln, h)
}

// newServerLn starts an httptest server on a listener the test opened.
func newServerLn(t *testing.T, ln net.Listener, h http.Handler) *httptest.Server {
	t.Helper()
	s := httptest.NewUnstartedServer(h)
	s.Listener.Close()
	s.Listener = ln
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func port(s *httptest.Server) string {
	_, p, _ := net.SplitHostPort(s.Listener.Addr().String())
	return p
}

func loopbackResolver(names ...string) mapResolver {
	m := mapResolver{}
	for _, n := range names {
		m[n] = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	}
	return m
}

// mapResolver resolves the names in it and no others, to give local servers distinct host names.
type mapResolver map[string][]netip.Addr

func (m mapResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := m[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}
