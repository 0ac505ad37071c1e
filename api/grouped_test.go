package api_test

import (
	"net/http"
	"strconv"
	"sync"
	"testing"

	"github.com/arkhe-ledger/arkhe/api"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
)

// TestConcurrentMints: 40 clients post /mint at once, each with an Idempotency-Key of its own,
// and 4 more with one key between them, however the server groups them into batches. Every
// request is answered 200; the 40 ARKs are distinct and the 4 share one ARK (replayed for all but
// one); the ledger holds 41 ARKs, each audited and counted once (shoulder_tally with what is
// still to fold in mint_one_tally), and the server's counts agree.
func TestConcurrentMints(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		s := newSite(t, db, api.Config{})
		const distinct, same = 40, 4
		type got struct {
			status   int
			ark      string
			replayed bool
		}
		out := make([]got, distinct+same)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range out {
			key := "k" + strconv.Itoa(i)
			if i >= distinct {
				key = "shared"
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				status, body, resp := s.mint(nil, "Idempotency-Key", key)
				out[i] = got{status: status, ark: body, replayed: resp.Header.Get("Idempotent-Replayed") == "true"}
			}()
		}
		close(start)
		wg.Wait()
		for i, g := range out {
			if g.status != http.StatusOK {
				t.Fatalf("mint %d: %d %s", i, g.status, g.ark)
			}
			out[i].ark = arkOf(t, g.ark)
		}
		seen := map[string]bool{}
		replays := 0
		for i, g := range out {
			if i < distinct {
				if seen[g.ark] || g.replayed {
					t.Errorf("mint %d: %s (replayed %v) again", i, g.ark, g.replayed)
				}
				seen[g.ark] = true
				continue
			}
			if g.ark != out[distinct].ark || seen[g.ark] {
				t.Errorf("mint %d with the shared key: %s, want %s, minted once", i, g.ark, out[distinct].ark)
			}
			if g.replayed {
				replays++
			}
		}
		if replays != same-1 {
			t.Errorf("%d of the %d mints with one key replayed, want %d", replays, same, same-1)
		}
		if n := s.count(`select count(*) from ark`); n != distinct+1 {
			t.Errorf("%d ARKs, want %d", n, distinct+1)
		}
		if n := s.count(`select count(*) from audit_event where action = 'ark.mint'`); n != distinct+1 {
			t.Errorf("%d ark.mint events, want %d", n, distinct+1)
		}
		if n := s.count(`select (select coalesce(sum(draws - collisions), 0) from shoulder_tally)
			+ (select coalesce(sum(draws - collisions), 0) from mint_one_tally)`); n != distinct+1 {
			t.Errorf("%d mints counted, want %d", n, distinct+1)
		}
		if st := s.srv.Stats(); st.Minted != distinct+1 || st.Replayed != same-1 {
			t.Errorf("stats %+v, want %d minted, %d replayed", st, distinct+1, same-1)
		}
	})
}
