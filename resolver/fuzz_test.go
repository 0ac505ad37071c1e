package resolver_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/resolver"
)

// FuzzResolvePath resolves arbitrary request targets against a ledger of real ARKs: never a
// 500 or a panic, and every redirect goes to a stored target (a suffix appended) or to a
// registered forward.
func FuzzResolvePath(f *testing.F) {
	pool := pgtest.New(f)
	loadLedger(f, pool)
	rows, err := pool.Query(context.Background(), `select url from ark where url ~ '^https?://'`)
	if err != nil {
		f.Fatal(err)
	}
	targets, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(targets) < 1000 {
		f.Fatalf("%d targets: %v", len(targets), err)
	}
	forwards := []string{"https://resolver.example.org/", "https://t9.example.org/id?ark=", "https://n2t.net/"}
	r, err := resolver.New(pool, resolver.Config{ForwardUnknown: "https://n2t.net/"})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		"/ark:/13960/t00000075", "/ark:13960/t00000075/page/3.jpg", "/ark:13960/t00000075.pdf?info", "/ark:/87602/m4/M3174/v2",
		"/ark:99998/x5abc", "/ark:/13960/t9zz??", "/ark:12345/x", "/ARK:B4321??", "/x/ark:/13960/t00000075%3F", "/ark:13960/%zz",
		"/ark:13960/a/../b", "/ark:\x00/1", "/ark:13960/" + strings.Repeat("%41", 100), "/ark:/", "/ark:", "/", "",
		"/ark:13960/t00000075?info&json", "/ark:13960/t0000\u20100075", "/ark:13960/t00000075/%0d%0aSet-Cookie:x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		a := r.Resolve(context.Background(), target)
		if a.Status >= 500 {
			t.Fatalf("%q: %d %s", target, a.Status, a.Message)
		}
		if a.Location != "" {
			ok := false
			for _, p := range forwards {
				ok = ok || strings.HasPrefix(a.Location, p)
			}
			for _, tg := range targets {
				ok = ok || a.Location == tg || strings.HasPrefix(a.Location, tg) && strings.ContainsAny(a.Location[len(tg):len(tg)+1], "/.")
			}
			if !ok {
				t.Fatalf("%q redirects to %q: neither a stored target nor a registered forward", target, a.Location)
			}
			if strings.ContainsAny(a.Location, " \r\n\t") {
				t.Fatalf("%q redirects to %q, which holds white space", target, a.Location)
			}
		}
		// the whole handler, for the rendering
		w := httptest.NewRecorder()
		req := &http.Request{Method: "GET", RequestURI: target, URL: &url.URL{Path: "/"}, Header: http.Header{"Accept": {"text/html"}}}
		r.ServeHTTP(w, req.WithContext(context.Background()))
		if w.Code >= 500 {
			t.Fatalf("%q: handler answered %d", target, w.Code)
		}
	})
}
