package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// arkhe runs the CLI against the test's database and returns its exit code and outputs.
func arkhe(t *testing.T, url string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	full := append([]string{"arkhe", "--database-url", url, "--quiet"}, args...)
	code := run(context.Background(), full, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestRegistrationCommands(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	steps := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"init"}, 0, "nothing changed"}, // pgtest databases come migrated
		{[]string{"init"}, 0, "nothing changed"},
		{[]string{"naan", "add", "99999", "--name", "test"}, 0, "NAAN 99999 registered"},
		{[]string{"naan", "add", "99999", "--name", "test"}, 0, "was registered already"},
		{[]string{"naan", "add", "12a45"}, 2, ""},
		{[]string{"manager", "add", "--naan", "99999", "--commitment", "Not Guaranteed", "--quota", "1000", "Library"}, 0, "registered"},
		{[]string{"manager", "add", "--naan", "99999", "--commitment", "forever", "Other"}, 2, ""},
		{[]string{"shoulder", "add", "--naan", "99999", "--manager", "Library", "--default", "/x9"}, 0, "shoulder /x9 of NAAN 99999 registered"},
		{[]string{"shoulder", "add", "--naan", "99999", "--manager", "Library", "/x9"}, 0, "shoulder /x9 of NAAN 99999 was registered already (unchanged)"},
		{[]string{"shoulder", "add", "--naan", "99999", "--manager", "Library", "--default", "/x9"}, 0, "was registered already (unchanged)"},
		{[]string{"shoulder", "add", "--naan", "99999", "--manager", "Library", "--blade-length", "10", "/x9"}, 2, ""},
		{[]string{"shoulder", "add", "--naan", "99999", "--manager", "Library", "--status", "active", "/dsp01"}, 2, ""},
		{[]string{"shoulder", "add", "--naan", "99999", "--manager", "Library", "--length", "4"}, 0, "registered"},
		{[]string{"client", "add", "--naan", "99999", "--manager", "Library", "--scope", "ark:mint", "--scope", "ark:read", "minter"}, 0, "client minter registered"},
		{[]string{"client", "add", "--naan", "99999", "--authority", "naan", "wide"}, 2, ""},
		// a pinned shoulder or manager that does not exist refuses; it never registers a wider client
		{[]string{"client", "add", "--naan", "99999", "--authority", "naan", "--expires", "2027-01-01", "--shoulder", "/q1", "typo"}, 2, ""},
		{[]string{"client", "add", "--naan", "99999", "--authority", "naan", "--expires", "2027-01-01", "--manager", "Nobody", "typo"}, 2, ""},
		{[]string{"client", "add", "--naan", "99999", "--authority", "naan", "--expires", "2027-01-01", "wide"}, 0, "registered"},
		{[]string{"client", "add", "--naan", "99999", "--manager", "Library", "--shoulder", "/x9", "pinned-one"}, 0, "registered"},
		{[]string{"shoulder", "retire", "--naan", "99999", "/x9"}, 0, "shoulder /x9 of NAAN 99999 retired\n" +
			"warning: /x9 is the default shoulder of manager \"Library\"; a mint that names no shoulder will be refused until another default is set (manager set --default-shoulder, or shoulder add --default)\n" +
			"warning: active client pinned-one is pinned to /x9 and can no longer mint; register new clients for another shoulder\n"},
		{[]string{"shoulder", "retire", "--naan", "99999", "/x9"}, 0, "was retired already"},
	}
	for _, s := range steps {
		code, out, errOut := arkhe(t, url, "", s.args...)
		if code != s.code || !strings.Contains(out, s.want) {
			t.Fatalf("arkhe %s: exit %d (want %d)\nstdout: %s\nstderr: %s", strings.Join(s.args, " "), code, s.code, out, errOut)
		}
	}
	// a refusal states the rule, not the database's text
	_, _, errOut := arkhe(t, url, "", "shoulder", "add", "--naan", "99999", "--manager", "Library", "--status", "active", "/dsp01")
	if !strings.Contains(errOut, ledger.ShoulderRule) || strings.Contains(errOut, "SQLSTATE") {
		t.Errorf("shoulder refusal: %s", errOut)
	}
	_, _, errOut = arkhe(t, url, "", "naan", "add", "12a45")
	if !strings.Contains(errOut, "a NAAN is 1-16 digits or lowercase consonants") || strings.Contains(errOut, "SQLSTATE") {
		t.Errorf("NAAN refusal: %s", errOut)
	}
	code, out, _ := arkhe(t, url, "", "shoulder", "add", "--naan", "99999", "--manager", "Library", "/k7")
	if code != 0 {
		t.Fatalf("shoulder add /k7: %d %s", code, out)
	}
	code, out, _ = arkhe(t, url, "", "shoulder", "retire", "--naan", "99999", "/k7")
	if code != 0 || strings.Contains(out, "warning") {
		t.Errorf("retiring an unused shoulder warns: %d\n%s", code, out)
	}
	code, out, _ = arkhe(t, url, "", "shoulder", "list", "--naan", "99999")
	if code != 0 || !strings.Contains(out, "/x9") || !strings.Contains(out, "retired") {
		t.Fatalf("shoulder list: %d\n%s", code, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 { // header, /k7, /x9 and the drawn 4-character shoulder
		t.Fatalf("shoulder list has %d lines, want 3:\n%s", len(lines), out)
	}
	drawn := ""
	for _, line := range lines[1:] {
		if f := strings.Fields(line)[1]; f != "/x9" && f != "/k7" {
			drawn = f
		}
	}
	if len(drawn) != 5 || !strings.ContainsAny(drawn[4:], "0123456789") {
		t.Errorf("drawn shoulder %q: want / + 3 consonants + a digit", drawn)
	}
	code, out, _ = arkhe(t, url, "", "client", "list")
	if code != 0 || !strings.Contains(out, "minter") || !strings.Contains(out, "ark:mint ark:read") || !strings.Contains(out, "2027-01-01") {
		t.Fatalf("client list: %d\n%s", code, out)
	}
	if strings.Contains(out, "7000000000") {
		t.Errorf("client list shows an internal key:\n%s", out)
	}
	if strings.Contains(out, "typo") {
		t.Errorf("a refused client was registered:\n%s", out)
	}
	code, out, _ = arkhe(t, url, "", "manager", "list")
	if code != 0 || !strings.Contains(out, "Library") || !strings.Contains(out, "1000") {
		t.Fatalf("manager list: %d\n%s", code, out)
	}
}

func TestInitTestRegistrationIsIdempotent(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	code, out, errOut := arkhe(t, url, "", "init", "--test-registration")
	if code != 0 || !strings.Contains(out, "registered test NAAN 99999") {
		t.Fatalf("first init: %d %s %s", code, out, errOut)
	}
	code, out, _ = arkhe(t, url, "", "init", "--test-registration")
	if code != 0 || !strings.Contains(out, "test registration present") || !strings.Contains(out, "nothing changed") {
		t.Fatalf("second init: %d %s", code, out)
	}
}

func TestARKCheck(t *testing.T) {
	t.Parallel()
	// arguments: normalized form and verdict; exit 1 when one fails
	code, out, _ := arkhe(t, "", "", "ark", "check", "ark:/13030/xf93gt2q", "https://n2t.net/ark:/77913/r7-2t0f", "ark:/13030/xf93gt2c")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, out)
	}
	want := "ark:13030/xf93gt2q\tok\nark:77913/r72t0f\tok\nark:13030/xf93gt2c\tFAIL"
	if !strings.HasPrefix(out, want) {
		t.Errorf("output:\n%s\nwant prefix:\n%s", out, want)
	}
	// stdin, zone name_only
	code, out, _ = arkhe(t, "", "ark:/12148/bpt6k65358454\n", "ark", "check", "--check-zone", "name_only")
	if code != 0 || out != "ark:12148/bpt6k65358454\tok\n" {
		t.Errorf("name_only: %d %q", code, out)
	}
	// the real EZID link-checker file: header, ARKs with and without check characters, DOIs
	shared := fixtures.SharedDir(t)
	code, out, errOut := arkhe(t, "", "", "ark", "check", "-f", filepath.Join(shared, "data/ezid/linkchecker_test_id_url_v0.tsv"))
	if code != 1 || !strings.Contains(errOut, "46 verified, 19 failed") {
		t.Errorf("linkchecker file: exit %d, stderr %q", code, errOut)
	}
	if !strings.Contains(out, "ark:38305/f12j68s8\tok") || !strings.Contains(out, "doi:10.13022/M36Q0G\tFAIL") {
		t.Errorf("linkchecker output lacks expected lines:\n%s", out)
	}
	code, _, errOut = arkhe(t, "", "", "ark", "check", "--check-zone", "somewhere", "ark:/13030/xf93gt2q")
	if code != 2 {
		t.Errorf("bad zone: exit %d %s", code, errOut)
	}
}

