package legacy

import (
	"sort"

	"github.com/arkhe-ledger/arkhe/ark"
)

// ShoulderEntry is one shoulder as the importer and reconcile match names against it.
type ShoulderEntry struct {
	// NAAN of the shoulder.
	NAAN string
	// Bare is the shoulder without its slash ("x6", "s6.caida"); "" for the NAAN-wide "/".
	Bare string
	// Zone is the shoulder's check zone.
	Zone ark.Zone
	// ID is the shoulder's internal key, used only to join (never shown);
	// 0 while the shoulder is still to be created by an import.
	ID int64
	// New reports a shoulder the current import added to the index (created by it, or to be).
	New bool
}

// Stored returns the shoulder as the ledger stores it, with its slash ("/x6", "/").
func (e *ShoulderEntry) Stored() string { return "/" + e.Bare }

// ShoulderIndex matches names to shoulders by longest prefix, per NAAN, without the slash. It is not safe for concurrent use.
type ShoulderIndex struct {
	naans map[string]*naanShoulders
}

type naanShoulders struct {
	byBare map[string]*ShoulderEntry
	lens   []int // distinct lengths of the non-empty bare shoulders, longest first
}

// NewShoulderIndex returns an empty index.
func NewShoulderIndex() *ShoulderIndex { return &ShoulderIndex{naans: map[string]*naanShoulders{}} }

// Get returns the shoulder bare of naan, or nil.
func (x *ShoulderIndex) Get(naan, bare string) *ShoulderEntry {
	if n := x.naans[naan]; n != nil {
		return n.byBare[bare]
	}
	return nil
}

// Put adds e (replacing an entry with the same NAAN and bare shoulder).
func (x *ShoulderIndex) Put(e *ShoulderEntry) {
	n := x.naans[e.NAAN]
	if n == nil {
		n = &naanShoulders{byBare: map[string]*ShoulderEntry{}}
		x.naans[e.NAAN] = n
	}
	if _, ok := n.byBare[e.Bare]; !ok && e.Bare != "" {
		l := len(e.Bare)
		i := sort.Search(len(n.lens), func(i int) bool { return n.lens[i] <= l })
		if i == len(n.lens) || n.lens[i] != l {
			n.lens = append(n.lens, 0)
			copy(n.lens[i+1:], n.lens[i:])
			n.lens[i] = l
		}
	}
	n.byBare[e.Bare] = e
}

// Longest returns the longest non-empty shoulder of naan that is a prefix of name, or nil.
func (x *ShoulderIndex) Longest(naan, name string) *ShoulderEntry {
	n := x.naans[naan]
	if n == nil {
		return nil
	}
	for _, l := range n.lens {
		if l <= len(name) {
			if e := n.byBare[name[:l]]; e != nil {
				return e
			}
		}
	}
	return nil
}

// Assign returns the shoulder an imported ARK lands under: the longest
// registered shoulder of its NAAN that prefixes its name; else its primordinal shoulder, added
// to the index as a new legacy shoulder with check zone zone; else the NAAN-wide shoulder "/"
// (registered or new with zone). added reports that a new entry was made (ID 0, New true).
func (x *ShoulderIndex) Assign(a ark.ARK, zone ark.Zone) (e *ShoulderEntry, added bool) {
	if e := x.Longest(a.NAAN, a.Name); e != nil {
		return e, false
	}
	bare := a.Shoulder
	if e := x.Get(a.NAAN, bare); e != nil {
		return e, false
	}
	e = &ShoulderEntry{NAAN: a.NAAN, Bare: bare, Zone: zone, New: true}
	x.Put(e)
	return e, true
}
