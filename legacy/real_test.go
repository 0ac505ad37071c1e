package legacy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arkhe-ledger/arkhe/fixtures"
)

// Tests on the real exports in shared/data (SOURCES.md). Counts and values
// were taken from the files independently (Python json/csv).

func TestRealN2TSample(t *testing.T) {
	t.Parallel()
	path := fixtures.SharedData(t, "arklet", "sample_noid_output.txt")
	c := readFile(t, path, "")
	want := []string{"ark:/13960/fk3ws8hp67", "ark:/13960/t00000018", "ark:/13960/t0000002r", "ark:/13960/t00000037",
		"ark:/13960/t0000004q", "ark:/13960/t00000056", "ark:/13960/t0000006p", "ark:/13960/t00000075"}
	if len(c.records) != len(want) || len(c.errs) != 0 {
		t.Fatalf("%d records, %d errors; want 8 and 0", len(c.records), len(c.errs))
	}
	for i, id := range want {
		if c.records[i].ID != id || c.records[i].Kind != "ark" || c.records[i].Status != StatusPublic {
			t.Errorf("record %d: %q %s %s, want %q", i+1, c.records[i].ID, c.records[i].Kind, c.records[i].Status, id)
		}
		if c.records[i].Source.Record != i+1 {
			t.Errorf("record %d: location %v", i+1, c.records[i].Source)
		}
	}
	fk := c.records[0]
	if fk.Target != "http://www.archive.org/details/thereefanovel00wharrich" || !fk.HasTarget || fk.RedirectCode != 0 {
		t.Errorf("fk3ws8hp67 target %q", fk.Target)
	}
	// Only __mc (old binder) gives its creation time.
	if fk.Created == nil || fk.Created.Unix() != 1435680779 || fk.Updated != nil {
		t.Errorf("fk3ws8hp67 created %v updated %v", fk.Created, fk.Updated)
	}
	if fk.Source.Line != 23 || fk.Metadata["__mp"] != "p:||76" {
		t.Errorf("fk3ws8hp67 at %v, metadata %v", fk.Source, fk.Metadata)
	}
	t18 := c.records[1]
	if t18.Target != "http://www.archive.org/details/intronational00greerich" || t18.Created.Unix() != 1152999140 ||
		t18.Metadata["_,ep"] != "p:&P/1||76" || t18.Metadata["__mp"] != "p:||76" || len(t18.Metadata) != 2 {
		t.Errorf("t00000018: %+v %v", t18, t18.Metadata)
	}
	if t18.Created.Location() != time.UTC {
		t.Errorf("Unix time not in UTC: %v", t18.Created)
	}
	last := c.records[7]
	if last.Target != "http://www.archive.org/details/republicanpart00protrich" || last.Source.Line != 89 {
		t.Errorf("t00000075: %q at %v", last.Target, last.Source)
	}
	// No DATA=END: every identifier is yielded, then one TruncatedError at the end.
	te := c.truncated
	if te == nil {
		t.Fatal("no TruncatedError for a dump without DATA=END")
	}
	if te.Loc.Line != 98 || te.Loc.Record != 8 || !strings.Contains(te.Reason, "without DATA=END") ||
		!strings.Contains(te.Reason, "ark:/13960/t00000075") {
		t.Errorf("truncation: %v", te)
	}
	if got := strings.Join(c.order, ""); got != "RRRRRRRRT" {
		t.Errorf("yield order %s", got)
	}
	if te.Error() != path+":98 (record 8): truncated: "+te.Reason {
		t.Errorf("message %q", te.Error())
	}
}

