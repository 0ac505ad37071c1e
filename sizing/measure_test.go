package sizing_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/sizing"
)

// seedLedger registers NAAN 99999, a manager, shoulders /x9 (active), /bc7 (active) and /dsp01
// (reserved, legacy) and a system client, and mints n ARKs on /x9 with receipts (on the ark
// row), written with plain SQL as mint writes them (created_by is the client,
// so the reach trigger checks them).
func seedLedger(t *testing.T, pool *pgxpool.Pool, n int) {
	t.Helper()
	ctx := context.Background()
	for _, q := range []string{
		`insert into naan (naan, name) values ('99999', 'test')`,
		`insert into naan (naan, name) values ('12345', 'empty')`,
		`insert into manager (naan, name) values ('99999', 'm')`,
		`insert into shoulder (naan, shoulder, manager_id) select '99999', s, (select id from manager) from unnest(array['/x9', '/bc7']) s`,
		`insert into shoulder (naan, shoulder, status, check_zone) values ('99999', '/dsp01', 'reserved', 'none')`,
		`insert into client (client_id, naan, subject_type, authority, allowed_scopes) values ('sizing-test-minter', '99999', 'machine', 'system', '{ark:mint}')`,
		fmt.Sprintf(`insert into ark (ark, naan, shoulder_id, assigned_name, url, erc_who, erc_what, erc_when, created_at, created_by,
				request_id, payload_digest)
			select '99999/x9' || lpad(i::text, 8, '0') || 'b', '99999', (select id from shoulder where shoulder = '/x9'),
				'x9' || lpad(i::text, 8, '0') || 'b', 'https://example.org/works/' || i, 'Someone ' || i, 'A title ' || i, '1900',
				now(), (select id from client), 'req-' || i, decode(md5(i::text), 'hex')
			from generate_series(1, %d) i`, n),
		`insert into shoulder_tally (shoulder_id, draws, collisions) select id, 1000, 5 from shoulder where shoulder = '/x9'`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatalf("seed: %v\n%s", err, q)
		}
	}
}

