package loader_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/loader"
	"github.com/arkhe-ledger/arkhe/pipeline"
	"github.com/arkhe-ledger/arkhe/textin"
)

// mintLedger is mintLedgerIn a new database on the single node.
func mintLedger(t *testing.T) *ledger.Ledger {
	t.Helper()
	return mintLedgerIn(t, pgtest.DB{Kind: pgtest.KindSingle, Pool: pgtest.New(t)})
}

// mintLedgerIn registers, in db, NAAN 99999 with manager m1 holding /x9 (its default, active),
// /b5 (reserved) and /q7 (active, to be retired by tests), manager m2 holding /z3, and clients:
// c1 (manager m1, ark:mint), c2 (manager m2, ark:mint), and variants refused for reach.
func mintLedgerIn(t *testing.T, db pgtest.DB) *ledger.Ledger {
	t.Helper()
	ctx := context.Background()
	l := &ledger.Ledger{Pool: db.Pool}
	chk := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := l.AddNAAN(ctx, ledger.NAAN{NAAN: "99999", Name: "test"})
	chk(err)
	for _, m := range []string{"m1", "m2"} {
		_, err = l.AddManager(ctx, ledger.Manager{NAAN: "99999", Name: m})
		chk(err)
	}
	for _, s := range []ledger.Shoulder{
		{NAAN: "99999", Shoulder: "/x9", Manager: "m1"},
		{NAAN: "99999", Shoulder: "/b5", Manager: "m1", Status: "reserved"},
		{NAAN: "99999", Shoulder: "/q7", Manager: "m1"},
		{NAAN: "99999", Shoulder: "/z3", Manager: "m2"},
	} {
		_, err = l.AddShoulder(ctx, s, 0)
		chk(err)
	}
	chk(l.SetDefaultShoulder(ctx, "99999", "m1", "/x9"))
	past, future := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	for _, c := range []ledger.Client{
		{ClientID: "c1", NAAN: "99999", Manager: "m1", Authority: "manager", Scopes: []string{"ark:mint"}},
		{ClientID: "c2", NAAN: "99999", Manager: "m2", Authority: "manager", Scopes: []string{"ark:mint"}},
		{ClientID: "reader", NAAN: "99999", Manager: "m1", Authority: "manager", Scopes: []string{"ark:read"}},
		{ClientID: "expired", NAAN: "99999", Authority: "naan", Scopes: []string{"ark:mint"}, ExpiresAt: &past},
		{ClientID: "naanwide", NAAN: "99999", Authority: "naan", Scopes: []string{"ark:mint"}, ExpiresAt: &future},
		{ClientID: "gone", NAAN: "99999", Manager: "m1", Authority: "manager", Scopes: []string{"ark:mint"}},
		{ClientID: "pinned", NAAN: "99999", Manager: "m1", Authority: "manager", Shoulder: "/q7", Scopes: []string{"ark:mint"}},
	} {
		chk(l.AddClient(ctx, c))
	}
	mintExec(t, l.Pool, `update client set active = false where client_id = 'gone'`)
	return l
}

// tallyQuery reads the draw and collision counters of shoulder $1 of NAAN 99999 from
// shoulder_tally (no row: zero).
const tallyQuery = `select coalesce(sum(t.draws), 0)::bigint, coalesce(sum(t.collisions), 0)::bigint
	from shoulder s left join shoulder_tally t on t.shoulder_id = s.id where s.naan = '99999' and s.shoulder = $1`