func TestRealEZIDIdentifiers(t *testing.T) {
	t.Parallel()
	c := readFile(t, fixtures.SharedData(t, "ezid", "db.identifier.jsonl"), "")
	if len(c.records) != 2724 || len(c.errs) != 0 || c.truncated != nil || len(c.refused) != 0 {
		t.Fatalf("%d records, %d errors, %v", len(c.records), len(c.errs), c.truncated)
	}
	kinds := map[string]int{}
	status := map[Status]int{}
	dflt, withReason, who := 0, 0, 0
	for _, r := range c.records {
		kinds[r.Kind]++
		status[r.Status]++
		if r.TargetIsDefault {
			dflt++
		}
		if r.StatusReason != "" {
			withReason++
		}
		if r.Who != nil {
			who++
		}
		if r.Created == nil || r.Updated == nil || r.Updated.Before(*r.Created) {
			t.Fatalf("%s: times %v %v", r.ID, r.Created, r.Updated)
		}
	}
	if kinds["ark"] != 2693 || kinds["doi"] != 31 || len(kinds) != 2 {
		t.Errorf("kinds %v, want 2693 ark + 31 doi", kinds)
	}
	if status[StatusPublic] != 2468 || status[StatusUnavailable] != 175 || status[StatusReserved] != 81 {
		t.Errorf("statuses %v", status)
	}
	if dflt != 429 || withReason != 173 || who != 660 {
		t.Errorf("default targets %d (want 429), reasons %d (173), who %d (660)", dflt, withReason, who)
	}
	first := c.records[0]
	if first.ID != "ark:/13030/c8251g4t" || first.Target != "http://ark.cdlib.org/ark:/13030/c8251g4t" ||
		str(first.Who) != "Unknown" || str(first.What) != "Photograph of El Encanto" || str(first.When) != "Unknown" ||
		first.Created.Unix() != 1302134270 || first.Updated.Unix() != 1486424198 || first.Owner != "25" ||
		first.Metadata["mrt.creator"] != "lsta_montereyparklib" || first.Metadata["ezid.pk"] != "4509" ||
		first.Source.Line != 1 || first.Source.Record != 1 {
		t.Errorf("first record: %+v who=%s what=%s meta=%v", first, str(first.Who), str(first.What), first.Metadata)
	}
	if r := recByID(c, "ark:/13030/k6jq14d1"); r == nil || r.Status != StatusUnavailable ||
		r.StatusReason != "Object in restricted collection" ||
		r.Target != "http://merritt.cdlib.org/m/ark%3A%2F13030%2Fk6jq14d1" || r.TargetIsDefault {
		t.Errorf("k6jq14d1: %+v", r)
	}
	if r := recByID(c, "ark:/13030/c8gb27zh"); r == nil || r.Status != StatusUnavailable || r.StatusReason != "" {
		t.Errorf("c8gb27zh (unavailable, no reason): %+v", r)
	}
	if r := recByID(c, "ark:/13030/p41835d07"); r == nil || r.Status != StatusReserved ||
		r.Target != "http://ezid.cdlib.org/id/ark:/13030/p41835d07" || !r.TargetIsDefault || r.Created.Unix() != 1425544018 {
		t.Errorf("reserved p41835d07: %+v", r)
	}
	if r := recByID(c, "ark:/87602/m4/M3174"); r == nil || r.Kind != "ark" ||
		r.Target != "http://MorphoSource.org/index.php/Detail/MediaDetail/Show/media_file_id/3174" || r.Source.Line != 599 {
		t.Errorf("qualified ARK m4/M3174: %+v", r)
	}
	if r := recByID(c, "doi:10.5063/AA/CONNOLLY.132.4"); r == nil || r.Kind != "doi" || r.Source.Line != 549 ||
		!strings.HasPrefix(r.Metadata["datacite"], `<?xml version="1.0"?>`) {
		t.Errorf("DOI: %+v", r)
	}
	if r := recByID(c, "ark:/87925/drs1.iberian.11175"); r == nil || r.Target != "http://iberian.ucd.ie/view/iberian:11175" {
		t.Errorf("dotted ARK: %+v", r)
	}
	if r := recByID(c, "ark:/99999/fk4qj8wd0s"); r == nil || !r.TargetIsDefault || r.Source.Record != 2724 {
		t.Errorf("test ARK: %+v", r)
	}
}

