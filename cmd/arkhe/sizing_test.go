package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/sizing"
)

// internalKey matches a pgtest identity value (7,000,000,000,001 and up): no output may show one
// (no internal key is ever shown to a user).
var internalKey = regexp.MustCompile(`7\D?0{3}\D?0{3}\D?0{3}\D?\d{3}`)

func noInternalKey(t *testing.T, what, out string) {
	t.Helper()
	if m := internalKey.FindString(out); m != "" {
		t.Errorf("%s shows an internal key %q:\n%s", what, m, out)
	}
}

// runArkhe runs the CLI with args and returns its exit code and outputs.
func runArkhe(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"arkhe", "--quiet"}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// seedSizingLedger registers NAAN 99999 with shoulders /x9 (active) and /dsp01 (legacy), a
// client, n minted ARKs with receipts, two ARK_CHANGE rows and mint counters on /x9.
func seedSizingLedger(t *testing.T, pool *pgxpool.Pool, n int) {
	t.Helper()
	for _, q := range []string{
		`insert into naan (naan, name) values ('99999', 'test')`,
		`insert into manager (naan, name) values ('99999', 'm')`,
		// on Citus a registration INSERT takes literal values: its audit trigger needs the
		// connections an INSERT … SELECT would hold, and Citus has no subquery in INSERT … VALUES
		`do $$ declare m bigint; begin select id into m from manager; insert into shoulder (naan, shoulder, manager_id) values ('99999', '/x9', m); end $$`,
		`insert into shoulder (naan, shoulder, status, check_zone) values ('99999', '/dsp01', 'reserved', 'none')`,
		`insert into client (client_id, naan, subject_type, authority, allowed_scopes) values ('sizing-cli-minter', '99999', 'machine', 'system', '{ark:mint,ark:update}')`,
		// each ARK with its receipt on the row
		`insert into ark (ark, naan, shoulder_id, assigned_name, url, erc_who, erc_what, erc_when, created_at, created_by,
				request_id, payload_digest)
			select '99999/x9' || lpad(i::text, 8, '0') || 'b', '99999', (select id from shoulder where shoulder = '/x9'),
				'x9' || lpad(i::text, 8, '0') || 'b', 'https://example.org/works/' || i, 'Someone ' || i, 'A title ' || i, '1900',
				now(), (select id from client), 'req-' || i, decode(md5(i::text), 'hex')
			from generate_series(1, ` + strconv.Itoa(n) + `) i`,
		`select ark_repoint(ark, url || '/moved', (select id from client), null) from ark order by ark limit 2`,
		`insert into shoulder_tally (shoulder_id, draws, collisions) select id, 200, 1 from shoulder where shoulder = '/x9'`,
	} {
		if _, err := pool.Exec(context.Background(), q); err != nil {
			t.Fatalf("seed: %v\n%s", err, q)
		}
	}
}

