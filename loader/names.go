package loader

import (
	"fmt"
	"hash/maphash"
	"math"
	"sync"
	"sync/atomic"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/hashtab"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/pipeline"
)

// Drawing names: the blades of one worker, the names the run holds in flight or committed, and
// the expected number of collisions with the ledger.

// nameDrawer draws printed ARKs "ark:NAAN/" + shoulder + blade + check character for one
// shoulder, the blade per the shoulder's template and the check character per its zone (NCDA).
type nameDrawer struct {
	minter *ark.Minter // zone naan_name
	src    ark.BladeSource
	prefix []byte // "ark:NAAN/"
	bare   string // shoulder without slash
	zone   string
	blade  []byte
	buf    []byte
}

func newNameDrawer(t MintTarget, src ark.BladeSource) (*nameDrawer, error) {
	if t.BladeTemplate != "" {
		tmpl, err := ark.ParseTemplate(t.BladeTemplate)
		if err != nil || tmpl.Len() != t.BladeLength {
			return nil, fmt.Errorf("shoulder %s%s: blade template %q does not match its blade length %d", t.NAAN, t.Shoulder, t.BladeTemplate, t.BladeLength)
		}
		// the positions of class 'd' take only digits
		src = ark.NewTemplateBlades(src, tmpl)
	}
	m, err := ark.NewMinter(t.NAAN, t.Shoulder, t.BladeLength, src)
	if err != nil {
		return nil, err
	}
	return &nameDrawer{minter: m, src: src, prefix: []byte("ark:" + t.NAAN + "/"), bare: ark.BareShoulder(t.Shoulder),
		zone: t.CheckZone, blade: make([]byte, t.BladeLength)}, nil
}

// next returns a new printed ARK; the error wraps the blade source's.
func (d *nameDrawer) next() (string, error) {
	d.buf = append(d.buf[:0], d.prefix...)
	if d.zone == "naan_name" || d.zone == "" {
		var err error
		if d.buf, err = d.minter.AppendNext(d.buf); err != nil {
			return "", err
		}
		return string(d.buf), nil
	}
	if err := d.src.Blade(d.blade); err != nil {
		return "", fmt.Errorf("drawing blade: %w", err)
	}
	for i, c := range d.blade {
		if !ark.IsBetanumeric(c) {
			return "", fmt.Errorf("drawing blade: blade source gave %q at offset %d, not betanumeric", c, i)
		}
	}
	d.buf = append(d.buf, d.bare...)
	d.buf = append(d.buf, d.blade...)
	if d.zone == "name_only" {
		d.buf = append(d.buf, ark.CheckChar(string(d.buf[len(d.prefix):])))
	}
	return string(d.buf), nil
}

// draw gives row i a name no other row of the run holds (in this batch or another worker's
// uncommitted one), or rejects it with a *CollisionError after MaxDraws draws. A name held
// already counts as a collision.
func (w *mintWorker) draw(b *pipeline.Batch, i int32) error {
	r := &b.Rows[i]
	for {
		if int(w.draws[i]) >= w.s.cfg.MaxDraws {
			rejectRow(r, "", &CollisionError{Shoulder: w.s.t.NAAN + w.s.t.Shoulder, Draws: int(w.draws[i]), Last: w.name[i]})
			w.name[i] = ""
			return nil
		}
		n, err := w.names.next()
		if err != nil {
			return fmt.Errorf("%s: %w", r.Record.Source, err)
		}
		w.draws[i]++
		b.Draws++
		w.name[i] = n
		w.verified[i] = false
		key := n[4:]
		h, ok := w.s.inflight.claim(key, w.id, i)
		if !ok {
			b.Collisions++ // another row of this batch, or of another worker's uncommitted batch, holds it
			w.collided[i]++
			continue
		}
		w.claimed = append(w.claimed, h)
		w.hash[i] = h
		return nil
	}
}

// inflight holds the names the run's workers drew for batches not yet committed, so that two
// workers never COPY the same new name: such a collision would be invisible to the ledger lookup
// (the other batch is uncommitted) and cost a retried batch, or a deadlock between the two COPYs.
// Names are released once their batch is committed (then the ledger lookup sees them) or given
// up.
//
// Names are kept as 64-bit hashes (maphash; the table's key is the hash with its low bit set):
// two different names with one key only make a row draw again, which is harmless and, at 2^-63
// per pair, does not happen. Every name drawn is added and later released: hashtab's table
// takes that at a fraction of a Go map's cost.
type inflight struct {
	seed  maphash.Seed
	mu    sync.Mutex
	owner hashtab.Table // key → holding worker << 32 | batch row
}

