package importer_test

import (
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/importer"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/loader"
	"github.com/arkhe-ledger/arkhe/pipeline"
)

// recoverMint mints the manifest in as client, writing mint map out, and returns its rows
// (header first).
func recoverMint(t *testing.T, l *ledger.Ledger, client, in, out string) [][]string {
	t.Helper()
	rep, err := loader.Mint(context.Background(), l, loader.MintJob{Mint: loader.MintConfig{ClientID: client}, Inputs: []string{in}, MintMapPath: out})
	if err != nil {
		t.Fatalf("mint %s as %s: %v", in, client, err)
	}
	if rep.Summary.Rejected != 0 {
		t.Fatalf("mint %s: %+v", in, rep.Summary)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestRecoverMintMap classifies every kind of mint-map row against the ledger, on both
// layouts: an ARK the ledger lacks is put back with its receipt (and a later mint of the same
// request ID and payload replays it), one present under the same request ID and values is
// present, one whose target changed after the mint is reported per field and left alone, one
// repeated within the run is present once put back; an ARK under another client's request ID,
// a request ID that holds another ARK, a name under no registered shoulder and a bad row are
// rejected naming the line and field, and so is a target no mint takes; a map without the payload columns puts its ARK back
// without a target and says so. A second run recovers nothing.
func TestRecoverMintMap(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		ctx := context.Background()
		l := &ledger.Ledger{Pool: db.Pool}
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		_, err := l.AddNAAN(ctx, ledger.NAAN{NAAN: "99999", Name: "test"})
		must(err)
		_, err = l.AddManager(ctx, ledger.Manager{NAAN: "99999", Name: "m1"})
		must(err)
		_, err = l.AddShoulder(ctx, ledger.Shoulder{NAAN: "99999", Shoulder: "/x9", Manager: "m1"}, 0)
		must(err)
		must(l.SetDefaultShoulder(ctx, "99999", "m1", "/x9"))
		for _, c := range []string{"c1", "c2"} {
			must(l.AddClient(ctx, ledger.Client{ClientID: c, NAAN: "99999", Manager: "m1", SubjectType: "machine", Authority: "manager",
				Scopes: []string{"ark:mint", "ark:import"}}))
		}
		dir := t.TempDir()
		in1 := filepath.Join(dir, "one.csv")
		_, err = fixtures.CreateManifestCSV(in1, fixtures.ManifestConfig{Rows: 3, Seed: 7, Prefix: "one-"})
		must(err)
		m1 := recoverMint(t, l, "c1", in1, filepath.Join(dir, "one.map.csv"))
		in2 := filepath.Join(dir, "two.csv")
		_, err = fixtures.CreateManifestCSV(in2, fixtures.ManifestConfig{Rows: 1, Seed: 8, Prefix: "two-"})
		must(err)
		m2 := recoverMint(t, l, "c2", in2, filepath.Join(dir, "two.map.csv"))
		if len(m1) != 4 || len(m2) != 2 || strings.Join(m1[0], ",") != "request_id,ark,status,url,who,what,when,commitment" {
			t.Fatalf("mint maps %q %q", m1, m2)
		}

		row := func(r ...string) string {
			var b strings.Builder
			w := csv.NewWriter(&b)
			_ = w.Write(r)
			w.Flush()
			return b.String()
		}
		changed := append([]string(nil), m1[2]...)
		changed[3] = "https://example.org/before-the-update"
		mapPath := filepath.Join(dir, "later.map.csv")
		text := strings.Join(m1[0], ",") + "\n" +
			row(m1[1]...) + // line 2: present
			row(changed...) + // line 3: changed after the mint (url)
			row("lost-1", "ark:99999/x9lost1", "minted", "https://example.org/lost1", "", "Lost one", "", "") + // line 4: recovered
			row("lost-1", "ark:99999/x9lost1", "replayed", "https://example.org/lost1", "", "Lost one", "", "") + // line 5: repeated
			row("claims", m2[1][1], "minted", "", "", "", "", "") + // line 6: another client's ARK
			row(m1[3][0], "ark:99999/x9other", "minted", "", "", "", "", "") + // line 7: the request ID holds another ARK
			row("nowhere", "ark:99999/zz9abc", "minted", "", "", "", "", "") + // line 8: no shoulder
			row("bad", "ark:99999/x9bad", "new", "", "", "", "", "") + // line 9: bad status
			row("script", "ark:99999/x9js", "minted", "javascript:alert(1)", "", "", "", "") // line 10: a target no mint takes
		must(os.WriteFile(mapPath, []byte(text), 0o644))
		oldPath := filepath.Join(dir, "old.map.csv")
		must(os.WriteFile(oldPath, []byte("request_id,ark,status\nlost-2,ark:99999/x9lost2,minted\n"), 0o644))

		rejects := filepath.Join(dir, "rejects.csv")
		rep, err := importer.Recover(ctx, l, importer.RecoverConfig{Inputs: []string{mapPath, oldPath}, ClientID: "c1", RejectsPath: rejects, BatchSize: 3})
		must(err)
		want := importer.RecoverCounts{Read: 10, Recovered: 2, PayloadUnknown: 1, Present: 2, ChangedAfterMint: 1, Rejected: 5}
		if rep.Total != want || !rep.Total.Findings() || len(rep.Files) != 2 {
			t.Fatalf("recovery: %+v, want %+v", rep.Total, want)
		}
		lines := impRejectLines(t, rejects)
		got := map[string]string{} // "file:line kind field" -> reason
		for _, r := range lines {
			got[filepath.Base(r[0])+":"+r[1]+" "+r[5]+" "+r[6]] = r[7]
		}
		for key, sub := range map[string]string{
			"later.map.csv:3 changed-after-mint url": "changed after the mint",
			"later.map.csv:6 rejected ark":           "under client c2's request ID \"two-000000001\"",
			"later.map.csv:7 rejected request_id":    "holds ARK ark:" + strings.TrimPrefix(m1[3][1], "ark:") + " in the ledger",
			"later.map.csv:8 rejected ark":           "no registered shoulder of NAAN 99999",
			"later.map.csv:9 rejected status":        "status \"new\"",
			"old.map.csv:2 payload unknown url":      "its target and ERC are unknown",
		} {
			if !strings.Contains(got[key], sub) {
				t.Errorf("reject line %s: %q, want it to say %q\n%v", key, got[key], sub, lines)
			}
		}
		if len(lines) != 7 {
			t.Errorf("%d reject lines, want 7: %v", len(lines), lines)
		}
		for _, r := range lines {
			if r[5] == importer.KindChangedAfterMint && (r[8] != changed[3] || r[9] != m1[2][3]) {
				t.Errorf("changed-after-mint line: map value %q, ledger value %q; want %q and %q", r[8], r[9], changed[3], m1[2][3])
			}
		}
		// what was put back: the payload, the client, the run, and the receipt
		if got := impScalar[string](t, db.Pool, `select concat_ws(' ', a.url, a.erc_what, c.client_id, r.format, a.created_at is null)
			from ark a join client c on c.id = a.created_by join import_run r on r.id = a.import_run_id where a.ark = '99999/x9lost1'`); got != "https://example.org/lost1 Lost one c1 mint-map t" {
			t.Errorf("recovered ARK: %s", got)
		}
		if got := impScalar[string](t, db.Pool, `select concat_ws(' ', coalesce(a.url, '-'), a.erc_what is null) from ark a where a.ark = '99999/x9lost2'`); got != "- t" {
			t.Errorf("ARK recovered without a payload: %s", got)
		}
		var rec pipeline.Record
		rec.Set(pipeline.FieldRequestID, "lost-1")
		rec.Set(pipeline.FieldURL, "https://example.org/lost1")
		rec.Set(pipeline.FieldWhat, "Lost one")
		d := pipeline.PayloadDigest(&rec)
		n := ledger.ReceiptDigestOctets
		if db.Citus() {
			n = 16
		}
		if got := impScalar[[]byte](t, db.Pool, `select r.payload_digest from mint_receipt r join client c on c.id = r.client_pk
			where c.client_id = 'c1' and r.request_id = 'lost-1' and r.ark = '99999/x9lost1'`); string(got) != string(d[:n]) {
			t.Errorf("receipt digest %x, want %x", got, d[:n])
		}
		if got := impScalar[string](t, db.Pool, `select url from ark where ark = $1`, strings.TrimPrefix(m1[2][1], "ark:")); got != m1[2][3] {
			t.Errorf("the ARK changed after its mint was overwritten: %s", got)
		}

		// again: nothing to put back
		rep, err = importer.Recover(ctx, l, importer.RecoverConfig{Inputs: []string{mapPath, oldPath}, ClientID: "c1"})
		must(err)
		if rep.Total.Recovered != 0 || rep.Total.Present != 4 || rep.Total.Rejected != 5 {
			t.Errorf("second recovery: %+v", rep.Total)
		}
		// the manifest row of lost-1 replays the ARK put back
		again := filepath.Join(dir, "again.csv")
		must(os.WriteFile(again, []byte("request_id,url,what\nlost-1,https://example.org/lost1,Lost one\n"), 0o644))
		m := recoverMint(t, l, "c1", again, filepath.Join(dir, "again.map.csv"))
		if len(m) != 2 || m[1][1] != "ark:99999/x9lost1" || m[1][2] != "replayed" {
			t.Errorf("mint after the recovery: %q", m)
		}
		// another client recovers nothing of c1's
		rep, err = importer.Recover(ctx, l, importer.RecoverConfig{Inputs: []string{filepath.Join(dir, "one.map.csv")}, ClientID: "c2"})
		must(err)
		if rep.Total.Rejected != 3 || rep.Total.Recovered != 0 {
			t.Errorf("c1's map recovered as c2: %+v", rep.Total)
		}
	})
}
