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
	a := &adoption{cfg: cfg, sh: ark.StoredShoulder(cfg.Shoulder)}
	a.res = AdoptResult{NAAN: cfg.NAAN, Shoulder: a.sh, Manager: cfg.Manager}
	if cfg.CheckZone != "" && !cfg.CheckZone.Valid() {
		return a.res, fmt.Errorf("adopt shoulder %s of NAAN %s: check zone %q: want naan_name, name_only or none", a.sh, cfg.NAAN, cfg.CheckZone)
	}
	tx, err := l.Pool.Begin(ctx)
	if err != nil {
		return a.res, fmt.Errorf("adopt shoulder %s of NAAN %s: %w", a.sh, cfg.NAAN, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	a.tx = tx
	if err := a.open(ctx); err != nil {
		return a.res, err
	}
	if err := a.readShoulder(ctx); err != nil {
		return a.res, err
	}
	handOver, err := a.readManager(ctx)
	if err != nil {
		return a.res, err
	}
	switch {
	case handOver && a.status == "active":
		// the successor takes the shoulder as it is: its ARKs were minted here, under its zone and blade
		a.res.CheckZone, a.res.ZoneFrom = ark.Zone(a.zone), "the shoulder's own (taken over by succession)"
		a.res.Template, a.res.TemplateFrom = a.res.BeforeBlade, "the shoulder's own"
		a.res.Space = a.res.Template.Space()
		return a.commit(ctx, `update shoulder set manager_id = $2, adopted_at = statement_timestamp() where id = $1 returning adopted_at`,
			a.id, a.managerID)
	case a.status == "active" && a.holder != nil && !handOver:
		a.res.CheckZone, a.res.Template = ark.Zone(a.zone), a.res.BeforeBlade
		a.res.Space = a.res.Template.Space()
		return a.res, nil
	case cfg.Minter != nil && cfg.Minter.Label != cfg.NAAN+a.sh:
		return a.res, a.refuse(AdoptMinterShoulder, "the minter state %s is the minter of %s, not of %s%s", cfg.Minter.Source, cfg.Minter.Label, cfg.NAAN, a.sh)
	}
	if err := a.checkSkipped(ctx); err != nil {
		return a.res, err
	}
	withCheck := map[int]int64{}
	if err := l.surveyShoulder(ctx, tx, a.id, cfg, &a.res, withCheck); err != nil {
		return a.res, a.fail(err)
	}
	if err := a.chooseZone(); err != nil {
		return a.res, err
	}
	if err := a.chooseBlade(withCheck); err != nil {
		return a.res, err
	}
	var stored *string
	if a.res.Template.Digits() {
		s := string(a.res.Template)
		stored = &s
	}
	return a.commit(ctx, `update shoulder set manager_id = $2, status = 'active', check_zone = $3,
		blade_length = $4, blade_template = $5, adopted_at = statement_timestamp() where id = $1 returning adopted_at`,
		a.id, a.managerID, string(a.res.CheckZone), a.res.Template.Len(), stored)
}

// adoption is one AdoptShoulder in its transaction, read and decided phase by phase: open
// (the session may register), readShoulder, readManager, checkSkipped, then surveyShoulder,
// chooseZone and chooseBlade, and commit.
type adoption struct {
	cfg AdoptConfig
	sh  string // the shoulder as stored ("/x9")
	res AdoptResult
	tx  pgx.Tx

	// the shoulder as read (readShoulder) and the adopting manager (readManager)
	id, managerID int64
	status, zone  string
	holder        *int64 // the manager holding the shoulder, if any
	holderName    *string
}

// refuse returns the *AdoptError of refusal r with its rule.
func (a *adoption) refuse(r AdoptRefusal, format string, args ...any) error {
	return &AdoptError{NAAN: a.cfg.NAAN, Shoulder: a.sh, Refusal: r, Rule: fmt.Sprintf(format, args...)}
}

// fail returns a database error: an *AdoptError naming the operator role for a refused
// privilege, else err wrapped.
func (a *adoption) fail(err error) error {
	if IsInsufficientPrivilege(err) {
		return &AdoptError{NAAN: a.cfg.NAAN, Shoulder: a.sh, Refusal: AdoptDatabaseRefused, Rule: ruleOperatorOnly, Err: err}
	}
	return fmt.Errorf("adopt shoulder %s of NAAN %s: %w", a.sh, a.cfg.NAAN, err)
}

// open refuses a session that may not register before any ARK is read (the database would
// refuse the change at the end), and on Citus runs the transaction's multi-shard statements
// sequentially: the shoulder (a reference table) is updated after the ARKs (distributed, with
// a foreign key to it) were read, over one connection per node for both.
func (a *adoption) open(ctx context.Context) error {
	var layout string
	var registrar bool
	if err := a.tx.QueryRow(ctx, `select arkhe_layout(), arkhe_registrar()`).Scan(&layout, &registrar); err != nil {
		return a.fail(err)
	}
	if !registrar {
		return &AdoptError{NAAN: a.cfg.NAAN, Shoulder: a.sh, Refusal: AdoptDatabaseRefused, Rule: ruleOperatorOnly}
	}
	if Layout(layout) == LayoutCitus {
		if _, err := a.tx.Exec(ctx, `set local citus.multi_shard_modify_mode to 'sequential'`); err != nil {
			return a.fail(err)
		}
	}
	return nil
}

// readShoulder locks the shoulder's row, records its state before the adoption in a.res, and
// refuses a shoulder that is not registered, retired (one-way), outside the first-digit
// convention, or delegated.
func (a *adoption) readShoulder(ctx context.Context) error {
	var bladeLength int64
	var template *string
	err := a.tx.QueryRow(ctx, `select s.id, s.status, s.check_zone, s.blade_length, s.blade_template, s.manager_id, m.name
		from shoulder s left join manager m on m.id = s.manager_id
		where s.naan = $1 and s.shoulder = $2 for update of s`, a.cfg.NAAN, a.sh).
		Scan(&a.id, &a.status, &a.zone, &bladeLength, &template, &a.holder, &a.holderName)
	if errors.Is(err, pgx.ErrNoRows) {
		return a.refuse(AdoptNotRegistered, "no such shoulder is registered (arkhe shoulder list --naan %s)", a.cfg.NAAN)
	}
	if err != nil {
		return a.fail(err)
	}
	a.res.BeforeStatus, a.res.BeforeZone = a.status, a.zone
	a.res.BeforeBlade = ark.Betanumerics(int(bladeLength))
	if template != nil {
		a.res.BeforeBlade = ark.Template(*template)
	}
	switch {
	case a.status == "retired":
		return a.refuse(AdoptRetired, "it is retired, and retired is one-way: a name it held may have been used meanwhile, so it never mints again")
	case !ark.IsMintableShoulder(a.sh):
		return a.refuse(AdoptNotFirstDigit, "%s does not follow the first-digit convention (one or more consonants bcdfghjkmnpqrstvwxz, then one digit, "+
			"e.g. /x9 or /bc7), and only such a shoulder mints: it stays reserved, keeping its ARKs, which still resolve", a.sh)
	case a.status == "delegated":
		return a.refuse(AdoptDelegated, "it is delegated: its names are minted elsewhere")
	}
	return nil
}

// readManager reads the adopting manager, which must be registered in the NAAN and active, and
// reports whether it takes the shoulder over from the manager holding it by succession (a
// departed manager's shoulder passes to its successor, along the chain, by adoption); another
// holder refuses.
func (a *adoption) readManager(ctx context.Context) (handOver bool, err error) {
	var active bool
	err = a.tx.QueryRow(ctx, `select id, active from manager where naan = $1 and name = $2`, a.cfg.NAAN, a.cfg.Manager).Scan(&a.managerID, &active)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, a.refuse(AdoptNoManager, "no manager %q is registered in NAAN %s (arkhe manager add first)", a.cfg.Manager, a.cfg.NAAN)
	}
	if err != nil {
		return false, a.fail(err)
	}
	if !active {
		return false, a.refuse(AdoptManagerInactive, "manager %q is not active", a.cfg.Manager)
	}
	if a.holder == nil || *a.holder == a.managerID {
		return false, nil
	}
	if err := a.tx.QueryRow(ctx, `select arkhe_succeeds($1, $2)`, a.managerID, *a.holder).Scan(&handOver); err != nil {
		return false, a.fail(err)
	}
	if !handOver {
		return false, a.refuse(AdoptHeld, "manager %q holds it; it passes to another manager only by succession (arkhe manager succeed %q --by %q), "+
			"after which the successor adopts it", deref(a.holderName), deref(a.holderName), a.cfg.Manager)
	}
	return true, nil
}