// TestClientDisableStopsMinting: a disabled client mints nothing more (the command refuses before
// anything is written; the database's reach check refuses it too: loader's mint tests deactivate a
// client in plain SQL mid-run), its ARKs stay, the change is an audit event; enable lets it mint
// again.
func TestClientDisableStopsMinting(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	if code, _, errOut := arkhe(t, url, "", "init", "--test-registration"); code != 0 {
		t.Fatalf("init: %s", errOut)
	}
	dir := t.TempDir()
	manifest := func(name string, seed uint64) string {
		p := filepath.Join(dir, name)
		if _, err := fixtures.CreateManifestCSV(p, fixtures.ManifestConfig{Rows: 5, Seed: seed, Prefix: name + "-"}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first, second := manifest("first.csv", 1), manifest("second.csv", 2)
	if code, out, errOut := arkhe(t, url, "", "mint", "--client", "test-minter", "--out", filepath.Join(dir, "m1.csv"), first); code != 0 || !strings.Contains(out, "minted      5") {
		t.Fatalf("mint before disable: %d\n%s\n%s", code, out, errOut)
	}
	for _, s := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"client", "disable", "test-minter"}, 0, "client test-minter disabled"},
		{[]string{"client", "disable", "test-minter"}, 0, "client test-minter was disabled already"},
		{[]string{"client", "disable", "nobody"}, 2, ""},
		{[]string{"client", "disable"}, 2, ""},
	} {
		if code, out, errOut := arkhe(t, url, "", s.args...); code != s.code || !strings.Contains(out, s.want) {
			t.Fatalf("arkhe %s: exit %d (want %d)\n%s\n%s", strings.Join(s.args, " "), code, s.code, out, errOut)
		}
	}
	code, out, errOut := arkhe(t, url, "", "mint", "--client", "test-minter", "--out", filepath.Join(dir, "m2.csv"), second)
	if code == 0 {
		t.Fatalf("a disabled client minted: %d\n%s\n%s", code, out, errOut)
	}
	t.Logf("the disabled client's run: exit %d\n%s%s", code, out, errOut)
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	count := func(sql string) int64 {
		t.Helper()
		var n int64
		if err := conn.QueryRow(t.Context(), sql).Scan(&n); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return n
	}
	if n := count(`select count(*) from ark`); n != 5 {
		t.Errorf("%d ARKs after the disabled client's run, want the 5 it minted before", n)
	}
	if n := count(`select count(*) from audit_event where action = 'client.disable' and target = 'test-minter' and client_id is null`); n != 1 {
		t.Errorf("%d client.disable audit events, want 1 (the no-op disable records none)", n)
	}
	if code, out, errOut := arkhe(t, url, "", "client", "enable", "test-minter"); code != 0 || !strings.Contains(out, "client test-minter enabled") {
		t.Fatalf("enable: %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := arkhe(t, url, "", "mint", "--client", "test-minter", "--out", filepath.Join(dir, "m3.csv"), second); code != 0 || !strings.Contains(out, "minted      5") {
		t.Fatalf("mint after enable: %d\n%s\n%s", code, out, errOut)
	}
	if n := count(`select count(*) from ark`); n != 10 {
		t.Errorf("%d ARKs after enable, want 10", n)
	}
}

