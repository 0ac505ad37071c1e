package linkcheck

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 3, 0, 0, 0, time.UTC)

const tgt = "https://example.org/item/1"

func day(d float64) time.Time { return t0.Add(time.Duration(d * 24 * float64(time.Hour))) }

func good(at time.Time, mime string, size int64) Result {
	return Result{Check: Check{Time: at, Target: tgt, FinalURL: tgt, Status: 200, Outcome: OutcomeGood, MIME: mime, Size: size}}
}

func bad(at time.Time) Result {
	return Result{Check: Check{Time: at, Target: tgt, FinalURL: tgt, Status: 404, Outcome: OutcomeFailed, Size: -1}}
}

func kinds(ts []Transition) string {
	var k []string
	for _, t := range ts {
		k = append(k, string(t.Kind))
	}
	return strings.Join(k, ",")
}

// TestNextSequences runs sequences of checks through Next and compares the
// transitions of every step and the final state.
func TestNextSequences(t *testing.T) {
	t.Parallel()
	daily := func(from, n int) []Result {
		var rs []Result
		for i := range n {
			rs = append(rs, bad(day(float64(from+i))))
		}
		return rs
	}
	cases := []struct {
		name     string
		policy   Policy
		checks   []Result
		want     []string // transitions per step
		failures int
		broken   bool
	}{
		{
			name:     "failures counted, below threshold",
			checks:   daily(0, 5),
			want:     []string{"", "", "", "", ""},
			failures: 5,
		},
		{
			name:     "12 failures in 11 days: span not met",
			checks:   daily(0, 12),
			want:     []string{"", "", "", "", "", "", "", "", "", "", "", ""},
			failures: 12,
		},
		{
			name:     "15th daily failure, day 14: broken once",
			checks:   daily(0, 16),
			want:     []string{"", "", "", "", "", "", "", "", "", "", "", "", "", "", "broken", ""},
			failures: 16, broken: true,
		},
		{
			name:     "span met but only 3 failures: not broken",
			checks:   []Result{bad(day(0)), bad(day(10)), bad(day(20))},
			want:     []string{"", "", ""},
			failures: 3,
		},
		{
			name:     "threshold and span from the policy",
			policy:   Policy{FailThreshold: 3, FailSpan: 48 * time.Hour},
			checks:   []Result{bad(day(0)), bad(day(1)), bad(day(1.5)), bad(day(2))},
			want:     []string{"", "", "", "broken"},
			failures: 4, broken: true,
		},
		{
			name:     "a good check resets the count",
			policy:   Policy{FailThreshold: 3, FailSpan: time.Hour},
			checks:   []Result{bad(day(0)), bad(day(1)), good(day(2), "text/html", 100), bad(day(3)), bad(day(4))},
			want:     []string{"", "", "", "", ""},
			failures: 2,
		},
		{
			name:   "recovery",
			policy: Policy{FailThreshold: 2, FailSpan: time.Hour},
			checks: []Result{good(day(0), "text/html", 100), bad(day(1)), bad(day(2)), good(day(3), "text/html", 100)},
			want:   []string{"", "", "broken", "recovered"},
		},
		{
			name:   "recovery with other content",
			policy: Policy{FailThreshold: 2, FailSpan: time.Hour},
			checks: []Result{good(day(0), "text/html", 100), bad(day(1)), bad(day(2)), good(day(3), "application/pdf", 100)},
			want:   []string{"", "", "broken", "recovered,content_changed"},
		},
		{
			name:     "inconclusive neither counts nor resets",
			policy:   Policy{FailThreshold: 3, FailSpan: time.Hour},
			checks:   []Result{bad(day(0)), {Check: Check{Time: day(1), Target: tgt, Status: 429, Outcome: OutcomeInconclusive}}, bad(day(2)), bad(day(3))},
			want:     []string{"", "", "", "broken"},
			failures: 3, broken: true,
		},
		{
			name: "content: media type parameters and case are not a change",
			checks: []Result{good(day(0), "text/html;charset=UTF-8", 1000), good(day(30), "text/html; charset=utf-8", 1000),
				good(day(60), "TEXT/HTML", 1000)},
			want: []string{"", "", ""},
		},
		{
			name: "content: size within half of the larger, then beyond",
			checks: []Result{good(day(0), "text/html", 1000), good(day(30), "text/html", 600), good(day(60), "text/html", 1199),
				good(day(90), "text/html", 2500), good(day(120), "text/html", 1200)},
			want: []string{"", "", "", "content_changed", "content_changed"},
		},
		{
			name:   "content: an unknown size is no change and keeps the known one",
			checks: []Result{good(day(0), "text/html", 1000), good(day(30), "text/html", -1), good(day(60), "text/html", 400)},
			want:   []string{"", "", "content_changed"},
		},
		{
			name:   "content: SizeShare from the policy",
			policy: Policy{SizeShare: 0.1},
			checks: []Result{good(day(0), "text/html", 1000), good(day(30), "text/html", 880)},
			want:   []string{"", "content_changed"},
		},
		{
			name: "content: final host changed",
			checks: []Result{good(day(0), "text/html", 10),
				{Check: Check{Time: day(30), Target: tgt, FinalURL: "https://new.example.org/x", Status: 200, Outcome: OutcomeGood, MIME: "text/html", Size: 10}}},
			want: []string{"", "content_changed"},
		},
		{
			name:   "content: no comparison before the first good check",
			checks: []Result{bad(day(0)), good(day(1), "text/html", 10)},
			want:   []string{"", ""},
		},
	}
	for _, c := range cases {
		var s State
		for i, r := range c.checks {
			var ts []Transition
			s, ts = Next(s, r, c.policy)
			if got := kinds(ts); got != c.want[i] {
				t.Errorf("%s: step %d: transitions %q, want %q (%+v)", c.name, i, got, c.want[i], ts)
			}
			for _, tr := range ts {
				if !tr.Time.Equal(r.Check.Time) || tr.Reason == "" {
					t.Errorf("%s: step %d: transition %+v", c.name, i, tr)
				}
			}
		}
		if s.ConsecutiveFailures != c.failures || s.Broken != c.broken {
			t.Errorf("%s: failures %d broken %v, want %d %v", c.name, s.ConsecutiveFailures, s.Broken, c.failures, c.broken)
		}
	}
}

