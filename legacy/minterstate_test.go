package legacy_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/legacy"
)

// TestReadMinterStateReal reads EZID's two real states of the N2T minter of 77913/r7: mask
// eedk (two betanumerics, one digit, a check character), 8,410 names, 2,191 issued in the
// first and all but one in the second.
func TestReadMinterStateReal(t *testing.T) {
	for file, issued := range map[string]int64{"77913_r7.json": 2191, "77913_r7_last_before_template_extend.json": 8409} {
		st, err := legacy.ReadMinterState(fixtures.SharedData(t, "ezid", file))
		if err != nil {
			t.Fatal(err)
		}
		if st.NAAN != "77913" || st.Shoulder != "/r7" || st.Label() != "77913/r7" || st.Mask != "eedk" ||
			st.Template != ark.Template("eed") || !st.Check || st.Type != "rand" || st.Issued != issued || st.Total != 8410 {
			t.Errorf("%s: %+v", file, st)
		}
		if st.Template.Space() != float64(st.Total) {
			t.Errorf("%s: the template allows %v names, the minter says %d", file, st.Template.Space(), st.Total)
		}
	}
}

// TestReadMinterStateRefuses: what is not a minter state is refused naming the file and the field.
func TestReadMinterStateRefuses(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct{ body, want string }{
		"list":        {`[1, 2]`, "not a JSON object"},
		"no-shoulder": {`{"mask": "eedk"}`, `field "shoulder": missing`},
		"bad-mask":    {`{"shoulder": "77913/r7", "mask": "eexk"}`, `field "mask": NOID mask "eexk": character 'x' at offset 2`},
		"disagree":    {`{"shoulder": "77913/r7", "mask": "eedk", "template": "77913/r7{eedeedk}"}`, `field "template": "77913/r7{eedeedk}" holds mask "eedeedk"`},
		"other-sh":    {`{"shoulder": "77913/r7", "template": "77913/r8{eedk}"}`, `names shoulder "77913/r8"`},
		"no-naan":     {`{"shoulder": "r7", "mask": "eedk"}`, `field "shoulder": "r7" is not NAAN/shoulder`},
		"counter":     {`{"shoulder": "77913/r7", "mask": "eedk", "oacounter": "many"}`, `field "oacounter": "many" is not a count`},
		"object":      {`{"shoulder": {"a": 1}, "mask": "eedk"}`, `field "shoulder": want a string or a number`},
	} {
		p := filepath.Join(dir, name+".json")
		if err := os.WriteFile(p, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := legacy.ReadMinterState(p)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v, want an error naming %s and containing %q", name, err, p, c.want)
		}
	}
	// the template alone is enough; numbers may be JSON numbers
	p := filepath.Join(dir, "tmpl.json")
	if err := os.WriteFile(p, []byte(`{"template": "13030/fk4{reedeedk}", "oacounter": 12}`), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := legacy.ReadMinterState(p)
	if err != nil || st.Label() != "13030/fk4" || st.Template != "eedeed" || !st.Check || st.Issued != 12 || st.Total != -1 {
		t.Errorf("template only: %+v, %v", st, err)
	}
}
