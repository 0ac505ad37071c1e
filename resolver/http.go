package resolver

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arkhe-ledger/arkhe/metrics"
)

// ServeHTTP answers GET and HEAD of an ARK (Resolve) and writes the answer: a redirect with its
// Location, a description as ANVL (text/plain; charset=utf-8) by default, JSON for
// "Accept: application/json" or a query holding "json" (?info&json), HTML for
// "Accept: text/html"; a 404, 400 or 503 as a short text/plain message. Other methods are a
// 405. The request target is read as sent (r.RequestURI), %-escapes kept.
func (r *Resolver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	start := time.Now()
	var a Answer
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		a = Answer{Outcome: OutcomeBadRequest, Status: http.StatusMethodNotAllowed, Message: "only GET and HEAD resolve an ARK"}
		w.Header().Set("Allow", "GET, HEAD")
	} else {
		target := req.RequestURI
		if target == "" || target[0] != '/' {
			// an absolute-form target (a proxy's request): the path and query
			target = req.URL.RequestURI()
		}
		a = r.Resolve(req.Context(), target)
	}
	write(w, req, a)
	r.stats.observe(a.Outcome, time.Since(start))
}

func write(w http.ResponseWriter, req *http.Request, a Answer) {
	h := w.Header()
	switch {
	case a.Location != "":
		// the canonical key set directly: Set would canonicalize it on every request
		h["Location"] = []string{a.Location}
		w.WriteHeader(a.Status)
		return
	case a.Description != nil:
		h.Set("Vary", "Accept")
		var b strings.Builder
		accept := req.Header.Get("Accept")
		switch {
		case a.JSON || strings.Contains(accept, "application/json"):
			h.Set("Content-Type", "application/json")
			j, _ := a.Description.MarshalJSON()
			b.Write(j)
			b.WriteByte('\n')
		case strings.Contains(accept, "text/html"):
			h.Set("Content-Type", "text/html; charset=utf-8")
			a.Description.WriteHTML(&b, a.Description.Get("where"))
		default:
			h.Set("Content-Type", "text/plain; charset=utf-8")
			a.Description.WriteANVL(&b)
		}
		h.Set("Content-Length", strconv.Itoa(b.Len()))
		w.WriteHeader(a.Status)
		io.WriteString(w, b.String())
	default:
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("X-Content-Type-Options", "nosniff")
		msg := a.Message + "\n"
		h.Set("Content-Length", strconv.Itoa(len(msg)))
		w.WriteHeader(a.Status)
		io.WriteString(w, msg)
	}
}

// Buckets are the upper bounds of the latency histogram, in seconds.
func Buckets() []float64 {
	return []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}
}

// Stats counts a resolver's requests by outcome and their latency (a metrics.Histogram over
// Buckets, in seconds).
type Stats struct {
	byOutcome map[Outcome]*atomic.Int64
	latency   *metrics.Histogram
}

func newStats() (*Stats, error) {
	h, err := metrics.NewHistogram(Buckets())
	if err != nil {
		return nil, fmt.Errorf("resolver: latency histogram: %w", err)
	}
	s := &Stats{byOutcome: map[Outcome]*atomic.Int64{}, latency: h}
	for _, o := range Outcomes() {
		s.byOutcome[o] = new(atomic.Int64)
	}
	return s, nil
}

func (s *Stats) observe(o Outcome, d time.Duration) {
	if c := s.byOutcome[o]; c != nil {
		c.Add(1)
	}
	s.latency.Observe(d.Seconds())
}

// Count returns how many requests had outcome o.
func (r *Resolver) Count(o Outcome) int64 {
	if c := r.stats.byOutcome[o]; c != nil {
		return c.Load()
	}
	return 0
}

// Metrics returns the resolver's figures as Prometheus families: arkhe_resolver_requests_total
// (a counter) by outcome, and arkhe_resolver_request_seconds, a histogram of the time from a
// request's handler being called to its answer written, in seconds (cumulative _bucket series
// with le over Buckets and +Inf, _sum, _count), and the cache's figures when it has one
// (arkhe_resolver_cache_*, see Listen).
func (r *Resolver) Metrics() []metrics.Family {
	s := r.stats
	req := metrics.Family{Name: "arkhe_resolver_requests_total", Help: "Requests answered, by outcome.", Type: metrics.Counter}
	for _, o := range Outcomes() {
		req.Samples = append(req.Samples, metrics.Sample{Labels: []metrics.Label{{Name: "outcome", Value: string(o)}}, Value: float64(s.byOutcome[o].Load())})
	}
	fams := []metrics.Family{req, s.latency.Family("arkhe_resolver_request_seconds", "Time to answer a request, in seconds.")}
	return append(fams, r.cacheMetrics()...)
}

