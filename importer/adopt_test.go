package importer_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/ulikunitz/xz"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/importer"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/legacy"
	"github.com/arkhe-ledger/arkhe/loader"
	"github.com/arkhe-ledger/arkhe/pipeline"
)

// adoptRefused asserts err is an *ledger.AdoptError of refusal r whose message holds every want.
func adoptRefused(t *testing.T, err error, r ledger.AdoptRefusal, want ...string) {
	t.Helper()
	var ae *ledger.AdoptError
	if !errors.As(err, &ae) || ae.Refusal != r {
		t.Fatalf("adopt: %v; want refusal %s", err, r)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("adopt refusal %q does not say %q", err, w)
		}
	}
}

// shoulderState reads a shoulder's status, manager (or ""), check zone, blade length and
// template (or ""), and whether it was adopted.
func shoulderState(t *testing.T, pool *pgxpool.Pool, naan, shoulder string) string {
	t.Helper()
	return impScalar[string](t, pool, `select concat_ws(' ', s.status, coalesce(m.name, '-'), s.check_zone, s.blade_length,
		coalesce(s.blade_template, '-'), (s.adopted_at is not null)::text)
		from shoulder s left join manager m on m.id = s.manager_id where s.naan = $1 and s.shoulder = $2`, naan, shoulder)
}

