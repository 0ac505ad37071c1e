package main

import (
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/arkhe-ledger/arkhe/linkcheck"
	"github.com/arkhe-ledger/arkhe/metrics"
	"github.com/arkhe-ledger/arkhe/targethealth"
)

// contactEnv is the environment variable that gives --contact.
const contactEnv = "ARKHE_LINKCHECK_CONTACT"

func linkcheckCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "linkcheck",
		Usage: "check the health of the ARKs' targets, politely (the nightly run); exit 0 nothing newly broken, 1 targets newly broken, 2 could not run",
		Description: "Checks the due targets of public ARKs (not reserved, not tombstoned, not the test NAAN 99999 unless\n" +
			"--include-test or --naan 99999; excluded managers, shoulders and hosts left out): failing targets first, then\n" +
			"targets never checked, then good ones whose window has passed. At most one request at a time to a host and\n" +
			"--per-host-interval between them; a User-Agent naming arkhe and --contact; HEAD first, GET when refused;\n" +
			"Retry-After honoured; loopback, private and link-local addresses refused unless --allow-private. Each check\n" +
			"is committed to the ledger as it completes (link_state, one link_event per change of state), so a run\n" +
			"stopped by --limit, --max-duration or a signal loses nothing and the next run continues. A target is broken\n" +
			"after --fail-threshold failed checks in a row spanning at least --fail-span. The run's figures are printed,\n" +
			"recorded as one audit event and, with --metrics-file, written for node_exporter's textfile collector.\n" +
			"Durations take Go's units (90s, 15m, 2h) and d for days (30d).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "contact", EnvVars: []string{contactEnv}, Usage: "URL (http, https or mailto) where a site's operators reach you; sent in the User-Agent (required)"},
			&cli.StringFlag{Name: "naan", Usage: "check only the ARKs of this NAAN"},
			&cli.StringFlag{Name: "shoulder", Usage: "check only the ARKs of this shoulder (/x9)"},
			&cli.StringFlag{Name: "manager", Usage: "check only the ARKs of this manager's shoulders (by name; with --naan when the name is in several)"},
			&cli.BoolFlag{Name: "include-test", Usage: "check ARKs of the test NAAN 99999 too"},
			&cli.StringFlag{Name: "good-window", Value: "30d", Usage: "a target is not due again for this long after a good check"},
			&cli.StringFlag{Name: "bad-window", Value: "1d", Usage: "a target is not due again for this long after a failed check"},
			&cli.Int64Flag{Name: "limit", Usage: "start at most N checks", DefaultText: "no limit"},
			&cli.StringFlag{Name: "max-duration", Usage: "start no check after this long (checks in flight finish)", DefaultText: "no limit"},
			&cli.IntFlag{Name: "workers", Value: linkcheck.DefaultWorkers, Usage: "checks in flight at once, across hosts"},
			&cli.StringFlag{Name: "per-host-interval", Value: "1s", Usage: "least time between the end of one request to a host and the start of the next"},
			&cli.StringSliceFlag{Name: "host-interval", Usage: "HOST=DURATION: another interval for one host (repeatable)"},
			&cli.StringFlag{Name: "timeout", Value: "30s", Usage: "bound on one request, to the end of the body read"},
			&cli.StringFlag{Name: "connect-timeout", Value: "10s", Usage: "bound on the TCP connect and TLS handshake"},
			&cli.IntFlag{Name: "max-redirects", Value: linkcheck.DefaultMaxRedirects, Usage: "redirects followed before the check fails"},
			&cli.IntFlag{Name: "max-body-kib", Value: linkcheck.DefaultMaxBodyKiB, Usage: "KiB of a body a GET reads"},
			&cli.IntFlag{Name: "fail-threshold", Value: linkcheck.DefaultFailThreshold, Usage: "failed checks in a row for a target to be broken"},
			&cli.StringFlag{Name: "fail-span", Value: "14d", Usage: "least time from the first to the latest of those failures"},
			&cli.BoolFlag{Name: "allow-private", Usage: "let checks reach loopback, private and link-local addresses (tests and local benchmarks)"},
			&cli.StringFlag{Name: "metrics-file", Usage: "write the run's figures here in the Prometheus text format (e.g. /var/lib/node_exporter/textfile/arkhe_linkcheck.prom)"},
			&cli.StringFlag{Name: "client", Usage: "client_id recorded in the audit event"},
		},
		Action: func(c *cli.Context) error { return linkcheckAction(c, e) },
		Subcommands: []*cli.Command{
			linkExclusionCommand(e, "exclude", "leave a manager's, a shoulder's or a host's targets out of every link check"),
			linkExclusionCommand(e, "include", "lift an exclusion (it is kept, with its end time)"),
			{
				Name:  "exclusions",
				Usage: "list the open link-check exclusions (--all: every one ever made)",
				Flags: []cli.Flag{&cli.BoolFlag{Name: "all", Usage: "list lifted exclusions too"}},
				Action: func(c *cli.Context) error {
					l, err := openChecked(c, e, 2)
					if err != nil {
						return err
					}
					defer l.Close()
					exs, err := targethealth.Exclusions(c.Context, l, c.Bool("all"))
					if err != nil {
						return err
					}
					printExclusions(e.stdout, exs)
					return nil
				},
			},
		},
	}
}

