package hashtab

import (
	"math/rand/v2"
	"testing"
)

// TestTableAgreesWithMap: random Ref, Get and Delete over 400 hashes, half of them sharing
// one home slot (one long probe run, so deletes move entries back) and half spread, agree with
// a Go map step by step, through growth from the zero Table and back down to empty.
func TestTableAgreesWithMap(t *testing.T) {
	t.Parallel()
	var tab Table
	ref := map[uint64]uint64{}
	rng := rand.New(rand.NewPCG(3, 4))
	for step := range 300_000 {
		h := uint64(rng.IntN(200)) + 1
		if rng.IntN(2) == 0 {
			h = h<<20 | 1 // below 2^29, so its home is slot 1 at every size
		}
		switch rng.IntN(3) {
		case 0:
			v, found := tab.Ref(h)
			if _, ok := ref[h]; found != ok {
				t.Fatalf("step %d: Ref(%d) found %v, want %v", step, h, found, ok)
			}
			if found && *v != ref[h] {
				t.Fatalf("step %d: Ref(%d) = %d, want %d", step, h, *v, ref[h])
			}
			*v = uint64(step)
			ref[h] = uint64(step)
		case 1:
			v, ok := tab.Get(h)
			if want, in := ref[h]; ok != in || v != want {
				t.Fatalf("step %d: Get(%d) = %d %v, want %d %v", step, h, v, ok, want, in)
			}
		default:
			_, in := ref[h]
			if got := tab.Delete(h); got != in {
				t.Fatalf("step %d: Delete(%d) = %v, want %v", step, h, got, in)
			}
			delete(ref, h)
		}
		if tab.Len() != len(ref) {
			t.Fatalf("step %d: Len %d, want %d", step, tab.Len(), len(ref))
		}
	}
	for h, want := range ref {
		if v, ok := tab.Get(h); !ok || v != want {
			t.Fatalf("Get(%d) = %d %v at the end, want %d", h, v, ok, want)
		}
		tab.Delete(h)
	}
	if tab.Len() != 0 {
		t.Fatalf("Len %d after deleting everything", tab.Len())
	}
	for i := range tab.slots {
		if tab.slots[i].h != 0 {
			t.Fatalf("slot %d still holds %d after deleting everything", i, tab.slots[i].h)
		}
	}
}

// TestNewHoldsWithoutGrowing: a Table made for n entries takes n without reallocating.
func TestNewHoldsWithoutGrowing(t *testing.T) {
	t.Parallel()
	tab := New(1000)
	slots := len(tab.slots)
	for h := uint64(1); h <= 1000; h++ {
		tab.Ref(h)
	}
	if len(tab.slots) != slots || tab.Len() != 1000 {
		t.Fatalf("%d slots after 1000 entries, had %d; Len %d", len(tab.slots), slots, tab.Len())
	}
}

// TestZeroTableGrowsKeepingEverything: the zero Table, grown by doubling to 300,000 entries
// (a default mint's window), keeps every entry and its value, is never more than three
// quarters full, and gives back exactly the entries not deleted.
func TestZeroTableGrowsKeepingEverything(t *testing.T) {
	t.Parallel()
	const n = 300_000
	h := func(i int) uint64 { return uint64(i+1)*0x9e3779b97f4a7c15 | 1 }
	var tab Table
	for i := range n {
		v, found := tab.Ref(h(i))
		if found {
			t.Fatalf("entry %d found before it was added", i)
		}
		*v = uint64(i)
		if tab.Len()*4 > len(tab.slots)*3 || len(tab.slots)&(len(tab.slots)-1) != 0 {
			t.Fatalf("%d entries in %d slots: more than three quarters full, or not a power of two", tab.Len(), len(tab.slots))
		}
	}
	if want := 1 << 19; len(tab.slots) != want { // what New(n) allocates
		t.Fatalf("%d slots for %d entries, want %d", len(tab.slots), n, want)
	}
	for i := range n {
		if v, ok := tab.Get(h(i)); !ok || v != uint64(i) {
			t.Fatalf("entry %d: Get = %d %v after growing, want %d", i, v, ok, i)
		}
	}
	for i := 0; i < n; i += 2 {
		if !tab.Delete(h(i)) {
			t.Fatalf("entry %d: not deleted", i)
		}
	}
	for i := range n {
		if v, ok := tab.Get(h(i)); ok != (i%2 == 1) || ok && v != uint64(i) {
			t.Fatalf("entry %d: Get = %d %v after deleting the even ones", i, v, ok)
		}
	}
	if tab.Len() != n/2 {
		t.Fatalf("Len %d, want %d", tab.Len(), n/2)
	}
}