// TestAdoptMigratedShoulder adopts shoulders of the real EZID export, on the single node and on
// Citus: /t2 of 87281 (Johns Hopkins University Data Archive, 246 ARKs, each verifying under
// naan_name, blades of 5) becomes active under its manager with one audit event; a second adopt
// changes nothing. Refused, with the shoulder left reserved: /z1 of 21198 while the import had
// skipped its 30 reserved names (until imported with --include-reserved), /b9 of 57799 whose 4
// ARKs disagree on the check zone (unless one is named), the NAAN-wide shoulder "/" of 88435
// (not of the first-digit convention), a retired shoulder, a shoulder another manager holds, and
// a minter state of another shoulder.
func TestAdoptMigratedShoulder(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		ctx := context.Background()
		l := &ledger.Ledger{Pool: db.Pool}
		in := fixtures.SharedData(t, "ezid", "db.identifier.jsonl")
		rep := impRun(t, l, importer.Config{Inputs: []string{in}, BatchSize: 700})
		if c := rep.Total; c.ReservedSkipped != 81 || c.TestSkipped != 1 || c.Imported != 2611 {
			t.Fatalf("import: %+v", c)
		}
		// the import recorded what it left out, name by name
		if got := impScalar[string](t, db.Pool, `select string_agg(reason || ' ' || n, ', ' order by reason)
			from (select reason, count(*) n from import_skipped group by reason) r`); got != "reserved 81, test 1" {
			t.Errorf("import_skipped: %s", got)
		}
		if got := impScalar[int64](t, db.Pool, `select count(*) from import_skipped where naan = '21198' and assigned_name like 'z1%'`); got != 30 {
			t.Errorf("skipped reserved names under 21198/z1: %d, want 30", got)
		}
		for _, m := range []struct{ naan, name string }{
			{"87281", "JHU Data Archive"}, {"87281", "Other"}, {"21198", "UC"}, {"57799", "B9"}, {"88435", "Princeton"}, {"13030", "CDL"}, {"87278", "S6"},
		} {
			if _, err := l.AddManager(ctx, ledger.Manager{NAAN: m.naan, Name: m.name}); err != nil {
				t.Fatal(err)
			}
		}
		events := func() int64 {
			return impScalar[int64](t, db.Pool, `select count(*) from audit_event where action = 'shoulder.set'`)
		}

		// names the import skipped: refused, naming the flag that imports them
		_, err := l.AdoptShoulder(ctx, ledger.AdoptConfig{NAAN: "21198", Shoulder: "/z1", Manager: "UC"})
		adoptRefused(t, err, ledger.AdoptSkippedNames, "30 names reserved in EZID (e.g. ark:21198/z1", "were skipped by the import", "arkhe import --include-reserved", "ark:21198/z1", "Freeze the old minter")
		if got := shoulderState(t, db.Pool, "21198", "/z1"); got != "reserved - none 8 - false" {
			t.Errorf("/z1 after a refused adopt: %s", got)
		}

		// /t2: every ARK verifies under naan_name; blades of 5
		res, err := l.AdoptShoulder(ctx, ledger.AdoptConfig{NAAN: "87281", Shoulder: "t2", Manager: "JHU Data Archive"})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Changed || res.ARKs != 246 || res.VerifyNAANName != 246 || res.VerifyNeither != 0 || res.CheckZone != ark.ZoneNAANName ||
			res.Template != "eeeee" || res.Space != 20_511_149 || !maps.Equal(res.BladeLengths, map[int]int64{5: 246}) ||
			res.BeforeStatus != "reserved" || res.BeforeZone != "none" || res.Shoulder != "/t2" {
			t.Errorf("adopt /t2: %+v", res)
		}
		// 11 of them happen to verify under name_only as well (1 in 29 by chance)
		if res.VerifyNameOnly != 11 {
			t.Errorf("adopt /t2: %d verify under name_only, want 11", res.VerifyNameOnly)
		}
		if got := shoulderState(t, db.Pool, "87281", "/t2"); got != "active JHU Data Archive naan_name 5 - true" {
			t.Errorf("/t2 after adopt: %s", got)
		}
		// one audit event: what changed, from what to what
		var detail []byte
		if err := db.Pool.QueryRow(ctx, `select detail::text from audit_event where action = 'shoulder.set' and target = 'ark:87281/t2'`).Scan(&detail); err != nil {
			t.Fatalf("the adoption's audit event: %v", err)
		}
		var d struct{ Before, After map[string]any }
		if err := json.Unmarshal(detail, &d); err != nil {
			t.Fatal(err)
		}
		if d.Before["status"] != "reserved" || d.After["status"] != "active" || d.Before["manager"] != nil || d.After["manager"] != "JHU Data Archive" ||
			d.Before["check_zone"] != "none" || d.After["check_zone"] != "naan_name" || d.Before["blade_length"] != 8.0 || d.After["blade_length"] != 5.0 ||
			d.Before["adopted_at"] != nil || d.After["adopted_at"] == nil {
			t.Errorf("audit detail of the adoption: %s", detail)
		}
		if n := events(); n != 1 {
			t.Errorf("%d shoulder events after one adoption, want 1", n)
		}
		// adopting it again changes nothing and records nothing
		res, err = l.AdoptShoulder(ctx, ledger.AdoptConfig{NAAN: "87281", Shoulder: "/t2", Manager: "JHU Data Archive"})
		if err != nil || res.Changed || res.CheckZone != ark.ZoneNAANName || res.Template != "eeeee" {
			t.Errorf("adopt /t2 again: %+v, %v", res, err)
		}
		if n := events(); n != 1 {
			t.Errorf("%d shoulder events after adopting twice, want 1", n)
		}
		_, err = l.AdoptShoulder(ctx, ledger.AdoptConfig{NAAN: "87281", Shoulder: "/t2", Manager: "Other"})
		adoptRefused(t, err, ledger.AdoptHeld, `manager "JHU Data Archive" holds it`)

		// /b9: 1 ARK verifies under naan_name, 3 (with uppercase letters) under none
		_, err = l.AdoptShoulder(ctx, ledger.AdoptConfig{NAAN: "57799", Shoulder: "/b9", Manager: "B9"})
		adoptRefused(t, err, ledger.AdoptZoneDisagrees, "its 4 ARKs disagree", "1 verify under naan_name, 0 under name_only, 3 under neither", "--check-zone")
		if got := shoulderState(t, db.Pool, "57799", "/b9"); got != "reserved - none 8 - false" {
			t.Errorf("/b9 after a refused adopt: %s", got)
		}
		res, err = l.AdoptShoulder(ctx, ledger.AdoptConfig{NAAN: "57799", Shoulder: "/b9", Manager: "B9", CheckZone: ark.ZoneNone})
		if err != nil || res.CheckZone != ark.ZoneNone || res.Template != "eeee" || !maps.Equal(res.BladeLengths, map[int]int64{4: 1}) {
			t.Errorf("adopt /b9 --check-zone none: %+v, %v", res, err)
		}

		// not of the first-digit convention: stays reserved, with the reason
		_, err = l.AdoptShoulder(ctx, ledger.AdoptConfig{NAAN: "88435", Shoulder: "/", Manager: "Princeton"})
		adoptRefused(t, err, ledger.AdoptNotFirstDigit, "/ does not follow the first-digit convention", "it stays reserved")
		if got := shoulderState(t, db.Pool, "88435", "/"); got != "reserved - none 8 - false" {
			t.Errorf("/ of 88435 after a refused adopt: %s", got)
		}

		// retired is one-way
		if _, err := l.RetireShoulder(ctx, "13030", "/m5"); err != nil {
			t.Fatal(err)
		}
		_, err = l.AdoptShoulder(ctx, ledger.AdoptConfig{NAAN: "13030", Shoulder: "/m5", Manager: "CDL"})
		adoptRefused(t, err, ledger.AdoptRetired, "retired is one-way")

		// a minter state of another shoulder
		_, err = l.AdoptShoulder(ctx, ledger.AdoptConfig{NAAN: "87278", Shoulder: "/s6", Manager: "S6",
			Minter: &ledger.AdoptMinter{Source: "77913_r7.json", Label: "77913/r7", Mask: "eedk", Template: "eed", Check: true, Issued: 2191}})
		adoptRefused(t, err, ledger.AdoptMinterShoulder, "77913_r7.json is the minter of 77913/r7, not of 87278/s6")

		// once the reserved names are in the ledger, /z1 is adopted: 53 ARKs, blades of 5
		rep = impRun(t, l, importer.Config{Inputs: []string{in}, BatchSize: 700, IncludeReserved: true})
		if c := rep.Total; c.Imported != 81 || c.Unchanged != 2611 {
			t.Fatalf("import --include-reserved: %+v", c)
		}
		res, err = l.AdoptShoulder(ctx, ledger.AdoptConfig{NAAN: "21198", Shoulder: "/z1", Manager: "UC"})
		if err != nil || res.ARKs != 53 || res.VerifyNAANName != 53 || res.CheckZone != ark.ZoneNAANName || res.Template != "eeeee" {
			t.Errorf("adopt /z1 after import --include-reserved: %+v, %v", res, err)
		}
		if n := events(); n != 3 {
			t.Errorf("%d shoulder events after three adoptions, want 3", n)
		}
	})
}

