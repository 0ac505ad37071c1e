package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
)

// TestCommandsRefuseEmptyDatabase: only init creates the schema; every other command refuses a
// database without the ledger, names `arkhe init`, and leaves the database empty.
func TestCommandsRefuseEmptyDatabase(t *testing.T) {
	db := pgtest.NewDB(t, pgtest.KindSingle, pgtest.Schema{Name: "empty_v1"})
	dir := t.TempDir()
	in := filepath.Join(dir, "objects.csv")
	if _, err := fixtures.CreateManifestCSV(in, fixtures.ManifestConfig{Rows: 3, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"mint", "--client", "c1", "--out", filepath.Join(dir, "m.csv"), in},
		{"naan", "list"},
		{"naan", "add", "12345"},
		{"client", "key", "list"},
		{"verify", "--out", filepath.Join(dir, "f.jsonl")},
		{"ark", "show", "ark:12345/x9abc"},
		{"import", in},
	} {
		code, out, errOut := arkhe(t, db.URL, "", args...)
		if code != 2 || !strings.Contains(errOut, "this database holds no arkhe ledger; create one with `arkhe init`") {
			t.Errorf("arkhe %s on an empty database: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
	}
	var n int
	if err := db.Pool.QueryRow(context.Background(), `select count(*) from pg_class where relnamespace = 'public'::regnamespace`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the refused commands left %d relations (%v)", n, err)
	}
	if code, out, errOut := arkhe(t, db.URL, "", "init"); code != 0 || !strings.Contains(out, "applied migration 0001_ledger.sql") {
		t.Fatalf("init: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := arkhe(t, db.URL, "", "naan", "list"); code != 0 {
		t.Errorf("naan list after init: exit %d\n%s%s", code, out, errOut)
	}
}

// TestCommandsUnderLeastRoles: `init --roles` creates the roles; each command works under its
// least role (registration as the operator, mint, repoint, tombstone and import as a writer
// bound to its client, verify and report as the auditor, init as the owner) and is refused
// under another; with --require-keys a writing command needs the client's key.
func TestCommandsUnderLeastRoles(t *testing.T) {
	su := pgtest.URL(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, su)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var db string
	if err := conn.QueryRow(ctx, `select current_database()`).Scan(&db); err != nil {
		t.Fatal(err)
	}
	prefix := db + "_"
	var logins []string
	t.Cleanup(func() { // before pgtest drops the database; kept with it when the test fails
		if t.Failed() {
			return
		}
		c, err := pgx.Connect(ctx, su)
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close(ctx)
		all := []string{}
		for _, r := range append([]string{"owner", "operator", "writer", "auditor", "resolver"}, logins...) {
			all = append(all, pgx.Identifier{prefix + r}.Sanitize())
		}
		for _, q := range []string{"reassign owned by " + all[0] + " to current_user", "drop owned by " + strings.Join(all, ", "), "drop role " + strings.Join(all, ", ")} {
			if _, err := c.Exec(ctx, q); err != nil {
				t.Errorf("%s: %v", q, err)
				return
			}
		}
	})
	code, out, errOut := arkhe(t, su, "", "init", "--roles", "--role-prefix", prefix)
	if code != 0 || !strings.Contains(out, prefix+"writer") || !strings.Contains(out, "created, granted") {
		t.Fatalf("init --roles: exit %d\n%s%s", code, out, errOut)
	}
	as := func(name, group string) string {
		t.Helper()
		role := prefix + name
		if _, err := conn.Exec(ctx, "create role "+pgx.Identifier{role}.Sanitize()+" login in role "+pgx.Identifier{prefix + group}.Sanitize()); err != nil {
			t.Fatal(err)
		}
		logins = append(logins, name)
		u, err := pgtest.AsRole(su, role)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	op, w, w2, au, own := as("op", "operator"), as("w", "writer"), as("w2", "writer"), as("au", "auditor"), as("own", "owner")
	dir := t.TempDir()
	t.Chdir(dir)
	in := filepath.Join(dir, "objects.csv")
	if _, err := fixtures.CreateManifestCSV(in, fixtures.ManifestConfig{Rows: 4, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.csv")
	if _, err := fixtures.CreateManifestCSV(other, fixtures.ManifestConfig{Rows: 2, Seed: 4, Prefix: "other-"}); err != nil {
		t.Fatal(err)
	}
	var dump bytes.Buffer
	// 22 records: the 22nd is an ARK of the test NAAN, which the import leaves out (and records)
	if err := fixtures.ArkletJSON(&dump, 22, 5); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("dump.json", dump.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("baseline.json", []byte(`{"format": "arkhe-verify-baseline/1", "at": "2026-12-03T02:00:04Z", "arks": 4,
		"high_water": 1, "newest_ark": "", "shoulders": {"99999/x9": {"arks": 4, "draws": 4}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		who, url string
		args     []string
		code     int
		want     string // in stdout, or in stderr when code is 2
	}{
		// the operator registers; the writer and auditor may not
		{"operator", op, []string{"naan", "add", "99999", "--name", "test"}, 0, "registered"},
		{"writer", w, []string{"naan", "add", "12345"}, 2, "naan add: this needs the ledger's operator role " + prefix + "operator, and the database role " + prefix + "w is not a member of it; grant it (as a superuser): grant " + prefix + "operator to " + prefix + "w"},
		{"operator", op, []string{"manager", "add", "--naan", "99999", "m1"}, 0, "registered"},
		{"operator", op, []string{"shoulder", "add", "--naan", "99999", "--manager", "m1", "--default", "/x9"}, 0, "registered"},
		{"operator", op, []string{"client", "add", "--naan", "99999", "--manager", "m1", "--scope", "ark:mint", "--scope", "ark:update",
			"--scope", "ark:tombstone", "--scope", "ark:import", "--db-role", prefix + "w", "svc"}, 0, "client svc registered"},
		{"operator", op, []string{"client", "add", "--naan", "99999", "--manager", "m1", "--db-role", prefix + "op", "elsewhere"}, 0, "registered"},
		{"auditor", au, []string{"client", "add", "--naan", "99999", "--manager", "m1", "sneaky"}, 2, "needs the ledger's operator role"},
		{"operator", op, []string{"client", "list"}, 0, prefix + "w"},
		// the writer mints, repoints, tombstones and imports as the client bound to it
		{"writer", w, []string{"mint", "--client", "svc", "--out", "map.csv", in}, 0, "minted      4"},
		{"writer", w, []string{"mint", "--client", "elsewhere", "--out", "map2.csv", in}, 2, "bound to database role " + prefix + "op"},
		{"auditor", au, []string{"mint", "--client", "svc", "--out", "map3.csv", other}, 2, "mint: this needs the ledger's writer role " + prefix + "writer"},
		{"writer", w, []string{"import", "--client", "svc", "dump.json"}, 1, "imported"},
		// a recovery from mint maps is the writer's; raising the counters to a baseline file the
		// operator's or the owner's
		{"writer", w, []string{"import", "--input-format", "mint-map", "--client", "svc", "map.csv"}, 0, "present      4 "},
		{"writer", w, []string{"import", "--input-format", "mint-map", "--client", "svc", "--baseline", "baseline.json", "map.csv"}, 2,
			"raising the ledger's counters (arkhe_raise_ark_seq) is the operator's or the owner's"},
		// adopting a shoulder the import created is registration: the operator's
		{"writer", w, []string{"shoulder", "adopt", "/fk4", "--naan", "99999", "--manager", "m1"}, 2, "needs the ledger's operator role"},
		{"operator", op, []string{"shoulder", "adopt", "/fk4", "--naan", "99999", "--manager", "m1"}, 2, "arkhe import --include-test"},
		// the auditor audits and reports
		{"auditor", au, []string{"verify", "--out", "findings.jsonl"}, 0, "clean"},
		{"auditor", au, []string{"report", "arks", "--out", "arks.csv"}, 0, ""},
		{"auditor", au, []string{"sizing"}, 0, "ark"},
		{"auditor", au, []string{"client", "key", "list"}, 0, "PREFIX"},
		// the owner runs init; a writer cannot
		{"owner", own, []string{"init"}, 0, "nothing changed"},
		{"writer", w, []string{"init"}, 2, "owner role"},
	} {
		code, out, errOut := arkhe(t, s.url, "", s.args...)
		where := out
		if s.code == 2 {
			where = errOut
		}
		if code != s.code || !strings.Contains(where, s.want) {
			t.Errorf("as %s: arkhe %s: exit %d (want %d, %q)\n%s%s", s.who, strings.Join(s.args, " "), code, s.code, s.want, out, errOut)
		}
	}
	// a login without the role a command needs is refused before any work, the role named with
	// the grant that gives it: the audit appends nothing and writes no findings; a report
	// writes no file
	if _, err := conn.Exec(ctx, "create role "+pgx.Identifier{prefix + "none"}.Sanitize()+" login"); err != nil {
		t.Fatal(err)
	}
	logins = append(logins, "none")
	none, err := pgtest.AsRole(su, prefix+"none")
	if err != nil {
		t.Fatal(err)
	}
	events := func() int {
		t.Helper()
		var n int
		if err := conn.QueryRow(ctx, `select (select count(*) from audit_event) + (select count(*) from audit_summary)`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := events()
	for _, s := range []struct {
		url, file string
		args      []string
		want      string
	}{
		{w, "refused.jsonl", []string{"verify", "--out", "refused.jsonl"}, "arkhe: verify: this needs the ledger's auditor role " + prefix +
			"auditor, and the database role " + prefix + "w is not a member of it; grant it (as a superuser): grant " + prefix + "auditor to " + prefix + "w\n"},
		{none, "refused.csv", []string{"report", "arks", "--out", "refused.csv"}, "arkhe: report arks: this needs one of the ledger's roles " +
			prefix + "operator, " + prefix + "writer, " + prefix + "auditor, " + prefix + "owner (operator, writer, auditor, owner), and the database role " +
			prefix + "none is a member of none; grant one (as a superuser), e.g.: grant " + prefix + "owner to " + prefix + "none\n"},
		{none, "", []string{"naan", "list"}, "naan list: this needs one of the ledger's roles"},
	} {
		code, out, errOut := arkhe(t, s.url, "", s.args...)
		if code != 2 || errOut != s.want && !strings.HasPrefix(errOut, "arkhe: "+s.want) || out != "" {
			t.Errorf("arkhe %s without its role: exit %d (want 2)\nstderr %q\nwant   %q\n%s", strings.Join(s.args, " "), code, errOut, s.want, out)
		}
		if s.file != "" {
			if _, err := os.Stat(s.file); !os.IsNotExist(err) {
				t.Errorf("arkhe %s without its role wrote %s (%v)", strings.Join(s.args, " "), s.file, err)
			}
		}
	}
	if n := events(); n != before {
		t.Errorf("the refused commands appended %d audit records", n-before)
	}

	arks := readMintMap(t, "map.csv")
	if len(arks) != 5 {
		t.Fatalf("mint map: %q", arks)
	}
	one := arks[1][1]
	for _, s := range []struct {
		url  string
		args []string
		code int
		want string
	}{
		{w, []string{"ark", "repoint", "--client", "svc", one, "https://example.org/moved"}, 0, "now points to"},
		{w2, []string{"ark", "repoint", "--client", "svc", one, "https://example.org/again"}, 2, "bound to database role " + prefix + "w"},
		{op, []string{"ark", "repoint", "--client", "svc", one, "https://example.org/again"}, 2, "ark repoint: this needs the ledger's writer role"},
		{w, []string{"ark", "tombstone", "--client", "svc", "--reason", "withdrawn", one}, 0, "tombstoned"},
	} {
		if code, out, errOut := arkhe(t, s.url, "", s.args...); code != s.code || !strings.Contains(out+errOut, s.want) {
			t.Errorf("arkhe %s: exit %d (want %d, %q)\n%s%s", strings.Join(s.args, " "), code, s.code, s.want, out, errOut)
		}
	}

	// keys: the operator issues one; once the ledger requires keys, the writer needs it
	code, key, errOut := arkhe(t, op, "", "client", "key", "create", "svc")
	key = strings.TrimSpace(key)
	if code != 0 || !strings.HasPrefix(key, "arkhe_") || !strings.Contains(errOut, "shown this once") {
		t.Fatalf("client key create: exit %d\n%s\n%s", code, key, errOut)
	}
	if code, out, errOut := arkhe(t, su, "", "init", "--require-keys"); code != 0 || !strings.Contains(out, "need the client's API key") {
		t.Fatalf("init --require-keys: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := arkhe(t, w, "", "mint", "--client", "svc", "--out", "map4.csv", in); code != 2 || !strings.Contains(errOut, "--api-key-file") {
		t.Errorf("mint without the key on a ledger that requires keys: exit %d\n%s", code, errOut)
	}
	if err := os.WriteFile("svc.key", []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("wrong.key", []byte(key[:len(key)-4]+"aaaa\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := arkhe(t, w, "", "--api-key-file", "wrong.key", "mint", "--client", "svc", "--out", "map4.csv", in); code != 2 || !strings.Contains(errOut, "is wrong") || strings.Contains(errOut, key[7:]) {
		t.Errorf("mint with a wrong key: exit %d\n%s", code, errOut)
	}
	if code, out, errOut := arkhe(t, w, "", "mint", "--api-key-file", "svc.key", "--client", "svc", "--out", "map4.csv", in); code != 0 || !strings.Contains(out, "replayed    4") {
		t.Errorf("mint with the key: exit %d\n%s%s", code, out, errOut)
	}
	// the key in ARKHE_API_KEY: new ARKs and a repoint, which the database accepts only from a
	// session that proved the key
	t.Setenv("ARKHE_API_KEY", key)
	if code, out, errOut := arkhe(t, w, "", "mint", "--client", "svc", "--out", "map6.csv", other); code != 0 || !strings.Contains(out, "minted      2") {
		t.Errorf("mint with ARKHE_API_KEY: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := arkhe(t, w, "", "ark", "repoint", "--client", "svc", arks[2][1], "https://example.org/keyed"); code != 0 || !strings.Contains(out, "now points to") {
		t.Errorf("ark repoint with ARKHE_API_KEY: exit %d\n%s%s", code, out, errOut)
	}
	t.Setenv("ARKHE_API_KEY", "")
	code, out, errOut = arkhe(t, op, "", "client", "key", "list", "svc")
	if code != 0 || !strings.Contains(out, key[6:18]) || !strings.Contains(out, "m=65536,t=2,p=2") || strings.Contains(out, key[19:]) {
		t.Errorf("client key list: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, _ := arkhe(t, op, "", "client", "key", "revoke", key[6:18]); code != 0 || !strings.Contains(out, "revoked") {
		t.Errorf("client key revoke: exit %d\n%s", code, out)
	}
	if code, _, errOut := arkhe(t, w, "", "mint", "--api-key-file", "svc.key", "--client", "svc", "--out", "map5.csv", in); code != 2 || !strings.Contains(errOut, "was revoked") {
		t.Errorf("mint with a revoked key: exit %d\n%s", code, errOut)
	}

	// every change left its trace, with the actor's database role
	for _, c := range []struct{ action, role string }{
		{"naan.add", prefix + "op"}, {"client.add", prefix + "op"}, {"mint", prefix + "w"}, {"import", prefix + "w"},
		{"ark.repoint", prefix + "w"}, {"ark.tombstone", prefix + "w"}, {"verify", prefix + "au"}, {"key.create", prefix + "op"},
		{"key.fail", prefix + "w"}, {"key.revoke", prefix + "op"}, {"ledger.roles", "postgres"}, {"ledger.require_keys", "postgres"},
	} {
		var n int
		if err := conn.QueryRow(ctx, `select count(*) from audit_event where action = $1 and db_role = $2`, c.action, c.role).Scan(&n); err != nil || n == 0 {
			t.Errorf("no %s event by %s (%v)", c.action, c.role, err)
		}
	}
}