// claim records key as drawn for row of worker's batch and returns its hash; ok is false when
// another row holds it.
func (f *inflight) claim(key string, worker int, row int32) (h uint64, ok bool) {
	h = maphash.String(f.seed, key)
	me := uint64(uint32(worker))<<32 | uint64(uint32(row))
	f.mu.Lock()
	defer f.mu.Unlock()
	o, held := f.owner.Ref(h | 1)
	if held {
		return h, *o == me
	}
	*o = me
	return h, true
}

// runNames remembers, in a bit set of 2^27 bits (16 MiB at most), the hashes of the names this
// run committed, so that a name drawn again later in the run is looked up in the ledger (and
// redrawn) instead of failing a COPY: in a sparse ledger most collisions are with the run's own
// earlier mints. A set bit may be another name's (a false positive), which costs only a lookup;
// memory does not grow with the manifest. The set is split into 4,096 blocks of 4 KiB, each
// allocated when a name first sets a bit in it, behind a 32 KiB directory. Safe for concurrent
// use.
type runNames struct {
	blocks *[runNameBlocks]atomic.Pointer[runNameBlock]
}

const (
	// runNameBits is the size of runNames' bit set (2^27 bits, 16 MiB when every block is allocated).
	runNameBits = 1 << 27
	// runNameBlockBits is the size of one block (2^15 bits, 4 KiB).
	runNameBlockBits = 1 << 15
	// runNameBlocks is the number of blocks (4,096).
	runNameBlocks = runNameBits / runNameBlockBits
)

type runNameBlock [runNameBlockBits / 64]atomic.Uint64

func newRunNames() runNames {
	return runNames{blocks: new([runNameBlocks]atomic.Pointer[runNameBlock])}
}

// add sets h's bit, allocating its block if no name set a bit there yet (of two workers racing
// to allocate one, the first to publish it wins and the other sets its bit in that one).
func (r *runNames) add(h uint64) {
	i := h & (runNameBits - 1)
	p := &r.blocks[i/runNameBlockBits]
	b := p.Load()
	if b == nil {
		b = new(runNameBlock)
		if !p.CompareAndSwap(nil, b) {
			b = p.Load()
		}
	}
	j := i % runNameBlockBits
	b[j>>6].Or(1 << (j & 63))
}

// maybe reports whether h's bit is set (false when its block was never allocated).
func (r *runNames) maybe(h uint64) bool {
	i := h & (runNameBits - 1)
	b := r.blocks[i/runNameBlockBits].Load()
	if b == nil {
		return false
	}
	j := i % runNameBlockBits
	return b[j>>6].Load()&(1<<(j&63)) != 0
}

// release forgets the names hashed hs.
func (f *inflight) release(hs []uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, h := range hs {
		f.owner.Delete(h | 1)
	}
}

// ExpectedCollisions returns the expected number of collisions when drawing n blades of
// bladeLength random betanumerics into a shoulder already holding existing names: n × existing
// / 29^bladeLength (100k draws against 10 million ARKs with 8-character blades
// collide about twice).
func ExpectedCollisions(n, existing int64, bladeLength int) float64 {
	space := ark.BladeSpace(bladeLength)
	if space == 0 {
		return math.Inf(1)
	}
	return float64(n) * float64(existing) / space
}

// NameDrawer draws candidate assigned names for one shoulder as a mint run draws them: shoulder
// + blade (per the shoulder's blade template, if any) + check character (per its check zone,
// NCDA). It is what a single mint (ledger.MintOne) is given to try. Not safe for concurrent use.
type NameDrawer struct{ d *nameDrawer }

// NewNameDrawer returns a NameDrawer for shoulder s drawing blades from src. The error names a
// shoulder that cannot mint (its blade template does not match its length, or its form or
// length is not mintable).
func NewNameDrawer(s ledger.ShoulderInfo, src ark.BladeSource) (*NameDrawer, error) {
	d, err := newNameDrawer(MintTarget{NAAN: s.NAAN, Shoulder: s.Shoulder, BladeLength: s.BladeLength,
		CheckZone: s.CheckZone, BladeTemplate: s.BladeTemplate}, src)
	if err != nil {
		return nil, err
	}
	return &NameDrawer{d: d}, nil
}

// Next returns a new assigned name (no label, no NAAN: "x9bcdfghjkq"); the error wraps the
// blade source's.
func (n *NameDrawer) Next() (string, error) {
	p, err := n.d.next()
	if err != nil {
		return "", err
	}
	return p[len(n.d.prefix):], nil
}
