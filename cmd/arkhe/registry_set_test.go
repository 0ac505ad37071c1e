package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
)

// step is one CLI run and what it must answer: exit code, stdout (exact when out is set, else
// containing has) and stderr containing errHas.
type step struct {
	args        []string
	code        int
	out, has    string
	errHas      string
	description string
}

func runSteps(t *testing.T, url string, steps []step) {
	t.Helper()
	for _, s := range steps {
		code, out, errOut := arkhe(t, url, "", s.args...)
		ok := code == s.code && strings.Contains(out, s.has) && strings.Contains(errOut, s.errHas) && (s.out == "" || out == s.out)
		if !ok {
			t.Fatalf("%s: arkhe %s: exit %d (want %d)\nstdout: %q\nstderr: %q", s.description, strings.Join(s.args, " "), code, s.code, out, errOut)
		}
	}
}

// scalar reads one number from the test's database.
func scalar(t *testing.T, url, sql string) int64 {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	var n int64
	if err := conn.QueryRow(t.Context(), sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// TestManagerAddChangesNothing: `manager add` of a manager that exists changes nothing: with
// the values it holds it says so (exit 0); with others (a default shoulder, a quota, a
// commitment) it names them and refuses (exit 2), and `manager list` shows what was there.
func TestManagerAddChangesNothing(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	runSteps(t, url, []step{
		{args: []string{"naan", "add", "99999", "--name", "test"}},
		{args: []string{"manager", "add", "--naan", "99999", "--commitment", "Not Guaranteed", "--quota", "1000", "Library"}},
		{args: []string{"shoulder", "add", "--naan", "99999", "--manager", "Library", "--default", "/x9"}},
		{args: []string{"shoulder", "add", "--naan", "99999", "--manager", "Library", "/k7"}},
		{args: []string{"manager", "add", "--naan", "99999", "--default-shoulder", "/k7", "Library"}, code: 2,
			errHas:      `manager "Library" of NAAN 99999: is registered already with default shoulder /x9 (asked /k7); nothing changed (` + "`manager set`" + ` changes a registration)`,
			description: "a default shoulder on an existing manager"},
		{args: []string{"manager", "add", "--naan", "99999", "--quota", "2000", "--commitment", "Permanent: Stable Content", "Library"}, code: 2,
			errHas: "is registered already with commitment Not Guaranteed (asked Permanent: Stable Content), quota 1000 (asked 2000); nothing changed", description: "quota and commitment"},
		{args: []string{"manager", "add", "--naan", "99999", "--quota", "1000", "Library"},
			out: "manager \"Library\" of NAAN 99999 was registered already (unchanged)\n", description: "the values it holds"},
		{args: []string{"manager", "add", "--naan", "99999", "--default-shoulder", "/k7", "Newcomer"}, code: 2,
			errHas: "a new manager holds no shoulder yet", description: "a new manager with a default shoulder"},
		{args: []string{"manager", "list"}, has: "Library  Not Guaranteed  1000       /x9", description: "the list after the refusals"},
	})
	if n := scalar(t, url, `select count(*) from manager`); n != 1 {
		t.Errorf("%d managers, want 1 (the refused newcomer is not registered)", n)
	}
	if n := scalar(t, url, `select count(*) from audit_event where action = 'manager.set'`); n != 1 {
		t.Errorf("%d manager.set events, want 1 (shoulder add --default)", n)
	}
}

// TestManagerAndClientSet: `manager set` and `client set` print each change from what to what,
// say when nothing changed, and refuse a widening of a client's reach on a ledger without
// roles, naming it; `client add` of an existing client changes nothing.
func TestManagerAndClientSet(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	const lib = "manager \"Library\" of NAAN 99999"
	runSteps(t, url, []step{
		{args: []string{"naan", "add", "99999", "--name", "test"}},
		{args: []string{"manager", "add", "--naan", "99999", "--commitment", "Not Guaranteed", "--quota", "1000000", "Library"}},
		{args: []string{"shoulder", "add", "--naan", "99999", "--manager", "Library", "--default", "/x9"}},
		{args: []string{"shoulder", "add", "--naan", "99999", "--manager", "Library", "/k7"}},
		{args: []string{"manager", "set", "--naan", "99999", "--quota", "2000000", "Library"},
			out: lib + " changed:\n  quota: 1000000 -> 2000000\n"},
		{args: []string{"manager", "set", "--naan", "99999", "--quota", "2000000", "Library"},
			out: lib + " holds these values already; nothing changed\n"},
		{args: []string{"manager", "set", "--naan", "99999", "--default-shoulder", "/k7", "--commitment", "Permanent: Stable Content", "--quota", "0", "Library"},
			out: lib + " changed:\n  quota: 2000000 -> none\n  commitment: Not Guaranteed -> Permanent: Stable Content\n  default shoulder: /x9 -> /k7\n"},
		{args: []string{"manager", "set", "--naan", "99999", "--inactive", "Library"}, out: lib + " changed:\n  active: true -> false\n"},
		{args: []string{"manager", "set", "--naan", "99999", "--active", "Library"}, out: lib + " changed:\n  active: false -> true\n"},
		{args: []string{"manager", "set", "--naan", "99999", "--active", "--inactive", "Library"}, code: 2, errHas: "not both"},
		{args: []string{"manager", "set", "--naan", "99999", "Library"}, code: 2, errHas: "give what to change"},
		{args: []string{"manager", "set", "--naan", "99999", "--commitment", "forever", "Library"}, code: 2, errHas: "NLM ratings"},
		{args: []string{"client", "add", "--naan", "99999", "--manager", "Library", "--scope", "ark:mint", "--scope", "ark:update",
			"--scope", "ark:tombstone", "--expires", "2030-01-01", "scanner"}},
		{args: []string{"client", "set", "scanner", "--scopes", "ark:mint,ark:update", "--expires", "2029-06-30", "--shoulder", "/x9"},
			out: "client scanner changed:\n  scopes: ark:mint ark:update ark:tombstone -> ark:mint ark:update\n" +
				"  expires: 2030-01-01T00:00:00Z -> 2029-06-30T00:00:00Z\n  pinned shoulder: none -> /x9\n"},
		{args: []string{"client", "set", "scanner", "--scopes", "ark:update,ark:mint"}, out: "client scanner holds these values already; nothing changed\n"},
		{args: []string{"client", "set", "scanner", "--scopes", "ark:mint,ark:update,ark:read"}, code: 2,
			errHas: "client scanner: this widens the client's reach (scope ark:read added), which is the operator role's decision, and a ledger without roles has none"},
		{args: []string{"client", "set", "scanner", "--no-shoulder"}, code: 2, errHas: "(pin /x9 removed)"},
		{args: []string{"client", "set", "scanner", "--expires", "never"}, code: 2, errHas: "(expiry removed)"},
		{args: []string{"client", "set", "scanner", "--expires", "2031-01-01"}, code: 2, errHas: "(a later expiry)"},
		{args: []string{"client", "set", "scanner", "--inactive"}, out: "client scanner changed:\n  active: true -> false\n"},
		{args: []string{"client", "set", "scanner", "--shoulder", "/x9", "--no-shoulder"}, code: 2, errHas: "not both"},
		{args: []string{"client", "set", "scanner", "--scopes", "ark:fly"}, code: 2, errHas: `unknown scope "ark:fly"`},
		{args: []string{"client", "add", "--naan", "99999", "--manager", "Library", "--scope", "ark:read", "scanner"}, code: 2,
			errHas: "client scanner: is registered already with pinned shoulder \"/x9\" (asked none), scopes ark:mint ark:update (asked ark:read), expiry 2029-06-30T00:00:00Z (asked never); nothing changed"},
		// the same registration again is a no-op, exit 0; so is a disabled client's
		{args: []string{"client", "add", "--naan", "99999", "--manager", "Library", "--scope", "ark:update", "--scope", "ark:mint",
			"--shoulder", "/x9", "--expires", "2029-06-30", "scanner"}, out: "client scanner was registered already (unchanged)\n"},
		{args: []string{"client", "list"}, has: "scanner  99999  machine  manager    Library  /x9     ark:mint ark:update  false   2029-06-30T00:00:00Z"},
	})
	// one audit event per change: manager.set (shoulder add --default), 2 manager.set,
	// manager.disable, manager.enable; client.set and client.disable
	for action, want := range map[string]int64{"manager.set": 3, "manager.disable": 1, "manager.enable": 1, "client.set": 1, "client.disable": 1} {
		if n := scalar(t, url, `select count(*) from audit_event where action = '`+action+`'`); n != want {
			t.Errorf("%d %s events, want %d", n, action, want)
		}
	}
}

// TestManagerSucceedAndDepart: after `manager succeed`, the old manager's client mints nothing
// (exit 2), the successor's client repoints its ARK, and `manager list` shows the chain;
// `manager depart` leaves the ARKs to the NAAN's authority.
func TestManagerSucceedAndDepart(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	dir := t.TempDir()
	manifest := func(name string, seed uint64) string {
		p := filepath.Join(dir, name)
		if _, err := fixtures.CreateManifestCSV(p, fixtures.ManifestConfig{Rows: 3, Seed: seed, Prefix: name + "-"}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first, second := manifest("first.csv", 1), manifest("second.csv", 2)
	runSteps(t, url, []step{
		{args: []string{"naan", "add", "99999", "--name", "test"}},
		{args: []string{"manager", "add", "--naan", "99999", "Old Lab"}},
		{args: []string{"manager", "add", "--naan", "99999", "New Lab"}},
		{args: []string{"manager", "add", "--naan", "99999", "Gone Lab"}},
		{args: []string{"shoulder", "add", "--naan", "99999", "--manager", "Old Lab", "--default", "/x9"}},
		{args: []string{"client", "add", "--naan", "99999", "--manager", "Old Lab", "--scope", "ark:mint", "--scope", "ark:update", "old-scanner"}},
		{args: []string{"client", "add", "--naan", "99999", "--manager", "New Lab", "--scope", "ark:update", "--scope", "ark:tombstone", "new-editor"}},
		{args: []string{"mint", "--client", "old-scanner", "--out", filepath.Join(dir, "m1.csv"), first}, has: "minted      3"},
		{args: []string{"manager", "succeed", "--naan", "99999", "--by", "Old Lab", "Old Lab"}, code: 2, errHas: "a manager does not succeed itself"},
		{args: []string{"manager", "succeed", "--naan", "99999", "--by", "Nobody", "Old Lab"}, code: 2, errHas: `no manager "Nobody" in NAAN 99999`},
	})
	code, out, errOut := arkhe(t, url, "", "manager", "succeed", "--naan", "99999", "--by", "New Lab", "Old Lab")
	lines := strings.Split(out, "\n")
	want := []string{
		`manager "Old Lab" of NAAN 99999 succeeded by "New Lab":`,
		"  active: true -> false",
		"  default shoulder: /x9 -> none",
		"  departed: none -> ",
		"  succeeded by: none -> New Lab",
		"its shoulder /x9 keeps its ARKs and mints nothing until an active manager holds it",
		"its client old-scanner acts for nobody now: the ledger refuses its mints, imports, repoints and tombstones",
		`clients of "New Lab" with ark:update or ark:tombstone may repoint and tombstone its ARKs (and those of the managers it succeeded)`,
		"",
	}
	if code != 0 || len(lines) != len(want) {
		t.Fatalf("manager succeed: exit %d\n%s\n%s", code, out, errOut)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("manager succeed, line %d: %q, want %q", i+1, lines[i], w)
		}
	}
	minted := readMintMap(t, filepath.Join(dir, "m1.csv"))[1][1]
	runSteps(t, url, []step{
		{args: []string{"mint", "--client", "old-scanner", "--out", filepath.Join(dir, "m2.csv"), second}, code: 2,
			errHas: `the client acts for manager "Old Lab", which is no longer active`, description: "the old manager's client mints"},
		{args: []string{"ark", "repoint", minted, "https://example.org/moved", "--client", "old-scanner", "--reason", "late"}, code: 2,
			errHas: "acts for manager \"Old Lab\", which is no longer active", description: "the old manager's client repoints"},
		{args: []string{"ark", "repoint", minted, "https://example.org/moved", "--client", "new-editor", "--reason", "succession"},
			description: "the successor's client repoints"},
		{args: []string{"manager", "succeed", "--naan", "99999", "--by", "New Lab", "Old Lab"}, has: `was succeeded by "New Lab" already`},
		{args: []string{"manager", "succeed", "--naan", "99999", "--by", "Gone Lab", "Old Lab"}, code: 2, errHas: `was succeeded by "New Lab" at`},
		{args: []string{"manager", "depart", "--naan", "99999", "Gone Lab"}, has: "manager \"Gone Lab\" of NAAN 99999 departed:\n  active: true -> false\n  departed: none -> "},
		{args: []string{"manager", "depart", "--naan", "99999", "Gone Lab"}, has: "departed already"},
		{args: []string{"manager", "list"}, has: "Old Lab -> New Lab"},
		{args: []string{"manager", "list"}, has: "false   departed"},
	})
	if n := scalar(t, url, `select count(*) from ark`); n != 3 {
		t.Errorf("%d ARKs, want the 3 minted before the succession", n)
	}
	if n := scalar(t, url, `select count(*) from audit_event where action in ('manager.succeed', 'manager.depart')`); n != 2 {
		t.Errorf("%d succeed and depart events, want 2", n)
	}
}
