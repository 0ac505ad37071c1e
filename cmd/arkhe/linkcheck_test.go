package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/fixtures/duckdb"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/targethealth"
)

// promLine is one sample line of the Prometheus text format: name{labels} value.
var promLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*\})? (\S+)$`)

// parseProm reads a metrics file into "name{labels}" → value, failing on any line that is
// neither a sample nor a # HELP / # TYPE comment.
func parseProm(t *testing.T, path string) map[string]float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "# HELP ") || strings.HasPrefix(line, "# TYPE ") {
			continue
		}
		m := promLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("%s:%d: not a sample line: %q", path, n, line)
		}
		v, err := strconv.ParseFloat(strings.Replace(m[3], "+Inf", "Inf", 1), 64)
		if err != nil {
			t.Fatalf("%s:%d: value %q: %v", path, n, m[3], err)
		}
		out[m[1]+m[2]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func lcExec(t *testing.T, p *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := p.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// TestLinkcheckCommand: a run over a small ledger against a local server exits 0 while nothing
// is newly broken and 1 once a target breaks; it prints the summary, records one audit event
// per run and writes a metrics file in the Prometheus text format; refusals exit 2; exclusions
// are added, listed and lifted; `report links` writes the state with manager and shoulder.
func TestLinkcheckCommand(t *testing.T) {
	url := pgtest.URL(t)
	pool := pgtest.New(t)
	t.Setenv(contactEnv, "")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/ok") {
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Content-Length", "2")
			_, _ = io.WriteString(w, "ok")
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	for _, step := range [][]string{
		{"naan", "add", "12345", "--name", "examples"},
		{"manager", "add", "--naan", "12345", "Library"},
		{"manager", "add", "--naan", "12345", "Museum"},
		{"shoulder", "add", "--naan", "12345", "--manager", "Library", "--status", "reserved", "/q7"},
		{"shoulder", "add", "--naan", "12345", "--manager", "Museum", "--status", "reserved", "/m5"},
	} {
		if code, out, errOut := arkhe(t, url, "", step...); code != 0 {
			t.Fatalf("%v: exit %d\n%s\n%s", step, code, out, errOut)
		}
	}
	lcExec(t, pool, `insert into import_run (source_file, format) values ('t', 't')`)
	for key, target := range map[string]string{"12345/q7ok": "/ok", "12345/q7gone": "/gone", "12345/m5old": "/gone/old", "12345/m5fine": "/ok/fine"} {
		sh := "/" + strings.TrimPrefix(key, "12345/")[:2]
		lcExec(t, pool, `insert into ark (ark, naan, shoulder_id, assigned_name, url, import_run_id)
			select $1::text, '12345', s.id, split_part($1::text, '/', 2), $2, (select max(id) from import_run) from shoulder s where s.shoulder = $3`,
			key, srv.URL+target, sh)
	}
	dir := t.TempDir()
	prom := filepath.Join(dir, "arkhe_linkcheck.prom")
	lc := func(extra ...string) (int, string, string) {
		return arkhe(t, url, "", append([]string{"linkcheck", "--contact", "https://ops.example.invalid/arkhe", "--allow-private",
			"--per-host-interval", "1ms", "--metrics-file", prom}, extra...)...)
	}

	// refusals: no contact, a bad duration, a bad host interval, an unknown manager
	for _, args := range [][]string{
		{"linkcheck", "--allow-private"},
		{"linkcheck", "--contact", "https://x.example", "--good-window", "a month"},
		{"linkcheck", "--contact", "https://x.example", "--host-interval", "example.org"},
		{"linkcheck", "--contact", "https://x.example", "--manager", "Nobody"},
		{"linkcheck", "--contact", "not a url"},
	} {
		if code, out, errOut := arkhe(t, url, "", args...); code != 2 || errOut == "" {
			t.Errorf("%v: exit %d, want 2\n%s\n%s", args, code, out, errOut)
		}
	}
	if _, err := os.Stat(prom); !os.IsNotExist(err) {
		t.Errorf("a refused run wrote the metrics file: %v", err)
	}

	// a run without --allow-private: the loopback targets are refused, the summary counts and
	// names them and gives the flag, and they stay due (the next run checks all four)
	code, out, errOut := arkhe(t, url, "", "linkcheck", "--contact", "https://ops.example.invalid/arkhe", "--per-host-interval", "1ms")
	if code != 0 || !strings.Contains(out, "blocked          4 (") || !strings.Contains(out, "failed           0\n") ||
		!strings.Contains(out, "note: 4 targets were refused") || !strings.Contains(out, "run again with --allow-private") ||
		!strings.Contains(out, "  12345/q7ok "+srv.URL+"/ok\n") {
		t.Fatalf("run without --allow-private: exit %d\n%s\n%s", code, out, errOut)
	}

	// first run: failures, nothing broken yet
	code, out, errOut = lc()
	if code != 0 || !strings.Contains(out, "arkhe linkcheck: 4 targets checked") || !strings.Contains(out, "failed           2\n") {
		t.Fatalf("first run: exit %d\n%s\n%s", code, out, errOut)
	}
	m := parseProm(t, prom)
	if m[`arkhe_linkcheck_checks{outcome="good"}`] != 2 || m[`arkhe_linkcheck_checks{outcome="failed"}`] != 2 ||
		m[`arkhe_linkcheck_transitions{kind="broken"}`] != 0 || m["arkhe_linkcheck_last_run_success"] != 1 ||
		m["arkhe_linkcheck_last_run_timestamp_seconds"] < 1e9 {
		t.Errorf("metrics after the first run: %v", m)
	}

	// a target failing for 15 days with 11 failures: the 12th breaks it, exit 1
	lcExec(t, pool, `update link_state set consecutive_failures = 11, first_failure_at = now() - interval '15 days',
		due_at = now() - interval '1 minute' where ark = '12345/m5old'`)
	code, out, errOut = lc()
	t.Logf("breaking run:\n%s", out)
	if code != 1 || !strings.Contains(out, "newly broken     1 ") || !strings.Contains(out, "broken now       1 target in the ledger") {
		t.Fatalf("breaking run: exit %d\n%s\n%s", code, out, errOut)
	}
	if m := parseProm(t, prom); m[`arkhe_linkcheck_transitions{kind="broken"}`] != 1 || m["arkhe_linkcheck_broken_targets"] != 1 {
		t.Errorf("metrics after the breaking run: %v", m)
	}
	var runs, checked int64
	if err := pool.QueryRow(context.Background(), `select count(*), sum((detail->>'checked')::bigint) from audit_event where action = 'linkcheck'`).Scan(&runs, &checked); err != nil {
		t.Fatal(err)
	}
	if runs != 3 || checked != 9 {
		t.Errorf("audit events: %d runs, %d checks; want 3 (the blocked run included) and 9", runs, checked)
	}

	// exclusions
	for _, step := range []struct {
		args []string
		want string
	}{
		{[]string{"linkcheck", "exclude", "--manager", "Museum", "--reason", "moving servers", "--client", "ops"}, "manager Museum excluded from link checks"},
		{[]string{"linkcheck", "exclude", "--manager", "Museum"}, "was excluded from link checks already"},
		{[]string{"linkcheck", "exclude", "--host", "https://Repo.Example.org:8443/x"}, "excluded"},
		{[]string{"linkcheck", "exclusions"}, "repo.example.org"},
		{[]string{"linkcheck", "include", "--host", "repo.example.org"}, "is checked again"},
		{[]string{"linkcheck", "include", "--host", "repo.example.org"}, "no open exclusion"},
		{[]string{"linkcheck", "exclusions", "--all"}, "moving servers"},
	} {
		code, out, errOut := arkhe(t, url, "", step.args...)
		if code != 0 || !strings.Contains(out, step.want) {
			t.Errorf("%v: exit %d, want 0 and %q\n%s\n%s", step.args, code, step.want, out, errOut)
		}
	}
	if code, _, _ := arkhe(t, url, "", "linkcheck", "exclude", "--manager", "Museum", "--host", "x.example"); code != 2 {
		t.Errorf("two subjects: exit %d, want 2", code)
	}
	// everything of Library is due again only in a month: with Museum excluded nothing is read
	lcExec(t, pool, `update link_state set due_at = now() - interval '1 minute'`)
	code, out, errOut = lc()
	if code != 0 || !strings.Contains(out, "arkhe linkcheck: 2 targets checked") {
		t.Errorf("run with Museum excluded: exit %d\n%s\n%s", code, out, errOut)
	}

	// the per-owner report, broken only
	links := filepath.Join(dir, "links.jsonl")
	code, out, errOut = arkhe(t, url, "", "report", "links", "--manager", "Museum", "--broken-only", "-o", links)
	if code != 0 || !strings.Contains(out, "wrote 1 link states") {
		t.Fatalf("report links: exit %d\n%s\n%s", code, out, errOut)
	}
	b, err := os.ReadFile(links)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"ark":"ark:12345/m5old"`, `"manager":"Museum"`, `"shoulder":"/m5"`, `"broken":true`,
		`"consecutive_failures":12`, `"outcome":"failed"`, `"status_code":404`, `"hash_alg":"sha256"`, `"imported":false`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("links report lacks %s:\n%s", want, b)
		}
	}
	parquet := filepath.Join(dir, "links.parquet")
	if code, out, errOut := arkhe(t, url, "", "report", "links", "-o", parquet); code != 0 || !strings.Contains(out, "wrote 4 link states") {
		t.Fatalf("report links parquet: exit %d\n%s\n%s", code, out, errOut)
	}
	r := duckdb.Read(t, parquet, `SELECT ark, manager, shoulder, outcome, broken FROM t ORDER BY ark`)
	var cols []string
	for _, d := range r.Describe {
		cols = append(cols, d.Name+" "+d.Type)
	}
	want := "ark VARCHAR,naan VARCHAR,shoulder VARCHAR,manager VARCHAR,target VARCHAR,checked_target VARCHAR,status VARCHAR," +
		"checked_at TIMESTAMP WITH TIME ZONE,outcome VARCHAR,status_code INTEGER,error_class VARCHAR,final_url VARCHAR," +
		"mime_type VARCHAR,size BIGINT,duration_ms INTEGER,redirects INTEGER,body_hash VARCHAR,hash_alg VARCHAR," +
		"consecutive_failures INTEGER,first_failure_at TIMESTAMP WITH TIME ZONE,last_success_at TIMESTAMP WITH TIME ZONE," +
		"broken BOOLEAN,due_at TIMESTAMP WITH TIME ZONE,imported BOOLEAN"
	if got := strings.Join(cols, ","); got != want {
		t.Errorf("links.parquet columns:\n%s\nwant\n%s", got, want)
	}
	if r.Count != 4 || r.Rows[0]["ark"] != "ark:12345/m5fine" || r.Rows[0]["manager"] != "Museum" || r.Rows[1]["broken"] != true {
		t.Errorf("links.parquet rows: %+v", r.Rows)
	}
}

