package ledger_test

import (
	"context"
	"testing"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// mintOneLedger registers NAAN 99999, manager m1 (quota 3 a day), shoulders /x9 (m1's) and /k7
// (manager m2's), a machine client "svc" of m1 with scope ark:mint and an API key, and returns
// the ledger, the key's prefix and /x9's internal key.
func mintOneLedger(t *testing.T, db pgtest.DB) (*ledger.Ledger, string, int64) {
	t.Helper()
	ctx := context.Background()
	l := &ledger.Ledger{Pool: db.Pool}
	ledger.SetKeyParams(l, ledger.CheapKeyParams())
	must(t, firstErr(l.AddNAAN(ctx, ledger.NAAN{NAAN: "99999", Name: "test"})))
	must(t, firstErr(l.AddManager(ctx, ledger.Manager{NAAN: "99999", Name: "m1", QuotaPerDay: 3})))
	must(t, firstErr(l.AddManager(ctx, ledger.Manager{NAAN: "99999", Name: "m2"})))
	must(t, firstErr(l.AddShoulder(ctx, ledger.Shoulder{NAAN: "99999", Shoulder: "/x9", Manager: "m1"}, 0)))
	must(t, firstErr(l.AddShoulder(ctx, ledger.Shoulder{NAAN: "99999", Shoulder: "/k7", Manager: "m2"}, 0)))
	must(t, l.AddClient(ctx, ledger.Client{ClientID: "svc", NAAN: "99999", Manager: "m1", Authority: "manager", Scopes: []string{"ark:mint"}}))
	k, err := l.CreateKey(ctx, "svc")
	must(t, err)
	s, found, err := ledger.LookupShoulder(ctx, l.Pool, "99999", "/x9")
	must(t, err)
	if !found || s.BladeLength != 8 || s.CheckZone != "naan_name" || s.Status != "active" {
		t.Fatalf("LookupShoulder(/x9) = %+v, %v", s, found)
	}
	return l, k.Prefix, s.ID
}

// TestMintOne: ark_mint_one mints once per request ID (a retry replays the same ARK, another
// payload under it is refused), counts a taken name as a collision and draws the next, gives
// up when every name is taken, writes its counters and one ark.mint audit event per new ARK,
// and refuses in the database, in plain SQL, a revoked key, a shoulder out of reach and a mint
// past the manager's daily quota, writing nothing.
func TestMintOne(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		ctx := context.Background()
		l, prefix, x9 := mintOneLedger(t, db)
		d := [16]byte{1, 2, 3}
		req := ledger.MintOneRequest{ClientID: "svc", KeyPrefix: prefix, RequestID: "r1", Digest: d, ShoulderID: x9,
			Names: []string{"x9bcdfghjk"}, URL: "https://example.org/a"}
		r, err := ledger.MintOne(ctx, l.Pool, req)
		must(t, err)
		if r != (ledger.MintOneResult{Key: "99999/x9bcdfghjk", Collisions: 0}) {
			t.Fatalf("first mint = %+v", r)
		}
		// the retry: same request ID, other candidate names, the same ARK
		req.Names = []string{"x9mnpqrstv"}
		r, err = ledger.MintOne(ctx, l.Pool, req)
		must(t, err)
		if r != (ledger.MintOneResult{Key: "99999/x9bcdfghjk", Replayed: true}) {
			t.Fatalf("retry = %+v", r)
		}
		other := req
		other.Digest = [16]byte{9}
		if _, err := ledger.MintOne(ctx, l.Pool, other); !ledger.IsMintRefused(err, ledger.CodeRequestReused) {
			t.Fatalf("request ID reused for another payload: %v, want AK022", err)
		}
		// a taken name is a collision; the next candidate is minted
		r, err = ledger.MintOne(ctx, l.Pool, ledger.MintOneRequest{ClientID: "svc", KeyPrefix: prefix, RequestID: "r2", ShoulderID: x9,
			Names: []string{"x9bcdfghjk", "x9zzzzzzzz"}})
		must(t, err)
		if r != (ledger.MintOneResult{Key: "99999/x9zzzzzzzz", Collisions: 1}) {
			t.Fatalf("mint after a collision = %+v", r)
		}
		if _, err := ledger.MintOne(ctx, l.Pool, ledger.MintOneRequest{ClientID: "svc", KeyPrefix: prefix, RequestID: "r3", ShoulderID: x9,
			Names: []string{"x9bcdfghjk", "x9zzzzzzzz"}}); !ledger.IsMintRefused(err, ledger.CodeNamesTaken) {
			t.Fatalf("every name taken: %v, want AK023", err)
		}
		if n := count(t, l.Pool, `select count(*) from ark`); n != 2 {
			t.Fatalf("%d ARKs, want 2", n)
		}
		if n := count(t, l.Pool, `select count(*) from audit_event where action = 'ark.mint' and client_id = 'svc'`); n != 2 {
			t.Fatalf("%d ark.mint events, want 2", n)
		}
		if n := count(t, l.Pool, `select draws * 10 + collisions from shoulder_tally`); n != 31 {
			t.Fatalf("shoulder_tally draws*10+collisions = %d, want 3 draws and 1 collision", n)
		}
		// a manager without a quota: counts go through mint_one_tally, folded by each mint
		must(t, l.AddClient(ctx, ledger.Client{ClientID: "svc2", NAAN: "99999", Manager: "m2", Authority: "manager", Scopes: []string{"ark:mint"}}))
		k2, err := l.CreateKey(ctx, "svc2")
		must(t, err)
		k7, _, err := ledger.LookupShoulder(ctx, l.Pool, "99999", "/k7")
		must(t, err)
		for _, n := range []string{"k7bbbbbbbb", "k7cccccccc"} {
			must(t, firstErr(ledger.MintOne(ctx, l.Pool, ledger.MintOneRequest{ClientID: "svc2", KeyPrefix: k2.Prefix, RequestID: n, ShoulderID: k7.ID,
				Names: []string{"k7bcdfghjk", n}})))
		}
		if n := count(t, l.Pool, `select draws * 10 + collisions from shoulder_tally where shoulder_id = (select id from shoulder where shoulder = '/k7')`); n != 31 {
			t.Fatalf("/k7 tally draws*10+collisions = %d, want 3 draws, 1 collision", n)
		}
		if n := count(t, l.Pool, `select minted from mint_quota where manager_id = (select id from manager where name = 'm2')`); n != 2 {
			t.Fatalf("m2 minted %d, want 2", n)
		}
		if n := count(t, l.Pool, `select count(*) from mint_one_tally`); n != 0 {
			t.Fatalf("%d counts not folded, want 0", n)
		}
		nodes := nodesOf(t, db)
		sql := func(name, shoulder string) string {
			return `select ark_mint_one('svc', '` + prefix + `', '` + name + `', '\x00112233445566778899aabbccddeeff', (select id from shoulder where shoulder = '` + shoulder +
				`'), array['` + name + `'], null, null, null, null, null, null)`
		}
		// without a request ID: no mint
		refusedOn(t, nodes, "22004", `select ark_mint_one('svc', '`+prefix+`', null, '\x00112233445566778899aabbccddeeff', (select id from shoulder where shoulder = '/x9'), array['x9ffffffff'], null, null, null, null, null, null)`)
		// out of reach of svc: m2's shoulder
		refusedOn(t, nodes, ledger.CodeReachRefused, sql("k7bcdfghjk", "/k7"))
		// the quota: 3 a day, 2 used; the third passes, the fourth is refused whole
		exec(t, l.Pool, sql("x9bbbbbbbb", "/x9"))
		refusedOn(t, nodes, ledger.CodeQuotaUsed, sql("x9cccccccc", "/x9"))
		// a revoked key
		must(t, firstErr(l.RevokeKey(ctx, prefix)))
		refusedOn(t, nodes, ledger.CodeKeyRefused, sql("x9dddddddd", "/x9"))
		if n := count(t, l.Pool, `select count(*) from ark`); n != 5 {
			t.Fatalf("%d ARKs after the refusals, want 5", n)
		}
		if n := count(t, l.Pool, `select minted from mint_quota where manager_id = (select id from manager where name = 'm1')`); n != 3 {
			t.Fatalf("mint_quota %d, want 3", n)
		}
	})
}

