package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/arkhe-ledger/arkhe/api"
	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/verify"
)

// site is a test's ledger and API server on a loopback socket: NAAN 12345 with manager m1
// (shoulder /t2) and m2 (shoulder /k7); machine client svc of m1 (scopes ark:mint, ark:update)
// with API key key.
type site struct {
	t   *testing.T
	l   *ledger.Ledger
	srv *api.Server
	url string
	key string
}

func newSite(t *testing.T, db pgtest.DB, cfg api.Config) *site {
	t.Helper()
	ctx := context.Background()
	l := &ledger.Ledger{Pool: db.Pool}
	must(t, firstErr(l.AddNAAN(ctx, ledger.NAAN{NAAN: "12345", Name: "test"})))
	must(t, firstErr(l.AddManager(ctx, ledger.Manager{NAAN: "12345", Name: "m1"})))
	must(t, firstErr(l.AddManager(ctx, ledger.Manager{NAAN: "12345", Name: "m2"})))
	must(t, firstErr(l.AddShoulder(ctx, ledger.Shoulder{NAAN: "12345", Shoulder: "/t2", Manager: "m1"}, 0)))
	must(t, firstErr(l.AddShoulder(ctx, ledger.Shoulder{NAAN: "12345", Shoulder: "/k7", Manager: "m2"}, 0)))
	must(t, l.AddClient(ctx, ledger.Client{ClientID: "svc", NAAN: "12345", Manager: "m1", Authority: "manager",
		Scopes: []string{"ark:mint", "ark:update"}}))
	k, err := l.CreateKey(ctx, "svc")
	must(t, err)
	s, err := api.New(ctx, db.Pool, cfg)
	must(t, err)
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return &site{t: t, l: l, srv: s, url: hs.URL, key: k.Key}
}

