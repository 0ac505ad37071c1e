package main

import (
	"context"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// TestClientUnknown: a recorded unknown subject is listed by client unknown and registered by
// client add --from-unknown as a person client, after which it is no longer listed.
func TestClientUnknown(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	if code, _, errOut := arkhe(t, url, "", "init", "--test-registration"); code != 0 {
		t.Fatalf("init: %s", errOut)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var id int64
	for i := 0; i < 3; i++ {
		var seen int64
		if id, seen, err = ledger.NoteUnknownSubject(ctx, conn, "https://login.example.org", "cataloguer-app",
			netip.MustParseAddr("192.0.2.7")); err != nil {
			t.Fatal(err)
		}
		if seen != int64(i+1) {
			t.Fatalf("note %d: seen %d", i+1, seen)
		}
	}
	code, out, errOut := arkhe(t, url, "", "client", "unknown")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 {
		t.Fatalf("client unknown: %d\n%s\n%s", code, out, errOut)
	}
	f := strings.Fields(lines[1])
	if len(f) != 7 || f[0] != strconv.FormatInt(id, 10) || f[1] != "cataloguer-app" || f[2] != "https://login.example.org" ||
		f[5] != "3" || f[6] != "192.0.2.7" {
		t.Fatalf("client unknown row %q: want id %d, cataloguer-app, the issuer, seen 3, 192.0.2.7", lines[1], id)
	}
	if code, _, errOut := arkhe(t, url, "", "client", "add", "other", "--from-unknown", strconv.FormatInt(id, 10), "--naan", "99999", "--authority", "system"); code == 0 ||
		!strings.Contains(errOut, `"cataloguer-app"`) {
		t.Fatalf("client add other --from-unknown: %d %s, want refused naming the subject", code, errOut)
	}
	if code, out, errOut := arkhe(t, url, "", "client", "add", "--from-unknown", strconv.FormatInt(id, 10), "--naan", "99999", "--authority", "system"); code != 0 ||
		!strings.Contains(out, "client cataloguer-app") {
		t.Fatalf("client add --from-unknown: %d\n%s\n%s", code, out, errOut)
	}
	var subject string
	if err := conn.QueryRow(ctx, `select subject_type from client where client_id = 'cataloguer-app'`).Scan(&subject); err != nil || subject != "person" {
		t.Fatalf("registered subject type %q, %v; want person", subject, err)
	}
	if code, out, _ := arkhe(t, url, "", "client", "unknown"); code != 0 || strings.Contains(out, "cataloguer-app") {
		t.Fatalf("client unknown after registering: %d\n%s", code, out)
	}
}
