package linkcheck

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"
)

// TargetSource yields the targets of a run, in the order they should be
// checked (a ledger: Rank, then DueAt, see those). Run reads it from one
// goroutine, streaming: it holds at most Config.LookAhead targets.
type TargetSource interface {
	// Next returns the next target, or io.EOF when there are no more. It
	// must return promptly with ctx's error once ctx is cancelled.
	Next(ctx context.Context) (Target, error)
}

// ResultSink receives every check of a run.
type ResultSink interface {
	// Record stores one check: the Result, the ARK's next State and the
	// Transitions the check caused (see Next). When Record returns nil the
	// check must be durable (committed), so a run killed afterwards loses no
	// recorded check. Record is called from up to Config.Workers goroutines
	// at once and must be safe for concurrent use. Its context is not
	// cancelled with Run's, so checks completed before a cancellation are
	// still recorded. An error stops the run; Run returns it wrapped.
	Record(ctx context.Context, r Result, next State, ts []Transition) error
}

// SourceFunc adapts a function to a TargetSource.
type SourceFunc func(ctx context.Context) (Target, error)

// Next calls f.
func (f SourceFunc) Next(ctx context.Context) (Target, error) { return f(ctx) }

// SinkFunc adapts a function to a ResultSink.
type SinkFunc func(ctx context.Context, r Result, next State, ts []Transition) error

// Record calls f.
func (f SinkFunc) Record(ctx context.Context, r Result, next State, ts []Transition) error {
	return f(ctx, r, next, ts)
}

// SliceSource returns a TargetSource yielding ts in order.
func SliceSource(ts []Target) TargetSource {
	i := 0
	return SourceFunc(func(ctx context.Context) (Target, error) {
		if err := ctx.Err(); err != nil {
			return Target{}, err
		}
		if i >= len(ts) {
			return Target{}, io.EOF
		}
		i++
		return ts[i-1], nil
	})
}

// StopReason says why a run ended.
type StopReason string

// The reasons a run ends.
const (
	// StopSourceDone: every target read was checked.
	StopSourceDone StopReason = "source done"
	// StopLimit: Config.Limit checks were started.
	StopLimit StopReason = "limit"
	// StopMaxDuration: Config.MaxDuration passed.
	StopMaxDuration StopReason = "max duration"
	// StopCancelled: Run's context ended.
	StopCancelled StopReason = "cancelled"
	// StopSourceError: the source failed.
	StopSourceError StopReason = "source error"
	// StopSinkError: the sink failed.
	StopSinkError StopReason = "sink error"
)

// HostStats are one host's figures in a run. Seen, Deferred and Unchecked
// count targets by the host of their URL; Requests, Throttled and RetryAfter
// count requests by the host they went to (redirect hops included).
type HostStats struct {
	// Host is the host key; "" collects the hosts beyond Config.MaxHostStats.
	Host string
	// Interval is the host's per-host interval.
	Interval time.Duration
	// Seen is the number of targets read for this host.
	Seen int64
	// Checked is the number of checks recorded for this host's targets.
	Checked int64
	// Deferred is the number of targets not checked because the host held
	// its queue's worth already (they stay due).
	Deferred int64
	// Unchecked is the number of targets still queued when the run stopped
	// (they stay due).
	Unchecked int64
	// Requests is the number of requests sent to this host.
	Requests int64
	// Throttled is the number of 429 or 503 answers with Retry-After.
	Throttled int64
	// RetryAfter is the total delay those answers imposed (after capping).
	RetryAfter time.Duration
}

// PassTime is the least time checking every target this run saw for the
// host takes at its interval: PassTime(Seen, Interval).
func (h HostStats) PassTime() time.Duration { return PassTime(h.Seen, h.Interval) }

// Summary is the outcome of a run.
type Summary struct {
	// Started and Finished bound the run (UTC).
	Started, Finished time.Time
	// Stop says why the run ended.
	Stop StopReason
	// SourceDone reports that the whole source was read; when false the
	// per-host counts are lower bounds.
	SourceDone bool
	// Read is the number of targets read from the source.
	Read int64
	// Checked is the number of checks recorded by the sink;
	// Checked = Good + Failed + Inconclusive + Blocked. Inconclusive counts
	// the 429 answers; Blocked the checks the SSRF guard refused
	// (ErrBlocked, outcome inconclusive), which stay due (see DueAt).
	Checked, Good, Failed, Inconclusive, Blocked int64
	// BlockedExamples are the first MaxBlockedExamples blocked checks
	// recorded, in the order recorded.
	BlockedExamples []Result
	// NewlyBroken, Recovered, ContentChanged and Repointed count the
	// transitions of recorded checks.
	NewlyBroken, Recovered, ContentChanged, Repointed int64
	// Aborted is the number of checks in flight when the run was cancelled;
	// they are not recorded.
	Aborted int64
	// Deferred and Unchecked are the targets read but not checked (see
	// HostStats); they stay due.
	Deferred, Unchecked int64
	// Hosts are the per-host figures, most targets seen first.
	Hosts []HostStats
	// SlowHosts are the hosts whose PassTime exceeds Policy.GoodWindow: the
	// hosts where a full pass takes longer than the good window, so their
	// targets cannot all be checked as often as the window asks.
	SlowHosts []HostStats
}

