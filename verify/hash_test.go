package verify

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
)

// TestHashTextExtended compares the client-side hash with the server's hashtextextended for
// every length from 0 to 300 octets (UTF-8, multi-octet characters included), and seeds 0,
// small and 64-bit.
func TestHashTextExtended(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	r := rand.New(rand.NewPCG(1, 2))
	var keys []string
	var seeds []int64
	for n := 0; n <= 300; n++ {
		var b []byte
		for len(b) < n {
			if n-len(b) >= 3 && r.IntN(4) == 0 {
				b = append(b, string(rune(0x800+r.IntN(0x7000)))...) // three octets
			} else {
				b = append(b, byte(1+r.IntN(127))) // no NUL in text
			}
		}
		for _, seed := range []int64{0, 1, int64(n) * 7_000_000_000_001, int64(r.Uint64())} {
			keys = append(keys, string(b))
			seeds = append(seeds, seed)
		}
	}
	keys = append(keys, "99999/x9bcdfghjk3", "ark", "")
	seeds = append(seeds, 7_000_000_000_001, 0, 5)
	rows, err := pool.Query(t.Context(), `select hashtextextended(k, s)
		from unnest($1::text[], $2::bigint[]) with ordinality as u(k, s, i) order by i`, keys, seeds)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	i := 0
	for rows.Next() {
		var want int64
		if err := rows.Scan(&want); err != nil {
			t.Fatal(err)
		}
		if got := hashTextExtended([]byte(keys[i]), uint64(seeds[i])); got != uint64(want) {
			t.Errorf("key of %d octets, seed %d: %d, server %d", len(keys[i]), seeds[i], int64(got), want)
		}
		i++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if i != len(keys) {
		t.Fatalf("compared %d of %d", i, len(keys))
	}
	// The --since pass names the changed ARKs in a literal array: every octet but NUL survives.
	var same bool
	if err := pool.QueryRow(t.Context(), `select `+textArrayLiteral(keys)+`::text[] = $1::text[]`, keys).Scan(&same); err != nil || !same {
		t.Errorf("text array literal of %d keys: equal %v, %v", len(keys), same, err)
	}
	// change.chain's fast path: the ARK pass's hashes of the current state equal the server's of
	// the last ARK_CHANGE row (a target, none, and a status).
	for _, url := range []*string{&keys[7], nil} {
		var h historySum
		var buf []byte
		var u []byte
		if url != nil {
			u = []byte(*url)
		}
		h.add([]byte(keys[5]), 42, u, []byte("unavailable"), &buf)
		var target, status int64
		if err := pool.QueryRow(t.Context(), `select `+strings.ReplaceAll(historyTargetHash, "x.", "")+`, `+strings.ReplaceAll(historyStatusHash, "x.", "")+`
			from (select $1::text as ark, 42 as seq, $2::text as after_url, 'unavailable'::text as after_status) x`, keys[5], url).Scan(&target, &status); err != nil {
			t.Fatal(err)
		}
		if h.n != 1 || h.target != uint64(target) || h.status != uint64(status) {
			t.Errorf("history hashes (target %v): %d %d, server %d %d", url != nil, h.target, h.status, target, status)
		}
	}
}

func BenchmarkHashTextExtended(b *testing.B) {
	key := []byte("99999/x9bcdfghjk3")
	for b.Loop() {
		hashTextExtended(key, 7_000_000_000_001)
	}
}
