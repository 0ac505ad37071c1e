package loader_test

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/loader"
	"github.com/arkhe-ledger/arkhe/pipeline"
)

// tateRows is how many Tate artworks the update tests mint.
const tateRows = 40

// tateLedger registers the mint ledger plus client upd (manager m1: mint, update, tombstone) and
// client far (manager m2: update, tombstone), and mints the first tateRows Tate artworks as upd
// by accession number (as make run maps them). It returns the ledger and accession number → ARK.
func tateLedger(t *testing.T, db pgtest.DB) (*ledger.Ledger, map[string]string) {
	t.Helper()
	ctx := context.Background()
	l := mintLedgerIn(t, db)
	for _, c := range []ledger.Client{
		{ClientID: "upd", NAAN: "99999", Manager: "m1", Authority: "manager", Scopes: []string{"ark:mint", "ark:update", "ark:tombstone"}},
		{ClientID: "far", NAAN: "99999", Manager: "m2", Authority: "manager", Scopes: []string{"ark:mint", "ark:update", "ark:tombstone"}},
	} {
		if err := l.AddClient(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	src := "/work/shared/data/tategallery-collection/artworks.jsonl.gz"
	f, err := os.Open(src)
	if err != nil {
		t.Skipf("Tate data: %v", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "tate.jsonl")
	out, err := os.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for n := 0; n < tateRows && sc.Scan(); n++ {
		fmt.Fprintln(out, sc.Text())
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	m, err := pipeline.ParseMapping("request_id=acno,what=title,who=all_artists,when=dateText,url=url")
	if err != nil {
		t.Fatal(err)
	}
	mm := filepath.Join(dir, "tate-map.csv")
	rep, err := loader.Mint(ctx, l, loader.MintJob{Mint: loader.MintConfig{ClientID: "upd"}, Inputs: []string{in}, Mapping: m, MintMapPath: mm})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Summary.Minted != tateRows {
		t.Fatalf("minted %d Tate rows, want %d", rep.Summary.Minted, tateRows)
	}
	byID := map[string]string{}
	for _, r := range readCSV(t, mm)[1:] {
		byID[r[0]] = r[1]
	}
	return l, byID
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func changes(t *testing.T, l *ledger.Ledger, key string) int64 {
	t.Helper()
	return mintCount(t, l.Pool, `select count(*) from ark_change where ark = $1`, key)
}

func TestUpdateTate(t *testing.T) {
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		ctx := context.Background()
		l, byID := tateLedger(t, db)
		dir := t.TempDir()
		a1, a2, a3 := byID["A00001"], byID["A00002"], byID["A00003"]
		// repoint every Tate ARK by accession number
		var b strings.Builder
		b.WriteString("request_id,url\n")
		for id := range byID {
			fmt.Fprintf(&b, "%s,https://collections.example.org/art/%s\n", id, id)
		}
		man := writeFile(t, dir, "move.csv", b.String())
		job := loader.UpdateJob{ClientID: "upd", Inputs: []string{man}, BatchSize: 7,
			ResultPath: filepath.Join(dir, "result.csv"), RejectsPath: filepath.Join(dir, "rejects.csv")}
		rep, err := loader.Update(ctx, l, job)
		if err != nil {
			t.Fatal(err)
		}
		if s := rep.Summary; s.Changed != tateRows || s.Rejected != 0 || s.Earlier != 0 {
			t.Fatalf("first run: %+v, want %d changed", s, tateRows)
		}
		var url string
		if err := l.Pool.QueryRow(ctx, `select url from ark where ark = $1`, a1[4:]).Scan(&url); err != nil || url != "https://collections.example.org/art/A00001" {
			t.Fatalf("url of %s = %q, %v", a1, url, err)
		}
		if n := changes(t, l, a1[4:]); n != 1 {
			t.Fatalf("%d ARK_CHANGE rows for %s, want 1", n, a1)
		}
		var before, after, by string
		if err := l.Pool.QueryRow(ctx, `select before_url, after_url, by_text from ark_change where ark = $1`, a1[4:]).Scan(&before, &after, &by); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(before, "tate.org.uk") || after != "https://collections.example.org/art/A00001" || by != "arkhe update" {
			t.Fatalf("ARK_CHANGE of %s: %q -> %q by %q", a1, before, after, by)
		}
		// a repoint writes the row a single repoint writes: no ERC description before and after
		if n := mintCount(t, l.Pool, `select count(*) from ark_change where before_erc is not null or after_erc is not null`); n != 0 {
			t.Fatalf("%d repoint ARK_CHANGE rows carry an ERC description", n)
		}
		res := readCSV(t, filepath.Join(dir, "result.csv"))
		if len(res) != tateRows+1 || res[1][4] != loader.OutcomeChanged || !strings.HasPrefix(res[1][2], "ark:99999/x9") {
			t.Fatalf("result file: %v", res[:2])
		}
		// the same manifest again: nothing applied twice
		rep, err = loader.Update(ctx, l, job)
		if err != nil {
			t.Fatal(err)
		}
		if s := rep.Summary; s.Earlier != tateRows || s.Changed != 0 {
			t.Fatalf("re-run: %+v, want %d earlier", s, tateRows)
		}
		if n := mintCount(t, l.Pool, `select count(*) from ark_change`); n != tateRows {
			t.Fatalf("%d ARK_CHANGE rows after the re-run, want %d", n, tateRows)
		}

		// by ARK (other spellings): a tombstone, a field emptied, an unchanged row, an unknown
		// ARK, an out-of-reach ARK, the same ARK twice
		man2 := writeFile(t, dir, "fix.csv", "ark,status,reason,who,what\n"+
			"https://n2t.net/"+a1+",unavailable,withdrawn by the gallery,,\n"+
			strings.ToUpper(a2[:3])+a2[3:]+",,,,\n"+
			"ark:99999/x9nope,public,,,\n"+
			a3+",,,,Corrected title\n"+
			a3+",,,,Another title\n")
		rep, err = loader.Update(ctx, l, loader.UpdateJob{ClientID: "upd", Inputs: []string{man2}, RejectsPath: filepath.Join(dir, "rejects2.csv")})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%+v", rep.Summary)
		var status, reason string
		var who *string
		if err := l.Pool.QueryRow(ctx, `select ark_status_text(status), coalesce(tombstone_reason, ''), erc_who from ark where ark = $1`, a1[4:]).Scan(&status, &reason, &who); err != nil {
			t.Fatal(err)
		}
		if status != "unavailable" || reason != "withdrawn by the gallery" || who != nil {
			t.Fatalf("tombstoned %s: status %s reason %q who %v", a1, status, reason, who)
		}
		var erc string
		if err := l.Pool.QueryRow(ctx, `select after_erc::text from ark_change where ark = $1 order by seq desc limit 1`, a1[4:]).Scan(&erc); err != nil ||
			!strings.Contains(erc, `"who": null`) || !strings.Contains(erc, `"tombstone_reason": "withdrawn by the gallery"`) {
			t.Fatalf("the tombstone's ERC after: %s %v", erc, err)
		}
		rej := readCSV(t, filepath.Join(dir, "rejects2.csv"))
		joined := fmt.Sprint(rej)
		for _, want := range []string{"x9nope is not in the ledger", "same ARK is named with different values"} {
			if !strings.Contains(joined, want) {
				t.Errorf("rejects lack %q: %v", want, rej)
			}
		}
		if got := mintCount(t, l.Pool, `select count(*) from ark_change where ark = $1`, a3[4:]); got != 1 {
			t.Errorf("%s named twice: %d ARK_CHANGE rows, want 1 (from the move)", a3, got)
		}
		if s := rep.Summary; s.Changed != 2 || s.Rejected != 3 {
			t.Errorf("fix run: %+v, want 2 changed (tombstone, emptied), 3 rejected", s)
		}

		// a restore, and an out-of-reach change
		man3 := writeFile(t, dir, "restore.csv", "ark,status,reason\n"+a1+",public,back on view\n")
		if rep, err = loader.Update(ctx, l, loader.UpdateJob{ClientID: "upd", Inputs: []string{man3}}); err != nil || rep.Summary.Changed != 1 {
			t.Fatalf("restore: %+v, %v", rep.Summary, err)
		}
		if err := l.Pool.QueryRow(ctx, `select ark_status_text(status) from ark where ark = $1`, a1[4:]).Scan(&status); err != nil || status != "public" {
			t.Fatalf("restored %s: %s %v", a1, status, err)
		}
		var action string
		if err := l.Pool.QueryRow(ctx, `select action from ark_change where ark = $1 order by seq desc limit 1`, a1[4:]).Scan(&action); err != nil || action != "restore" {
			t.Fatalf("last change of %s: %s %v", a1, action, err)
		}
		man4 := writeFile(t, dir, "far.csv", "ark,url\n"+a2+",https://elsewhere.example.org/x\n")
		rj := filepath.Join(dir, "rejects4.csv")
		rep, err = loader.Update(ctx, l, loader.UpdateJob{ClientID: "far", Inputs: []string{man4}, RejectsPath: rj})
		if err != nil || rep.Summary.Rejected != 1 {
			t.Fatalf("out of reach: %+v, %v", rep.Summary, err)
		}
		if r := fmt.Sprint(readCSV(t, rj)); !strings.Contains(r, "does not reach shoulder /x9") || !strings.Contains(r, "reach comes from the client's registration only") {
			t.Fatalf("out-of-reach reject: %s", r)
		}
		// dry run: counts, nothing changed
		man5 := writeFile(t, dir, "dry.csv", "ark,url\n"+a2+",https://dry.example.org/x\n")
		n0 := mintCount(t, l.Pool, `select count(*) from ark_change`)
		rep, err = loader.Update(ctx, l, loader.UpdateJob{ClientID: "upd", Inputs: []string{man5}, DryRun: true})
		if err != nil || rep.Summary.Changed != 1 {
			t.Fatalf("dry run: %+v, %v", rep.Summary, err)
		}
		if n := mintCount(t, l.Pool, `select count(*) from ark_change`); n != n0 {
			t.Fatalf("dry run wrote %d ARK_CHANGE rows", n-n0)
		}
		if n := mintCount(t, l.Pool, `select count(*) from audit_event where action = 'update'`); n != 6 {
			t.Errorf("%d audit events of update runs, want 6", n)
		}
		// the same ARK in two batches of one run with different values: the later row is refused,
		// and the other rows of its batch apply
		man6 := writeFile(t, dir, "twice.csv", "ark,url\n"+a2+",https://one.example.org/x\n"+a1+",https://one.example.org/y\n"+
			a2+",https://two.example.org/x\n"+a3+",https://two.example.org/z\n")
		rj6 := filepath.Join(dir, "rejects6.csv")
		rep, err = loader.Update(ctx, l, loader.UpdateJob{ClientID: "upd", Inputs: []string{man6}, BatchSize: 2, RejectsPath: rj6})
		if err != nil || rep.Summary.Changed != 3 || rep.Summary.Rejected != 1 {
			t.Fatalf("twice across batches: %+v, %v: want 3 changed, 1 rejected", rep.Summary, err)
		}
		if r := readCSV(t, rj6); len(r) != 2 || !strings.Contains(fmt.Sprint(r[1]), a2[4:]+" is named twice in the manifest") {
			t.Fatalf("twice across batches: rejects %v", r)
		}
		if err := l.Pool.QueryRow(ctx, `select url from ark where ark = $1`, a3[4:]).Scan(&url); err != nil || url != "https://two.example.org/z" {
			t.Fatalf("url of %s = %q, %v, want the second batch's", a3, url, err)
		}
		// a request ID the client holds no mint receipt for, as JSON Lines
		man7 := writeFile(t, dir, "unknown.jsonl", `{"request_id":"Z99999","url":"https://x.example.org/"}`+"\n")
		rj7 := filepath.Join(dir, "rejects7.csv")
		rep, err = loader.Update(ctx, l, loader.UpdateJob{ClientID: "upd", Inputs: []string{man7}, RejectsPath: rj7})
		if err != nil || rep.Summary.Rejected != 1 {
			t.Fatalf("unknown request ID: %+v, %v", rep.Summary, err)
		}
		if r := fmt.Sprint(readCSV(t, rj7)); !strings.Contains(r, `holds no mint receipt for request ID "Z99999"`) {
			t.Fatalf("unknown request ID: rejects %s", r)
		}
		if n := mintCount(t, l.Pool, `select count(*) from ark_update_stage`); n != 0 {
			t.Errorf("%d staged rows left", n)
		}
	})
}

// TestUpdateConcurrentAndInterrupted: two runs of overlapping manifests at once both finish and
// change each ARK once; a run cancelled after its first batches, then run again, applies each
// row once in all.
func TestUpdateConcurrentAndInterrupted(t *testing.T) {
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		ctx := context.Background()
		l, byID := tateLedger(t, db)
		dir := t.TempDir()
		var ids []string
		for id := range byID {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		write := func(name string, order []string, host string) string {
			var b strings.Builder
			b.WriteString("request_id,url\n")
			for _, id := range order {
				fmt.Fprintf(&b, "%s,https://%s/art/%s\n", id, host, id)
			}
			return writeFile(t, dir, name, b.String())
		}
		fwd := write("fwd.csv", ids, "a.example.org")
		rev := slices.Clone(ids)
		slices.Reverse(rev)
		back := write("rev.csv", rev, "a.example.org")
		var wg sync.WaitGroup
		reps := make([]loader.UpdateReport, 2)
		errs := make([]error, 2)
		for i, m := range []string{fwd, back} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				reps[i], errs[i] = loader.Update(ctx, l, loader.UpdateJob{ClientID: "upd", Inputs: []string{m}, BatchSize: 5})
			}()
		}
		wg.Wait()
		for i := range errs {
			if errs[i] != nil {
				t.Fatalf("run %d: %v", i, errs[i])
			}
		}
		if c := reps[0].Summary.Changed + reps[1].Summary.Changed; c != tateRows ||
			reps[0].Summary.Earlier+reps[1].Summary.Earlier != tateRows {
			t.Fatalf("concurrent runs: %+v and %+v: want %d changed and %d earlier in all", reps[0].Summary, reps[1].Summary, tateRows, tateRows)
		}
		if n := mintCount(t, l.Pool, `select count(*) from ark_change`); n != tateRows {
			t.Fatalf("%d ARK_CHANGE rows after the concurrent runs, want %d", n, tateRows)
		}
		// interrupted after its second batch, then run again
		moved := write("moved.csv", ids, "b.example.org")
		cctx, cancel := context.WithCancel(ctx)
		rep, err := loader.Update(cctx, l, loader.UpdateJob{ClientID: "upd", Inputs: []string{moved}, BatchSize: 6,
			Progress: func(s loader.UpdateSummary) {
				if s.Batches == 2 {
					cancel()
				}
			}})
		cancel()
		if err == nil || rep.Summary.Changed != 12 {
			t.Fatalf("interrupted run: %+v, %v: want 12 changed and an error", rep.Summary, err)
		}
		rep, err = loader.Update(ctx, l, loader.UpdateJob{ClientID: "upd", Inputs: []string{moved}, BatchSize: 6})
		if err != nil || rep.Summary.Earlier != 12 || rep.Summary.Changed != tateRows-12 {
			t.Fatalf("re-run: %+v, %v", rep.Summary, err)
		}
		if n := mintCount(t, l.Pool, `select count(*) from ark_change`); n != 2*tateRows {
			t.Fatalf("%d ARK_CHANGE rows, want %d: one per ARK per run that changed it", n, 2*tateRows)
		}
		if n := mintCount(t, l.Pool, `select count(*) from (select ark from ark_change group by ark having count(*) <> 2) x`); n != 0 {
			t.Fatalf("%d ARKs without exactly two changes", n)
		}
	})
}