// do sends method path with body (a value marshalled as JSON, or a string sent as is) and
// headers (name, value pairs), and returns the status, the body and the response.
func (s *site) do(method, path string, body any, headers ...string) (int, string, *http.Response) {
	s.t.Helper()
	var b []byte
	switch v := body.(type) {
	case string:
		b = []byte(v)
	case nil:
	default:
		var err error
		b, err = json.Marshal(v)
		must(s.t, err)
	}
	req, err := http.NewRequest(method, s.url+path, bytes.NewReader(b))
	must(s.t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	must(s.t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	must(s.t, err)
	return resp.StatusCode, string(out), resp
}

// mint posts a mint of /t2 in NAAN 12345 with the site's key and further headers.
func (s *site) mint(body any, headers ...string) (int, string, *http.Response) {
	s.t.Helper()
	if body == nil {
		body = map[string]any{"naan": 12345, "shoulder": "/t2"}
	}
	return s.do(http.MethodPost, "/mint", body, append([]string{"Authorization", "Bearer " + s.key, "Content-Type", "application/json"}, headers...)...)
}

// arkOf returns the "ark" of a mint's answer.
func arkOf(t *testing.T, body string) string {
	t.Helper()
	var v struct{ ARK string }
	if err := json.Unmarshal([]byte(body), &v); err != nil || v.ARK == "" {
		t.Fatalf("answer %q: want {\"ark\": ...}", body)
	}
	return v.ARK
}

func (s *site) count(sql string) int {
	s.t.Helper()
	var n int
	must(s.t, s.l.Pool.QueryRow(context.Background(), sql).Scan(&n))
	return n
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func firstErr[T any](_ T, err error) error { return err }

// TestArkletMint: each expectation of arklet's tests/ark/views_tests.py TestMintArk that concerns
// the HTTP contract, against arkhe's API, one subtest per arklet test, named after it.
func TestArkletMint(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		var scripted struct {
			sync.Mutex
			blades []string // when set, the blades every mint draws, in order
		}
		s := newSite(t, db, api.Config{Blades: func() ark.BladeSource {
			scripted.Lock()
			defer scripted.Unlock()
			if scripted.blades != nil {
				return ark.NewScriptedBlades(scripted.blades...)
			}
			return ark.NewRandomBlades()
		}})
		mintArgs := map[string]any{"naan": 12345, "shoulder": "/t2"}
		t.Run("test_happy_path", func(t *testing.T) {
			status, body, resp := s.mint(mintArgs)
			if status != 200 || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("status %d (%s), body %q", status, resp.Header.Get("Content-Type"), body)
			}
			a, err := ark.Parse(arkOf(t, body))
			must(t, err)
			if a.NAAN != "12345" || !strings.HasPrefix(a.Name, "t2") || !strings.HasPrefix(arkOf(t, body), "ark:/12345/t2") {
				t.Fatalf("minted %q: want ark:/12345/t2...", arkOf(t, body))
			}
		})
		t.Run("test_post_only", func(t *testing.T) {
			if status, _, resp := s.do(http.MethodPut, "/mint", mintArgs, "Authorization", "Bearer "+s.key); status != 405 || resp.Header.Get("Allow") != "POST" {
				t.Fatalf("PUT /mint: %d, Allow %q; want 405, POST", status, resp.Header.Get("Allow"))
			}
		})
		t.Run("test_only_accepts_json", func(t *testing.T) {
			status, _, _ := s.do(http.MethodPost, "/mint", "naan=12345&shoulder=%2Ft2", "Authorization", "Bearer "+s.key,
				"Content-Type", "application/x-www-form-urlencoded")
			if status != 400 {
				t.Fatalf("form-encoded mint: %d, want 400", status)
			}
		})
		t.Run("test_invalid_form_is_bad_request", func(t *testing.T) {
			status, body, _ := s.mint(map[string]any{"a": "b"})
			if status != 400 || !strings.Contains(body, `"naan":["This field is required."]`) {
				t.Fatalf("mint {a: b}: %d %q, want 400 naming the missing fields", status, body)
			}
		})
		t.Run("test_http_authorization_header_required", func(t *testing.T) {
			if status, _, _ := s.do(http.MethodPost, "/mint", mintArgs, "Content-Type", "application/json"); status != 403 {
				t.Fatalf("mint without Authorization: %d, want 403", status)
			}
		})
		t.Run("test_verify_key_has_naan", func(t *testing.T) {
			// a well-formed key that names no key of the ledger
			other := "arkhe_" + strings.Repeat("a", ledger.KeyPrefixLength) + "_" + strings.Repeat("b", ledger.KeySecretLength)
			if status, _, _ := s.do(http.MethodPost, "/mint", mintArgs, "Authorization", "Bearer "+other); status != 403 {
				t.Fatalf("mint with an unknown key: %d, want 403", status)
			}
		})
		t.Run("test_verify_key_is_valid", func(t *testing.T) {
			if status, _, _ := s.do(http.MethodPost, "/mint", mintArgs, "Authorization", "Bearer not-a-uuid4"); status != 403 {
				t.Fatalf("mint with a malformed key: %d, want 403", status)
			}
		})
		t.Run("test_inactive_key_is_forbidden", func(t *testing.T) {
			k, err := s.l.CreateKey(context.Background(), "svc")
			must(t, err)
			must(t, firstErr(s.l.RevokeKey(context.Background(), k.Prefix)))
			if status, _, _ := s.do(http.MethodPost, "/mint", mintArgs, "Authorization", "Bearer "+k.Key); status != 403 {
				t.Fatalf("mint with a revoked key: %d, want 403", status)
			}
		})
		t.Run("test_authorized_naan_matches_post_naan", func(t *testing.T) {
			if status, _, _ := s.mint(map[string]any{"naan": 12346, "shoulder": "/t2"}); status != 403 {
				t.Fatalf("mint in another NAAN: %d, want 403", status)
			}
		})
		// an ARK whose blade the scripted mints draw first
		status, body, _ := s.mint(nil)
		if status != 200 {
			t.Fatalf("mint: %d %q", status, body)
		}
		existing := arkOf(t, body)
		blade := strings.TrimPrefix(existing, "ark:/12345/t2")
		blade = blade[:len(blade)-1] // the check character
		t.Run("test_fails_after_too_many_collisions", func(t *testing.T) {
			scripted.Lock()
			scripted.blades = []string{blade}
			scripted.Unlock()
			defer func() { scripted.Lock(); scripted.blades = nil; scripted.Unlock() }()
			before := s.count(`select count(*) from ark`)
			status, body, _ := s.mint(nil)
			if status != 500 || !strings.HasPrefix(body, "Gave up creating ark after 10 collision(s)") {
				t.Fatalf("mint colliding every time: %d %q, want 500 Gave up creating ark after 10 collision(s)", status, body)
			}
			if n := s.count(`select count(*) from ark`); n != before {
				t.Fatalf("%d ARKs after the refused mint, want %d", n, before)
			}
		})
		t.Run("test_succeeds_on_single_collision", func(t *testing.T) {
			scripted.Lock()
			scripted.blades = []string{blade, "bbbbbbbb"}
			scripted.Unlock()
			defer func() { scripted.Lock(); scripted.blades = nil; scripted.Unlock() }()
			status, body, _ := s.mint(nil)
			if status != 200 || !strings.HasPrefix(arkOf(t, body), "ark:/12345/t2bbbbbbbb") {
				t.Fatalf("mint after one collision: %d %q", status, body)
			}
			// the mint that gave up was rolled back whole: its collisions are not counted
			if n := s.count(`select collisions from shoulder_tally t join shoulder s on s.id = t.shoulder_id where s.shoulder = '/t2'`); n != 1 {
				t.Fatalf("shoulder /t2 counted %d collisions, want 1", n)
			}
		})
	})
}

