package linkcheck

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// TestStatuses: 200 with and without Content-Length, 404, 500, 410, a
// HEAD-refusing server (405 then GET), the User-Agent sent.
func TestStatuses(t *testing.T) {
	t.Parallel()
	const page = "<html><body>hello</body></html>"
	var uaMu sync.Mutex
	uas := map[string]bool{}
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(page)))
		io.WriteString(w, page)
	})
	mux.HandleFunc("/chunked", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "part one,")
		w.(http.Flusher).Flush() // no Content-Length: chunked
		io.WriteString(w, "part two")
	})
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	mux.HandleFunc("/error", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) })
	mux.HandleFunc("/gone", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "gone", http.StatusGone) })
	mux.HandleFunc("/nohead", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/pdf")
		io.WriteString(w, "%PDF-1.4 pretend")
	})
	var log reqLog
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		uaMu.Lock()
		uas[r.Header.Get("User-Agent")] = true
		uaMu.Unlock()
		log.wrap(mux).ServeHTTP(w, r)
	}))
	var targets []Target
	for _, p := range []string{"ok", "chunked", "missing", "error", "gone", "nohead"} {
		targets = append(targets, Target{Key: "99999/" + p, URL: srv.URL + "/" + p})
	}
	cfg := testConfig()
	sum, sink := run(t, cfg, targets)
	got := sink.byKey(t)

	type want struct {
		status      int
		outcome     Outcome
		method      string
		headRefused int
		requests    int
		size        int64
		mime        string
		hash        string
	}
	wants := map[string]want{
		"ok":      {200, OutcomeGood, "HEAD", 0, 1, int64(len(page)), "text/html; charset=utf-8", ""},
		"chunked": {200, OutcomeGood, "GET", 0, 2, 17, "text/plain", sha("part one,part two")},
		"missing": {404, OutcomeFailed, "GET", 404, 2, 19, "text/plain; charset=utf-8", sha("404 page not found\n")},
		"error":   {500, OutcomeFailed, "GET", 500, 2, 5, "text/plain; charset=utf-8", sha("boom\n")},
		// Go's server gives a HEAD answer the Content-Length of the body the handler wrote ("gone\n").
		"gone":   {410, OutcomeFailed, "HEAD", 0, 1, 5, "text/plain; charset=utf-8", ""},
		"nohead": {200, OutcomeGood, "GET", 405, 2, 16, "application/pdf", sha("%PDF-1.4 pretend")},
	}
	for p, w := range wants {
		r, ok := got["99999/"+p]
		if !ok {
			t.Errorf("%s: no record", p)
			continue
		}
		c := r.Result.Check
		if c.Status != w.status || c.Outcome != w.outcome || r.Result.Method != w.method || r.Result.HeadRefused != w.headRefused ||
			r.Result.Requests != w.requests || c.Size != w.size || c.MIME != w.mime || c.BodyHash != w.hash || c.Error != ErrNone {
			t.Errorf("%s: got status %d outcome %s method %s headRefused %d requests %d size %d mime %q hash %.12s err %q\nwant %+v",
				p, c.Status, c.Outcome, r.Result.Method, r.Result.HeadRefused, r.Result.Requests, c.Size, c.MIME, c.BodyHash, c.Error, w)
		}
		if w.hash != "" && c.HashAlg != "sha256" {
			t.Errorf("%s: hash algorithm %q, want sha256", p, c.HashAlg)
		}
		if c.FinalURL != srv.URL+"/"+p || c.Target != srv.URL+"/"+p || c.Time.IsZero() || c.Duration <= 0 {
			t.Errorf("%s: final %q target %q time %v duration %v", p, c.FinalURL, c.Target, c.Time, c.Duration)
		}
	}
	if sum.Checked != 6 || sum.Good != 3 || sum.Failed != 3 || sum.Read != 6 || sum.Stop != StopSourceDone || !sum.SourceDone {
		t.Errorf("summary %+v", sum)
	}
	if len(sum.Hosts) != 1 || sum.Hosts[0].Host != "127.0.0.1" || sum.Hosts[0].Seen != 6 || sum.Hosts[0].Checked != 6 || sum.Hosts[0].Requests != 10 {
		t.Errorf("hosts %+v", sum.Hosts)
	}
	if n := log.checkPolite(t, "one host", cfg.PerHostInterval, time.Millisecond); n != 10 {
		t.Errorf("server saw %d requests, want 10", n)
	}
	wantUA := "arkhe/test (+" + testContact + ")"
	if len(uas) != 1 || !uas[wantUA] {
		t.Errorf("User-Agents %v, want only %q", uas, wantUA)
	}
}