func TestRealEZIDShoulders(t *testing.T) {
	t.Parallel()
	d := fixtures.SharedData(t)
	c := readFile(t, filepath.Join(d, "ezid", "db.shoulder.jsonl"), "")
	if len(c.shoulders) != 566 || len(c.errs) != 0 {
		t.Fatalf("%d shoulders, %d errors", len(c.shoulders), len(c.errs))
	}
	types := map[string]int{}
	noMinter, inactive := 0, 0
	for _, s := range c.shoulders {
		types[s.Type]++
		if s.Minter == "" {
			noMinter++
		}
		if s.Status == "inactive" {
			inactive++
		}
	}
	if types["ARK"] != 318 || types["DOI"] != 248 || noMinter != 36 || inactive != 13 {
		t.Errorf("types %v, no minter %d, inactive %d", types, noMinter, inactive)
	}
	s := c.shoulders[0]
	if s.Prefix != "ark:/87940/m4" || s.NAAN != "87940" || s.Shoulder != "m4" || s.Name != "UCSB Writing Program" ||
		s.Status != "active" || s.SourceID != "1" || s.Date == nil || s.Date.Format("2006-01-02") != "2014-04-16" || s.Kind != "ark" {
		t.Errorf("first shoulder: %+v", s)
	}

	c = readFile(t, filepath.Join(d, "ezid", "ezidapp_shoulder.csv"), "")
	if len(c.shoulders) != 425 || len(c.errs) != 0 || c.truncated != nil {
		t.Fatalf("ezidapp_shoulder.csv: %d shoulders, %d errors", len(c.shoulders), len(c.errs))
	}
	arks, noMinter, naanWide := 0, 0, 0
	for _, s := range c.shoulders {
		if s.Kind == "ark" {
			arks++
		}
		if s.Minter == "" {
			noMinter++
		}
		if s.Shoulder == "" {
			naanWide++
		}
	}
	if arks != 269 || noMinter != 30 || naanWide != 23 {
		t.Errorf("ark %d (269), no minter %d (30), NAAN-wide %d (23)", arks, noMinter, naanWide)
	}
	for _, s := range c.shoulders {
		if s.Prefix == "ark:/87286/" && (s.NAAN != "87286" || s.Shoulder != "" || s.Name != "Biocode Commons (UCB only)" || s.Minter != "") {
			t.Errorf("supershoulder: %+v", s)
		}
	}

	c = readFile(t, filepath.Join(d, "legacy-samples", "n2t_master_shoulders.anvl.txt"), "")
	if len(c.shoulders) != 278 || len(c.errs) != 0 {
		t.Fatalf("master shoulders: %d, %d errors", len(c.shoulders), len(c.errs))
	}
	arks, super := 0, 0
	var oca *ShoulderRecord
	for _, s := range c.shoulders {
		if s.Kind == "ark" {
			arks++
		}
		if s.IsSupershoulder {
			super++
		}
		if s.Prefix == "ark:/13960/t" {
			oca = s
		}
	}
	if arks != 147 || super != 2 {
		t.Errorf("ark %d (147), supershoulders %d (2)", arks, super)
	}
	if oca == nil || oca.NAAN != "13960" || oca.Shoulder != "t" || oca.Name != "Open Content Alliance" || oca.Manager != "oca" || oca.Minter != "" {
		t.Errorf("13960/t: %+v", oca)
	}
	if s := c.shoulders[0]; s.Prefix != "doi:10.7939/DVN" || s.Kind != "doi" || s.Datacenter != "CDL.UAL" || s.Date.Format("2006.01.02") != "2014.04.09" {
		t.Errorf("first: %+v", s)
	}

	c = readFile(t, filepath.Join(d, "naan_reg_public", "shoulder-list.txt"), "")
	if len(c.shoulders) != 356 || len(c.errs) != 0 {
		t.Fatalf("shoulder-list: %d, %d errors", len(c.shoulders), len(c.errs))
	}
	if s := c.shoulders[0]; s.Prefix != "ark:/13030/bn" || s.Name != "?1?" || s.NAAN != "13030" || s.Shoulder != "bn" {
		t.Errorf("first: %+v", s)
	}
	if s := c.shoulders[99]; s.Prefix != "ark:/19153/sbcs9" || s.Name != "Scolomfr -- Bac à sable" || s.Source.Line != 100 {
		t.Errorf("line 100: %+v", s)
	}
}