// TestIdempotencyKey: a retried POST with one Idempotency-Key returns the same ARK (marked
// replayed), another payload under it is 422, and concurrent POSTs with one key over real HTTP
// mint once.
func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		s := newSite(t, db, api.Config{})
		body := map[string]any{"naan": "12345", "shoulder": "/t2", "url": "https://example.org/a", "metadata": "title: A"}
		status, first, _ := s.mint(body, "Idempotency-Key", "req-1")
		if status != 200 {
			t.Fatalf("mint: %d %q", status, first)
		}
		status, again, resp := s.mint(body, "Idempotency-Key", "req-1")
		if status != 200 || arkOf(t, again) != arkOf(t, first) || resp.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("retry: %d %q (replayed %q), want %q", status, again, resp.Header.Get("Idempotent-Replayed"), first)
		}
		body["url"] = "https://example.org/b"
		if status, text, _ := s.mint(body, "Idempotency-Key", "req-1"); status != 422 || !strings.Contains(text, "another payload") {
			t.Fatalf("another payload under req-1: %d %q, want 422", status, text)
		}
		if n := s.count(`select count(*) from ark`); n != 1 {
			t.Fatalf("%d ARKs, want 1", n)
		}
		// concurrent requests with one key: one ARK, every answer names it
		const n = 16
		got := make([]string, n)
		codes := make([]int, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				b, _ := json.Marshal(map[string]any{"naan": 12345, "shoulder": "/t2", "url": "https://example.org/c"})
				req, _ := http.NewRequest(http.MethodPost, s.url+"/mint", bytes.NewReader(b))
				req.Header.Set("Authorization", "Bearer "+s.key)
				req.Header.Set("Idempotency-Key", "req-concurrent")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					got[i] = err.Error()
					return
				}
				defer resp.Body.Close()
				out, _ := io.ReadAll(resp.Body)
				codes[i], got[i] = resp.StatusCode, string(out)
			}()
		}
		close(start)
		wg.Wait()
		for i := range n {
			if codes[i] != 200 || arkOf(t, got[i]) != arkOf(t, got[0]) {
				t.Fatalf("request %d: %d %q; request 0: %q", i, codes[i], got[i], got[0])
			}
		}
		if n := s.count(`select count(*) from ark`); n != 2 {
			t.Fatalf("%d ARKs after %d concurrent requests with one key, want 2", n, n)
		}
		if n := s.count(`select count(*) from audit_event where action = 'ark.mint'`); n != 2 {
			t.Fatalf("%d ark.mint events, want 2", n)
		}
		if st := s.srv.Stats(); st.Minted != 2 || st.Replayed != n {
			t.Fatalf("stats %+v: want 2 minted, %d replayed", st, n)
		}
		if st := s.srv.Stats(); st.KeyDerivations != 1 {
			t.Fatalf("stats %+v: the key was derived %d times, want once", st, st.KeyDerivations)
		}
	})
}

