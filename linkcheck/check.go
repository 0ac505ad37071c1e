package linkcheck

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// checker makes the HTTP requests of checks.
type checker struct {
	cfg    Config
	client *http.Client
	ua     string
	s      *sched
}

func newChecker(cfg Config, s *sched) *checker {
	d := newGuardedDialer(addrGuard{allowPrivate: cfg.AllowPrivate, allow: cfg.AllowPrefixes}, cfg.Resolver, cfg.ConnectTimeout)
	tr := &http.Transport{
		Proxy:                  nil, // a proxy would dial on our behalf, past the address guard
		DialContext:            d.DialContext,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    cfg.ConnectTimeout,
		ResponseHeaderTimeout:  cfg.RequestTimeout,
		MaxIdleConns:           cfg.MaxIdleConns,
		MaxIdleConnsPerHost:    1,
		MaxConnsPerHost:        1,
		IdleConnTimeout:        30 * time.Second,
		DisableCompression:     true, // sizes and hashes are of the bytes as served
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &checker{
		cfg: cfg,
		client: &http.Client{
			Transport:     tr,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		ua: cfg.UserAgent(),
		s:  s,
	}
}

func (c *checker) close() { c.client.CloseIdleConnections() }

// attempt is the outcome of one request.
type attempt struct {
	status    int
	header    http.Header
	length    int64 // Content-Length, -1 unknown
	bodyRead  int64
	truncated bool
	hash      string
	err       error
	dur       time.Duration
	end       time.Time
}

func isRedirect(status int) bool {
	switch status {
	case 301, 302, 303, 307, 308:
		return true
	}
	return false
}

// do makes one request; with readBody it reads up to MaxBodyKiB KiB of the
// body and hashes them. The response is closed before do returns.
func (c *checker) do(ctx context.Context, method string, u *url.URL, readBody bool) attempt {
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	a := attempt{length: -1}
	req, err := http.NewRequestWithContext(rctx, method, u.String(), nil)
	if err != nil {
		a.err = &URLError{URL: u.String(), Class: ErrBadURL, Reason: err.Error()}
		a.end = time.Now()
		return a
	}
	req.Header.Set("User-Agent", c.ua)
	req.Header.Set("Accept", "*/*")
	resp, err := c.client.Do(req)
	if err != nil {
		a.err = err
		a.end = time.Now()
		a.dur = a.end.Sub(start)
		return a
	}
	a.status, a.header, a.length = resp.StatusCode, resp.Header, resp.ContentLength
	if readBody && method == http.MethodGet && !isRedirect(resp.StatusCode) {
		limit := int64(c.cfg.MaxBodyKiB) << 10
		h := sha256.New()
		n, err := io.Copy(h, io.LimitReader(resp.Body, limit))
		a.bodyRead = n
		if err == nil && n == limit {
			var one [1]byte
			m, _ := io.ReadFull(resp.Body, one[:])
			a.truncated = m > 0
		}
		if err != nil {
			a.err = err
		}
		a.hash = hex.EncodeToString(h.Sum(nil))
	}
	// Drain a little of an unread body so the connection can be reused.
	_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
	resp.Body.Close()
	a.end = time.Now()
	a.dur = a.end.Sub(start)
	return a
}

// retryAfter returns the capped delay a 429 or 503 answer asks for.
func (c *checker) retryAfter(a attempt) time.Duration {
	if a.status != 429 && a.status != 503 {
		return 0
	}
	d, ok := ParseRetryAfter(a.header.Get("Retry-After"), a.end)
	if !ok {
		return 0
	}
	return min(d, c.cfg.MaxRetryAfter)
}

// ParseRetryAfter parses a Retry-After header value: delay-seconds (a
// non-negative integer) or an HTTP-date (RFC 9110 §10.2.3; the three date
// forms http.ParseTime accepts), returned as a delay from now (0 for a date
// in the past). ok is false for an empty or malformed value.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseUint(v, 10, 64); err == nil {
		const maxSeconds = uint64(math.MaxInt64 / int64(time.Second))
		return time.Duration(min(n, maxSeconds)) * time.Second, true
	}
	var numErr *strconv.NumError
	if _, err := strconv.ParseUint(v, 10, 64); errors.As(err, &numErr) && errors.Is(numErr.Err, strconv.ErrRange) {
		return time.Duration(math.MaxInt64), true // more seconds than a Duration holds: capped by the caller
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	if d := t.Sub(now); d > 0 {
		return d, true
	}
	return 0, true
}

// check checks one target whose host h the scheduler has already marked
// busy. aborted is true when ctx ended during the check: such a check
// says nothing about the target and is not recorded.
func (c *checker) check(ctx context.Context, t Target, u *url.URL, h *host) (r Result, aborted bool) {
	r = Result{Key: t.Key, Host: h.key}
	ck := &r.Check
	ck.Time = time.Now().UTC()
	ck.Target = t.URL
	ck.Size = -1
	method := http.MethodHead
	if c.cfg.Body == BodyAlways {
		method = http.MethodGet
	}
	visited := map[string]bool{u.String(): true}
	cur := u
	first := true
	for {
		if !first {
			var waited time.Duration
			var err error
			h, waited, err = c.s.acquire(ctx, hostKeyOf(cur))
			r.Wait += waited
			if err != nil {
				return r, true
			}
		}
		first = false
		a := c.do(ctx, method, cur, method == http.MethodGet)
		r.RetryAfter = c.retryAfter(a)
		c.s.release(h, a.end, r.RetryAfter)
		if ctx.Err() != nil {
			return r, true
		}
		r.Requests++
		ck.Duration += a.dur
		ck.FinalURL = cur.String()
		r.Method = method
		ck.Status = a.status
		if a.err != nil {
			cls := classify(a.err)
			if method == http.MethodHead && (cls == ErrReset || cls == ErrOther) {
				method = http.MethodGet // some servers drop the connection on HEAD
				continue
			}
			ck.Error, r.ErrorDetail = cls, a.err.Error()
			break
		}
		if isRedirect(a.status) {
			loc := a.header.Get("Location")
			next, err := cur.Parse(loc)
			if loc == "" || err != nil {
				ck.Error, r.ErrorDetail = ErrBadRedirect, "Location "+strconv.Quote(loc)+" is missing or unparsable"
				break
			}
			r.Redirects = append(r.Redirects, Hop{URL: cur.String(), Status: a.status})
			if _, err := checkURL(loc, next); err != nil {
				ck.Error, r.ErrorDetail = classify(err), err.Error()
				break
			}
			if visited[next.String()] {
				ck.Error, r.ErrorDetail = ErrRedirectLoop, "redirect back to "+next.String()
				break
			}
			if len(r.Redirects) > c.cfg.MaxRedirects {
				ck.Error, r.ErrorDetail = ErrTooManyRedirects, "more than "+strconv.Itoa(c.cfg.MaxRedirects)+" redirects"
				break
			}
			visited[next.String()] = true
			cur = next
			continue
		}
		if method == http.MethodHead {
			if HeadRefusedStatus(a.status) {
				r.HeadRefused = a.status
				method = http.MethodGet
				continue
			}
			if c.cfg.Body == BodyAuto && a.status >= 200 && a.status <= 299 && a.length < 0 {
				method = http.MethodGet
				continue
			}
		}
		ck.MIME = a.header.Get("Content-Type")
		ck.Size = a.length
		if method == http.MethodGet {
			r.BodyRead, r.Truncated = a.bodyRead, a.truncated
			ck.BodyHash, ck.HashAlg = a.hash, "sha256"
			if !a.truncated {
				ck.Size = a.bodyRead
			}
		}
		break
	}
	ck.Outcome = outcomeOf(ck)
	return r, false
}
