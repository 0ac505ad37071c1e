package linkcheck

import (
	"container/heap"
	"context"
	"net/url"
	"sync"
	"time"
)

// host is one politeness unit: at most one request in flight (busy) and no
// request before readyAt.
type host struct {
	key      string
	interval time.Duration
	queue    []item // FIFO of targets waiting for this host
	head     int    // index of the queue's first element
	busy     bool
	readyAt  time.Time
	heap     *hostHeap // the heap holding it (runnable or cooling), nil when busy or new
	idx      int       // index in heap
	seq      uint64    // tie-break: order of entering the heap
	waiting  int       // acquire calls waiting for this host; they go before its queue
	stats    *HostStats
}

func (h *host) queued() int { return len(h.queue) - h.head }

func (h *host) pop() item {
	t := h.queue[h.head]
	h.queue[h.head] = item{}
	h.head++
	switch {
	case h.head == len(h.queue):
		h.queue, h.head = h.queue[:0], 0
	case h.head*2 >= len(h.queue):
		// Move the rest to the front: it copies no more elements than were
		// popped since the last move, so pops stay O(1) amortized, and the
		// slice stays within twice the queue's length plus append's slack.
		n := copy(h.queue, h.queue[h.head:])
		clear(h.queue[n:])
		h.queue, h.head = h.queue[:n], 0
	}
	if c := cap(h.queue); c > 64 && len(h.queue)*4 < c {
		h.queue = append(make([]item, 0, c/2), h.queue[h.head:]...)
		h.head = 0
	}
	return t
}

// item is a queued target with its parsed URL.
type item struct {
	t Target
	u *url.URL
}

// hostHeap orders hosts by readyAt, then by the order they entered the heap,
// which makes hosts that are ready take turns (round-robin).
type hostHeap []*host

func (q hostHeap) Len() int { return len(q) }
func (q hostHeap) Less(i, j int) bool {
	if !q[i].readyAt.Equal(q[j].readyAt) {
		return q[i].readyAt.Before(q[j].readyAt)
	}
	return q[i].seq < q[j].seq
}
func (q hostHeap) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].idx, q[j].idx = i, j
}
func (q *hostHeap) Push(x any) {
	h := x.(*host)
	h.idx = len(*q)
	*q = append(*q, h)
}
func (q *hostHeap) Pop() any {
	old := *q
	n := len(old)
	h := old[n-1]
	old[n-1] = nil
	*q = old[:n-1]
	h.idx = -1
	return h
}

// stopState records why and with which error a run stopped dispatching.
type stopState struct {
	reason StopReason
	err    error
}

// sched is the host table shared by the reader, the workers and the
// redirect hops. Every wait blocks on a channel (changed, a timer or a
// context); nothing polls.
type sched struct {
	cfg Config

	mu       sync.Mutex
	hosts    map[string]*host
	runnable hostHeap // idle hosts with queued targets
	cooling  hostHeap // idle hosts without targets whose interval has not passed
	seq      uint64
	pending  int // targets queued over all hosts
	changed  chan struct{}
	srcDone  bool
	stop     *stopState
	deadline time.Time // zero: none
	started  int64     // checks dispatched (towards Limit)

	stats      map[string]*HostStats
	otherStats *HostStats
}

func newSched(cfg Config, start time.Time) *sched {
	s := &sched{
		cfg:     cfg,
		hosts:   make(map[string]*host),
		changed: make(chan struct{}),
		stats:   make(map[string]*HostStats),
	}
	if cfg.MaxDuration > 0 {
		s.deadline = start.Add(cfg.MaxDuration)
	}
	return s
}

// broadcast wakes every waiter; s.mu must be held.
func (s *sched) broadcast() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// halt stops dispatching with a reason (the first one wins); s.mu must be held.
func (s *sched) halt(reason StopReason, err error) {
	if s.stop == nil {
		s.stop = &stopState{reason: reason, err: err}
		s.broadcast()
	}
}