// TestKeysRefused: a wrong key is counted and, after ledger.KeyMaxFailures in a row, locked; a
// locked key answers 401 without an Argon2id derivation, also with its right secret; a key
// revoked, a client disabled, mid-session, and a shoulder out of reach are refused; nothing is
// written by any of them.
func TestKeysRefused(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		ctx := context.Background()
		s := newSite(t, db, api.Config{})
		status, body, _ := s.mint(nil)
		if status != 200 {
			t.Fatalf("mint: %d %q", status, body)
		}
		minted := arkOf(t, body)
		// out of reach: m2's shoulder
		if status, body, _ := s.mint(map[string]any{"naan": 12345, "shoulder": "/k7"}); status != 403 || !strings.Contains(body, "refused") {
			t.Fatalf("mint in /k7: %d %q, want 403 with the ledger's rule", status, body)
		}
		// a second key of svc, tried with a wrong secret
		k, err := s.l.CreateKey(ctx, "svc")
		must(t, err)
		wrong := k.Key[:len(k.Key)-4] + "aaaa"
		if wrong == k.Key {
			wrong = k.Key[:len(k.Key)-4] + "bbbb"
		}
		for i := 1; i <= ledger.KeyMaxFailures; i++ {
			status, _, _ := s.do(http.MethodPost, "/mint", map[string]any{"naan": 12345, "shoulder": "/t2"}, "Authorization", "Bearer "+wrong)
			want := 403
			if i == ledger.KeyMaxFailures {
				want = 401 // this failure locked it
			}
			if status != want {
				t.Fatalf("wrong secret, attempt %d: %d, want %d", i, status, want)
			}
			if i < ledger.KeyMaxFailures {
				if n := s.count(`select failed_attempts from credential where prefix = '` + k.Prefix + `'`); n != i {
					t.Fatalf("after %d wrong attempts, failed_attempts = %d", i, n)
				}
			}
		}
		derived := s.srv.Stats().KeyDerivations
		for _, key := range []string{wrong, k.Key} {
			status, _, resp := s.do(http.MethodPost, "/mint", map[string]any{"naan": 12345, "shoulder": "/t2"}, "Authorization", "Bearer "+key)
			if status != 401 || resp.Header.Get("Retry-After") == "" {
				t.Fatalf("locked key: %d (Retry-After %q), want 401 with Retry-After", status, resp.Header.Get("Retry-After"))
			}
		}
		if got := s.srv.Stats().KeyDerivations; got != derived {
			t.Fatalf("a locked key was derived: %d derivations, %d before", got, derived)
		}
		// (on Citus the ledger records no key events of credential rows: see migration 0009)
		if n := s.count(`select count(*) from audit_event where action = 'key.lock' and target = '` + k.Prefix + `'`); n != 1 && !db.Citus() {
			t.Fatalf("%d key.lock events, want 1", n)
		}
		// revoked mid-session: the server proved the key before, the ledger refuses it now
		must(t, firstErr(s.l.RevokeKey(ctx, s.key)))
		if status, body, _ := s.mint(nil); status != 403 || !strings.Contains(body, "revoked") {
			t.Fatalf("mint with the key revoked: %d %q, want 403 revoked", status, body)
		}
		k2, err := s.l.CreateKey(ctx, "svc")
		must(t, err)
		s.key = k2.Key
		if status, body, _ := s.mint(nil); status != 200 {
			t.Fatalf("mint with a new key: %d %q", status, body)
		}
		// disabled mid-session
		must(t, firstErr(s.l.SetClientActive(ctx, "svc", false)))
		if status, body, _ := s.mint(nil); status != 403 || !strings.Contains(body, "svc") {
			t.Fatalf("mint by a disabled client: %d %q, want 403", status, body)
		}
		if status, body, _ := s.do(http.MethodPut, "/update", map[string]any{"ark": minted, "url": "https://example.org/z"},
			"Authorization", "Bearer "+s.key); status != 403 || !strings.Contains(body, "not active") {
			t.Fatalf("update by a disabled client: %d %q, want 403", status, body)
		}
		if n := s.count(`select count(*) from ark`); n != 2 {
			t.Fatalf("%d ARKs, want the 2 minted before the refusals", n)
		}
		if n := s.count(`select count(*) from ark_change`); n != 0 {
			t.Fatalf("%d ARK_CHANGE rows, want 0", n)
		}
	})
}

