package verify_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/verify"
)

// internalKey is the prefix of every internal key in a test database (pgtest.FirstTestKey):
// no finding may contain it.
const internalKey = "7000000000"

// testLedger is a fresh ledger filled with fixtures.FillLedger: 120 ARKs of NAAN 99999 in
// /x9 (every 4th repointed once), with receipts, plus one import run.
type testLedger struct {
	t      *testing.T
	ctx    context.Context
	pool   *pgxpool.Pool
	l      *ledger.Ledger
	run    int64 // the import run's key, for imported test ARKs
	blades int   // test ARKs made so far
	citus  bool  // on the Citus cluster
}

func newLedger(t *testing.T) *testLedger {
	t.Helper()
	return newLedgerIn(t, pgtest.DB{Kind: pgtest.KindSingle, Pool: pgtest.New(t)})
}

// newLedgerIn is newLedger in db.
func newLedgerIn(t *testing.T, db pgtest.DB) *testLedger {
	t.Helper()
	ctx := context.Background()
	pool := db.Pool
	if err := fixtures.FillLedger(ctx, pool, 120, 3, fixtures.FillOptions{ChangeEvery: 4}); err != nil {
		t.Fatal(err)
	}
	tl := &testLedger{t: t, ctx: ctx, pool: pool, l: &ledger.Ledger{Pool: pool}, citus: db.Citus()}
	if err := pool.QueryRow(ctx, `insert into import_run (source_file, format) values ('test.csv', 'csv') returning id`).Scan(&tl.run); err != nil {
		t.Fatal(err)
	}
	return tl
}

// exec runs statements in one transaction; with replica, the ledger's triggers and foreign
// keys are off (session_replication_role = replica), as when someone works around them.
func (tl *testLedger) exec(replica bool, sql string, args ...any) {
	tl.t.Helper()
	tx, err := tl.pool.Begin(tl.ctx)
	if err != nil {
		tl.t.Fatal(err)
	}
	defer tx.Rollback(tl.ctx)
	if tl.citus {
		// DDL on triggers of Citus tables needs enable_unsafe_triggers; with replica, the
		// setting goes to the workers the transaction writes on too
		for _, q := range []string{`set local citus.enable_unsafe_triggers = on`, `set local citus.propagate_set_commands = 'local'`} {
			if _, err := tx.Exec(tl.ctx, q); err != nil {
				tl.t.Fatal(err)
			}
		}
	}
	if replica {
		if _, err := tx.Exec(tl.ctx, `set local session_replication_role = replica`); err != nil {
			tl.t.Fatal(err)
		}
	}
	if _, err := tx.Exec(tl.ctx, sql, args...); err != nil {
		tl.t.Fatalf("%s: %v", sql, err)
	}
	if err := tx.Commit(tl.ctx); err != nil {
		tl.t.Fatal(err)
	}
}

// mintedARK inserts a minted ARK (no import run) in 99999/x9 with triggers off, created by
// client (its key 1 when client is "", a client that is not registered), carrying a receipt for
// requestID; it returns the ledger key.
func (tl *testLedger) mintedARK(client, requestID string) string {
	tl.t.Helper()
	name := tl.name("99999", "x9")
	tl.exec(true, `insert into ark (ark, naan, shoulder_id, assigned_name, url, created_by, created_at, request_id, payload_digest)
		select ('99999/' || $1::text)::varchar, '99999', s.id, $1::varchar, 'https://example.org/r',
			coalesce((select id from client where client_id = $2), 1), now(), $3, '\x00112233445566778899aabbccddeeff'
		from shoulder s where s.naan = '99999' and s.shoulder = '/x9'`, name, client, requestID)
	return "99999/" + name
}

// name returns a fresh valid assigned name in shoulder (bare or stored) of naan, with its check
// character (zone naan_name).
func (tl *testLedger) name(naan, shoulder string) string {
	tl.blades++
	blade := fmt.Sprintf("%08d", tl.blades) // digits are betanumeric
	return ark.MintName(naan, shoulder, []byte(blade))
}

// importARK inserts an imported ARK naan/name into the registered shoulder (naan, shoulder),
// with the given created_at SQL expression. The reach trigger does not apply to imports.
func (tl *testLedger) importARK(replica bool, naan, name, shoulderNAAN, shoulder, created string) string {
	tl.t.Helper()
	tl.exec(replica, fmt.Sprintf(`insert into ark (ark, naan, shoulder_id, assigned_name, url, import_run_id, created_at)
		select ($1::text || '/' || $2::text)::varchar, $1::varchar, s.id, $2::varchar, 'https://example.org/imported', $5, %s
		from shoulder s where s.naan = $3 and s.shoulder = $4`, created), naan, name, shoulderNAAN, shoulder, tl.run)
	return "ark:" + naan + "/" + name
}