// parseSpan reads a duration: Go's form (90s, 15m, 2h30m) or a number of days ("30d", "1.5d").
func parseSpan(flag, v string) (time.Duration, error) {
	s := strings.TrimSpace(v)
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(d, 64)
		if err == nil && n >= 0 && n < 100*365 {
			return time.Duration(n * float64(24*time.Hour)), nil
		}
	} else if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return d, nil
	}
	return 0, fmt.Errorf("--%s %q: want a duration such as 90s, 15m, 2h or 30d", flag, v)
}

// linkcheckConfig turns the flags into the run's configuration.
func linkcheckConfig(c *cli.Context) (targethealth.Config, error) {
	cfg := targethealth.Config{
		Selection: targethealth.Selection{NAAN: c.String("naan"), Shoulder: c.String("shoulder"), Manager: c.String("manager"),
			IncludeTest: c.Bool("include-test")},
		ClientID: c.String("client"),
	}
	ck := linkcheck.Config{Contact: c.String("contact"), Workers: c.Int("workers"), Limit: c.Int64("limit"),
		MaxRedirects: c.Int("max-redirects"), MaxBodyKiB: c.Int("max-body-kib"), AllowPrivate: c.Bool("allow-private"),
		Version: linkcheckVersion()}
	if ck.Contact == "" {
		return cfg, fmt.Errorf("linkcheck: --contact (or $%s) is required: a URL where the operators of the sites checked can reach you", contactEnv)
	}
	for _, n := range []struct {
		flag string
		v    int
	}{{"workers", ck.Workers}, {"max-redirects", ck.MaxRedirects}, {"max-body-kib", ck.MaxBodyKiB}, {"fail-threshold", c.Int("fail-threshold")}} {
		if n.v < 1 {
			return cfg, fmt.Errorf("linkcheck: --%s must be at least 1", n.flag)
		}
	}
	if ck.Limit < 0 {
		return cfg, errors.New("linkcheck: --limit must not be negative")
	}
	spans := map[string]*time.Duration{"per-host-interval": &ck.PerHostInterval, "timeout": &ck.RequestTimeout,
		"connect-timeout": &ck.ConnectTimeout, "good-window": &ck.Policy.GoodWindow, "bad-window": &ck.Policy.BadWindow,
		"fail-span": &ck.Policy.FailSpan}
	if c.String("max-duration") != "" {
		spans["max-duration"] = &ck.MaxDuration
	}
	for flag, dst := range spans {
		d, err := parseSpan(flag, c.String(flag))
		if err != nil {
			return cfg, fmt.Errorf("linkcheck: %w", err)
		}
		if d == 0 && flag != "max-duration" {
			return cfg, fmt.Errorf("linkcheck: --%s must be more than 0", flag)
		}
		*dst = d
	}
	ck.Policy.FailThreshold = c.Int("fail-threshold")
	for _, hv := range c.StringSlice("host-interval") {
		host, dur, ok := strings.Cut(hv, "=")
		host = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(host)), ".")
		if !ok || host == "" {
			return cfg, fmt.Errorf("linkcheck: --host-interval %q: want HOST=DURATION, e.g. repository.example.org=5s", hv)
		}
		d, err := parseSpan("host-interval", dur)
		if err != nil || d == 0 {
			return cfg, fmt.Errorf("linkcheck: --host-interval %q: want HOST=DURATION with a duration more than 0, e.g. repository.example.org=5s", hv)
		}
		if ck.HostIntervals == nil {
			ck.HostIntervals = map[string]time.Duration{}
		}
		ck.HostIntervals[host] = d
	}
	cfg.Check = ck
	return cfg, nil
}

// linkcheckVersion is arkhe's version as one User-Agent token.
func linkcheckVersion() string {
	bi, _ := debug.ReadBuildInfo()
	v := strings.TrimPrefix(readBuildInfo(bi, version, commit).Version, "v")
	if v == "" || strings.ContainsAny(v, " ()\r\n") {
		return linkcheck.DefaultVersion
	}
	return v
}

