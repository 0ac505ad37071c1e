// Package hashtab is a table from 64-bit hashes to 64-bit values for sets that take a delete for
// about every insert, such as the request IDs and the drawn names a mint run has in flight:
// open addressing with linear probing, at most three quarters full, and deletion by moving the
// later entries of a probe run back, so that no tombstones build up (a Go map under that load
// is slower; pipeline's BenchmarkInFlightRoute compares them).
package hashtab

// Table maps hashes to values. A hash is any 64-bit value but 0, which marks an empty slot;
// callers set a bit (h | 1) to keep it out. The zero Table is empty and ready to use. Not safe
// for concurrent use.
type Table struct {
	slots []slot
	mask  uint64 // len(slots) - 1
	n     int    // entries held
}

type slot struct{ h, v uint64 }

// New returns a Table sized to hold n entries without growing.
func New(n int) *Table {
	t := &Table{}
	t.init(n)
	return t
}

func (t *Table) init(n int) {
	size := 16
	for size*3 < n*4 {
		size *= 2
	}
	t.slots, t.mask, t.n = make([]slot, size), uint64(size-1), 0
}

// Len returns how many entries the table holds.
func (t *Table) Len() int { return t.n }

// home is the slot where the probe for h starts.
func (t *Table) home(h uint64) uint64 { return (h ^ h>>29) & t.mask }

// Ref returns a pointer to h's value, adding h with value 0 when it is absent (found false).
// The pointer is valid until the next Ref or Delete.
func (t *Table) Ref(h uint64) (v *uint64, found bool) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.grow()
	}
	for i := t.home(h); ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		switch s.h {
		case h:
			return &s.v, true
		case 0:
			s.h = h
			t.n++
			return &s.v, false
		}
	}
}

// Get returns h's value and whether h is in the table.
func (t *Table) Get(h uint64) (uint64, bool) {
	if t.n == 0 {
		return 0, false
	}
	for i := t.home(h); t.slots[i].h != 0; i = (i + 1) & t.mask {
		if t.slots[i].h == h {
			return t.slots[i].v, true
		}
	}
	return 0, false
}

// Delete removes h and reports whether it was there.
func (t *Table) Delete(h uint64) bool {
	if t.n == 0 {
		return false
	}
	i := t.home(h)
	for ; t.slots[i].h != h; i = (i + 1) & t.mask {
		if t.slots[i].h == 0 {
			return false
		}
	}
	t.n--
	// move back every later entry of the run whose probe passes the freed slot
	for j := i; ; {
		j = (j + 1) & t.mask
		if t.slots[j].h == 0 {
			break
		}
		if k := t.home(t.slots[j].h); (j-k)&t.mask >= (j-i)&t.mask { // k not in (i, j]
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = slot{}
	return true
}

// grow doubles the table (or makes the first one) and puts the entries back.
func (t *Table) grow() {
	old := t.slots
	t.init(max(len(old), 12)) // init sizes for n: len(old) entries get twice the slots
	for _, s := range old {
		if s.h != 0 {
			v, _ := t.Ref(s.h)
			*v = s.v
		}
	}
}
