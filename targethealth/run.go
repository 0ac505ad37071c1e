// Package targethealth is the nightly target-health run over the ledger (`arkhe linkcheck`): it
// takes the ledger's link-check lock (runs never overlap), streams the due targets from the
// ledger (Source) through the polite link-check engine (linkcheck.Run) into the
// ledger (Sink, every acknowledged check committed), and records the run as one
// audit event (action "linkcheck", the figures as its detail). Report.Metrics gives the same
// figures in the Prometheus text format.
package targethealth

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/linkcheck"
)

// AuditAction is the audit_event action of a link-check run.
const AuditAction = "linkcheck"

// MaxHostsReported bounds the hosts listed in the audit event and the metrics (the hosts with
// the largest backlog, then the most targets); the summary counts every host.
const MaxHostsReported = 20

// Config configures Run.
type Config struct {
	// Selection narrows the ARKs whose targets are checked.
	Selection Selection
	// Check is the engine's configuration (workers, intervals, timeouts, limits, the policy);
	// Check.Contact is required. Check.Policy also gives each stored state its due time.
	Check linkcheck.Config
	// Now is the time against which "due" is judged; zero: when Run starts.
	Now time.Time
	// ClientID and Authority are recorded in the audit event ("" for none).
	ClientID, Authority string
	// Progress, if set, is called after each recorded check with the number recorded so far
	// (from the engine's workers, concurrently).
	Progress func(recorded int64)
}

// HostFigures are one host's figures in a Report.
type HostFigures struct {
	Host string `json:"host"`
	// Seen targets read for the host; Checked recorded; Backlog read but not checked (deferred
	// because the host's queue was full, or still queued when the run stopped): they stay due.
	Seen    int64 `json:"seen"`
	Checked int64 `json:"checked"`
	Backlog int64 `json:"backlog"`
	// Requests sent; Throttled answers (429 or 503 with Retry-After) and the delay they imposed.
	Requests         int64   `json:"requests"`
	Throttled        int64   `json:"throttled"`
	RetryAfterSecond float64 `json:"retry_after_s"`
	// IntervalSeconds is the host's per-host interval; PassDays the least time a pass over the
	// Seen targets takes at that interval.
	IntervalSeconds float64 `json:"interval_s"`
	PassDays        float64 `json:"pass_days"`
}

// Report is what a run did: the engine's summary, what the source read, what the sink stored.
type Report struct {
	Summary linkcheck.Summary
	Source  SourceStats
	Sink    SinkStats
	// Policy is the policy the run used, defaults applied.
	Policy linkcheck.Policy
	// Hosts are the hosts with a backlog or throttling, largest backlog first, then the hosts
	// with most targets, at most MaxHostsReported; SlowHosts the hosts whose pass over their
	// targets takes longer than the good window (all of them, at most MaxHostsReported).
	Hosts, SlowHosts []HostFigures
	// HostCount is the number of hosts the run saw.
	HostCount int
	// Broken is the number of ARKs whose target is broken in the ledger after the run.
	Broken int64
	// Err is the error that ended the run, "" when none (kept for the audit event).
	Err string
}

// Backlog is the number of targets read but not checked (deferred or unchecked): they stay
// due, and the next run reaches them.
func (r *Report) Backlog() int64 { return r.Summary.Deferred + r.Summary.Unchecked }

// Run runs one link check over l (see the package documentation). It returns a
// *linkcheck.ConfigError for a bad Check configuration, a *BusyError when
// another run holds the lock, a *SelectionError for an unknown manager, and the
// engine's error (ctx's when cancelled, a source or sink error wrapped) with a Report that is
// valid: every check the sink acknowledged is committed, and the audit event is written even
// for a cancelled run.
func Run(ctx context.Context, l *ledger.Ledger, cfg Config) (Report, error) {
	var rep Report
	if err := validate(cfg.Check); err != nil {
		return rep, err
	}
	release, err := Lock(ctx, l)
	if err != nil {
		return rep, err
	}
	defer release()
	now := cfg.Now
	if now.IsZero() {
		now = time.Now()
	}
	src, err := NewSource(ctx, l, SourceConfig{Selection: cfg.Selection, Now: now})
	if err != nil {
		return rep, err
	}
	rep.Policy = linkcheck.DefaultPolicy()
	if p := cfg.Check.Policy; p != (linkcheck.Policy{}) {
		rep.Policy = withDefaults(p)
	}
	sink := NewSink(l, SinkConfig{Policy: rep.Policy})
	var recorded atomic.Int64
	var s linkcheck.ResultSink = sink
	if cfg.Progress != nil {
		s = linkcheck.SinkFunc(func(ctx context.Context, r linkcheck.Result, next linkcheck.State, ts []linkcheck.Transition) error {
			if err := sink.Record(ctx, r, next, ts); err != nil {
				return err
			}
			cfg.Progress(recorded.Add(1))
			return nil
		})
	}
	sum, runErr := linkcheck.Run(ctx, cfg.Check, src, s)
	sink.Close()
	rep.Summary, rep.Source, rep.Sink = sum, src.Stats(), sink.Stats()
	if runErr != nil {
		rep.Err = runErr.Error()
	}
	rep.hosts()
	actx := context.WithoutCancel(ctx)
	if err := l.Pool.QueryRow(actx, `select count(*) from link_state where broken`).Scan(&rep.Broken); err != nil && runErr == nil {
		runErr = fmt.Errorf("link check: count broken targets: %w", err)
	}
	target := ""
	if sel := cfg.Selection; sel.NAAN != "" {
		target = "ark:" + sel.NAAN + sel.Shoulder
	}
	if err := l.AuditEvent(actx, cfg.ClientID, cfg.Authority, AuditAction, target, rep.Detail(cfg)); err != nil && runErr == nil {
		runErr = err
	}
	return rep, runErr
}