func mintExec(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func mintCount(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// manifest writes a generated CSV manifest into dir and returns its path.
func manifest(t *testing.T, dir, name string, cfg fixtures.ManifestConfig) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if _, err := fixtures.CreateManifestCSV(p, cfg); err != nil {
		t.Fatal(err)
	}
	return p
}

type mintRun struct {
	cfg     loader.MintConfig
	run     pipeline.RunConfig
	mapPath string // "" for no mint map
	rejects string // "" for no reject file
	abort   bool   // abort the mint map instead of closing it (a crash after COMMIT)
}

// doMint prepares and runs one mint; it closes the outputs like the CLI does.
func doMint(t *testing.T, ctx context.Context, l *ledger.Ledger, r mintRun) (pipeline.Summary, error) {
	t.Helper()
	sink, err := loader.PrepareMint(ctx, l, r.cfg)
	if err != nil {
		return pipeline.Summary{}, err
	}
	rc := r.run
	rc.Sink = sink
	if rc.Workers == 0 {
		rc.Workers = 2
	}
	if rc.BatchSize == 0 {
		rc.BatchSize = 7
	}
	var mm pipeline.MintMapWriter
	if r.mapPath != "" {
		if mm, err = pipeline.CreateMintMap(r.mapPath); err != nil {
			t.Fatal(err)
		}
		rc.MintMap = mm
	}
	var rw *pipeline.RejectWriter
	if r.rejects != "" {
		rw = pipeline.NewRejectWriter(r.rejects)
		rc.Rejects = rw
	}
	sum, runErr := pipeline.Run(ctx, rc)
	if mm != nil {
		if runErr != nil || r.abort {
			_ = mm.Abort()
		} else if err := mm.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if rw != nil && runErr == nil {
		if err := rw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return sum, runErr
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// checkLedger asserts n ARKs, n receipts, every receipt's ARK exists and every minted ARK of
// client has exactly one receipt.
func checkLedger(t *testing.T, pool *pgxpool.Pool, n int64) {
	t.Helper()
	if got := mintCount(t, pool, `select count(*) from ark where shoulder_id = (select id from shoulder where shoulder = '/x9')`); got != n {
		t.Errorf("ARKs in /x9: %d, want %d", got, n)
	}
	if got := mintCount(t, pool, `select count(*) from mint_receipt`); got != n {
		t.Errorf("receipts: %d, want %d", got, n)
	}
	// EXCEPT, not NOT IN: before ark is analysed the planner may not hash NOT IN's subquery and
	// rescans it for every ARK (minutes at 125,000); on Citus ark and receipt are not
	// co-located, and each side is planned on its own
	if got := mintCount(t, pool, `select count(*) from (select ark from ark except select ark from mint_receipt) d`); got != 0 {
		t.Errorf("%d ARKs without a receipt", got)
	}
	if got := mintCount(t, pool, `select count(*) from (select request_id from mint_receipt group by client_pk, request_id having count(*) > 1) d`); got != 0 {
		t.Errorf("%d request IDs with more than one receipt", got)
	}
}

func TestMintAndReplayByteForByte(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l := mintLedgerIn(t, db)
		ctx := context.Background()
		dir := t.TempDir()
		in := manifest(t, dir, "m.csv", fixtures.ManifestConfig{Rows: 40, Seed: 1})
		first := filepath.Join(dir, "first.csv")
		sum, err := doMint(t, ctx, l, mintRun{cfg: loader.MintConfig{ClientID: "c1"}, run: pipeline.RunConfig{Inputs: []string{in}}, mapPath: first})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Read != 40 || sum.Minted != 40 || sum.Replayed != 0 || sum.Rejected != 0 || sum.Draws != 40 {
			t.Fatalf("first run: %+v", sum)
		}
		checkLedger(t, l.Pool, 40)
		second := filepath.Join(dir, "second.csv")
		sum, err = doMint(t, ctx, l, mintRun{cfg: loader.MintConfig{ClientID: "c1"}, run: pipeline.RunConfig{Inputs: []string{in}, Workers: 3, BatchSize: 5}, mapPath: second})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Read != 40 || sum.Minted != 0 || sum.Replayed != 40 || sum.Draws != 0 {
			t.Fatalf("second run: %+v", sum)
		}
		checkLedger(t, l.Pool, 40)
		// the workers' batch deadlines stay with the run: the pool's connections are back to
		// the server's settings (a long query after a mint must not time out)
		idle := l.Pool.AcquireAllIdle(ctx)
		if len(idle) < 3 {
			t.Errorf("%d idle connections after a run of 3 workers, want at least 3", len(idle))
		}
		for _, c := range idle {
			var lock, stmt, mode string
			if err := c.QueryRow(ctx, `select current_setting('lock_timeout'), current_setting('statement_timeout'),
				coalesce(current_setting('citus.multi_shard_modify_mode', true), 'parallel')`).Scan(&lock, &stmt, &mode); err != nil {
				t.Fatal(err)
			}
			if lock != "0" || stmt != "0" || mode != "parallel" {
				t.Errorf("pooled connection after mint: lock_timeout %s, statement_timeout %s, Citus mode %s; want 0, 0 and parallel", lock, stmt, mode)
			}
			c.Release()
		}
		a, b := readCSV(t, first), readCSV(t, second)
		if len(a) != 41 || len(b) != 41 {
			t.Fatalf("mint maps have %d and %d lines, want 41", len(a), len(b))
		}
		for i := 1; i < len(a); i++ {
			want := fmt.Sprintf("obj-%09d", i)
			if a[i][0] != want || b[i][0] != want {
				t.Fatalf("line %d: request IDs %q, %q, want %q (manifest order)", i, a[i][0], b[i][0], want)
			}
			if a[i][1] != b[i][1] || !strings.HasPrefix(a[i][1], "ark:99999/x9") || len(a[i][1]) != len("ark:99999/x9")+9 {
				t.Fatalf("line %d: ARKs %q and %q", i, a[i][1], b[i][1])
			}
			if a[i][2] != "minted" || b[i][2] != "replayed" {
				t.Fatalf("line %d: statuses %q, %q", i, a[i][2], b[i][2])
			}
			parsed, err := ark.Parse(a[i][1])
			if err != nil || !ark.Verify(parsed, ark.ZoneNAANName) {
				t.Fatalf("line %d: %s does not verify: %v", i, a[i][1], err)
			}
		}
		// byte for byte: the second map is the first with the status column changed (the
		// payload columns follow it)
		fb, _ := os.ReadFile(first)
		sb, _ := os.ReadFile(second)
		if !bytes.Equal(bytes.ReplaceAll(fb, []byte(",minted,"), []byte(",replayed,")), sb) {
			t.Fatal("the replayed mint map differs from the first beyond the status column")
		}
		var draws, collisions int64
		if err := l.Pool.QueryRow(ctx, tallyQuery, "/x9").Scan(&draws, &collisions); err != nil {
			t.Fatal(err)
		}
		if draws != 40 || collisions != 0 {
			t.Fatalf("shoulder counters: draws %d collisions %d, want 40 and 0", draws, collisions)
		}
		// the ERC fields landed, absent ones as NULL
		var url, what *string
		if err := l.Pool.QueryRow(ctx, `select url, erc_what from ark where ark = (select ark from mint_receipt where request_id = 'obj-000000001')`).Scan(&url, &what); err != nil {
			t.Fatal(err)
		}
		if what == nil || *what == "" {
			t.Fatalf("erc_what of obj-000000001 is %v", what)
		}
	})
}

// existingBlade mints one ARK by hand in /x9 and returns its blade.
func existingBlade(t *testing.T, l *ledger.Ledger) string {
	t.Helper()
	const blade = "bcdfghjk"
	mintByHand(t, l, blade)
	return blade
}

// mintByHand inserts the ARK of blade in /x9 with plain SQL, as client c1.
func mintByHand(t *testing.T, l *ledger.Ledger, blade string) {
	t.Helper()
	name := ark.MintName("99999", "/x9", []byte(blade))
	mintExec(t, l.Pool, `insert into ark (ark, naan, shoulder_id, assigned_name, created_by, created_at)
		select $1, '99999', s.id, $2, c.id, now() from shoulder s, client c where s.shoulder = '/x9' and c.client_id = 'c1'`,
		"99999/"+name, name)
}

func TestMintForcedCollisionIsRedrawn(t *testing.T) {
	t.Parallel()
	for _, check := range []loader.Check{loader.CheckAlways, loader.CheckNever} {
		t.Run(check.String(), func(t *testing.T) {
			pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
				l := mintLedgerIn(t, db)
				ctx := context.Background()
				blade := existingBlade(t, l)
				in := manifest(t, t.TempDir(), "m.csv", fixtures.ManifestConfig{Rows: 3, Seed: 2})
				blades := func(int) ark.BladeSource { return ark.NewScriptedBlades(blade, "mnpqrstv", "wxz23456", "789bcdfg") }
				// the registration rows' versions (xmin): a mint writes none of them
				const regVersions = `select string_agg(x, ',' order by x) from (
					select 'naan ' || naan || ' ' || xmin::text as x from naan
					union all select 'manager ' || id || ' ' || xmin::text from manager
					union all select 'shoulder ' || id || ' ' || xmin::text from shoulder
					union all select 'client ' || id || ' ' || xmin::text from client) r`
				var regBefore string
				if err := l.Pool.QueryRow(ctx, regVersions).Scan(&regBefore); err != nil {
					t.Fatal(err)
				}
				sum, err := doMint(t, ctx, l, mintRun{cfg: loader.MintConfig{ClientID: "c1", Blades: blades, NameCheck: check, PgxCopyFrom: check == loader.CheckNever},
					run: pipeline.RunConfig{Inputs: []string{in}, Workers: 1, BatchSize: 10}})
				if err != nil {
					t.Fatal(err)
				}
				if sum.Minted != 3 || sum.Collisions != 1 || sum.Draws != 4 {
					t.Fatalf("summary %+v, want 3 minted, 4 draws, 1 collision", sum)
				}
				var draws, collisions int64
				if err := l.Pool.QueryRow(ctx, tallyQuery, "/x9").Scan(&draws, &collisions); err != nil {
					t.Fatal(err)
				}
				if draws != 4 || collisions != 1 {
					t.Fatalf("shoulder counters draws %d collisions %d, want 4 and 1", draws, collisions)
				}
				var regAfter string
				if err := l.Pool.QueryRow(ctx, regVersions).Scan(&regAfter); err != nil {
					t.Fatal(err)
				}
				if regAfter != regBefore {
					t.Errorf("the mint wrote registration rows:\nbefore %s\nafter  %s", regBefore, regAfter)
				}
				// `shoulder list` reads the same counters; a shoulder that never minted shows zero
				list, err := l.ListShoulders(ctx, "99999")
				if err != nil {
					t.Fatal(err)
				}
				got := map[string][3]int64{}
				for _, sh := range list {
					got[sh.Shoulder] = [3]int64{sh.Minted, sh.Draws, sh.Collisions}
				}
				if got["/x9"] != [3]int64{4, 4, 1} || got["/q7"] != [3]int64{0, 0, 0} || len(got) != 4 {
					t.Errorf("shoulder list (minted, draws, collisions) = %v, want /x9 [4 4 1], /q7 [0 0 0], 4 shoulders", got)
				}
				if n := mintCount(t, l.Pool, `select count(*) from ark`); n != 4 {
					t.Fatalf("%d ARKs, want the existing one and 3 new", n)
				}
			})
		})
	}
}

