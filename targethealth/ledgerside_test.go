package targethealth_test

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/linkcheck"
	"github.com/arkhe-ledger/arkhe/targethealth"
)

// registered sets up, on a single node of t's own, NAAN 99999, manager m1 holding /x9 (its
// default) and /b5 (reserved), a machine client c1 (manager authority, ark:mint) and one
// minted ARK 99999/x9abc with target https://example.org/a.
func registered(t *testing.T) (*ledger.Ledger, context.Context) {
	t.Helper()
	ctx := context.Background()
	l := &ledger.Ledger{Pool: pgtest.New(t)}
	must(t, firstErr(l.AddNAAN(ctx, ledger.NAAN{NAAN: "99999", Name: "test"})))
	must(t, firstErr(l.AddManager(ctx, ledger.Manager{NAAN: "99999", Name: "m1", CommitmentLevel: "Not Guaranteed"})))
	must(t, firstErr(l.AddShoulder(ctx, ledger.Shoulder{NAAN: "99999", Shoulder: "/x9", Manager: "m1"}, 0)))
	must(t, firstErr(l.AddShoulder(ctx, ledger.Shoulder{NAAN: "99999", Shoulder: "/b5", Manager: "m1", Status: "reserved"}, 0)))
	must(t, l.SetDefaultShoulder(ctx, "99999", "m1", "/x9"))
	must(t, l.AddClient(ctx, ledger.Client{ClientID: "c1", NAAN: "99999", Manager: "m1", Authority: "manager", Scopes: []string{"ark:mint"}}))
	exec(t, l.Pool, `insert into ark (ark, naan, shoulder_id, assigned_name, url, created_by, created_at, request_id, payload_digest)
		select '99999/x9abc', '99999', s.id, 'x9abc', 'https://example.org/a', c.id, now(), 'r1', '\x00112233445566778899aabbccddeeff'
		from shoulder s, client c where s.shoulder = '/x9' and c.client_id = 'c1'`)
	return l, ctx
}

func firstErr[T any](_ T, err error) error { return err }

// refused runs sql and fails the test unless PostgreSQL refuses it with SQLSTATE code.
func refused(t *testing.T, pool *pgxpool.Pool, code, sql string, args ...any) {
	t.Helper()
	_, err := pool.Exec(context.Background(), sql, args...)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != code {
		t.Fatalf("%s: %v, want SQLSTATE %s", sql, err, code)
	}
}

// linkLedger is registered() plus a second NAAN 12345 with manager m2 and shoulder /q7, and an
// import run that the helper arks use (imported rows need no minting client).
func linkLedger(t *testing.T) (*ledger.Ledger, context.Context) {
	t.Helper()
	l, ctx := registered(t)
	must(t, firstErr(l.AddNAAN(ctx, ledger.NAAN{NAAN: "12345", Name: "examples"})))
	must(t, firstErr(l.AddManager(ctx, ledger.Manager{NAAN: "12345", Name: "m2"})))
	must(t, firstErr(l.AddShoulder(ctx, ledger.Shoulder{NAAN: "12345", Shoulder: "/q7", Manager: "m2", Status: "reserved"}, 0)))
	exec(t, l.Pool, `insert into import_run (source_file, format) values ('links.test', 'test')`)
	return l, ctx
}

// addStatusARK inserts an imported ARK key ("NAAN/name") under shoulder with url and status ("": NULL,
// which means public, as a minted or imported public ARK stores it).
func addStatusARK(t *testing.T, p *pgxpool.Pool, key, shoulder, url, status string) {
	t.Helper()
	naan, name, _ := strings.Cut(key, "/")
	exec(t, p, `insert into ark (ark, naan, shoulder_id, assigned_name, url, status, import_run_id)
		select $1, $2::text, s.id, $3, nullif($4::text, ''), nullif($5::text, '')::ark_status, (select max(id) from import_run)
		from shoulder s where s.naan = $2::text and s.shoulder = $6`, key, naan, name, url, status, shoulder)
}