func TestMeasureCountsTOASTAndIndexes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.New(t)
	seedLedger(t, pool, 300)
	before, err := sizing.Measure(ctx, pool, sizing.MeasureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if before.ARKs != 300 || before.Receipts != 300 || before.Changes != 0 {
		t.Fatalf("counts: %d ARKs, %d receipts, %d changes", before.ARKs, before.Receipts, before.Changes)
	}
	// every table: total = heap + maps + TOAST + TOAST index + indexes = pg_total_relation_size
	// (for ark, with the receipts' share carved out of it added back), and every index as
	// pg_relation_size reports it
	parts := map[string]int64{}
	for _, tb := range before.Tables {
		if tb.PartOf != "" {
			parts[tb.PartOf] += tb.Total
		}
	}
	for _, tb := range before.Tables {
		if sum := tb.Heap + tb.Maps + tb.TOAST + tb.TOASTIndex + tb.IndexBytes(); sum != tb.Total {
			t.Errorf("%s: parts add to %d, total %d", tb.Name, sum, tb.Total)
		}
		if tb.PartOf == "" {
			var total int64
			if err := pool.QueryRow(ctx, `select pg_total_relation_size($1::regclass)`, tb.Name).Scan(&total); err != nil {
				t.Fatal(err)
			}
			if total != tb.Total+parts[tb.Name] {
				t.Errorf("%s: total %d + shares %d, pg_total_relation_size %d", tb.Name, tb.Total, parts[tb.Name], total)
			}
		}
		for _, ix := range tb.Indexes {
			var size int64
			if err := pool.QueryRow(ctx, `select pg_relation_size($1::regclass)`, ix.Name).Scan(&size); err != nil {
				t.Fatal(err)
			}
			if size != ix.Bytes || size == 0 {
				t.Errorf("index %s: measured %d, pg_relation_size %d", ix.Name, ix.Bytes, size)
			}
		}
	}
	arkT, _ := before.Table("ark")
	var names []string
	for _, ix := range arkT.Indexes {
		names = append(names, ix.Name)
		if ix.Name == "ark_pkey" && !ix.Primary {
			t.Errorf("ark_pkey not marked primary")
		}
	}
	if len(names) != 2 {
		t.Errorf("ark indexes %v, want ark_pkey and ark_seq_brin", names)
	}
	// the receipts on the ark row: their own line, the ark_receipt index and their columns'
	// share of the heap
	rt, ok := before.Table("mint_receipt")
	if !ok || rt.PartOf != "ark" || rt.Rows != 300 || len(rt.Indexes) != 1 || rt.Indexes[0].Name != "ark_receipt" {
		t.Fatalf("receipts: %+v", rt)
	}
	if want := 300 * sizing.ReceiptHeapShare(before.Fields); rt.Heap < int64(want)-1 || rt.Heap > int64(want)+1 || rt.Heap < 300*12 {
		t.Errorf("receipts' heap share %d, want %.0f", rt.Heap, want)
	}
	if _, ok := before.Table("audit_event"); !ok {
		t.Errorf("audit_event not measured")
	}

	// one ARK with a 10 kB incompressible title: its TOAST relation and the total grow by it
	raw := make([]byte, 7_500)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	title := base64.StdEncoding.EncodeToString(raw) // 10,000 octets of random text
	if _, err := pool.Exec(ctx, `insert into ark (ark, naan, shoulder_id, assigned_name, erc_what, created_at, created_by)
		values ('99999/x9zzzzzzzzb', '99999', (select id from shoulder where shoulder = '/x9'), 'x9zzzzzzzzb', $1, now(),
			(select id from client))`, title); err != nil {
		t.Fatal(err)
	}
	after, err := sizing.Measure(ctx, pool, sizing.MeasureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	arkA, _ := after.Table("ark")
	if grew := arkA.TOASTBytes() - arkT.TOASTBytes(); grew < 10_000 {
		t.Errorf("TOAST grew by %d octets for a 10 kB title (before %d, after %d)", grew, arkT.TOASTBytes(), arkA.TOASTBytes())
	}
	if grew := arkA.Total - arkT.Total; grew < 10_000 {
		t.Errorf("ark total grew by %d octets for a 10 kB title", grew)
	}
	if after.Total()-before.Total() < 10_000 {
		t.Errorf("ledger total grew by %d octets", after.Total()-before.Total())
	}
	if after.ARKs != 301 {
		t.Errorf("ARKs after = %d", after.ARKs)
	}
}

func TestMeasureNamespacesAndFields(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.New(t)
	seedLedger(t, pool, 50)
	m, err := sizing.Measure(ctx, pool, sizing.MeasureOptions{CollisionWarning: 0.001})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Namespaces) != 2 || m.Namespaces[0].NAAN != "12345" || m.Namespaces[1].NAAN != "99999" {
		t.Fatalf("namespaces: %+v", m.Namespaces)
	}
	n := m.Namespaces[1]
	if n.Legacy != 1 || len(n.Lengths) != 2 || n.Lengths[0] != (sizing.LengthUse{Length: 2, Used: 1, Available: 190, Fraction: 1.0 / 190}) ||
		n.Lengths[1].Length != 3 || n.Lengths[1].Available != 3610 {
		t.Fatalf("99999 namespace: %+v", n)
	}
	got := map[string]sizing.ShoulderUse{}
	for _, s := range n.Shoulders {
		got[s.Shoulder] = s
	}
	x9 := got["/x9"]
	if x9.ARKs != 50 || x9.Draws != 1000 || x9.Collisions != 5 || x9.CollisionRate != 0.005 || !x9.Warn ||
		x9.Fraction != 50/sizing.BladeCapacity(8) {
		t.Errorf("/x9: %+v", x9)
	}
	if bc7 := got["/bc7"]; bc7.ARKs != 0 || bc7.Warn {
		t.Errorf("/bc7: %+v", bc7)
	}
	// field lengths: key "99999/x9" + 8 digits + "b" = 17; name 11; url "https://example.org/works/" + i
	f := m.Fields
	if f.NAAN != 5 || f.Name != 11 || f.Key() != 17 || f.When != 4 || f.URLShare != 1 || f.RequestID < 5 || f.RequestID > 20 {
		t.Errorf("fields: %+v", f)
	}
	if m.Settings.MaxWALSize <= 0 || m.Settings.SharedBuffers <= 0 {
		t.Errorf("settings: %+v", m.Settings)
	}
	if len(m.WAL.Runs) != 0 || m.WAL.ClusterBytes <= 0 {
		t.Errorf("WAL before any recorded run: %+v", m.WAL)
	}
	// a mint run that recorded its WAL (audit_event detail) sets the WAL per ARK
	if _, err := pool.Exec(ctx, `insert into audit_event (client_id, action, target, detail)
		values ('sizing-test-minter', 'mint', 'ark:99999/x9', '{"minted": 20000, "wal_bytes": 12000000}')`); err != nil {
		t.Fatal(err)
	}
	if m, err = sizing.Measure(ctx, pool, sizing.MeasureOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(m.WAL.Runs) != 1 || m.WAL.Runs[0].Bytes != 12_000_000 || m.WAL.Runs[0].Rows != 20_000 || m.WAL.Runs[0].Source != "mint ark:99999/x9" {
		t.Fatalf("WAL runs: %+v", m.WAL.Runs)
	}
	if c := m.Costs(sizing.ArkheModel(m.Fields)); c.WALPer != 600 {
		t.Errorf("WAL per ARK from the recorded run: %v, want 600", c.WALPer)
	}
	rep := sizing.MeasuredReport(m, 0.001)
	if rep.Warnings != 1 || rep.Costs.Source != "model" || len(rep.Projection) != 4 || rep.ReceiptsPerARK != 1 {
		t.Errorf("report: warnings %d, costs from %s, %d points, %.2f receipts per ARK", rep.Warnings, rep.Costs.Source, len(rep.Projection), rep.ReceiptsPerARK)
	}
}

// TestFixedBytes checks ModelFixedBytes against a fresh, migrated ledger.
func TestFixedBytes(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	tables, err := sizing.MeasureTables(t.Context(), pool)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, tb := range tables {
		total += tb.Total
	}
	if r := float64(total) / sizing.ModelFixedBytes; r < 0.5 || r > 1.5 {
		t.Errorf("an empty ledger is %d octets; ModelFixedBytes %d is off by a factor %.2f", total, sizing.ModelFixedBytes, r)
	}
}

// TestMeasureCitusSumsEveryPlacement measures a ledger on a Citus cluster (a coordinator and two
// workers): every table's size is the sum over its shard placements on every node, the receipts
// are their own table, and the nodes' ARKs add up to the ledger's.
func TestMeasureCitusSumsEveryPlacement(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the Citus cluster runs in make test, not in -short")
	}
	ctx := t.Context()
	db := pgtest.NewCitus(t)
	pool := db.Pool
	seedCitus(t, pool, 400)
	m, err := sizing.Measure(ctx, pool, sizing.MeasureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m.ARKs != 400 || m.Receipts != 400 {
		t.Fatalf("counts: %d ARKs, %d receipts", m.ARKs, m.Receipts)
	}
	if len(m.Nodes) != 3 {
		t.Fatalf("nodes %+v, want the coordinator and two workers", m.Nodes)
	}
	var arks, distributed int64
	for _, n := range m.Nodes {
		arks += n.ARKs
		distributed += n.Distributed
		if n.Reference == 0 {
			t.Errorf("node %s holds no reference table copy: %+v", n.Node, n)
		}
	}
	if arks != 400 {
		t.Errorf("the nodes' ARKs add up to %d, want 400", arks)
	}
	// every shard placement, by Citus's own accounting: citus_total_relation_size sums them too
	for _, name := range []string{"ark", "receipt", "ark_change"} {
		reported := name
		if name == "receipt" {
			reported = "mint_receipt"
		}
		tb, ok := m.Table(reported)
		if !ok {
			t.Fatalf("%s not measured", reported)
		}
		var total int64
		if err := pool.QueryRow(ctx, `select citus_total_relation_size($1::regclass)`, name).Scan(&total); err != nil {
			t.Fatal(err)
		}
		if tb.Total != total || tb.Total == 0 {
			t.Errorf("%s: measured %d, citus_total_relation_size %d", name, tb.Total, total)
		}
		if sum := tb.Heap + tb.Maps + tb.TOAST + tb.TOASTIndex + tb.IndexBytes(); sum != tb.Total {
			t.Errorf("%s: parts add to %d, total %d", name, sum, tb.Total)
		}
	}
	arkT, _ := m.Table("ark")
	var pk bool
	for _, ix := range arkT.Indexes {
		pk = pk || (ix.Name == "ark_pkey" && ix.Primary && ix.Bytes > 0)
	}
	if !pk || arkT.Heap < 400*50 {
		t.Errorf("ark on the shards: %+v", arkT)
	}
	r := sizing.MeasuredReport(m, 0)
	if len(r.Workers) != 3*len(sizing.ProjectionARKs()) {
		t.Fatalf("worker projection %+v", r.Workers)
	}
	for _, w := range r.Workers {
		if w.Workers == 1 && w.PerWorker != w.Point.Total {
			t.Errorf("one worker holds %d, the ledger %d", w.PerWorker, w.Point.Total)
		}
		if w.Workers == 4 && w.PerWorker != (w.Point.Total-w.Point.FixedBytes)/4+w.Point.FixedBytes {
			t.Errorf("four workers: %+v", w)
		}
	}
}

// seedCitus registers NAAN 99999, a manager, the active shoulder /x9 and a minting client, and
// writes n ARKs with their receipts in the receipt table, as mint writes them on Citus.
func seedCitus(t *testing.T, pool *pgxpool.Pool, n int) {
	t.Helper()
	for _, q := range []string{
		`insert into naan (naan, name) values ('99999', 'test')`,
		`insert into manager (naan, name) values ('99999', 'm')`,
		// on Citus a registration INSERT takes literal values: its audit trigger needs the
		// connections an INSERT … SELECT would hold, and Citus has no subquery in INSERT … VALUES
		`do $$ declare m bigint; begin select id into m from manager; insert into shoulder (naan, shoulder, manager_id) values ('99999', '/x9', m); end $$`,
		`insert into client (client_id, naan, subject_type, authority, allowed_scopes) values ('sizing-test-minter', '99999', 'machine', 'system', '{ark:mint}')`,
		fmt.Sprintf(`insert into ark (ark, naan, shoulder_id, assigned_name, url, erc_what, created_at, created_by)
			select '99999/x9' || lpad(i::text, 8, '0') || 'b', '99999', (select id from shoulder where shoulder = '/x9'),
				'x9' || lpad(i::text, 8, '0') || 'b', 'https://example.org/works/' || i, 'A title ' || i, now(), (select id from client)
			from generate_series(1, %d) i`, n),
		fmt.Sprintf(`insert into receipt (client_pk, request_id, ark, payload_digest, created_at)
			select (select id from client), 'req-' || i, '99999/x9' || lpad(i::text, 8, '0') || 'b', decode(md5(i::text), 'hex'), now()
			from generate_series(1, %d) i`, n),
	} {
		if _, err := pool.Exec(t.Context(), q); err != nil {
			t.Fatalf("seed: %v\n%s", err, q)
		}
	}
}
