package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/arkhe-ledger/arkhe/api"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// ezid sends an EZID request: method path with the ANVL body, HTTP Basic as client svc with the
// site's key unless basic is false, Content-Type text/plain.
func (s *site) ezid(method, path, body string, basic bool) (int, string, *http.Response) {
	s.t.Helper()
	h := []string{"Content-Type", "text/plain; charset=UTF-8"}
	if basic {
		req, err := http.NewRequest(method, "http://x", nil)
		must(s.t, err)
		req.SetBasicAuth("svc", s.key)
		h = append(h, "Authorization", req.Header.Get("Authorization"))
	}
	return s.do(method, path, body, h...)
}

// anvlOf returns the elements of an EZID answer's body after its status line, name → value,
// as sent (escapes kept).
func anvlOf(t *testing.T, body string) (string, map[string]string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(body, "\n"), "\n")
	out := map[string]string{}
	for _, l := range lines[1:] {
		k, v, ok := strings.Cut(l, ": ")
		if !ok {
			t.Fatalf("answer %q: line %q is not name: value", body, l)
		}
		out[k] = v
	}
	return lines[0], out
}

// TestEZIDMintViewModify: EZID's mint (POST /shoulder/...) answers success with the ARK; GET
// shows it as ANVL with EZID's reserved elements and the ERC kernel, escapes as EZID writes
// them; POST /id/... repoints (one ark_change row by the client) and tombstones; DELETE is
// refused in EZID's form with nothing deleted.
func TestEZIDMintViewModify(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		s := newSite(t, db, api.Config{})
		status, body, resp := s.ezid(http.MethodPost, "/shoulder/ark:/12345/t2",
			"_target: https://example.org/a\nerc.who: Austen, Jane\nerc.what: Pride%0Aand Prejudice 100%25\nerc.when: 1813\n", true)
		if status != 201 || !strings.HasPrefix(body, "success: ark:/12345/t2") || strings.Contains(body, "\n") ||
			resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Fatalf("mint: %d %q (%s), want 201 success: ark:/12345/t2...", status, body, resp.Header.Get("Content-Type"))
		}
		id := strings.TrimPrefix(body, "success: ")
		status, body, _ = s.ezid(http.MethodGet, "/id/"+id, "", false)
		line, got := anvlOf(t, body)
		if status != 200 || line != "success: "+id {
			t.Fatalf("GET %s: %d %q", id, status, body)
		}
		want := map[string]string{"_target": "https://example.org/a", "_status": "public", "_owner": "svc", "_profile": "erc",
			"_export": "yes", "erc.who": "Austen, Jane", "erc.what": "Pride%0Aand Prejudice 100%25", "erc.when": "1813"}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("GET %s: %s is %q, want %q (answer %q)", id, k, got[k], v, body)
			}
		}
		if got["_created"] == "" || got["_updated"] != got["_created"] {
			t.Errorf("GET %s: _created %q, _updated %q: want one Unix time, twice", id, got["_created"], got["_updated"])
		}

		// modify: a new target goes through the repoint path, one change row naming svc
		status, body, _ = s.ezid(http.MethodPost, "/id/"+id, "_target: https://example.org/b\nerc.who: Austen, Jane\n", true)
		if status != 200 || body != "success: "+id {
			t.Fatalf("modify %s: %d %q", id, status, body)
		}
		if n := s.count(`select count(*) from ark_change h join client c on c.id = h.by_client
			where c.client_id = 'svc' and h.action = 'update' and h.after_url = 'https://example.org/b' and h.by_text = 'arkhe api (EZID)'`); n != 1 {
			t.Fatalf("%d change rows of the repoint by svc, want 1", n)
		}
		// what the online API does not change is refused, nothing written
		status, body, _ = s.ezid(http.MethodPost, "/id/"+id, "_target: https://example.org/c\nerc.who: Someone Else\n", true)
		if status != 400 || !strings.HasPrefix(body, "error: bad request - erc.who: ") {
			t.Fatalf("modify erc.who: %d %q, want 400 naming erc.who", status, body)
		}
		if n := s.count(`select count(*) from ark_change`); n != 1 {
			t.Fatalf("%d change rows after the refused modify, want 1", n)
		}
		// a tombstone needs its reason
		status, body, _ = s.ezid(http.MethodPost, "/id/"+id, "_status: unavailable\n", true)
		if status != 400 || !strings.Contains(body, "a tombstone needs a reason") {
			t.Fatalf("tombstone without reason: %d %q", status, body)
		}
		// a tombstone needs the scope ark:tombstone, checked in the database: svc lacks it
		status, body, _ = s.ezid(http.MethodPost, "/id/"+id, "_status: unavailable | withdrawn by request\n", true)
		if status != 403 || !strings.HasPrefix(body, "error: forbidden - ") || !strings.Contains(body, "ark:tombstone") {
			t.Fatalf("tombstone by svc: %d %q, want 403 naming the scope", status, body)
		}
		ctx := context.Background()
		must(t, s.l.AddClient(ctx, ledger.Client{ClientID: "curator", NAAN: "12345", Manager: "m1", Authority: "manager",
			Scopes: []string{"ark:update", "ark:tombstone"}}))
		k, err := s.l.CreateKey(ctx, "curator")
		must(t, err)
		req, err := http.NewRequest(http.MethodPost, "http://x", nil)
		must(t, err)
		req.SetBasicAuth("curator", k.Key)
		// _owner may be sent, naming the ARK's owner (svc, not the caller); another is refused
		status, body, _ = s.ezid(http.MethodPost, "/id/"+id, "_owner: curator\n_target: https://example.org/c\n", true)
		if status != 400 || !strings.HasPrefix(body, `error: bad request - ownership change prohibited: _owner "curator"`) {
			t.Fatalf("modify with _owner curator: %d %q", status, body)
		}
		status, body, _ = s.do(http.MethodPost, "/id/"+id, "_owner: svc\n_status: unavailable | withdrawn by request\n",
			"Authorization", req.Header.Get("Authorization"))
		if status != 200 || body != "success: "+id {
			t.Fatalf("tombstone %s by curator: %d %q", id, status, body)
		}
		if n := s.count(`select count(*) from ark_change h join client c on c.id = h.by_client
			where c.client_id = 'curator' and h.action = 'tombstone' and h.reason = 'withdrawn by request'`); n != 1 {
			t.Fatalf("%d tombstone rows by curator, want 1", n)
		}
		_, got = anvlOf(t, func() string { _, b, _ := s.ezid(http.MethodGet, "/id/"+id, "", false); return b }())
		if got["_status"] != "unavailable | withdrawn by request" || got["_target"] != "https://example.org/b" {
			t.Fatalf("GET after tombstone: %v", got)
		}
		// unavailable is one-way online
		status, body, _ = s.ezid(http.MethodPost, "/id/"+id, "_status: public\n", true)
		if status != 400 || !strings.HasPrefix(body, "error: bad request - _status: public") {
			t.Fatalf("un-tombstone: %d %q, want 400", status, body)
		}

		// DELETE: EZID's error form, the rule, nothing deleted
		before := s.count(`select count(*) from ark`)
		status, body, _ = s.ezid(http.MethodDelete, "/id/"+id, "", true)
		if status != 400 || !strings.HasPrefix(body, "error: bad request - identifier status does not support deletion: arkhe never deletes an ARK") {
			t.Fatalf("DELETE %s: %d %q", id, status, body)
		}
		if n := s.count(`select count(*) from ark`); n != before {
			t.Fatalf("%d ARKs after DELETE, want %d", n, before)
		}

		// unknown ARK, unknown shoulder, another scheme
		if status, body, _ := s.ezid(http.MethodGet, "/id/ark:/12345/t2nothere", "", false); status != 400 || body != "error: bad request - no such identifier" {
			t.Fatalf("GET unknown: %d %q", status, body)
		}
		if status, body, _ := s.ezid(http.MethodPost, "/shoulder/ark:/12345/zz", "", true); status != 400 || !strings.HasPrefix(body, "error: bad request - no such shoulder") {
			t.Fatalf("mint in an unknown shoulder: %d %q", status, body)
		}
		if status, body, _ := s.ezid(http.MethodGet, "/id/doi:10.5072/FK2", "", false); status != 400 || !strings.HasPrefix(body, "error: bad request - invalid identifier") {
			t.Fatalf("GET a DOI: %d %q", status, body)
		}
		// a body that is not ANVL names the line and rule
		if status, body, _ := s.ezid(http.MethodPost, "/shoulder/ark:/12345/t2", "_target: https://e.org/\nno colon\n", true); status != 400 ||
			body != "error: bad request - ANVL parse error (line 2: no colon in line)" {
			t.Fatalf("mint with bad ANVL: %d %q", status, body)
		}
	})
}

