package linkcheck

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Target is one ARK target to check, as a TargetSource yields it.
type Target struct {
	// Key is the ledger key of the ARK ("NAAN/Name"); Run only passes it through.
	Key string
	// URL is the target URL to check (absolute, http or https).
	URL string
	// Prev is the ARK's state before this check; the zero State when it was
	// never checked. Run passes it to Next to compute the state after the check.
	Prev State
}

// Outcome is what a check says about a target's health.
type Outcome string

// The outcomes of a check.
const (
	// OutcomeGood: the final answer had a 2xx status and nothing failed.
	OutcomeGood Outcome = "good"
	// OutcomeFailed: a connection, protocol or redirect error, or a final
	// status other than 2xx and 429.
	OutcomeFailed Outcome = "failed"
	// OutcomeInconclusive: the check says nothing about the target, and
	// failure counts are left unchanged: the server answered 429 Too Many
	// Requests, or the SSRF guard refused the address (ErrBlocked, a policy
	// of this run, not a fault of the target; see DueAt).
	OutcomeInconclusive Outcome = "inconclusive"
)

// ErrorClass names why a check got no usable HTTP answer. The empty class
// means an HTTP response was received and judged by its status.
type ErrorClass string

// The error classes. They are derived from the Go error's type and errno,
// never from its message text.
const (
	// ErrNone: an HTTP response was received.
	ErrNone ErrorClass = ""
	// ErrBadURL: the target is not an absolute URL with a host.
	ErrBadURL ErrorClass = "bad_url"
	// ErrBadScheme: the target or a redirect is not http or https.
	ErrBadScheme ErrorClass = "bad_scheme"
	// ErrBlocked: every address of the host is in a refused range (see RefusedRange).
	ErrBlocked ErrorClass = "blocked"
	// ErrDNS: the host name did not resolve.
	ErrDNS ErrorClass = "dns"
	// ErrRefused: the connection was refused (ECONNREFUSED).
	ErrRefused ErrorClass = "refused"
	// ErrUnreachable: no route to the network or host.
	ErrUnreachable ErrorClass = "unreachable"
	// ErrReset: the connection was reset or closed before a complete answer.
	ErrReset ErrorClass = "reset"
	// ErrTimeout: the connect or request timeout expired.
	ErrTimeout ErrorClass = "timeout"
	// ErrTLS: the TLS handshake or certificate verification failed.
	ErrTLS ErrorClass = "tls"
	// ErrRedirectLoop: a redirect led back to a URL already requested in this check.
	ErrRedirectLoop ErrorClass = "redirect_loop"
	// ErrTooManyRedirects: more redirects than Config.MaxRedirects.
	ErrTooManyRedirects ErrorClass = "too_many_redirects"
	// ErrBadRedirect: a 301, 302, 303, 307 or 308 answer without a usable Location.
	ErrBadRedirect ErrorClass = "bad_redirect"
	// ErrOther: any other transport or protocol error (see Result.ErrorDetail).
	ErrOther ErrorClass = "other"
)

// Check is what one check learnt about a target: the part of a Result kept
// in the ARK's State.
type Check struct {
	// Time is when the check started (UTC wall clock).
	Time time.Time
	// Target is the URL checked.
	Target string
	// FinalURL is the last URL requested (after redirects); empty when no
	// request was made.
	FinalURL string
	// Status is the HTTP status of the last answer; 0 when there was none.
	Status int
	// Error is the error class; ErrNone when Status is the verdict.
	Error ErrorClass
	// Outcome is the verdict: good, failed or inconclusive.
	Outcome Outcome
	// MIME is the Content-Type header of the last answer, verbatim.
	MIME string
	// Size is the body size in bytes: the whole body's length when a GET read
	// it to the end, else the Content-Length header; -1 when unknown.
	Size int64
	// Duration is the time spent in requests (all hops), excluding waits for
	// a host's turn.
	Duration time.Duration
	// BodyHash is the lower-case hex digest of the body bytes a GET read
	// (the first Result.BodyRead bytes when Result.Truncated); empty when no
	// body was read.
	BodyHash string
	// HashAlg names BodyHash's algorithm ("sha256" for checks made here;
	// imported state may carry "md5"); empty when BodyHash is.
	HashAlg string
}

// Hop is one redirect in a Result's chain: the URL requested and the
// redirect status it answered with.
type Hop struct {
	// URL is the URL requested.
	URL string
	// Status is its redirect status (301, 302, 303, 307 or 308).
	Status int
}