// TestMintOneConcurrentReceipt: two sessions mint with the same request ID at once. The first
// mints in a transaction it holds open; the second, which found no receipt yet, reaches the
// insert and waits there on the first's receipt (seen in pg_locks, not guessed by time). When
// the first commits, the second takes the receipt's conflict path: both callers get the same
// ARK, the second as a replay, and the ledger holds one ARK, one receipt for the request ID and
// one ark.mint event.
func TestMintOneConcurrentReceipt(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		ctx := context.Background()
		l, prefix, x9 := mintOneLedger(t, db)
		req := ledger.MintOneRequest{ClientID: "svc", KeyPrefix: prefix, RequestID: "race", Digest: [16]byte{7}, ShoulderID: x9,
			Names: []string{"x9bcdfghjk"}, URL: "https://example.org/a"}
		tx, err := l.Pool.Begin(ctx)
		must(t, err)
		defer tx.Rollback(ctx)
		first, err := ledger.MintOne(ctx, tx, req)
		must(t, err)
		if first != (ledger.MintOneResult{Key: "99999/x9bcdfghjk"}) {
			t.Fatalf("first mint = %+v", first)
		}
		c, err := l.Pool.Acquire(ctx)
		must(t, err)
		defer c.Release()
		// the second session's lock waits: pg_locks by its backend, on Citus citus_lock_waits by its
		// global PID (the lock it waits for is on a worker)
		wait := `select exists (select 1 from pg_locks where not granted and pid = $1)`
		var id int64
		if db.Citus() {
			wait = `select exists (select 1 from citus_lock_waits where waiting_gpid = $1)`
			must(t, c.QueryRow(ctx, `select citus_backend_gpid()`).Scan(&id))
		} else {
			id = int64(c.Conn().PgConn().PID())
		}
		second := req
		second.Names = []string{"x9mnpqrstv"} // another name: the only conflict is the receipt's
		type outcome struct {
			r   ledger.MintOneResult
			err error
		}
		done := make(chan outcome, 1)
		go func() {
			r, err := ledger.MintOne(ctx, c, second)
			done <- outcome{r, err}
		}()
		// the second session waits on a lock the first holds: its receipt
		for waiting := false; !waiting; {
			select {
			case o := <-done:
				t.Fatalf("the second mint returned while the first was open: %+v, %v", o.r, o.err)
			default:
			}
			must(t, l.Pool.QueryRow(ctx, wait, id).Scan(&waiting))
		}
		must(t, tx.Commit(ctx))
		o := <-done
		must(t, o.err)
		if o.r != (ledger.MintOneResult{Key: "99999/x9bcdfghjk", Replayed: true}) {
			t.Fatalf("second mint = %+v, want the first's ARK replayed", o.r)
		}
		if n := count(t, l.Pool, `select count(*) from ark`); n != 1 {
			t.Fatalf("%d ARKs, want 1", n)
		}
		if n := count(t, l.Pool, `select count(*) from mint_receipt where request_id = 'race'`); n != 1 {
			t.Fatalf("%d receipts of request ID race, want 1", n)
		}
		if n := count(t, l.Pool, `select count(*) from audit_event where action = 'ark.mint'`); n != 1 {
			t.Fatalf("%d ark.mint events, want 1", n)
		}
	})
}

