package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
)

// TestUpdateCommand: a bulk change through the CLI, its re-run, a reject (exit 1), and verify
// clean after.
func TestUpdateCommand(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	if code, out, errOut := arkhe(t, url, "", "init", "--test-registration"); code != 0 {
		t.Fatalf("init: %d %s %s", code, out, errOut)
	}
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	dir := t.TempDir()
	src := filepath.Join(dir, "objects.csv")
	if err := os.WriteFile(src, []byte("request_id,url,what\nacc-1,https://old.example.org/obj/1,One\nacc-2,https://old.example.org/obj/2,Two\nacc-3,https://old.example.org/obj/3,Three\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mintMap := filepath.Join(dir, "objects.mintmap.csv")
	if code, out, errOut := arkhe(t, url, "", "mint", "--client", "test-minter", "-o", mintMap, src); code != 0 {
		t.Fatalf("mint: %d %s %s", code, out, errOut)
	}
	mm, err := os.ReadFile(mintMap)
	if err != nil {
		t.Fatal(err)
	}
	first := strings.Split(strings.Split(string(mm), "\n")[1], ",")[1] // the ARK of acc-1
	man := filepath.Join(dir, "move.csv")
	if err := os.WriteFile(man, []byte("request_id,url\nacc-1,https://new.example.org/objects/1\nacc-2,https://new.example.org/objects/2\nacc-3,https://new.example.org/objects/3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("ark,url\n"+first+",https://new.example.org/objects/1\nark:/99999/x9zz,https://new.example.org/objects/zz\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := filepath.Join(dir, "move.changes.csv")
	steps := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"update", "--client", "test-minter", "--dry-run", "-o", res, man}, 0, "changed 3,"},
		{[]string{"update", "--client", "test-minter", "-o", res, man}, 0, "changed 3,"},
		{[]string{"update", "--client", "test-minter", "-o", res, man}, 0, "applied earlier 3,"},
		{[]string{"update", "--client", "test-minter", "-o", filepath.Join(dir, "bad.changes.csv"), bad}, 1, "unchanged 0, applied earlier 1, rejected 1"}, // the same change named by ARK: the same derived change request ID,
		{[]string{"update", "--client", "test-minter", "--map", "nope=x", man}, 2, ""},
		{[]string{"verify"}, 0, ""},
	}
	for _, s := range steps {
		code, out, errOut := arkhe(t, url, "", s.args...)
		if code != s.code || !strings.Contains(out, s.want) {
			t.Fatalf("arkhe %s: exit %d (want %d)\nstdout: %s\nstderr: %s", strings.Join(s.args, " "), code, s.code, out, errOut)
		}
	}
	var n int
	if err := conn.QueryRow(ctx, `select count(*) from ark_change where after_url like 'https://new.example.org/%'`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("%d ARK_CHANGE rows to the new host, want 3 (%v)", n, err)
	}
	rej, err := os.ReadFile(filepath.Join(dir, "bad.rejects.csv"))
	if err != nil || !strings.Contains(string(rej), "ARK 99999/x9zz is not in the ledger") {
		t.Fatalf("reject file: %s %v", rej, err)
	}
}
