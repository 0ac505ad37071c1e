package targethealth

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// testNAAN is the NAAN shared for test ARKs (99999); a link-check run leaves its ARKs out
// unless asked.
const testNAAN = "99999"

// runLock is the advisory lock a link-check run holds, so that two runs never check (and
// count the failures of) the same targets at once (an arbitrary constant).
const runLock = 7_2_11_5_0_15

// Selection narrows the ARKs a link-check run reads. The zero value selects every public
// ARK with a target outside the test NAAN.
type Selection struct {
	// NAAN keeps only the ARKs of this NAAN; "" for all. Naming the test NAAN includes it.
	NAAN string
	// Shoulder keeps only the ARKs of this shoulder, stored ("/x9") or bare ("x9"); "" for all.
	// Without NAAN it matches that shoulder string in every NAAN.
	Shoulder string
	// Manager keeps only the ARKs of this manager's shoulders, by name; "" for all. A name
	// held by managers of several NAANs needs NAAN.
	Manager string
	// IncludeTest includes the ARKs of the test NAAN 99999.
	IncludeTest bool
}

// linkSel is a Selection resolved to the ledger's keys, with the open exclusions.
type linkSel struct {
	naan, shoulder string
	managers       []int64 // empty: every manager
	includeTest    bool
	exManagers     []int64
	exShoulders    []int64
	exHosts        map[string]bool
}

// managerIDs returns the keys of the managers named name (in naan when not "").
func managerIDs(ctx context.Context, l *ledger.Ledger, naan, name string) ([]int64, error) {
	rows, err := l.Pool.Query(ctx, `select id from manager where name = $1 and ($2 = '' or naan = $2) order by naan`, name, naan)
	if err != nil {
		return nil, fmt.Errorf("read manager %s: %w", name, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("read manager %s: %w", name, err)
	}
	what := fmt.Sprintf("manager %q", name)
	switch {
	case len(ids) == 0 && naan != "":
		return nil, &SelectionError{What: what, Rule: "is not registered in NAAN " + naan}
	case len(ids) == 0:
		return nil, &SelectionError{What: what, Rule: "is not registered"}
	}
	return ids, nil
}

// resolve turns sel into keys and reads the open exclusions.
func resolveSelection(ctx context.Context, l *ledger.Ledger, sel Selection) (linkSel, error) {
	r := linkSel{naan: sel.NAAN, includeTest: sel.IncludeTest || sel.NAAN == testNAAN, exHosts: map[string]bool{}}
	if sel.Shoulder != "" {
		r.shoulder = ark.StoredShoulder(sel.Shoulder)
	}
	if sel.Manager != "" {
		ids, err := managerIDs(ctx, l, sel.NAAN, sel.Manager)
		if err != nil {
			return r, err
		}
		r.managers = ids
	}
	exs, err := Exclusions(ctx, l, false)
	if err != nil {
		return r, err
	}
	for _, e := range exs {
		switch {
		case e.managerID != 0:
			r.exManagers = append(r.exManagers, e.managerID)
		case e.shoulderID != 0:
			r.exShoulders = append(r.exShoulders, e.shoulderID)
		case e.Host != "":
			r.exHosts[e.Host] = true
		}
	}
	return r, nil
}

// args returns the selection's named query arguments.
func (s linkSel) args() pgx.NamedArgs {
	return pgx.NamedArgs{"naan": s.naan, "shoulder": s.shoulder, "managers": nonNil(s.managers),
		"include_test": s.includeTest, "test_naan": testNAAN,
		"ex_shoulders": nonNil(s.exShoulders), "ex_managers": nonNil(s.exManagers)}
}

func nonNil(a []int64) []int64 {
	if a == nil {
		return []int64{}
	}
	return a
}

// linkFilter is the WHERE part every selection shares: public ARKs with a target, the
// selection, the exclusions by manager and shoulder (hosts are left out by the source). It can
// be NULL (a migrated shoulder has no manager): a WHERE reads that as false, and linkNeverQuery,
// which reads it as a column, coalesces it.
const linkFilter = `ark_status_text(a.status) = 'public' and a.url is not null and a.url <> ''
	and (@naan::text = '' or a.naan = @naan::text) and (@include_test::boolean or a.naan <> @test_naan::text)
	and (@shoulder::text = '' or s.shoulder = @shoulder::text)
	and (cardinality(@managers::bigint[]) = 0 or s.manager_id = any(@managers::bigint[]))
	and not (a.shoulder_id = any(@ex_shoulders::bigint[]))
	and not (coalesce(s.manager_id, 0) = any(@ex_managers::bigint[]))`