// TestEZIDCreate: PUT /id/... creates the name given, insert-only: a second PUT of it is 400
// "identifier already exists" with the first ARK unchanged, update_if_exists=yes is refused, and
// a name under no registered shoulder is 403.
func TestEZIDCreate(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		s := newSite(t, db, api.Config{})
		status, body, _ := s.ezid(http.MethodPut, "/id/ark:/12345/t2given1", "_target: https://example.org/one\n", true)
		if status != 201 || body != "success: ark:/12345/t2given1" {
			t.Fatalf("PUT: %d %q", status, body)
		}
		status, body, _ = s.ezid(http.MethodPut, "/id/ark:/12345/t2given1", "_target: https://example.org/two\n", true)
		if status != 400 || body != "error: bad request - identifier already exists" {
			t.Fatalf("second PUT: %d %q, want 400 error: bad request - identifier already exists", status, body)
		}
		if n := s.count(`select count(*) from ark where ark = '12345/t2given1' and url = 'https://example.org/one'`); n != 1 {
			t.Fatalf("%d ARKs 12345/t2given1 with the first target, want 1", n)
		}
		if n := s.count(`select count(*) from ark_change`); n != 0 {
			t.Fatalf("%d change rows after a refused create, want 0", n)
		}
		status, body, _ = s.ezid(http.MethodPut, "/id/ark:/12345/t2given2", "_owner: other\n_target: https://example.org/two\n", true)
		if status != 400 || !strings.HasPrefix(body, "error: bad request - ownership change prohibited") {
			t.Fatalf("PUT with _owner other: %d %q", status, body)
		}
		status, body, _ = s.ezid(http.MethodPut, "/id/ark:/12345/t2given1?update_if_exists=yes", "_target: https://example.org/two\n", true)
		if status != 400 || !strings.HasPrefix(body, "error: bad request - update_if_exists=yes") {
			t.Fatalf("PUT update_if_exists=yes: %d %q", status, body)
		}
		status, body, _ = s.ezid(http.MethodPut, "/id/ark:/12345/q9x", "_target: https://example.org/q\n", true)
		if status != 403 || !strings.HasPrefix(body, "error: forbidden - ") {
			t.Fatalf("PUT under no shoulder: %d %q", status, body)
		}
		// another manager's shoulder: svc does not reach it
		status, body, _ = s.ezid(http.MethodPut, "/id/ark:/12345/k7x", "_target: https://example.org/k\n", true)
		if status != 403 || !strings.HasPrefix(body, "error: forbidden") {
			t.Fatalf("PUT under m2's shoulder: %d %q", status, body)
		}
	})
}