// AccessLog wraps h so that every request writes one line to w in the Combined Log Format
// (host ident authuser [date] "request" status bytes "referer" "user-agent"), as Apache and
// nginx write it. Lines are written whole, one at a time.
func AccessLog(h http.Handler, w io.Writer) http.Handler {
	var mu sync.Mutex
	lines := sync.Pool{New: func() any { return &logLine{b: make([]byte, 0, 256)} }}
	return http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		line := lines.Get().(*logLine)
		line.lw = loggingWriter{ResponseWriter: rw, status: 200}
		lw := &line.lw
		start := time.Now()
		h.ServeHTTP(lw, req)
		host, _, err := net.SplitHostPort(req.RemoteAddr)
		if err != nil {
			host = req.RemoteAddr
		}
		b := line.b[:0]
		b = append(b, host...)
		b = append(b, " - - ["...)
		b = start.AppendFormat(b, "02/Jan/2006:15:04:05 -0700")
		b = append(b, "] "...)
		b = appendLogQuote(b, req.Method, " ", req.RequestURI, " ", req.Proto)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(lw.status), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, lw.n, 10)
		b = append(b, ' ')
		b = appendLogQuote(b, orDash(req.Referer()))
		b = append(b, ' ')
		b = appendLogQuote(b, orDash(req.UserAgent()))
		b = append(b, '\n')
		mu.Lock()
		w.Write(b)
		mu.Unlock()
		line.lw = loggingWriter{}
		if cap(b) <= 4<<10 {
			line.b = b[:0]
			lines.Put(line)
		}
	})
}

// logLine is what one request's log line is built in, reused by the next request.
type logLine struct {
	lw loggingWriter
	b  []byte
}

type loggingWriter struct {
	http.ResponseWriter
	status int
	n      int64
}

func (l *loggingWriter) WriteHeader(code int) {
	l.status = code
	l.ResponseWriter.WriteHeader(code)
}

func (l *loggingWriter) Write(p []byte) (int, error) {
	n, err := l.ResponseWriter.Write(p)
	l.n += int64(n)
	return n, err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// appendLogQuote appends the concatenation of parts to b quoted for a log line: `"` and `\`
// escaped, a control character as \xHH.
func appendLogQuote(b []byte, parts ...string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, s := range parts {
		for i := 0; i < len(s); i++ {
			switch c := s[i]; {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20 || c == 0x7f:
				b = append(b, '\\', 'x', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
		}
	}
	return append(b, '"')
}

// LimitListener returns a listener that holds at most n connections open at once: Accept waits
// for a slot, and a connection's Close frees its slot.
func LimitListener(l net.Listener, n int) net.Listener {
	return &limitListener{Listener: l, sem: make(chan struct{}, n)}
}

type limitListener struct {
	net.Listener
	sem chan struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	l.sem <- struct{}{}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// LogBuffer is an io.Writer for an access log that holds what is written and writes it to the
// underlying writer at most every interval, and on Close, so that a request does not wait for a
// write to the log's file. Writes are safe from many goroutines; a line written is in the file
// within an interval (a write error is reported by Close).
type LogBuffer struct {
	mu   sync.Mutex
	b    *bufio.Writer
	err  error
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// NewLogBuffer returns a LogBuffer over w flushed every interval (> 0); Close stops it.
func NewLogBuffer(w io.Writer, interval time.Duration) *LogBuffer {
	l := &LogBuffer{b: bufio.NewWriterSize(w, 64<<10), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				l.flush()
			case <-l.stop:
				l.flush()
				return
			}
		}
	}()
	return l
}

// Write holds p for the next flush; it returns the first error of an earlier flush, if any.
func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return 0, l.err
	}
	return l.b.Write(p)
}

func (l *LogBuffer) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.b.Flush(); err != nil && l.err == nil {
		l.err = err
	}
}

// Close writes what is held and stops the flushing; it returns the first write error. A second
// Close returns the same.
func (l *LogBuffer) Close() error {
	l.once.Do(func() { close(l.stop) })
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}