// TestInitDistributed: `arkhe init` lays a new ledger out for Citus on a database with the
// citus extension (detected, or insisted on with --distributed), and --distributed is refused,
// changing nothing, where the extension is missing.
func TestInitDistributed(t *testing.T) {
	t.Run("single", func(t *testing.T) {
		url := pgtest.NewDB(t, pgtest.KindSingle, pgtest.Schema{Name: "single-empty"}).URL
		code, out, errOut := arkhe(t, url, "", "init", "--distributed")
		if code != 2 || !strings.Contains(errOut, "citus extension is not installed") {
			t.Fatalf("init --distributed without Citus: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		if code, out, _ := arkhe(t, url, "", "init"); code != 0 || !strings.Contains(out, "applied migration 0001_ledger.sql (layout single)") {
			t.Errorf("init: exit %d, %q", code, out)
		}
		// a layout never changes
		if code, _, errOut := arkhe(t, url, "", "init", "--distributed"); code != 2 || !strings.Contains(errOut, `created with layout "single"`) {
			t.Errorf("init --distributed on a single ledger: exit %d, stderr %q", code, errOut)
		}
	})
	for name, args := range map[string][]string{"citus detected": {"init"}, "citus insisted": {"init", "--distributed"}} {
		t.Run(name, func(t *testing.T) {
			// a database with the citus extension and its nodes registered, and no ledger yet
			db := pgtest.NewDB(t, pgtest.KindCitus, pgtest.Schema{Name: "citus-empty"})
			code, out, errOut := arkhe(t, db.URL, "", args...)
			if code != 0 || !strings.Contains(out, "applied migration 0001_ledger.sql (layout citus)") {
				t.Fatalf("arkhe %s on Citus: exit %d, stdout %q, stderr %q", strings.Join(args, " "), code, out, errOut)
			}
			var n int
			if err := db.Pool.QueryRow(context.Background(), `select count(*) from pg_dist_partition
				where logicalrelid in ('ark'::regclass, 'ark_change'::regclass, 'receipt'::regclass) and partmethod = 'h'`).Scan(&n); err != nil || n != 3 {
				t.Errorf("after arkhe %s: %d hash-distributed ledger tables (%v), want 3", strings.Join(args, " "), n, err)
			}
			code, out, errOut = arkhe(t, db.URL, "", "init", "--distributed", "--test-registration")
			if code != 0 || !strings.Contains(out, "layout citus); nothing changed") || !strings.Contains(out, "registered test NAAN 99999") {
				t.Errorf("second init: exit %d, stdout %q, stderr %q", code, out, errOut)
			}
		})
	}
}

// TestDBStopSaysWhenNothingRan: `arkhe db stop` where no embedded cluster runs says so (exit 0)
// rather than claiming to have stopped one.
func TestDBStopSaysWhenNothingRan(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out, errs := runArkhe(t, "--data-dir", dir, "db", "stop")
	if code != 0 || out != "embedded cluster in "+dir+" was not running\n" {
		t.Errorf("exit %d, out %q, err %q", code, out, errs)
	}
}

// TestRegistrationBlockTwice: a registration script run a second time (under set -e) goes
// through: each add of what is registered as asked exits 0 and says it was registered already;
// an add that asks other values exits 2 naming each differing field, and changes nothing.
func TestRegistrationBlockTwice(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	block := [][]string{
		{"naan", "add", "12345", "--name", "Example Library"},
		{"manager", "add", "Digitization Unit", "--naan", "12345", "--commitment", "Permanent: Stable Content", "--quota", "2000000"},
		{"shoulder", "add", "/bc7", "--naan", "12345", "--manager", "Digitization Unit", "--default"},
		{"client", "add", "scanner-1", "--naan", "12345", "--manager", "Digitization Unit", "--scope", "ark:mint", "--scope", "ark:update", "--scope", "ark:tombstone"},
	}
	for round, want := range []string{" registered", " was registered already (unchanged)\n"} {
		for _, args := range block {
			code, out, errOut := arkhe(t, url, "", args...)
			if code != 0 || !strings.Contains(out, want) || round == 0 && strings.Contains(out, "already") || errOut != "" {
				t.Errorf("round %d: arkhe %s: exit %d, stdout %q (want %q)\n%s", round+1, strings.Join(args, " "), code, out, want, errOut)
			}
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"naan", "add", "12345", "--name", "Another Library"},
			`arkhe: NAAN 12345: is registered already with name "Example Library" (asked "Another Library"); nothing changed` + "\n"},
		{[]string{"shoulder", "add", "/bc7", "--naan", "12345", "--status", "reserved"},
			`arkhe: shoulder /bc7 of NAAN 12345: is registered already with status "active" (asked "reserved"); nothing changed`},
		{[]string{"client", "add", "scanner-1", "--naan", "12345", "--manager", "Digitization Unit"},
			"arkhe: client scanner-1: is registered already with scopes ark:mint ark:tombstone ark:update (asked ark:mint); nothing changed"},
	} {
		code, out, errOut := arkhe(t, url, "", c.args...)
		if code != 2 || !strings.HasPrefix(errOut, c.want) || out != "" {
			t.Errorf("arkhe %s: exit %d (want 2)\nstderr %q\nwant   %q", strings.Join(c.args, " "), code, errOut, c.want)
		}
	}
	code, out, _ := arkhe(t, url, "", "client", "list")
	if code != 0 || !strings.Contains(out, "ark:mint ark:update ark:tombstone") {
		t.Errorf("client list after the refusal: exit %d\n%s", code, out)
	}
}