// statsFor returns the statistics of a host key; s.mu must be held.
func (s *sched) statsFor(key string) *HostStats {
	if st, ok := s.stats[key]; ok {
		return st
	}
	if len(s.stats) >= s.cfg.MaxHostStats {
		if s.otherStats == nil {
			s.otherStats = &HostStats{Host: "", Interval: s.cfg.PerHostInterval}
		}
		return s.otherStats
	}
	st := &HostStats{Host: key, Interval: s.cfg.intervalFor(key)}
	s.stats[key] = st
	return st
}

// hostFor returns the host entry of key, creating it; s.mu must be held.
func (s *sched) hostFor(key string) *host {
	h, ok := s.hosts[key]
	if !ok {
		h = &host{key: key, interval: s.cfg.intervalFor(key), idx: -1, stats: s.statsFor(key)}
		s.hosts[key] = h
	}
	return h
}

func (s *sched) pushTo(q *hostHeap, h *host) {
	s.seq++
	h.seq = s.seq
	h.heap = q
	heap.Push(q, h)
}

func (s *sched) unheap(h *host) {
	if h.heap != nil {
		heap.Remove(h.heap, h.idx)
		h.heap = nil
	}
}

// evict drops idle hosts with nothing queued whose interval has passed, so
// the table holds only hosts with work or a pending interval; s.mu must be held.
func (s *sched) evict(now time.Time) {
	for len(s.cooling) > 0 && !s.cooling[0].readyAt.After(now) {
		h := heap.Pop(&s.cooling).(*host)
		h.heap = nil
		delete(s.hosts, h.key)
	}
}

// hostCap is how many targets host h may hold; s.mu must be held.
func (s *sched) hostCap(h *host, now time.Time) int {
	c := s.cfg.HostQueue
	if !s.deadline.IsZero() {
		left := s.deadline.Sub(now)
		if left <= 0 {
			return 0
		}
		if n := int64(left/h.interval) + 1; n < int64(c) {
			c = int(n)
		}
	}
	return c
}

// admit queues t for host key, waiting while LookAhead targets are queued.
// It reports false when the run has stopped (t is then counted unchecked).
func (s *sched) admit(ctx context.Context, key string, t item) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.pending >= s.cfg.LookAhead && s.stop == nil {
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		}
		s.mu.Lock()
		if ctx.Err() != nil {
			break
		}
	}
	if s.stop != nil || ctx.Err() != nil {
		st := s.statsFor(key) // read but never queued: it stays due
		st.Seen++
		st.Unchecked++
		return false
	}
	now := time.Now()
	_, existed := s.hosts[key]
	h := s.hostFor(key)
	h.stats.Seen++
	if h.queued() >= s.hostCap(h, now) {
		h.stats.Deferred++
		if !existed {
			delete(s.hosts, key) // an entry made just now, with nothing to do
		}
		return true
	}
	h.queue = append(h.queue, t)
	s.pending++
	if !h.busy && h.heap != &s.runnable {
		s.unheap(h)
		s.pushTo(&s.runnable, h)
		s.broadcast()
	}
	return true
}

// count counts a check started towards Config.Limit; s.mu must be held.
func (s *sched) count() {
	s.started++
	if s.cfg.Limit > 0 && s.started >= s.cfg.Limit {
		s.halt(StopLimit, nil)
	}
}

// take counts a check that needs no host (a target URL no request can be
// made for); it reports false when the run has stopped.
func (s *sched) take() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop != nil {
		return false
	}
	s.count()
	return true
}

// sourceDone records that the reader has read everything.
func (s *sched) sourceDone() {
	s.mu.Lock()
	s.srcDone = true
	s.broadcast()
	s.mu.Unlock()
}

