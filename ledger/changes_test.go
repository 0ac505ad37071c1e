package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// farFuture and nearFuture are expiries: 2099-01-01 and 2098-01-01, UTC.
func farFuture() time.Time  { return time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC) }
func nearFuture() time.Time { return time.Date(2098, 1, 1, 0, 0, 0, 0, time.UTC) }

// changeStrings renders changes as "field: before -> after", the departure time replaced by T.
func changeStrings(cs []ledger.Change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		if c.Field == "departed" && c.After != "none" {
			c.After = "T"
		}
		out[i] = c.String()
	}
	return out
}

func wantChanges(t *testing.T, what string, got []ledger.Change, want ...string) {
	t.Helper()
	if g := strings.Join(changeStrings(got), "; "); g != strings.Join(want, "; ") {
		t.Errorf("%s changed %q, want %q", what, g, strings.Join(want, "; "))
	}
}

func wantRegistrationError(t *testing.T, what string, err error, rule string) {
	t.Helper()
	var re *ledger.RegistrationError
	if !errors.As(err, &re) || !strings.Contains(re.Rule, rule) {
		t.Errorf("%s: %v, want a RegistrationError saying %q", what, err, rule)
	}
}

// successionLedger is registeredIn plus: managers m2 (holding /k7) and m3 of NAAN 99999, NAAN
// 12345 with manager far; clients o1 (m1), n2 (m2), n3 (m3) and na (authority naan of 99999),
// each with ark:mint, ark:update and ark:tombstone. It returns the internal keys (keys) with
// the managers' ("mm1", ...).
func successionLedger(t *testing.T, db pgtest.DB) (*ledger.Ledger, context.Context, map[string]int64) {
	t.Helper()
	l, ctx := registeredIn(t, db)
	must(t, firstErr(l.AddManager(ctx, ledger.Manager{NAAN: "99999", Name: "m2"})))
	must(t, firstErr(l.AddManager(ctx, ledger.Manager{NAAN: "99999", Name: "m3"})))
	must(t, firstErr(l.AddNAAN(ctx, ledger.NAAN{NAAN: "12345", Name: "elsewhere"})))
	must(t, firstErr(l.AddManager(ctx, ledger.Manager{NAAN: "12345", Name: "far"})))
	must(t, firstErr(l.AddShoulder(ctx, ledger.Shoulder{NAAN: "99999", Shoulder: "/k7", Manager: "m2"}, 0)))
	all := []string{"ark:mint", "ark:update", "ark:tombstone"}
	for _, c := range []ledger.Client{
		{ClientID: "o1", NAAN: "99999", Manager: "m1", Authority: "manager", Scopes: all},
		{ClientID: "n2", NAAN: "99999", Manager: "m2", Authority: "manager", Scopes: all},
		{ClientID: "n3", NAAN: "99999", Manager: "m3", Authority: "manager", Scopes: all},
		{ClientID: "na", NAAN: "99999", Authority: "naan", Scopes: all, ExpiresAt: ptr(farFuture())},
	} {
		must(t, l.AddClient(ctx, c))
	}
	ids := keys(t, l.Pool)
	rows, err := l.Pool.Query(ctx, `select 'm' || name, id from manager`)
	must(t, err)
	for rows.Next() {
		var k string
		var id int64
		must(t, rows.Scan(&k, &id))
		ids[k] = id
	}
	must(t, rows.Err())
	return l, ctx, ids
}

// mintSQL is a plain-SQL mint of 99999/<name> in shoulder sh by client (INSERT ... VALUES: a
// router query on Citus, which keeps the worker's SQLSTATE).
func mintSQL(ids map[string]int64, name, sh, client string) string {
	return fmt.Sprintf(`insert into ark (ark, naan, shoulder_id, assigned_name, url, created_by, created_at)
		values ('99999/%s', '99999', %d, '%s', 'https://example.org/%s', %d, now())`, name, ids["s"+sh], name, name, ids["c"+client])
}

