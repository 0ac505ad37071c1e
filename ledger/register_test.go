package ledger_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// TestRegistrationIdempotent: registering a NAAN, shoulder or client exactly as it is stored is
// a no-op (created false, no error, nothing written); asking other values is a
// *RegistrationError naming every differing field with the value held and the value asked,
// and the stored registration is unchanged.
func TestRegistrationIdempotent(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		ctx := context.Background()
		l := &ledger.Ledger{Pool: db.Pool}
		refused := func(err error, want string) {
			t.Helper()
			var re *ledger.RegistrationError
			if !errors.As(err, &re) || err.Error() != want {
				t.Errorf("got %v\nwant %s", err, want)
			}
		}
		n := ledger.NAAN{NAAN: "99999", Name: "test", IsAuthoritative: true}
		if created, err := l.AddNAAN(ctx, n); !created || err != nil {
			t.Fatalf("AddNAAN: %t, %v", created, err)
		}
		if created, err := l.AddNAAN(ctx, n); created || err != nil {
			t.Errorf("AddNAAN again: %t, %v (want false, nil)", created, err)
		}
		_, err := l.AddNAAN(ctx, ledger.NAAN{NAAN: "99999", Name: "Example Library", Redirect: "https://n2t.net"})
		refused(err, `NAAN 99999: is registered already with name "test" (asked "Example Library"), authoritative true (asked false), `+
			`redirect none (asked "https://n2t.net"); nothing changed`)

		for _, m := range []string{"m1", "m2"} {
			if _, err := l.AddManager(ctx, ledger.Manager{NAAN: "99999", Name: m}); err != nil {
				t.Fatal(err)
			}
		}
		s := ledger.Shoulder{NAAN: "99999", Shoulder: "/x9", Manager: "m1"}
		if got, created, err := l.RegisterShoulder(ctx, s, 0); got != "/x9" || !created || err != nil {
			t.Fatalf("RegisterShoulder: %q %t %v", got, created, err)
		}
		// the defaults it was registered with are the defaults asked again; no manager named is
		// no manager compared
		for _, again := range []ledger.Shoulder{s, {NAAN: "99999", Shoulder: "x9", Status: "active", CheckZone: "naan_name", BladeLength: 8}} {
			if got, created, err := l.RegisterShoulder(ctx, again, 0); got != "/x9" || created || err != nil {
				t.Errorf("RegisterShoulder %+v again: %q %t %v (want /x9, false, nil)", again, got, created, err)
			}
		}
		_, _, err = l.RegisterShoulder(ctx, ledger.Shoulder{NAAN: "99999", Shoulder: "/x9", Manager: "m2", Status: "reserved", BladeLength: 10}, 0)
		refused(err, `shoulder /x9 of NAAN 99999: is registered already with manager "m1" (asked "m2"), status "active" (asked "reserved"), `+
			"blade length 8 (asked 10); nothing changed (shoulders are unique per NAAN; `shoulder retire` retires one, `client set` and `manager set` change who mints where)")
		if _, err := l.RetireShoulder(ctx, "99999", "/x9"); err != nil {
			t.Fatal(err)
		}
		_, _, err = l.RegisterShoulder(ctx, s, 0)
		refused(err, `shoulder /x9 of NAAN 99999: is registered already with status "retired" (asked "active"); nothing changed (a retired shoulder is never reused)`)

		if _, err := l.AddShoulder(ctx, ledger.Shoulder{NAAN: "99999", Shoulder: "/k7", Manager: "m1"}, 0); err != nil {
			t.Fatal(err)
		}
		exp := time.Date(2029, 6, 30, 0, 0, 0, 0, time.UTC)
		c := ledger.Client{ClientID: "svc", NAAN: "99999", Manager: "m1", Authority: "manager", Shoulder: "/k7",
			Scopes: []string{"ark:mint", "ark:update"}, ExpiresAt: &exp}
		if created, err := l.RegisterClient(ctx, c); !created || err != nil {
			t.Fatalf("RegisterClient: %t %v", created, err)
		}
		same := c
		same.Scopes = []string{"ark:update", "ark:mint", "ark:mint"} // a set: order and repeats do not count
		local := exp.In(time.FixedZone("CET", 3600))
		same.ExpiresAt = &local // the same instant
		if created, err := l.RegisterClient(ctx, same); created || err != nil {
			t.Errorf("RegisterClient again: %t %v (want false, nil)", created, err)
		}
		if err := l.AddClient(ctx, c); err != nil {
			t.Errorf("AddClient again: %v (want nil)", err)
		}
		_, err = l.RegisterClient(ctx, ledger.Client{ClientID: "svc", NAAN: "99999", Manager: "m1", Authority: "manager", Scopes: []string{"ark:mint"}})
		refused(err, `client svc: is registered already with pinned shoulder "/k7" (asked none), scopes ark:mint ark:update (asked ark:mint), `+
			"expiry 2029-06-30T00:00:00Z (asked never); nothing changed (`client set` changes its scopes, expiry, pinned shoulder or state)")

		// nothing was written by the no-ops and the refusals
		var events, clients int
		if err := db.Pool.QueryRow(ctx, `select (select count(*) from audit_event where action in ('naan.add', 'shoulder.add', 'client.add')),
			(select count(*) from client)`).Scan(&events, &clients); err != nil {
			t.Fatal(err)
		}
		if events != 4 || clients != 1 {
			t.Errorf("%d registration events (want 4: NAAN, 2 shoulders, client), %d clients (want 1)", events, clients)
		}
	})
}