// TestTimeout: a server slower than RequestTimeout gives ErrTimeout.
func TestTimeout(t *testing.T) {
	t.Parallel()
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // never answers; returns when the client gives up
	}))
	cfg := testConfig()
	cfg.RequestTimeout = 100 * time.Millisecond
	sum, sink := run(t, cfg, []Target{{Key: "99999/slow", URL: srv.URL + "/slow"}})
	r := sink.byKey(t)["99999/slow"].Result
	if r.Check.Error != ErrTimeout || r.Check.Outcome != OutcomeFailed || r.Check.Status != 0 || r.Method != "HEAD" || r.Requests != 1 {
		t.Errorf("got %+v", r)
	}
	if sum.Failed != 1 {
		t.Errorf("summary %+v", sum)
	}
}

// TestRedirects: a recorded chain, a loop, the redirect limit, relative and
// bad Locations.
func TestRedirects(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/r1", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/r2", http.StatusFound) })
	mux.HandleFunc("/r2", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "final?x=1", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/final", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "2")
		io.WriteString(w, "ok")
	})
	mux.HandleFunc("/a", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/b", http.StatusTemporaryRedirect) })
	mux.HandleFunc("/b", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/a", http.StatusPermanentRedirect) })
	mux.HandleFunc("/n/", func(w http.ResponseWriter, r *http.Request) {
		k, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/n/"))
		http.Redirect(w, r, "/n/"+strconv.Itoa(k+1), http.StatusFound)
	})
	mux.HandleFunc("/ftp", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "ftp://example.org/x", http.StatusFound)
	})
	mux.HandleFunc("/noloc", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(302) })
	var log reqLog
	srv := newServer(t, log.wrap(mux))
	u := srv.URL
	targets := []Target{
		{Key: "chain", URL: u + "/r1"}, {Key: "loop", URL: u + "/a"}, {Key: "limit", URL: u + "/n/0"},
		{Key: "ftp", URL: u + "/ftp"}, {Key: "noloc", URL: u + "/noloc"},
	}
	cfg := testConfig()
	cfg.MaxRedirects = 3
	_, sink := run(t, cfg, targets)
	got := sink.byKey(t)

	chain := got["chain"].Result
	wantChain := []Hop{{u + "/r1", 302}, {u + "/r2", 301}}
	if chain.Check.Outcome != OutcomeGood || chain.Check.FinalURL != u+"/final?x=1" || fmt.Sprint(chain.Redirects) != fmt.Sprint(wantChain) || chain.Requests != 3 {
		t.Errorf("chain: %+v", chain)
	}
	loop := got["loop"].Result
	if loop.Check.Error != ErrRedirectLoop || loop.Check.Outcome != OutcomeFailed || len(loop.Redirects) != 2 || loop.Requests != 2 {
		t.Errorf("loop: %+v", loop)
	}
	limit := got["limit"].Result
	if limit.Check.Error != ErrTooManyRedirects || len(limit.Redirects) != 4 || limit.Requests != 4 || limit.Check.FinalURL != u+"/n/3" {
		t.Errorf("limit: %+v", limit)
	}
	if r := got["ftp"].Result; r.Check.Error != ErrBadScheme || r.Check.Status != 302 || len(r.Redirects) != 1 {
		t.Errorf("ftp: %+v", r)
	}
	if r := got["noloc"].Result; r.Check.Error != ErrBadRedirect || r.Check.Status != 302 || r.Check.Outcome != OutcomeFailed {
		t.Errorf("noloc: %+v", r)
	}
	log.checkPolite(t, "redirects", cfg.PerHostInterval, time.Millisecond)
}