// TestSucceedManager: after `manager succeed m1 --by m2`, m1 is inactive and its clients and
// shoulders mint nothing (the database refuses plain SQL through every node), m2's clients
// repoint and tombstone m1's ARKs, and so do m3's once m3 succeeds m2 (the chain); m2's own
// shoulder still mints. A succession is one-way, stays in the NAAN and never cycles: the
// database refuses each in plain SQL. Each succession is one audit event.
func TestSucceedManager(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l, ctx, ids := successionLedger(t, db)
		p, nodes := l.Pool, nodesOf(t, db)
		repoint := func(client, to string) string {
			return fmt.Sprintf(`select ark_repoint('99999/x9abc', 'https://example.org/%s', %d, 'test')`, to, ids["c"+client])
		}
		// before: m1's client repoints its ARK, m2's does not reach it
		exec(t, p, repoint("o1", "by-o1"))
		refusedOn(t, nodes, ledger.CodeReachRefused, repoint("n2", "early"))

		d, err := l.SucceedManager(ctx, "99999", "m1", "m2")
		must(t, err)
		wantChanges(t, "succeed m1", d.Changes, "active: true -> false", "default shoulder: /x9 -> none", "departed: none -> T", "succeeded by: none -> m2")
		if strings.Join(d.Shoulders, " ") != "/b5 /x9" || strings.Join(d.Clients, " ") != "c1 o1" {
			t.Errorf("m1's shoulders %v and clients %v", d.Shoulders, d.Clients)
		}
		// m1's clients and shoulders mint nothing, whoever the client
		for _, c := range []string{"c1", "o1", "na", "n2"} {
			refusedOn(t, nodes, ledger.CodeReachRefused, mintSQL(ids, "x9m"+c, "/x9", c))
		}
		// m1's client changes nothing more; m2's repoints m1's ARK (plain SQL and arkhe)
		refusedOn(t, nodes, ledger.CodeReachRefused, repoint("o1", "late"))
		exec(t, p, repoint("n2", "by-n2"))
		if changed, err := l.RepointARK(ctx, "99999/x9abc", "https://example.org/by-n2-again", "n2", "succession"); err != nil || !changed {
			t.Errorf("n2 repoints m1's ARK: %t %v", changed, err)
		}
		if _, err := l.RepointARK(ctx, "99999/x9abc", "https://example.org/by-o1-late", "o1", "gone"); err == nil {
			t.Errorf("m1's client repointed after m1 was succeeded")
		}
		// m2 still mints in its own shoulder; not in m1's until it holds it
		exec(t, p, mintSQL(ids, "k7aaa", "/k7", "n2"))
		// a manager that does not succeed m1 cannot take its shoulder; m2, its successor, adopts
		// it as it is and mints there
		var ae *ledger.AdoptError
		if _, err := l.AdoptShoulder(ctx, ledger.AdoptConfig{NAAN: "99999", Shoulder: "/x9", Manager: "m3"}); !errors.As(err, &ae) || ae.Refusal != ledger.AdoptHeld {
			t.Errorf("m3 adopts m1's /x9: %v, want refused as held", err)
		}
		refusedOn(t, nodes, ledger.CodeReachRefused, mintSQL(ids, "x9before", "/x9", "n2"))
		res, err := l.AdoptShoulder(ctx, ledger.AdoptConfig{NAAN: "99999", Shoulder: "/x9", Manager: "m2"})
		if err != nil || !res.Changed {
			t.Fatalf("m2 adopts its predecessor's /x9: %+v %v", res, err)
		}
		exec(t, p, mintSQL(ids, "x9after", "/x9", "n2"))

		// the chain: m3 succeeds m2, so m3's clients reach m1's ARKs too; m2's no longer
		_, err = l.SucceedManager(ctx, "99999", "m2", "m3")
		must(t, err)
		refusedOn(t, nodes, ledger.CodeReachRefused, repoint("n2", "by-n2-late"))
		if changed, err := l.TombstoneARK(ctx, "99999/x9abc", "withdrawn by the successor's successor", "n3"); err != nil || !changed {
			t.Errorf("n3 tombstones m1's ARK along the chain: %t %v", changed, err)
		}
		var status string
		must(t, p.QueryRow(ctx, `select status from ark where ark = '99999/x9abc'`).Scan(&status))
		if status != "unavailable" {
			t.Errorf("m1's ARK status %s after n3's tombstone, want unavailable", status)
		}

		// the database refuses, in plain SQL: a cycle (m3 succeeded by m1, whose chain leads
		// to m3), a manager succeeding itself, a successor in another NAAN, an inactive one
		leave := `update manager set active = false, departed_at = now(), default_shoulder_id = null, succeeded_by_id = %d where name = 'm3'`
		refusedOn(t, nodes, ledger.CodeSuccessionRefused, fmt.Sprintf(leave, ids["mm1"]))
		refusedOn(t, nodes, ledger.CodeSuccessionRefused, fmt.Sprintf(leave, ids["mm3"]))
		refusedOn(t, nodes, ledger.CodeSuccessionRefused, fmt.Sprintf(leave, ids["mfar"]))
		// one-way: a successor never changes or goes, a departure never goes, a departed
		// manager is never active again
		refusedOn(t, nodes, ledger.CodeRetiredOneWay, fmt.Sprintf(`update manager set succeeded_by_id = %d where name = 'm1'`, ids["mm3"]))
		refusedOn(t, nodes, ledger.CodeRetiredOneWay, `update manager set succeeded_by_id = null, departed_at = null where name = 'm1'`)
		refusedOn(t, nodes, ledger.CodeCheckViolation, `update manager set active = true where name = 'm1'`)
		// and arkhe says why, changing nothing
		_, err = l.SucceedManager(ctx, "99999", "m1", "m3")
		wantRegistrationError(t, "m1 succeeded again", err, `was succeeded by "m2"`)
		_, err = l.SucceedManager(ctx, "99999", "m3", "far")
		wantRegistrationError(t, "a successor of another NAAN", err, `no manager "far" in NAAN 99999`)
		_, err = l.SucceedManager(ctx, "99999", "m3", "m2")
		wantRegistrationError(t, "an inactive successor", err, `"m2" was succeeded by "m3"`)
		d, err = l.SucceedManager(ctx, "99999", "m1", "m2")
		if err != nil || len(d.Changes) != 0 || d.Successor != "m2" {
			t.Errorf("naming m1's successor again: %+v %v, want no change", d, err)
		}
		// one event per succession, naming the successor
		if n := count(t, p, `select count(*) from audit_event where action = 'manager.succeed'`); n != 2 {
			t.Errorf("%d manager.succeed events, want 2", n)
		}
		var after string
		must(t, p.QueryRow(ctx, `select detail->'after'->>'succeeded_by' from audit_event
			where action = 'manager.succeed' and target = '99999 m1'`).Scan(&after))
		if after != "m2" {
			t.Errorf("manager.succeed of m1: after.succeeded_by %q, want m2", after)
		}
		ms, err := l.ListManagers(ctx, "99999")
		must(t, err)
		for _, m := range ms {
			if m.Name == "m1" && (strings.Join(m.Successors, " ") != "m2 m3" || m.Active || m.DepartedAt == nil) {
				t.Errorf("m1 listed as %+v, want inactive, departed, succeeded by m2 then m3", m)
			}
		}
	})
}

