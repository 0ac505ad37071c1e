package linkcheck

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"time"
)

// Resolver looks up the IP addresses of a host name. *net.Resolver satisfies
// it; tests and the bench map made-up names to loopback addresses with their
// own. network is "ip", "ip4" or "ip6".
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

type namedPrefix struct {
	p    netip.Prefix
	name string
}

// extraRanges lists the special-purpose ranges that netip.Addr's predicates
// do not name. It is a function, not a package variable, so no shared state
// can be altered.
func extraRanges() []namedPrefix {
	mk := func(s, name string) namedPrefix { return namedPrefix{netip.MustParsePrefix(s), name} }
	return []namedPrefix{
		mk("0.0.0.0/8", "in 0.0.0.0/8 (this network)"),
		mk("100.64.0.0/10", "in 100.64.0.0/10 (shared address space, carrier-grade NAT)"),
		mk("192.0.0.0/24", "in 192.0.0.0/24 (IETF protocol assignments)"),
		mk("192.0.2.0/24", "in 192.0.2.0/24 (documentation)"),
		mk("198.18.0.0/15", "in 198.18.0.0/15 (benchmarking)"),
		mk("198.51.100.0/24", "in 198.51.100.0/24 (documentation)"),
		mk("203.0.113.0/24", "in 203.0.113.0/24 (documentation)"),
		mk("240.0.0.0/4", "in 240.0.0.0/4 (reserved, broadcast)"),
		mk("100::/64", "in 100::/64 (discard)"),
		mk("2001:db8::/32", "in 2001:db8::/32 (documentation)"),
		mk("fec0::/10", "in fec0::/10 (site-local)"),
		mk("::/96", "in ::/96 (IPv4-compatible)"),
	}
}

// RefusedRange reports whether a is an address a link check must not reach
// and names its range. Refused (IPv4-mapped IPv6 addresses are unwrapped
// first): unspecified (0.0.0.0, ::), loopback (127.0.0.0/8, ::1), private
// (10/8, 172.16/12, 192.168/16, fc00::/7), link-local unicast (169.254/16,
// fe80::/10), multicast (224/4, ff00::/8), and 0/8, 100.64/10, 192.0.0/24,
// the documentation and benchmarking ranges, 240/4 with broadcast, 100::/64,
// 2001:db8::/32, fec0::/10, ::/96; NAT64 (64:ff9b::/96, 64:ff9b:1::/48) and
// 6to4 (2002::/16) addresses are refused when the IPv4 address they carry is.
// An invalid address is refused.
func RefusedRange(a netip.Addr) (string, bool) {
	if !a.IsValid() {
		return "not a valid address", true
	}
	a = a.Unmap().WithZone("")
	switch {
	case a.IsUnspecified():
		return "unspecified", true
	case a.IsLoopback():
		return "loopback", true
	case a.IsPrivate():
		return "private", true
	case a.IsLinkLocalUnicast():
		return "link-local", true
	case a.IsMulticast():
		return "multicast", true
	}
	for _, r := range extraRanges() {
		if r.p.Contains(a) {
			return r.name, true
		}
	}
	if a.Is6() {
		b := a.As16()
		var v4 [4]byte
		embedded := false
		switch {
		case netip.MustParsePrefix("64:ff9b::/96").Contains(a), netip.MustParsePrefix("64:ff9b:1::/48").Contains(a):
			copy(v4[:], b[12:16])
			embedded = true
		case netip.MustParsePrefix("2002::/16").Contains(a):
			copy(v4[:], b[2:6])
			embedded = true
		}
		if embedded {
			if name, bad := RefusedRange(netip.AddrFrom4(v4)); bad {
				return "a translation of an IPv4 address that is " + name, true
			}
		}
	}
	return "", false
}

// addrGuard decides which addresses may be dialled.
type addrGuard struct {
	allowPrivate bool
	allow        []netip.Prefix
}

// check returns a *BlockedError when a may not be dialled.
func (g addrGuard) check(host string, a netip.Addr) error {
	if g.allowPrivate {
		return nil
	}
	u := a.Unmap().WithZone("")
	for _, p := range g.allow {
		if p.Contains(u) {
			return nil
		}
	}
	if name, bad := RefusedRange(a); bad {
		return &BlockedError{Host: host, Addr: a, Range: name}
	}
	return nil
}

// guardedDialer resolves a host, drops the addresses the guard refuses and
// dials the rest in turn; the net.Dialer's Control function checks the
// address of the socket itself once more, so no path reaches connect(2)
// with a refused address.
type guardedDialer struct {
	guard    addrGuard
	resolver Resolver
	dialer   net.Dialer
}

func newGuardedDialer(g addrGuard, r Resolver, connectTimeout time.Duration) *guardedDialer {
	d := &guardedDialer{guard: g, resolver: r}
	d.dialer = net.Dialer{
		Timeout:   connectTimeout,
		KeepAlive: 30 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return &BlockedError{Host: address, Range: "not a parsable address"}
			}
			return g.check(address, ap.Addr())
		},
	}
	return d
}

// DialContext implements http.Transport.DialContext.
func (d *guardedDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("port %q: %w", portStr, err)
	}
	var addrs []netip.Addr
	if a, perr := netip.ParseAddr(host); perr == nil {
		addrs = []netip.Addr{a}
	} else {
		ipNet := "ip"
		switch network {
		case "tcp4":
			ipNet = "ip4"
		case "tcp6":
			ipNet = "ip6"
		}
		addrs, err = d.resolver.LookupNetIP(ctx, ipNet, host)
		if err != nil {
			return nil, err
		}
		if len(addrs) == 0 {
			return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
		}
	}
	var blocked, last error
	for _, a := range addrs {
		if err := d.guard.check(host, a); err != nil {
			if blocked == nil {
				blocked = err
			}
			continue
		}
		c, err := d.dialer.DialContext(ctx, network, netip.AddrPortFrom(a.Unmap(), uint16(port)).String())
		if err == nil {
			return c, nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	if last != nil {
		return nil, last
	}
	return nil, blocked
}