// adoptMint mints rows new ARKs (request IDs prefix + number) as client into its pinned
// shoulder, drawing blades from src (one worker, so a script is drawn in order), and returns
// every name the client minted so far, sorted, with the run's summary.
func adoptMint(t *testing.T, l *ledger.Ledger, client, prefix string, rows int, src ark.BladeSource) ([]string, pipeline.Summary) {
	t.Helper()
	ctx := context.Background()
	in := filepath.Join(t.TempDir(), "m.csv")
	if _, err := fixtures.CreateManifestCSV(in, fixtures.ManifestConfig{Rows: rows, Seed: 11, Prefix: prefix}); err != nil {
		t.Fatal(err)
	}
	sink, err := loader.PrepareMint(ctx, l, loader.MintConfig{ClientID: client, Blades: func(int) ark.BladeSource { return src }})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := pipeline.Run(ctx, pipeline.RunConfig{Inputs: []string{in}, Sink: sink, Workers: 1, BatchSize: 7})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Minted != int64(rows) || sum.Rejected != 0 {
		t.Fatalf("mint: %+v", sum)
	}
	r, err := l.Pool.Query(ctx, `select a.assigned_name from ark a join client c on c.id = a.created_by
		where c.client_id = $1 and a.import_run_id is null order by 1`, client)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var names []string
	for r.Next() {
		var n string
		if err := r.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return names, sum
}

// TestAdoptedShoulderNeverReissues mints into /t2 of the real EZID export after its adoption,
// with a scripted blade source that draws 20 of the imported names' blades, each before a fresh
// one: each is a collision, redrawn; no imported ARK changes, no name is issued twice, and every new name is
// one of the fresh blades with its check character.
func TestAdoptedShoulderNeverReissues(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		ctx := context.Background()
		l := &ledger.Ledger{Pool: db.Pool}
		impRun(t, l, importer.Config{Inputs: []string{fixtures.SharedData(t, "ezid", "db.identifier.jsonl")}, IncludeReserved: true})
		if _, err := l.AddManager(ctx, ledger.Manager{NAAN: "87281", Name: "JHU Data Archive"}); err != nil {
			t.Fatal(err)
		}
		if _, err := l.AdoptShoulder(ctx, ledger.AdoptConfig{NAAN: "87281", Shoulder: "/t2", Manager: "JHU Data Archive"}); err != nil {
			t.Fatal(err)
		}
		if err := l.AddClient(ctx, ledger.Client{ClientID: "jhu", NAAN: "87281", Manager: "JHU Data Archive", Authority: "manager",
			Shoulder: "/t2", Scopes: []string{"ark:mint"}}); err != nil {
			t.Fatal(err)
		}
		before := impScalar[string](t, db.Pool, `select md5(string_agg(ark || coalesce(url, '') || coalesce(status::text, 'public') || coalesce(change_seq, 0), ',' order by ark)) from ark where naan = '87281'`)
		imported := map[string]bool{}
		var script []string
		r, err := db.Pool.Query(ctx, `select assigned_name from ark where naan = '87281' and assigned_name like 't2%' order by assigned_name limit 20`)
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			var n string
			if err := r.Scan(&n); err != nil {
				t.Fatal(err)
			}
			imported[n] = true
			script = append(script, n[2:7]) // the blade, without the shoulder and the check character
		}
		r.Close()
		if len(script) != 20 {
			t.Fatalf("%d imported names to draw, want 20", len(script))
		}
		fresh := []string{}
		seeded := ark.NewSeededBlades([32]byte{3})
		b := make([]byte, 5)
		want := map[string]bool{}
		for len(fresh) < 30 {
			if err := seeded.Blade(b); err != nil {
				t.Fatal(err)
			}
			name := ark.MintName("87281", "t2", b)
			if impScalar[int64](t, db.Pool, `select count(*) from ark where ark = $1`, "87281/"+name) == 0 && !want[name] {
				fresh = append(fresh, string(b))
				want[name] = true
			}
		}
		// each imported blade, then a fresh one: a row draws at most a few times
		var blades []string
		for i, f := range fresh {
			if i < len(script) {
				blades = append(blades, script[i])
			}
			blades = append(blades, f)
		}
		names, sum := adoptMint(t, l, "jhu", "obj-", 30, ark.NewScriptedBlades(blades...))
		if sum.Collisions != 20 || sum.Draws != 50 {
			t.Errorf("draws %d, collisions %d; want 50 and 20 (each imported name drawn once, redrawn)", sum.Draws, sum.Collisions)
		}
		wantNames := slices.Sorted(maps.Keys(want))
		if !slices.Equal(names, wantNames) {
			t.Errorf("minted %v, want the fresh names %v", names, wantNames)
		}
		for _, n := range names {
			if imported[n] {
				t.Errorf("imported name %s issued again", n)
			}
			if !ark.VerifyZone("87281/" + n) {
				t.Errorf("minted %s does not verify under naan_name", n)
			}
		}
		if got := impScalar[string](t, db.Pool, `select md5(string_agg(ark || coalesce(url, '') || coalesce(status::text, 'public') || coalesce(change_seq, 0), ',' order by ark)) from ark where naan = '87281' and import_run_id is not null`); got != before {
			t.Error("imported ARKs of 87281 changed")
		}
		if got := impScalar[string](t, db.Pool, `select t.draws || ' ' || t.collisions from shoulder_tally t join shoulder s on s.id = t.shoulder_id where s.naan = '87281' and s.shoulder = '/t2'`); got != "50 20" {
			t.Errorf("tally of /t2: %s, want 50 draws, 20 collisions", got)
		}
	})
}