// audit runs verify and returns the result and every finding the sink received.
func (tl *testLedger) audit(cfg verify.Config) (*verify.Result, []verify.FindingRow) {
	tl.t.Helper()
	var mu sync.Mutex
	var rows []verify.FindingRow
	cfg.Findings = func(r verify.FindingRow) error {
		mu.Lock()
		defer mu.Unlock()
		rows = append(rows, r)
		return nil
	}
	res, err := verify.Run(tl.ctx, tl.l, cfg)
	if err != nil {
		tl.t.Fatalf("verify: %v", err)
	}
	var total int64
	for _, c := range res.Checks {
		total += c.Count
		for _, e := range c.Examples {
			if strings.Contains(e, internalKey) {
				tl.t.Errorf("%s example %q shows an internal key", c.Name, e)
			}
		}
	}
	if int64(len(rows)) != total {
		tl.t.Errorf("sink got %d findings, counts say %d", len(rows), total)
	}
	for _, r := range rows {
		if strings.Contains(r.Detail, internalKey) || (r.ARK != nil && strings.Contains(*r.ARK, internalKey)) {
			tl.t.Errorf("finding %+v shows an internal key", r)
		}
		if r.ARK != nil && !strings.HasPrefix(*r.ARK, "ark:") {
			tl.t.Errorf("finding ARK %q is not in canonical form", *r.ARK)
		}
	}
	return res, rows
}

// baseline runs a clean audit that records the baseline.
func (tl *testLedger) baseline() {
	tl.t.Helper()
	res, rows := tl.audit(verify.Config{})
	if !res.Clean() || !res.SummaryStored {
		tl.t.Fatalf("baseline audit: clean %v stored %v: %+v", res.Clean(), res.SummaryStored, rows)
	}
}

// only asserts that check, and no other, has n findings, with example (if not "") among them.
func only(t *testing.T, res *verify.Result, rows []verify.FindingRow, check string, n int64, example string) {
	t.Helper()
	for _, c := range res.Checks {
		want := int64(0)
		if c.Name == check {
			want = n
		}
		if c.Count != want {
			t.Errorf("%s: %d findings %v, want %d", c.Name, c.Count, c.Examples, want)
		}
	}
	c := res.Check(check)
	if example != "" && !slices.Contains(c.Examples, example) {
		t.Errorf("%s examples %v lack %q", check, c.Examples, example)
	}
	for _, r := range rows {
		t.Logf("finding: %s %s %v: %s", r.Check, r.Severity, deref(r.ARK), r.Detail)
		if r.Check != check {
			t.Errorf("unexpected finding %+v", r)
		}
	}
	// a --since audit that read only what changed is never a baseline
	if want := res.Full && (n == 0 || c.Severity != verify.SeverityError); res.SummaryStored != want {
		t.Errorf("summary stored = %v with %d %s findings of %s (full %v)", res.SummaryStored, n, c.Severity, check, res.Full)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func TestCleanLedger(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		tl := newLedgerIn(t, db)
		res, rows := tl.audit(verify.Config{})
		only(t, res, rows, "", 0, "")
		if !res.Full || res.ARKs != 120 || res.Checked != 120 || res.Baseline != nil || !res.SummaryStored {
			t.Errorf("first audit: full %v arks %d checked %d baseline %v stored %v", res.Full, res.ARKs, res.Checked, res.Baseline, res.SummaryStored)
		}
		if got := res.Check(verify.CheckDigest).Note; got == "" {
			t.Error("first audit: ledger.digest has no note about the missing baseline")
		}
		if len(res.Checks) != len(verify.Checks()) {
			t.Errorf("%d check results, catalog has %d", len(res.Checks), len(verify.Checks()))
		}
		// A second audit compares with the first, a repoint and a tombstone in between.
		// (the functions are called on their own, not per row of ark: Citus would run them on
		// the shards, which refuse their distributed queries)
		tl.exec(false, `select ark_repoint((select ark from ark order by seq limit 1), 'https://example.org/new', null, 'test')`)
		tl.exec(false, `select ark_tombstone((select ark from ark order by seq desc limit 1), 'withdrawn', null, 'test')`)
		res, rows = tl.audit(verify.Config{})
		only(t, res, rows, "", 0, "")
		// on Citus the note says how the digest compares without a snapshot across the nodes
		if note := res.Check(verify.CheckDigest).Note; res.Baseline == nil || (note != "") != db.Citus() ||
			db.Citus() && !strings.Contains(note, "no snapshot spans the nodes") {
			t.Errorf("second audit: baseline %v note %q", res.Baseline, note)
		}
		if db.Citus() {
			// --since needs a snapshot of the whole ledger: a full audit, said in a note
			res, rows = tl.audit(verify.Config{Since: true})
			only(t, res, rows, "", 0, "")
			if note := res.Check(verify.CheckDigest).Note; !res.Full || !strings.Contains(note, "this audit is a full one") {
				t.Errorf("--since on Citus: full %v, note %q", res.Full, note)
			}
		}
		var summaries, events int
		tl.pool.QueryRow(tl.ctx, `select (select count(*) from audit_summary), (select count(*) from audit_event where action = 'verify')`).Scan(&summaries, &events)
		if want := map[bool]int{false: 2, true: 3}[db.Citus()]; summaries != want || events != want {
			t.Errorf("audit_summary rows %d, verify audit events %d; want %d and %d", summaries, events, want, want)
		}
	})
}

