package main

import (
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress shows how far long work has got: a bar on a terminal, a log line every interval
// otherwise, nothing with --quiet. It counts items (rows, records, ARKs, targets) and, when the
// work reads files, how far into them it is, in octets as stored or in rows (Parquet): the
// percentage and the ETA come from that position against its total. The rate is a moving
// average over the last rateWindow, shown once it spans minRateSpan (never the absurd rate of a
// first instant). Its methods are safe for concurrent use.
type progress struct {
	mu       sync.Mutex
	bar      *progressbar.ProgressBar
	log      *slog.Logger
	what     string // what is being done: "minting"
	noun     string // what is counted: "rows"
	octets   bool   // the position is in octets; otherwise it is the count
	total    int64  // the position's total; 0 unknown
	count    int64
	pos      int64
	settled  int64 // items whose work is finished (a mint's rows committed), when settles
	settles  bool  // the work finishes items after reading them (SetSettled was called)
	now      func() time.Time
	samples  []progressSample // within rateWindow, oldest first
	interval time.Duration    // between two log lines
	lastLog  time.Time
	stop     chan struct{} // closed by Finish: ends the ticker
	finished bool
}

// progressSample is the count and position at one time, for the moving average.
type progressSample struct {
	at                  time.Time
	count, pos, settled int64
}

// The moving average: over the last rateWindow, once its samples span minRateSpan; a sample
// at most every sampleEvery.
const (
	rateWindow  = 10 * time.Second
	minRateSpan = time.Second
	sampleEvery = 250 * time.Millisecond
	logInterval = 5 * time.Second
	barRefresh  = time.Second
)

// newProgress starts a progress display for what (e.g. "minting"), counting noun (e.g. "rows")
// on w (a bar when w is a terminal) or log. A ticker refreshes it (rate and ETA also move while
// the work waits) until Finish.
func newProgress(w io.Writer, log *slog.Logger, quiet bool, what, noun string) *progress {
	if quiet {
		return newProgressWith(nil, nil, what, noun, time.Now)
	}
	if !isTerminal(w) {
		p := newProgressWith(nil, log, what, noun, time.Now)
		p.tick(logInterval)
		return p
	}
	p := newProgressWith(w, nil, what, noun, time.Now)
	p.tick(barRefresh)
	return p
}

// newProgressWith is newProgress without the ticker, drawing a bar on bar (nil: none) and
// logging to log (nil: none), with the clock now: what the tests drive.
func newProgressWith(bar io.Writer, log *slog.Logger, what, noun string, now func() time.Time) *progress {
	p := &progress{what: what, noun: noun, now: now, interval: logInterval, log: log, stop: make(chan struct{})}
	t := now()
	p.samples = []progressSample{{at: t}}
	p.lastLog = t
	if bar != nil {
		p.bar = progressbar.NewOptions64(-1,
			progressbar.OptionSetWriter(bar),
			progressbar.OptionSetDescription(what),
			progressbar.OptionShowDescriptionAtLineEnd(),
			progressbar.OptionSetPredictTime(false),
			progressbar.OptionSetElapsedTime(false),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
	}
	return p
}

// tick refreshes the display every d until Finish.
func (p *progress) tick(d time.Duration) {
	t := time.NewTicker(d)
	go func() {
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.mu.Lock()
				p.show(true)
				p.mu.Unlock()
			}
		}
	}()
}

// SetTotal sets the total of the position: octets of the input files as stored when octets,
// else a number of items (the count is then the position). 0 means unknown.
func (p *progress) SetTotal(total int64, octets bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total, p.octets = max(total, 0), octets
	if p.bar != nil && p.total > 0 {
		p.bar.ChangeMax64(p.total)
	}
	p.show(false)
}

// Set records the count and, when the position is in octets, the position (ignored otherwise).
func (p *progress) Set(count, pos int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.count = count
	if p.octets {
		p.pos = pos
	} else {
		p.pos = count
	}
	p.show(false)
}

// SetSettled records how many of the items read have been finished (a mint's rows whose batch
// committed): shown beside the count, and the ETA then covers finishing them too.
func (p *progress) SetSettled(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.settled, p.settles = n, true
	p.show(false)
}

// Add counts n more items (the position moves with the count unless it is in octets).
func (p *progress) Add(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.count += n
	if !p.octets {
		p.pos = p.count
	}
	p.show(false)
}

// Finish ends the display: the ticker stops and the bar is cleared.
func (p *progress) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return
	}
	p.finished = true
	close(p.stop)
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}

// progressFigures are what a display shows. Percent, Rate and ETA are negative when unknown.
// Rate is the items read per second, the moving average; once everything is read, for work that
// settles items apart from reading them, the items done per second.
type progressFigures struct {
	Count, Pos, Total int64
	Settled           int64   // -1 when the work does not settle items apart from reading them
	Percent           float64 // of Pos in Total
	Rate              float64
	ETA               time.Duration
}

