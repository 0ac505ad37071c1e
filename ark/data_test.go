package ark_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/ulikunitz/xz"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/fixtures"
)

// TestSpings: the 1,000,000 ARKs the N2T Perl minter made under 77913/r7
// all verify with zone naan_name; the three junk lines at the end are not
// ARKs (NCDA).
func TestSpings(t *testing.T) {
	t.Parallel()
	path := fixtures.SharedData(t, "ezid", "perl_77913_r7_1000000_spings.csv.xz")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := xz.NewReader(bufio.NewReaderSize(f, 1<<16))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	sc := bufio.NewScanner(bufio.NewReaderSize(zr, 1<<16))
	verified, notARK, line := 0, 0, 0
	var first, last string
	for sc.Scan() {
		line++
		a, err := ark.Parse("ark:77913/r7" + sc.Text())
		if err != nil {
			var se *ark.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("%s:%d: %v is not a *ark.SyntaxError", path, line, err)
			}
			notARK++
			continue
		}
		if notARK > 0 {
			t.Fatalf("%s:%d: ARK %q after a non-ARK line", path, line, a)
		}
		if a.Shoulder != "r7" || a.Qualifier != "" {
			t.Fatalf("%s:%d: %q parts %+v", path, line, a, a)
		}
		if err := ark.VerifyDetail(a, ark.ZoneNAANName); err != nil {
			t.Fatalf("%s:%d: %v", path, line, err)
		}
		if verified == 0 {
			first = a.String()
		}
		last = a.String()
		verified++
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s:%d: %v", path, line, err)
	}
	if verified != 1_000_000 || notARK != 3 {
		t.Errorf("verified %d, not ARK %d; want 1000000 and 3", verified, notARK)
	}
	if first != "ark:77913/r72t0f" || last != "ark:77913/r72j6nt0k" {
		t.Errorf("first %q last %q", first, last)
	}
}

// TestEZIDIdentifiers: every ARK in the EZID identifier dump parses (classic
// label, normalized to modern), the DOIs are ark.ErrNotARK, and the number that
// verify with zone naan_name is the one an independent count gave (1,164 of
// 2,693; many real ARKs legitimately have no check character).
func TestEZIDIdentifiers(t *testing.T) {
	t.Parallel()
	path := fixtures.SharedData(t, "ezid", "db.identifier.jsonl")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	arks, dois, verified, qualified, line := 0, 0, 0, 0, 0
	for sc.Scan() {
		line++
		var rec struct {
			Fields struct {
				Identifier string `json:"identifier"`
			} `json:"fields"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("%s:%d: %v", path, line, err)
		}
		id := rec.Fields.Identifier
		a, err := ark.Parse(id)
		if strings.HasPrefix(id, "doi:") {
			if !errors.Is(err, ark.ErrNotARK) {
				t.Errorf("%s:%d: %q: %v, want ark.ErrNotARK", path, line, id, err)
			}
			dois++
			continue
		}
		if err != nil {
			t.Errorf("%s:%d: identifier: %v", path, line, err)
			continue
		}
		if want := "ark:" + strings.TrimPrefix(id, "ark:/"); a.String() != want || a.OriginalDiffers() {
			t.Errorf("%s:%d: %q → %q (differs %v)", path, line, id, a.String(), a.OriginalDiffers())
		}
		arks++
		if a.Qualifier != "" {
			qualified++
		}
		if ark.Verify(a, ark.ZoneNAANName) {
			verified++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s:%d: %v", path, line, err)
	}
	if arks != 2693 || dois != 31 || verified != 1164 || qualified != 30 {
		t.Errorf("ARKs %d DOIs %d verified %d qualified %d; want 2693 31 1164 30", arks, dois, verified, qualified)
	}
}