// TestUpdateAndBulk: PUT /update repoints through the repoint path (an ARK_CHANGE row naming the
// client), 404 for an unknown ARK, 403 out of reach; the bulk forms mint and update many records,
// replay a bulk mint with its Idempotency-Key, and refuse past the limits with a 400 naming them;
// a body over the limit is 413.
func TestUpdateAndBulk(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		ctx := context.Background()
		s := newSite(t, db, api.Config{MaxRecords: 5, MaxBody: 4096})
		auth := []string{"Authorization", "Bearer " + s.key}
		status, body, _ := s.mint(map[string]any{"naan": 12345, "shoulder": "/t2", "url": "https://example.org/a", "commitment": "c1"})
		if status != 200 {
			t.Fatalf("mint: %d %q", status, body)
		}
		a := arkOf(t, body)
		if status, body, _ := s.do(http.MethodPut, "/update", map[string]any{"ark": a, "url": "https://example.org/b", "commitment": "c1"}, auth...); status != 200 || body != "" {
			t.Fatalf("update: %d %q, want 200 and no body", status, body)
		}
		var by, after string
		must(t, s.l.Pool.QueryRow(ctx, `select c.client_id, h.after_url from ark_change h join client c on c.id = h.by_client`).Scan(&by, &after))
		if by != "svc" || after != "https://example.org/b" {
			t.Fatalf("ARK_CHANGE by %q to %q", by, after)
		}
		if status, _, _ := s.do(http.MethodPut, "/update", map[string]any{"ark": "ark:/12345/t2nothere", "url": "https://example.org/b"}, auth...); status != 404 {
			t.Fatalf("update of an unknown ARK: %d, want 404", status)
		}
		if status, _, _ := s.do(http.MethodPut, "/update", map[string]any{"ark": a, "commitment": "c2"}, auth...); status != 400 {
			t.Fatalf("update of the commitment: %d, want 400", status)
		}
		if status, _, _ := s.do(http.MethodPost, "/update", map[string]any{"ark": a}, auth...); status != 405 {
			t.Fatalf("POST /update: %d, want 405", status)
		}
		// bulk mint, replayed with its key
		recs := map[string]any{"naan": 12345, "records": []map[string]any{{"shoulder": "/t2"}, {"shoulder": "/t2", "url": "https://example.org/x"}, {"shoulder": "/t2"}}}
		status, first, _ := s.do(http.MethodPost, "/bulk_mint", recs, append(auth, "Idempotency-Key", "batch-1")...)
		var got struct{ ARKs []string }
		if status != 200 || json.Unmarshal([]byte(first), &got) != nil || len(got.ARKs) != 3 {
			t.Fatalf("bulk mint: %d %q", status, first)
		}
		if status, again, _ := s.do(http.MethodPost, "/bulk_mint", recs, append(auth, "Idempotency-Key", "batch-1")...); status != 200 || again != first {
			t.Fatalf("bulk mint again: %d %q, want %q", status, again, first)
		}
		if n := s.count(`select count(*) from ark`); n != 4 {
			t.Fatalf("%d ARKs, want 4", n)
		}
		// a bad record is named, nothing minted
		bad := map[string]any{"naan": 12345, "records": []map[string]any{{"shoulder": "/t2"}, {"shoulder": "t2"}}}
		if status, body, _ := s.do(http.MethodPost, "/bulk_mint", bad, auth...); status != 400 || !strings.Contains(body, `"record":1`) {
			t.Fatalf("bulk mint with a bad record: %d %q", status, body)
		}
		many := map[string]any{"naan": 12345, "records": make([]map[string]any, 6)}
		if status, body, _ := s.do(http.MethodPost, "/bulk_mint", many, auth...); status != 400 || !strings.Contains(body, "the limit is 5") {
			t.Fatalf("bulk mint over the limit: %d %q", status, body)
		}
		// bulk update
		ups := map[string]any{"records": []map[string]any{{"ark": got.ARKs[0], "url": "https://example.org/y"}, {"ark": got.ARKs[1], "url": "https://example.org/x"}}}
		if status, body, _ := s.do(http.MethodPut, "/bulk_update", ups, auth...); status != 200 || body != `{"unchanged":1,"updated":1}` {
			t.Fatalf("bulk update: %d %q", status, body)
		}
		// the limits: a target past 2048 octets, a body past MaxBody
		long := "https://example.org/" + strings.Repeat("a", 2100)
		if status, body, _ := s.mint(map[string]any{"naan": 12345, "shoulder": "/t2", "url": long}); status != 413 && !(status == 400 && strings.Contains(body, "2048")) {
			t.Fatalf("mint with a long URL: %d %q", status, body)
		}
		s2 := newSiteOn(t, s, api.Config{})
		if status, body, _ := s2.mint(map[string]any{"naan": 12345, "shoulder": "/t2", "url": long}); status != 400 || !strings.Contains(body, "the limit is 2048") {
			t.Fatalf("mint with a long URL: %d %q, want 400 naming the limit", status, body)
		}
		if status, _, _ := s.mint(map[string]any{"naan": 12345, "shoulder": "/t2", "metadata": strings.Repeat("m", 5000)}); status != 413 {
			t.Fatalf("mint over the body limit: %d, want 413", status)
		}
		if status, body, _ := s2.mint(map[string]any{"naan": 12345, "shoulder": "/t2"}, "Idempotency-Key", strings.Repeat("k", 201)); status != 400 || !strings.Contains(body, "the limit is 200") {
			t.Fatalf("a long Idempotency-Key: %d %q", status, body)
		}
		if n := s.count(`select count(*) from ark`); n != 4 {
			t.Fatalf("%d ARKs, want 4", n)
		}
	})
}

