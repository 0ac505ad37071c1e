package main

import (
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress shows long work: a progressbar on a terminal, a log line every interval otherwise,
// nothing with --quiet. Add is safe for concurrent use.
type progress struct {
	mu       sync.Mutex
	bar      *progressbar.ProgressBar
	log      *slog.Logger
	what     string
	total    int64
	done     int64
	start    time.Time
	last     time.Time
	interval time.Duration
}

// newProgress starts a progress display for what (e.g. "minting"), counting rows; total -1 if
// unknown.
func newProgress(w io.Writer, log *slog.Logger, quiet bool, what string, total int64) *progress {
	p := &progress{what: what, total: total, start: time.Now(), last: time.Now(), interval: 5 * time.Second}
	if quiet {
		return p
	}
	if isTerminal(w) {
		p.bar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(what),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("rows"),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
		return p
	}
	p.log = log
	return p
}

// Add records n more rows done.
func (p *progress) Add(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	if p.bar != nil {
		_ = p.bar.Add64(n)
		return
	}
	if p.log != nil && time.Since(p.last) >= p.interval {
		p.last = time.Now()
		rate := float64(p.done) / time.Since(p.start).Seconds()
		if p.total > 0 {
			p.log.Info(p.what, "done", p.done, "total", p.total, "percent", fmt.Sprintf("%.1f", 100*float64(p.done)/float64(p.total)), "rows_per_s", int64(rate))
		} else {
			p.log.Info(p.what, "done", p.done, "rows_per_s", int64(rate))
		}
	}
}

// Finish clears the bar.
func (p *progress) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