// r7Names returns the names the N2T minter of 77913/r7 had issued at the state of
// 77913_r7.json: its template eedk allows 8,410 names, and the 6,219 four-character names it
// issues from that state on (the first lines of perl_77913_r7_1000000_spings.csv.xz) are the
// ones it had not; the first returned in the spings' order.
func r7Names(t *testing.T) (issued, next []string) {
	t.Helper()
	f, err := os.Open(fixtures.SharedData(t, "ezid", "perl_77913_r7_1000000_spings.csv.xz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := xz.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	later := map[string]bool{}
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if len(line) != 4 {
			break
		}
		later["r7"+line] = true
		next = append(next, "r7"+line)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, a := range ark.Alphabet {
		for _, b := range ark.Alphabet {
			for d := '0'; d <= '9'; d++ {
				name := ark.MintName("77913", "r7", []byte{byte(a), byte(b), byte(d)})
				if !later[name] {
					issued = append(issued, name)
				}
			}
		}
	}
	return issued, next
}

// ezidCSV writes names of NAAN naan as an EZID CSV download (_id, _status, _target) to path.
func ezidCSV(t *testing.T, path, naan string, names []string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("_id,_status,_target\n")
	for i, n := range names {
		fmt.Fprintf(&b, "ark:/%s/%s,public,https://example.org/objects/%d\n", naan, n, i+1)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAdoptWithMinterState adopts 77913/r7 with the real state of its N2T minter (mask eedk):
// refused while the ledger holds fewer of its names than the state says it issued (2,191); once
// all are imported, new mints follow the template (two betanumerics, one digit, the check
// character over NAAN/name), draw the imported names first (collisions, redrawn) and issue only
// names the old minter had not.
func TestAdoptWithMinterState(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		ctx := context.Background()
		l := &ledger.Ledger{Pool: db.Pool}
		issued, next := r7Names(t)
		if len(issued) != 2191 || len(next) != 6219 {
			t.Fatalf("%d issued and %d later names; the state says 2,191 and 8,410 - 2,191", len(issued), len(next))
		}
		st, err := legacy.ReadMinterState(fixtures.SharedData(t, "ezid", "77913_r7.json"))
		if err != nil {
			t.Fatal(err)
		}
		minter := &ledger.AdoptMinter{Source: "77913_r7.json", Label: st.Label(), Mask: st.Mask, Template: st.Template, Check: st.Check, Issued: st.Issued}
		dir := t.TempDir()
		impRun(t, l, importer.Config{Inputs: []string{ezidCSV(t, filepath.Join(dir, "part.csv"), "77913", issued[:2000])}})
		if _, err := l.AddManager(ctx, ledger.Manager{NAAN: "77913", Name: "N2T"}); err != nil {
			t.Fatal(err)
		}
		cfg := ledger.AdoptConfig{NAAN: "77913", Shoulder: "/r7", Manager: "N2T", Minter: minter}
		_, err = l.AdoptShoulder(ctx, cfg)
		adoptRefused(t, err, ledger.AdoptIssuedMissing, "issued 2,191 names of its template eedk", "the ledger holds 2,000 names of that form", "191 issued names are not in the ledger")

		impRun(t, l, importer.Config{Inputs: []string{ezidCSV(t, filepath.Join(dir, "all.csv"), "77913", issued)}})
		res, err := l.AdoptShoulder(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.ARKs != 2191 || res.FitTemplate != 2191 || res.VerifyNAANName != 2191 || res.CheckZone != ark.ZoneNAANName ||
			res.Template != "eed" || res.Space != 8410 {
			t.Errorf("adopt /r7: %+v", res)
		}
		if got := shoulderState(t, db.Pool, "77913", "/r7"); got != "active N2T naan_name 3 eed true" {
			t.Errorf("/r7 after adopt: %s", got)
		}
		if err := l.AddClient(ctx, ledger.Client{ClientID: "n2t", NAAN: "77913", Manager: "N2T", Authority: "manager",
			Shoulder: "/r7", Scopes: []string{"ark:mint"}}); err != nil {
			t.Fatal(err)
		}
		// the blade source draws 15 issued names, each before one of the minter's own next names
		var script []string
		for i, n := range next[:25] {
			if i < 15 {
				script = append(script, issued[i][2:5])
			}
			script = append(script, n[2:5])
		}
		names, sum := adoptMint(t, l, "n2t", "obj-", 25, ark.NewScriptedBlades(script...))
		if sum.Collisions != 15 || sum.Draws != 40 {
			t.Errorf("draws %d, collisions %d; want 40 and 15", sum.Draws, sum.Collisions)
		}
		if want := slices.Sorted(slices.Values(next[:25])); !slices.Equal(names, want) {
			t.Errorf("minted %v, want the minter's next names %v", names, want)
		}
		// a seeded source draws letters where the template wants a digit: they are replaced
		names, _ = adoptMint(t, l, "n2t", "more-", 200, ark.NewSeededBlades([32]byte{5}))
		if len(names) != 225 {
			t.Fatalf("%d names minted in /r7, want 225", len(names))
		}
		was := map[string]bool{}
		for _, n := range issued {
			was[n] = true
		}
		for _, n := range names {
			if was[n] || !ark.Template("eed").Fits(n[2:5]) || !ark.VerifyZone("77913/"+n) {
				t.Errorf("minted %s: issued before, off the template or not verifying", n)
			}
		}
	})
}

// TestAdoptRefusesConflictNames: a name two rows of one export give different values is
// imported by neither (a conflict); the import records it, and its shoulder is not adopted
// until the name is in the ledger.
func TestAdoptRefusesConflictNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, pool := impLedger(t)
	dir := t.TempDir()
	in := impWriteText(t, dir, "export.csv", "_id,_status,_target\n"+
		"ark:/12345/x6bcdf1,public,https://example.org/1\n"+
		"ark:/12345/x6bcdf2,public,https://example.org/2\n"+
		"ark:/12345/x6bcdf2,public,https://example.org/other\n")
	rep := impRun(t, l, importer.Config{Inputs: []string{in}, RejectsPath: filepath.Join(dir, "r.csv")})
	if c := rep.Total; c.Imported != 1 || c.Conflicts != 2 || c.ConflictARKs != 1 {
		t.Fatalf("import: %+v", c)
	}
	if got := impScalar[string](t, pool, `select reason || ' ' || ark from import_skipped`); got != "conflict 12345/x6bcdf2" {
		t.Errorf("import_skipped: %s", got)
	}
	if _, err := l.AddManager(ctx, ledger.Manager{NAAN: "12345", Name: "Museum"}); err != nil {
		t.Fatal(err)
	}
	cfg := ledger.AdoptConfig{NAAN: "12345", Shoulder: "/x6", Manager: "Museum", CheckZone: ark.ZoneNone}
	_, err := l.AdoptShoulder(ctx, cfg)
	adoptRefused(t, err, ledger.AdoptSkippedNames, "1 name (e.g. ark:12345/x6bcdf2) was in conflict")
	impRun(t, l, importer.Config{Inputs: []string{impWriteText(t, dir, "fixed.csv", "_id,_status,_target\nark:/12345/x6bcdf2,public,https://example.org/2\n")}})
	res, err := l.AdoptShoulder(ctx, cfg)
	if err != nil || res.ARKs != 2 || res.CheckZone != ark.ZoneNone || res.Template != "eeeee" {
		t.Errorf("adopt /x6 after the name was imported: %+v, %v", res, err)
	}
}