// newSiteOn returns another server with cfg on s's ledger and key.
func newSiteOn(t *testing.T, s *site, cfg api.Config) *site {
	t.Helper()
	srv, err := api.New(context.Background(), s.l.Pool, cfg)
	must(t, err)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return &site{t: t, l: s.l, srv: srv, url: hs.URL, key: s.key}
}

// TestRequireKeys: on a ledger requiring keys, the server's sessions prove each client's key
// before writing for it (arkhe_key_login), so mints and updates of two clients through one pool
// are accepted, each recorded as its own client's.
func TestRequireKeys(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		ctx := context.Background()
		l := &ledger.Ledger{Pool: db.Pool}
		must(t, firstErr(l.RequireKeys(ctx)))
		s := newSite(t, db, api.Config{})
		must(t, s.l.AddClient(ctx, ledger.Client{ClientID: "svc2", NAAN: "12345", Manager: "m1", Authority: "manager",
			Scopes: []string{"ark:mint", "ark:update"}}))
		k2, err := s.l.CreateKey(ctx, "svc2")
		must(t, err)
		for i := 0; i < 3; i++ {
			for _, key := range []string{s.key, k2.Key} {
				status, body, _ := s.do(http.MethodPost, "/mint", map[string]any{"naan": 12345, "shoulder": "/t2", "url": "https://example.org/a"},
					"Authorization", "Bearer "+key)
				if status != 200 {
					t.Fatalf("mint on a ledger requiring keys: %d %q", status, body)
				}
				if status, body, _ := s.do(http.MethodPut, "/update", map[string]any{"ark": arkOf(t, body), "url": "https://example.org/b"},
					"Authorization", "Bearer "+key); status != 200 {
					t.Fatalf("update on a ledger requiring keys: %d %q", status, body)
				}
			}
		}
		if n := s.count(`select count(*) from ark a join client c on c.id = a.created_by where c.client_id = 'svc2'`); n != 3 {
			t.Fatalf("svc2 minted %d ARKs, want 3", n)
		}
		if n := s.count(`select count(*) from ark_change h join client c on c.id = h.by_client where c.client_id = 'svc'`); n != 3 {
			t.Fatalf("svc changed %d ARKs, want 3", n)
		}
	})
}

// TestAuditClean: a ledger written through the API (mints with and without receipts, a
// collision, repoints, a bulk mint) passes the integrity audit with no finding.
func TestAuditClean(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		ctx := context.Background()
		s := newSite(t, db, api.Config{})
		auth := []string{"Authorization", "Bearer " + s.key}
		for i := range 5 {
			status, body, _ := s.mint(map[string]any{"naan": 12345, "shoulder": "/t2", "url": "https://example.org/a"}, "Idempotency-Key", "r"+strconv.Itoa(i))
			if status != 200 {
				t.Fatalf("mint: %d %q", status, body)
			}
			if status, _, _ := s.do(http.MethodPut, "/update", map[string]any{"ark": arkOf(t, body), "url": "https://example.org/b"}, auth...); status != 200 {
				t.Fatalf("update: %d", status)
			}
		}
		if status, body, _ := s.mint(nil); status != 200 {
			t.Fatalf("mint: %d %q", status, body)
		}
		if status, body, _ := s.do(http.MethodPost, "/bulk_mint", map[string]any{"naan": 12345, "records": []map[string]any{{"shoulder": "/t2"}, {"shoulder": "/t2"}}},
			append(auth, "Idempotency-Key", "b")...); status != 200 {
			t.Fatalf("bulk mint: %d %q", status, body)
		}
		res, err := verify.Run(ctx, s.l, verify.Config{})
		must(t, err)
		if !res.Clean() {
			for _, c := range res.Checks {
				if c.Count > 0 {
					t.Errorf("verify %s: %d findings: %+v", c.Name, c.Count, c)
				}
			}
		}
	})
}