// Result is one check of one target, as the ResultSink receives it.
type Result struct {
	// Key is the ARK's ledger key, from Target.Key.
	Key string
	// Host is the host key of the target URL (see HostKey); empty for a bad URL.
	Host string
	// Check is the check's findings (time, target, final URL, status or
	// error class, MIME type, size, duration, body hash).
	Check Check
	// Redirects is the redirect chain in order, at most Config.MaxRedirects+1 hops.
	Redirects []Hop
	// Method is the method of the last request: "HEAD" or "GET".
	Method string
	// HeadRefused is the status of a HEAD answer that made the check retry
	// with GET (see HeadRefusedStatus); 0 when none.
	HeadRefused int
	// Requests is the number of HTTP requests the check made.
	Requests int
	// Wait is the time spent waiting for hosts' turns after the first request
	// (redirect hops and a GET after HEAD wait for their host's interval).
	Wait time.Duration
	// BodyRead is the number of body bytes a GET read (at most Config.MaxBodyKiB KiB).
	BodyRead int64
	// Truncated reports that the body was longer than the read limit.
	Truncated bool
	// RetryAfter is the delay the server asked for with Retry-After on a 429
	// or 503 answer, after capping; 0 when none.
	RetryAfter time.Duration
	// ErrorDetail is the Go error text behind Check.Error, for people; do not
	// branch on it.
	ErrorDetail string
}

// HostKey returns the politeness key of a URL: its host name in lower case,
// without port, brackets or a trailing dot. It fails with ErrBadURL or
// ErrBadScheme (as a *URLError) for a URL that is not absolute http or https
// with a host.
func HostKey(rawURL string) (string, error) {
	u, err := parseTarget(rawURL)
	if err != nil {
		return "", err
	}
	return hostKeyOf(u), nil
}

func hostKeyOf(u *url.URL) string {
	return strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
}

func parseTarget(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, &URLError{URL: raw, Class: ErrBadURL, Reason: err.Error()}
	}
	return checkURL(raw, u)
}

func checkURL(raw string, u *url.URL) (*url.URL, error) {
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	case "":
		return nil, &URLError{URL: raw, Class: ErrBadURL, Reason: "not an absolute URL (no scheme)"}
	default:
		return nil, &URLError{URL: raw, Class: ErrBadScheme, Reason: fmt.Sprintf("scheme %q is not http or https", u.Scheme)}
	}
	if hostKeyOf(u) == "" {
		return nil, &URLError{URL: raw, Class: ErrBadURL, Reason: "no host"}
	}
	return u, nil
}

// MediaType returns the media type of a Content-Type value in lower case
// without parameters ("text/html;charset=UTF-8" -> "text/html"), the form
// Next compares; a value that does not parse is lower-cased and cut at the
// first ';'.
func MediaType(contentType string) string {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt, _, _ = strings.Cut(contentType, ";")
		mt = strings.ToLower(strings.TrimSpace(mt))
	}
	return mt
}

// HeadRefusedStatus reports whether a HEAD answer with this status makes the
// check repeat the request with GET: 405 Method Not Allowed and 501 Not
// Implemented say HEAD is unsupported; 400, 403, 404, 406 and 500 are what
// servers and frameworks that route or sign only GET commonly answer to a
// HEAD, so a failure is only counted after a GET confirms it. 401, 410, 429,
// 502, 503 and 504 are taken as they are.
func HeadRefusedStatus(status int) bool {
	switch status {
	case 400, 403, 404, 405, 406, 500, 501:
		return true
	}
	return false
}

func outcomeOf(c *Check) Outcome {
	switch {
	case c.Error == ErrBlocked:
		return OutcomeInconclusive
	case c.Error != ErrNone:
		return OutcomeFailed
	case c.Status >= 200 && c.Status <= 299:
		return OutcomeGood
	case c.Status == 429:
		return OutcomeInconclusive
	}
	return OutcomeFailed
}

// classify maps a transport error to its class by type and errno.
func classify(err error) ErrorClass {
	var ue *URLError
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var hostErr x509.HostnameError
	var authErr x509.UnknownAuthorityError
	var invErr x509.CertificateInvalidError
	var recErr tls.RecordHeaderError
	var alert tls.AlertError
	var netErr net.Error
	switch {
	case Blocked(err):
		return ErrBlocked
	case errors.As(err, &ue):
		return ue.Class
	case errors.As(err, &dnsErr):
		if dnsErr.IsTimeout {
			return ErrTimeout
		}
		return ErrDNS
	case errors.Is(err, context.DeadlineExceeded):
		return ErrTimeout
	case errors.As(err, &certErr), errors.As(err, &hostErr), errors.As(err, &authErr),
		errors.As(err, &invErr), errors.As(err, &recErr), errors.As(err, &alert):
		return ErrTLS
	case errors.Is(err, syscall.ECONNREFUSED):
		return ErrRefused
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return ErrUnreachable
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return ErrReset
	case errors.As(err, &netErr) && netErr.Timeout():
		return ErrTimeout
	}
	return ErrOther
}