// TestDepartManager: a departure without a successor stops the manager's clients and shoulders
// like a succession; its ARKs are left to the NAAN's authority (a naan client repoints them);
// a successor may be named later. One audit event each.
func TestDepartManager(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l, ctx, ids := successionLedger(t, db)
		p, nodes := l.Pool, nodesOf(t, db)
		exec(t, p, mintSQL(ids, "k7abc", "/k7", "n2"))
		d, err := l.DepartManager(ctx, "99999", "m2")
		must(t, err)
		wantChanges(t, "depart m2", d.Changes, "active: true -> false", "departed: none -> T")
		if strings.Join(d.Shoulders, " ") != "/k7" || strings.Join(d.Clients, " ") != "n2" || d.Successor != "" {
			t.Errorf("departure %+v", d)
		}
		for _, c := range []string{"n2", "na"} {
			refusedOn(t, nodes, ledger.CodeReachRefused, mintSQL(ids, "k7m"+c, "/k7", c))
		}
		refusedOn(t, nodes, ledger.CodeReachRefused, fmt.Sprintf(`select ark_repoint('99999/k7abc', 'https://example.org/n2', %d, 'test')`, ids["cn2"]))
		exec(t, p, fmt.Sprintf(`select ark_repoint('99999/k7abc', 'https://example.org/na', %d, 'the NAAN''s authority')`, ids["cna"]))
		if d, err := l.DepartManager(ctx, "99999", "m2"); err != nil || len(d.Changes) != 0 {
			t.Errorf("departing again: %+v %v, want no change", d, err)
		}
		// a successor named later: it reaches the ARKs from then on
		d, err = l.SucceedManager(ctx, "99999", "m2", "m3")
		must(t, err)
		wantChanges(t, "succeed m2 after its departure", d.Changes, "succeeded by: none -> m3")
		exec(t, p, fmt.Sprintf(`select ark_tombstone('99999/k7abc', 'withdrawn', %d, 'test')`, ids["cn3"]))
		for action, want := range map[string]int{"manager.depart": 1, "manager.succeed": 1} {
			if n := count(t, p, `select count(*) from audit_event where action = '`+action+`' and target = '99999 m2'`); n != want {
				t.Errorf("%d %s events, want %d", n, action, want)
			}
		}
	})
}