// checkSkipped refuses while names an import left out under the shoulder are not in the
// ledger: a new mint could draw them (names are never reissued).
func (a *adoption) checkSkipped(ctx context.Context) error {
	rows, err := a.tx.Query(ctx, `select s.reason, count(distinct s.ark), min(s.ark)
		from import_skipped s
		where s.naan = $1 and s.assigned_name like $2::text || '%'
		  and not exists (select 1 from ark a where a.ark = s.ark)
		group by s.reason order by s.reason`, a.cfg.NAAN, ark.BareShoulder(a.sh))
	if err != nil {
		return a.fail(err)
	}
	var missing []string
	for rows.Next() {
		var reason, example string
		var n int64
		if err := rows.Scan(&reason, &n, &example); err != nil {
			rows.Close()
			return a.fail(err)
		}
		missing = append(missing, skippedNote(reason, n, example))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return a.fail(err)
	}
	if len(missing) > 0 {
		return a.refuse(AdoptSkippedNames, "names the old system issued under it are not in the ledger, and a new mint could issue them again: %s. "+
			"Freeze the old minter first, so that its export holds every name it issued", strings.Join(missing, "; "))
	}
	return nil
}

// chooseZone sets the check zone of new mints (see AdoptShoulder) from the survey in a.res, and
// refuses when the existing ARKs disagree or the old minter's names and the zone do.
func (a *adoption) chooseZone() error {
	res, cfg := &a.res, a.cfg
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
		return a.refuse(AdoptZoneDisagrees, "its %s ARKs disagree on the check zone: %s; name the zone of new mints with --check-zone (the existing ARKs keep their recorded verdict)",
			thousands(res.ARKs), zoneCounts(*res))
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
			return a.refuse(AdoptTemplateZone, "the old minter's names (mask %s) %s, but the check zone of new mints would be %s (%s)", m.Mask, what, res.CheckZone, res.ZoneFrom)
		}
	}
	return nil
}