// TestRetryAfter: a 429 with Retry-After pushes the host's next request
// back by that delay; the check is inconclusive; the cap applies.
func TestRetryAfter(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	var log reqLog
	srv := newServer(t, log.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/capped":
			w.Header().Set("Retry-After", "3600")
			w.WriteHeader(503)
		case n.Add(1) == 1:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(429)
		default:
			w.Header().Set("Content-Length", "0")
		}
	})))
	cfg := testConfig()
	cfg.Workers = 2
	_, sink := run(t, cfg, []Target{{Key: "first", URL: srv.URL + "/1"}, {Key: "second", URL: srv.URL + "/2"}})
	got := sink.byKey(t)
	first := got["first"].Result
	if first.Check.Status != 429 || first.Check.Outcome != OutcomeInconclusive || first.RetryAfter != time.Second || first.Requests != 1 {
		t.Errorf("first: %+v", first)
	}
	if s := got["first"].State; s.ConsecutiveFailures != 0 || !s.Failing() {
		t.Errorf("state after 429: %+v", s)
	}
	if got["second"].Result.Check.Outcome != OutcomeGood {
		t.Errorf("second: %+v", got["second"].Result)
	}
	// The second request waited for Retry-After, not only the 5 ms interval.
	log.checkPolite(t, "retry-after", time.Second, 10*time.Millisecond)

	cfg.MaxRetryAfter = 50 * time.Millisecond
	sum, sink := run(t, cfg, []Target{{Key: "capped", URL: srv.URL + "/capped"}})
	r := sink.byKey(t)["capped"].Result
	if r.RetryAfter != 50*time.Millisecond || r.Check.Status != 503 || r.Check.Outcome != OutcomeFailed {
		t.Errorf("capped: %+v", r)
	}
	if h := sum.Hosts[0]; h.Throttled != 1 || h.RetryAfter != 50*time.Millisecond {
		t.Errorf("host stats %+v", h)
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 12, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"120", 2 * time.Minute, true},
		{"0", 0, true},
		{"Tue, 12 May 2026 10:00:30 GMT", 30 * time.Second, true},   // IMF-fixdate
		{"Tuesday, 12-May-26 10:01:00 GMT", time.Minute, true},      // RFC 850
		{"Tue May 12 10:00:05 2026", 5 * time.Second, true},         // asctime
		{"Tue, 12 May 2026 09:00:00 GMT", 0, true},                  // in the past
		{"99999999999999999999999", time.Duration(1<<63 - 1), true}, // absurd, capped later
		{"", 0, false}, {"-5", 0, false}, {"1.5", 0, false}, {"soon", 0, false},
	} {
		d, ok := ParseRetryAfter(c.in, now)
		if d != c.want || ok != c.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", c.in, d, ok, c.want, c.ok)
		}
	}
}

// TestContentChanged: three runs over one target whose size, then media
// type change; state flows from each run to the next.
func TestContentChanged(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	body, ctype := strings.Repeat("x", 1000), "text/html; charset=utf-8"
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		b, c := body, ctype
		mu.Unlock()
		w.Header().Set("Content-Type", c)
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		io.WriteString(w, b)
	}))
	set := func(b, c string) { mu.Lock(); body, ctype = b, c; mu.Unlock() }
	cfg := testConfig()
	var prev State
	step := func(name string, want ...TransitionKind) {
		t.Helper()
		_, sink := run(t, cfg, []Target{{Key: "k", URL: srv.URL + "/doc", Prev: prev}})
		rec := sink.byKey(t)["k"]
		var kinds []TransitionKind
		for _, tr := range rec.Transitions {
			kinds = append(kinds, tr.Kind)
		}
		if fmt.Sprint(kinds) != fmt.Sprint(want) {
			t.Errorf("%s: transitions %v (%+v), want %v", name, kinds, rec.Transitions, want)
		}
		prev = rec.State
	}
	step("first")
	set(strings.Repeat("x", 700), "text/html;charset=UTF-8") // -30%, same media type
	step("small change")
	set(strings.Repeat("x", 100), "text/html")
	step("size", ContentChanged)
	set(strings.Repeat("x", 100), "application/pdf")
	step("media type", ContentChanged)
	if prev.GoodSize != 100 || prev.GoodMediaType != "application/pdf" || prev.GoodHost != "127.0.0.1" {
		t.Errorf("state %+v", prev)
	}
}

