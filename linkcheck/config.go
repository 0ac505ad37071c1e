package linkcheck

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// BodyPolicy says when a check reads the body with GET instead of HEAD.
type BodyPolicy int

const (
	// BodyAuto (the default): HEAD first; GET when the HEAD answer is 2xx
	// without a Content-Length (so the size is known), or when HEAD is
	// refused (see HeadRefusedStatus).
	BodyAuto BodyPolicy = iota
	// BodyNever: HEAD first; GET only when HEAD is refused.
	BodyNever
	// BodyAlways: GET every time, so every good check carries a body hash.
	BodyAlways
)

// Defaults of Config, applied to zero fields.
const (
	DefaultWorkers         = 16               // checks in flight across hosts
	DefaultPerHostInterval = time.Second      // end of one request to a host to start of the next
	DefaultConnectTimeout  = 10 * time.Second // TCP connect and TLS handshake
	DefaultRequestTimeout  = 30 * time.Second // one request, to the end of the body read
	DefaultMaxRedirects    = 10               // redirects followed per check
	DefaultMaxBodyKiB      = 256              // KiB of body a GET reads
	DefaultMaxRetryAfter   = 10 * time.Minute // cap on a Retry-After delay
	DefaultLookAhead       = 10000            // targets held in memory
	DefaultHostQueue       = 1000             // targets held for one host
	DefaultMaxIdleConns    = 256              // idle keep-alive connections across hosts
	DefaultMaxHostStats    = 10000            // hosts with their own Summary figures
	DefaultVersion         = "dev"            // version in the User-Agent
)

// Config sets up a Run. Zero fields take the defaults named on them; only
// Contact is required.
type Config struct {
	// Workers is the number of checks in flight at once, across hosts
	// (default DefaultWorkers).
	Workers int
	// PerHostInterval is the least time between the end of one request to a
	// host and the start of the next (default 1 s).
	PerHostInterval time.Duration
	// HostIntervals overrides PerHostInterval for host keys (see HostKey:
	// lower-case host name without port); values must be positive.
	HostIntervals map[string]time.Duration
	// Version is arkhe's version for the User-Agent (default "dev").
	Version string
	// Contact is a URL (http, https or mailto) where a site operator can
	// reach whoever runs the checks; it goes into the User-Agent. Required.
	Contact string
	// ConnectTimeout bounds the TCP connect and the TLS handshake (default 10 s).
	ConnectTimeout time.Duration
	// RequestTimeout bounds each request from sending to the end of the body
	// read; every hop has its own (default 30 s).
	RequestTimeout time.Duration
	// MaxRedirects is the number of redirects followed before the check
	// fails with ErrTooManyRedirects (default 10).
	MaxRedirects int
	// MaxBodyKiB is the most body a GET reads, in KiB (default 256).
	MaxBodyKiB int
	// Body says when to GET rather than HEAD (default BodyAuto).
	Body BodyPolicy
	// MaxRetryAfter caps the delay a Retry-After header may impose on a host
	// (default 10 min).
	MaxRetryAfter time.Duration
	// AllowPrivate lets checks reach refused address ranges (see
	// RefusedRange). For tests and benchmarks against local servers.
	AllowPrivate bool
	// AllowPrefixes lets checks reach these ranges even when refused, e.g.
	// an institution's own intranet repository.
	AllowPrefixes []netip.Prefix
	// Resolver resolves host names (default net.DefaultResolver).
	Resolver Resolver
	// LookAhead is the most targets held in memory waiting for their host
	// (default 10,000); reading from the source pauses while it is reached.
	LookAhead int
	// HostQueue is the most targets held for one host (default 1,000). A
	// target read while its host already holds that many is not checked in
	// this run (Summary.Deferred); it stays due, so a later run reaches it.
	// With MaxDuration set, a host holds at most as many as its interval lets
	// it check in the time left.
	HostQueue int
	// MaxIdleConns bounds idle keep-alive connections kept across hosts
	// (default 256).
	MaxIdleConns int
	// Limit is the most checks a run starts; 0 means no limit.
	Limit int64
	// MaxDuration stops starting checks after this long; checks in flight
	// finish. 0 means no limit.
	MaxDuration time.Duration
	// MaxHostStats bounds the per-host statistics of a Summary (default
	// 10,000 hosts); later hosts are counted together under the host "".
	MaxHostStats int
	// Policy is the state machine's policy, used for Next and for reporting
	// hosts whose full pass exceeds Policy.GoodWindow.
	Policy Policy
}

