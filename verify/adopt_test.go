package verify_test

import (
	"strings"
	"testing"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/verify"
)

// TestAdoptedShoulderKeepsImportVerdict: ARKs imported without a check-character verdict into a
// legacy shoulder (zone none) keep it when the shoulder is adopted with the zone naan_name for
// new mints: the audit does not judge them again. The same ARKs imported into a shoulder that
// has the zone from the start, without a verdict, are findings.
func TestAdoptedShoulderKeepsImportVerdict(t *testing.T) {
	t.Parallel()
	tl := newLedger(t)
	tl.exec(false, `insert into shoulder (naan, shoulder, status, check_zone) values ('99999', '/k4', 'reserved', 'none'), ('99999', '/h6', 'active', 'naan_name')`)
	var bad []string
	for _, sh := range []string{"k4", "h6"} {
		for i := 0; i < 3; i++ {
			name := tl.name("99999", sh)
			last := name[len(name)-1]
			name = name[:len(name)-1] + string(ark.Alphabet[(strings.IndexByte(ark.Alphabet, last)+1)%len(ark.Alphabet)])
			a := tl.importARK(false, "99999", name, "99999", "/"+sh, "now()")
			if sh == "h6" {
				bad = append(bad, a)
			}
		}
		tl.importARK(false, "99999", tl.name("99999", sh), "99999", "/"+sh, "now()")
	}
	if _, err := tl.l.AddManager(tl.ctx, ledger.Manager{NAAN: "99999", Name: "adopter"}); err != nil {
		t.Fatal(err)
	}
	// 1 of /k4's ARKs verifies under naan_name, 3 under none: the operator names the zone
	res, err := tl.l.AdoptShoulder(tl.ctx, ledger.AdoptConfig{NAAN: "99999", Shoulder: "/k4", Manager: "adopter", CheckZone: ark.ZoneNAANName})
	if err != nil || res.VerifyNAANName != 1 || res.VerifyNeither != 3 {
		t.Fatalf("adopt /k4: %+v, %v", res, err)
	}
	got, rows := tl.audit(verify.Config{})
	only(t, got, rows, verify.CheckCheckCharacter, 3, bad[0])
}