func TestSyntax(t *testing.T) {
	t.Parallel()
	tl := newLedger(t)
	tl.baseline()
	tl.importARK(false, "99999", "x9bad^char", "99999", "/x9", "now()")
	res, rows := tl.audit(verify.Config{})
	only(t, res, rows, verify.CheckSyntax, 1, "ark:99999/x9bad^char")
}

func TestNormalized(t *testing.T) {
	t.Parallel()
	tl := newLedger(t)
	tl.baseline()
	name := tl.name("99999", "x9")
	hyphened := name[:4] + "-" + name[4:]
	tl.importARK(false, "99999", hyphened, "99999", "/x9", "now()")
	res, rows := tl.audit(verify.Config{})
	only(t, res, rows, verify.CheckNormalized, 1, "ark:99999/"+hyphened)
}

func TestWidth(t *testing.T) {
	t.Parallel()
	tl := newLedger(t)
	tl.baseline()
	// The column types carry the limits; someone widened them (the mint_receipt view reads
	// ark, so it is dropped and made again around the change).
	tl.exec(false, `drop view mint_receipt;
		alter table ark alter column assigned_name type varchar(400), alter column ark type varchar(420);
		create view mint_receipt as select created_by as client_pk, request_id, ark, payload_digest, created_at
			from ark where request_id is not null`)
	tl.pool.Reset() // statements the pool's connections prepared read the old column types
	long := "x9" + strings.Repeat("b", 298)
	tl.importARK(false, "99999", long, "99999", "/x9", "now()")
	res, rows := tl.audit(verify.Config{})
	only(t, res, rows, verify.CheckWidth, 1, "ark:99999/"+long)
}

func TestCheckCharacter(t *testing.T) {
	t.Parallel()
	tl := newLedger(t)
	tl.baseline()
	var bad []string
	for i := 0; i < 12; i++ {
		name := tl.name("99999", "x9")
		last := name[len(name)-1]
		wrong := ark.Alphabet[(strings.IndexByte(ark.Alphabet, last)+1)%len(ark.Alphabet)]
		name = name[:len(name)-1] + string(wrong)
		bad = append(bad, tl.importARK(false, "99999", name, "99999", "/x9", "now()"))
	}
	// An imported ARK whose failing check character the import recorded is not a finding.
	name := tl.name("99999", "x9")
	name = name[:len(name)-1] + "0"
	if ark.VerifyZone("99999/" + name) {
		name = name[:len(name)-1] + "1"
	}
	tl.importARK(false, "99999", name, "99999", "/x9", "now()")
	tl.exec(true, `update ark set check_ok = false where ark = $1`, "99999/"+name)
	slices.Sort(bad)
	res, rows := tl.audit(verify.Config{})
	only(t, res, rows, verify.CheckCheckCharacter, 12, bad[0])
	if got := res.Check(verify.CheckCheckCharacter).Examples; !slices.Equal(got, bad[:10]) {
		t.Errorf("examples = %v, want the 10 smallest %v", got, bad[:10])
	}
}

func TestNAANExists(t *testing.T) {
	t.Parallel()
	tl := newLedger(t)
	tl.exec(false, `insert into naan (naan, name) values ('12345', 'gone')`)
	tl.exec(false, `insert into shoulder (naan, shoulder, status) values ('12345', '/x9', 'reserved')`)
	tl.baseline()
	a := tl.importARK(false, "12345", tl.name("12345", "x9"), "12345", "/x9", "now()")
	tl.exec(true, `delete from naan where naan = '12345'`)
	res, rows := tl.audit(verify.Config{})
	only(t, res, rows, verify.CheckNAANExists, 1, a)
}

func TestShoulderExists(t *testing.T) {
	t.Parallel()
	tl := newLedger(t)
	tl.exec(false, `insert into shoulder (naan, shoulder, status) values ('99999', '/b5', 'reserved')`)
	tl.baseline()
	a := tl.importARK(false, "99999", tl.name("99999", "b5"), "99999", "/b5", "now()")
	tl.exec(true, `delete from shoulder where shoulder = '/b5'`)
	res, rows := tl.audit(verify.Config{})
	only(t, res, rows, verify.CheckShoulderExists, 1, a)
}

func TestShoulderNAAN(t *testing.T) {
	t.Parallel()
	tl := newLedger(t)
	tl.exec(false, `insert into naan (naan, name) values ('12345', 'other')`)
	tl.baseline()
	// An ARK of NAAN 12345 in NAAN 99999's shoulder /x9 (the foreign key is off).
	a := tl.importARK(true, "12345", tl.name("12345", "x9"), "99999", "/x9", "now()")
	res, rows := tl.audit(verify.Config{})
	only(t, res, rows, verify.CheckShoulderNAAN, 1, a)
}