func TestMintTenCollisionsFailTheRow(t *testing.T) {
	t.Parallel()
	l := mintLedger(t)
	ctx := context.Background()
	blade := existingBlade(t, l)
	dir := t.TempDir()
	in := manifest(t, dir, "m.csv", fixtures.ManifestConfig{Rows: 2, Seed: 3})
	rejects := filepath.Join(dir, "rejects.csv")
	// the first row always draws the existing blade; the second a fresh one after ten
	blades := func(int) ark.BladeSource {
		s := make([]string, 0, 11)
		for range 10 {
			s = append(s, blade)
		}
		return ark.NewScriptedBlades(append(s, "mnpqrstv")...)
	}
	sink, err := loader.PrepareMint(ctx, l, loader.MintConfig{ClientID: "c1", Blades: blades, NameCheck: loader.CheckAlways})
	if err != nil {
		t.Fatal(err)
	}
	var rowErr *textin.RowError
	rw := pipeline.NewRejectWriter(rejects)
	sum, err := pipeline.Run(ctx, pipeline.RunConfig{Inputs: []string{in}, Sink: sink, Workers: 1, BatchSize: 1, Rejects: rw})
	if err != nil {
		t.Fatal(err)
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	if sum.Minted != 1 || sum.Rejected != 1 || sum.Collisions != 10 || sum.Draws != 11 {
		t.Fatalf("summary %+v, want 1 minted, 1 rejected, 10 collisions in 11 draws", sum)
	}
	// the typed error, through a direct worker write
	w, err := sink.OpenWorker(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	b := &pipeline.Batch{Rows: []pipeline.Row{{Record: pipeline.Record{RequestID: "fresh", Has: pipeline.HasRequestID,
		Source: textin.Location{File: "x.csv", Line: 2, Record: 1}}}}}
	b.Rows[0].Digest = pipeline.PayloadDigest(&b.Rows[0].Record)
	if err := w.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	r := b.Rows[0]
	var ce *loader.CollisionError
	if r.Outcome != pipeline.OutcomeRejected || r.Reject == nil || !errors.As(r.Reject, &rowErr) || !errors.As(r.Reject.Err, &ce) {
		t.Fatalf("row: outcome %v, reject %v; want a *loader.CollisionError", r.Outcome, r.Reject)
	}
	if ce.Draws != 10 {
		t.Fatalf("CollisionError.Draws = %d, want 10", ce.Draws)
	}
	recs := readCSV(t, rejects)
	if len(recs) != 2 || recs[1][0] != in || recs[1][1] != "2" || recs[1][3] != "obj-000000001" || !strings.Contains(recs[1][5], "after 10 draws") {
		t.Fatalf("reject file: %q", recs)
	}
	if n := mintCount(t, l.Pool, `select count(*) from ark`); n != 2 {
		t.Fatalf("%d ARKs, want 2 (the existing one and one new)", n)
	}
}

func TestMintChangedPayloadRejectedLedgerUntouched(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l := mintLedgerIn(t, db)
		ctx := context.Background()
		dir := t.TempDir()
		in := filepath.Join(dir, "m.csv")
		write := func(url string) {
			body := "request_id,url,what\nr1,https://example.org/1,One\nr2," + url + ",Two\nr3,https://example.org/3,Three\n"
			if err := os.WriteFile(in, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write("https://example.org/2")
		if _, err := doMint(t, ctx, l, mintRun{cfg: loader.MintConfig{ClientID: "c1"}, run: pipeline.RunConfig{Inputs: []string{in}}}); err != nil {
			t.Fatal(err)
		}
		var r2ARK string
		if err := l.Pool.QueryRow(ctx, `select ark from mint_receipt where request_id = 'r2'`).Scan(&r2ARK); err != nil {
			t.Fatal(err)
		}
		write("https://example.org/changed")
		rejects := filepath.Join(dir, "rejects.csv")
		sum, err := doMint(t, ctx, l, mintRun{cfg: loader.MintConfig{ClientID: "c1", ReceiptCheck: loader.CheckNever},
			run: pipeline.RunConfig{Inputs: []string{in}}, rejects: rejects})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Replayed != 2 || sum.Rejected != 1 || sum.Minted != 0 {
			t.Fatalf("summary %+v, want 2 replayed, 1 rejected", sum)
		}
		recs := readCSV(t, rejects)
		if len(recs) != 2 || recs[1][3] != "r2" || recs[1][4] != "request_id" || !strings.Contains(recs[1][5], "ark:"+r2ARK) {
			t.Fatalf("reject file %q, want r2 rejected naming ark:%s", recs, r2ARK)
		}
		var url string
		if err := l.Pool.QueryRow(ctx, `select url from ark where ark = $1`, r2ARK).Scan(&url); err != nil {
			t.Fatal(err)
		}
		if url != "https://example.org/2" {
			t.Fatalf("ledger changed: url %q", url)
		}
		if !strings.Contains(recs[1][5], "(url differs from the ARK's)") {
			t.Fatalf("reject reason %q does not name the field url", recs[1][5])
		}
		checkLedger(t, l.Pool, 3)
		// the ARK repointed since to the manifest's URL: no field differs, the digest does
		// (as the single operator: c1 holds no ark:update scope)
		mintExec(t, l.Pool, `select ark_repoint($1, 'https://example.org/changed', null, 'test')`, r2ARK)
		if _, err := doMint(t, ctx, l, mintRun{cfg: loader.MintConfig{ClientID: "c1"},
			run: pipeline.RunConfig{Inputs: []string{in}}, rejects: rejects}); err != nil {
			t.Fatal(err)
		}
		recs = readCSV(t, rejects)
		if len(recs) != 2 || !strings.Contains(recs[1][5], "payload digest differs") {
			t.Fatalf("reject file %q, want r2 rejected for its payload digest", recs)
		}
	})
}

func TestMintDuplicatesWithinManifest(t *testing.T) {
	t.Parallel()
	l := mintLedger(t)
	ctx := context.Background()
	dir := t.TempDir()
	in := filepath.Join(dir, "m.csv")
	var body strings.Builder
	body.WriteString("request_id,url\n")
	for i := range 30 {
		fmt.Fprintf(&body, "id%d,https://example.org/%d\n", i, i)
	}
	body.WriteString("id3,https://example.org/3\n")       // identical: replays
	body.WriteString("id4,https://example.org/changed\n") // differing: rejected
	body.WriteString("id3,https://example.org/3\n")       // identical again
	if err := os.WriteFile(in, []byte(body.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	mm := filepath.Join(dir, "map.csv")
	rejects := filepath.Join(dir, "rejects.csv")
	// batch 4 puts the duplicates in later batches than their first occurrence
	sum, err := doMint(t, ctx, l, mintRun{cfg: loader.MintConfig{ClientID: "c1"},
		run: pipeline.RunConfig{Inputs: []string{in}, BatchSize: 4, Workers: 3}, mapPath: mm, rejects: rejects})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Minted != 30 || sum.Replayed != 2 || sum.Rejected != 1 {
		t.Fatalf("summary %+v, want 30 minted, 2 replayed, 1 rejected", sum)
	}
	m := readCSV(t, mm)
	if len(m) != 33 || m[31][0] != "id3" || m[31][1] != m[4][1] || m[31][2] != "replayed" || m[32][1] != m[4][1] {
		t.Fatalf("mint map tail %q, id3 first got %q", m[30:], m[4])
	}
	recs := readCSV(t, rejects)
	if len(recs) != 2 || recs[1][3] != "id4" || !strings.Contains(recs[1][5], m[5][1]) {
		t.Fatalf("reject file %q, want id4 rejected naming %s", recs, m[5][1])
	}
	checkLedger(t, l.Pool, 30)
	// in one batch as well; the reject also names where the first occurrence is
	sum, err = doMint(t, ctx, l, mintRun{cfg: loader.MintConfig{ClientID: "c2", Shoulder: "/z3"},
		run: pipeline.RunConfig{Inputs: []string{in}, BatchSize: 800, Workers: 1}, mapPath: mm, rejects: rejects}) // the first batch (800/8) holds all 33 rows
	if err != nil {
		t.Fatal(err)
	}
	if sum.Minted != 30 || sum.Replayed != 2 || sum.Rejected != 1 {
		t.Fatalf("one batch: summary %+v, want 30 minted, 2 replayed, 1 rejected", sum)
	}
	m = readCSV(t, mm)
	recs = readCSV(t, rejects)
	if len(recs) != 2 || recs[1][3] != "id4" || !strings.Contains(recs[1][5], m[5][1]) || !strings.Contains(recs[1][5], "m.csv:6 (record 5)") {
		t.Fatalf("reject file %q, want id4 rejected naming %s and m.csv:6 (record 5)", recs, m[5][1])
	}
}

func TestMintBadRowsRejectOnlyThemselves(t *testing.T) {
	t.Parallel()
	l := mintLedger(t)
	ctx := context.Background()
	dir := t.TempDir()
	st, err := fixtures.CreateManifestCSV(filepath.Join(dir, "m.csv"), fixtures.ManifestConfig{Rows: 30, Seed: 4, BadEvery: 6})
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "m.csv")
	rejects := filepath.Join(dir, "rejects.csv")
	sum, err := doMint(t, ctx, l, mintRun{cfg: loader.MintConfig{ClientID: "c1"}, run: pipeline.RunConfig{Inputs: []string{in}}, rejects: rejects})
	if err != nil {
		t.Fatal(err)
	}
	if st.Bad != 5 || sum.Rejected != 5 || sum.Minted != 25 {
		t.Fatalf("summary %+v with %d bad rows, want 25 minted and 5 rejected", sum, st.Bad)
	}
	recs := readCSV(t, rejects)
	want := [][2]string{{"7", "what"}, {"13", "who"}, {"19", "request_id"}, {"25", "url"}, {"31", "url"}} // line = row + 1
	for i, w := range want {
		r := recs[i+1]
		if r[0] != in || r[1] != w[0] || r[4] != w[1] || r[5] == "" {
			t.Errorf("reject %d: %q, want line %s field %s", i, r, w[0], w[1])
		}
	}
	checkLedger(t, l.Pool, 25)
}

func TestMintServerRefusalRejectsOneRow(t *testing.T) {
	t.Parallel()
	for _, v := range []struct{ bisect, pgx bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		t.Run(fmt.Sprintf("bisect=%v,pgx=%v", v.bisect, v.pgx), func(t *testing.T) {
			l := mintLedger(t)
			ctx := context.Background()
			sink, err := loader.PrepareMint(ctx, l, loader.MintConfig{ClientID: "c1", PgxCopyFrom: v.pgx, Hooks: loader.MintHooks{Bisect: v.bisect}})
			if err != nil {
				t.Fatal(err)
			}
			w, err := sink.OpenWorker(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			// rows that skipped validation: the server refuses the NUL byte and the bad UTF-8
			b := &pipeline.Batch{}
			for i := range 9 {
				rec := pipeline.Record{Source: textin.Location{File: "x.csv", Line: i + 2, Record: i + 1}}
				rec.Set(pipeline.FieldRequestID, fmt.Sprintf("s%d", i))
				rec.Set(pipeline.FieldWhat, "title")
				switch i {
				case 3:
					rec.Set(pipeline.FieldWhat, "nul\x00byte")
				case 6:
					rec.Set(pipeline.FieldWho, "bad \xff octet")
				}
				b.Rows = append(b.Rows, pipeline.Row{Record: rec, Digest: pipeline.PayloadDigest(&rec)})
			}
			if err := w.Write(ctx, b); err != nil {
				t.Fatal(err)
			}
			for i, r := range b.Rows {
				bad := i == 3 || i == 6
				var sr *loader.ServerRefusalError
				switch {
				case bad && (r.Outcome != pipeline.OutcomeRejected || !errors.As(r.Reject.Err, &sr) || sr.Code != "22021"):
					t.Errorf("row %d: %v %v, want rejected with SQLSTATE 22021", i, r.Outcome, r.Reject)
				case bad && r.Reject.Loc.Line != i+2:
					t.Errorf("row %d: reject location %v", i, r.Reject.Loc)
				case !bad && r.Outcome != pipeline.OutcomeMinted:
					t.Errorf("row %d: %v %v, want minted", i, r.Outcome, r.Reject)
				}
			}
			if n := mintCount(t, l.Pool, `select count(*) from ark`); n != 7 {
				t.Fatalf("%d ARKs, want 7", n)
			}
			if n := mintCount(t, l.Pool, `select count(*) from mint_receipt`); n != 7 {
				t.Fatalf("%d receipts, want 7", n)
			}
		})
	}
}

func TestMintCancelMidCopyThenRerun(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l := mintLedgerIn(t, db)
		dir := t.TempDir()
		in := manifest(t, dir, "m.csv", fixtures.ManifestConfig{Rows: 600, Seed: 5})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var once sync.Once
		var batches sync.Map
		hook := func(worker int, table string, n int) {
			// cancel in the middle of a worker's fourth COPY of ARKs (a full batch of 100 after the
			// ramp of 12, 25, 50), after some batches have committed
			if table == "ark" && n == 1 {
				v, _ := batches.LoadOrStore(worker, new(int))
				*v.(*int)++
			}
			if v, ok := batches.Load(worker); ok && *v.(*int) == 4 && table == "ark" && n == 50 {
				once.Do(cancel)
			}
		}
		_, err := doMint(t, ctx, l, mintRun{cfg: loader.MintConfig{ClientID: "c1", Hooks: loader.MintHooks{CopyRow: hook}},
			run: pipeline.RunConfig{Inputs: []string{in}, BatchSize: 100}, mapPath: filepath.Join(dir, "map.csv")})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("run error %v, want context.Canceled", err)
		}
		if _, statErr := os.Stat(filepath.Join(dir, "map.csv")); !errors.Is(statErr, os.ErrNotExist) {
			t.Fatalf("a cancelled run left a mint map: %v", statErr)
		}
		done := mintCount(t, l.Pool, `select count(*) from ark`)
		if done == 0 || done >= 600 {
			t.Fatalf("%d ARKs after the cancel, want some but not all", done)
		}
		checkLedger(t, l.Pool, done)
		mm := filepath.Join(dir, "map.csv")
		sum, err := doMint(t, context.Background(), l, mintRun{cfg: loader.MintConfig{ClientID: "c1"},
			run: pipeline.RunConfig{Inputs: []string{in}, BatchSize: 100}, mapPath: mm})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Minted+sum.Replayed != 600 || sum.Replayed != done {
			t.Fatalf("re-run %+v, want %d replayed and the rest minted", sum, done)
		}
		checkLedger(t, l.Pool, 600)
		if recs := readCSV(t, mm); len(recs) != 601 {
			t.Fatalf("mint map has %d lines, want 601", len(recs))
		}
	})
}

func TestMintCrashBeforeMintMapThenRerun(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l := mintLedgerIn(t, db)
		ctx := context.Background()
		dir := t.TempDir()
		in := manifest(t, dir, "m.csv", fixtures.ManifestConfig{Rows: 25, Seed: 6})
		mm := filepath.Join(dir, "map.csv")
		if _, err := doMint(t, ctx, l, mintRun{cfg: loader.MintConfig{ClientID: "c1"}, run: pipeline.RunConfig{Inputs: []string{in}}, mapPath: mm, abort: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(mm); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("mint map exists after the simulated crash: %v", err)
		}
		sum, err := doMint(t, ctx, l, mintRun{cfg: loader.MintConfig{ClientID: "c1"}, run: pipeline.RunConfig{Inputs: []string{in}}, mapPath: mm})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Replayed != 25 || sum.Minted != 0 {
			t.Fatalf("re-run %+v, want 25 replayed", sum)
		}
		recs := readCSV(t, mm)
		if len(recs) != 26 {
			t.Fatalf("mint map has %d lines", len(recs))
		}
		for _, r := range recs[1:] {
			var key string
			if err := l.Pool.QueryRow(ctx, `select ark from mint_receipt where request_id = $1`, r[0]).Scan(&key); err != nil {
				t.Fatal(err)
			}
			if r[1] != "ark:"+key || r[2] != "replayed" {
				t.Fatalf("mint map row %q, ledger has %s", r, key)
			}
		}
		checkLedger(t, l.Pool, 25)
	})
}