func TestRealNAANRegistryANVL(t *testing.T) {
	t.Parallel()
	c := readFile(t, fixtures.SharedData(t, "jkunze-naan", "naan_registry.txt"), "")
	if len(c.naans) != 583 || len(c.errs) != 0 || len(c.shoulders) != 0 || c.truncated != nil {
		t.Fatalf("%d NAANs, %d shoulders, %d errors", len(c.naans), len(c.shoulders), len(c.errs))
	}
	first := c.naans[0]
	if first.NAAN != "12025" || first.Name != "US National Library of Medicine" || first.Acronym != "USNLM" ||
		first.OrgType != "NP" || first.Policy != "(:unkn) unknown" || first.Tenure != "2001" || first.PolicyURL != "" ||
		first.Source.Line != 296 || first.Source.Record != 1 || first.When.Format("2006.01.02") != "2001.03.08" {
		t.Errorf("first NAAN: %+v", first)
	}
	var cdl, bnf *NAANRecord
	nonASCII := 0
	for _, n := range c.naans {
		switch n.NAAN {
		case "13030":
			cdl = n
		case "12148":
			bnf = n
		}
		if strings.ContainsFunc(n.NameNative+n.Name+n.Acronym, func(r rune) bool { return r > 127 }) {
			nonASCII++
		}
	}
	if cdl == nil || cdl.Name != "California Digital Library" || cdl.Acronym != "CDLIB" || cdl.Where != "http://n2t.net" ||
		cdl.Policy != "NR, OP, CC" || cdl.PolicyURL != "https://n2t.net/e/ark_ids.html" {
		t.Errorf("13030: %+v", cdl)
	}
	if bnf == nil || bnf.NameNative != "Bibliothèque nationale de France" || bnf.Name != "National Library of France" || bnf.Acronym != "BNF" {
		t.Errorf("12148: %+v", bnf)
	}
	if nonASCII != 223 {
		t.Errorf("%d who values not ASCII, want 223", nonASCII)
	}
	if last := c.naans[582]; last.NAAN != "58827" || last.Name != "Musée de l'Ecole de Nancy" || last.When.Format("2006.01.02") != "2020.01.29" {
		t.Errorf("last: %+v", last)
	}
}