// figures samples the clock and computes the figures; p.mu is held.
func (p *progress) figures() progressFigures {
	now := p.now()
	if last := p.samples[len(p.samples)-1]; now.Sub(last.at) >= sampleEvery {
		p.samples = append(p.samples, progressSample{at: now, count: p.count, pos: p.pos, settled: p.settled})
	}
	// keep the newest sample at or before the window's start, so the average spans the window
	cut := 0
	for cut+1 < len(p.samples) && now.Sub(p.samples[cut+1].at) >= rateWindow {
		cut++
	}
	p.samples = p.samples[cut:]
	f := progressFigures{Count: p.count, Pos: p.pos, Total: p.total, Settled: -1, Percent: -1, Rate: -1, ETA: -1}
	if p.settles {
		f.Settled = p.settled
	}
	if p.total > 0 {
		f.Percent = min(100, 100*float64(p.pos)/float64(p.total))
	}
	base := p.samples[0]
	span := now.Sub(base.at)
	if span < minRateSpan {
		return f
	}
	f.Rate = float64(p.count-base.count) / span.Seconds()
	if p.settles && p.total > 0 && p.pos >= p.total {
		// everything is read: what still moves is the items done
		f.Rate = float64(p.settled-base.settled) / span.Seconds()
	}
	if p.total <= 0 {
		return f
	}
	// reading: the rest of the input at the recent speed
	read := time.Duration(-1)
	if p.pos >= p.total {
		read = 0
	} else if speed := float64(p.pos-base.pos) / span.Seconds(); speed > 0 {
		read = time.Duration(float64(p.total-p.pos) / speed * float64(time.Second))
	}
	f.ETA = read
	if p.settles && read >= 0 {
		// settling runs behind reading: the items still to settle, all of them estimated from
		// the share read so far, at the recent settling speed
		items := p.count
		if p.pos > 0 && p.pos < p.total {
			items = int64(float64(p.count) * float64(p.total) / float64(p.pos))
		}
		switch speed := float64(p.settled-base.settled) / span.Seconds(); {
		case p.settled >= items:
		case speed > 0:
			f.ETA = max(read, time.Duration(float64(items-p.settled)/speed*float64(time.Second)))
		default:
			f.ETA = -1 // nothing settled lately: no estimate
		}
	}
	if f.ETA > 0 {
		f.ETA = f.ETA.Round(time.Second)
	}
	return f
}

// show draws the bar, or writes a log line when the interval has passed (half of it for the
// ticker's refresh); p.mu is held.
func (p *progress) show(ticked bool) {
	if p.finished || (p.bar == nil && p.log == nil) {
		return
	}
	f := p.figures()
	if p.bar != nil {
		p.bar.Describe(p.what + ": " + p.describe(f))
		if p.total > 0 {
			// the bar ends with Finish, not when reading does (batches may still be committing)
			_ = p.bar.Set64(min(f.Pos, p.total-1))
		}
		return
	}
	wait := p.interval
	if ticked {
		wait /= 2
	}
	if now := p.now(); now.Sub(p.lastLog) >= wait {
		p.lastLog = now
		p.log.Info(p.what, p.logFields(f)...)
	}
}

// describe renders the figures for the bar: "3.9 MB of 7.8 MB · 22,500 rows · 5,625 rows/s ·
// ETA 4s"; with settling, "22,500 rows read, 18,000 done"; "finishing" once everything is read
// and no estimate is left.
func (p *progress) describe(f progressFigures) string {
	parts := make([]string, 0, 4)
	switch {
	case p.octets && f.Total > 0:
		parts = append(parts, octetsText(f.Pos)+" of "+octetsText(f.Total))
	case p.octets:
		parts = append(parts, octetsText(f.Pos))
	}
	count := thousands(f.Count) + " " + p.noun
	if !p.octets && f.Total > 0 {
		count = thousands(f.Count) + " of " + thousands(f.Total) + " " + p.noun
	}
	if f.Settled >= 0 {
		count += " read, " + thousands(f.Settled) + " done"
	}
	parts = append(parts, count)
	if f.Rate >= 0 {
		parts = append(parts, thousands(int64(f.Rate+0.5))+" "+p.noun+"/s")
	}
	switch {
	case f.ETA > 0 || (f.ETA == 0 && f.Pos < f.Total):
		parts = append(parts, "ETA "+f.ETA.String())
	case f.Total > 0 && f.Pos >= f.Total:
		parts = append(parts, "finishing")
	}
	return strings.Join(parts, " · ")
}

// logFields are the figures as the fields of a log line: the count under the noun's name
// (rows=22500), the items done when the work settles them apart (done=), the position and
// total (octets=, total_octets=, or total_rows=), percent, the moving average (rows_per_s=) and
// eta (a duration); a figure not known yet is left out.
func (p *progress) logFields(f progressFigures) []any {
	key := strings.ToLower(strings.ReplaceAll(p.noun, " ", "_"))
	fields := []any{key, f.Count}
	if f.Settled >= 0 {
		fields = append(fields, "done", f.Settled)
	}
	switch {
	case p.octets:
		fields = append(fields, "octets", f.Pos)
		if f.Total > 0 {
			fields = append(fields, "total_octets", f.Total)
		}
	case f.Total > 0:
		fields = append(fields, "total_"+key, f.Total)
	}
	if f.Percent >= 0 {
		fields = append(fields, "percent", strconv.FormatFloat(f.Percent, 'f', 1, 64))
	}
	if f.Rate >= 0 {
		fields = append(fields, key+"_per_s", int64(f.Rate+0.5))
	}
	if f.ETA >= 0 {
		fields = append(fields, "eta", f.ETA.String())
	}
	return fields
}

// octetsText renders a size in octets in decimal units: 950 B, 12.3 kB, 7.8 MB, 1.2 GB.
func octetsText(n int64) string {
	const k = 1000
	if n < k {
		return fmt.Sprintf("%d B", n)
	}
	v, units := float64(n)/k, []string{"kB", "MB", "GB", "TB"}
	i := 0
	for v >= k && i < len(units)-1 {
		v /= k
		i++
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + units[i]
}