// validate rejects a configuration the engine would, before the lock is taken and anything is
// recorded: it runs the engine over no targets.
func validate(c linkcheck.Config) error {
	_, err := linkcheck.Run(context.Background(), c, linkcheck.SliceSource(nil),
		linkcheck.SinkFunc(func(context.Context, linkcheck.Result, linkcheck.State, []linkcheck.Transition) error { return nil }))
	return err
}

// withDefaults fills p's zero fields with linkcheck's defaults.
func withDefaults(p linkcheck.Policy) linkcheck.Policy {
	d := linkcheck.DefaultPolicy()
	if p.FailThreshold == 0 {
		p.FailThreshold = d.FailThreshold
	}
	if p.FailSpan == 0 {
		p.FailSpan = d.FailSpan
	}
	if p.SizeShare == 0 {
		p.SizeShare = d.SizeShare
	}
	if p.GoodWindow == 0 {
		p.GoodWindow = d.GoodWindow
	}
	if p.BadWindow == 0 {
		p.BadWindow = d.BadWindow
	}
	return p
}

func figures(h linkcheck.HostStats) HostFigures {
	return HostFigures{Host: h.Host, Seen: h.Seen, Checked: h.Checked, Backlog: h.Deferred + h.Unchecked,
		Requests: h.Requests, Throttled: h.Throttled, RetryAfterSecond: h.RetryAfter.Seconds(),
		IntervalSeconds: h.Interval.Seconds(), PassDays: h.PassTime().Hours() / 24}
}

// hosts fills Hosts, SlowHosts and HostCount from the summary.
func (r *Report) hosts() {
	r.HostCount = len(r.Summary.Hosts)
	var withBacklog, rest []HostFigures
	for _, h := range r.Summary.Hosts { // most targets seen first
		f := figures(h)
		if f.Backlog > 0 || f.Throttled > 0 {
			withBacklog = append(withBacklog, f)
		} else {
			rest = append(rest, f)
		}
	}
	// largest backlog first, keeping the order of Seen within equal backlogs
	slices.SortStableFunc(withBacklog, func(a, b HostFigures) int { return cmp.Compare(b.Backlog, a.Backlog) })
	all := append(withBacklog, rest...)
	r.Hosts = all[:min(len(all), MaxHostsReported)]
	for _, h := range r.Summary.SlowHosts {
		if len(r.SlowHosts) == MaxHostsReported {
			break
		}
		r.SlowHosts = append(r.SlowHosts, figures(h))
	}
}

// Detail is the audit event's detail: the run's figures.
func (r *Report) Detail(cfg Config) map[string]any {
	s := r.Summary
	d := map[string]any{
		"started": s.Started, "finished": s.Finished, "stop": string(s.Stop), "source_done": s.SourceDone,
		"read": s.Read, "checked": s.Checked, "good": s.Good, "failed": s.Failed, "inconclusive": s.Inconclusive,
		"blocked": s.Blocked, "newly_broken": s.NewlyBroken, "recovered": s.Recovered, "content_changed": s.ContentChanged,
		"repointed": s.Repointed, "aborted": s.Aborted, "deferred": s.Deferred, "unchecked": s.Unchecked,
		"backlog": r.Backlog(), "stored": r.Sink.Stored, "stale": r.Sink.Stale, "events": r.Sink.Events,
		"commits": r.Sink.Commits, "due_failing": r.Source.Failing, "never_checked": r.Source.Never,
		"due_good": r.Source.Good, "excluded_by_host": r.Source.ExcludedHost, "broken_in_ledger": r.Broken,
		"host_count": r.HostCount, "hosts": r.Hosts, "slow_hosts": r.SlowHosts, "slow_host_count": len(s.SlowHosts),
		"policy": map[string]any{"fail_threshold": r.Policy.FailThreshold, "fail_span_s": r.Policy.FailSpan.Seconds(),
			"good_window_s": r.Policy.GoodWindow.Seconds(), "bad_window_s": r.Policy.BadWindow.Seconds(),
			"size_share": r.Policy.SizeShare},
		"selection": map[string]any{"naan": cfg.Selection.NAAN, "shoulder": cfg.Selection.Shoulder,
			"manager": cfg.Selection.Manager, "include_test": cfg.Selection.IncludeTest},
		"workers": cfg.Check.Workers, "per_host_interval_s": cfg.Check.PerHostInterval.Seconds(),
		"limit": cfg.Check.Limit, "max_duration_s": cfg.Check.MaxDuration.Seconds(),
	}
	if r.Err != "" {
		d["error"] = r.Err
	}
	return d
}