func TestShoulderPrefix(t *testing.T) {
	t.Parallel()
	tl := newLedger(t)
	tl.exec(false, `insert into shoulder (naan, shoulder, status, check_zone) values ('99999', '/t', 'reserved', 'none'), ('99999', '/tq', 'reserved', 'none')`)
	tl.baseline()
	// Not starting with its shoulder.
	a1 := tl.importARK(false, "99999", tl.name("99999", "b5"), "99999", "/x9", "now()")
	// Nested shoulders resolve by longest prefix: tq1234 belongs to /tq, not /t.
	a2 := tl.importARK(false, "99999", "tq1234", "99999", "/t", "now()")
	// t1234 is right in /t.
	tl.importARK(false, "99999", "t1234", "99999", "/t", "now()")
	res, rows := tl.audit(verify.Config{})
	only(t, res, rows, verify.CheckShoulderPrefix, 2, a1)
	if !slices.Contains(res.Check(verify.CheckShoulderPrefix).Examples, a2) {
		t.Errorf("nested shoulder finding missing: %v", res.Check(verify.CheckShoulderPrefix).Examples)
	}
}

func TestMintedAfterRetired(t *testing.T) {
	t.Parallel()
	tl := newLedger(t)
	tl.exec(false, `insert into shoulder (naan, shoulder, status) values ('99999', '/b5', 'reserved')`)
	tl.exec(false, `update shoulder set status = 'retired', retired_at = now() - interval '1 day' where shoulder = '/b5'`)
	tl.baseline()
	tl.importARK(false, "99999", tl.name("99999", "b5"), "99999", "/b5", "now() - interval '2 days'") // before: fine
	a := tl.importARK(false, "99999", tl.name("99999", "b5"), "99999", "/b5", "now()")
	res, rows := tl.audit(verify.Config{})
	only(t, res, rows, verify.CheckMintedAfterRetired, 1, a)
}

func TestPinnedToRetired(t *testing.T) {
	t.Parallel()
	tl := newLedger(t)
	tl.exec(false, `insert into shoulder (naan, shoulder, manager_id, status)
		select '99999', '/b5', id, 'active' from manager where name = $1`, fixtures.FillManager)
	tl.exec(false, `insert into client (client_id, naan, manager_id, subject_type, authority, shoulder_id, allowed_scopes)
		select 'pinned-minter', '99999', m.id, 'machine', 'manager', s.id, '{ark:mint}'
		from manager m, shoulder s where m.name = $1 and s.shoulder = '/b5'`, fixtures.FillManager)
	tl.exec(false, `insert into client (client_id, naan, manager_id, subject_type, authority, shoulder_id, allowed_scopes, active)
		select 'inactive-minter', '99999', m.id, 'machine', 'manager', s.id, '{ark:mint}', false
		from manager m, shoulder s where m.name = $1 and s.shoulder = '/b5'`, fixtures.FillManager)
	tl.baseline()
	if _, err := tl.l.RetireShoulder(tl.ctx, "99999", "/b5"); err != nil {
		t.Fatal(err)
	}
	res, rows := tl.audit(verify.Config{})
	only(t, res, rows, verify.CheckPinnedToRetired, 1, "client pinned-minter")
	if !res.SummaryStored {
		t.Error("a warning kept the summary from being stored")
	}
}

// TestReceiptARKExists: a receipt whose ARK is not in the ledger. On the single node a receipt
// is the ark row, so only a mint_receipt view redefined behind the ledger's back can show one.
// On Citus receipts are a table of their own, distributed by request ID apart from the ARKs,
// with no foreign key to ark (Citus has none between tables distributed apart): a writer that
// skips arkhe can leave one, and the audit finds it.
func TestReceiptARKExists(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		tl := newLedgerIn(t, db)
		tl.baseline()
		if db.Citus() {
			tl.exec(false, `insert into receipt (client_pk, request_id, ark, payload_digest, created_at)
				select id, 'ghost'::varchar, '99999/x9ghost'::varchar, '\x00112233445566778899aabbccddeeff'::bytea, now()
				from client where client_id = '`+fixtures.FillClient+`'`)
		} else {
			tl.exec(false, `create or replace view mint_receipt as
				select created_by as client_pk, request_id, ark, payload_digest, created_at from ark where request_id is not null
				union all
				select id, 'ghost'::varchar(255) collate "C", '99999/x9ghost'::varchar(272) collate "C",
					'\x00112233445566778899aabbccddeeff'::bytea, now() from client where client_id = '`+fixtures.FillClient+`'`)
		}
		res, rows := tl.audit(verify.Config{})
		only(t, res, rows, verify.CheckReceiptARKExists, 1, "ark:99999/x9ghost")
	})
}

