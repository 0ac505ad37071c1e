package resolver_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/importer"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/resolver"
)

// loadLedger imports the real EZID identifiers (reserved and test ARKs included) and the N2T
// sample binder, and registers a NAAN resolved elsewhere and a shoulder delegated with a
// template, as the export's nginx test does.
func loadLedger(t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	l := &ledger.Ledger{Pool: pool}
	dir := t.TempDir()
	for _, f := range []string{"ezid/db.identifier.jsonl", "arklet/sample_noid_output.txt"} {
		_, err := importer.Run(t.Context(), l, importer.Config{Inputs: []string{fixtures.SharedData(t, f)},
			RejectsPath: filepath.Join(dir, filepath.Base(f)+".rejects.csv"), IncludeReserved: true, IncludeTest: true})
		if err != nil {
			t.Fatalf("import %s: %v", f, err)
		}
	}
	for _, q := range []string{
		`insert into naan (naan, name, is_authoritative, redirect) values ('99998', 'elsewhere', false, 'https://resolver.example.org/')`,
		`insert into shoulder (naan, shoulder, status, redirect) values ('13960', '/t9', 'delegated', 'https://t9.example.org/id?ark=${pid}')`,
		`insert into naan (naan, name, na_policy) values ('b4321', 'Here', 'we keep what we mint')`,
	} {
		if _, err := pool.Exec(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func scalar[T any](t testing.TB, pool *pgxpool.Pool, q string, args ...any) T {
	t.Helper()
	var v T
	if err := pool.QueryRow(t.Context(), q, args...).Scan(&v); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return v
}

// reply is one answer read off the socket.
type reply struct {
	status   int
	location string
	ctype    string
	body     string
}

func serve(t *testing.T, pool *pgxpool.Pool, cfg resolver.Config) (*resolver.Resolver, func(method, path string, hdr ...string) reply) {
	t.Helper()
	r, err := resolver.New(pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return r, func(method, path string, hdr ...string) reply {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		// the path as sent: Opaque keeps every octet (%-escapes, "?" forms) as given
		p, q, hasQ := strings.Cut(path, "?")
		req.URL.Opaque = p
		req.URL.RawQuery, req.URL.ForceQuery = q, hasQ
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return reply{resp.StatusCode, resp.Header.Get("Location"), resp.Header.Get("Content-Type"), string(b)}
	}
}

// TestResolve serves a ledger of real EZID and N2T ARKs through a real socket, one case per
// answer of the resolver.
func TestResolve(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		pool := db.Pool
		loadLedger(t, pool)
		_, get := serve(t, pool, resolver.Config{})
		target := scalar[string](t, pool, `select url from ark where ark = '13960/t00000075'`)
		if !strings.HasPrefix(target, "http://www.archive.org/details/") {
			t.Fatalf("N2T sample target %q", target)
		}
		tomb := scalar[string](t, pool, `select ark from ark where status = 'unavailable' order by ark limit 1`)
		tombReason := scalar[string](t, pool, `select coalesce(tombstone_reason, '(:unav)') from ark where ark = $1`, tomb)
		reserved := scalar[string](t, pool, `select ark from ark where status = 'reserved' order by ark limit 1`)
		qual := scalar[string](t, pool, `select url from ark where ark = '87602/m4/M3174'`)
		cases := []struct {
			name, method, path string
			status             int
			location           string
		}{
			{"classic", "GET", "/ark:/13960/t00000075", 302, target},
			{"modern", "GET", "/ark:13960/t00000075", 302, target},
			{"head", "HEAD", "/ark:13960/t00000075", 302, target},
			{"host prefix path", "GET", "/resolve/here/ark:/13960/t00000075", 302, target},
			{"label case and trailing slash", "GET", "/ARK:/13960/t00000075/", 302, target},
			{"hyphens ignored", "GET", "/ark:/1-3960/t0000-0075", 302, target},
			{"suffix at /", "GET", "/ark:13960/t00000075/page/3.jpg", 302, target + "/page/3.jpg"},
			{"suffix at .", "GET", "/ark:13960/t00000075.pdf", 302, target + ".pdf"},
			{"not at a boundary", "GET", "/ark:13960/t00000075x", 404, ""},
			{"qualifier ARK with a suffix", "GET", "/ark:/87602/m4/M3174/v2", 302, qual + "/v2"},
			{"tombstone", "GET", "/ark:" + tomb, 410, ""},
			{"tombstone under a suffix", "GET", "/ark:" + tomb + "/part", 410, ""},
			{"reserved", "GET", "/ark:" + reserved, 404, ""},
			{"unknown name", "GET", "/ark:13960/nosuchname", 404, ""},
			{"forwarding NAAN", "GET", "/ark:99998/x5abc/p", 302, "https://resolver.example.org/ark:99998/x5abc/p"},
			{"forwarding shoulder", "GET", "/ark:/13960/t9zz", 302, "https://t9.example.org/id?ark=ark:/13960/t9zz"},
			{"unknown NAAN", "GET", "/ark:12345/x9unknown", 404, ""},
			{"not an ARK", "GET", "/favicon.ico", 404, ""},
			{"dot-segment", "GET", "/ark:13960/t00000075/../x", 400, ""},
			{"encoded dot-segment", "GET", "/ark:13960/t00000075/%2e%2E/x", 400, ""},
			{"name too long", "GET", "/ark:13960/" + strings.Repeat("b", 300), 400, ""},
			{"target too long", "GET", "/ark:13960/" + strings.Repeat("b", 3000), 400, ""},
			{"variant before component", "GET", "/ark:13960/t00000075.v2/c3", 400, ""},
			{"bad NAAN", "GET", "/ark:13a60/x", 400, ""},
			{"malformed %-escape", "GET", "/ark:13960/t00000075%zz", 400, ""},
			{"header injection", "GET", "/ark:13960/t00000075%0D%0ALocation:x", 400, ""},
			{"encoded CR LF in a suffix", "GET", "/ark:13960/t00000075/%0D%0A", 302, target + "/%0D%0A"},
			{"method", "POST", "/ark:13960/t00000075", 405, ""},
		}
		for _, c := range cases {
			got := get(c.method, c.path)
			if got.status != c.status || got.location != c.location {
				t.Errorf("%s: %s %s: %d %q, want %d %q (%s)", c.name, c.method, c.path, got.status, got.location, c.status, c.location, got.body)
			}
		}
		t.Run("404 names the NAAN", func(t *testing.T) {
			got := get("GET", "/ark:13960/nosuchname")
			if !strings.Contains(got.body, "NAAN 13960") || got.ctype != "text/plain; charset=utf-8" {
				t.Errorf("404 page: %q %q", got.ctype, got.body)
			}
			// a reserved ARK reads as an unknown name: its existence is not disclosed
			r := get("GET", "/ark:"+reserved)
			if strings.Contains(r.body, "reserved") || !strings.Contains(r.body, "no ARK ark:"+reserved+" is published") {
				t.Errorf("reserved 404 page: %q", r.body)
			}
		})
		t.Run("bad request names the rule", func(t *testing.T) {
			for path, rule := range map[string]string{
				"/ark:13960/t00000075/../x":               "dot-segment",
				"/ark:13960/" + strings.Repeat("b", 300):  "assigned name is 300 octets; the limit is 255",
				"/ark:13960/" + strings.Repeat("b", 3000): "request target too long",
			} {
				if got := get("GET", path); !strings.Contains(got.body, rule) {
					t.Errorf("GET %.40s: body %q, want the rule %q", path, got.body, rule)
				}
			}
		})
		t.Run("tombstone description", func(t *testing.T) {
			got := get("GET", "/ark:"+tomb)
			if !strings.Contains(got.body, "status: unavailable\n") || !strings.Contains(got.body, "tombstone_reason: "+strings.SplitN(tombReason, "\n", 2)[0]) ||
				!strings.Contains(got.body, "tombstoned_at: ") || !strings.Contains(got.body, "where: ark:"+tomb+"\n") {
				t.Errorf("410 body: %q", got.body)
			}
		})
		t.Run("inflections", func(t *testing.T) {
			want := scalar[string](t, pool, `select coalesce(erc_who, '(:unav)') from ark where ark = '13960/t00000075'`)
			for _, p := range []string{"?info", "??", "?", "%3F", "%3f%3F", "%3Finfo", "/page/3.jpg?info"} {
				got := get("GET", "/ark:/13960/t00000075"+p)
				if got.status != 200 || got.ctype != "text/plain; charset=utf-8" || !strings.HasPrefix(got.body, "erc:\nwho: "+want+"\n") ||
					!strings.Contains(got.body, "where: ark:13960/t00000075\n") || !strings.Contains(got.body, "target: "+target+"\n") {
					t.Errorf("inflection %q: %d %q %q", p, got.status, got.ctype, got.body)
				}
			}
			for _, g := range []reply{get("GET", "/ark:13960/t00000075?info&json"), get("GET", "/ark:13960/t00000075??", "Accept", "application/json")} {
				var m map[string]string
				if err := json.Unmarshal([]byte(g.body), &m); err != nil || g.ctype != "application/json" {
					t.Fatalf("JSON description: %q %q: %v", g.ctype, g.body, err)
				}
				if m["kind"] != "ark" || m["who"] != want || m["where"] != "ark:13960/t00000075" || m["target"] != target || m["commitment"] == "" {
					t.Errorf("JSON description: %v", m)
				}
			}
			h := get("GET", "/ark:13960/t00000075?info", "Accept", "text/html,application/xhtml+xml")
			if h.ctype != "text/html; charset=utf-8" || !strings.Contains(h.body, "<dt>where</dt><dd>ark:13960/t00000075</dd>") {
				t.Errorf("HTML description: %q %q", h.ctype, h.body)
			}
		})
		t.Run("shoulder inflection", func(t *testing.T) {
			var naan, shoulder string
			var n int64
			if err := pool.QueryRow(t.Context(), `select s.naan, s.shoulder, count(*) from shoulder s join ark a on a.shoulder_id = s.id
				where s.shoulder ~ '^/[a-z]+[0-9]$' group by 1, 2 order by 3 desc, 1, 2 limit 1`).Scan(&naan, &shoulder, &n); err != nil {
				t.Fatal(err)
			}
			got := get("GET", "/ark:"+naan+shoulder+"??")
			if got.status != 200 || !strings.Contains(got.body, "arks: "+strconv.FormatInt(n, 10)+"\n") || !strings.Contains(got.body, "what: shoulder ark:"+naan+shoulder+"\n") {
				t.Errorf("shoulder %s%s (%d ARKs): %d %q", naan, shoulder, n, got.status, got.body)
			}
		})
		t.Run("NAAN inflection", func(t *testing.T) {
			for _, p := range []string{"/ark:B4321??", "/ark:/b4321/?info", "/ark:b4321"} {
				got := get("GET", p)
				if got.status != 200 || !strings.Contains(got.body, "policy: we keep what we mint\n") || !strings.Contains(got.body, "what: NAAN b4321 Here\n") {
					t.Errorf("%s: %d %q", p, got.status, got.body)
				}
			}
			if got := get("GET", "/ark:99998"); got.status != 302 || got.location != "https://resolver.example.org/ark:99998/" {
				t.Errorf("forwarding NAAN alone: %d %q", got.status, got.location)
			}
		})
		t.Run("empty target", func(t *testing.T) {
			key := scalar[string](t, pool, `select ark from ark where coalesce(url, '') = '' and status is null order by ark limit 1`)
			got := get("GET", "/ark:"+key)
			if got.status != 200 || !strings.Contains(got.body, "where: ark:"+key+"\n") || !strings.Contains(got.body, "target: (:unav)\n") {
				t.Errorf("empty target %s: %d %q", key, got.status, got.body)
			}
		})
		t.Run("forward unknown", func(t *testing.T) {
			_, fwd := serve(t, pool, resolver.Config{ForwardUnknown: "https://n2t.net/"})
			if got := fwd("GET", "/ark:/12345/x9unknown/p.q"); got.status != 302 || got.location != "https://n2t.net/ark:12345/x9unknown/p.q" {
				t.Errorf("unknown NAAN: %d %q", got.status, got.location)
			}
			// a known NAAN is not forwarded
			if got := fwd("GET", "/ark:13960/nosuchname"); got.status != 404 {
				t.Errorf("unknown name under a known NAAN with --forward-unknown: %d", got.status)
			}
		})
	})
}
