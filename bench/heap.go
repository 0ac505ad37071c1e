package bench

import (
	"runtime/metrics"
	"sync"
	"time"
)

// heapPeaks is what a heapSampler saw, in bytes: the heap objects at its start (Base), the
// largest heap objects in use, live and not yet collected garbage alike (InUse), and the largest
// live heap marked by a garbage collection (Live).
type heapPeaks struct {
	Base, InUse, Live uint64
}

// heapSampler samples the Go heap every 20 ms from startHeapSampler until stop.
type heapSampler struct {
	peaks heapPeaks
	done  chan struct{}
	wg    sync.WaitGroup
}

// startHeapSampler reads the heap now (the base) and starts sampling. Collect garbage before
// it for a base of live objects only.
func startHeapSampler() *heapSampler {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	s := &heapSampler{done: make(chan struct{})}
	read := func() {
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 {
			s.peaks.InUse = max(s.peaks.InUse, sample[0].Value.Uint64())
		}
		if sample[1].Value.Kind() == metrics.KindUint64 {
			s.peaks.Live = max(s.peaks.Live, sample[1].Value.Uint64())
		}
	}
	read()
	s.peaks.Base = s.peaks.InUse
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				read()
				return
			case <-t.C:
				read()
			}
		}
	}()
	return s
}

// stop ends the sampling (with a last sample) and returns the peaks.
func (s *heapSampler) stop() heapPeaks {
	close(s.done)
	s.wg.Wait()
	return s.peaks
}

// sampleHeap starts a heapSampler and returns its stop, which gives the peak of heap objects in
// use in bytes.
func sampleHeap() func() int64 {
	s := startHeapSampler()
	return func() int64 { return int64(s.stop().InUse) }
}