// TestEZIDAuth: HTTP Basic is checked by the key check of the Bearer path: no credentials,
// a wrong key, a revoked key and a key of another client are 401 with EZID's realm; Bearer is
// accepted too; GET needs none.
func TestEZIDAuth(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		s := newSite(t, db, api.Config{})
		basic := func(user, pass string) string {
			req, err := http.NewRequest(http.MethodGet, "http://x", nil)
			must(t, err)
			req.SetBasicAuth(user, pass)
			return req.Header.Get("Authorization")
		}
		mint := func(auth string) (int, string, *http.Response) {
			h := []string{"Content-Type", "text/plain"}
			if auth != "" {
				h = append(h, "Authorization", auth)
			}
			return s.do(http.MethodPost, "/shoulder/ark:/12345/t2", "_target: https://example.org/a\n", h...)
		}
		ctx := context.Background()
		revoked, err := s.l.CreateKey(ctx, "svc")
		must(t, err)
		must(t, firstErr(s.l.RevokeKey(ctx, revoked.Prefix)))
		before := s.count(`select count(*) from ark`)
		for _, c := range []struct{ what, auth string }{
			{"no credentials", ""},
			{"a password that is no key", basic("svc", "secret")},
			{"a revoked key", basic("svc", revoked.Key)},
			{"another client's name", basic("other", s.key)},
		} {
			status, body, resp := mint(c.auth)
			if status != 401 || !strings.HasPrefix(body, "error: unauthorized") || resp.Header.Get("WWW-Authenticate") != `Basic realm="EZID"` {
				t.Errorf("mint with %s: %d %q (WWW-Authenticate %q), want 401 error: unauthorized", c.what, status, body, resp.Header.Get("WWW-Authenticate"))
			}
		}
		if n := s.count(`select count(*) from ark`); n != before {
			t.Fatalf("%d ARKs after refused mints, want %d", n, before)
		}
		status, body, _ := mint(basic("svc", s.key))
		if status != 201 || !strings.HasPrefix(body, "success: ark:/12345/t2") {
			t.Fatalf("mint with Basic: %d %q", status, body)
		}
		status, body, _ = mint("Bearer " + s.key)
		if status != 201 || !strings.HasPrefix(body, "success: ark:/12345/t2") {
			t.Fatalf("mint with Bearer: %d %q", status, body)
		}
		if n := s.count(`select count(*) from ark`); n != before+2 {
			t.Fatalf("%d ARKs, want %d", n, before+2)
		}
	})
}

