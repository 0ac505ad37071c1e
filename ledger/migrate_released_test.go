package ledger

import "testing"

// TestReleasedMigrationsUnchanged pins the checksum of every migration a ledger may already hold.
// A released migration is never edited: a ledger that applied it refuses to migrate when its text
// changes. A change to the schema goes into a new migration; add its checksum here when it ships.
func TestReleasedMigrationsUnchanged(t *testing.T) {
	t.Parallel()
	released := map[string]string{
		"0001_ledger.sql":                     "eb16fca7a91e1f3a",
		"0002_linkcheck.sql":                  "28b0f1ab1040abf2",
		"0003_roles.sql":                      "2d7891021314d520",
		"0004_citus_receipts.sql":             "4dc4bb027e0654a0",
		"0005_registration_changes.sql":       "14ef8c227e895293",
		"0006_shoulder_adopt.sql":             "2a7a3c10a1b44fd6",
		"0007_lean_ark.sql":                   "98b630218771931f",
		"0008_audit_signals.sql":              "8e3d0dbe5439bb48",
		"0009_key_sessions_citus_audit.sql":   "abb05a50c56de409",
		"0010_ark_shoulder_per_statement.sql": "fefb8eb4b108f9f3",
		"0011_ark_checks_one_pass.sql":        "299c46d9f38d750a",
		"0012_public_status_null.sql":         "28052ece5c257238",
		"0015_key_columns_receipt_layout.sql": "dc9ca50c500affae",
		"0016_resolver_role.sql":              "a8d3ee2a01c47d43",
		"0017_update_receipts.sql":            "67ccc8fd6d1eda04",
		"0018_raise_counters.sql":             "2ea08baf1445a201",
		"0019_export_mark_grant.sql":          "12db4b5a86fe17d0",
		"0020_mint_one.sql":                   "026f4f4fdb043666",
		"0022_update_change_rows.sql":         "65956cd48b812f54",
	}
	ms, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, m := range ms {
		want, ok := released[m.Name]
		if !ok {
			continue
		}
		seen++
		if got := checksum(m.SQL); got != want {
			t.Errorf("%s was released with checksum %s and now has %s: put the change in a new migration", m.Name, want, got)
		}
	}
	if seen != len(released) {
		t.Errorf("found %d of the %d released migrations", seen, len(released))
	}
}