// isLinkCheckRefusal reports whether err refused a link-check run before it checked anything:
// a bad configuration, another run in progress, or a selection that names nothing.
func isLinkCheckRefusal(err error) bool { return targethealth.RefusedBeforeRun(err) }

func linkcheckAction(c *cli.Context, e *env) error {
	if c.NArg() > 0 {
		return usagef("linkcheck: unexpected argument %q (the subcommands are exclude, include and exclusions)", c.Args().First())
	}
	cfg, err := linkcheckConfig(c)
	if err != nil {
		return err
	}
	l, err := openChecked(c, e, 8)
	if err != nil {
		return err
	}
	defer l.Close()
	p := newProgress(e.stderr, e.log, c.Bool("quiet"), "checking", "targets")
	cfg.Progress = func(int64) { p.Add(1) }
	rep, err := targethealth.Run(c.Context, l, cfg)
	p.Finish()
	if targethealth.RefusedBeforeRun(err) {
		return err // refused before anything ran
	}
	printLinkcheck(e.stdout, &rep)
	if path := c.String("metrics-file"); path != "" {
		if merr := metrics.Write(path, rep.Metrics()); merr != nil && err == nil {
			err = merr
		}
	}
	if err != nil {
		return interrupted(c.Context, "linkcheck", "every check recorded before is kept and the next run continues", err)
	}
	if rep.Summary.NewlyBroken > 0 {
		return withFindings("")
	}
	return nil
}

// days renders a duration in days when it is at least one.
func days(d time.Duration) string {
	if d >= 24*time.Hour {
		return strconv.FormatFloat(d.Hours()/24, 'f', -1, 64) + "d"
	}
	return d.String()
}

// printLinkcheck prints the run's one-screen summary.
func printLinkcheck(w io.Writer, r *targethealth.Report) {
	s := r.Summary
	fmt.Fprintf(w, "arkhe linkcheck: %s checked in %s (%s)\n", plural(s.Checked, "target", "targets"),
		s.Finished.Sub(s.Started).Round(time.Millisecond), stopText(s.Stop))
	fmt.Fprintf(w, "  good             %s\n", thousands(s.Good))
	fmt.Fprintf(w, "  failed           %s\n", thousands(s.Failed))
	fmt.Fprintf(w, "  inconclusive     %s (429 Too Many Requests: counted neither way)\n", thousands(s.Inconclusive))
	if s.Blocked > 0 {
		fmt.Fprintf(w, "  blocked          %s (the address is loopback, private or link-local: refused, not counted as a failure, due again next run)\n", thousands(s.Blocked))
	}
	fmt.Fprintf(w, "  newly broken     %s (%d failed checks in a row over at least %s)\n", thousands(s.NewlyBroken), r.Policy.FailThreshold, days(r.Policy.FailSpan))
	fmt.Fprintf(w, "  recovered        %s\n", thousands(s.Recovered))
	fmt.Fprintf(w, "  content changed  %s (final host, media type, or size by more than %.0f%%)\n", thousands(s.ContentChanged), 100*r.Policy.SizeShare)
	fmt.Fprintf(w, "  read             %s due: %s failing, %s never checked, %s good; %s left out by host exclusions\n",
		thousands(s.Read), thousands(r.Source.Failing), thousands(r.Source.Never), thousands(r.Source.Good), thousands(r.Source.ExcludedHost))
	fmt.Fprintf(w, "  not checked      %s deferred (host queue full), %s still queued, %s aborted, %s stale (repointed during the run): they stay due, the next run continues\n",
		thousands(s.Deferred), thousands(s.Unchecked), thousands(s.Aborted), thousands(r.Sink.Stale))
	fmt.Fprintf(w, "  broken now       %s in the ledger\n", plural(r.Broken, "target", "targets"))
	fmt.Fprintf(w, "  hosts            %s\n", thousands(int64(r.HostCount)))
	if len(r.Hosts) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "    HOST\tTARGETS\tCHECKED\tBACKLOG\tTHROTTLED\tRETRY-AFTER\tINTERVAL\tPASS\t")
		for _, h := range r.Hosts {
			host := h.Host
			if host == "" {
				host = "(other hosts)"
			}
			fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\t%s\t%.0fs\t%gs\t%.1fd\t\n", host, thousands(h.Seen), thousands(h.Checked),
				thousands(h.Backlog), thousands(h.Throttled), h.RetryAfterSecond, h.IntervalSeconds, h.PassDays)
		}
		tw.Flush()
		if more := r.HostCount - len(r.Hosts); more > 0 {
			fmt.Fprintf(w, "    ... and %d more hosts, with a smaller backlog or fewer targets than those above\n", more)
		}
	}
	if n := len(s.SlowHosts); n > 0 {
		fmt.Fprintf(w, "warning: on %s a full pass over the targets takes longer than the good window (%s): their targets are checked less often than the window says; give them a shorter --host-interval if their operators agree, or a longer --good-window\n",
			plural(int64(n), "host", "hosts"), days(r.Policy.GoodWindow))
		for _, h := range r.SlowHosts {
			fmt.Fprintf(w, "  %s: %s targets at %gs take %.1f days\n", h.Host, thousands(h.Seen), h.IntervalSeconds, h.PassDays)
		}
	}
	if s.Blocked > 0 {
		fmt.Fprintf(w, "note: %s refused because their address is loopback, private or link-local; if they are meant to be on such addresses (a test or a local repository), run again with --allow-private:\n",
			plural(s.Blocked, "target was", "targets were"))
		for _, b := range s.BlockedExamples {
			fmt.Fprintf(w, "  %s %s\n", b.Key, b.Check.Target)
		}
		if more := s.Blocked - int64(len(s.BlockedExamples)); more > 0 {
			fmt.Fprintf(w, "  ... and %s more (arkhe report links lists them)\n", thousands(more))
		}
	}
	if r.Err != "" {
		fmt.Fprintf(w, "stopped: %s\n", r.Err)
	}
}