func TestReceiptNAANOfClient(t *testing.T) {
	t.Parallel()
	tl := newLedger(t)
	tl.exec(false, `insert into naan (naan, name) values ('12345', 'other')`)
	tl.exec(false, `insert into manager (naan, name) values ('12345', 'm2')`)
	tl.exec(false, `insert into client (client_id, naan, manager_id, subject_type, authority, allowed_scopes)
		select 'other-naan', '12345', id, 'machine', 'manager', '{ark:mint}' from manager where name = 'm2'`)
	tl.baseline()
	// Receipts are ark columns. An ARK minted with a receipt of a 12345 client in 99999/x9 (no
	// constraint refuses it; ark_reach, which would, is off).
	key := tl.mintedARK("other-naan", "cross")
	// An ARK whose receipt is held by no registered client (created_by has no foreign key).
	other := tl.mintedARK("", "orphan")
	res, rows := tl.audit(verify.Config{})
	only(t, res, rows, verify.CheckReceiptNAAN, 2, "ark:"+key)
	if !slices.Contains(res.Check(verify.CheckReceiptNAAN).Examples, "ark:"+other) {
		t.Errorf("examples %v lack the unregistered client's ark:%s", res.Check(verify.CheckReceiptNAAN).Examples, other)
	}
}

func TestRequestUnique(t *testing.T) {
	t.Parallel()
	tl := newLedger(t)
	tl.baseline()
	tl.exec(false, `drop index ark_receipt`)
	// Request fill-3-0 of fill-minter already maps to an ARK; now a second ARK carries it.
	name := tl.name("99999", "x9")
	tl.exec(true, `insert into ark (ark, naan, shoulder_id, assigned_name, url, created_by, created_at, request_id, payload_digest)
		select '99999/' || $1::text, '99999', s.id, $1, 'https://example.org/d', c.id, now(), 'fill-3-0', '\x00112233445566778899aabbccddeeff'
		from shoulder s, client c where s.naan = '99999' and s.shoulder = '/x9' and c.client_id = $2`, name, fixtures.FillClient)
	res, rows := tl.audit(verify.Config{})
	only(t, res, rows, verify.CheckRequestUnique, 1, "")
	if len(rows) == 1 && !strings.Contains(rows[0].Detail, `"fill-3-0"`) {
		t.Errorf("detail %q does not name the request ID", rows[0].Detail)
	}
}

func TestReceiptMissing(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		tl := newLedgerIn(t, db)
		tl.baseline()
		// Minted (no import run) by the fill client, within its reach, but without a receipt.
		name := tl.name("99999", "x9")
		tl.exec(false, `insert into ark (ark, naan, shoulder_id, assigned_name, url, created_by, created_at)
			select ('99999/' || $1::text)::varchar, '99999', s.id, $1::varchar, 'https://example.org/m', c.id, now()
			from shoulder s, client c where s.naan = '99999' and s.shoulder = '/x9' and c.client_id = $2`, name, fixtures.FillClient)
		res, rows := tl.audit(verify.Config{})
		only(t, res, rows, verify.CheckReceiptMissing, 1, "ark:99999/"+name)
	})
}

// TestRecoveredReceiptMissing: an ARK put back by a recovery from mint maps (its import run's
// format mint-map) counts as minted by arkhe, so it must have its receipt; one of an ordinary
// import run needs none.
func TestRecoveredReceiptMissing(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		tl := newLedgerIn(t, db)
		tl.baseline()
		recovered, imported := tl.name("99999", "x9"), tl.name("99999", "x9")
		for _, c := range []struct{ name, format string }{{recovered, "mint-map"}, {imported, "ezid-anvl"}} {
			tl.exec(false, `with r as (insert into import_run (source_file, format) values ('f', $2) returning id)
				insert into ark (ark, naan, shoulder_id, assigned_name, url, import_run_id)
				select ('99999/' || $1::text)::varchar, '99999', s.id, $1::varchar, 'https://example.org/m', r.id
				from shoulder s, r where s.naan = '99999' and s.shoulder = '/x9'`, c.name, c.format)
		}
		res, rows := tl.audit(verify.Config{})
		only(t, res, rows, verify.CheckReceiptMissing, 1, "ark:99999/"+recovered)
	})
}