// TestUpdateFaultsAtRandomSteps: repoints of the Tate ARKs by accession number, in batches of 4.
// First with scripted faults: a lost COMMIT reply (batch 2) and the backend terminated while the
// transaction is open (batch 3): the run retries both and reports every row changed exactly
// once. Then to another host with faults at steps drawn from a seeded source: a connection lost
// before or after COMMIT, the backend terminated, and a crash of the run (its context cancelled
// at a step: the run stops there); the same manifest is run again until a run completes. In the
// end each ARK has exactly one ARK_CHANGE row per move, to its new target, and one receipt per
// move; the completing run accounts for every row as changed or applied earlier; no run counts
// a row twice; ARK_CHANGE agrees with each ARK's change_seq.
func TestUpdateFaultsAtRandomSteps(t *testing.T) {
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		ctx := context.Background()
		l, byID := tateLedger(t, db)
		dir := t.TempDir()
		moves := func(name, host string) string {
			var b strings.Builder
			b.WriteString("request_id,url,reason\n")
			for id := range byID {
				fmt.Fprintf(&b, "%s,https://%s/art/%s,collection site moved\n", id, host, id)
			}
			return writeFile(t, dir, name, b.String())
		}
		terminate := func() {
			var n int
			if err := db.Pool.QueryRow(ctx, `select count(*) from (select pg_terminate_backend(pid) from pg_stat_activity
				where datname = current_database() and pid <> pg_backend_pid() and state like 'idle in transaction%') x`).Scan(&n); err != nil || n == 0 {
				t.Errorf("terminated %d backends: %v", n, err)
			}
		}
		var retries []loader.RetryNotice
		rep, err := loader.Update(ctx, l, loader.UpdateJob{ClientID: "upd", Inputs: []string{moves("one.csv", "one.example.org")}, BatchSize: 4,
			Retry: loader.RetryPolicy{Notify: func(n loader.RetryNotice) { retries = append(retries, n) }},
			Hooks: loader.UpdateHooks{Step: func(batch int64, attempt int, step string) error {
				switch {
				case batch == 2 && attempt == 1 && step == "committed":
					return fmt.Errorf("test: the COMMIT reply is lost: %w", io.ErrUnexpectedEOF)
				case batch == 3 && attempt == 1 && step == "staged":
					terminate()
				}
				return nil
			}}})
		if err != nil {
			t.Fatal(err)
		}
		if s := rep.Summary; s.Changed != tateRows || s.Earlier != 0 || s.Retries != 2 {
			t.Fatalf("scripted faults: %+v: want %d changed, 0 earlier, 2 retries (%v)", s, tateRows, retries)
		}

		man := moves("two.csv", "two.example.org")
		const seed = 30
		rng := rand.New(rand.NewPCG(seed, 1))
		t.Logf("seed %d", seed)
		kinds := map[string]int{}
		faults, crashes := 0, 0 // bounded, so that the back-off keeps the test short and a run completes
		var changed int64
		completed := false
		for run := 1; run <= 30 && !completed; run++ {
			rctx, cancel := context.WithCancel(ctx)
			hook := func(batch int64, attempt int, step string) error {
				switch k := rng.IntN(10); {
				case k == 0 && faults < 6:
					faults++
					kinds["lost connection at "+step]++
					return fmt.Errorf("test fault at %s: %w", step, io.ErrUnexpectedEOF)
				case k == 1 && faults < 6 && step != "committed":
					faults++
					kinds["backend terminated at "+step]++
					terminate()
				case k == 2 && crashes < 5:
					crashes++
					kinds["crash at "+step]++
					cancel()
				}
				return nil
			}
			rep, err := loader.Update(rctx, l, loader.UpdateJob{ClientID: "upd", Inputs: []string{man}, BatchSize: 4,
				Hooks: loader.UpdateHooks{Step: hook}})
			cancel()
			s := rep.Summary
			changed += s.Changed
			if s.Rejected != 0 {
				t.Fatalf("run %d: %+v: rejects", run, s)
			}
			if err == nil {
				completed = true
				if s.Changed+s.Earlier != tateRows {
					t.Fatalf("completing run %d: %+v: want %d changed or earlier", run, s, tateRows)
				}
			}
		}
		t.Logf("faults: %v", kinds)
		if !completed {
			t.Fatal("no run completed")
		}
		if changed > tateRows {
			t.Errorf("the runs counted %d rows changed, more than the %d ARKs", changed, tateRows)
		}
		for _, host := range []string{"one", "two"} {
			if n := mintCount(t, l.Pool, `select count(*) from ark_change where after_url like 'https://' || $1 || '.example.org/art/%'`, host); n != tateRows {
				t.Errorf("%d ARK_CHANGE rows to host %s, want %d", n, host, tateRows)
			}
		}
		if n := mintCount(t, l.Pool, `select count(*) from (select ark from ark_change group by ark having count(*) <> 2) x`); n != 0 {
			t.Errorf("%d ARKs without exactly two ARK_CHANGE rows", n)
		}
		if n := mintCount(t, l.Pool, `select count(*) from update_receipt`); n != 2*tateRows {
			t.Errorf("%d receipts, want %d", n, 2*tateRows)
		}
		if n := mintCount(t, l.Pool, `select count(*) from ark a where a.url not like 'https://two.example.org/art/%'
			or coalesce(a.change_seq, 0) <> (select count(*) from ark_change c where c.ark = a.ark)`); n != 0 {
			t.Errorf("%d ARKs not moved, or whose change_seq disagrees with ARK_CHANGE", n)
		}
		if n := mintCount(t, l.Pool, `select count(*) from ark_update_stage`); n != 0 {
			t.Errorf("%d staged rows left", n)
		}
	})
}