func TestRealNAANRegistryJSON(t *testing.T) {
	t.Parallel()
	d := fixtures.SharedData(t)
	c := readFile(t, filepath.Join(d, "legacy-samples", "naan_registry_public_2023-05.json"), "")
	if len(c.naans) != 1081 || len(c.errs) != 0 || c.truncated != nil {
		t.Fatalf("2023: %d NAANs, %d errors", len(c.naans), len(c.errs))
	}
	n := c.naans[0]
	if n.NAAN != "12025" || n.Target != "http://www.nlm.nih.gov/$arkpid" || n.Where != "http://www.nlm.nih.gov" ||
		n.Acronym != "" || n.Source.Line != 2 || n.When == nil || !n.When.Equal(time.Date(2001, 3, 8, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("2023 first: %+v", n)
	}
	if _, off := n.When.Zone(); off != 0 {
		t.Errorf("zone offset %d", off)
	}

	c = readFile(t, filepath.Join(d, "naan_reg_public", "naan_records.json"), "")
	if len(c.naans) != 1432 || len(c.shoulders) != 368 || len(c.errs) != 0 || c.truncated != nil {
		t.Fatalf("2024: %d NAANs, %d shoulders, %d errors", len(c.naans), len(c.shoulders), len(c.errs))
	}
	var letters []string
	codes := map[int]int{}
	for _, n := range c.naans {
		if n.NAAN[0] < '0' || n.NAAN[0] > '9' {
			letters = append(letters, n.NAAN)
		}
		codes[n.RedirectCode]++
	}
	if strings.Join(letters, " ") != "b7280 b6071 b6078 b5060 b7272 b7291" {
		t.Errorf("letter NAANs %v", letters)
	}
	perNAAN := map[string]int{}
	notDigit := 0
	var w6 *ShoulderRecord
	for _, s := range c.shoulders {
		perNAAN[s.NAAN]++
		codes[s.RedirectCode]++
		if last := s.Shoulder[len(s.Shoulder)-1]; last < '0' || last > '9' {
			notDigit++
		}
		if s.Prefix == "99166/w6" {
			w6 = s
		}
	}
	if perNAAN["19153"] != 162 || perNAAN["13030"] != 18 || len(perNAAN) != 130 || notDigit != 15 {
		t.Errorf("19153: %d, 13030: %d, NAANs %d, non-digit shoulders %d", perNAAN["19153"], perNAAN["13030"], len(perNAAN), notDigit)
	}
	if codes[302] != 1799 || codes[303] != 1 {
		t.Errorf("http codes %v", codes)
	}
	if w6 == nil || w6.RedirectCode != 303 || w6.Where != "http://socialarchive.iath.virginia.edu" ||
		w6.Target != "http://socialarchive.iath.virginia.edu/ark:/${content}" || w6.Acronym != "SNACC" {
		t.Errorf("99166/w6: %+v", w6)
	}
	cdl := c.naans[3]
	if cdl.NAAN != "13030" || cdl.Target != "https://ezid.cdlib.org/ark:/${content}" || cdl.RedirectCode != 302 ||
		cdl.Where != "http://n2t.net" || cdl.Purpose != "unspecified" || cdl.Source.Line != 82 {
		t.Errorf("13030: %+v", cdl)
	}

	c = readFile(t, filepath.Join(d, "legacy-samples", "naan_magic_b5060.json"), "")
	if len(c.naans) != 1 || c.naans[0].NAAN != "b5060" || c.naans[0].TestIdentifier != "ark:/b5060/d8bc75" ||
		c.naans[0].Target != "https://doi.org/10.5060/${value}" || c.naans[0].Source.Line != 1 {
		t.Errorf("magic b5060: %+v", c.naans)
	}
	c = readFile(t, filepath.Join(d, "legacy-samples", "naan_magic_99166_w6.json"), "")
	if len(c.shoulders) != 1 || c.shoulders[0].Shoulder != "w6" || c.shoulders[0].RedirectCode != 303 {
		t.Errorf("magic w6: %+v", c.shoulders)
	}
}

// TestRealDetect: DetectFormat names every real file's format.
func TestRealDetect(t *testing.T) {
	t.Parallel()
	d := fixtures.SharedData(t)
	for file, want := range map[string]Format{
		"arklet/sample_noid_output.txt":                    N2TDump,
		"ezid/db.identifier.jsonl":                         EZIDDB,
		"ezid/db.shoulder.jsonl":                           EZIDDBShoulders,
		"ezid/ezidapp_shoulder.csv":                        ShoulderListEZIDCSV,
		"legacy-samples/n2t_master_shoulders.anvl.txt":     ShoulderListN2TANVL,
		"legacy-samples/naan_registry_public_2023-05.json": NAANJSON2023,
		"legacy-samples/naan_magic_b5060.json":             NAANJSON2024,
		"jkunze-naan/naan_registry.txt":                    NAANANVL,
		"naan_reg_public/naan_records.json":                NAANJSON2024,
		"naan_reg_public/shoulder-list.txt":                ShoulderListEZIDLog,
	} {
		head, err := os.ReadFile(filepath.Join(d, file))
		if err != nil {
			t.Fatal(err)
		}
		if len(head) > headBytes {
			head = head[:headBytes]
		}
		if got, err := DetectFormat(file, head); got != want || err != nil {
			t.Errorf("%s: detected %q (%v), want %s", file, got, err, want)
		}
	}
}
