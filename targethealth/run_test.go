package targethealth_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/linkcheck"
	"github.com/arkhe-ledger/arkhe/targethealth"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func exec(t *testing.T, p *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := p.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// newLedger registers NAAN 12345 (manager m1, reserved shoulder /q7) and NAAN 99999 (manager
// t1, shoulder /x9) and an import run for the ARKs addARK inserts.
func newLedger(t *testing.T) (*ledger.Ledger, context.Context) {
	t.Helper()
	ctx := context.Background()
	l := &ledger.Ledger{Pool: pgtest.New(t)}
	for _, n := range []string{"12345", "99999"} {
		_, err := l.AddNAAN(ctx, ledger.NAAN{NAAN: n, Name: "n" + n})
		must(t, err)
	}
	_, err := l.AddManager(ctx, ledger.Manager{NAAN: "12345", Name: "m1"})
	must(t, err)
	_, err = l.AddManager(ctx, ledger.Manager{NAAN: "99999", Name: "t1"})
	must(t, err)
	_, err = l.AddShoulder(ctx, ledger.Shoulder{NAAN: "12345", Shoulder: "/q7", Manager: "m1", Status: "reserved"}, 0)
	must(t, err)
	_, err = l.AddShoulder(ctx, ledger.Shoulder{NAAN: "99999", Shoulder: "/x9", Manager: "t1", Status: "reserved"}, 0)
	must(t, err)
	exec(t, l.Pool, `insert into import_run (source_file, format) values ('t', 't')`)
	return l, ctx
}

func addARK(t *testing.T, p *pgxpool.Pool, key, url string) {
	t.Helper()
	naan, name, _ := strings.Cut(key, "/")
	shoulder := "/q7"
	if naan == "99999" {
		shoulder = "/x9"
	}
	exec(t, p, `insert into ark (ark, naan, shoulder_id, assigned_name, url, import_run_id)
		select $1, $2::text, s.id, $3, $4, (select max(id) from import_run) from shoulder s
		where s.naan = $2::text and s.shoulder = $5`, key, naan, name, url, shoulder)
}

// failing writes a failing state: failures consecutive failures, the first at first, the
// latest a day ago, due an hour ago.
func failing(t *testing.T, p *pgxpool.Pool, key, target string, failures int, first time.Time, broken bool) {
	t.Helper()
	exec(t, p, `insert into link_state (ark, target, checked_at, status_code, outcome, consecutive_failures,
			first_failure_at, broken, due_at)
		values ($1, $2, now() - interval '1 day', 404, 'failed', $3, $4, $5, now() - interval '1 hour')`,
		key, target, failures, first, broken)
}

// site is a local HTTP server: /ok answers 200 with a body and its length, /gone 404, /error
// 500; counts requests.
func site(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		switch {
		case strings.HasPrefix(r.URL.Path, "/ok"):
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Content-Length", "11")
			_, _ = io.WriteString(w, "hello world")
		case strings.HasPrefix(r.URL.Path, "/gone"):
			http.Error(w, "gone", http.StatusNotFound)
		default:
			http.Error(w, "boom", http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func checkConfig() linkcheck.Config {
	return linkcheck.Config{Contact: "https://ops.example.invalid/linkcheck", AllowPrivate: true,
		PerHostInterval: time.Millisecond, Workers: 4, RequestTimeout: 20 * time.Second}
}

type stateRow struct {
	Outcome  string
	Status   int
	Failures int
	Broken   bool
	Target   string
	Due      time.Time
}

func readState(t *testing.T, p *pgxpool.Pool, key string) stateRow {
	t.Helper()
	var s stateRow
	must(t, p.QueryRow(context.Background(), `select coalesce(outcome, ''), coalesce(status_code, 0), consecutive_failures,
		broken, target, coalesce(due_at, 'epoch') from link_state where ark = $1`, key).
		Scan(&s.Outcome, &s.Status, &s.Failures, &s.Broken, &s.Target, &s.Due))
	return s
}

func count(t *testing.T, p *pgxpool.Pool, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	must(t, p.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

// TestRunStateMachine: a run over a small ledger records good and failed checks, reaches
// broken after the threshold once the failures span the fail span (the state's times are set
// in the past: nothing sleeps), leaves a target whose failures are too recent unbroken,
// recovers a broken target, records one audit event, and a repoint through ark_repoint
// resets the state so the next run checks the new target.
func TestRunStateMachine(t *testing.T) {
	l, ctx := newLedger(t)
	p := l.Pool
	srv, _ := site(t)
	u := srv.URL
	addARK(t, p, "12345/q7ok", u+"/ok")
	addARK(t, p, "12345/q7gone", u+"/gone")
	addARK(t, p, "12345/q7err", u+"/error")
	addARK(t, p, "12345/q7old", u+"/gone/old")     // 11 failures over 15 days: the 12th breaks it
	addARK(t, p, "12345/q7young", u+"/gone/young") // 11 failures over 3 days: not yet
	addARK(t, p, "12345/q7back", u+"/ok/back")     // broken, now answers
	addARK(t, p, "99999/x9test", u+"/ok/test")     // the test NAAN: left out by default
	now := time.Now()
	failing(t, p, "12345/q7old", u+"/gone/old", 11, now.Add(-15*24*time.Hour), false)
	failing(t, p, "12345/q7young", u+"/gone/young", 11, now.Add(-3*24*time.Hour), false)
	failing(t, p, "12345/q7back", u+"/ok/back", 20, now.Add(-30*24*time.Hour), true)

	var progressed atomic.Int64
	cfg := targethealth.Config{Check: checkConfig(), ClientID: "ops", Progress: func(n int64) { progressed.Store(n) }}
	rep, err := targethealth.Run(ctx, l, cfg)
	must(t, err)
	s := rep.Summary
	if s.Checked != 6 || s.Good != 2 || s.Failed != 4 || s.NewlyBroken != 1 || s.Recovered != 1 || progressed.Load() != 6 {
		t.Fatalf("summary %+v (progress %d), want 6 checked, 2 good, 4 failed, 1 newly broken, 1 recovered", s, progressed.Load())
	}
	if rep.Source.Failing != 3 || rep.Source.Never != 3 || rep.Sink.Stored != 6 || rep.Broken != 1 {
		t.Errorf("source %+v sink %+v broken %d", rep.Source, rep.Sink, rep.Broken)
	}
	day := 24 * time.Hour
	for key, want := range map[string]stateRow{
		"12345/q7ok":    {Outcome: "good", Status: 200},
		"12345/q7gone":  {Outcome: "failed", Status: 404, Failures: 1},
		"12345/q7err":   {Outcome: "failed", Status: 500, Failures: 1},
		"12345/q7old":   {Outcome: "failed", Status: 404, Failures: 12, Broken: true},
		"12345/q7young": {Outcome: "failed", Status: 404, Failures: 12},
		"12345/q7back":  {Outcome: "good", Status: 200},
	} {
		got := readState(t, p, key)
		window := 30 * day
		if want.Outcome != "good" {
			window = day
		}
		if got.Outcome != want.Outcome || got.Status != want.Status || got.Failures != want.Failures || got.Broken != want.Broken {
			t.Errorf("%s: %+v, want %+v", key, got, want)
		}
		if d := got.Due.Sub(now); d < window-time.Minute || d > window+time.Minute {
			t.Errorf("%s: due in %s, want %s", key, d, window)
		}
	}
	if n := count(t, p, `select count(*) from link_state where ark = '99999/x9test'`); n != 0 {
		t.Errorf("the test NAAN's target was checked")
	}
	if n := count(t, p, `select count(*) from link_event where (ark, kind) in (('12345/q7old', 'broken'), ('12345/q7back', 'recovered'))`); n != 2 {
		t.Errorf("broken and recovered events = %d, want 2", n)
	}
	var checked, broken, backlog int64
	var stop string
	must(t, p.QueryRow(ctx, `select (detail->>'checked')::bigint, (detail->>'newly_broken')::bigint, (detail->>'backlog')::bigint,
		detail->>'stop' from audit_event where action = 'linkcheck' and client_id = 'ops'`).Scan(&checked, &broken, &backlog, &stop))
	if checked != 6 || broken != 1 || backlog != 0 || stop != string(linkcheck.StopSourceDone) {
		t.Errorf("audit event: checked %d newly broken %d backlog %d stop %q", checked, broken, backlog, stop)
	}

	// nothing is due now: a second run checks nothing
	rep, err = targethealth.Run(ctx, l, cfg)
	must(t, err)
	if rep.Summary.Checked != 0 {
		t.Errorf("second run checked %d, want 0", rep.Summary.Checked)
	}
	// repointing resets the state: the next run checks the new target
	exec(t, p, `select ark_repoint('12345/q7gone', $1, null, 'test')`, u+"/ok/new")
	if st := readState(t, p, "12345/q7gone"); st.Outcome != "" || st.Failures != 0 || st.Target != u+"/ok/new" {
		t.Fatalf("after repoint: %+v", st)
	}
	rep, err = targethealth.Run(ctx, l, cfg)
	must(t, err)
	if rep.Summary.Checked != 1 || rep.Summary.Good != 1 || rep.Source.Never != 1 {
		t.Errorf("run after repoint: %+v", rep.Summary)
	}
	if st := readState(t, p, "12345/q7gone"); st.Outcome != "good" || st.Target != u+"/ok/new" {
		t.Errorf("repointed ARK after the run: %+v", st)
	}
	if n := count(t, p, `select count(*) from audit_event where action = 'linkcheck'`); n != 3 {
		t.Errorf("audit events = %d, want one per run (3)", n)
	}

	// a narrower run: only the test NAAN, through the selection
	rep, err = targethealth.Run(ctx, l, targethealth.Config{Check: checkConfig(), Selection: targethealth.Selection{NAAN: "99999"}})
	must(t, err)
	if rep.Summary.Checked != 1 {
		t.Errorf("--naan 99999: checked %d, want 1", rep.Summary.Checked)
	}
	fams := rep.Metrics()
	var names []string
	for _, f := range fams {
		names = append(names, f.Name)
	}
	if !strings.Contains(strings.Join(names, " "), "arkhe_linkcheck_checks") {
		t.Errorf("metrics: %v", names)
	}
}

// mapResolver resolves the made-up host names of a test to loopback.
type mapResolver map[string]bool

func (m mapResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if m[host] {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// TestKilledRunLosesNoRecordedCheck: a run cancelled in the middle (the servers stop answering
// after a dozen requests and the context is cancelled once ten checks are recorded) keeps every
// check the sink acknowledged, and the checks left are due for the next run.
func TestKilledRunLosesNoRecordedCheck(t *testing.T) {
	l, ctx := newLedger(t)
	p := l.Pool
	var served atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if served.Add(1) > 12 {
			select { // hang like a dead server until the client gives up
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		w.Header().Set("Content-Length", "2")
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	defer close(release)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	hosts := mapResolver{}
	const n = 40
	for i := range n {
		h := "h" + strconv.Itoa(i%4) + ".test"
		hosts[h] = true
		addARK(t, p, "12345/q7k"+strconv.Itoa(i), "http://"+h+":"+port+"/k/"+strconv.Itoa(i))
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var acked atomic.Int64
	cfg := checkConfig()
	cfg.Resolver = hosts
	rep, err := targethealth.Run(runCtx, l, targethealth.Config{Check: cfg, Progress: func(k int64) {
		acked.Store(k)
		if k == 10 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: %v", err)
	}
	stored := count(t, p, `select count(*) from link_state where checked_at is not null`)
	t.Logf("stored %d of %d; aborted %d, unchecked %d", stored, n, rep.Summary.Aborted, rep.Summary.Unchecked)
	if stored < 10 || stored >= n || stored != rep.Summary.Checked || stored != rep.Sink.Stored || stored != acked.Load() {
		t.Fatalf("stored %d, summary checked %d, sink stored %d, acknowledged %d: want all equal and at least 10",
			stored, rep.Summary.Checked, rep.Sink.Stored, acked.Load())
	}
	var stop string
	must(t, p.QueryRow(ctx, `select detail->>'stop' from audit_event where action = 'linkcheck'`).Scan(&stop))
	if stop != string(linkcheck.StopCancelled) {
		t.Errorf("audit event stop %q", stop)
	}
	// the rest are still due: the next run reads exactly them
	src, err := targethealth.NewSource(ctx, l, targethealth.SourceConfig{})
	must(t, err)
	left := 0
	for {
		if _, err := src.Next(ctx); err != nil {
			break
		}
		left++
	}
	if int64(left) != n-stored {
		t.Errorf("due after the killed run: %d, want %d", left, n-stored)
	}
}

// TestRunRefusals: a bad configuration and a run while another holds the lock are refused
// before anything is recorded.
func TestRunRefusals(t *testing.T) {
	l, ctx := newLedger(t)
	var ce *linkcheck.ConfigError
	if _, err := targethealth.Run(ctx, l, targethealth.Config{Check: linkcheck.Config{}}); !errors.As(err, &ce) || ce.Field != "Contact" {
		t.Errorf("no contact: %v", err)
	}
	release, err := targethealth.Lock(ctx, l)
	must(t, err)
	var busy *targethealth.BusyError
	if _, err := targethealth.Run(ctx, l, targethealth.Config{Check: checkConfig()}); !errors.As(err, &busy) {
		t.Errorf("second run: %v", err)
	}
	release()
	var sel *targethealth.SelectionError
	if _, err := targethealth.Run(ctx, l, targethealth.Config{Check: checkConfig(), Selection: targethealth.Selection{Manager: "nobody"}}); !errors.As(err, &sel) {
		t.Errorf("unknown manager: %v", err)
	}
	if n := count(t, l.Pool, `select count(*) from audit_event where action = 'linkcheck'`); n != 0 {
		t.Errorf("refused runs wrote %d audit events", n)
	}
}

// TestBlockedTargetsStayDue: a run that may not reach loopback addresses records its refusals
// as blocked (inconclusive, no failure counted, due at the check) and names them in the
// summary; the next run, allowed to reach them, checks every one of them.
func TestBlockedTargetsStayDue(t *testing.T) {
	t.Parallel()
	l, ctx := newLedger(t)
	srv, hits := site(t)
	keys := []string{"12345/q7b1", "12345/q7b2", "12345/q7b3"}
	for _, k := range keys {
		addARK(t, l.Pool, k, srv.URL+"/ok/"+k)
	}
	guarded := checkConfig()
	guarded.AllowPrivate = false
	rep, err := targethealth.Run(ctx, l, targethealth.Config{Check: guarded})
	must(t, err)
	if s := rep.Summary; s.Blocked != 3 || s.Failed != 0 || s.Inconclusive != 0 || s.Checked != 3 || len(s.BlockedExamples) != 3 {
		t.Fatalf("guarded run: %+v, want 3 blocked, none failed", s)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the loopback site saw %d requests from a guarded run", n)
	}
	if got := rep.Summary.BlockedExamples[0]; got.Key == "" || !strings.HasPrefix(got.Check.Target, srv.URL+"/ok/") {
		t.Errorf("blocked example %+v, want a key and its target", got)
	}
	if n := count(t, l.Pool, `select count(*) from link_state where error_class = 'blocked' and outcome = 'inconclusive'
		and consecutive_failures = 0 and not broken and due_at = checked_at`); n != 3 {
		t.Errorf("blocked states due at their check: %d, want 3", n)
	}
	if n := count(t, l.Pool, `select count(*) from audit_event where action = 'linkcheck' and (detail->>'blocked')::int = 3`); n != 1 {
		t.Errorf("audit events counting 3 blocked: %d, want 1", n)
	}
	if m := metricValue(rep, "arkhe_linkcheck_checks", "blocked"); m != 3 {
		t.Errorf("arkhe_linkcheck_checks{outcome=blocked} = %v, want 3", m)
	}

	rep, err = targethealth.Run(ctx, l, targethealth.Config{Check: checkConfig()})
	must(t, err)
	if s := rep.Summary; s.Good != 3 || s.Blocked != 0 || rep.Source.Failing != 3 {
		t.Fatalf("allowed run: %+v, source %+v; want the 3 blocked targets read again and good", s, rep.Source)
	}
	if n := hits.Load(); n != 3 {
		t.Errorf("the loopback site saw %d requests, want 3", n)
	}
	for _, k := range keys {
		if s := readState(t, l.Pool, k); s.Outcome != "good" || s.Status != 200 || s.Failures != 0 {
			t.Errorf("%s after the allowed run: %+v", k, s)
		}
	}
}

// metricValue returns the sample of family name whose one label has value, or -1.
func metricValue(rep targethealth.Report, name, value string) float64 {
	for _, f := range rep.Metrics() {
		if f.Name != name {
			continue
		}
		for _, s := range f.Samples {
			if len(s.Labels) == 1 && s.Labels[0].Value == value {
				return s.Value
			}
		}
	}
	return -1
}

// TestRefusedBeforeRun: the predicate holds for the three refusals, wrapped or not, and for
// nothing else.
func TestRefusedBeforeRun(t *testing.T) {
	t.Parallel()
	for _, err := range []error{&linkcheck.ConfigError{Field: "Contact"}, &targethealth.BusyError{},
		fmt.Errorf("run: %w", &targethealth.SelectionError{What: "manager", Rule: "is not registered"})} {
		if !targethealth.RefusedBeforeRun(err) {
			t.Errorf("RefusedBeforeRun(%v) = false", err)
		}
	}
	for _, err := range []error{nil, context.Canceled, targethealth.ErrSinkClosed} {
		if targethealth.RefusedBeforeRun(err) {
			t.Errorf("RefusedBeforeRun(%v) = true", err)
		}
	}
}
