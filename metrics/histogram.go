package metrics

import (
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
)

// Histogram counts observations into buckets with fixed upper bounds, as a Prometheus histogram:
// Family writes the cumulative count of each bucket (name_bucket{le="bound"}, the last
// le="+Inf" holding every observation), the sum of the observed values (name_sum) and their
// count (name_count). Observe is safe from many goroutines at once and takes no lock; a Family
// written while observations go on is consistent per series (each series only grows), not
// across series.
type Histogram struct {
	bounds  []float64
	counts  []atomic.Uint64 // per bucket, not cumulative; the last is +Inf
	sumBits atomic.Uint64   // math.Float64bits of the sum
}

// NewHistogram returns an empty histogram with the given upper bounds (in the unit of the values
// to be observed, e.g. seconds). Errors: a *BucketError when bounds is empty, holds a NaN or an
// infinity, or is not strictly increasing. The bounds are copied.
func NewHistogram(bounds []float64) (*Histogram, error) {
	if len(bounds) == 0 {
		return nil, &BucketError{Rule: "at least one bucket bound"}
	}
	for i, b := range bounds {
		if math.IsNaN(b) || math.IsInf(b, 0) {
			return nil, &BucketError{Rule: fmt.Sprintf("bound %d is %v: bounds are finite (+Inf is implied)", i, b)}
		}
		if i > 0 && b <= bounds[i-1] {
			return nil, &BucketError{Rule: fmt.Sprintf("bound %d (%v) is not above bound %d (%v): bounds increase strictly", i, b, i-1, bounds[i-1])}
		}
	}
	return &Histogram{bounds: append([]float64(nil), bounds...), counts: make([]atomic.Uint64, len(bounds)+1)}, nil
}

// Observe counts v in the first bucket whose upper bound is at least v (le: less or equal) and
// adds it to the sum. A NaN is counted in +Inf only and leaves the sum as it was.
func (h *Histogram) Observe(v float64) {
	i := 0
	for i < len(h.bounds) && !(v <= h.bounds[i]) {
		i++
	}
	h.counts[i].Add(1)
	if math.IsNaN(v) {
		return
	}
	for {
		old := h.sumBits.Load()
		if h.sumBits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// Count returns how many values were observed.
func (h *Histogram) Count() uint64 {
	var n uint64
	for i := range h.counts {
		n += h.counts[i].Load()
	}
	return n
}

// Sum returns the sum of the observed values (NaNs left out).
func (h *Histogram) Sum() float64 { return math.Float64frombits(h.sumBits.Load()) }

// Family returns the histogram as a family named name (without a suffix; Encode checks it), of
// type HistogramType: one name_bucket sample per bound and one for +Inf, each with labels and
// then le, cumulative; name_sum; name_count (equal to the +Inf bucket).
func (h *Histogram) Family(name, help string, labels ...Label) Family {
	f := Family{Name: name, Help: help, Type: HistogramType, Samples: make([]Sample, 0, len(h.counts)+2)}
	var cum uint64
	for i := range h.counts {
		cum += h.counts[i].Load()
		le := "+Inf"
		if i < len(h.bounds) {
			le = strconv.FormatFloat(h.bounds[i], 'g', -1, 64)
		}
		ls := append(append(make([]Label, 0, len(labels)+1), labels...), Label{Name: "le", Value: le})
		f.Samples = append(f.Samples, Sample{Suffix: "_bucket", Labels: ls, Value: float64(cum)})
	}
	f.Samples = append(f.Samples,
		Sample{Suffix: "_sum", Labels: labels, Value: h.Sum()},
		Sample{Suffix: "_count", Labels: labels, Value: float64(cum)})
	return f
}
