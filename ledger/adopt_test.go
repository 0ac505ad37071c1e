package ledger_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// adoptRefusal returns the refusal of err, "" when it is none.
func adoptRefusal(t *testing.T, err error) ledger.AdoptRefusal {
	t.Helper()
	var ae *ledger.AdoptError
	if !errors.As(err, &ae) {
		if err != nil {
			t.Fatalf("adopt: %v (not an *AdoptError)", err)
		}
		return ""
	}
	return ae.Refusal
}

// TestAdoptRules: what may be adopted, by whom, and what new mints look like when the shoulder
// holds no ARK to follow.
func TestAdoptRules(t *testing.T) {
	t.Parallel()
	l, ctx := registered(t)
	p := l.Pool
	must(t, firstErr(l.AddManager(ctx, ledger.Manager{NAAN: "99999", Name: "m2"})))
	must(t, firstErr(l.AddManager(ctx, ledger.Manager{NAAN: "99999", Name: "gone"})))
	exec(t, p, `update manager set active = false where name = 'gone'`)
	for _, s := range []ledger.Shoulder{
		{NAAN: "99999", Shoulder: "/q4", Status: "reserved", CheckZone: "none"},
		{NAAN: "99999", Shoulder: "/d7", Status: "delegated", CheckZone: "none"},
		{NAAN: "99999", Shoulder: "/n3", Status: "reserved", CheckZone: "none"},
		{NAAN: "99999", Shoulder: "/w2", Status: "reserved", CheckZone: "none"},
		{NAAN: "99999", Shoulder: "/v8", Status: "active", CheckZone: "name_only"},
	} {
		must(t, firstErr(l.AddShoulder(ctx, s, 0)))
	}
	// /w2 holds two imported ARKs whose check characters verify under naan_name
	exec(t, p, `insert into import_run (source_file, format) values ('old.csv', 'ezid-csv')`)
	for _, blade := range []string{"bcdf", "5m7q"} {
		name := ark.MintName("99999", "w2", []byte(blade))
		exec(t, p, `insert into ark (ark, naan, shoulder_id, assigned_name, import_run_id)
			select '99999/' || $1::text, '99999', s.id, $1::text, (select max(id) from import_run) from shoulder s where s.shoulder = '/w2'`, name)
	}
	noCheck := &ledger.AdoptMinter{Source: "state.json", Label: "99999/w2", Mask: "eeee", Template: "eeee", Issued: 2}

	for _, c := range []struct {
		cfg  ledger.AdoptConfig
		want ledger.AdoptRefusal
	}{
		{ledger.AdoptConfig{NAAN: "99999", Shoulder: "/k5", Manager: "m2"}, ledger.AdoptNotRegistered},
		{ledger.AdoptConfig{NAAN: "99999", Shoulder: "/d7", Manager: "m2"}, ledger.AdoptDelegated},
		{ledger.AdoptConfig{NAAN: "99999", Shoulder: "/q4", Manager: "nobody"}, ledger.AdoptNoManager},
		{ledger.AdoptConfig{NAAN: "99999", Shoulder: "/q4", Manager: "gone"}, ledger.AdoptManagerInactive},
		// /b5 is reserved and held by m1
		{ledger.AdoptConfig{NAAN: "99999", Shoulder: "/b5", Manager: "m2"}, ledger.AdoptHeld},
		// the old minter drew no check character, the ARKs carry one
		{ledger.AdoptConfig{NAAN: "99999", Shoulder: "/w2", Manager: "m2", Minter: noCheck}, ledger.AdoptTemplateZone},
		{ledger.AdoptConfig{NAAN: "99999", Shoulder: "/w2", Manager: "m2", CheckZone: ark.ZoneNone,
			Minter: &ledger.AdoptMinter{Source: "state.json", Label: "99999/w2", Mask: "eeeek", Template: "eeee", Check: true, Issued: 2}}, ledger.AdoptTemplateZone},
	} {
		_, err := l.AdoptShoulder(ctx, c.cfg)
		if got := adoptRefusal(t, err); got != c.want {
			t.Errorf("adopt %s by %s: %v, want refusal %s", c.cfg.Shoulder, c.cfg.Manager, err, c.want)
		}
	}
	if _, err := l.AdoptShoulder(ctx, ledger.AdoptConfig{NAAN: "99999", Shoulder: "/q4", Manager: "m2", CheckZone: "ncda"}); err == nil || !strings.Contains(err.Error(), `check zone "ncda"`) {
		t.Errorf("an unknown check zone: %v", err)
	}
	if n := count(t, p, `select count(*) from shoulder where status = 'active' and adopted_at is not null`); n != 0 {
		t.Errorf("%d shoulders adopted by refused calls", n)
	}

	// no ARK to follow: the default zone and the shoulder's blade
	res, err := l.AdoptShoulder(ctx, ledger.AdoptConfig{NAAN: "99999", Shoulder: "/q4", Manager: "m2"})
	if err != nil || res.ARKs != 0 || res.CheckZone != ark.ZoneNAANName || res.Template != ark.Betanumerics(8) || !strings.Contains(res.ZoneFrom, "default") {
		t.Errorf("adopt /q4 (empty): %+v, %v", res, err)
	}
	// no ARK, a minter without check character: zone none, its template
	res, err = l.AdoptShoulder(ctx, ledger.AdoptConfig{NAAN: "99999", Shoulder: "/n3", Manager: "m2",
		Minter: &ledger.AdoptMinter{Source: "state.json", Label: "99999/n3", Mask: "dddd", Template: "dddd", Issued: 0}})
	if err != nil || res.CheckZone != ark.ZoneNone || res.Template != "dddd" || res.Space != 10_000 {
		t.Errorf("adopt /n3 (empty, minter dddd): %+v, %v", res, err)
	}
	// an active shoulder without a manager is given one; its zone is kept by the operator's word
	res, err = l.AdoptShoulder(ctx, ledger.AdoptConfig{NAAN: "99999", Shoulder: "/v8", Manager: "m2", CheckZone: ark.ZoneNameOnly})
	if err != nil || !res.Changed || res.BeforeStatus != "active" || res.CheckZone != ark.ZoneNameOnly {
		t.Errorf("adopt /v8 (active, no manager): %+v, %v", res, err)
	}
	// /w2: two ARKs verifying under naan_name, blades of 4; the minter's check character agrees
	res, err = l.AdoptShoulder(ctx, ledger.AdoptConfig{NAAN: "99999", Shoulder: "/w2", Manager: "m2",
		Minter: &ledger.AdoptMinter{Source: "state.json", Label: "99999/w2", Mask: "eeeek", Template: "eeee", Check: true, Issued: 2}})
	if err != nil || res.FitTemplate != 2 || res.CheckZone != ark.ZoneNAANName || res.Template != "eeee" {
		t.Errorf("adopt /w2: %+v, %v", res, err)
	}
	got := count(t, p, `select count(*) from shoulder where manager_id = (select id from manager where name = 'm2') and status = 'active' and adopted_at is not null`)
	if got != 4 {
		t.Errorf("%d shoulders adopted by m2, want 4", got)
	}
	if s := count(t, p, `select count(*) from shoulder where shoulder = '/n3' and blade_template = 'dddd' and blade_length = 4 and check_zone = 'none'`); s != 1 {
		t.Error("/n3 does not record its template dddd")
	}
}
