package verify

import (
	"github.com/arkhe-ledger/arkhe/metrics"
)

// Metrics returns the audit's figures as Prometheus metric families (gauges, named
// arkhe_verify_*): when it ran and how long it took, the ARKs in the ledger and those checked,
// the findings per check with its severity, the error findings, whether it was clean and
// whether it was a full audit, and whether it became the next audit's baseline.
func (r *Result) Metrics() []metrics.Family {
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	findings := metrics.Family{Name: "arkhe_verify_findings", Help: "Findings of the last audit, by check and severity.", Type: metrics.Gauge}
	for _, c := range r.Checks {
		findings.Samples = append(findings.Samples, metrics.Sample{Labels: []metrics.Label{{Name: "check", Value: c.Name},
			{Name: "severity", Value: string(c.Severity)}}, Value: float64(c.Count)})
	}
	return []metrics.Family{
		metrics.G("arkhe_verify_last_run_timestamp_seconds", "When the last audit's snapshot was taken (Unix time).", float64(r.Started.UnixNano())/1e9),
		metrics.G("arkhe_verify_last_run_duration_seconds", "How long the last audit took.", r.Duration.Seconds()),
		metrics.G("arkhe_verify_arks", "ARKs in the ledger at the last audit.", float64(r.ARKs)),
		metrics.G("arkhe_verify_arks_checked", "ARKs the last audit checked one by one.", float64(r.Checked)),
		findings,
		metrics.G("arkhe_verify_errors", "Findings of severity error in the last audit.", float64(r.Errors())),
		metrics.G("arkhe_verify_clean", "1 when the last audit found nothing, else 0.", b(r.Clean())),
		metrics.G("arkhe_verify_full", "1 when the last audit was a full audit, 0 for --since.", b(r.Full)),
		metrics.G("arkhe_verify_baseline_recorded", "1 when the last audit was recorded as the next audit's baseline.", b(r.SummaryStored)),
	}
}