// TestRevokedKeyRefusedOnEveryWrite: a key the server proved (a mint and an update accepted) and
// then revoked, or its client deactivated, is refused by every write path, PUT /update and
// /bulk_update as POST /mint and /bulk_mint, 403 naming the refusal, without an Argon2id
// derivation; no ARK is minted, none repointed, no ARK_CHANGE row written.
func TestRevokedKeyRefusedOnEveryWrite(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		ctx := context.Background()
		s := newSite(t, db, api.Config{})
		for _, tc := range []struct {
			name, want string
			refuse     func() error
		}{
			{"revoked", "revoked", func() error { return firstErr(s.l.RevokeKey(ctx, s.key)) }},
			{"deactivated", "svc", func() error { return firstErr(s.l.SetClientActive(ctx, "svc", false)) }},
		} {
			if tc.name != "revoked" {
				k, err := s.l.CreateKey(ctx, "svc")
				must(t, err)
				s.key = k.Key
			}
			auth := []string{"Authorization", "Bearer " + s.key}
			status, body, _ := s.mint(map[string]any{"naan": 12345, "shoulder": "/t2", "url": "https://example.org/a"})
			if status != 200 {
				t.Fatalf("%s: mint: %d %q", tc.name, status, body)
			}
			a := arkOf(t, body)
			if status, body, _ := s.do(http.MethodPut, "/update", map[string]any{"ark": a, "url": "https://example.org/b"}, auth...); status != 200 {
				t.Fatalf("%s: update: %d %q", tc.name, status, body)
			}
			arks, changes := s.count(`select count(*) from ark`), s.count(`select count(*) from ark_change`)
			derived := s.srv.Stats().KeyDerivations
			must(t, tc.refuse())
			for _, w := range []struct {
				method, path string
				body         any
			}{
				{http.MethodPut, "/update", map[string]any{"ark": a, "url": "https://example.org/c"}},
				{http.MethodPut, "/bulk_update", map[string]any{"records": []map[string]any{{"ark": a, "url": "https://example.org/d"}}}},
				{http.MethodPost, "/mint", map[string]any{"naan": 12345, "shoulder": "/t2"}},
				{http.MethodPost, "/bulk_mint", map[string]any{"naan": 12345, "records": []map[string]any{{"shoulder": "/t2"}}}},
			} {
				status, body, _ := s.do(w.method, w.path, w.body, auth...)
				if status != 403 || !strings.Contains(body, tc.want) {
					t.Errorf("%s %s with the key %s: %d %q, want 403 naming %q", w.method, w.path, tc.name, status, body, tc.want)
				}
			}
			if got := s.srv.Stats().KeyDerivations; got != derived {
				t.Errorf("%s: %d derivations after the refusals, %d before: a proved key is checked without hashing", tc.name, got, derived)
			}
			var url string
			must(t, s.l.Pool.QueryRow(ctx, `select url from ark where ark = $1`, strings.TrimPrefix(a, "ark:/")).Scan(&url))
			if url != "https://example.org/b" {
				t.Errorf("%s: target %q after the refused updates, want https://example.org/b", tc.name, url)
			}
			if n := s.count(`select count(*) from ark_change`); n != changes {
				t.Errorf("%s: %d ARK_CHANGE rows, want the %d before the refusals", tc.name, n, changes)
			}
			if n := s.count(`select count(*) from ark`); n != arks {
				t.Errorf("%s: %d ARKs, want the %d minted before the refusals", tc.name, n, arks)
			}
		}
	})
}
