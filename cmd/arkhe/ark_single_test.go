package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
)

// TestARKShowRepointTombstone: show, repoint and tombstone one ARK through the CLI, with the
// client's scope and reach checked and exit 1 for no change.
func TestARKShowRepointTombstone(t *testing.T) {
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
	_, err = conn.Exec(ctx, `insert into ark (ark, naan, shoulder_id, assigned_name, url, erc_who, erc_what, status,
		original, created_at, created_by, request_id, payload_digest, metadata)
		select '99999/x9bc12', '99999', s.id, 'x9bc12', 'https://example.org/a', 'Doe, Jane', 'A title', 'public',
		'ark:/99999/x9-bc12', '2026-12-01 10:00:00.123456+00', c.id, 'req-1', '\x00112233445566778899aabbccddeeff'::bytea,
		'{"ezid.owner": "432", "dc.date": "2000-09-22", "note": "two\nlines", "pages": 37}'::jsonb
		from shoulder s, client c where s.naan = '99999' and s.shoulder = '/x9' and c.client_id = 'test-minter'`)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"client", "add", "--naan", "99999", "--manager", "arkhe test manager", "--scope", "ark:read", "reader"}, 0, "registered"},
		{[]string{"shoulder", "add", "--naan", "99999", "--manager", "arkhe test manager", "/k5"}, 0, "registered"},
		{[]string{"client", "add", "--naan", "99999", "--manager", "arkhe test manager", "--shoulder", "/k5", "--scope", "ark:update", "pinned"}, 0, "registered"},
		{[]string{"ark", "repoint", "ark:/99999/x9-bc12", "https://example.org/b", "--client", "test-minter", "--reason", "moved"}, 0, "ark:99999/x9bc12 now points to https://example.org/b"},
		{[]string{"ark", "repoint", "https://n2t.net/ark:/99999/x9bc12", "https://example.org/b", "--client", "test-minter"}, 1, "already; nothing changed"},
		{[]string{"ark", "repoint", "ark:99999/x9bc12", "ftp://example.org/c", "--client", "test-minter"}, 2, ""},
		{[]string{"ark", "repoint", "ark:99999/x9bc12", "https://example.org/c", "--client", "reader"}, 2, ""},
		{[]string{"ark", "repoint", "ark:99999/x9bc12", "https://example.org/c", "--client", "pinned"}, 2, ""},
		{[]string{"ark", "repoint", "ark:99999/x9bc12", "https://example.org/c", "--client", "nobody"}, 2, ""},
		{[]string{"ark", "repoint", "ark:99999/x9zzzz", "https://example.org/c", "--client", "test-minter"}, 2, ""},
		{[]string{"ark", "tombstone", "ark:99999/x9bc12", "--client", "test-minter", "--reason", " "}, 2, ""},
		{[]string{"ark", "tombstone", "ark:99999/x9bc12", "--client", "reader", "--reason", "gone"}, 2, ""},
		{[]string{"ark", "tombstone", "ark:99999/x9bc12", "--client", "test-minter", "--reason", "withdrawn by depositor"}, 0, "tombstoned: withdrawn by depositor"},
		{[]string{"ark", "tombstone", "ark:99999/x9bc12", "--client", "test-minter", "--reason", "again"}, 1, "tombstoned already"},
	}
	for _, s := range steps {
		code, out, errOut := arkhe(t, url, "", s.args...)
		if code != s.code || !strings.Contains(out, s.want) {
			t.Fatalf("arkhe %s: exit %d (want %d)\nstdout: %s\nstderr: %s", strings.Join(s.args, " "), code, s.code, out, errOut)
		}
	}
	// the refusals name their rule
	_, _, errOut := arkhe(t, url, "", "ark", "repoint", "ark:99999/x9bc12", "https://example.org/c", "--client", "reader")
	if !strings.Contains(errOut, "lacks scope ark:update") {
		t.Errorf("scope refusal: %s", errOut)
	}
	_, _, errOut = arkhe(t, url, "", "ark", "repoint", "ark:99999/x9bc12", "https://example.org/c", "--client", "pinned")
	if !strings.Contains(errOut, "does not reach shoulder /x9") {
		t.Errorf("reach refusal: %s", errOut)
	}
	_, _, errOut = arkhe(t, url, "", "ark", "show", "ark:/99999/x9zzzz")
	if !strings.Contains(errOut, "ark:99999/x9zzzz is not in the ledger") {
		t.Errorf("unknown ARK: %s", errOut)
	}

	code, _, errOut := arkhe(t, url, "", "ark", "show", "ark:/99999/X9-BC12")
	if code != 2 { // NAAN is case-folded, the name is not: X9BC12 is another ARK
		t.Errorf("show of another spelling: exit %d %s", code, errOut)
	}
	code, out, errOut := arkhe(t, url, "", "ark", "show", "ark:/99999/x9-bc12")
	if code != 0 {
		t.Fatalf("show: %d %s", code, errOut)
	}
	for _, want := range []string{"ark                 ark:99999/x9bc12", "shoulder            /x9", "target              https://example.org/b",
		"who                 Doe, Jane", "what                A title", "status              unavailable",
		"tombstone reason    withdrawn by depositor", "created by          test-minter", "original spelling   ark:/99999/x9-bc12",
		"receipt request ID  req-1", "history (2 changes, oldest first):",
		// times to the microsecond; metadata one field a line, keys in order; the latest change's reason
		"created at          2026-12-01T10:00:00.123456Z",
		"metadata            dc.date     2000-09-22\n" +
			"                    ezid.owner  432\n" +
			"                    note        \"two\\nlines\"\n" +
			"                    pages       37\n",
		"by test-minter, reason: withdrawn by depositor\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	history := out[strings.Index(out, "history ("):]
	i, j := strings.Index(history, " update "), strings.Index(history, " tombstone ")
	if i < 0 || j < i || !strings.Contains(out, "https://example.org/a -> https://example.org/b") ||
		!strings.Contains(out, "public -> unavailable") || !strings.Contains(out, "  moved  ") {
		t.Errorf("history not oldest first or incomplete:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^last change +\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z tombstone by test-minter`).MatchString(out) {
		t.Errorf("show's last change is not the tombstone, to the microsecond:\n%s", out)
	}
	if strings.Contains(out, "700000000") {
		t.Errorf("show prints an internal key:\n%s", out)
	}
}