func TestChangeChain(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		tl := newLedgerIn(t, db)
		tl.baseline()
		var keys []string
		rows, err := tl.pool.Query(tl.ctx, `select ark from ark_change order by ark limit 4`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				t.Fatal(err)
			}
			keys = append(keys, k)
		}
		if err := rows.Err(); err != nil || len(keys) != 4 {
			t.Fatalf("ARKs with history: %v, %v", keys, err)
		}
		var last string
		tl.pool.QueryRow(tl.ctx, `select max(ark) from ark_change`).Scan(&last)
		// ARK_CHANGE accepts inserts; each fixture ARK with history has change 1.
		// A change that does not start where the previous one ended.
		tl.exec(false, `insert into ark_change (ark, seq, at, action, before_url, after_url)
			select ark, 2, now(), 'update', 'https://example.org/elsewhere', url from ark where ark = $1`, keys[0])
		// A change whose end is not where the ARK points.
		tl.exec(false, `insert into ark_change (ark, seq, at, action, before_url, after_url)
			select ark, 2, now(), 'update', url, 'https://example.org/never' from ark where ark = $1`, last)
		// A gap in the numbering: change 2 is missing.
		tl.exec(false, `insert into ark_change (ark, seq, at, action, before_url, after_url)
			select ark, 3, now(), 'update', url, url from ark where ark = $1`, keys[1])
		// A whole chain, but the ARK counts one change (change_seq 1) where its history holds two.
		tl.exec(false, `insert into ark_change (ark, seq, at, action, before_url, after_url, before_status, after_status)
			select ark, 2, now(), 'update', url, url, status, status from ark where ark = $1`, keys[2])
		// History of an ARK that was never in the ledger (the foreign key is off).
		tl.exec(true, `insert into ark_change (ark, seq, at, action, before_url, after_url)
			values ('99999/x9nowhere', 1, now(), 'update', null, 'https://example.org/x')`)
		res, rows2 := tl.audit(verify.Config{})
		only(t, res, rows2, verify.CheckChangeChain, 5, "ark:"+keys[0])
		details := map[string]string{}
		for _, r := range rows2 {
			details[*r.ARK] = r.Detail
		}
		for key, want := range map[string]string{
			keys[0]:           "change 2 starts from target",
			last:              "ends at target \"https://example.org/never\"",
			keys[1]:           "change 2 of the history is numbered 3",
			keys[2]:           "the ARK counts 1 changes (change_seq), but its history holds 2",
			"99999/x9nowhere": "1 ARK_CHANGE rows for an ARK that is not in the ledger",
		} {
			if !strings.Contains(details["ark:"+key], want) {
				t.Errorf("finding for ark:%s = %q, want it to contain %q", key, details["ark:"+key], want)
			}
		}
	})
}

func TestDigestDeleted(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		tl := newLedgerIn(t, db)
		a := tl.importARK(false, "99999", tl.name("99999", "x9"), "99999", "/x9", "now()")
		tl.baseline()
		tl.exec(false, `alter table ark disable trigger user`)
		tl.exec(false, `delete from ark where ark = $1`, strings.TrimPrefix(a, "ark:"))
		tl.exec(false, `alter table ark enable trigger user`)
		res, rows := tl.audit(verify.Config{})
		// The shoulder's count and the block's count and digest differ.
		only(t, res, rows, verify.CheckDigest, 2, "shoulder 99999/x9")
		// Until someone acts, every audit reports it again.
		res, rows = tl.audit(verify.Config{})
		only(t, res, rows, verify.CheckDigest, 2, "")
		// An operator accepts the ledger as it is: still reported, but recorded as the baseline.
		res, _ = tl.audit(verify.Config{AcceptDigest: true})
		if res.Check(verify.CheckDigest).Count != 2 || !res.SummaryStored {
			t.Errorf("--accept-digest: %d digest findings, stored %v", res.Check(verify.CheckDigest).Count, res.SummaryStored)
		}
		res, rows = tl.audit(verify.Config{})
		only(t, res, rows, "", 0, "")
	})
}

func TestDigestAltered(t *testing.T) {
	t.Parallel()
	tl := newLedger(t)
	tl.baseline()
	var key string
	tl.pool.QueryRow(tl.ctx, `select ark from ark where not exists (select 1 from ark_change c where c.ark = ark.ark) order by seq limit 1 offset 5`).Scan(&key)
	// The target changed behind the repoint path's back: no ARK_CHANGE row.
	tl.exec(true, `update ark set url = 'https://evil.example.org/' where ark = $1`, key)
	res, rows := tl.audit(verify.Config{})
	only(t, res, rows, verify.CheckDigest, 2, "shoulder 99999/x9")
}

func TestDigestLateInsert(t *testing.T) {
	t.Parallel()
	// An ARK inserted by a transaction still open while the baseline was taken, with a lower
	// seq than one committed before: not counted against the baseline.
	tl := newLedger(t)
	tx, err := tl.pool.Begin(tl.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(tl.ctx)
	name := tl.name("99999", "x9")
	if _, err := tx.Exec(tl.ctx, `insert into ark (ark, naan, shoulder_id, assigned_name, url, import_run_id)
		select '99999/' || $1::text, '99999', id, $1, 'https://example.org/late', $2 from shoulder where shoulder = '/x9'`, name, tl.run); err != nil {
		t.Fatal(err)
	}
	tl.importARK(false, "99999", tl.name("99999", "x9"), "99999", "/x9", "now()")
	tl.baseline()
	if err := tx.Commit(tl.ctx); err != nil {
		t.Fatal(err)
	}
	res, rows := tl.audit(verify.Config{})
	only(t, res, rows, "", 0, "")
	if res.ARKs != 122 {
		t.Errorf("ARKs = %d, want 122", res.ARKs)
	}
}

func TestSchemaTriggers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, sql, example string
	}{
		{"disabled", `alter table ark disable trigger ark_no_delete`, "trigger ark_no_delete on ark"},
		{"disabled on a reference table", `alter table shoulder disable trigger shoulder_update`, "trigger shoulder_update on shoulder"},
		{"dropped", `drop trigger ark_change_append_only on ark_change`, "trigger ark_change_append_only on ark_change"},
		{"replaced", `create or replace function arkhe_refuse_delete() returns trigger language plpgsql as $$ begin return old; end $$`, "function arkhe_refuse_delete"},
		{"replica by default", `do $$ begin execute format('alter database %I set session_replication_role = replica', current_database()); end $$`, "session_replication_role"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
				tl := newLedgerIn(t, db)
				tl.baseline()
				tl.exec(false, tc.sql)
				if tc.name == "replica by default" {
					tl.pool.Reset() // new sessions pick up the database default
				}
				res, rows := tl.audit(verify.Config{})
				only(t, res, rows, verify.CheckSchema, 1, tc.example)
			})
		})
	}
}

