// Package linkcheck checks the health of ARK targets over HTTP, politely,
// and turns each check into per-ARK state and state transitions.
//
// The package does no database work. A caller supplies the targets through a
// TargetSource (in the order it wants them checked: failing targets first,
// never-checked ones next, see Rank and DueAt) and receives every check
// through a ResultSink, together with the ARK's next State and the
// Transitions the check caused (see Next). Run ties them together.
//
// # Politeness
//
// Run never sends two requests to one host at the same time, and between the
// end of one request to a host and the start of the next it waits at least
// the host's interval (Config.PerHostInterval, default 1 s, or the host's
// entry in Config.HostIntervals). A host is the lower-case host name of the
// URL requested, without port (see HostKey); every request counts: the first
// one, each redirect hop (gated on the host it goes to) and a GET after a
// refused HEAD. A 429 or 503 answer with a Retry-After header pushes the
// host's next request back by that delay (capped by Config.MaxRetryAfter).
// Hosts are served round-robin by ready time, so a slow or throttled host
// delays only its own targets.
//
// # Safety
//
// Only http and https URLs are fetched, without any proxy. The address of
// every connection is checked when it is dialled, after DNS resolution and
// on every redirect hop: loopback, private, link-local, unspecified,
// multicast and other special-purpose ranges (IPv4 and IPv6, IPv4-mapped
// addresses unwrapped) are refused unless Config.AllowPrivate is set or the
// address lies in one of Config.AllowPrefixes. See RefusedRange.
//
// # State
//
// Next is a pure function from the previous State and one Result to the next
// State: consecutive failures, first failure time, last success time, the
// broken flag (FailThreshold consecutive failures spanning at least FailSpan)
// and the transitions broken, recovered, content changed and repointed.
// Due and DueAt say which targets a run should check (GoodWindow after a good
// check, BadWindow after a failing one).
package linkcheck