// TestImportLinkcheckCommand: `arkhe import` recognizes EZID's link-check files for what they
// are and says what it kept, after the identifiers.
func TestImportLinkcheckCommand(t *testing.T) {
	data := fixtures.SharedData(t, "ezid")
	url := pgtest.URL(t)
	t.Chdir(t.TempDir())
	if code, out, errOut := arkhe(t, url, "", "import", filepath.Join(data, "db.identifier.jsonl")); code != 0 {
		t.Fatalf("identifiers: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut := arkhe(t, url, "", "import", filepath.Join(data, "db.linkchecker.jsonl"))
	t.Logf("import:\n%s", out)
	if code != 0 {
		t.Fatalf("link checker: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"(ezid-linkcheck, sha256:", "link state   2,129 link-check results of a legacy link checker: 1,550 kept as link state (10 broken), 530 never checked, 18 about EZID's default target",
		"skipped      31 non-ARK (doi 31)", "EZID's MD5 is kept as md5"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "credentials") {
		t.Errorf("link-check records reported as credentials:\n%s", out)
	}
	code, out, errOut = arkhe(t, url, "", "import", filepath.Join(data, "linkchecker_test_id_url_v0.tsv"))
	if code != 1 || !strings.Contains(out, "51 whose ARK is not in the ledger: not kept, listed in the reject file") ||
		!strings.Contains(out, "rejected     0 bad records") || !strings.Contains(out, "(51 rows)") || !strings.Contains(out, "read in America/Los_Angeles") {
		t.Fatalf("TSV: exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	b, err := os.ReadFile("linkchecker_test_id_url_v0.rejects.csv")
	if err != nil || strings.Count(string(b), "the ARK is not in the ledger") != 51 {
		t.Errorf("TSV rejects: %v\n%s", err, b)
	}
}

// TestVerifyMetricsFile: `arkhe verify --metrics-file` writes the audit's figures.
func TestVerifyMetricsFile(t *testing.T) {
	url := pgtest.URL(t)
	dir := t.TempDir()
	prom := filepath.Join(dir, "arkhe_verify.prom")
	code, out, errOut := arkhe(t, url, "", "verify", "-o", filepath.Join(dir, "f.jsonl"), "--metrics-file", prom)
	if code != 0 {
		t.Fatalf("verify: exit %d\n%s\n%s", code, out, errOut)
	}
	m := parseProm(t, prom)
	if m["arkhe_verify_clean"] != 1 || m["arkhe_verify_arks"] != 0 || m[`arkhe_verify_findings{check="ark.syntax",severity="error"}`] != 0 ||
		m["arkhe_verify_last_run_timestamp_seconds"] < 1e9 || len(m) < 10 {
		t.Errorf("verify metrics: %v", m)
	}
}

// TestLinkcheckSummarySaysHowManyHostsItLeftOut: the host table shows at most
// targethealth.MaxHostsReported hosts and says how many it left out.
func TestLinkcheckSummarySaysHowManyHostsItLeftOut(t *testing.T) {
	t.Parallel()
	r := &targethealth.Report{HostCount: 34}
	for i := range targethealth.MaxHostsReported {
		r.Hosts = append(r.Hosts, targethealth.HostFigures{Host: fmt.Sprintf("h%d.example", i), Seen: 10})
	}
	var b strings.Builder
	printLinkcheck(&b, r)
	if want := fmt.Sprintf("... and %d more hosts,", 34-targethealth.MaxHostsReported); !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, b.String())
	}
}