// chooseBlade refuses while the ledger holds fewer names of the old minter's template than it
// issued, then sets the blade of new mints (see AdoptShoulder) and refuses one whose names
// would not fit. withCheck counts the blade lengths taken as ending in a check character.
func (a *adoption) chooseBlade(withCheck map[int]int64) error {
	res, cfg := &a.res, a.cfg
	if m := cfg.Minter; m != nil && m.Issued >= 0 && res.FitTemplate < m.Issued {
		return a.refuse(AdoptIssuedMissing, "the minter state %s says the old minter issued %s names of its template %s; the ledger holds %s names of that form under %s: "+
			"%s issued names are not in the ledger, and a new mint could issue them again. Import every export of the old system (with --include-reserved) first",
			m.Source, thousands(m.Issued), m.Mask, thousands(res.FitTemplate), a.sh, thousands(m.Issued-res.FitTemplate))
	}
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
	if _, err := ark.NewMinter(cfg.NAAN, a.sh, res.Template.Len(), ark.NewScriptedBlades()); err != nil {
		return a.refuse(AdoptCannotMint, "its names would not fit: %v", err)
	}
	return nil
}

// commit runs the shoulder's UPDATE (returning adopted_at) and commits: the adoption done.
// statement_timestamp(), not clock_timestamp(), in the UPDATE: Citus refuses a volatile
// function in an UPDATE of a reference table.
func (a *adoption) commit(ctx context.Context, update string, args ...any) (AdoptResult, error) {
	var adoptedAt time.Time
	if err := a.tx.QueryRow(ctx, update, args...).Scan(&adoptedAt); err != nil {
		if IsInsufficientPrivilege(err) {
			return a.res, a.fail(err)
		}
		return a.res, &AdoptError{NAAN: a.cfg.NAAN, Shoulder: a.sh, Refusal: AdoptDatabaseRefused, Rule: ruleSeeDatabaseError, Err: err}
	}
	if err := a.tx.Commit(ctx); err != nil {
		return a.res, a.fail(err)
	}
	a.res.Changed, a.res.AdoptedAt = true, adoptedAt
	return a.res, nil
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