func TestExpectedTriggers(t *testing.T) {
	t.Parallel()
	ts, err := verify.ExpectedTriggers()
	if err != nil {
		t.Fatal(err)
	}
	have, layout := map[string]string{}, map[string]string{}
	for _, e := range ts {
		have[e.Name] = e.Table + " " + e.Function
		layout[e.Name] = e.Layout
	}
	// the fixed shoulder id is the single layout's only (on Citus the foreign key holds it); the
	// others are both layouts'; ark_in_shoulder, created on the single layout and dropped again
	// when ark_reach took over its check, is not expected
	for name, want := range map[string]string{"shoulder_id_fixed": "single", "ark_reach": "", "ark_no_delete": ""} {
		if layout[name] != want {
			t.Errorf("trigger %s: layout %q, want %q", name, layout[name], want)
		}
	}
	if have["ark_in_shoulder"] != "" {
		t.Errorf("trigger ark_in_shoulder expected (%q); a later migration drops it", have["ark_in_shoulder"])
	}
	// mint_receipt is a view of ark, protected by ark's triggers
	if have["mint_receipt_no_delete"] != "" || have["mint_receipt_no_truncate"] != "" {
		t.Errorf("triggers on the mint_receipt view expected: %q, %q", have["mint_receipt_no_delete"], have["mint_receipt_no_truncate"])
	}
	for name, want := range map[string]string{
		"ark_no_delete":              "ark arkhe_refuse_delete",
		"ark_no_truncate":            "ark arkhe_refuse_delete",
		"audit_event_append_only":    "audit_event arkhe_refuse_update",
		"ark_change_append_only":     "ark_change arkhe_refuse_update",
		"ark_update":                 "ark arkhe_ark_update",
		"ark_reach":                  "ark arkhe_ark_reach",
		"shoulder_update":            "shoulder arkhe_shoulder_update",
		"client_reach":               "client arkhe_client_reach",
		"manager_succession":         "manager arkhe_manager_update",
		"credential_kind":            "credential arkhe_credential_kind",
		"audit_summary_no_delete":    "audit_summary arkhe_refuse_delete",
		"audit_summary_append_only":  "audit_summary arkhe_refuse_update",
		"ledger_setting_append_only": "ledger_setting arkhe_refuse_update",
		"receipt_append_only":        "receipt arkhe_refuse_update",
	} {
		if have[name] != want {
			t.Errorf("expected trigger %s: %q, want %q", name, have[name], want)
		}
	}
	// Every table of the ledger refuses DELETE and TRUNCATE.
	for _, table := range []string{"naan", "manager", "shoulder", "client", "credential", "ark",
		"ark_change", "audit_event", "import_run", "audit_summary", "ledger_setting", "receipt",
		"shoulder_tally", "mint_quota"} {
		if have[table+"_no_delete"] == "" || have[table+"_no_truncate"] == "" {
			t.Errorf("table %s lacks an expected no_delete or no_truncate trigger", table)
		}
	}
}

func TestSince(t *testing.T) {
	t.Parallel()
	tl := newLedger(t)
	// Without a baseline, --since runs a full audit.
	res, rows := tl.audit(verify.Config{Since: true})
	only(t, res, rows, "", 0, "")
	if !res.Full || res.Checked != 120 {
		t.Errorf("--since without baseline: full %v checked %d", res.Full, res.Checked)
	}
	if err := fixtures.FillLedger(tl.ctx, tl.pool, 10, 4, fixtures.FillOptions{}); err != nil {
		t.Fatal(err)
	}
	tl.exec(false, `select ark_repoint(ark, 'https://example.org/again', null, 'test') from ark where seq = (select min(seq) from ark)`)
	bad := tl.importARK(false, "99999", "x9bad^char", "99999", "/x9", "now()")
	res, rows = tl.audit(verify.Config{Since: true})
	only(t, res, rows, verify.CheckSyntax, 1, bad)
	if res.Full || res.Checked != 12 || res.ARKs != 131 {
		t.Errorf("--since: full %v checked %d (want 12: 10 new, 1 repointed, 1 bad) ARKs %d", res.Full, res.Checked, res.ARKs)
	}
	res, _ = tl.audit(verify.Config{})
	if !res.Full || res.Checked != 131 {
		t.Errorf("full: full %v checked %d", res.Full, res.Checked)
	}
}