func TestMintConcurrentRunsMintOnce(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l := mintLedgerIn(t, db)
		dir := t.TempDir()
		in := manifest(t, dir, "m.csv", fixtures.ManifestConfig{Rows: 300, Seed: 7})
		var wg sync.WaitGroup
		sums := make([]pipeline.Summary, 2)
		errs := make([]error, 2)
		for i := range 2 {
			wg.Go(func() {
				sums[i], errs[i] = doMint(t, context.Background(), l, mintRun{cfg: loader.MintConfig{ClientID: "c1", ReceiptCheck: loader.CheckNever},
					run: pipeline.RunConfig{Inputs: []string{in}, BatchSize: 20, Workers: 2}})
			})
		}
		wg.Wait()
		for i := range 2 {
			if errs[i] != nil {
				t.Fatalf("run %d: %v", i, errs[i])
			}
			if sums[i].Minted+sums[i].Replayed != 300 || sums[i].Rejected != 0 {
				t.Fatalf("run %d: %+v", i, sums[i])
			}
		}
		if sums[0].Minted+sums[1].Minted != 300 {
			t.Fatalf("minted %d + %d, want 300 in all", sums[0].Minted, sums[1].Minted)
		}
		checkLedger(t, l.Pool, 300)
	})
}

func TestMintReachRefusalsWriteNothing(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l := mintLedgerIn(t, db)
		ctx := context.Background()
		in := manifest(t, t.TempDir(), "m.csv", fixtures.ManifestConfig{Rows: 3, Seed: 8})
		mintExec(t, l.Pool, `update shoulder set status = 'retired', retired_at = now() where shoulder = '/q7'`)
		cases := []struct {
			client, shoulder, rule string
		}{
			{"nobody", "", "not registered"},
			{"gone", "", "deactivated"},
			{"expired", "/x9", "expired"},
			{"reader", "", "ark:mint"},
			{"c1", "/z3", "not one of the client's manager's shoulders"},
			{"c2", "/x9", "not one of the client's manager's shoulders"},
			{"c1", "/b5", "reserved"},
			{"c1", "/q7", "retired"},
			{"pinned", "", "retired"},
			{"pinned", "/x9", "pinned to another shoulder"},
			{"naanwide", "", "no shoulder"},
			{"c1", "/k4", "not registered"},
		}
		for _, c := range cases {
			_, err := doMint(t, ctx, l, mintRun{cfg: loader.MintConfig{ClientID: c.client, Shoulder: c.shoulder}, run: pipeline.RunConfig{Inputs: []string{in}}})
			var re *loader.ReachError
			if !errors.As(err, &re) || !strings.Contains(re.Rule, c.rule) {
				t.Errorf("client %s shoulder %q: %v, want a ReachError naming %q", c.client, c.shoulder, err, c.rule)
			}
		}
		// a NAAN-wide client may mint in any shoulder of its NAAN, given one
		sum, err := doMint(t, ctx, l, mintRun{cfg: loader.MintConfig{ClientID: "naanwide", Shoulder: "99999/z3"}, run: pipeline.RunConfig{Inputs: []string{in}}})
		if err != nil || sum.Minted != 3 {
			t.Fatalf("naanwide in /z3: %+v %v", sum, err)
		}
		if n := mintCount(t, l.Pool, `select count(*) from ark`); n != 3 {
			t.Fatalf("%d ARKs, want only the 3 of the NAAN-wide client", n)
		}
		// reach changed during the run: the database refuses the batch (AK004; on Citus the
		// COPY's refusal comes back as XX000, and the sink reads the reach again to name it)
		sink, err := loader.PrepareMint(ctx, l, loader.MintConfig{ClientID: "c1"})
		if err != nil {
			t.Fatal(err)
		}
		mintExec(t, l.Pool, `update client set active = false where client_id = 'c1'`)
		_, err = pipeline.Run(ctx, pipeline.RunConfig{Inputs: []string{in}, Sink: sink, Workers: 1})
		var re *loader.ReachError
		code := ledger.SQLState(err)
		if !errors.As(err, &re) || code != ledger.CodeReachRefused && !(db.Citus() && code == codeCitusCopy) {
			t.Fatalf("run after deactivation: %v, want a ReachError with SQLSTATE AK004", err)
		}
		if n := mintCount(t, l.Pool, `select count(*) from ark`); n != 3 {
			t.Fatalf("%d ARKs after the refused run, want 3", n)
		}
	})
}