func TestNextFields(t *testing.T) {
	t.Parallel()
	s, _ := Next(State{}, good(day(0), "text/html", 10), Policy{})
	if s.Target != tgt || !s.LastSuccess.Equal(day(0)) || !s.FirstFailure.IsZero() || s.GoodHost != "example.org" || s.GoodMediaType != "text/html" || s.GoodSize != 10 {
		t.Errorf("after good: %+v", s)
	}
	s, _ = Next(s, bad(day(1)), Policy{})
	s, _ = Next(s, bad(day(2)), Policy{})
	if !s.FirstFailure.Equal(day(1)) || !s.LastSuccess.Equal(day(0)) || s.Last.Status != 404 || !s.Last.Time.Equal(day(2)) {
		t.Errorf("after failures: %+v", s)
	}
	// A state imported without a good check (GoodHost empty, GoodSize 0)
	// followed by a good check of unknown size keeps the size unknown.
	s, _ = Next(State{Target: tgt}, good(day(0), "text/html", -1), Policy{})
	if s.GoodSize != -1 {
		t.Errorf("unknown first size stored as %d", s.GoodSize)
	}
}

func TestRepoint(t *testing.T) {
	t.Parallel()
	broken := State{Target: tgt, Broken: true, ConsecutiveFailures: 20, FirstFailure: day(0), Last: bad(day(20)).Check,
		GoodHost: "example.org", GoodSize: 5}
	// Through the ledger's repoint path.
	s, ts := Repoint(broken, "https://example.org/new", day(21))
	if kinds(ts) != "repointed" || s.Target != "https://example.org/new" || s.Broken || s.ConsecutiveFailures != 0 ||
		!s.Last.Time.IsZero() || s.GoodHost != "" || s.GoodSize != -1 || Rank(s) != 1 {
		t.Errorf("Repoint: %+v %v", s, ts)
	}
	if s2, ts := Repoint(s, s.Target, day(22)); ts != nil || s2 != s {
		t.Errorf("repoint to the same target: %+v %v", s2, ts)
	}
	if _, ts := Repoint(State{}, tgt, day(0)); ts != nil {
		t.Errorf("first target: %v", ts)
	}
	// Through a check of another target than the state's: reset, then the check.
	r := good(day(21), "application/pdf", 10)
	r.Check.Target, r.Check.FinalURL = "https://other.example/x", "https://other.example/x"
	s, ts = Next(broken, r, Policy{})
	if kinds(ts) != "repointed" || s.Broken || s.Target != "https://other.example/x" || s.GoodHost != "other.example" || !s.LastSuccess.Equal(day(21)) {
		t.Errorf("Next on another target: %+v %v", s, ts)
	}
	r = bad(day(21))
	r.Check.Target = "https://other.example/x"
	s, ts = Next(broken, r, Policy{})
	if kinds(ts) != "repointed" || s.ConsecutiveFailures != 1 || !s.FirstFailure.Equal(day(21)) {
		t.Errorf("failed check on another target: %+v %v", s, ts)
	}
}

func TestDue(t *testing.T) {
	t.Parallel()
	p := Policy{}
	never := State{}
	goodS, _ := Next(State{}, good(day(0), "text/html", 1), p)
	badS, _ := Next(State{}, bad(day(0)), p)
	incS, _ := Next(goodS, Result{Check: Check{Time: day(0), Target: tgt, Status: 429, Outcome: OutcomeInconclusive}}, p)
	for _, c := range []struct {
		name string
		s    State
		now  time.Time
		due  bool
		rank int
	}{
		{"never checked", never, day(0), true, 1},
		{"good, 29 days", goodS, day(29), false, 2},
		{"good, 30 days", goodS, day(30), true, 2},
		{"failed, 23 h", badS, day(23.0 / 24), false, 0},
		{"failed, 1 day", badS, day(1), true, 0},
		{"inconclusive, 1 day", incS, day(1), true, 0},
	} {
		if got := Due(c.s, c.now, p); got != c.due {
			t.Errorf("%s: Due %v, want %v (DueAt %v)", c.name, got, c.due, DueAt(c.s, p))
		}
		if got := Rank(c.s); got != c.rank {
			t.Errorf("%s: Rank %d, want %d", c.name, got, c.rank)
		}
	}
	short := Policy{GoodWindow: time.Hour, BadWindow: time.Minute}
	if !DueAt(goodS, short).Equal(day(0).Add(time.Hour)) || !DueAt(badS, short).Equal(day(0).Add(time.Minute)) || !DueAt(never, short).IsZero() {
		t.Error("DueAt ignores the policy's windows")
	}
}

func TestPassTime(t *testing.T) {
	t.Parallel()
	d := PassTime(10_000_000, time.Second)
	if got := fmt.Sprintf("%.1f", d.Hours()/24); got != "115.7" {
		t.Errorf("10 M targets at 1 s: %s days, want 115.7", got)
	}
	h := HostStats{Seen: 3_000_000, Interval: time.Second}
	if h.PassTime() <= DefaultGoodWindow {
		t.Errorf("3 M targets at 1 s take %v, longer than 30 days", h.PassTime())
	}
}
