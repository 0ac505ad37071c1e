package ledger

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/ark"
)

// This file is `arkhe shoulder adopt`: a shoulder an import created (reserved, without a
// manager) gets a manager and becomes active, so that an institution leaving EZID or arklet
// keeps minting in the shoulder its ARKs already live in. Names are never reissued: the shoulder
// mints only once every name the old system issued under it is in the ledger (no name the import
// left out, no name the old minter issued beyond what the ledger holds), and new mints draw among
// the names the ledger does not hold (the mint path's collision redraw).

// AdoptConfig says which shoulder to adopt, for whom, and how its new mints look.
type AdoptConfig struct {
	// NAAN and Shoulder name the shoulder ("/t2" or "t2").
	NAAN, Shoulder string
	// Manager is the name of the manager (of the same NAAN) that takes the shoulder.
	Manager string
	// CheckZone, when set, is the check zone of new mints whatever the existing ARKs verify
	// under; "" takes the zone every existing ARK verifies under (refused when they disagree).
	// Existing ARKs keep the verdict recorded when they came in.
	CheckZone ark.Zone
	// Minter, when set, is the old minter's state: new mints follow its template.
	Minter *AdoptMinter
}

// AdoptMinter is what AdoptShoulder takes from the old minter's state (legacy.ReadMinterState
// reads an N2T/EZID one).
type AdoptMinter struct {
	// Source names the state (its file), for messages and the audit record.
	Source string
	// Label is the "NAAN/shoulder" the minter mints in ("77913/r7"); it must be the adopted one.
	Label string
	// Mask is the minter's mask as it spells it ("eedk"), for messages.
	Mask string
	// Template is the blade it draws ("eed"); Check whether its names end in a check character
	// (NOID's, NCDA over "NAAN/" + shoulder + blade: the zone naan_name).
	Template ark.Template
	Check    bool
	// Issued is how many names it has issued under its template; -1 when unknown.
	Issued int64
}

// AdoptResult is what AdoptShoulder found and did.
type AdoptResult struct {
	NAAN, Shoulder, Manager string
	// Changed is false when the manager held the shoulder, active, already: nothing changed.
	Changed bool
	// ARKs counts the ARKs in the shoulder.
	ARKs int64
	// VerifyNAANName and VerifyNameOnly count the ARKs whose check character verifies under
	// the zones naan_name and name_only (an ARK may verify under both); VerifyNeither those
	// that verify under neither (as if without a check character: zone none).
	VerifyNAANName, VerifyNameOnly, VerifyNeither int64
	// CheckZone is the zone of new mints; ZoneFrom says where it came from.
	CheckZone ark.Zone
	ZoneFrom  string
	// Template is the blade of new mints (before the check character); TemplateFrom says where
	// it came from; Space is how many blades it allows.
	Template     ark.Template
	TemplateFrom string
	Space        float64
	// BladeLengths counts the existing ARKs by the length of their blade (without the check
	// character when CheckZone has one): only blades of betanumerics, which new mints could draw.
	BladeLengths map[int]int64
	// FitTemplate counts the existing ARKs whose blade fits the minter's template (with a
	// minter only; else 0).
	FitTemplate int64
	// AdoptedAt is when the adoption was recorded (shoulder.adopted_at).
	AdoptedAt time.Time
	// Before is the shoulder's status, check zone and blade before the adoption.
	BeforeStatus, BeforeZone string
	BeforeBlade              ark.Template
}