func TestSizingMeasuredLedger(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	pool := pgtest.New(t)
	seedSizingLedger(t, pool, 200)

	// NAANs without ARKs or active shoulders (as the imported NAAN registry brings) are summarized
	if _, err := pool.Exec(t.Context(), `insert into naan (naan, name) values ('12345', 'idle'), ('23456', 'idle too')`); err != nil {
		t.Fatal(err)
	}
	code, text, errOut := runArkhe(t, "--database-url", url, "sizing")
	// /x9: 1 collision in 200 draws = 0.5 % ≥ the default warning of 0.1 %: a finding, exit 1
	if code != exitFindings || !strings.Contains(errOut, "collision warning") {
		t.Fatalf("sizing: exit %d (want 1)\n%s\n%s", code, text, errOut)
	}
	for _, want := range []string{
		"200 ARKs, 200 receipts, 2 ARK_CHANGE rows",
		"index ark_pkey (primary key)", "mint_receipt (on the ark row)", "index ark_receipt", "index ark_change_pkey (primary key)",
		"audit_event", "all ", "ark + receipt, per ARK (all-in)", "receipts, per ARK (not in the 400 B)",
		"verdict:", "1B", "NAAN 99999: 1 of 190 shoulders of length 2 used", "1 legacy shoulder",
		"/x9", "WARNING: namespace filling up", "29^8 = 5.0e+11",
		"2 other NAANs without ARKs or active shoulders not shown (--all lists them)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("sizing output lacks %q:\n%s", want, text)
		}
	}
	if n := strings.Count(text, "\n"); n > 60 {
		t.Errorf("sizing output is %d lines, more than a screen", n)
	}
	if strings.Contains(text, "NAAN 12345") || strings.Contains(text, "no first-digit shoulder") {
		t.Errorf("sizing lists an idle NAAN by default:\n%s", text)
	}
	// 2 ARK_CHANGE rows: their per-row cost is no finding
	var changeLine string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "ARK_CHANGE, per row") {
			changeLine = l
		}
	}
	if !strings.Contains(changeLine, "too few rows to measure") || strings.Contains(changeLine, "%") {
		t.Errorf("ARK_CHANGE line: %q", changeLine)
	}
	_, all, _ := runArkhe(t, "--database-url", url, "sizing", "--all")
	if !strings.Contains(all, "NAAN 12345: no first-digit shoulder") || strings.Contains(all, "not shown") {
		t.Errorf("sizing --all does not list every NAAN:\n%s", all)
	}
	noInternalKey(t, "sizing", text+errOut)

	code, js, errOut := runArkhe(t, "--database-url", url, "sizing", "--json", "--collision-warn", "0.01")
	if code != exitDone {
		t.Fatalf("sizing --json: exit %d\n%s", code, errOut)
	}
	var rep sizing.Report
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatalf("sizing --json does not parse: %v\n%s", err, js)
	}
	if rep.Mode != "measured" || rep.Measurement.ARKs != 200 || rep.Measurement.Changes != 2 || len(rep.Projection) != 4 ||
		rep.Comparison == nil || len(rep.Comparison.Lines) != 5 || rep.Warnings != 0 {
		t.Errorf("sizing --json: %+v", rep)
	}
	var generic map[string]any
	if err := json.Unmarshal([]byte(js), &generic); err != nil || generic["measurement"] == nil {
		t.Errorf("sizing --json as a generic document: %v", err)
	}
	noInternalKey(t, "sizing --json", js)

	code, tsv, _ := runArkhe(t, "--database-url", url, "sizing", "--table", "--collision-warn", "0.5")
	if code != exitDone {
		t.Fatalf("sizing --table: exit %d", code)
	}
	checkTSV(t, tsv)
	noInternalKey(t, "sizing --table", tsv)

	// a 10 kB incompressible title shows up in the ark table's TOAST and total
	arkOf := func(r sizing.Report) sizing.TableSize {
		tb, _ := r.Measurement.Table("ark")
		return tb
	}
	raw := make([]byte, 7_500)
	rand.Read(raw)
	if _, err := pool.Exec(t.Context(), `insert into ark (ark, naan, shoulder_id, assigned_name, erc_what, created_at, created_by)
		values ('99999/x9zzzzzzzzb', '99999', (select id from shoulder where shoulder = '/x9'), 'x9zzzzzzzzb', $1, now(),
			(select id from client))`, base64.StdEncoding.EncodeToString(raw)); err != nil {
		t.Fatal(err)
	}
	_, js2, _ := runArkhe(t, "--database-url", url, "sizing", "--json")
	var rep2 sizing.Report
	if err := json.Unmarshal([]byte(js2), &rep2); err != nil {
		t.Fatal(err)
	}
	before, after := arkOf(rep), arkOf(rep2)
	if after.TOASTBytes()-before.TOASTBytes() < 10_000 || after.Total-before.Total < 10_000 {
		t.Errorf("10 kB title: TOAST %d → %d, total %d → %d", before.TOASTBytes(), after.TOASTBytes(), before.Total, after.Total)
	}
	_, text2, _ := runArkhe(t, "--database-url", url, "sizing")
	if toast := szBytes(after.TOASTBytes()); !strings.Contains(text2, toast) || szBytes(before.TOASTBytes()) == toast {
		t.Errorf("text output does not show the grown TOAST %s:\n%s", toast, text2)
	}
}