// TestManyPathsOneHost: many workers, one host: never two requests at once,
// the interval held between every pair, including HEAD then GET.
func TestManyPathsOneHost(t *testing.T) {
	t.Parallel()
	var log reqLog
	srv := newServer(t, log.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Each request takes longer than the interval, so a second request
		// started at the interval but before the end of the first would overlap.
		time.Sleep(30 * time.Millisecond)
		if strings.HasPrefix(r.URL.Path, "/nohead/") && r.Method == http.MethodHead {
			w.WriteHeader(405)
			return
		}
		w.Header().Set("Content-Length", "2")
		io.WriteString(w, "ok")
	})))
	var targets []Target
	for i := range 24 {
		p := "/p/"
		if i%3 == 0 {
			p = "/nohead/"
		}
		targets = append(targets, Target{Key: strconv.Itoa(i), URL: srv.URL + p + strconv.Itoa(i)})
	}
	cfg := testConfig()
	cfg.Workers = 8
	cfg.PerHostInterval = 20 * time.Millisecond
	sum, _ := run(t, cfg, targets)
	if sum.Checked != 24 || sum.Good != 24 {
		t.Fatalf("summary %+v", sum)
	}
	if n := log.checkPolite(t, "one host", cfg.PerHostInterval, 5*time.Millisecond); n != 32 {
		t.Errorf("server saw %d requests, want 32 (24 + 8 GETs after 405)", n)
	}
}

// TestManyHosts: several servers under distinct names; each is treated
// politely on its own, redirects across hosts wait for the host they go to,
// and a stalled host does not hold up the others.
func TestManyHosts(t *testing.T) {
	t.Parallel()
	const hosts, per = 5, 8
	logs := make([]*reqLog, hosts)
	// Listen first, so every handler is built knowing every port.
	lns := make([]net.Listener, hosts)
	srvs := make([]string, hosts)
	var names []string
	for i := range hosts {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
		srvs[i] = strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		names = append(names, fmt.Sprintf("h%d.test", i))
	}
	for i := range hosts {
		logs[i] = &reqLog{}
		prevURL := ""
		if i > 0 {
			prevURL = fmt.Sprintf("http://h%d.test:%s/p/x", i-1, srvs[i-1])
		}
		newServerLn(t, lns[i], logs[i].wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/hop/") && prevURL != "" {
				http.Redirect(w, r, prevURL, http.StatusFound) // to the previous host
				return
			}
			w.Header().Set("Content-Length", "2")
			io.WriteString(w, "ok")
		})))
	}
	var targets []Target
	for k := range per {
		for i := range hosts {
			p := "/p/"
			if k%2 == 1 {
				p = "/hop/"
			}
			targets = append(targets, Target{Key: fmt.Sprintf("%d-%d", i, k), URL: fmt.Sprintf("http://%s:%s%s%d", names[i], srvs[i], p, k)})
		}
	}
	cfg := testConfig()
	cfg.Workers = 3
	cfg.PerHostInterval = 30 * time.Millisecond
	cfg.Resolver = loopbackResolver(names...)
	sum, sink := run(t, cfg, targets)
	if sum.Checked != hosts*per || sum.Good != hosts*per {
		t.Fatalf("summary %+v", sum)
	}
	for i, l := range logs {
		l.checkPolite(t, names[i], cfg.PerHostInterval, 5*time.Millisecond)
	}
	hop := sink.byKey(t)["3-1"].Result
	if len(hop.Redirects) != 1 || hop.Check.FinalURL != fmt.Sprintf("http://h2.test:%s/p/x", srvs[2]) || hop.Host != "h3.test" {
		t.Errorf("hop: %+v", hop)
	}
	if len(sum.Hosts) != hosts || sum.Hosts[0].Seen != per {
		t.Errorf("hosts %+v", sum.Hosts)
	}
}