// TestMintMany: one ark_mint_many call mints its elements in order, each on its own: a name an
// earlier element took is a collision of a later one, which mints its next candidate; an element
// with an earlier one's request ID and payload gets that ARK replayed (one ARK, one receipt),
// with another payload AK022; an element out of reach (AK004) and one past the manager's quota
// (AK021) are refused alone; the others are minted, counted (folded into shoulder_tally and
// mint_quota) and audited once each. Calls of no mints, of more than MaxMintMany or of two
// clients are refused before the ledger is asked.
func TestMintMany(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		ctx := context.Background()
		l, prefix, x9 := mintOneLedger(t, db)
		// svc2 is m2's client without a quota: its batch's counts go through mint_one_tally
		must(t, l.AddClient(ctx, ledger.Client{ClientID: "svc2", NAAN: "99999", Manager: "m2", Authority: "manager", Scopes: []string{"ark:mint"}}))
		k2, err := l.CreateKey(ctx, "svc2")
		must(t, err)
		k7, _, err := ledger.LookupShoulder(ctx, l.Pool, "99999", "/k7")
		must(t, err)
		one := func(id string, d byte, sh int64, names ...string) ledger.MintOneRequest {
			return ledger.MintOneRequest{ClientID: "svc2", KeyPrefix: k2.Prefix, RequestID: id, Digest: [16]byte{d}, ShoulderID: sh,
				Names: names, URL: "https://example.org/" + id}
		}
		res, err := ledger.MintMany(ctx, l.Pool, []ledger.MintOneRequest{
			one("a", 1, k7.ID, "k7bbbbbbbb"),
			one("b", 2, k7.ID, "k7bbbbbbbb", "k7cccccccc"), // a's name: a collision, then its own
			one("a", 1, k7.ID, "k7dddddddd"),               // a's request ID and payload: a's ARK
			one("a", 9, k7.ID, "k7ffffffff"),               // a's request ID, another payload
			one("c", 3, x9, "x9bbbbbbbb"),                  // m1's shoulder: out of svc2's reach
			one("d", 4, k7.ID, "k7bbbbbbbb", "k7cccccccc"), // every name taken
			one("e", 5, k7.ID, "k7gggggggg"),
		})
		must(t, err)
		want := []struct {
			key        string
			replayed   bool
			collisions int
			code       string
		}{
			{"99999/k7bbbbbbbb", false, 0, ""},
			{"99999/k7cccccccc", false, 1, ""},
			{"99999/k7bbbbbbbb", true, 0, ""},
			{"", false, 0, ledger.CodeRequestReused},
			{"", false, 0, ledger.CodeReachRefused},
			{"", false, 0, ledger.CodeNamesTaken},
			{"99999/k7gggggggg", false, 0, ""},
		}
		if len(res) != len(want) {
			t.Fatalf("%d results, want %d", len(res), len(want))
		}
		for i, w := range want {
			r := res[i]
			if w.code != "" {
				if !ledger.IsMintRefused(r.Err, w.code) || r.Key != "" {
					t.Errorf("element %d = %+v, %v; want refused %s", i, r.MintOneResult, r.Err, w.code)
				}
				continue
			}
			if r.Err != nil || r.Key != w.key || r.Replayed != w.replayed || r.Collisions != w.collisions {
				t.Errorf("element %d = %+v, %v; want %s replayed %v collisions %d", i, r.MintOneResult, r.Err, w.key, w.replayed, w.collisions)
			}
		}
		if n := count(t, l.Pool, `select count(*) from ark`); n != 3 {
			t.Fatalf("%d ARKs, want 3", n)
		}
		if n := count(t, l.Pool, `select count(*) from mint_receipt where request_id = 'a'`); n != 1 {
			t.Fatalf("%d receipts of request ID a, want 1", n)
		}
		if n := count(t, l.Pool, `select count(*) from audit_event where action = 'ark.mint' and client_id = 'svc2'`); n != 3 {
			t.Fatalf("%d ark.mint events, want 3", n)
		}
		// 3 ARKs: 4 draws, 1 collision (the names-taken element is rolled back with its counts)
		if n := count(t, l.Pool, `select draws * 10 + collisions from shoulder_tally where shoulder_id = (select id from shoulder where shoulder = '/k7')`); n != 41 {
			t.Fatalf("/k7 tally draws*10+collisions = %d, want 4 draws, 1 collision", n)
		}
		if n := count(t, l.Pool, `select minted from mint_quota where manager_id = (select id from manager where name = 'm2')`); n != 3 {
			t.Fatalf("m2 minted %d, want 3", n)
		}
		if n := count(t, l.Pool, `select count(*) from mint_one_tally`); n != 0 {
			t.Fatalf("%d counts not folded, want 0", n)
		}
		// svc under m1's quota of 3 a day: the fourth element of one batch is refused, the first three minted
		var q []ledger.MintOneRequest
		for _, n := range []string{"x9cccccccc", "x9dddddddd", "x9ffffffff", "x9gggggggg"} {
			q = append(q, ledger.MintOneRequest{ClientID: "svc", KeyPrefix: prefix, RequestID: n, ShoulderID: x9, Names: []string{n}})
		}
		res, err = ledger.MintMany(ctx, l.Pool, q)
		must(t, err)
		for i, r := range res {
			if i < 3 && (r.Err != nil || r.Key != "99999/"+q[i].Names[0]) || i == 3 && !ledger.IsMintRefused(r.Err, ledger.CodeQuotaUsed) {
				t.Errorf("quota'd element %d = %+v, %v", i, r.MintOneResult, r.Err)
			}
		}
		if n := count(t, l.Pool, `select minted from mint_quota where manager_id = (select id from manager where name = 'm1')`); n != 3 {
			t.Fatalf("m1 minted %d, want 3", n)
		}
		if n := count(t, l.Pool, `select count(*) from ark`); n != 6 {
			t.Fatalf("%d ARKs, want 6", n)
		}
		// refused before the ledger: none, too many, two clients
		if _, err := ledger.MintMany(ctx, l.Pool, nil); !ledger.IsMintBatchRefused(err) {
			t.Fatalf("no mints: %v", err)
		}
		if _, err := ledger.MintMany(ctx, l.Pool, make([]ledger.MintOneRequest, ledger.MaxMintMany+1)); !ledger.IsMintBatchRefused(err) {
			t.Fatalf("%d mints: %v", ledger.MaxMintMany+1, err)
		}
		if _, err := ledger.MintMany(ctx, l.Pool, []ledger.MintOneRequest{q[0], one("z", 1, k7.ID, "k7zzzzzzzz")}); !ledger.IsMintBatchRefused(err) {
			t.Fatalf("two clients: %v", err)
		}
	})
}
