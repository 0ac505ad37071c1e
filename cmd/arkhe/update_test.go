package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/fixtures"
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

// TestUpdateKilledConcurrentThenVerify, on both layouts: 600 Tate artworks minted by
// accession number, then their move to a new host by `arkhe update` processes killed (SIGKILL)
// at moments drawn from a seeded source, each killed run followed by the same command, until one
// completes; then two processes at once with overlapping manifests (one in reverse order) to a
// third host. Every process that is not killed exits 0; each ARK has exactly one ARK_CHANGE row
// per move; the completing run accounts for every row as changed or applied earlier; and
// `arkhe verify` is clean after all of it.
func TestUpdateKilledConcurrentThenVerify(t *testing.T) {
	const rows = 600
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		url := db.URL
		if code, out, errOut := arkhe(t, url, "", "init", "--test-registration"); code != 0 {
			t.Fatalf("init: %d %s %s", code, out, errOut)
		}
		dir := t.TempDir()
		in := filepath.Join(dir, "tate.jsonl")
		f, err := os.Open(fixtures.SharedData(t, "tategallery-collection", "artworks.jsonl.gz"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		var tate bytes.Buffer
		sc := bufio.NewScanner(zr)
		sc.Buffer(make([]byte, 1<<20), 1<<22)
		for n := 0; n < rows && sc.Scan(); n++ {
			tate.Write(sc.Bytes())
			tate.WriteByte('\n')
		}
		if err := os.WriteFile(in, tate.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		mm := filepath.Join(dir, "tate-mintmap.csv")
		if code, out, errOut := arkhe(t, url, "", "mint", "--client", "test-minter", "--map", "request_id=acno,what=title,who=all_artists,when=dateText,url=url", "-o", mm, in); code != 0 {
			t.Fatalf("mint: %d %s %s", code, out, errOut)
		}
		recs := readMintMap(t, mm)[1:]
		if len(recs) != rows {
			t.Fatalf("mint map of %d rows, want %d", len(recs), rows)
		}
		moves := func(name, host string, reverse bool) string {
			var b strings.Builder
			b.WriteString("request_id,url,reason\n")
			for i := range recs {
				r := recs[i]
				if reverse {
					r = recs[len(recs)-1-i]
				}
				fmt.Fprintf(&b, "%s,https://%s/art/%s,collection site moved\n", r[0], host, r[0])
			}
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}
		one := moves("one.csv", "one.example.org", false)
		rng := rand.New(rand.NewPCG(29, 1))
		args := func(man, res string) []string {
			return []string{"--database-url", url, "--quiet", "update", "--client", "test-minter", "--batch", "25", "-o", res, man}
		}
		killed := 0
		for attempt := 1; ; attempt++ {
			cmd, out, errb := startArkhe(t, args(one, filepath.Join(dir, "one.changes.csv"))...)
			if attempt <= 4 {
				time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
				_ = cmd.Process.Kill()
				if code := exitCode(t, cmd); code == -1 {
					killed++
					continue
				} else if code != 0 {
					t.Fatalf("attempt %d: exit %d\n%s\n%s", attempt, code, out, errb)
				}
			} else if code := exitCode(t, cmd); code != 0 {
				t.Fatalf("attempt %d: exit %d\n%s\n%s", attempt, code, out, errb)
			}
			res := readMintMap(t, filepath.Join(dir, "one.changes.csv"))[1:]
			n := 0
			for _, r := range res {
				if r[4] == "changed" || r[4] == "earlier" {
					n++
				}
			}
			if len(res) != rows || n != rows {
				t.Fatalf("completing run (after %d killed): %d result rows, %d changed or earlier, want %d", killed, len(res), n, rows)
			}
			break
		}
		t.Logf("%d runs killed before one completed", killed)
		fwd, rev := moves("two.csv", "two.example.org", false), moves("two-rev.csv", "two.example.org", true)
		var cmds []*exec.Cmd
		var outs, errs []*bytes.Buffer
		for i, m := range []string{fwd, rev} {
			cmd, out, errb := startArkhe(t, args(m, filepath.Join(dir, fmt.Sprintf("two-%d.changes.csv", i)))...)
			cmds, outs, errs = append(cmds, cmd), append(outs, out), append(errs, errb)
		}
		for i, cmd := range cmds {
			if code := exitCode(t, cmd); code != 0 {
				t.Errorf("concurrent run %d: exit %d\n%s\n%s", i, code, outs[i], errs[i])
			}
		}
		conn, err := pgx.Connect(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(t.Context())
		for _, host := range []string{"one", "two"} {
			var n int
			if err := conn.QueryRow(t.Context(), `select count(*) from ark_change where after_url like 'https://' || $1 || '.example.org/art/%'`, host).Scan(&n); err != nil || n != rows {
				t.Errorf("%d ARK_CHANGE rows to host %s, want %d (%v)", n, host, rows, err)
			}
		}
		var bad int
		if err := conn.QueryRow(t.Context(), `select count(*) from (select ark from ark_change group by ark having count(*) <> 2) x`).Scan(&bad); err != nil || bad != 0 {
			t.Errorf("%d ARKs without exactly two ARK_CHANGE rows (%v)", bad, err)
		}
		if code, out, errOut := arkhe(t, url, "", "verify"); code != 0 {
			t.Fatalf("verify: exit %d\n%s\n%s", code, out, errOut)
		}
	})
}
