package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
)

// TestRefusedMintExitsTwo: a refused mint exits 2 (could not run) with the rule on stderr and
// nothing minted, whatever the refusal (unknown or out-of-reach client, a shoulder that is
// unregistered, reserved or retired, the daily quota used up) and whether it is refused
// before reading (the client has no receipts) or after (every row needed a new mint). A run
// that replayed rows is done: exit 0 when every row replayed, 1 when the rest were refused.
func TestRefusedMintExitsTwo(t *testing.T) {
	url := pgtest.URL(t)
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	arks := func() int64 {
		t.Helper()
		var n int64
		if err := conn.QueryRow(t.Context(), `select count(*) from ark`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	dir := t.TempDir()
	t.Chdir(dir)
	manifest := func(name string, seed uint64) string {
		t.Helper()
		if _, err := fixtures.CreateManifestCSV(name, fixtures.ManifestConfig{Rows: 5, Seed: seed, Prefix: name + "-"}); err != nil {
			t.Fatal(err)
		}
		return name
	}
	seen, fresh := manifest("seen.csv", 1), manifest("fresh.csv", 2)
	const manager = "arkhe test manager"
	for _, args := range [][]string{
		{"init", "--test-registration"}, // client test-minter, shoulder /x9
		{"shoulder", "add", "--naan", "99999", "--manager", manager, "--status", "reserved", "/b5"},
		{"shoulder", "add", "--naan", "99999", "--manager", manager, "/k7"},
		{"shoulder", "retire", "--naan", "99999", "/k7"},
		{"client", "add", "--naan", "99999", "--manager", manager, "newcomer"},
		{"manager", "add", "--naan", "99999", "--quota", "5", "Quota Unit"},
		{"shoulder", "add", "--naan", "99999", "--manager", "Quota Unit", "--default", "/m3"},
		{"client", "add", "--naan", "99999", "--manager", "Quota Unit", "quota-minter"},
		{"client", "add", "--naan", "99999", "--manager", "Quota Unit", "quota-newcomer"},
		{"mint", "--client", "test-minter", "-o", "seen.map.csv", seen},   // test-minter has receipts
		{"mint", "--client", "quota-minter", "-o", "quota.map.csv", seen}, // the quota of 5 is used up
	} {
		if code, out, errOut := arkhe(t, url, "", args...); code != 0 {
			t.Fatalf("arkhe %s: exit %d\n%s\n%s", strings.Join(args, " "), code, out, errOut)
		}
	}
	before := arks()
	if before != 10 {
		t.Fatalf("%d ARKs after the set-up, want 10", before)
	}

	for _, c := range []struct {
		name, client, shoulder, rule string
		read                         bool // refused after reading: the client has receipts
	}{
		{"unknown client", "nobody", "", "the client is not registered", false},
		{"reserved, no receipts", "newcomer", "/b5", "the shoulder is reserved", false},
		{"retired, no receipts", "newcomer", "/k7", "the shoulder is retired", false},
		{"unregistered, no receipts", "newcomer", "/q1", "the shoulder is not registered", false},
		{"out of reach, no receipts", "newcomer", "/m3", "not one of the client's manager's shoulders", false},
		{"quota, no receipts", "quota-newcomer", "", "daily quota of 5 new ARKs", false},
		{"reserved, with receipts", "test-minter", "/b5", "the shoulder is reserved", true},
		{"retired, with receipts", "test-minter", "/k7", "the shoulder is retired", true},
		{"unregistered, with receipts", "test-minter", "/q1", "the shoulder is not registered", true},
		{"out of reach, with receipts", "test-minter", "/m3", "not one of the client's manager's shoulders", true},
		{"quota, with receipts", "quota-minter", "", "daily quota of 5 new ARKs", true},
	} {
		args := []string{"mint", "--client", c.client, "-o", "refused.map.csv", "--rejects", "refused.rejects.csv", fresh}
		if c.shoulder != "" {
			args = append(args, "--shoulder", c.shoulder)
		}
		code, out, errOut := arkhe(t, url, "", args...)
		if code != 2 || !strings.Contains(errOut, "mint refused for client") || !strings.Contains(errOut, c.rule) {
			t.Errorf("%s: exit %d (want 2), stderr %q (want the rule %q)\n%s", c.name, code, errOut, c.rule, out)
		}
		if c.read && (!strings.Contains(out, "arkhe mint: refused: nothing minted or replayed") || !strings.Contains(out, "rejected    5")) {
			t.Errorf("%s: summary:\n%s", c.name, out)
		}
		if n := arks(); n != before {
			t.Errorf("%s: %d ARKs, want %d: a refused mint minted", c.name, n, before)
		}
		for _, f := range []string{"refused.map.csv", "refused.rejects.csv"} {
			os.Remove(filepath.Join(dir, f))
		}
	}

	// replays are done whatever the shoulder: all replayed exits 0, replayed and refused exits 1
	code, out, errOut := arkhe(t, url, "", "mint", "--client", "test-minter", "--shoulder", "/k7", "-o", "replay.map.csv", seen)
	if code != 0 || !strings.Contains(out, "replayed    5") {
		t.Errorf("replay into a retired shoulder: exit %d (want 0)\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = arkhe(t, url, "", "mint", "--client", "test-minter", "--shoulder", "/b5", "-o", "mixed.map.csv", seen, fresh)
	if code != 1 || !strings.Contains(out, "replayed    5") || !strings.Contains(out, "rejected    5") || !strings.Contains(out, "done with rejects") {
		t.Errorf("replays and refused rows: exit %d (want 1)\n%s\n%s", code, out, errOut)
	}
	if n := arks(); n != before {
		t.Errorf("%d ARKs after replays, want %d", n, before)
	}
}