// next blocks until a queued target's host is idle and ready, marks the host
// busy and returns both. It returns ok=false when the run stops (limit,
// deadline, cancellation, an error) or everything was dispatched.
func (s *sched) next(ctx context.Context) (item, *host, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if ctx.Err() != nil {
			s.halt(StopCancelled, ctx.Err())
		}
		if s.stop != nil {
			return item{}, nil, false
		}
		now := time.Now()
		if !s.deadline.IsZero() && !now.Before(s.deadline) {
			s.halt(StopMaxDuration, nil)
			return item{}, nil, false
		}
		s.evict(now)
		wait := time.Duration(-1)
		if len(s.runnable) > 0 {
			h := s.runnable[0]
			if h.waiting > 0 {
				// A check in progress waits for this host (a redirect hop or a
				// GET after HEAD): leave the host to it; release queues it again.
				heap.Pop(&s.runnable)
				h.heap = nil
				continue
			}
			if !h.readyAt.After(now) {
				heap.Pop(&s.runnable)
				h.heap = nil
				h.busy = true
				t := h.pop()
				s.pending--
				s.count()
				s.broadcast() // room for the reader
				return t, h, true
			}
			wait = h.readyAt.Sub(now)
		} else if s.srcDone && s.pending == 0 {
			return item{}, nil, false
		}
		if !s.deadline.IsZero() {
			if d := s.deadline.Sub(now); wait < 0 || d < wait {
				wait = d
			}
		}
		if s.waitLocked(ctx, wait, &timer) != nil {
			continue // the loop head records the cancellation
		}
	}
}

// waitLocked releases s.mu until the table changes, wait passes (wait < 0:
// no timer) or ctx ends, then takes s.mu again.
func (s *sched) waitLocked(ctx context.Context, wait time.Duration, timer **time.Timer) error {
	ch := s.changed
	var tc <-chan time.Time
	if wait >= 0 {
		if *timer == nil {
			*timer = time.NewTimer(wait)
		} else {
			(*timer).Reset(wait)
		}
		tc = (*timer).C
	}
	s.mu.Unlock()
	var err error
	select {
	case <-ch:
	case <-tc:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if *timer != nil {
		(*timer).Stop()
	}
	s.mu.Lock()
	return err
}

// acquire waits until host key is idle and ready, then marks it busy. It is
// used for the requests of a check after its first (redirect hops, GET after
// HEAD). It returns the time waited.
func (s *sched) acquire(ctx context.Context, key string) (*host, time.Duration, error) {
	start := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		now := time.Now()
		h, ok := s.hosts[key]
		if !ok {
			h = s.hostFor(key)
			h.busy = true
			return h, now.Sub(start), nil
		}
		if !h.busy && !h.readyAt.After(now) {
			s.unheap(h)
			h.busy = true
			return h, now.Sub(start), nil
		}
		wait := time.Duration(-1)
		if !h.busy {
			wait = h.readyAt.Sub(now)
		}
		h.waiting++
		err := s.waitLocked(ctx, wait, &timer)
		h.waiting--
		if err != nil {
			if !h.busy && h.heap == nil {
				s.park(h) // next may have set it aside for this wait
			}
			return nil, time.Since(start), err
		}
	}
}

// release ends a request to h at time end: the host's next request may start
// at end+interval, or later when the server asked with Retry-After.
func (s *sched) release(h *host, end time.Time, retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h.busy = false
	ready := end.Add(h.interval)
	if r := end.Add(retryAfter); r.After(ready) {
		ready = r
	}
	if ready.After(h.readyAt) {
		h.readyAt = ready
	}
	h.stats.Requests++
	if retryAfter > 0 {
		h.stats.Throttled++
		h.stats.RetryAfter += retryAfter
	}
	s.park(h)
}

// park puts an idle host that is in no heap into the right one: runnable
// when it has queued targets, else cooling; s.mu must be held.
func (s *sched) park(h *host) {
	if h.queued() > 0 {
		s.pushTo(&s.runnable, h)
	} else {
		s.pushTo(&s.cooling, h)
	}
	s.broadcast()
}