// TestSetManager: each change is printed from what to what and recorded as one audit event; a
// change to the values held writes nothing; the refusals name the rule.
func TestSetManager(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l, ctx, _ := successionLedger(t, db)
		must(t, firstErr(l.AddShoulder(ctx, ledger.Shoulder{NAAN: "99999", Shoulder: "/q5", Manager: "m1"}, 0)))
		events := func() int {
			return count(t, l.Pool, `select count(*) from audit_event where target = '99999 m1' and action <> 'manager.add'`)
		}
		base := events()
		cs, err := l.SetManager(ctx, "99999", "m1", ledger.ManagerUpdate{QuotaPerDay: ptr(2000000),
			CommitmentLevel: ptr("Permanent: Stable Content"), DefaultShoulder: ptr("q5")})
		must(t, err)
		wantChanges(t, "set m1", cs, "quota: none -> 2000000", "commitment: Not Guaranteed -> Permanent: Stable Content", "default shoulder: /x9 -> /q5")
		var quota int
		var before, action string
		must(t, l.Pool.QueryRow(ctx, `select (detail->'after'->>'quota_per_day')::int, detail->'before'->>'default_shoulder', action
			from audit_event where target = '99999 m1' order by id desc limit 1`).Scan(&quota, &before, &action))
		if quota != 2000000 || before != "/x9" || action != ledger.ActionManagerSet {
			t.Errorf("last event: quota %d, before default %q, action %s", quota, before, action)
		}
		cs, err = l.SetManager(ctx, "99999", "m1", ledger.ManagerUpdate{QuotaPerDay: ptr(2000000)})
		if err != nil || len(cs) != 0 {
			t.Errorf("setting the quota it holds: %v %v", cs, err)
		}
		cs, err = l.SetManager(ctx, "99999", "m1", ledger.ManagerUpdate{QuotaPerDay: ptr(0), Active: ptr(false)})
		must(t, err)
		wantChanges(t, "set m1", cs, "quota: 2000000 -> none", "active: true -> false")
		cs, err = l.SetManager(ctx, "99999", "m1", ledger.ManagerUpdate{Active: ptr(true)})
		must(t, err)
		wantChanges(t, "enable m1", cs, "active: false -> true")
		if n := events() - base; n != 3 {
			t.Errorf("%d audit events for three changes", n)
		}
		_, err = l.SetManager(ctx, "99999", "m1", ledger.ManagerUpdate{DefaultShoulder: ptr("/k7")})
		wantRegistrationError(t, "a default shoulder of another manager", err, `/k7 is held by "m2"`)
		_, err = l.SetManager(ctx, "99999", "m1", ledger.ManagerUpdate{CommitmentLevel: ptr("forever")})
		wantRegistrationError(t, "a commitment that is no NLM rating", err, "NLM ratings")
		_, err = l.SetManager(ctx, "99999", "nobody", ledger.ManagerUpdate{QuotaPerDay: ptr(1)})
		wantRegistrationError(t, "an unknown manager", err, "not registered")
		_, err = l.DepartManager(ctx, "99999", "m1")
		must(t, err)
		_, err = l.SetManager(ctx, "99999", "m1", ledger.ManagerUpdate{Active: ptr(true)})
		wantRegistrationError(t, "a departed manager made active", err, "a departed manager stays inactive")
	})
}

