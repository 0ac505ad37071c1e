package targethealth

import (
	"github.com/arkhe-ledger/arkhe/metrics"
)

// Metrics returns the run's figures as Prometheus metric families (all gauges: each run
// replaces the last), named arkhe_linkcheck_*: the time and length of the run, checks by
// outcome, transitions by kind, targets left for the next run, the source's phases, the broken
// targets in the ledger, the hosts whose pass exceeds the good window, and per-host backlog and
// throttling for the hosts of Report.Hosts.
func (r *Report) Metrics() []metrics.Family {
	s := r.Summary
	lab := func(name, value string) []metrics.Label { return []metrics.Label{{Name: name, Value: value}} }
	ok := 1.0
	if r.Err != "" {
		ok = 0
	}
	fams := []metrics.Family{
		metrics.G("arkhe_linkcheck_last_run_timestamp_seconds", "When the last link-check run finished (Unix time).", float64(s.Finished.UnixNano())/1e9),
		metrics.G("arkhe_linkcheck_last_run_duration_seconds", "How long the last link-check run took.", s.Finished.Sub(s.Started).Seconds()),
		metrics.G("arkhe_linkcheck_last_run_success", "1 when the last link-check run ended without an error (limit and max duration included), else 0.", ok),
		{Name: "arkhe_linkcheck_checks", Help: "Checks recorded by the last run, by outcome.", Type: metrics.Gauge, Samples: []metrics.Sample{
			{Labels: lab("outcome", "good"), Value: float64(s.Good)},
			{Labels: lab("outcome", "failed"), Value: float64(s.Failed)},
			{Labels: lab("outcome", "inconclusive"), Value: float64(s.Inconclusive)},
			{Labels: lab("outcome", "blocked"), Value: float64(s.Blocked)},
		}},
		{Name: "arkhe_linkcheck_transitions", Help: "State changes found by the last run, by kind.", Type: metrics.Gauge, Samples: []metrics.Sample{
			{Labels: lab("kind", "broken"), Value: float64(s.NewlyBroken)},
			{Labels: lab("kind", "recovered"), Value: float64(s.Recovered)},
			{Labels: lab("kind", "content_changed"), Value: float64(s.ContentChanged)},
			{Labels: lab("kind", "repointed"), Value: float64(s.Repointed)},
		}},
		{Name: "arkhe_linkcheck_not_checked", Help: "Targets the last run read but did not record, by reason; they stay due.", Type: metrics.Gauge, Samples: []metrics.Sample{
			{Labels: lab("reason", "deferred"), Value: float64(s.Deferred)},
			{Labels: lab("reason", "unchecked"), Value: float64(s.Unchecked)},
			{Labels: lab("reason", "aborted"), Value: float64(s.Aborted)},
			{Labels: lab("reason", "stale"), Value: float64(r.Sink.Stale)},
		}},
		{Name: "arkhe_linkcheck_due_targets", Help: "Targets the last run read from the ledger, by phase.", Type: metrics.Gauge, Samples: []metrics.Sample{
			{Labels: lab("phase", "failing"), Value: float64(r.Source.Failing)},
			{Labels: lab("phase", "never_checked"), Value: float64(r.Source.Never)},
			{Labels: lab("phase", "good"), Value: float64(r.Source.Good)},
		}},
		metrics.G("arkhe_linkcheck_excluded_by_host", "Targets the last run left out because their host is excluded.", float64(r.Source.ExcludedHost)),
		metrics.G("arkhe_linkcheck_broken_targets", "ARKs whose target is broken in the ledger after the last run.", float64(r.Broken)),
		metrics.G("arkhe_linkcheck_hosts", "Hosts the last run saw.", float64(r.HostCount)),
		metrics.G("arkhe_linkcheck_slow_hosts", "Hosts whose pass over their targets at their interval takes longer than the good window.", float64(len(s.SlowHosts))),
	}
	backlog := metrics.Family{Name: "arkhe_linkcheck_host_backlog", Help: "Targets of a host read but not checked by the last run (the hosts with the largest backlog).", Type: metrics.Gauge}
	throttled := metrics.Family{Name: "arkhe_linkcheck_host_throttled", Help: "429 or 503 answers with Retry-After from a host in the last run.", Type: metrics.Gauge}
	pass := metrics.Family{Name: "arkhe_linkcheck_host_pass_days", Help: "Least days a pass over a host's targets takes at its interval (hosts slower than the good window).", Type: metrics.Gauge}
	for _, h := range r.Hosts {
		backlog.Samples = append(backlog.Samples, metrics.Sample{Labels: lab("host", h.Host), Value: float64(h.Backlog)})
		throttled.Samples = append(throttled.Samples, metrics.Sample{Labels: lab("host", h.Host), Value: float64(h.Throttled)})
	}
	for _, h := range r.SlowHosts {
		pass.Samples = append(pass.Samples, metrics.Sample{Labels: lab("host", h.Host), Value: h.PassDays})
	}
	return append(fams, backlog, throttled, pass)
}