// setState writes a link_state row directly: checked at, outcome, failures, broken, due at.
func setState(t *testing.T, p *pgxpool.Pool, key, target string, checked time.Time, outcome string, failures int, broken bool, due time.Time) {
	t.Helper()
	var lastSuccess, firstFailure *time.Time
	if outcome == "good" {
		lastSuccess = &checked
	} else if failures > 0 {
		firstFailure = &checked
	}
	status := 200
	if outcome != "good" {
		status = 404
	}
	exec(t, p, `insert into link_state (ark, target, checked_at, status_code, outcome, consecutive_failures,
			first_failure_at, last_success_at, broken, due_at)
		values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, key, target, checked, status, outcome, failures, firstFailure, lastSuccess, broken, due)
}

func drain(t *testing.T, ctx context.Context, src *targethealth.Source) []linkcheck.Target {
	t.Helper()
	var out []linkcheck.Target
	for {
		tg, err := src.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out
		}
		must(t, err)
		out = append(out, tg)
	}
}

func targetKeys(ts []linkcheck.Target) string {
	var k []string
	for _, t := range ts {
		k = append(k, t.Key)
	}
	return strings.Join(k, " ")
}

// TestLinkSourceOrderAndSelection: failing due targets first (by due time), never-checked
// next (by key), good due targets last (by due time); not due, reserved, tombstoned, empty
// targets, the test NAAN and excluded shoulders, managers and hosts are left out.
func TestLinkSourceOrderAndSelection(t *testing.T) {
	t.Parallel()
	l, ctx := linkLedger(t)
	p := l.Pool
	now := time.Now().UTC().Truncate(time.Second)
	day := 24 * time.Hour
	for _, a := range [][4]string{
		{"12345/q7g1", "/q7", "https://a.example/g1", "public"},
		{"12345/q7g2", "/q7", "https://a.example/g2", ""},
		{"12345/q7f1", "/q7", "https://b.example/f1", ""},
		{"12345/q7f2", "/q7", "https://b.example/f2", "public"},
		{"12345/q7n1", "/q7", "https://c.example/n1", ""},
		{"12345/q7n2", "/q7", "https://C.Example:8443/n2", "public"},
		{"12345/q7n0", "/q7", "https://skip.example/n0", "public"},
		{"12345/q7r1", "/q7", "https://c.example/r1", "reserved"},
		{"12345/q7u1", "/q7", "https://c.example/u1", "unavailable"},
		{"12345/q7e1", "/q7", "", "public"},
		{"12345/q7ok", "/q7", "https://a.example/ok", "public"},
		{"12345/q7ff", "/q7", "https://b.example/ff", "public"},
	} {
		addStatusARK(t, p, a[0], a[1], a[2], a[3])
	}
	setState(t, p, "12345/q7g1", "https://a.example/g1", now.Add(-40*day), "good", 0, false, now.Add(-10*day))
	setState(t, p, "12345/q7g2", "https://a.example/g2", now.Add(-50*day), "good", 0, false, now.Add(-20*day))
	setState(t, p, "12345/q7f1", "https://b.example/f1", now.Add(-2*day), "failed", 3, false, now.Add(-1*day))
	setState(t, p, "12345/q7f2", "https://b.example/f2", now.Add(-3*day), "failed", 20, true, now.Add(-2*day))
	setState(t, p, "12345/q7ok", "https://a.example/ok", now.Add(-1*day), "good", 0, false, now.Add(29*day))
	setState(t, p, "12345/q7ff", "https://b.example/ff", now.Add(-1*time.Hour), "failed", 1, false, now.Add(23*time.Hour))
	must(t, firstErr(targethealth.AddExclusion(ctx, l, targethealth.ExclusionSpec{Host: "https://SKIP.example./x", Reason: "asked us"})))

	src, err := targethealth.NewSource(ctx, l, targethealth.SourceConfig{Selection: targethealth.Selection{}, Now: now, PageSize: 2})
	must(t, err)
	got := drain(t, ctx, src)
	// 99999/x9abc (the test NAAN) is left out without IncludeTest
	want := "12345/q7f2 12345/q7f1 12345/q7n1 12345/q7n2 12345/q7g2 12345/q7g1"
	if targetKeys(got) != want {
		t.Fatalf("order = %s\nwant    %s", targetKeys(got), want)
	}
	if st := src.Stats(); st.Failing != 2 || st.Never != 2 || st.Good != 2 || st.ExcludedHost != 1 {
		t.Errorf("stats = %+v, want 2 failing, 2 never, 2 good, 1 excluded host", st)
	}
	// a run that stops early (--limit) counts what it took, not the page read ahead
	part, err := targethealth.NewSource(ctx, l, targethealth.SourceConfig{Selection: targethealth.Selection{}, Now: now, PageSize: 1000})
	must(t, err)
	for range 3 {
		must(t, firstErr(part.Next(ctx)))
	}
	if st := part.Stats(); st.Failing != 2 || st.Never != 1 || st.Good != 0 {
		t.Errorf("stats after 3 of 6 = %+v, want 2 failing, 1 never checked", st)
	}
	f2 := got[0]
	if f2.URL != "https://b.example/f2" || !f2.Prev.Broken || f2.Prev.ConsecutiveFailures != 20 ||
		!f2.Prev.Last.Time.Equal(now.Add(-3*day)) || f2.Prev.Last.Outcome != linkcheck.OutcomeFailed || f2.Prev.Last.Status != 404 {
		t.Errorf("failing target's previous state = %+v", f2)
	}
	if n1 := got[2]; !n1.Prev.Last.Time.IsZero() || n1.Prev.Target != "" {
		t.Errorf("never-checked target's previous state = %+v, want zero", n1.Prev)
	}

	// the test NAAN when asked; a shoulder exclusion; a manager selection
	src, err = targethealth.NewSource(ctx, l, targethealth.SourceConfig{Selection: targethealth.Selection{NAAN: "99999"}, Now: now})
	must(t, err)
	if got := targetKeys(drain(t, ctx, src)); got != "99999/x9abc" {
		t.Errorf("--naan 99999: %s, want 99999/x9abc", got)
	}
	must(t, firstErr(targethealth.AddExclusion(ctx, l, targethealth.ExclusionSpec{Shoulder: "q7", NAAN: "12345"})))
	src, err = targethealth.NewSource(ctx, l, targethealth.SourceConfig{Selection: targethealth.Selection{IncludeTest: true}, Now: now})
	must(t, err)
	if got := targetKeys(drain(t, ctx, src)); got != "99999/x9abc" {
		t.Errorf("with /q7 excluded: %s, want 99999/x9abc", got)
	}
	ended, err := targethealth.EndExclusion(ctx, l, targethealth.ExclusionSpec{Shoulder: "/q7"})
	must(t, err)
	if !ended {
		t.Fatal("lifting the /q7 exclusion: not ended")
	}
	must(t, firstErr(targethealth.AddExclusion(ctx, l, targethealth.ExclusionSpec{Manager: "m1"})))
	// a migrated shoulder has no manager: a manager selection leaves its ARKs out, and reads on
	must(t, firstErr(l.AddShoulder(ctx, ledger.Shoulder{NAAN: "12345", Shoulder: "/r8", Status: "reserved"}, 0)))
	addStatusARK(t, p, "12345/r8never", "/r8", "https://never.example/a", "public")
	src, err = targethealth.NewSource(ctx, l, targethealth.SourceConfig{Selection: targethealth.Selection{Manager: "m2", IncludeTest: true}, Now: now})
	must(t, err)
	if got := targetKeys(drain(t, ctx, src)); got != want {
		t.Errorf("--manager m2 with m1 excluded: %s, want %s", got, want)
	}
	var sel *targethealth.SelectionError
	if _, err := targethealth.NewSource(ctx, l, targethealth.SourceConfig{Selection: targethealth.Selection{Manager: "nobody"}}); !errors.As(err, &sel) {
		t.Errorf("unknown manager: %v, want a SelectionError", err)
	}
	// lifting keeps the row; the history lists all three
	all, err := targethealth.Exclusions(ctx, l, true)
	must(t, err)
	open, err := targethealth.Exclusions(ctx, l, false)
	must(t, err)
	if len(all) != 3 || len(open) != 2 || all[1].Kind != "shoulder" || all[1].EndedAt == nil || all[0].Host != "skip.example" ||
		all[1].CreatedBy != "postgres" || all[1].EndedBy != "postgres" {
		t.Errorf("exclusions: all %+v, open %d", all, len(open))
	}
	refused(t, p, ledger.CodeDeleteRefused, `delete from link_exclusion`)
	refused(t, p, ledger.CodeUpdateRefused, `update link_exclusion set ended_at = null`)
	refused(t, p, ledger.CodeUpdateRefused, `update link_exclusion set host = 'other.example' where host is not null`)
}

// check builds a Result for key's target at time at with status.
func check(key, target string, at time.Time, status int) linkcheck.Result {
	c := linkcheck.Check{Time: at, Target: target, FinalURL: target, Status: status, Size: 1234,
		MIME: "text/html", Duration: 42 * time.Millisecond, BodyHash: strings.Repeat("ab", 32), HashAlg: "sha256"}
	c.Outcome = linkcheck.OutcomeOf(c)
	return linkcheck.Result{Key: key, Check: c, Redirects: []linkcheck.Hop{{URL: target + "/old", Status: 301}}}
}

// TestLinkSinkRepointAndStale: the sink stores state and events; a repoint through
// ark_repoint resets the state and appends a 'repointed' event; a check of the old target
// arriving afterwards is stale and dropped; nothing of it can be deleted.
func TestLinkSinkRepointAndStale(t *testing.T) {
	t.Parallel()
	l, ctx := linkLedger(t)
	p := l.Pool
	sink := targethealth.NewSink(l, targethealth.SinkConfig{})
	defer sink.Close()
	const key, a, b = "99999/x9abc", "https://example.org/a", "https://example.org/b"
	t0 := time.Now().UTC().Add(-time.Hour).Truncate(time.Microsecond)
	var prev linkcheck.State
	for i := range 3 {
		r := check(key, a, t0.Add(time.Duration(i)*time.Minute), 500)
		next, ts := linkcheck.Next(prev, r, linkcheck.Policy{FailThreshold: 3, FailSpan: time.Minute})
		must(t, sink.Record(ctx, r, next, ts))
		prev = next
	}
	var failures, events int
	var broken bool
	var due time.Time
	must(t, p.QueryRow(ctx, `select consecutive_failures, broken, due_at, event_seq from link_state where ark = $1`, key).
		Scan(&failures, &broken, &due, &events))
	if failures != 3 || !broken || events != 1 || !due.Equal(t0.Add(2*time.Minute).Add(24*time.Hour)) {
		t.Fatalf("after 3 failures: failures %d broken %v events %d due %s", failures, broken, events, due)
	}
	if n := count(t, p, `select count(*) from link_event where ark = '99999/x9abc' and seq = 1 and kind = 'broken'`); n != 1 {
		t.Fatalf("broken events = %d, want 1", n)
	}
	// the stored state reads back as the state Next computed
	src, err := targethealth.NewSource(ctx, l, targethealth.SourceConfig{Selection: targethealth.Selection{IncludeTest: true}, Now: time.Now().Add(48 * time.Hour)})
	must(t, err)
	got := drain(t, ctx, src)
	if len(got) != 1 || got[0].Prev.Last.BodyHash != prev.Last.BodyHash || got[0].Prev.FirstFailure != prev.FirstFailure ||
		got[0].Prev.Last.Duration != prev.Last.Duration || got[0].Prev.ConsecutiveFailures != 3 {
		t.Fatalf("read back %+v\nwant %+v", got, prev)
	}

	exec(t, p, `select ark_repoint($1, $2, null, 'test')`, key, b)
	var target string
	var checked *time.Time
	must(t, p.QueryRow(ctx, `select target, checked_at, consecutive_failures, broken, event_seq from link_state where ark = $1`, key).
		Scan(&target, &checked, &failures, &broken, &events))
	if target != b || checked != nil || failures != 0 || broken || events != 2 {
		t.Fatalf("after repoint: target %s checked %v failures %d broken %v events %d", target, checked, failures, broken, events)
	}
	if n := count(t, p, `select count(*) from link_event where ark = '99999/x9abc' and seq = 2 and kind = 'repointed'
		and target = 'https://example.org/b' and reason like '%example.org/a -> %example.org/b'`); n != 1 {
		t.Fatalf("repointed events = %d, want 1", n)
	}
	// a check of the old target that was in flight: dropped
	r := check(key, a, time.Now().UTC(), 200)
	next, ts := linkcheck.Next(prev, r, linkcheck.Policy{})
	must(t, sink.Record(ctx, r, next, ts))
	if st := sink.Stats(); st.Stale != 1 || st.Stored != 3 || st.Events != 1 {
		t.Errorf("sink stats = %+v, want 3 stored, 1 stale, 1 event", st)
	}
	must(t, p.QueryRow(ctx, `select target, checked_at from link_state where ark = $1`, key).Scan(&target, &checked))
	if target != b || checked != nil {
		t.Errorf("a stale check overwrote the reset state: %s %v", target, checked)
	}
	// a repoint of an ARK never checked writes no link state; a check of its old target that
	// was in flight is stale
	exec(t, p, `insert into ark (ark, naan, shoulder_id, assigned_name, url, created_by, created_at)
		select '99999/x9new', '99999', s.id, 'x9new', 'https://example.org/n', c.id, now() from shoulder s, client c
		where s.shoulder = '/x9' and c.client_id = 'c1'`)
	exec(t, p, `select ark_repoint('99999/x9new', 'https://example.org/n2', null, 'test')`)
	if n := count(t, p, `select count(*) from link_state where ark = '99999/x9new'`) + count(t, p, `select count(*) from link_event where ark = '99999/x9new'`); n != 0 {
		t.Errorf("link rows after the repoint of an unchecked ARK: %d, want none", n)
	}
	r = check("99999/x9new", "https://example.org/n", time.Now().UTC(), 200)
	next, ts = linkcheck.Next(linkcheck.State{}, r, linkcheck.Policy{})
	must(t, sink.Record(ctx, r, next, ts))
	if n := count(t, p, `select count(*) from link_state where ark = '99999/x9new'`); n != 0 || sink.Stats().Stale != 2 {
		t.Errorf("a stale first check was stored (%d rows, %d stale)", n, sink.Stats().Stale)
	}
	// a tombstone (same target) changes nothing
	exec(t, p, `select ark_tombstone('99999/x9abc', 'gone', null, 'test')`)
	if n := count(t, p, `select count(*) from link_event where ark = '99999/x9abc'`); n != 2 {
		t.Errorf("events after a tombstone = %d, want 2", n)
	}
	for _, table := range []string{"link_state", "link_event", "link_exclusion"} {
		refused(t, p, ledger.CodeDeleteRefused, "delete from "+table)
		refused(t, p, ledger.CodeDeleteRefused, "truncate "+table)
	}
	refused(t, p, ledger.CodeUpdateRefused, `update link_event set kind = 'recovered'`)
}

// TestLinkSinkConcurrentGroupCommit: many concurrent Records each see their own check
// committed, and fewer transactions than checks are used.
func TestLinkSinkConcurrentGroupCommit(t *testing.T) {
	t.Parallel()
	l, ctx := linkLedger(t)
	p := l.Pool
	const n = 200
	exec(t, p, `insert into ark (ark, naan, shoulder_id, assigned_name, url, import_run_id)
		select '12345/q7' || i, '12345', s.id, 'q7' || i, 'https://h' || (i % 7) || '.example/' || i, (select max(id) from import_run)
		from shoulder s, generate_series(1, $1) i where s.shoulder = '/q7'`, n)
	sink := targethealth.NewSink(l, targethealth.SinkConfig{Committers: 2, MaxBatch: 16})
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 1; i <= n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := "12345/q7" + strconv.Itoa(i)
			var url string
			if err := p.QueryRow(ctx, `select url from ark where ark = $1`, key).Scan(&url); err != nil {
				errs <- err
				return
			}
			r := check(key, url, time.Now().UTC(), 200)
			next, ts := linkcheck.Next(linkcheck.State{}, r, linkcheck.Policy{})
			errs <- sink.Record(ctx, r, next, ts)
		}()
	}
	wg.Wait()
	sink.Close()
	close(errs)
	for err := range errs {
		must(t, err)
	}
	if got := count(t, p, `select count(*) from link_state where outcome = 'good' and not failing and due_at > now() + interval '29 days'`); got != n {
		t.Errorf("stored states = %d, want %d", got, n)
	}
	st := sink.Stats()
	if st.Stored != n || st.Commits >= n {
		t.Errorf("sink stats = %+v, want %d stored in fewer commits", st, n)
	}
	if err := sink.Record(ctx, linkcheck.Result{}, linkcheck.State{}, nil); !errors.Is(err, targethealth.ErrSinkClosed) {
		t.Errorf("Record after Close: %v", err)
	}
}

// TestLinkCheckLock: a second run is refused while one holds the lock.
func TestLinkCheckLock(t *testing.T) {
	t.Parallel()
	l, ctx := linkLedger(t)
	release, err := targethealth.Lock(ctx, l)
	must(t, err)
	var busy *targethealth.BusyError
	if _, err := targethealth.Lock(ctx, l); !errors.As(err, &busy) {
		t.Fatalf("second lock: %v, want BusyError", err)
	}
	release()
	release2, err := targethealth.Lock(ctx, l)
	must(t, err)
	release2()
}

// TestLinkDueQueriesUseIndexes: with 30,000 states of which 100 are due, the failing and good
// phases read the due rows through their partial indexes, never the whole table.
func TestLinkDueQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	l, ctx := linkLedger(t)
	p := l.Pool
	exec(t, p, `insert into ark (ark, naan, shoulder_id, assigned_name, url, import_run_id)
		select '12345/q7' || i, '12345', s.id, 'q7' || i, 'https://h' || (i % 50) || '.example/' || i, (select max(id) from import_run)
		from shoulder s, generate_series(1, 30000) i where s.shoulder = '/q7'`)
	exec(t, p, `insert into link_state (ark, target, checked_at, status_code, outcome, consecutive_failures, due_at)
		select a.ark, a.url, now() - interval '1 day', case when i <= 50 then 404 else 200 end,
			case when i <= 50 then 'failed' else 'good' end, case when i <= 50 then 1 else 0 end,
			case when i <= 100 then now() - interval '1 hour' else now() + interval '20 days' end
		from ark a, lateral (select substr(a.assigned_name, 3)::int i) n where a.naan = '12345'`)
	exec(t, p, `analyze`)
	for index, q := range targethealth.DueQueries {
		rows, err := p.Query(ctx, "explain "+q, targethealth.DueArgs(time.Now()))
		must(t, err)
		var plan strings.Builder
		for rows.Next() {
			var line string
			must(t, rows.Scan(&line))
			plan.WriteString(line + "\n")
		}
		must(t, rows.Err())
		if s := plan.String(); !strings.Contains(s, index) || strings.Contains(s, "Seq Scan on link_state") {
			t.Errorf("%s phase does not read its index:\n%s", index, s)
		}
	}
	src, err := targethealth.NewSource(ctx, l, targethealth.SourceConfig{Now: time.Now()})
	must(t, err)
	drain(t, ctx, src)
	if st := src.Stats(); st.Failing != 50 || st.Good != 50 || st.Never != 0 {
		t.Errorf("stats %+v, want 50 failing and 50 good", st)
	}
}
