package loader_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/loader"
	"github.com/arkhe-ledger/arkhe/pipeline"
	"github.com/jackc/pgx/v5"
)

// TestMintLeanRows: a minted ARK stores its status public as NULL (the column has no default;
// a row that spells out 'public' keeps it, and the enum ark_status refuses any value but its
// three), its change count as NULL (0) and, on one node, the first 8 octets of its payload
// digest; every reader sees 'public' and 0, replays compare the digest on its stored length (a
// receipt written with all 16 octets replays too, and a changed payload is refused against
// either), and the repoint path counts from 0 and records 'public' for a NULL status, while a
// hand-written UPDATE that raises a NULL count is refused.
func TestMintLeanRows(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l := mintLedgerIn(t, db)
		ctx := context.Background()
		dir := t.TempDir()
		in := filepath.Join(dir, "m.csv")
		write := func(body string) {
			t.Helper()
			if err := os.WriteFile(in, []byte("request_id,url,what\n"+body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write("r1,https://example.org/1,One\nr2,https://example.org/2,Two\n")
		if _, err := doMint(t, ctx, l, mintRun{cfg: loader.MintConfig{ClientID: "c1"}, run: pipeline.RunConfig{Inputs: []string{in}}}); err != nil {
			t.Fatal(err)
		}
		if n := mintCount(t, l.Pool, `select count(*) from ark where status is null and change_seq is null`); n != 2 {
			t.Fatalf("%d minted ARKs store status and change_seq as NULL, want 2", n)
		}
		if n := mintCount(t, l.Pool, `select count(*) from ark where coalesce(status, 'public') = 'public' and ark_status_text(status) = 'public'`); n != 2 {
			t.Fatalf("%d minted ARKs read public as coalesce(status, 'public') and ark_status_text(status), want 2", n)
		}
		if !db.Citus() {
			// ark_status_text is inlined: the plan reads the coalesce, no function call per row
			rows, err := l.Pool.Query(ctx, `explain (verbose, costs off) select ark_status_text(status) from ark`)
			if err != nil {
				t.Fatal(err)
			}
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if plan := strings.Join(lines, "\n"); err != nil || !strings.Contains(plan, "COALESCE(") || strings.Contains(plan, "ark_status_text") {
				t.Fatalf("plan of ark_status_text(status) (%v):\n%s\nwant it inlined into a COALESCE", err, plan)
			}
		}
		// the enum holds the CHECK's three values and refuses any other, as the CHECK did
		refusedEverywhere(t, db, "22P02", `select count(*) from ark where status = 'published'`)
		if n := mintCount(t, l.Pool, `select count(*) from ark where status in ('reserved', 'unavailable')`); n != 0 {
			t.Fatalf("%d minted ARKs reserved or unavailable, want 0", n)
		}
		digests := `select count(*) from mint_receipt where length(payload_digest) = $1`
		if want := int64(ledger.ReceiptDigestOctets); db.Citus() {
			// the receipt table keeps the whole digest
			if n := mintCount(t, l.Pool, digests, 16); n != 2 {
				t.Fatalf("%d receipts of 16 octets on Citus, want 2", n)
			}
		} else if n := mintCount(t, l.Pool, digests, want); n != 2 {
			t.Fatalf("%d receipts with a %d-octet digest, want 2", n, want)
		}
		var r1 string
		if err := l.Pool.QueryRow(ctx, `select ark from mint_receipt where request_id = 'r1'`).Scan(&r1); err != nil {
			t.Fatal(err)
		}
		rec, err := l.ShowARK(ctx, r1)
		if err != nil || rec.Status != "public" {
			t.Fatalf("show %s: status %q, %v; want public", r1, rec.Status, err)
		}

		// a receipt as an earlier arkhe wrote it: all 16 octets of the digest
		var full pipeline.Record
		full.Set(pipeline.FieldRequestID, "old")
		full.Set(pipeline.FieldURL, "https://example.org/old")
		full.Set(pipeline.FieldWhat, "Old")
		d := pipeline.PayloadDigest(&full)
		if db.Citus() {
			mintExec(t, l.Pool, `insert into ark (ark, naan, shoulder_id, assigned_name, url, erc_what, created_by, created_at)
				select '99999/x9old', '99999', s.id, 'x9old', 'https://example.org/old', 'Old', c.id, now()
				from shoulder s, client c where s.shoulder = '/x9' and c.client_id = 'c1'`)
			mintExec(t, l.Pool, `insert into receipt (client_pk, request_id, ark, payload_digest, created_at)
				select id, 'old', '99999/x9old', $1, now() from client where client_id = 'c1'`, d[:])
		} else {
			mintExec(t, l.Pool, `insert into ark (ark, naan, shoulder_id, assigned_name, url, erc_what, created_by, created_at,
					request_id, payload_digest)
				select '99999/x9old', '99999', s.id, 'x9old', 'https://example.org/old', 'Old', c.id, now(), 'old', $1
				from shoulder s, client c where s.shoulder = '/x9' and c.client_id = 'c1'`, d[:])
		}
		write("r1,https://example.org/1,One\nr2,https://example.org/2,Two changed\nold,https://example.org/old,Old\nold2,https://example.org/old,Old\n")
		sum, err := doMint(t, ctx, l, mintRun{cfg: loader.MintConfig{ClientID: "c1", ReceiptCheck: loader.CheckAlways},
			run: pipeline.RunConfig{Inputs: []string{in}}, rejects: filepath.Join(dir, "rejects.csv")})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Replayed != 2 || sum.Rejected != 1 || sum.Minted != 1 {
			t.Fatalf("summary %+v, want r1 and old replayed, r2 rejected (changed payload), old2 minted", sum)
		}
		write("old,https://example.org/new,Old\n")
		if sum, err = doMint(t, ctx, l, mintRun{cfg: loader.MintConfig{ClientID: "c1"},
			run: pipeline.RunConfig{Inputs: []string{in}}, rejects: filepath.Join(dir, "rejects.csv")}); err != nil || sum.Rejected != 1 {
			t.Fatalf("a changed payload against a 16-octet receipt: %+v, %v; want it rejected", sum, err)
		}

		// the change path counts from 0; a hand-written UPDATE raising NULL + 1 is refused
		refusedEverywhere(t, db, ledger.CodeUpdateRefused, fmt.Sprintf(`insert into ark_change (ark, seq, at, action, before_url, after_url, before_status, after_status)
			values ('%[1]s', 1, now(), 'update', 'https://example.org/1', 'https://example.org/b', 'public', 'public');
			update ark set url = 'https://example.org/b', change_seq = change_seq + 1 where ark = '%[1]s'`, r1))
		// an ARK_CHANGE row that says public covers a NULL status only: the same row with the
		// count right does not let an UPDATE write 'reserved'
		refusedEverywhere(t, db, ledger.CodeUpdateRefused, fmt.Sprintf(`insert into ark_change (ark, seq, at, action, before_url, after_url, before_status, after_status)
			values ('%[1]s', 1, now(), 'update', 'https://example.org/1', 'https://example.org/b', 'public', 'public');
			update ark set url = 'https://example.org/b', status = 'reserved', change_seq = 1 where ark = '%[1]s'`, r1))
		mintExec(t, l.Pool, `select ark_repoint($1, 'https://example.org/moved', null, 'test')`, r1)
		mintExec(t, l.Pool, `select ark_tombstone($1, 'gone', null, 'test')`, r1)
		var history string
		if err := l.Pool.QueryRow(ctx, `select string_agg(seq || ' ' || before_status || '>' || after_status, '; ' order by seq)
			from ark_change where ark = $1`, r1).Scan(&history); err != nil {
			t.Fatal(err)
		}
		if want := "1 public>public; 2 public>unavailable"; history != want {
			t.Fatalf("history %q, want %q", history, want)
		}
		if n := mintCount(t, l.Pool, `select change_seq from ark where ark = $1 and status = 'unavailable'`, r1); n != 2 {
			t.Fatalf("change_seq %d after a repoint and a tombstone, want 2", n)
		}
	})
}
