package linkcheck

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Defaults of Policy, applied to zero fields.
const (
	DefaultFailThreshold = 12                  // consecutive failed checks to be broken
	DefaultFailSpan      = 14 * 24 * time.Hour // least span of those failures: 14 days
	DefaultSizeShare     = 0.5                 // size halved or more than doubled
	DefaultGoodWindow    = 30 * 24 * time.Hour // not due for 30 days after a good check
	DefaultBadWindow     = 24 * time.Hour      // not due for 1 day after a failing one
)

// Policy holds the state machine's rules. Zero fields take the defaults.
type Policy struct {
	// FailThreshold is the number of consecutive failed checks a target
	// needs to be broken (default 12); see FailSpan.
	FailThreshold int
	// FailSpan is the least time from the first to the latest of those
	// failures for the target to be broken (default 14 days).
	FailSpan time.Duration
	// SizeShare is the share of the larger of two sizes by which they must
	// differ for "content changed": |new-old| > SizeShare*max(new, old).
	// The default 0.5 means the size at least halved or more than doubled.
	// It must lie in (0, 1].
	SizeShare float64
	// GoodWindow is how long after a good check a target is not due (default 30 days).
	GoodWindow time.Duration
	// BadWindow is how long after a failed or inconclusive check a target is
	// not due (default 1 day).
	BadWindow time.Duration
}

// DefaultPolicy returns the Policy with every default filled in.
func DefaultPolicy() Policy { return Policy{}.orDefaults() }

func (p Policy) orDefaults() Policy {
	if p.FailThreshold == 0 {
		p.FailThreshold = DefaultFailThreshold
	}
	if p.FailSpan == 0 {
		p.FailSpan = DefaultFailSpan
	}
	if p.SizeShare == 0 {
		p.SizeShare = DefaultSizeShare
	}
	if p.GoodWindow == 0 {
		p.GoodWindow = DefaultGoodWindow
	}
	if p.BadWindow == 0 {
		p.BadWindow = DefaultBadWindow
	}
	return p
}

func (p Policy) validate() error {
	switch {
	case p.FailThreshold < 1:
		return &ConfigError{Field: "Policy.FailThreshold", Reason: fmt.Sprintf("must be at least 1 (got %d)", p.FailThreshold)}
	case p.FailSpan < 0:
		return &ConfigError{Field: "Policy.FailSpan", Reason: fmt.Sprintf("must not be negative (got %s)", p.FailSpan)}
	case !(p.SizeShare > 0 && p.SizeShare <= 1):
		return &ConfigError{Field: "Policy.SizeShare", Reason: fmt.Sprintf("must lie in (0, 1] (got %g)", p.SizeShare)}
	case p.GoodWindow < 0:
		return &ConfigError{Field: "Policy.GoodWindow", Reason: fmt.Sprintf("must not be negative (got %s)", p.GoodWindow)}
	case p.BadWindow < 0:
		return &ConfigError{Field: "Policy.BadWindow", Reason: fmt.Sprintf("must not be negative (got %s)", p.BadWindow)}
	}
	return nil
}

// State is the link-check state of one ARK, as Next computes it and a
// ledger stores it.
type State struct {
	// Target is the target URL the state is about; empty before the first check.
	Target string
	// Last is the latest check; Last.Time is zero when never checked.
	Last Check
	// ConsecutiveFailures counts failed checks since the last good one
	// (inconclusive checks neither count nor reset).
	ConsecutiveFailures int
	// FirstFailure is the time of the first of those failures; zero when none.
	FirstFailure time.Time
	// LastSuccess is the time of the latest good check; zero when none.
	LastSuccess time.Time
	// Broken is set by the "broken" transition and cleared by "recovered"
	// or a repoint.
	Broken bool
	// GoodHost, GoodMediaType and GoodSize describe the latest good check
	// (host key of the final URL, MediaType of its MIME, last known size or
	// -1): what "content changed" compares. GoodHost is empty before the
	// first good check of this target.
	GoodHost      string
	GoodMediaType string
	GoodSize      int64
}

// TransitionKind names a change of an ARK's link-check state.
type TransitionKind string

// The transitions Next and Repoint emit. A ledger keeps one row per
// transition, not per check.
const (
	// Broken: the target reached FailThreshold consecutive failures spanning
	// at least FailSpan.
	Broken TransitionKind = "broken"
	// Recovered: a broken target had a good check.
	Recovered TransitionKind = "recovered"
	// ContentChanged: between two good checks of the same target, the final
	// host, the media type, or the size (by more than Policy.SizeShare)
	// changed. Body hashes are not compared: dynamic pages change on every visit.
	ContentChanged TransitionKind = "content_changed"
	// Repointed: the ARK's target changed; its state starts afresh.
	Repointed TransitionKind = "repointed"
)

// Transition is one event in an ARK's link-check history.
type Transition struct {
	// Kind is what happened.
	Kind TransitionKind
	// Time is the time of the check (or repoint) that caused it.
	Time time.Time
	// Reason says what was observed, e.g. "size 40027 -> 647 bytes".
	Reason string
}

// Repoint returns the state of an ARK whose target was changed to newTarget
// at time at: a fresh state for newTarget (never checked, not broken) and a
// Repointed transition when prev was about another target. A ledger calls it
// in its repoint path.
func Repoint(prev State, newTarget string, at time.Time) (State, []Transition) {
	if prev.Target == newTarget {
		return prev, nil
	}
	next := State{Target: newTarget, GoodSize: -1}
	if prev.Target == "" {
		return next, nil
	}
	return next, []Transition{{Kind: Repointed, Time: at, Reason: fmt.Sprintf("target %s -> %s", prev.Target, newTarget)}}
}