// TestSchemaTriggersOnAShard: on Citus a table's triggers fire as their copies on its shards,
// on the workers; a trigger disabled on one shard by a session on a worker leaves the
// coordinator's catalog whole, and the audit still finds it, naming the shard and node.
func TestSchemaTriggersOnAShard(t *testing.T) {
	tl := newLedgerIn(t, pgtest.NewCitus(t))
	tl.baseline()
	db := pgtest.NewCitus(t)
	w, err := pgxpool.New(tl.ctx, db.WorkerURLs[1])
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var shard int64
	if err := tl.pool.QueryRow(tl.ctx, `select min(s.shardid) from pg_dist_shard s join pg_dist_placement p using (shardid)
		join pg_dist_node n on n.groupid = p.groupid where s.logicalrelid = 'ark'::regclass and n.nodeport = $1`,
		w.Config().ConnConfig.Port).Scan(&shard); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Exec(tl.ctx, fmt.Sprintf(`alter table ark_%d disable trigger ark_update_%d`, shard, shard)); err != nil {
		t.Fatal(err)
	}
	res, rows := tl.audit(verify.Config{})
	only(t, res, rows, verify.CheckSchema, 1, "trigger ark_update on ark")
	if len(rows) == 1 && !strings.Contains(rows[0].Detail, fmt.Sprintf("shard %d of ark on node ", shard)) {
		t.Errorf("detail %q does not name shard %d", rows[0].Detail, shard)
	}
}

// TestConnectionsAgree: an audit finds the same on one, two or three connections (each lane's
// checks on its own connection, or lanes sharing one, in one snapshot), and a small ledger is
// audited on one connection unless told otherwise.
func TestConnectionsAgree(t *testing.T) {
	t.Parallel()
	tl := newLedger(t)
	res, _ := tl.audit(verify.Config{})
	if res.Connections != 1 {
		t.Errorf("a ledger of %d ARKs was audited on %d connections, want 1", res.ARKs, res.Connections)
	}
	// a finding for each lane: the ARK pass (digest), receipts (request.unique, receipt.missing)
	var key string
	tl.pool.QueryRow(tl.ctx, `select ark from ark where not exists (select 1 from ark_change c where c.ark = ark.ark) order by seq limit 1 offset 5`).Scan(&key)
	tl.exec(true, `update ark set url = 'https://evil.example.org/' where ark = $1`, key)
	tl.exec(false, `drop index ark_receipt`)
	dup, bare := tl.name("99999", "x9"), tl.name("99999", "x9")
	tl.exec(true, `insert into ark (ark, naan, shoulder_id, assigned_name, url, created_by, created_at, request_id, payload_digest)
		select '99999/' || $1::text, '99999', s.id, $1, 'https://example.org/d', c.id, now(), 'fill-3-0', '\x00112233445566778899aabbccddeeff'
		from shoulder s, client c where s.naan = '99999' and s.shoulder = '/x9' and c.client_id = $2`, dup, fixtures.FillClient)
	tl.exec(false, `insert into ark (ark, naan, shoulder_id, assigned_name, url, created_by, created_at)
		select ('99999/' || $1::text)::varchar, '99999', s.id, $1::varchar, 'https://example.org/m', c.id, now()
		from shoulder s, client c where s.naan = '99999' and s.shoulder = '/x9' and c.client_id = $2`, bare, fixtures.FillClient)
	type outcome struct {
		counts   map[string]int64
		examples map[string][]string
	}
	var first outcome
	for n := 1; n <= 3; n++ {
		res, _ := tl.audit(verify.Config{Connections: n})
		if res.Connections != n {
			t.Errorf("Connections %d: the audit used %d", n, res.Connections)
		}
		got := outcome{counts: map[string]int64{}, examples: map[string][]string{}}
		for _, c := range res.Checks {
			got.counts[c.Name], got.examples[c.Name] = c.Count, c.Examples
		}
		for _, check := range []string{verify.CheckDigest, verify.CheckRequestUnique, verify.CheckReceiptMissing} {
			if got.counts[check] == 0 {
				t.Errorf("Connections %d: no %s finding", n, check)
			}
		}
		if n == 1 {
			first = got
		} else if !reflect.DeepEqual(got, first) {
			t.Errorf("Connections %d found %v %v; one connection found %v %v", n, got.counts, got.examples, first.counts, first.examples)
		}
	}
	if err := (verify.Config{Connections: 4}).Validate(); err == nil {
		t.Error("Connections 4 was accepted")
	}
}