// TestAddManagerChangesNothing: adding a manager that exists changes nothing, the default
// shoulder included; with other values it says which and refuses.
func TestAddManagerChangesNothing(t *testing.T) {
	t.Parallel()
	l, ctx := registered(t)
	must(t, firstErr(l.AddShoulder(ctx, ledger.Shoulder{NAAN: "99999", Shoulder: "/q5", Manager: "m1"}, 0)))
	created, err := l.AddManager(ctx, ledger.Manager{NAAN: "99999", Name: "m1", CommitmentLevel: "Not Guaranteed", DefaultShoulder: "/x9"})
	if err != nil || created {
		t.Errorf("adding m1 as it is: created %t, %v", created, err)
	}
	_, err = l.AddManager(ctx, ledger.Manager{NAAN: "99999", Name: "m1", QuotaPerDay: 5, DefaultShoulder: "/q5"})
	wantRegistrationError(t, "adding m1 with other values", err, "is registered already with quota none (asked 5), default shoulder /x9 (asked /q5); nothing changed")
	_, err = l.AddManager(ctx, ledger.Manager{NAAN: "99999", Name: "new", DefaultShoulder: "/q5"})
	wantRegistrationError(t, "a new manager with a default shoulder", err, "a new manager holds no shoulder yet")
	ms, err := l.ListManagers(ctx, "99999")
	must(t, err)
	if len(ms) != 1 || ms[0].DefaultShoulder != "/x9" || ms[0].QuotaPerDay != 0 {
		t.Errorf("managers after refused adds: %+v", ms)
	}
	if n := count(t, l.Pool, `select count(*) from audit_event where action = 'manager.set'`); n != 1 { // registered's SetDefaultShoulder
		t.Errorf("%d manager.set events, want the one of the set-up", n)
	}
}

// TestSetClient: narrowing a client (a scope removed, a pin added, an earlier expiry, disabled)
// works on a ledger without roles; widening it is refused there, naming what widens; each
// change is one audit event.
func TestSetClient(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		l, ctx, _ := successionLedger(t, db)
		cs, err := l.SetClient(ctx, "na", ledger.ClientUpdate{Scopes: []string{"ark:update", "ark:mint"}, ExpiresAt: ptr(nearFuture()), Shoulder: ptr("x9")})
		must(t, err)
		wantChanges(t, "narrow na", cs, "scopes: ark:mint ark:update ark:tombstone -> ark:update ark:mint",
			"expires: 2099-01-01T00:00:00Z -> 2098-01-01T00:00:00Z", "pinned shoulder: none -> /x9")
		cs, err = l.SetClient(ctx, "na", ledger.ClientUpdate{Scopes: []string{"ark:mint", "ark:update"}, Active: ptr(false)})
		must(t, err)
		wantChanges(t, "disable na", cs, "active: true -> false")
		for _, u := range []struct {
			what string
			u    ledger.ClientUpdate
			rule string
		}{
			{"a scope added", ledger.ClientUpdate{Scopes: []string{"ark:mint", "ark:update", "ark:read"}}, "scope ark:read added"},
			{"the pin removed", ledger.ClientUpdate{Shoulder: ptr("")}, "pin /x9 removed"},
			{"the pin moved", ledger.ClientUpdate{Shoulder: ptr("/k7")}, "pin moved from /x9 to /k7"},
			{"a later expiry", ledger.ClientUpdate{ExpiresAt: ptr(farFuture())}, "a later expiry"},
		} {
			_, err := l.SetClient(ctx, "na", u.u)
			wantRegistrationError(t, u.what, err, u.rule)
			wantRegistrationError(t, u.what, err, "a ledger without roles has none")
		}
		_, err = l.SetClient(ctx, "o1", ledger.ClientUpdate{Shoulder: ptr("/k7")})
		wantRegistrationError(t, "a manager client pinned to another manager's shoulder", err, "a manager client can be pinned only to a shoulder its manager holds")
		_, err = l.SetClient(ctx, "o1", ledger.ClientUpdate{Scopes: []string{"ark:fly"}})
		wantRegistrationError(t, "an unknown scope", err, `unknown scope "ark:fly"`)
		var actions []string
		rows, err := l.Pool.Query(ctx, `select action from audit_event where target = 'na' and action <> 'client.add' order by id`)
		must(t, err)
		for rows.Next() {
			var a string
			must(t, rows.Scan(&a))
			actions = append(actions, a)
		}
		must(t, rows.Err())
		if strings.Join(actions, " ") != "client.set client.disable" {
			t.Errorf("na's audit events: %v", actions)
		}
	})
}

