package ledger_test

import (
	"context"
	"encoding/json"
	"os/user"
	"testing"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// auditRow is one audit_event row as the tests read it.
type auditRow struct {
	Action, Target, ClientID, DBRole, OSUser string
	Detail                                   map[string]any
}

func auditRows(t *testing.T, l *ledger.Ledger) []auditRow {
	t.Helper()
	rows, err := l.Pool.Query(context.Background(), `select action, coalesce(target, ''), coalesce(client_id, ''),
		coalesce(db_role, ''), coalesce(os_user, ''), coalesce(detail, '{}') from audit_event order by id`)
	must(t, err)
	defer rows.Close()
	var out []auditRow
	for rows.Next() {
		var r auditRow
		var d []byte
		must(t, rows.Scan(&r.Action, &r.Target, &r.ClientID, &r.DBRole, &r.OSUser, &d))
		must(t, json.Unmarshal(d, &r.Detail))
		out = append(out, r)
	}
	must(t, rows.Err())
	return out
}

// TestAuditEveryChange: each kind of registration change and of ARK change leaves one audit
// record, with the actor (database role, OS user), the target, and what changed from what to
// what; a change made in plain SQL too.
func TestAuditEveryChange(t *testing.T) {
	ctx := context.Background()
	l, err := ledger.Open(ctx, pgtest.URL(t), 2) // Open reports the OS user
	must(t, err)
	defer l.Close()
	ledger.SetKeyParams(l, ledger.CheapKeyParams()) // the key's audit records, not its hash
	must(t, firstErr(l.AddNAAN(ctx, ledger.NAAN{NAAN: "99999", Name: "test"})))
	must(t, firstErr(l.AddManager(ctx, ledger.Manager{NAAN: "99999", Name: "m1"})))
	must(t, firstErr(l.AddShoulder(ctx, ledger.Shoulder{NAAN: "99999", Shoulder: "/x9", Manager: "m1"}, 0)))
	must(t, l.SetDefaultShoulder(ctx, "99999", "m1", "/x9"))
	must(t, l.AddClient(ctx, ledger.Client{ClientID: "c1", NAAN: "99999", Manager: "m1", Authority: "manager",
		Scopes: []string{"ark:mint", "ark:update", "ark:tombstone"}}))
	must(t, firstErr(l.SetClientActive(ctx, "c1", false)))
	must(t, firstErr(l.SetClientActive(ctx, "c1", true)))
	exec(t, l.Pool, `update client set allowed_scopes = '{ark:mint,ark:update,ark:tombstone}', expires_at = '2030-01-01' where client_id = 'c1'`)
	exec(t, l.Pool, mintRowSQL, "c1", "x9abc")
	must(t, firstErr(l.RepointARK(ctx, "99999/x9abc", "https://example.org/b", "c1", "moved")))
	must(t, firstErr(l.TombstoneARK(ctx, "99999/x9abc", "withdrawn", "c1")))
	must(t, firstErr(l.RetireShoulder(ctx, "99999", "/x9")))
	k, err := l.CreateKey(ctx, "c1")
	must(t, err)
	must(t, firstErr(l.RevokeKey(ctx, k.Prefix)))
	must(t, ledger.RecordEvent(ctx, l.Pool, ledger.Event{Action: ledger.ActionMint, ClientID: "c1", Authority: "manager",
		Target: "ark:99999/x9", Detail: map[string]any{"minted": 1}}))

	me, err := user.Current()
	must(t, err)
	var session string
	must(t, l.Pool.QueryRow(ctx, `select session_user`).Scan(&session))
	want := []struct{ action, target, client string }{
		{ledger.ActionNAANAdd, "99999", ""},
		{ledger.ActionManagerAdd, "99999 m1", ""},
		{ledger.ActionShoulderAdd, "ark:99999/x9", ""},
		{ledger.ActionManagerSet, "99999 m1", ""},
		{ledger.ActionClientAdd, "c1", ""},
		{ledger.ActionClientDisable, "c1", ""},
		{ledger.ActionClientEnable, "c1", ""},
		{ledger.ActionClientSet, "c1", ""},
		{ledger.ActionARKRepoint, "ark:99999/x9abc", "c1"},
		{ledger.ActionARKTombstone, "ark:99999/x9abc", "c1"},
		{ledger.ActionShoulderRetire, "ark:99999/x9", ""},
		{ledger.ActionKeyCreate, k.Prefix, ""},
		{ledger.ActionKeyRevoke, k.Prefix, ""},
		{ledger.ActionMint, "ark:99999/x9", "c1"},
	}
	got := auditRows(t, l)
	if len(got) != len(want) {
		for _, g := range got {
			t.Logf("%s %s %s", g.Action, g.Target, g.ClientID)
		}
		t.Fatalf("%d audit records, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Action != w.action || g.Target != w.target || g.ClientID != w.client || g.DBRole != session || g.OSUser != me.Username {
			t.Errorf("record %d: %s %q client %q role %q OS user %q; want %s %q client %q role %q OS user %q",
				i, g.Action, g.Target, g.ClientID, g.DBRole, g.OSUser, w.action, w.target, w.client, session, me.Username)
		}
	}
	// what changed, from what to what
	check := func(i int, path ...string) any {
		var v any = got[i].Detail
		for _, p := range path {
			m, _ := v.(map[string]any)
			v = m[p]
		}
		return v
	}
	for _, c := range []struct {
		i    int
		path []string
		want any
	}{
		{3, []string{"before", "default_shoulder"}, nil},
		{3, []string{"after", "default_shoulder"}, "/x9"},
		{5, []string{"before", "active"}, true},
		{5, []string{"after", "active"}, false},
		{7, []string{"after", "expires_at"}, "2030-01-01T00:00:00+00:00"},
		{8, []string{"before", "url"}, "https://example.org/x9abc"},
		{8, []string{"after", "url"}, "https://example.org/b"},
		{9, []string{"after", "status"}, "unavailable"},
		{9, []string{"after", "reason"}, "withdrawn"},
		{10, []string{"after", "status"}, "retired"},
		{12, []string{"after", "active"}, false},
		{13, []string{"minted"}, float64(1)},
	} {
		if v := check(c.i, c.path...); v != c.want {
			t.Errorf("record %d (%s) %v = %v, want %v", c.i, got[c.i].Action, c.path, v, c.want)
		}
	}
	if _, ok := got[4].Detail["after"].(map[string]any)["manager"]; !ok || got[4].Detail["before"] != nil {
		t.Errorf("client.add detail %v: want after with the manager's name, before null", got[4].Detail)
	}
	if _, leaked := got[4].Detail["after"].(map[string]any)["manager_id"]; leaked {
		t.Errorf("client.add detail shows an internal key: %v", got[4].Detail)
	}
	// a change that changes nothing records nothing
	exec(t, l.Pool, `update client set active = active where client_id = 'c1'`)
	if n := len(auditRows(t, l)); n != len(want) {
		t.Errorf("a no-op update added %d records", n-len(want))
	}
}