// TestStalledHostDoesNotBlockOthers: one host never answers until every
// other host's targets are recorded; with two workers, one is stuck on it
// and the other must serve everything else.
func TestStalledHostDoesNotBlockOthers(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	stalled := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	fast := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "0")
	}))
	names := []string{"slow.test", "f1.test", "f2.test", "f3.test"}
	var targets []Target
	for k := range 3 {
		targets = append(targets, Target{Key: fmt.Sprintf("slow-%d", k), URL: fmt.Sprintf("http://slow.test:%s/%d", port(stalled), k)})
	}
	for k := range 4 {
		for _, n := range names[1:] {
			targets = append(targets, Target{Key: n + strconv.Itoa(k), URL: fmt.Sprintf("http://%s:%s/%d", n, port(fast), k)})
		}
	}
	var fastDone atomic.Int32
	sink := &collectSink{onRecord: func(r FileRecord) {
		if r.Result.Host != "slow.test" && fastDone.Add(1) == 12 {
			close(release)
		}
	}}
	cfg := testConfig()
	cfg.Workers = 2
	cfg.Resolver = loopbackResolver(names...)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	sum, err := Run(ctx, cfg, SliceSource(targets), sink)
	if err != nil {
		t.Fatalf("Run: %v (the fast hosts were held up by the stalled one)", err)
	}
	if sum.Checked != 15 || sum.Good != 15 {
		t.Errorf("summary %+v", sum)
	}
	// The first slow check was recorded after all 12 fast ones.
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if len(sink.recs) < 12 {
		t.Fatalf("%d records", len(sink.recs))
	}
	for i, r := range sink.recs[:12] {
		if r.Result.Host == "slow.test" {
			t.Errorf("record %d is the slow host's, before the fast hosts were done", i)
		}
	}
}

// TestBadURLs: targets no request can be made for are recorded as failed.
func TestBadURLs(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	sum, sink := run(t, cfg, []Target{
		{Key: "ftp", URL: "ftp://example.org/x"}, {Key: "rel", URL: "/just/a/path"},
		{Key: "nohost", URL: "http:///x"}, {Key: "bad", URL: "http://[::1"},
	})
	want := map[string]ErrorClass{"ftp": ErrBadScheme, "rel": ErrBadURL, "nohost": ErrBadURL, "bad": ErrBadURL}
	for k, r := range sink.byKey(t) {
		if r.Result.Check.Error != want[k] || r.Result.Check.Outcome != OutcomeFailed || r.Result.Requests != 0 || r.State.ConsecutiveFailures != 1 {
			t.Errorf("%s: %+v", k, r.Result)
		}
	}
	if sum.Checked != 4 || sum.Failed != 4 {
		t.Errorf("summary %+v", sum)
	}
}

// TestLimitAndDeferred: Limit bounds the checks started; a host's full
// queue defers further targets, which the summary counts.
func TestLimitAndDeferred(t *testing.T) {
	t.Parallel()
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "0")
	}))
	var targets []Target
	for i := range 10 {
		targets = append(targets, Target{Key: strconv.Itoa(i), URL: srv.URL + "/" + strconv.Itoa(i)})
	}
	cfg := testConfig()
	cfg.Limit = 3
	sum, _ := run(t, cfg, targets)
	if sum.Checked != 3 || sum.Stop != StopLimit || sum.Checked+sum.Unchecked+sum.Deferred != sum.Read {
		t.Errorf("limit: %+v", sum)
	}

	// HostQueue 2, one worker stuck on the first request until all ten are read.
	read := make(chan struct{})
	blocking := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-read
		w.Header().Set("Content-Length", "0")
	}))
	i := 0
	src := SourceFunc(func(ctx context.Context) (Target, error) {
		if i == 10 {
			close(read)
			i++
		}
		if i > 10 {
			return Target{}, io.EOF
		}
		i++
		return Target{Key: strconv.Itoa(i), URL: blocking.URL + "/" + strconv.Itoa(i)}, nil
	})
	cfg = testConfig()
	cfg.Workers, cfg.HostQueue = 1, 2
	sink := &collectSink{}
	sum, err := Run(t.Context(), cfg, src, sink)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Read != 10 || sum.Checked+sum.Deferred != 10 || sum.Deferred < 7 || sum.Hosts[0].Deferred != sum.Deferred || sum.Stop != StopSourceDone {
		t.Errorf("deferred: %+v", sum)
	}
}