// checkTSV checks the plot table: a header of 11 columns and 13 rows of integers, ARKs from
// 100,000 to 1,000,000,000.
func checkTSV(t *testing.T, tsv string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(tsv, "\n"), "\n")
	if len(lines) != 14 || !strings.HasPrefix(lines[0], "arks\treceipts\tchanges\tledger_bytes") {
		t.Fatalf("TSV has %d lines:\n%s", len(lines), tsv)
	}
	for i, l := range lines[1:] {
		cells := strings.Split(l, "\t")
		if len(cells) != 11 {
			t.Fatalf("TSV row %d has %d cells: %q", i+1, len(cells), l)
		}
		for _, c := range cells {
			if _, err := strconv.ParseInt(c, 10, 64); err != nil {
				t.Fatalf("TSV row %d cell %q is not an integer", i+1, c)
			}
		}
	}
	if !strings.HasPrefix(lines[1], "100000\t") || !strings.HasPrefix(lines[13], "1000000000\t") {
		t.Errorf("TSV rows do not run from 100000 to 1000000000:\n%s", tsv)
	}
}

func TestSizingModel(t *testing.T) {
	t.Parallel()
	code, text, errOut := runArkhe(t, "sizing", "--model", "--arks", "2000000", "--changes", "200000")
	if code != exitDone {
		t.Fatalf("sizing --model: exit %d\n%s", code, errOut)
	}
	for _, want := range []string{"2,000,000 ARKs, 2,000,000 receipts, 200,000 ARK_CHANGE rows", "362 (design model)",
		"258 (design model)", "400 (budget)", "planned ledger:", "verdict:", "3,610 (3)", "500,246,412,961", "projection from the model"} {
		if !strings.Contains(text, want) {
			t.Errorf("sizing --model lacks %q:\n%s", want, text)
		}
	}
	code, js, _ := runArkhe(t, "sizing", "--model", "--json", "--arks", "2000000", "--avg-url", "100", "--avg-title", "0")
	if code != exitDone {
		t.Fatalf("sizing --model --json: exit %d", code)
	}
	var rep sizing.Report
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatalf("sizing --model --json does not parse: %v", err)
	}
	if rep.Mode != "model" || rep.Plan == nil || rep.Plan.ARKs != 2_000_000 || rep.Plan.Receipts != 2_000_000 ||
		rep.Fields.URL != 100 || rep.Fields.WhatShare != 0 || rep.Measurement != nil {
		t.Errorf("sizing --model --json: %+v", rep)
	}
	want := sizing.ModelReport(sizing.Plan{ARKs: 2_000_000, Receipts: 2_000_000}, rep.Fields)
	if rep.Plan.Total != want.Plan.Total || rep.Projection[3] != want.Projection[3] {
		t.Errorf("plan %d (want %d), 1B point %+v (want %+v)", rep.Plan.Total, want.Plan.Total, rep.Projection[3], want.Projection[3])
	}
	code, tsv, _ := runArkhe(t, "sizing", "--model", "--table")
	if code != exitDone {
		t.Fatalf("sizing --model --table: exit %d", code)
	}
	checkTSV(t, tsv)

	for _, args := range [][]string{
		{"sizing", "--arks", "5"},                 // a plan flag without --model
		{"sizing", "--model", "--avg-url", "-1"},  // negative length
		{"sizing", "--model", "--avg-naan", "17"}, // NAAN over 16 octets
		{"sizing", "--model", "--json", "--table"},
	} {
		if code, _, errOut := runArkhe(t, args...); code != exitCannot || errOut == "" {
			t.Errorf("arkhe %v: exit %d (want 2), stderr %q", args, code, errOut)
		}
	}
}