// withDefaults fills zero fields and validates the rest.
func (c Config) withDefaults() (Config, error) {
	def := func(v *int, d int, field string) error {
		if *v < 0 {
			return &ConfigError{Field: field, Reason: fmt.Sprintf("must not be negative (got %d)", *v)}
		}
		if *v == 0 {
			*v = d
		}
		return nil
	}
	defDur := func(v *time.Duration, d time.Duration, field string) error {
		if *v < 0 {
			return &ConfigError{Field: field, Reason: fmt.Sprintf("must not be negative (got %s)", *v)}
		}
		if *v == 0 {
			*v = d
		}
		return nil
	}
	for _, err := range []error{
		def(&c.Workers, DefaultWorkers, "Workers"),
		def(&c.MaxRedirects, DefaultMaxRedirects, "MaxRedirects"),
		def(&c.MaxBodyKiB, DefaultMaxBodyKiB, "MaxBodyKiB"),
		def(&c.LookAhead, DefaultLookAhead, "LookAhead"),
		def(&c.HostQueue, DefaultHostQueue, "HostQueue"),
		def(&c.MaxIdleConns, DefaultMaxIdleConns, "MaxIdleConns"),
		def(&c.MaxHostStats, DefaultMaxHostStats, "MaxHostStats"),
		defDur(&c.PerHostInterval, DefaultPerHostInterval, "PerHostInterval"),
		defDur(&c.ConnectTimeout, DefaultConnectTimeout, "ConnectTimeout"),
		defDur(&c.RequestTimeout, DefaultRequestTimeout, "RequestTimeout"),
		defDur(&c.MaxRetryAfter, DefaultMaxRetryAfter, "MaxRetryAfter"),
		defDur(&c.MaxDuration, 0, "MaxDuration"),
	} {
		if err != nil {
			return c, err
		}
	}
	if c.Limit < 0 {
		return c, &ConfigError{Field: "Limit", Reason: fmt.Sprintf("must not be negative (got %d)", c.Limit)}
	}
	if c.Body < BodyAuto || c.Body > BodyAlways {
		return c, &ConfigError{Field: "Body", Reason: fmt.Sprintf("unknown body policy %d", c.Body)}
	}
	if c.Version == "" {
		c.Version = DefaultVersion
	}
	if strings.ContainsAny(c.Version, " ()\r\n") {
		return c, &ConfigError{Field: "Version", Reason: fmt.Sprintf("%q must be one token (no spaces or parentheses)", c.Version)}
	}
	if c.Contact == "" {
		return c, &ConfigError{Field: "Contact", Reason: "required: a URL (http, https or mailto) where site operators can reach whoever runs the checks"}
	}
	cu, err := url.Parse(c.Contact)
	if err != nil || (cu.Scheme != "http" && cu.Scheme != "https" && cu.Scheme != "mailto") || (cu.Opaque == "" && cu.Host == "") ||
		strings.ContainsAny(c.Contact, " ()\r\n") {
		return c, &ConfigError{Field: "Contact", Reason: fmt.Sprintf("%q is not an absolute http, https or mailto URL without spaces or parentheses", c.Contact)}
	}
	for h, d := range c.HostIntervals {
		if d <= 0 {
			return c, &ConfigError{Field: "HostIntervals", Reason: fmt.Sprintf("host %q: interval must be positive (got %s)", h, d)}
		}
		if h != strings.ToLower(h) || h == "" {
			return c, &ConfigError{Field: "HostIntervals", Reason: fmt.Sprintf("host %q: keys are lower-case host names without port", h)}
		}
	}
	if c.Resolver == nil {
		c.Resolver = net.DefaultResolver
	}
	c.Policy = c.Policy.orDefaults()
	if err := c.Policy.validate(); err != nil {
		return c, err
	}
	return c, nil
}

// UserAgent returns the User-Agent header a Config sends:
// "arkhe/VERSION (+CONTACT)", with the defaults applied.
func (c Config) UserAgent() string {
	v := c.Version
	if v == "" {
		v = DefaultVersion
	}
	return "arkhe/" + v + " (+" + c.Contact + ")"
}

func (c Config) intervalFor(host string) time.Duration {
	if d, ok := c.HostIntervals[host]; ok {
		return d
	}
	return c.PerHostInterval
}
