package api

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Defaults of the per-client rate limit that arkhe serve --api applies (Config's zero value
// applies none).
const (
	// DefaultRate is the requests a second one client may make on average.
	DefaultRate = 50
	// DefaultBurst is the requests one client may make at once, above the average.
	DefaultBurst = 100
)

// clientLimits is a token bucket per client (golang.org/x/time/rate): each holds up to burst
// requests and refills at perSecond. The buckets are keyed by the registered client a request
// authenticated as, so there are at most as many as registered clients.
type clientLimits struct {
	perSecond float64
	burst     int
	mu        sync.Mutex
	buckets   map[string]*rate.Limiter
}

// take spends one request of client's bucket at now; when the bucket is empty it spends
// nothing and returns how long until a request would be allowed.
func (l *clientLimits) take(client string, now time.Time) (time.Duration, bool) {
	l.mu.Lock()
	b := l.buckets[client]
	if b == nil {
		b = rate.NewLimiter(rate.Limit(l.perSecond), l.burst)
		l.buckets[client] = b
	}
	l.mu.Unlock()
	r := b.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d, false
	}
	return 0, true
}

// rule states the limit, for the body of a 429.
func (l *clientLimits) rule(client string, wait time.Duration) string {
	return fmt.Sprintf("client %s: rate limit: at most %s requests a second on average, %d at once; retry after %s s",
		client, strconv.FormatFloat(l.perSecond, 'g', -1, 64), l.burst, retryAfterSeconds(wait))
}

// retryAfterSeconds is wait as Retry-After's whole seconds, rounded up, at least 1.
func retryAfterSeconds(wait time.Duration) string {
	s := int64(math.Ceil(wait.Seconds()))
	if s < 1 {
		s = 1
	}
	return strconv.FormatInt(s, 10)
}

// throttle spends one request of p's client's bucket: nil when the request may go on (or no
// limit is set, or p is no client), else arklet's 429 with Retry-After and the rule as
// {"__all__": [rule]} (the shape of arklet's form errors, for an error of no one field).
func (s *Server) throttle(p principal) *answer {
	if s.limits == nil || p.clientID == "" {
		return nil
	}
	wait, ok := s.limits.take(p.clientID, time.Now())
	if ok {
		return nil
	}
	s.throttled.Add(1)
	return &answer{status: http.StatusTooManyRequests, json: map[string][]string{"__all__": {s.limits.rule(p.clientID, wait)}},
		header: map[string]string{"Retry-After": retryAfterSeconds(wait)}, throttled: true}
}

// ezidThrottled is throttle's 429 in EZID's form: "error: too many requests - RULE".
func ezidThrottled(a *answer) *ezidAnswer {
	rule := ""
	if m, ok := a.json.(map[string][]string); ok && len(m["__all__"]) == 1 {
		rule = m["__all__"][0]
	}
	return &ezidAnswer{status: http.StatusTooManyRequests, line: "error: too many requests - " + rule,
		header: map[string]string{"Retry-After": a.header["Retry-After"]}}
}