// TestEZIDConcurrentCreate: concurrent PUTs of one name over real HTTP create it once; every
// other answers 400 "identifier already exists", and the ledger holds one ARK with one of the
// targets sent.
func TestEZIDConcurrentCreate(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		s := newSite(t, db, api.Config{})
		const n = 8
		type result struct {
			status int
			body   string
		}
		results := make(chan result, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, err := http.NewRequest(http.MethodPut, s.url+"/id/ark:/12345/t2race",
					strings.NewReader(fmt.Sprintf("_target: https://example.org/%d\n", i)))
				if err != nil {
					results <- result{0, err.Error()}
					return
				}
				req.SetBasicAuth("svc", s.key)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					results <- result{0, err.Error()}
					return
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				if err != nil {
					results <- result{0, err.Error()}
					return
				}
				results <- result{resp.StatusCode, string(b)}
			}()
		}
		wg.Wait()
		close(results)
		created := 0
		for r := range results {
			switch {
			case r.status == 201 && r.body == "success: ark:/12345/t2race":
				created++
			case r.status == 400 && r.body == "error: bad request - identifier already exists":
			default:
				t.Errorf("PUT: %d %q", r.status, r.body)
			}
		}
		if created != 1 {
			t.Fatalf("%d PUTs created ark:/12345/t2race, want 1", created)
		}
		if c := s.count(`select count(*) from ark where ark = '12345/t2race' and url like 'https://example.org/_'`); c != 1 {
			t.Fatalf("%d ARKs 12345/t2race, want 1", c)
		}
	})
}

// TestEZIDIdempotencyKey: a retried EZID mint with one Idempotency-Key answers the same ARK,
// marked replayed, and mints once; another body under the key is refused in EZID's form.
func TestEZIDIdempotencyKey(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		s := newSite(t, db, api.Config{})
		mint := func(body string) (int, string, *http.Response) {
			req, err := http.NewRequest(http.MethodPost, "http://x", nil)
			must(t, err)
			req.SetBasicAuth("svc", s.key)
			return s.do(http.MethodPost, "/shoulder/ark:/12345/t2", body, "Authorization", req.Header.Get("Authorization"),
				"Idempotency-Key", "ezid-1")
		}
		status, first, resp := mint("_target: https://example.org/a\nerc.what: A\n")
		if status != 201 || !strings.HasPrefix(first, "success: ark:/12345/t2") || resp.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("first mint: %d %q (replayed %q)", status, first, resp.Header.Get("Idempotent-Replayed"))
		}
		status, again, resp := mint("_target: https://example.org/a\nerc.what: A\n")
		if status != 201 || again != first || resp.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("retried mint: %d %q (replayed %q), want 201 %q replayed", status, again, resp.Header.Get("Idempotent-Replayed"), first)
		}
		status, other, _ := mint("_target: https://example.org/a\nerc.what: B\n")
		if status != 422 || !strings.HasPrefix(other, "error: bad request - Idempotency-Key: ") {
			t.Fatalf("another body under the key: %d %q, want 422 error: bad request - Idempotency-Key: ...", status, other)
		}
		if n := s.count(`select count(*) from ark`); n != 1 {
			t.Fatalf("%d ARKs, want 1", n)
		}
	})
}