// TestMintQuota: with a daily quota of 5 and 10 rows, the first 5 rows in manifest order mint
// and the rest are rejected naming the quota, whatever the workers and batches; the same
// command the same day replays the 5 and rejects the other 5 (exit 1, not a refusal); the next
// UTC day it completes the job. A client of the same manager without receipts is refused.
func TestMintQuota(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l := mintLedgerIn(t, db)
		ctx := context.Background()
		dir := t.TempDir()
		mintExec(t, l.Pool, `update manager set quota_per_day = 5 where name = 'm1'`)
		in := filepath.Join(dir, "q.csv")
		body := "request_id,what\n"
		for i := 1; i <= 10; i++ {
			body += fmt.Sprintf("q%d,Object %d\n", i, i)
		}
		if err := os.WriteFile(in, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		status := func(mapPath string) string {
			var b strings.Builder
			for _, r := range readCSV(t, mapPath)[1:] {
				b.WriteString(r[0] + ":" + r[2] + " ")
			}
			return strings.TrimSpace(b.String())
		}
		rejected := func(path string) string {
			var ids []string
			for _, r := range readCSV(t, path)[1:] {
				if !strings.Contains(r[5], "daily quota of 5") {
					t.Fatalf("reject %q does not name the quota", r)
				}
				ids = append(ids, r[3])
			}
			return strings.Join(ids, " ")
		}
		run := func(name string) (pipeline.Summary, string, string, error) {
			mm, rej := filepath.Join(dir, name+".csv"), filepath.Join(dir, name+".rejects.csv")
			sum, err := doMint(t, ctx, l, mintRun{cfg: loader.MintConfig{ClientID: "c1"},
				run: pipeline.RunConfig{Inputs: []string{in}, Workers: 3, BatchSize: 2}, mapPath: mm, rejects: rej})
			return sum, mm, rej, err
		}
		sum, mm, rej, err := run("first")
		if err != nil {
			t.Fatal(err)
		}
		if sum.Minted != 5 || sum.Rejected != 5 {
			t.Fatalf("summary %+v, want 5 minted and 5 rejected for quota", sum)
		}
		if got := status(mm); got != "q1:minted q2:minted q3:minted q4:minted q5:minted" {
			t.Fatalf("first run mint map %q, want q1..q5 minted", got)
		}
		if got := rejected(rej); got != "q6 q7 q8 q9 q10" {
			t.Fatalf("first run rejects %q, want q6..q10", got)
		}
		// the same day: the 5 replay, the other 5 are rejected for the quota
		sum, mm, rej, err = run("again")
		if err != nil {
			t.Fatalf("second run the same day: %v, want a partial run", err)
		}
		if sum.Minted != 0 || sum.Replayed != 5 || sum.Rejected != 5 {
			t.Fatalf("second run %+v, want 5 replayed and 5 rejected", sum)
		}
		if got := status(mm); got != "q1:replayed q2:replayed q3:replayed q4:replayed q5:replayed" {
			t.Fatalf("second run mint map %q", got)
		}
		if got := rejected(rej); got != "q6 q7 q8 q9 q10" {
			t.Fatalf("second run rejects %q, want q6..q10", got)
		}
		checkLedger(t, l.Pool, 5)
		// a client of the same manager with no receipt at all: refused before reading
		_, err = doMint(t, ctx, l, mintRun{cfg: loader.MintConfig{ClientID: "pinned"}, run: pipeline.RunConfig{Inputs: []string{in}}})
		var re *loader.ReachError
		if !errors.As(err, &re) || !strings.Contains(re.Rule, "quota") {
			t.Fatalf("client without receipts over quota: %v, want a quota refusal", err)
		}
		// the next UTC day (moved back by a day): the same command completes the job
		mintExec(t, l.Pool, `update mint_quota set day = day - 1`)
		sum, mm, _, err = run("next")
		if err != nil {
			t.Fatal(err)
		}
		if sum.Minted != 5 || sum.Replayed != 5 || sum.Rejected != 0 {
			t.Fatalf("next day %+v, want 5 minted and 5 replayed", sum)
		}
		if got := status(mm); got != "q1:replayed q2:replayed q3:replayed q4:replayed q5:replayed q6:minted q7:minted q8:minted q9:minted q10:minted" {
			t.Fatalf("next day mint map %q", got)
		}
		checkLedger(t, l.Pool, 10)
		if n := mintCount(t, l.Pool, `select sum(minted) from mint_quota`); n != 10 {
			t.Fatalf("quota counters sum to %d, want 10 (replays excluded)", n)
		}
	})
}