// TestClientWideningIsTheOperators: widening a client's reach in plain SQL (a later expiry or
// none, a scope added, a pin removed) is refused by the database to a role that may update the
// client table but is not the operator (the owner), through every node; narrowing is not; the
// operator widens.
func TestClientWideningIsTheOperators(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		r := newRoleLedgerIn(t, db)
		ctx := context.Background()
		l := r.l
		must(t, firstErr(l.AddNAAN(ctx, ledger.NAAN{NAAN: "99999", Name: "test"})))
		must(t, firstErr(l.AddManager(ctx, ledger.Manager{NAAN: "99999", Name: "m1"})))
		must(t, firstErr(l.AddShoulder(ctx, ledger.Shoulder{NAAN: "99999", Shoulder: "/x9", Manager: "m1"}, 0)))
		must(t, l.AddClient(ctx, ledger.Client{ClientID: "cw", NAAN: "99999", Manager: "m1", Authority: "manager", Shoulder: "/x9",
			Scopes: []string{"ark:mint"}, ExpiresAt: ptr(nearFuture())}))
		owner := r.loginNodes(t, db, "own", r.roles.Owner)
		operator := r.loginNodes(t, db, "op", r.roles.Operator)
		for _, widen := range []string{
			`update client set expires_at = '2098-01-02' where client_id = 'cw'`,
			`update client set expires_at = null where client_id = 'cw'`,
			`update client set allowed_scopes = '{ark:mint,ark:update}' where client_id = 'cw'`,
			`update client set shoulder_id = null where client_id = 'cw'`,
		} {
			refusedOn(t, owner, ledger.CodeReachRefused, widen)
		}
		// narrowing is anyone's with the privilege; widening the operator's
		exec(t, owner[0].pool, `update client set expires_at = '2097-12-31' where client_id = 'cw'`)
		exec(t, operator[0].pool, `update client set expires_at = '2098-01-02', allowed_scopes = '{ark:mint,ark:update}' where client_id = 'cw'`)
		var exp time.Time
		var scopes []string
		must(t, l.Pool.QueryRow(ctx, `select expires_at, allowed_scopes from client where client_id = 'cw'`).Scan(&exp, &scopes))
		if !exp.Equal(time.Date(2098, 1, 2, 0, 0, 0, 0, time.UTC)) || strings.Join(scopes, " ") != "ark:mint ark:update" {
			t.Errorf("client cw expires %s with scopes %v; want the operator's 2098-01-02 and ark:mint ark:update", exp, scopes)
		}
	})
}

// newRoleLedgerIn is newRoleLedger on db (a single node or Citus database). On Citus the roles
// are left to the throw-away cluster, removed when the test binary ends: Citus 13.2 crashes a
// backend (signal 11) on the REASSIGN OWNED that dropping them needs.
func newRoleLedgerIn(t *testing.T, db pgtest.DB) *roleLedger {
	t.Helper()
	var name string
	must(t, db.Pool.QueryRow(context.Background(), `select current_database()`).Scan(&name))
	r := &roleLedger{l: &ledger.Ledger{Pool: db.Pool}, url: db.URL, prefix: name + "_"}
	if !db.Citus() {
		t.Cleanup(func() { r.drop(t) })
	}
	res, err := r.l.InitRoles(context.Background(), r.prefix)
	must(t, err)
	r.roles = res.Roles
	return r
}

// loginNodes creates login role prefix+name in memberOf (r.login) and returns pools connected
// as it to every node of db: the single node; the coordinator and the first worker on Citus.
func (r *roleLedger) loginNodes(t *testing.T, db pgtest.DB, name string, memberOf ...string) []node {
	t.Helper()
	coordinator := r.login(t, name, memberOf...)
	nodes := []node{{"single", coordinator.Pool}}
	if !db.Citus() {
		return nodes
	}
	nodes[0].name = "coordinator"
	u, err := pgtest.AsRole(db.WorkerURLs[0], r.prefix+name)
	must(t, err)
	w, err := pgxpool.New(context.Background(), u)
	must(t, err)
	t.Cleanup(w.Close)
	return append(nodes, node{"worker1", w})
}