// AdoptShoulder gives shoulder cfg.Shoulder of cfg.NAAN to manager cfg.Manager and makes it
// active, in one transaction that sets shoulder.adopted_at and writes one audit event
// (ActionShoulderSet: manager, status, check zone, blade and adopted_at, before and after).
// Registration is the operator role's (a refusal naming the operator role otherwise). The shoulder must be
// registered, reserved (or active without a manager), follow the first-digit convention (a
// shoulder that does not stays reserved: it keeps its ARKs and does not mint), and not be
// retired or delegated; the manager must be registered in the NAAN and active, and no other
// manager may hold the shoulder. Adopting a shoulder the manager holds active already changes
// nothing (Changed false).
//
// Names are never reissued: it refuses while a name an import left out (an EZID reserved name,
// a name of the test NAAN, a name in conflict; see import_skipped) under the shoulder is not in
// the ledger, and, given the old minter's state, while the ledger holds fewer names of the
// minter's template under the shoulder than the minter says it issued. New mints draw at random
// among the names the ledger does not hold: a drawn name that exists is a collision, redrawn.
//
// The check zone of new mints is cfg.CheckZone, else the zone every existing ARK's check
// character verifies under (naan_name, else name_only, else none when none verifies); when they
// disagree it refuses, with the counts. Existing ARKs keep the verdict recorded when they came
// in. The blade of new mints follows the minter's template (its check character requires the
// zone naan_name, its absence the zone none), else the length of the longest existing blade of
// betanumerics (an expanding minter's latest form), else the shoulder's blade length.
//
// A refusal is an *AdoptError; nothing is written then.
func (l *Ledger) AdoptShoulder(ctx context.Context, cfg AdoptConfig) (AdoptResult, error) {
	sh := ark.StoredShoulder(cfg.Shoulder)
	res := AdoptResult{NAAN: cfg.NAAN, Shoulder: sh, Manager: cfg.Manager}
	refuse := func(r AdoptRefusal, format string, args ...any) (AdoptResult, error) {
		return res, &AdoptError{NAAN: cfg.NAAN, Shoulder: sh, Refusal: r, Rule: fmt.Sprintf(format, args...)}
	}
	if cfg.CheckZone != "" && !cfg.CheckZone.Valid() {
		return res, fmt.Errorf("adopt shoulder %s of NAAN %s: check zone %q: want naan_name, name_only or none", sh, cfg.NAAN, cfg.CheckZone)
	}
	tx, err := l.Pool.Begin(ctx)
	if err != nil {
		return res, fmt.Errorf("adopt shoulder %s of NAAN %s: %w", sh, cfg.NAAN, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	fail := func(err error) (AdoptResult, error) {
		if SQLState(err) == CodeInsufficientPrivilege {
			return res, &AdoptError{NAAN: cfg.NAAN, Shoulder: sh, Refusal: AdoptDatabaseRefused, Rule: ruleOperatorOnly, Err: err}
		}
		return res, fmt.Errorf("adopt shoulder %s of NAAN %s: %w", sh, cfg.NAAN, err)
	}
	// commit runs the shoulder's UPDATE (returning adopted_at) and commits: the adoption done.
	// statement_timestamp(), not clock_timestamp(), in the UPDATE: Citus refuses a volatile
	// function in an UPDATE of a reference table.
	commit := func(update string, args ...any) (AdoptResult, error) {
		var adoptedAt time.Time
		if err := tx.QueryRow(ctx, update, args...).Scan(&adoptedAt); err != nil {
			if SQLState(err) == CodeInsufficientPrivilege {
				return fail(err)
			}
			return res, &AdoptError{NAAN: cfg.NAAN, Shoulder: sh, Refusal: AdoptDatabaseRefused, Rule: ruleSeeDatabaseError, Err: err}
		}
		if err := tx.Commit(ctx); err != nil {
			return fail(err)
		}
		res.Changed, res.AdoptedAt = true, adoptedAt
		return res, nil
	}
	var layout string
	var registrar bool
	if err := tx.QueryRow(ctx, `select arkhe_layout(), arkhe_registrar()`).Scan(&layout, &registrar); err != nil {
		return fail(err)
	}
	if !registrar {
		// the database would refuse the change at the end; say so before reading the ARKs
		return res, &AdoptError{NAAN: cfg.NAAN, Shoulder: sh, Refusal: AdoptDatabaseRefused, Rule: ruleOperatorOnly}
	}
	citus := Layout(layout) == LayoutCitus
	if citus {
		// the shoulder (a reference table) is updated after the ARKs (distributed, with a
		// foreign key to it) were read: one connection per node for both
		if _, err := tx.Exec(ctx, `set local citus.multi_shard_modify_mode to 'sequential'`); err != nil {
			return fail(err)
		}
	}

	var (
		id, bladeLength      int64
		status, zone         string
		template, holderName *string
		holder               *int64
	)
	err = tx.QueryRow(ctx, `select s.id, s.status, s.check_zone, s.blade_length, s.blade_template, s.manager_id, m.name
		from shoulder s left join manager m on m.id = s.manager_id
		where s.naan = $1 and s.shoulder = $2 for update of s`, cfg.NAAN, sh).
		Scan(&id, &status, &zone, &bladeLength, &template, &holder, &holderName)
	if errors.Is(err, pgx.ErrNoRows) {
		return refuse(AdoptNotRegistered, "no such shoulder is registered (arkhe shoulder list --naan %s)", cfg.NAAN)
	}
	if err != nil {
		return fail(err)
	}
	res.BeforeStatus, res.BeforeZone = status, zone
	res.BeforeBlade = ark.Betanumerics(int(bladeLength))
	if template != nil {
		res.BeforeBlade = ark.Template(*template)
	}
	switch {
	case status == "retired":
		return refuse(AdoptRetired, "it is retired, and retired is one-way: a name it held may have been used meanwhile, so it never mints again")
	case !ark.IsMintableShoulder(sh):
		return refuse(AdoptNotFirstDigit, "%s does not follow the first-digit convention (one or more consonants bcdfghjkmnpqrstvwxz, then one digit, "+
			"e.g. /x9 or /bc7), and only such a shoulder mints: it stays reserved, keeping its ARKs, which still resolve", sh)
	case status == "delegated":
		return refuse(AdoptDelegated, "it is delegated: its names are minted elsewhere")
	}
	var managerID int64
	var managerActive bool
	err = tx.QueryRow(ctx, `select id, active from manager where naan = $1 and name = $2`, cfg.NAAN, cfg.Manager).Scan(&managerID, &managerActive)
	if errors.Is(err, pgx.ErrNoRows) {
		return refuse(AdoptNoManager, "no manager %q is registered in NAAN %s (arkhe manager add first)", cfg.Manager, cfg.NAAN)
	}
	if err != nil {
		return fail(err)
	}
	if !managerActive {
		return refuse(AdoptManagerInactive, "manager %q is not active", cfg.Manager)
	}
	handOver := false
	if holder != nil && *holder != managerID {
		// a departed manager's shoulder passes to its successor (along the chain) by adoption
		if err := tx.QueryRow(ctx, `select arkhe_succeeds($1, $2)`, managerID, *holder).Scan(&handOver); err != nil {
			return fail(err)
		}
		if !handOver {
			return refuse(AdoptHeld, "manager %q holds it; it passes to another manager only by succession (arkhe manager succeed %q --by %q), "+
				"after which the successor adopts it", deref(holderName), deref(holderName), cfg.Manager)
		}
	}
	if handOver && status == "active" {
		// the successor takes the shoulder as it is: its ARKs were minted here, under its zone and blade
		res.CheckZone, res.ZoneFrom, res.Template, res.TemplateFrom = ark.Zone(zone), "the shoulder's own (taken over by succession)", res.BeforeBlade, "the shoulder's own"
		res.Space = res.Template.Space()
		return commit(`update shoulder set manager_id = $2, adopted_at = statement_timestamp() where id = $1 returning adopted_at`,
			id, managerID)
	}
	if status == "active" && holder != nil && !handOver {
		res.CheckZone, res.Template = ark.Zone(zone), res.BeforeBlade
		res.Space = res.Template.Space()
		return res, nil
	}
	if m := cfg.Minter; m != nil && m.Label != cfg.NAAN+sh {
		return refuse(AdoptMinterShoulder, "the minter state %s is the minter of %s, not of %s%s", m.Source, m.Label, cfg.NAAN, sh)
	}

	// names an import left out that the ledger does not hold: a new mint could draw them
	bare := ark.BareShoulder(sh)
	rows, err := tx.Query(ctx, `select s.reason, count(distinct s.ark), min(s.ark)
		from import_skipped s
		where s.naan = $1 and s.assigned_name like $2::text || '%'
		  and not exists (select 1 from ark a where a.ark = s.ark)
		group by s.reason order by s.reason`, cfg.NAAN, bare)
	if err != nil {
		return fail(err)
	}
	var missing []string
	for rows.Next() {
		var reason, example string
		var n int64
		if err := rows.Scan(&reason, &n, &example); err != nil {
			rows.Close()
			return fail(err)
		}
		missing = append(missing, skippedNote(reason, n, example))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	if len(missing) > 0 {
		return refuse(AdoptSkippedNames, "names the old system issued under it are not in the ledger, and a new mint could issue them again: %s. "+
			"Freeze the old minter first, so that its export holds every name it issued", strings.Join(missing, "; "))
	}

	withCheck := map[int]int64{}
	if err := l.surveyShoulder(ctx, tx, id, cfg, &res, withCheck); err != nil {
		return fail(err)
	}

	// the check zone of new mints
	switch {
	case cfg.CheckZone != "":
		res.CheckZone, res.ZoneFrom = cfg.CheckZone, "named by the operator"
	case res.ARKs == 0 && cfg.Minter != nil && cfg.Minter.Check:
		res.CheckZone, res.ZoneFrom = ark.ZoneNAANName, "the old minter's check character (no ARK in the shoulder)"
	case res.ARKs == 0 && cfg.Minter != nil:
		res.CheckZone, res.ZoneFrom = ark.ZoneNone, "the old minter's names carry no check character (no ARK in the shoulder)"
	case res.ARKs == 0:
		res.CheckZone, res.ZoneFrom = ark.DefaultZone, "the default (no ARK in the shoulder)"
	case res.VerifyNAANName == res.ARKs:
		res.CheckZone, res.ZoneFrom = ark.ZoneNAANName, "every existing ARK verifies under it"
	case res.VerifyNameOnly == res.ARKs:
		res.CheckZone, res.ZoneFrom = ark.ZoneNameOnly, "every existing ARK verifies under it"
	case res.VerifyNeither == res.ARKs:
		res.CheckZone, res.ZoneFrom = ark.ZoneNone, "no existing ARK verifies under a zone"
	default:
		return refuse(AdoptZoneDisagrees, "its %s ARKs disagree on the check zone: %s; name the zone of new mints with --check-zone (the existing ARKs keep their recorded verdict)",
			thousands(res.ARKs), zoneCounts(res))
	}
	if m := cfg.Minter; m != nil {
		want := ark.ZoneNone
		if m.Check {
			want = ark.ZoneNAANName
		}
		if res.CheckZone != want {
			what := "carry no check character"
			if m.Check {
				what = "end in a check character over NAAN/name (zone naan_name)"
			}
			return refuse(AdoptTemplateZone, "the old minter's names (mask %s) %s, but the check zone of new mints would be %s (%s)", m.Mask, what, res.CheckZone, res.ZoneFrom)
		}
	}

	if m := cfg.Minter; m != nil && m.Issued >= 0 && res.FitTemplate < m.Issued {
		return refuse(AdoptIssuedMissing, "the minter state %s says the old minter issued %s names of its template %s; the ledger holds %s names of that form under %s: "+
			"%s issued names are not in the ledger, and a new mint could issue them again. Import every export of the old system (with --include-reserved) first",
			m.Source, thousands(m.Issued), m.Mask, thousands(res.FitTemplate), sh, thousands(m.Issued-res.FitTemplate))
	}

	// the blade of new mints
	if res.CheckZone != ark.ZoneNone {
		res.BladeLengths = withCheck
	}
	switch {
	case cfg.Minter != nil:
		res.Template, res.TemplateFrom = cfg.Minter.Template, "the old minter's template (mask "+cfg.Minter.Mask+", "+cfg.Minter.Source+")"
	case len(res.BladeLengths) > 0:
		n := slices.Max(slices.Collect(maps.Keys(res.BladeLengths)))
		res.Template, res.TemplateFrom = ark.Betanumerics(n), "the length of the existing blades"
		if len(res.BladeLengths) > 1 {
			res.TemplateFrom = "the longest of the existing blades (an expanding minter's latest form)"
		}
	default:
		res.Template, res.TemplateFrom = res.BeforeBlade, "the shoulder's blade (no existing blade of betanumerics to follow)"
	}
	res.Space = res.Template.Space()
	if _, err := ark.NewMinter(cfg.NAAN, sh, res.Template.Len(), ark.NewScriptedBlades()); err != nil {
		return refuse(AdoptCannotMint, "its names would not fit: %v", err)
	}

	var stored *string
	if res.Template.Digits() {
		s := string(res.Template)
		stored = &s
	}
	return commit(`update shoulder set manager_id = $2, status = 'active', check_zone = $3,
		blade_length = $4, blade_template = $5, adopted_at = statement_timestamp() where id = $1 returning adopted_at`,
		id, managerID, string(res.CheckZone), res.Template.Len(), stored)
}

// surveyShoulder reads the shoulder's ARKs (by its id) into res: how many, under which zones
// their check characters verify, and how many fit the minter's template; and counts the
// lengths of their blades of betanumerics into res.BladeLengths (taken as without a check
// character) and withCheck (taken as ending in one).
func (l *Ledger) surveyShoulder(ctx context.Context, tx pgx.Tx, id int64, cfg AdoptConfig, res *AdoptResult, withCheck map[int]int64) error {
	rows, err := tx.Query(ctx, `select ark from ark where shoulder_id = $1`, id)
	if err != nil {
		return err
	}
	defer rows.Close()
	bare := ark.BareShoulder(res.Shoulder)
	res.BladeLengths = map[int]int64{}
	for rows.Next() {
		var key string
		if err := rows.Scan(&key); err != nil {
			return err
		}
		res.ARKs++
		a, err := ark.ParseKey(key)
		if err != nil || !strings.HasPrefix(a.BaseName(), bare) {
			res.VerifyNeither++
			continue
		}
		nn, no := ark.Verify(a, ark.ZoneNAANName), ark.Verify(a, ark.ZoneNameOnly)
		if nn {
			res.VerifyNAANName++
		}
		if no {
			res.VerifyNameOnly++
		}
		if !nn && !no {
			res.VerifyNeither++
		}
		rest := a.BaseName()[len(bare):]
		if rest == "" || !allBetanumeric(rest) {
			continue
		}
		res.BladeLengths[len(rest)]++
		if len(rest) > 1 {
			withCheck[len(rest)-1]++
		}
		if m := cfg.Minter; m != nil {
			blade := rest
			if m.Check {
				blade = rest[:len(rest)-1]
			}
			if m.Template.Fits(blade) {
				res.FitTemplate++
			}
		}
	}
	return rows.Err()
}

func allBetanumeric(s string) bool {
	for i := 0; i < len(s); i++ {
		if !ark.IsBetanumeric(s[i]) {
			return false
		}
	}
	return true
}

// skippedNote describes n names of the reason an import left out, with an example.
func skippedNote(reason string, n int64, example string) string {
	names, were := thousands(n)+" names", "were"
	if n == 1 {
		names, were = "1 name", "was"
	}
	switch reason {
	case "reserved":
		return fmt.Sprintf("%s reserved in EZID (e.g. ark:%s) %s skipped by the import: import the export again with arkhe import --include-reserved", names, example, were)
	case "test":
		return fmt.Sprintf("%s of the test NAAN (e.g. ark:%s) %s skipped by the import: import the export again with arkhe import --include-test", names, example, were)
	case "conflict":
		return fmt.Sprintf("%s (e.g. ark:%s) %s in conflict (rows of one file gave different values, neither was imported): correct the export (see the import's reject file) and import it again", names, example, were)
	}
	return fmt.Sprintf("%s (e.g. ark:%s) %s left out by an import (%s)", names, example, were, reason)
}

// zoneCounts renders the verification counts of res.
func zoneCounts(res AdoptResult) string {
	return fmt.Sprintf("%s verify under naan_name, %s under name_only, %s under neither (none)",
		thousands(res.VerifyNAANName), thousands(res.VerifyNameOnly), thousands(res.VerifyNeither))
}

// thousands renders n with comma thousands separators.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