// TestMintReplayIgnoresShoulder: a run's replays do not depend on the shoulder choice. After
// the shoulder the ARKs were minted in is retired, or with --shoulder naming a reserved one, or
// for a client with no shoulder to choose at all, the same manifest replays every ARK in its
// original shoulder; only rows that need a new mint are rejected, naming the rule.
func TestMintReplayIgnoresShoulder(t *testing.T) {
	t.Parallel()
	l := mintLedger(t)
	ctx := context.Background()
	dir := t.TempDir()
	first := filepath.Join(dir, "first.csv")
	more := filepath.Join(dir, "more.csv")
	if err := os.WriteFile(first, []byte("request_id,what\nr1,One\nr2,Two\nr3,Three\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(more, []byte("request_id,what\nr1,One\nn1,New\nr2,Two\nr3,Three\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ client, shoulder string }{{"c1", "/q7"}, {"naanwide", "/z3"}} {
		if sum, err := doMint(t, ctx, l, mintRun{cfg: loader.MintConfig{ClientID: c.client, Shoulder: c.shoulder},
			run: pipeline.RunConfig{Inputs: []string{first}}}); err != nil || sum.Minted != 3 {
			t.Fatalf("%s in %s: %+v %v", c.client, c.shoulder, sum, err)
		}
	}
	mintExec(t, l.Pool, `update shoulder set status = 'retired', retired_at = now() where shoulder = '/q7'`)
	cases := []struct {
		client, shoulder, in string
		replayed, rejected   int64
		rule                 string
	}{
		{"c1", "/q7", first, 3, 0, ""},
		{"c1", "/b5", first, 3, 0, ""},
		{"c1", "/q7", more, 3, 1, "retired"},
		{"c1", "/b5", more, 3, 1, "reserved"},
		{"c1", "/k4", more, 3, 1, "not registered"},
		{"c1", "/z3", more, 3, 1, "not one of the client's manager's shoulders"},
		{"naanwide", "", first, 3, 0, ""},
		{"naanwide", "", more, 3, 1, "no shoulder"},
	}
	for _, c := range cases {
		rej := filepath.Join(dir, "rejects.csv")
		_ = os.Remove(rej)
		sink, err := loader.PrepareMint(ctx, l, loader.MintConfig{ClientID: c.client, Shoulder: c.shoulder})
		if err != nil {
			t.Fatalf("%s %q: %v, want a run that replays", c.client, c.shoulder, err)
		}
		if nm := sink.Target().NoNewMints; nm == nil || (c.rule != "" && !strings.Contains(nm.Rule, c.rule)) {
			t.Errorf("%s %q: NoNewMints %v, want one naming %q", c.client, c.shoulder, nm, c.rule)
		}
		sum, err := doMint(t, ctx, l, mintRun{cfg: loader.MintConfig{ClientID: c.client, Shoulder: c.shoulder},
			run: pipeline.RunConfig{Inputs: []string{c.in}}, rejects: rej})
		if err != nil || sum.Replayed != c.replayed || sum.Rejected != c.rejected || sum.Minted != 0 {
			t.Errorf("%s %q %s: %+v %v, want %d replayed, %d rejected", c.client, c.shoulder, filepath.Base(c.in), sum, err, c.replayed, c.rejected)
			continue
		}
		if c.rejected > 0 {
			recs := readCSV(t, rej)
			if len(recs) != 2 || recs[1][3] != "n1" || !strings.Contains(recs[1][5], c.rule) {
				t.Errorf("%s %q: rejects %q, want n1 naming %q", c.client, c.shoulder, recs, c.rule)
			}
		}
	}
	// the default shoulder mints the new row; the replays keep their original shoulder
	sum, err := doMint(t, ctx, l, mintRun{cfg: loader.MintConfig{ClientID: "c1"}, run: pipeline.RunConfig{Inputs: []string{more}}})
	if err != nil || sum.Minted != 1 || sum.Replayed != 3 {
		t.Fatalf("c1 in its default shoulder: %+v %v", sum, err)
	}
	if n := mintCount(t, l.Pool, `select count(*) from ark a join shoulder s on s.id = a.shoulder_id where s.shoulder = '/q7'`); n != 3 {
		t.Fatalf("%d ARKs in /q7, want the 3 first minted there", n)
	}
	if n := mintCount(t, l.Pool, `select count(*) from ark`); n != 7 {
		t.Fatalf("%d ARKs, want 7", n)
	}
}

// TestMintDenseShoulder mints into a shoulder with 3-character blades (24,389 names), where
// thousands of draws collide: every collision is counted and redrawn, none throws a batch away
// twice, and every request ID ends with exactly one ARK.
func TestMintDenseShoulder(t *testing.T) {
	t.Parallel()
	for _, check := range []loader.Check{loader.CheckAuto, loader.CheckNever} {
		t.Run(check.String(), func(t *testing.T) {
			l := mintLedger(t)
			ctx := context.Background()
			mintExec(t, l.Pool, `insert into shoulder (naan, shoulder, manager_id, blade_length)
				select '99999', '/d4', id, 3 from manager where name = 'm1'`)
			in := manifest(t, t.TempDir(), "m.csv", fixtures.ManifestConfig{Rows: 6000, Seed: 10})
			sink, err := loader.PrepareMint(ctx, l, loader.MintConfig{ClientID: "c1", Shoulder: "/d4", NameCheck: check})
			if err != nil {
				t.Fatal(err)
			}
			sum, err := pipeline.Run(ctx, pipeline.RunConfig{Inputs: []string{in}, Sink: sink, Workers: 2, BatchSize: 500})
			if err != nil {
				t.Fatal(err)
			}
			st := sink.Stats()
			if sum.Minted != 6000 || sum.Collisions < 300 || sum.Draws != 6000+sum.Collisions {
				t.Fatalf("summary %+v, want 6000 minted and hundreds of collisions, each redrawn", sum)
			}
			if n := mintCount(t, l.Pool, `select count(*) from ark where assigned_name like 'd4%'`); n != 6000 {
				t.Fatalf("%d ARKs in /d4", n)
			}
			var draws, collisions int64
			if err := l.Pool.QueryRow(ctx, tallyQuery, "/d4").Scan(&draws, &collisions); err != nil {
				t.Fatal(err)
			}
			if draws != sum.Draws || collisions != sum.Collisions {
				t.Fatalf("shoulder counters %d/%d, run %d/%d", draws, collisions, sum.Draws, sum.Collisions)
			}
			t.Logf("%s: %d collisions in %d draws; %d retries (%d conflicts), %d names looked up", check, sum.Collisions, sum.Draws, st.Retries, st.Conflicts, st.LookedUpNames)
			if check == loader.CheckAuto && st.Conflicts != 0 {
				t.Errorf("%d batches retried after conflicts with names looked up first", st.Conflicts)
			}
		})
	}
}

// TestMintChunksRedrawInPlace: with CheckChunks one batch of 2,502 rows goes in chunks of
// loader.ChunkRows under savepoints. A chunk that draws an existing name is rolled back to its
// savepoint alone, the name is counted and redrawn, and the chunk goes again; a row whose redraw
// names an existing ARK again until it runs out of draws is rejected with a *CollisionError,
// and the later occurrence of its request ID with it; the later occurrence of a redrawn row
// replays the new ARK. The batch commits once, the counters as settled.
func TestMintChunksRedrawInPlace(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l := mintLedgerIn(t, db)
		ctx := context.Background()
		existing := []string{existingBlade(t, l), "zxwvtsrq"}
		mintByHand(t, l, existing[1])
		// rows 0..2501: row 1200 repeats row 1199, row 2401 repeats row 2400; the 2,500 first
		// occurrences draw in order, 1199 (chunk 2) an existing blade and 2399 (chunk 3, manifest
		// row 2400) the other; their redraws come last: a fresh one for 1199, the existing one
		// again for 2400, which then has had its two draws
		const n = 2502
		rows := make([]pipeline.Row, 0, n)
		script := make([]string, 0, n)
		for k := 0; len(rows) < n; k++ {
			rec := pipeline.Record{RequestID: fmt.Sprintf("obj-%06d", k), URL: fmt.Sprintf("https://example.org/%d", k),
				Has: pipeline.HasRequestID | pipeline.HasURL, Source: textin.Location{File: "m.csv", Line: len(rows) + 2, Record: len(rows) + 1}}
			r := pipeline.Row{Record: rec}
			r.Digest = pipeline.PayloadDigest(&r.Record)
			rows = append(rows, r)
			switch k {
			case 1199:
				script = append(script, existing[0])
			case 2399:
				script = append(script, existing[1])
			default:
				script = append(script, chunkBlade(k))
			}
			if k == 1199 || k == 2399 {
				dup := r
				dup.Record.Source = textin.Location{File: "m.csv", Line: len(rows) + 2, Record: len(rows) + 1}
				rows = append(rows, dup)
			}
		}
		script = append(script, "ghjkmnpq", existing[1])
		sink, err := loader.PrepareMint(ctx, l, loader.MintConfig{ClientID: "c1", NameCheck: loader.CheckChunks, MaxDraws: 2,
			Blades: func(int) ark.BladeSource { return ark.NewScriptedBlades(script...) }})
		if err != nil {
			t.Fatal(err)
		}
		w, err := sink.OpenWorker(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		b := &pipeline.Batch{Rows: rows}
		if err := w.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		fresh := "ark:99999/" + ark.MintName("99999", "/x9", []byte("ghjkmnpq"))
		if r := b.Rows[1199]; r.Outcome != pipeline.OutcomeMinted || r.ARK != fresh {
			t.Errorf("row 1199: %v %s, want minted %s (redrawn)", r.Outcome, r.ARK, fresh)
		}
		if r := b.Rows[1200]; r.Outcome != pipeline.OutcomeReplayed || r.ARK != fresh {
			t.Errorf("row 1200 (repeats 1199): %v %s, want replayed %s", r.Outcome, r.ARK, fresh)
		}
		var ce *loader.CollisionError
		if r := b.Rows[2400]; r.Outcome != pipeline.OutcomeRejected || r.Reject == nil || !errors.As(r.Reject.Err, &ce) || ce.Draws != 2 {
			t.Errorf("row 2400: %v %v, want rejected with a CollisionError after 2 draws", r.Outcome, r.Reject)
		}
		var fe *loader.FirstRejectedError
		if r := b.Rows[2401]; r.Outcome != pipeline.OutcomeRejected || r.Reject == nil || !errors.As(r.Reject.Err, &fe) {
			t.Errorf("row 2401 (repeats 2400): %v %v, want rejected with its first", r.Outcome, r.Reject)
		}
		minted := 0
		for _, r := range b.Rows {
			if r.Outcome == pipeline.OutcomeMinted {
				minted++
			}
		}
		if minted != 2499 || b.Draws != 2502 || b.Collisions != 3 {
			t.Errorf("batch: %d minted, %d draws, %d collisions; want 2499, 2502 and 3", minted, b.Draws, b.Collisions)
		}
		if n := mintCount(t, l.Pool, `select count(*) from ark`); n != 2+2499 {
			t.Errorf("%d ARKs, want the 2 existing and 2,499 new", n)
		}
		var got string
		if err := l.Pool.QueryRow(ctx, `select ark from mint_receipt where request_id = 'obj-001199'`).Scan(&got); err != nil || "ark:"+got != fresh {
			t.Errorf("receipt of obj-001199: %q %v, want %s", got, err, fresh)
		}
		var draws, collisions int64
		if err := l.Pool.QueryRow(ctx, tallyQuery, "/x9").Scan(&draws, &collisions); err != nil {
			t.Fatal(err)
		}
		if draws != 2502 || collisions != 3 {
			t.Errorf("shoulder counters draws %d collisions %d, want 2502 and 3", draws, collisions)
		}
		// one lookup of chunk 2's 1,000 names, two of chunk 3's 500
		if st := sink.Stats(); st.LookedUpNames != 2000 || st.Retries != 0 {
			t.Errorf("%d names looked up, %d batches retried; want 2000 and 0", st.LookedUpNames, st.Retries)
		}
	})
}

