package linkcheck

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

func TestRefusedRange(t *testing.T) {
	t.Parallel()
	refused := []string{
		"127.0.0.1", "127.255.0.9", "::1", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1",
		"169.254.169.254", "fe80::1", "fe80::1%eth0", "0.0.0.0", "::", "224.0.0.1", "239.1.1.1", "ff02::1",
		"fc00::1", "fd12:3456::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254",
		"100.64.0.1", "0.1.2.3", "198.18.0.1", "240.0.0.1", "255.255.255.255", "192.0.2.1",
		"64:ff9b::7f00:1", "64:ff9b::a00:1", "2002:7f00:1::1", "2002:a00:1::", "fec0::1", "::127.0.0.1",
		"2001:db8::1",
	}
	for _, s := range refused {
		if name, bad := RefusedRange(netip.MustParseAddr(s)); !bad || name == "" {
			t.Errorf("%s: not refused", s)
		}
	}
	allowed := []string{
		"8.8.8.8", "1.1.1.1", "128.48.120.1", "172.32.0.1", "192.169.0.1", "2606:4700::1111",
		"::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1", "100.128.0.1",
	}
	for _, s := range allowed {
		if name, bad := RefusedRange(netip.MustParseAddr(s)); bad {
			t.Errorf("%s: refused as %s", s, name)
		}
	}
	if _, bad := RefusedRange(netip.Addr{}); !bad {
		t.Error("the invalid address is not refused")
	}
	g := addrGuard{allow: []netip.Prefix{netip.MustParsePrefix("10.20.0.0/16")}}
	if g.check("intranet", netip.MustParseAddr("10.20.3.4")) != nil || g.check("x", netip.MustParseAddr("::ffff:10.20.3.4")) != nil {
		t.Error("AllowPrefixes not honoured")
	}
	var be *BlockedError
	if err := g.check("x", netip.MustParseAddr("10.21.0.1")); !errors.As(err, &be) || be.Range != "private" {
		t.Errorf("10.21.0.1: %v", err)
	}
}

// TestSSRFGuard: without AllowPrivate, direct targets in refused ranges,
// names resolving to loopback and a redirect to 127.0.0.1 are all refused
// when dialling, and the local servers see no request.
func TestSSRFGuard(t *testing.T) {
	t.Parallel()
	var secret reqLog
	inner := newServer(t, secret.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "internal")
	})))
	p := port(inner)
	// A server on 127.0.0.2 stands in for a public host: AllowPrefixes
	// admits exactly that address. It redirects to the loopback server.
	var outer reqLog
	front := newServerOn(t, "127.0.0.2:0", outer.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://127.0.0.1:"+p+"/secret", http.StatusFound)
	})))

	cfg := testConfig()
	cfg.AllowPrivate = false
	cfg.AllowPrefixes = []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}
	cfg.Resolver = loopbackResolver("rebind.test")
	cfg.ConnectTimeout = 2e9
	targets := []Target{
		{Key: "redirect", URL: front.URL + "/go"},
		{Key: "v4", URL: "http://127.0.0.1:" + p + "/x"},
		{Key: "v6", URL: "http://[::1]:" + p + "/x"},
		{Key: "mapped", URL: "http://[::ffff:127.0.0.1]:" + p + "/x"},
		{Key: "zero", URL: "http://0.0.0.0:" + p + "/x"},
		{Key: "ten", URL: "http://10.0.0.1/x"},
		{Key: "metadata", URL: "http://169.254.169.254/latest/meta-data/"},
		{Key: "linklocal6", URL: "http://[fe80::1]/x"},
		{Key: "name", URL: "http://rebind.test:" + p + "/x"},
	}
	sum, sink := run(t, cfg, targets)
	got := sink.byKey(t)
	for _, tg := range targets {
		r := got[tg.Key].Result
		if r.Check.Error != ErrBlocked || r.Check.Outcome != OutcomeInconclusive || !strings.Contains(r.ErrorDetail, "may not reach") {
			t.Errorf("%s: error %q (%s), want blocked", tg.Key, r.Check.Error, r.ErrorDetail)
		}
	}
	red := got["redirect"].Result
	if len(red.Redirects) != 1 || red.Redirects[0].Status != 302 || red.Check.FinalURL != "http://127.0.0.1:"+p+"/secret" {
		t.Errorf("redirect: %+v", red)
	}
	if n := secret.count(); n != 0 {
		t.Errorf("the loopback server saw %d requests", n)
	}
	if n := outer.count(); n != 1 {
		t.Errorf("the allowed server saw %d requests, want 1", n)
	}
	// a refusal is this run's policy, not a failure of the target: counted apart, named, and
	// due again at once
	if sum.Blocked != int64(len(targets)) || sum.Failed != 0 || sum.Inconclusive != 0 || len(sum.BlockedExamples) != MaxBlockedExamples {
		t.Errorf("summary %+v, want %d blocked and %d examples", sum, len(targets), MaxBlockedExamples)
	}
	for _, tg := range targets {
		next, _ := Next(State{}, got[tg.Key].Result, Policy{})
		if due := DueAt(next, Policy{}); !due.Equal(next.Last.Time) || next.ConsecutiveFailures != 0 {
			t.Errorf("%s: due %s after a blocked check at %s (failures %d), want due at the check", tg.Key, due, next.Last.Time, next.ConsecutiveFailures)
		}
	}

	// The same redirect with AllowPrivate reaches the inner server.
	cfg.AllowPrivate = true
	_, sink = run(t, cfg, targets[:1])
	if r := sink.byKey(t)["redirect"].Result; r.Check.Outcome != OutcomeGood || secret.count() != 1 {
		t.Errorf("with AllowPrivate: %+v, inner saw %d", r, secret.count())
	}
}

// TestBlockedPredicate: Blocked sees a *BlockedError through wrapping and nothing else.
func TestBlockedPredicate(t *testing.T) {
	be := &BlockedError{Host: "h", Addr: netip.MustParseAddr("127.0.0.1"), Range: "loopback"}
	if !Blocked(fmt.Errorf("dial: %w", be)) || Blocked(&URLError{URL: "x", Class: ErrBadURL}) || Blocked(nil) {
		t.Error("Blocked misjudges its errors")
	}
}
