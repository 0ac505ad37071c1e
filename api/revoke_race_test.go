package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/arkhe-ledger/arkhe/api"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
)

// TestRevokeDuringUpdate: a key revoked between the check of its state and the write it allows
// lets no write through, on PUT /update, PUT /bulk_update and EZID's POST /id/...: the check
// and the write are one transaction that holds the key (ledger.HoldKey), so a revocation
// either commits first (and the write is refused, 403) or waits for the write. The test holds
// the ARK's row so that the request stops at its write, after its key check; then, while it
// waits, revokes the key: the revocation must wait for the request (which holds the key), not
// go through. Released, the write commits (200), then the revocation; the next write is refused.
// Single node: the waiting request is found by pg_blocking_pids, which sees one server only.
func TestRevokeDuringUpdate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.DB{Kind: pgtest.KindSingle, Pool: pgtest.New(t)}
	s := newSite(t, db, api.Config{})
	for _, w := range []struct {
		name string
		send func(s *site, a, target string) (int, string)
	}{
		{"PUT /update", func(s *site, a, target string) (int, string) {
			status, body, _ := s.do(http.MethodPut, "/update", map[string]any{"ark": a, "url": target}, "Authorization", "Bearer "+s.key)
			return status, body
		}},
		{"PUT /bulk_update", func(s *site, a, target string) (int, string) {
			status, body, _ := s.do(http.MethodPut, "/bulk_update", map[string]any{"records": []map[string]any{{"ark": a, "url": target}}},
				"Authorization", "Bearer "+s.key)
			return status, body
		}},
		{"EZID POST /id/", func(s *site, a, target string) (int, string) {
			status, body, _ := s.ezid(http.MethodPost, "/id/"+a, "_target: "+target+"\n", true)
			return status, body
		}},
	} {
		t.Run(w.name, func(t *testing.T) {
			k, err := s.l.CreateKey(ctx, "svc")
			must(t, err)
			s.key = k.Key
			status, body, _ := s.mint(map[string]any{"naan": 12345, "shoulder": "/t2", "url": "https://example.org/a"})
			if status != 200 {
				t.Fatalf("mint: %d %q", status, body)
			}
			a := arkOf(t, body)
			key := strings.TrimPrefix(a, "ark:/")
			// the first write proves the key; the second is the one that races
			if status, body := w.send(s, a, "https://example.org/b"); status != 200 {
				t.Fatalf("first update: %d %q", status, body)
			}

			holder, err := s.l.Pool.Begin(ctx)
			must(t, err)
			defer func() { _ = holder.Rollback(ctx) }()
			var pid int
			must(t, holder.QueryRow(ctx, `select pg_backend_pid() from ark where ark = $1 for update`, key).Scan(&pid))
			type result struct {
				status int
				body   string
			}
			done := make(chan result, 1)
			go func() {
				status, body := w.send(s, a, "https://example.org/c")
				done <- result{status, body}
			}()
			waitBlocked(t, s, pid)

			revokeDone := make(chan error, 1)
			go func() { revokeDone <- firstErr(s.l.RevokeKey(ctx, k.Prefix)) }()
			revokedFirst := waitRevoke(t, s, pid, revokeDone)
			must(t, holder.Rollback(ctx))
			r := <-done
			var url string
			must(t, s.l.Pool.QueryRow(ctx, `select url from ark where ark = $1`, key).Scan(&url))
			if revokedFirst {
				t.Fatalf("the key was revoked while its write waited (the write did not hold it); the write answered %d %q and the ARK points to %s",
					r.status, r.body, url)
			}
			if r.status != 200 || url != "https://example.org/c" {
				t.Fatalf("the write that held the key: %d %q, target %s; want 200 and https://example.org/c", r.status, r.body, url)
			}
			must(t, <-revokeDone)
			if status, body := w.send(s, a, "https://example.org/d"); status != 403 || !strings.Contains(body, "revoked") {
				t.Fatalf("update with the revoked key: %d %q, want 403 naming the revocation", status, body)
			}
		})
	}
}

// waitBlocked returns once a backend of s's database waits for a lock held by backend pid: the
// request under test has reached its write. It fails the test if none does within a minute.
func waitBlocked(t *testing.T, s *site, pid int) {
	t.Helper()
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if s.count(fmt.Sprintf(`select count(*) from pg_stat_activity where datname = current_database() and %d = any (pg_blocking_pids(pid))`, pid)) > 0 {
			return
		}
	}
	t.Fatalf("no request waited for the ARK's row held by backend %d", pid)
}

// waitRevoke waits until the revocation under way (done is told its outcome) either waits for
// a lock held by a backend other than pid (the request under test holds the key: false) or
// has ended (it went through while the request waited: true). It fails the test after a minute.
func waitRevoke(t *testing.T, s *site, pid int, done chan error) bool {
	t.Helper()
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		select {
		case err := <-done:
			done <- err
			return true
		default:
		}
		if s.count(fmt.Sprintf(`select count(*) from pg_stat_activity
			where datname = current_database() and cardinality(pg_blocking_pids(pid)) > 0 and not %d = any (pg_blocking_pids(pid))`, pid)) > 0 {
			return false
		}
	}
	t.Fatal("the revocation neither ended nor waited within a minute")
	return false
}