// chunkBlade returns a distinct 8-character blade for k < 29^4 (never one of the test's own).
func chunkBlade(k int) string {
	const alphabet = "0123456789bcdfghjkmnpqrstvwxz"
	b := []byte("2222")
	for i := 3; i >= 0; i-- {
		b[i] = alphabet[k%29]
		k /= 29
	}
	return string(b) + "3456"
}

// TestMintOneUniqueViolationNameAndReceipt: receipts are ark columns, so one optimistic COPY
// of ark (no receipt or name lookups first) can hit both ark_pkey (a drawn name that exists)
// and ark_receipt (a request ID that already has its receipt) and fails with a single 23505.
// The sink finds both by querying the ledger, replays the receipt and
// redraws the name. With CheckChunks the chunk's name is found and redrawn under the chunk's
// savepoint first; the chunk is refused again for the receipt, whose lookup finds no name, and
// the batch is retried whole.
func TestMintOneUniqueViolationNameAndReceipt(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		check    loader.Check
		copyFrom bool
	}{{loader.CheckNever, false}, {loader.CheckNever, true}, {loader.CheckChunks, false}} {
		copyFrom := mode.copyFrom
		t.Run(fmt.Sprintf("%s/pgx=%v", mode.check, copyFrom), func(t *testing.T) {
			pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
				l := mintLedgerIn(t, db)
				ctx := context.Background()
				blade := existingBlade(t, l)
				dir := t.TempDir()
				in := filepath.Join(dir, "m.csv")
				if err := os.WriteFile(in, []byte("request_id,url,what\nr2,https://example.org/2,Two\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				first := func(int) ark.BladeSource { return ark.NewScriptedBlades("2b3c4d5f") }
				if _, err := doMint(t, ctx, l, mintRun{cfg: loader.MintConfig{ClientID: "c1", Blades: first},
					run: pipeline.RunConfig{Inputs: []string{in}, Workers: 1}}); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(in, []byte("request_id,url,what\nr4,https://example.org/4,Four\nr2,https://example.org/2,Two\nr5,https://example.org/5,Five\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				// r4 draws the existing ARK's blade; r2 is a replay the batch does not know of
				blades := func(int) ark.BladeSource {
					return ark.NewScriptedBlades(blade, "mnpqrstv", "wxz23456", "789bcdfg", "6789bcdf", "ghjkmnpq")
				}
				sum, err := doMint(t, ctx, l, mintRun{cfg: loader.MintConfig{ClientID: "c1", Blades: blades, NameCheck: mode.check,
					ReceiptCheck: loader.CheckNever, PgxCopyFrom: copyFrom}, run: pipeline.RunConfig{Inputs: []string{in}, Workers: 1, BatchSize: 10}})
				if err != nil {
					t.Fatal(err)
				}
				if sum.Minted != 2 || sum.Replayed != 1 || sum.Rejected != 0 || sum.Collisions != 1 {
					t.Fatalf("summary %+v, want 2 minted, 1 replayed, 1 collision", sum)
				}
				var r2 string
				if err := l.Pool.QueryRow(ctx, `select ark from mint_receipt where request_id = 'r2'`).Scan(&r2); err != nil {
					t.Fatal(err)
				}
				if r2 != "99999/"+ark.MintName("99999", "/x9", []byte("2b3c4d5f")) {
					t.Errorf("r2 maps to %s, want its first ARK", r2)
				}
				if n := mintCount(t, l.Pool, `select count(*) from ark where ark in (select ark from mint_receipt where request_id in ('r4', 'r5'))
					and assigned_name <> '`+ark.MintName("99999", "/x9", []byte(blade))+`'`); n != 2 {
					t.Errorf("%d new ARKs for r4 and r5 off the existing name, want 2", n)
				}
				if n := mintCount(t, l.Pool, `select count(*) from ark`); n != 4 {
					t.Errorf("%d ARKs, want the existing one, r2's and 2 new", n)
				}
			})
		})
	}
}

// TestMintRowRefusedOnAWorker: a row the ledger refuses after COPY has parsed it (here a check
// trigger installed by the test, raising 23514) is rejected alone and the rest of its batch
// lands. On Citus the trigger fires on a worker and the COPY fails with XX000, the worker's
// SQLSTATE dropped: the sink finds neither an existing receipt nor an existing name, the
// client's reach unchanged, and locates the row by re-sending halves.
func TestMintRowRefusedOnAWorker(t *testing.T) {
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l := mintLedgerIn(t, db)
		ctx := context.Background()
		conn, err := l.Pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{`set citus.enable_unsafe_triggers = on`,
			`create function test_refuse_row() returns trigger language plpgsql as $$ begin
				raise exception using errcode = '23514', message = 'test refuses ' || new.erc_what; end $$`,
			`create trigger test_refuse_row before insert on ark for each row when (new.erc_what like 'refuse%')
				execute function test_refuse_row()`} {
			if _, err := conn.Exec(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		conn.Release()
		sink, err := loader.PrepareMint(ctx, l, loader.MintConfig{ClientID: "c1"})
		if err != nil {
			t.Fatal(err)
		}
		w, err := sink.OpenWorker(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		b := &pipeline.Batch{}
		for i := range 9 {
			rec := pipeline.Record{Source: textin.Location{File: "x.csv", Line: i + 2, Record: i + 1}}
			rec.Set(pipeline.FieldRequestID, fmt.Sprintf("s%d", i))
			rec.Set(pipeline.FieldWhat, fmt.Sprintf("title %d", i))
			if i == 2 || i == 7 {
				rec.Set(pipeline.FieldWhat, fmt.Sprintf("refuse %d", i))
			}
			b.Rows = append(b.Rows, pipeline.Row{Record: rec, Digest: pipeline.PayloadDigest(&rec)})
		}
		if err := w.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
		want := ledger.CodeCheckViolation
		if db.Citus() {
			want = codeCitusCopy
		}
		for i, r := range b.Rows {
			bad := i == 2 || i == 7
			var sr *loader.ServerRefusalError
			switch {
			case bad && (r.Outcome != pipeline.OutcomeRejected || !errors.As(r.Reject.Err, &sr) || sr.Code != want ||
				!strings.Contains(sr.Message, fmt.Sprintf("refuse %d", i))):
				t.Errorf("row %d: %v %v, want rejected with SQLSTATE %s naming it", i, r.Outcome, r.Reject, want)
			case bad && r.Reject.Loc.Line != i+2:
				t.Errorf("row %d: reject location %v", i, r.Reject.Loc)
			case !bad && r.Outcome != pipeline.OutcomeMinted:
				t.Errorf("row %d: %v %v, want minted", i, r.Outcome, r.Reject)
			}
		}
		checkLedger(t, l.Pool, 7)
	})
}

// TestMintThroughEveryNode: on Citus the workers' COPY streams are spread over the coordinator
// and the workers (each takes writes); every request ID is minted once and a re-run through
// the same nodes replays them all; every worker's session runs Citus's multi-shard statements in
// sequential mode. A single-node ledger refuses further entry nodes.
func TestMintThroughEveryNode(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l := mintLedgerIn(t, db)
		ctx := t.Context()
		if !db.Citus() {
			_, err := loader.PrepareMint(ctx, l, loader.MintConfig{ClientID: "c1", EntryNodes: []*pgxpool.Pool{db.Pool}})
			if err == nil || !strings.Contains(err.Error(), "several database URLs need a Citus ledger") {
				t.Fatalf("a single-node ledger took an entry node: %v", err)
			}
			return
		}
		var nodes []*pgxpool.Pool
		for _, u := range db.WorkerURLs {
			w, err := ledger.Open(ctx, u, 4)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(w.Close)
			nodes = append(nodes, w.Pool)
		}
		// each worker's session, through whichever node, sends a transaction's multi-shard
		// statements over one connection per node (sequential mode), which Citus keeps across
		// the batches, instead of new worker backends per shard for every batch
		sink, err := loader.PrepareMint(ctx, l, loader.MintConfig{ClientID: "c1", EntryNodes: nodes})
		if err != nil {
			t.Fatal(err)
		}
		for w := range 3 {
			mode, err := loader.MintSessionSetting(ctx, sink, w, "citus.multi_shard_modify_mode")
			if err != nil || mode != "sequential" {
				t.Errorf("worker %d (node %d): citus.multi_shard_modify_mode %q, %v; want sequential", w, w%3, mode, err)
			}
		}
		dir := t.TempDir()
		in := manifest(t, dir, "m.csv", fixtures.ManifestConfig{Rows: 120, Seed: 11})
		run := mintRun{cfg: loader.MintConfig{ClientID: "c1", EntryNodes: nodes}, run: pipeline.RunConfig{Inputs: []string{in}, BatchSize: 10, Workers: 3}}
		sum, err := doMint(t, ctx, l, run)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Minted != 120 || sum.Rejected != 0 {
			t.Fatalf("first run %+v", sum)
		}
		for i, p := range nodes {
			if p.Stat().AcquireCount() == 0 {
				t.Errorf("worker node %d took no connection", i+1)
			}
		}
		checkLedger(t, l.Pool, 120)
		again, err := doMint(t, ctx, l, run)
		if err != nil {
			t.Fatal(err)
		}
		if again.Minted != 0 || again.Replayed != 120 {
			t.Fatalf("re-run %+v, want 120 replayed", again)
		}
		checkLedger(t, l.Pool, 120)
	})
}