// Next applies one check to an ARK's state and returns the new state and the
// transitions it caused, in this order: repointed, recovered, content
// changed, broken. The rules:
//
//   - r.Check.Target differs from prev.Target (prev not empty): repointed;
//     the state restarts from zero before the check is applied.
//   - good: failures reset to 0, FirstFailure cleared, LastSuccess set;
//     recovered if prev was broken; content changed if an earlier good check
//     of this target exists and the final host or media type differs, or both
//     sizes are known and |new-old| > SizeShare*max(new, old).
//   - failed: ConsecutiveFailures+1 (FirstFailure set on the first);
//     broken when not yet broken, ConsecutiveFailures >= FailThreshold and
//     the check is at least FailSpan after FirstFailure.
//   - inconclusive: only Last changes.
//
// Zero Policy fields take the defaults. Next is pure.
func Next(prev State, r Result, p Policy) (State, []Transition) {
	p = p.orDefaults()
	c := r.Check
	s, ts := Repoint(prev, c.Target, c.Time)
	s.Last = c
	switch c.Outcome {
	case OutcomeGood:
		if s.Broken {
			s.Broken = false
			ts = append(ts, Transition{Kind: Recovered, Time: c.Time,
				Reason: fmt.Sprintf("good (%s) after %d failed checks since %s", verdict(c), s.ConsecutiveFailures, s.FirstFailure.UTC().Format(time.RFC3339))})
		}
		host := finalHost(c)
		mt := MediaType(c.MIME)
		if s.GoodHost != "" {
			if why := contentChanges(s, host, mt, c.Size, p.SizeShare); why != "" {
				ts = append(ts, Transition{Kind: ContentChanged, Time: c.Time, Reason: why})
			}
		}
		if c.Size >= 0 || s.GoodHost == "" {
			s.GoodSize = c.Size // an unknown size keeps the last known one
		}
		s.ConsecutiveFailures = 0
		s.FirstFailure = time.Time{}
		s.LastSuccess = c.Time
		s.GoodHost, s.GoodMediaType = host, mt
	case OutcomeFailed:
		if s.ConsecutiveFailures == 0 {
			s.FirstFailure = c.Time
		}
		s.ConsecutiveFailures++
		if !s.Broken && s.ConsecutiveFailures >= p.FailThreshold && c.Time.Sub(s.FirstFailure) >= p.FailSpan {
			s.Broken = true
			ts = append(ts, Transition{Kind: Broken, Time: c.Time,
				Reason: fmt.Sprintf("%d consecutive failed checks since %s, the latest %s", s.ConsecutiveFailures, s.FirstFailure.UTC().Format(time.RFC3339), verdict(c))})
		}
	}
	return s, ts
}

func verdict(c Check) string {
	if c.Error != ErrNone {
		if c.Status != 0 {
			return fmt.Sprintf("%s after status %d", c.Error, c.Status)
		}
		return string(c.Error)
	}
	return fmt.Sprintf("status %d", c.Status)
}

// finalHost is the host key of the final URL (the target's when no request
// was made).
func finalHost(c Check) string {
	raw := c.FinalURL
	if raw == "" {
		raw = c.Target
	}
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return hostKeyOf(u)
}

func contentChanges(s State, host, mt string, size int64, share float64) string {
	var why []string
	if host != s.GoodHost {
		why = append(why, fmt.Sprintf("final host %s -> %s", s.GoodHost, host))
	}
	if mt != s.GoodMediaType {
		why = append(why, fmt.Sprintf("media type %q -> %q", s.GoodMediaType, mt))
	}
	if old := s.GoodSize; old >= 0 && size >= 0 {
		d, m := size-old, max(size, old)
		if d < 0 {
			d = -d
		}
		if float64(d) > share*float64(m) {
			why = append(why, fmt.Sprintf("size %d -> %d bytes", old, size))
		}
	}
	return strings.Join(why, "; ")
}

// Failing reports whether the latest check of s was not good (failed or
// inconclusive) or s is broken; such targets are due after BadWindow.
func (s State) Failing() bool {
	return s.Broken || s.ConsecutiveFailures > 0 || (!s.Last.Time.IsZero() && s.Last.Outcome != OutcomeGood)
}

// DueAt returns when s is next due for a check: the zero time when never
// checked (due now), Last.Time when the last check was refused by the SSRF
// guard (ErrBlocked: the refusal is this run's policy, so the target is due
// again for the next run, which may allow the address), Last.Time+BadWindow
// when failing, else Last.Time+GoodWindow. Zero Policy fields take the
// defaults.
func DueAt(s State, p Policy) time.Time {
	p = p.orDefaults()
	if s.Last.Time.IsZero() {
		return time.Time{}
	}
	if s.Last.Error == ErrBlocked {
		return s.Last.Time
	}
	if s.Failing() {
		return s.Last.Time.Add(p.BadWindow)
	}
	return s.Last.Time.Add(p.GoodWindow)
}

// Due reports whether s is due for a check at now: DueAt(s, p) <= now.
func Due(s State, now time.Time, p Policy) bool { return !DueAt(s, p).After(now) }

// Rank is the order in which due targets should be checked, lower first:
// 0 failing (see State.Failing), 1 never checked, 2 good. Within a rank, a
// source orders by DueAt, earliest first.
func Rank(s State) int {
	switch {
	case s.Failing():
		return 0
	case s.Last.Time.IsZero():
		return 1
	}
	return 2
}

// PassTime is the least time one pass over n targets on one host takes at
// the given per-host interval: n*interval (request times come on top). For
// example 10,000,000 targets at 1 s take 115.7 days; when PassTime exceeds
// Policy.GoodWindow, good targets on that host are checked less often than
// the window says.
func PassTime(n int64, interval time.Duration) time.Duration {
	return time.Duration(n) * interval
}