// TestCancel: a check in flight when the context is cancelled is not
// recorded; Run returns the context's error.
func TestCancel(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-r.Context().Done()
	}))
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-started; cancel() }()
	sink := &collectSink{}
	sum, err := Run(ctx, testConfig(), SliceSource([]Target{{Key: "a", URL: srv.URL + "/a"}, {Key: "b", URL: srv.URL + "/b"}}), sink)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
	if sum.Aborted != 1 || sum.Checked != 0 || len(sink.recs) != 0 || sum.Stop != StopCancelled {
		t.Errorf("summary %+v, %d records", sum, len(sink.recs))
	}
}

// TestSinkError: a failing sink stops the run with its error.
func TestSinkError(t *testing.T) {
	t.Parallel()
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "0")
	}))
	boom := errors.New("disk full")
	var n atomic.Int32
	sink := SinkFunc(func(context.Context, Result, State, []Transition) error {
		if n.Add(1) == 2 {
			return boom
		}
		return nil
	})
	var targets []Target
	for i := range 20 {
		targets = append(targets, Target{Key: strconv.Itoa(i), URL: srv.URL + "/" + strconv.Itoa(i)})
	}
	cfg := testConfig()
	cfg.Workers = 1
	sum, err := Run(t.Context(), cfg, SliceSource(targets), sink)
	if !errors.Is(err, boom) || sum.Stop != StopSinkError || sum.Checked != 1 {
		t.Errorf("err %v, summary %+v", err, sum)
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cfg   Config
		field string
	}{
		{Config{}, "Contact"},
		{Config{Contact: "not a url"}, "Contact"},
		{Config{Contact: "ftp://x.org/"}, "Contact"},
		{Config{Contact: testContact, Workers: -1}, "Workers"},
		{Config{Contact: testContact, Version: "1 (x)"}, "Version"},
		{Config{Contact: testContact, HostIntervals: map[string]time.Duration{"Example.org": time.Second}}, "HostIntervals"},
		{Config{Contact: testContact, HostIntervals: map[string]time.Duration{"example.org": 0}}, "HostIntervals"},
		{Config{Contact: testContact, Policy: Policy{SizeShare: 1.5}}, "Policy.SizeShare"},
		{Config{Contact: testContact, Body: 7}, "Body"},
	} {
		_, err := Run(t.Context(), c.cfg, SliceSource(nil), &collectSink{})
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field {
			t.Errorf("%+v: err %v, want a ConfigError on %s", c.cfg, err, c.field)
		}
	}
	if ua := (Config{Contact: "mailto:ark@example.org"}).UserAgent(); ua != "arkhe/dev (+mailto:ark@example.org)" {
		t.Errorf("UserAgent %q", ua)
	}
	cfg, err := Config{Contact: testContact, HostIntervals: map[string]time.Duration{"slow.example": 5 * time.Second}}.withDefaults()
	if err != nil || cfg.intervalFor("slow.example") != 5*time.Second || cfg.intervalFor("other.example") != time.Second ||
		cfg.Workers != DefaultWorkers || cfg.Policy != DefaultPolicy() {
		t.Errorf("defaults: %+v %v", cfg, err)
	}
}

func TestHostKey(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"http://Example.ORG:8080/x":   "example.org",
		"https://example.org./":       "example.org",
		"http://[2001:DB8::1]:80/":    "2001:db8::1",
		"http://user@host.example/ok": "host.example",
	} {
		if got, err := HostKey(in); got != want || err != nil {
			t.Errorf("HostKey(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	var ue *URLError
	if _, err := HostKey("mailto:x@y.org"); !errors.As(err, &ue) || ue.Class != ErrBadScheme {
		t.Errorf("mailto: %v", err)
	}
}