// TestMintSmallRunConnections: a run whose rows fit in its first batch connects once, whatever
// the number of workers (the others connect with their first batch and get none); a larger run
// uses every worker, each on a connection of its own.
func TestMintSmallRunConnections(t *testing.T) {
	t.Parallel()
	l := mintLedger(t)
	dir := t.TempDir()
	for _, c := range []struct {
		rows, batch int
		want        int64
	}{{4, 0, 1}, {400, 40, 4}} {
		pool, err := pgxpool.New(t.Context(), l.Pool.Config().ConnString())
		if err != nil {
			t.Fatal(err)
		}
		own := &ledger.Ledger{Pool: pool}
		in := manifest(t, dir, fmt.Sprintf("m%d.csv", c.rows), fixtures.ManifestConfig{Rows: c.rows, Seed: uint64(50 + c.rows), Prefix: fmt.Sprintf("conn%d-", c.rows)})
		rep, err := loader.Mint(t.Context(), own, loader.MintJob{Mint: loader.MintConfig{ClientID: "c1"}, Inputs: []string{in},
			Workers: 4, BatchSize: c.batch})
		opened := pool.Stat().NewConnsCount()
		pool.Close()
		if err != nil {
			t.Fatal(err)
		}
		if rep.Summary.Minted != int64(c.rows) || opened != c.want {
			t.Errorf("%d rows on 4 workers: minted %d, opened %d connections; want %d and %d", c.rows, rep.Summary.Minted, opened, c.rows, c.want)
		}
	}
}

// On the single layout a batch's COPY runs with work_mem at 1 MB, so that the transition table
// the ark table's statement triggers read spills to a temporary file instead of growing in
// the server's memory. A test trigger records the setting its statement saw, and the
// database must have counted a temporary file; the database's own work_mem is raised first (10,000
// rows stay in its 64 MB), so only the batch's transaction can lower it.
func TestMintBatchTransitionTableSpills(t *testing.T) {
	t.Parallel()
	l := mintLedger(t)
	mintExec(t, l.Pool, `do $$ begin execute format('alter database %I set work_mem = %L', current_database(), '64MB'); end $$`)
	mintExec(t, l.Pool, `create table work_mem_seen (work_mem text)`)
	mintExec(t, l.Pool, `create function work_mem_seen() returns trigger language plpgsql as $$
		begin
			insert into work_mem_seen values (current_setting('work_mem'));
			return null;
		end $$`)
	mintExec(t, l.Pool, `create trigger zz_work_mem_seen after insert on ark for each statement execute function work_mem_seen()`)
	in := manifest(t, t.TempDir(), "spill.csv", fixtures.ManifestConfig{Rows: 10000, Seed: 71, Prefix: "spill-"})
	pool, err := pgxpool.New(t.Context(), l.Pool.Config().ConnString()) // new sessions: the database's work_mem
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	own := &ledger.Ledger{Pool: pool}
	rep, err := loader.Mint(t.Context(), own, loader.MintJob{Mint: loader.MintConfig{ClientID: "c1"}, Inputs: []string{in},
		Workers: 1, BatchSize: 10000})
	if err != nil {
		t.Fatal(err)
	}
	var session string
	if err := pool.QueryRow(t.Context(), `show work_mem`).Scan(&session); err != nil {
		t.Fatal(err)
	}
	// the batch's transition table went to a temporary file: the database counts one once the
	// mint's sessions have ended (a session reports its counts when it ends, at the latest)
	pool.Close()
	var tempFiles int64
	for deadline := time.Now().Add(30 * time.Second); tempFiles == 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		tempFiles = mintCount(t, l.Pool, `select temp_files from pg_stat_database where datname = current_database()`)
	}
	if tempFiles == 0 {
		t.Errorf("no temporary file in the database after minting 10,000 rows in one batch: the transition table stayed in memory")
	}
	rows, err := l.Pool.Query(t.Context(), `select work_mem from work_mem_seen`)
	if err != nil {
		t.Fatal(err)
	}
	seen, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if rep.Summary.Minted != 10000 || session != "64MB" || len(seen) == 0 {
		t.Fatalf("minted %d, session work_mem %s, %d statements seen; want 10000, 64MB and at least one", rep.Summary.Minted, session, len(seen))
	}
	for _, s := range seen {
		if s != "1MB" {
			t.Errorf("a batch's COPY ran with work_mem %s, want 1MB (statements saw %v)", s, seen)
		}
	}
}

// A run that stops before its first row (here: the mint map's directory does not exist) still
// reports the shoulder's totals from the ledger, not zeros it never read.
func TestMintStoppedEarlyReportsShoulderTotals(t *testing.T) {
	t.Parallel()
	l := mintLedger(t)
	dir := t.TempDir()
	in := manifest(t, dir, "early.csv", fixtures.ManifestConfig{Rows: 3, Seed: 72, Prefix: "early-"})
	job := loader.MintJob{Mint: loader.MintConfig{ClientID: "c1"}, Inputs: []string{in}}
	if _, err := loader.Mint(t.Context(), l, job); err != nil {
		t.Fatal(err)
	}
	job.MintMapPath = filepath.Join(dir, "missing", "map.csv")
	rep, err := loader.Mint(t.Context(), l, job)
	if err == nil || rep.ShoulderDraws != 3 || rep.ShoulderCollisions != 0 {
		t.Fatalf("second run: err %v, shoulder totals %d draws, %d collisions; want an error and 3, 0", err, rep.ShoulderDraws, rep.ShoulderCollisions)
	}
}
