package resolver_test

import (
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/resolver"
)

// BenchmarkServeHTTP drives the resolver over loopback with the mix of a resolver's traffic:
// published ARKs, one in ten with a suffix, one in twenty unknown, one in twenty ?info. No
// answer may be a 5xx, and an unknown name must be a 404.
func BenchmarkServeHTTP(b *testing.B) {
	pool := pgtest.New(b)
	loadLedger(b, pool)
	rows, err := pool.Query(b.Context(), `select ark from ark where coalesce(status::text, 'public') = 'public' and url like 'http%' limit 5000`)
	if err != nil {
		b.Fatal(err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(keys) == 0 {
		b.Fatalf("ARKs: %d, %v", len(keys), err)
	}
	r, err := resolver.New(pool, resolver.Config{})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(resolver.AccessLog(r, io.Discard))
	defer srv.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		rnd := rand.New(rand.NewPCG(rand.Uint64(), 1))
		for pb.Next() {
			k := keys[rnd.IntN(len(keys))]
			path, want := "/ark:"+k, 302
			switch n := rnd.IntN(20); {
			case n < 2:
				path += "/page/1.jpg"
			case n == 2:
				path, want = "/ark:"+k+"zzznosuch", 404
			case n == 3:
				path, want = path+"?info", 200
			}
			resp, err := client.Get(srv.URL + path)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode >= 500 || (want == 404 && resp.StatusCode != 404) {
				b.Fatalf("%s: %d, want %d", path, resp.StatusCode, want)
			}
		}
	})
}