func stopText(s linkcheck.StopReason) string {
	switch s {
	case linkcheck.StopSourceDone:
		return "every due target read was checked"
	case linkcheck.StopLimit:
		return "stopped at --limit"
	case linkcheck.StopMaxDuration:
		return "stopped at --max-duration"
	case linkcheck.StopCancelled:
		return "interrupted"
	}
	return "stopped: " + string(s)
}

func linkExclusionCommand(e *env, name, usage string) *cli.Command {
	return &cli.Command{
		Name:  name,
		Usage: usage,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "manager", Usage: "a manager, by name"},
			&cli.StringFlag{Name: "shoulder", Usage: "a shoulder (/x9)"},
			&cli.StringFlag{Name: "host", Usage: "a host name (repository.example.org) or a URL on it"},
			&cli.StringFlag{Name: "naan", Usage: "the NAAN of --manager or --shoulder, when the name is in several"},
			&cli.StringFlag{Name: "reason", Usage: "why (kept with the exclusion)"},
			&cli.StringFlag{Name: "client", Usage: "who asks (client_id or name, kept with the exclusion)"},
		},
		Action: func(c *cli.Context) error {
			sp := targethealth.ExclusionSpec{NAAN: c.String("naan"), Manager: c.String("manager"), Shoulder: c.String("shoulder"),
				Host: c.String("host"), Reason: c.String("reason"), By: c.String("client")}
			l, err := openChecked(c, e, 2)
			if err != nil {
				return err
			}
			defer l.Close()
			what := exclusionWhat(sp)
			if name == "exclude" {
				created, err := targethealth.AddExclusion(c.Context, l, sp)
				if err != nil {
					return err
				}
				if !created {
					fmt.Fprintf(e.stdout, "%s was excluded from link checks already\n", what)
					return nil
				}
				fmt.Fprintf(e.stdout, "%s excluded from link checks\n", what)
				return nil
			}
			ended, err := targethealth.EndExclusion(c.Context, l, sp)
			if err != nil {
				return err
			}
			if !ended {
				fmt.Fprintf(e.stdout, "%s had no open exclusion: nothing changed\n", what)
				return nil
			}
			fmt.Fprintf(e.stdout, "%s is checked again (the exclusion is kept with its end time)\n", what)
			return nil
		},
	}
}

func exclusionWhat(sp targethealth.ExclusionSpec) string {
	in := ""
	if sp.NAAN != "" {
		in = " of NAAN " + sp.NAAN
	}
	switch {
	case sp.Manager != "":
		return "manager " + sp.Manager + in
	case sp.Shoulder != "":
		return "shoulder " + sp.Shoulder + in
	}
	return "host " + sp.Host
}

func printExclusions(w io.Writer, exs []targethealth.Exclusion) {
	if len(exs) == 0 {
		fmt.Fprintln(w, "no link-check exclusions")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tNAAN\tNAME\tSINCE\tBY\tENDED\tREASON")
	for _, x := range exs {
		ended := ""
		if x.EndedAt != nil {
			ended = x.EndedAt.UTC().Format(time.RFC3339)
			if x.EndedBy != "" {
				ended += " by " + x.EndedBy
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", x.Kind, x.NAAN, x.Name, x.CreatedAt.UTC().Format(time.RFC3339), x.CreatedBy, ended, x.Reason)
	}
	tw.Flush()
}