// MaxBlockedExamples bounds Summary.BlockedExamples.
const MaxBlockedExamples = 5

// Run checks the targets of src and records every check in sink; see the
// package documentation for the politeness and safety rules. It reads src
// from one goroutine and checks with cfg.Workers goroutines, and returns
// when the source is exhausted and every target read was checked, or when
// the run stops (Config.Limit, Config.MaxDuration, ctx, a source or sink
// error). It returns a *ConfigError for an invalid cfg, ctx's error when
// cancelled, and source and sink errors wrapped; the Summary is valid in
// every case but the first.
func Run(ctx context.Context, cfg Config, src TargetSource, sink ResultSink) (Summary, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Summary{}, err
	}
	start := time.Now()
	sum := Summary{Started: start.UTC()}
	s := newSched(cfg, start)
	ck := newChecker(cfg, s)
	defer ck.close()

	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	recCtx := context.WithoutCancel(ctx)

	var mu sync.Mutex // guards sum's counters
	record := func(r Result, prev State) error {
		next, ts := Next(prev, r, cfg.Policy)
		if err := sink.Record(recCtx, r, next, ts); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		sum.Checked++
		switch r.Check.Outcome {
		case OutcomeGood:
			sum.Good++
		case OutcomeFailed:
			sum.Failed++
		case OutcomeInconclusive:
			if r.Check.Error != ErrBlocked {
				sum.Inconclusive++
				break
			}
			sum.Blocked++
			if len(sum.BlockedExamples) < MaxBlockedExamples {
				sum.BlockedExamples = append(sum.BlockedExamples, r)
			}
		}
		for _, t := range ts {
			switch t.Kind {
			case Broken:
				sum.NewlyBroken++
			case Recovered:
				sum.Recovered++
			case ContentChanged:
				sum.ContentChanged++
			case Repointed:
				sum.Repointed++
			}
		}
		return nil
	}
	fail := func(reason StopReason, err error) {
		s.mu.Lock()
		s.halt(reason, err)
		s.mu.Unlock()
		cancelRun()
	}

	// The reader: streams the source into the host table.
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			t, err := src.Next(runCtx)
			if errors.Is(err, io.EOF) {
				s.sourceDone()
				mu.Lock()
				sum.SourceDone = true
				mu.Unlock()
				return
			}
			if err != nil {
				if runCtx.Err() == nil {
					fail(StopSourceError, fmt.Errorf("link check source: %w", err))
				}
				return
			}
			mu.Lock()
			sum.Read++
			mu.Unlock()
			u, perr := parseTarget(t.URL)
			if perr != nil {
				// No request can be made: the check is its verdict.
				if !s.take() {
					return
				}
				r := Result{Key: t.Key, Check: Check{Time: time.Now().UTC(), Target: t.URL, Size: -1}}
				r.Check.Error, r.ErrorDetail = classify(perr), perr.Error()
				r.Check.Outcome = outcomeOf(&r.Check)
				if err := record(r, t.Prev); err != nil {
					fail(StopSinkError, fmt.Errorf("link check sink: recording %s: %w", t.Key, err))
					return
				}
				continue
			}
			if !s.admit(runCtx, hostKeyOf(u), item{t: t, u: u}) {
				return
			}
		}
	}()

	var wg sync.WaitGroup
	for range cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				it, h, ok := s.next(runCtx)
				if !ok {
					return
				}
				t := it.t
				r, aborted := ck.check(runCtx, t, it.u, h)
				if aborted {
					mu.Lock()
					sum.Aborted++
					mu.Unlock()
					continue
				}
				if err := record(r, t.Prev); err != nil {
					fail(StopSinkError, fmt.Errorf("link check sink: recording %s: %w", t.Key, err))
					return
				}
				s.mu.Lock()
				h.stats.Checked++
				s.mu.Unlock()
			}
		}()
	}
	wg.Wait()
	cancelRun() // releases a reader blocked in the source or in admit
	<-readerDone

	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.stop != nil:
		sum.Stop = s.stop.reason
		err = s.stop.err
	default:
		sum.Stop = StopSourceDone
	}
	for _, h := range s.hosts {
		if n := h.queued(); n > 0 {
			h.stats.Unchecked += int64(n)
		}
	}
	all := make([]HostStats, 0, len(s.stats)+1)
	for _, st := range s.stats {
		all = append(all, *st)
	}
	if s.otherStats != nil {
		all = append(all, *s.otherStats)
	}
	slices.SortFunc(all, func(a, b HostStats) int {
		if c := cmp.Compare(b.Seen, a.Seen); c != 0 {
			return c
		}
		return cmp.Compare(a.Host, b.Host)
	})
	for _, h := range all {
		sum.Deferred += h.Deferred
		sum.Unchecked += h.Unchecked
		if h.Host != "" && h.PassTime() > cfg.Policy.GoodWindow {
			sum.SlowHosts = append(sum.SlowHosts, h)
		}
	}
	sum.Hosts = all
	sum.Finished = time.Now().UTC()
	return sum, err
}