func TestBenchSizingCLI(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a benchmark's end-to-end run: make test runs it, make test-short leaves it out")
	}
	url := pgtest.URL(t)
	code, text, errOut := runArkhe(t, "--database-url", url, "bench", "sizing", "--rows", "3000", "--layout", "natural",
		"--layout", "surrogate", "--layout", "receipt-table", "--layout", "arkhe")
	if code != exitDone {
		t.Fatalf("bench sizing: exit %d\n%s\n%s", code, text, errOut)
	}
	for _, want := range []string{"3,000 ARKs from generated (seed 1)", "natural", "surrogate", "receipt-table", "arkhe", "index ark_pkey",
		"index ark_ark_key", "index mint_receipt_pkey", "index ark_receipt", "ark + receipt (all-in)", "load, ARKs/s", "WAL per ARK",
		"receipt columns on the ark row", "bigint surrogate ark.id", "interning client ids", "model:", "Verdict:"} {
		if !strings.Contains(text, want) {
			t.Errorf("bench sizing lacks %q:\n%s", want, text)
		}
	}
	noInternalKey(t, "bench sizing", text+errOut)
	code, js, errOut := runArkhe(t, "--database-url", url, "bench", "sizing", "--rows", "1000", "--layout", "lean", "--json")
	if code != exitDone {
		t.Fatalf("bench sizing --json: exit %d\n%s", code, errOut)
	}
	var rep struct {
		ARKs    int `json:"arks"`
		Results []struct {
			Layout struct{ Name string } `json:"layout"`
			ARKs   int64                 `json:"arks"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(js), &rep); err != nil || rep.ARKs != 1000 || len(rep.Results) != 1 || rep.Results[0].Layout.Name != "lean" {
		t.Errorf("bench sizing --json: %v %+v", err, rep)
	}
	noInternalKey(t, "bench sizing --json", js)
	if code, _, _ := runArkhe(t, "--database-url", url, "bench", "sizing", "--layout", "nope"); code != exitCannot {
		t.Errorf("unknown layout: exit %d, want 2", code)
	}
	// the bench dropped every database it made
	var n int
	if err := pgtest.New(t).QueryRow(t.Context(), `select count(*) from pg_database where datname like 'arkhe_sizing_%'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d bench databases left (%v)", n, err)
	}
}

// TestSizingOnCitus runs `arkhe sizing` on a ledger on a Citus cluster: it shows what each of the
// three nodes holds and the ledger spread over 1, 4 and 16 workers.
func TestSizingOnCitus(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the Citus cluster runs in make test, not in -short")
	}
	db := pgtest.NewCitus(t)
	for _, q := range []string{
		`insert into naan (naan, name) values ('99999', 'test')`,
		`insert into manager (naan, name) values ('99999', 'm')`,
		// on Citus a registration INSERT takes literal values: its audit trigger needs the
		// connections an INSERT … SELECT would hold, and Citus has no subquery in INSERT … VALUES
		`do $$ declare m bigint; begin select id into m from manager; insert into shoulder (naan, shoulder, manager_id) values ('99999', '/x9', m); end $$`,
		`insert into client (client_id, naan, subject_type, authority, allowed_scopes) values ('sizing-cli-minter', '99999', 'machine', 'system', '{ark:mint}')`,
		`insert into ark (ark, naan, shoulder_id, assigned_name, url, erc_what, created_at, created_by)
			select '99999/x9' || lpad(i::text, 8, '0') || 'b', '99999', (select id from shoulder where shoulder = '/x9'),
				'x9' || lpad(i::text, 8, '0') || 'b', 'https://example.org/works/' || i, 'A title ' || i, now(), (select id from client)
			from generate_series(1, 500) i`,
		`insert into receipt (client_pk, request_id, ark, payload_digest, created_at)
			select (select id from client), 'req-' || i, '99999/x9' || lpad(i::text, 8, '0') || 'b', decode(md5(i::text), 'hex'), now()
			from generate_series(1, 500) i`,
	} {
		if _, err := db.Pool.Exec(t.Context(), q); err != nil {
			t.Fatalf("seed: %v\n%s", err, q)
		}
	}
	code, out, errs := runArkhe(t, "--database-url", db.URL, "sizing")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	nodes := regexp.MustCompile(`(?m)^\S+:97\d\d\s+(\d+)\s`).FindAllStringSubmatch(out, -1)
	arks := 0
	for _, n := range nodes {
		k, _ := strconv.Atoi(n[1])
		arks += k
	}
	if !strings.Contains(out, "on the Citus cluster: every shard placement on each of 3 nodes") || len(nodes) != 3 || arks != 500 {
		t.Errorf("nodes %v (%d ARKs):\n%s", nodes, arks, out)
	}
	if !strings.Contains(out, "spread over Citus workers") || !regexp.MustCompile(`(?m)^1B\s+16\s+\d`).MatchString(out) {
		t.Errorf("no projection over workers:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^mint_receipt\s+500\s`).MatchString(out) {
		t.Errorf("receipts not measured:\n%s", out)
	}
	noInternalKey(t, "sizing", out)
}
