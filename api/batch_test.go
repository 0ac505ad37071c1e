package api

import (
	"context"
	"net/http"
	"testing"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// TestMintBatch: one batch of seven single mints of one principal, minted together in one
// statement, each answered on its own: the second draws the first's name, a collision, and
// mints its next candidate; the third repeats the first's Idempotency-Key and payload and gets
// its ARK replayed (one ARK); a shoulder out of the client's reach is 403; the fifth mints after
// two collisions; the sixth is past the manager's daily quota of 3, 429; the seventh repeats the
// first's key with another payload, 422. The three ARKs are counted and audited once each.
func TestMintBatch(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		ctx := context.Background()
		l := &ledger.Ledger{Pool: db.Pool}
		for _, err := range []error{
			errOf(l.AddNAAN(ctx, ledger.NAAN{NAAN: "12345", Name: "test"})),
			errOf(l.AddManager(ctx, ledger.Manager{NAAN: "12345", Name: "m1", QuotaPerDay: 3})),
			errOf(l.AddManager(ctx, ledger.Manager{NAAN: "12345", Name: "m2"})),
			errOf(l.AddShoulder(ctx, ledger.Shoulder{NAAN: "12345", Shoulder: "/t2", Manager: "m1"}, 0)),
			errOf(l.AddShoulder(ctx, ledger.Shoulder{NAAN: "12345", Shoulder: "/k7", Manager: "m2"}, 0)),
			l.AddClient(ctx, ledger.Client{ClientID: "svc", NAAN: "12345", Manager: "m1", Authority: "manager", Scopes: []string{"ark:mint"}}),
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
		k, err := l.CreateKey(ctx, "svc")
		if err != nil {
			t.Fatal(err)
		}
		// every mint draws the same candidates, in this order
		s, err := New(ctx, db.Pool, Config{Blades: func() ark.BladeSource {
			return ark.NewScriptedBlades("bbbbbbbb", "cccccccc", "dddddddd", "ffffffff")
		}})
		if err != nil {
			t.Fatal(err)
		}
		prefix, secret, err := ledger.ParseKey(k.Key)
		if err != nil {
			t.Fatal(err)
		}
		p, a := s.authenticateKey(ctx, k.Key, prefix, secret)
		if a != nil {
			t.Fatalf("key refused: %d %s", a.status, a.text)
		}
		rec := func(shoulder, url string) mintRecord {
			return mintRecord{naan: "12345", shoulder: shoulder, url: url}
		}
		mints := []struct {
			m         mintRecord
			requestID string
		}{
			{rec("/t2", "https://example.org/a"), "a"},
			{rec("/t2", "https://example.org/b"), "b"},
			{rec("/t2", "https://example.org/a"), "a"},
			{rec("/k7", "https://example.org/k"), "k"},
			{rec("/t2", "https://example.org/c"), "c"},
			{rec("/t2", "https://example.org/d"), "d"},
			{rec("/t2", "https://example.org/other"), "a"},
		}
		jobs := make([]*mintJob, len(mints))
		for i, m := range mints {
			jobs[i] = &mintJob{ctx: ctx, p: p, m: m.m, requestID: m.requestID, done: make(chan struct{})}
		}
		s.mintBatch(ctx, jobs)
		for _, j := range jobs {
			<-j.done // mintBatch answers every job before it returns: this never waits
		}
		first, second, third := jobs[0].printed, jobs[1].printed, jobs[4].printed
		want := []struct {
			prefix   string
			replayed bool
			status   int
		}{
			{"ark:/12345/t2bbbbbbbb", false, 0},
			{"ark:/12345/t2cccccccc", false, 0},
			{"ark:/12345/t2bbbbbbbb", true, 0},
			{"", false, http.StatusForbidden},
			{"ark:/12345/t2dddddddd", false, 0},
			{"", false, http.StatusTooManyRequests},
			{"", false, http.StatusUnprocessableEntity},
		}
		for i, w := range want {
			j := jobs[i]
			switch {
			case w.status != 0:
				if j.a == nil || j.a.status != w.status || j.printed != "" {
					t.Errorf("mint %d = %q, %+v; want refused %d", i, j.printed, j.a, w.status)
				}
			case j.a != nil || len(j.printed) != len(w.prefix)+1 || j.printed[:len(w.prefix)] != w.prefix || j.replayed != w.replayed:
				t.Errorf("mint %d = %q replayed %v, %+v; want %s and its check character, replayed %v", i, j.printed, j.replayed, j.a, w.prefix, w.replayed)
			}
		}
		if jobs[2].printed != first || first == second || second == third {
			t.Errorf("ARKs %q, %q, %q, replay %q: want three distinct and the replay of the first", first, second, third, jobs[2].printed)
		}
		count := func(sql string) int {
			t.Helper()
			var n int
			if err := db.Pool.QueryRow(ctx, sql).Scan(&n); err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
			return n
		}
		if n := count(`select count(*) from ark`); n != 3 {
			t.Errorf("%d ARKs, want 3", n)
		}
		if n := count(`select count(*) from mint_receipt where request_id = 'a'`); n != 1 {
			t.Errorf("%d receipts of request ID a, want 1", n)
		}
		if n := count(`select count(*) from audit_event where action = 'ark.mint'`); n != 3 {
			t.Errorf("%d ark.mint events, want 3", n)
		}
		// 3 ARKs after 0, 1 and 2 collisions; the refused mints leave no counts
		if n := count(`select draws * 10 + collisions from shoulder_tally where shoulder_id = (select id from shoulder where shoulder = '/t2')`); n != 63 {
			t.Errorf("/t2 tally draws*10+collisions = %d, want 6 draws, 3 collisions", n)
		}
		if n := count(`select minted from mint_quota where manager_id = (select id from manager where name = 'm1')`); n != 3 {
			t.Errorf("m1 minted %d, want 3", n)
		}
		if st := s.Stats(); st.Minted != 3 || st.Replayed != 1 {
			t.Errorf("stats %+v, want 3 minted, 1 replayed", st)
		}
	})
}

// errOf returns the error of a call returning a value and an error.
func errOf[T any](_ T, err error) error { return err }
