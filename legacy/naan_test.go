package legacy

import (
	"strings"
	"testing"
)

// registryANVL is a synthetic registry in ANVL (3 blocks; the
// second has an impossible date on purpose) plus a NAAN with a leading zero
// and a betanumeric one, and a block in the private form.
const registryANVL = `erc:
who:    Example Registry
when:   2020.01.29

# preamble
naa:
who:    Example Museum of Photography (=) EMP
what:   12345
when:   2019.06.01
where:  https://ark.example.org
how:    NP | NR, OP, CC | 2019 |

naa:
who:    Musée d'exemple (=) Example Museum (=) MEX
what:   99999
when:   2021.02.30
where:  303 https://collections.example.fr/ark:$id
how:    FP | (:unkn) unknown | 2021 | https://collections.example.fr/policy

naa:
who:    Example Museum of Photography (=) EMP
what:   ark:/12345/x6
when:   2020.01.15
where:  https://photos.example.org/resolve?ark=
how:    NP | NR | 2020 |

naa:
who:    Zero Institute
what:   012345
when:   2022.02.02
where:  303 https://zero.example.org/ark:$id
how:    NP | NR |  |
!why:   EZID ARK
!contact: Doe, Jane (admin) ||| jane@example.org | 555

naa:
who:    Shadow (=) SH
what:   b5060
where:  https://doi.example.org/
`

func TestNAANANVL(t *testing.T) {
	t.Parallel()
	c := readString(t, registryANVL, "")
	if got := strings.Join(c.order, ""); got != "NESNN" {
		t.Fatalf("order %s: %v", got, c.errs)
	}
	n := c.naans[0]
	if n.NAAN != "12345" || n.Name != "Example Museum of Photography" || n.Acronym != "EMP" || n.Where != "https://ark.example.org" ||
		n.When.Format("2006-01-02") != "2019-06-01" || n.OrgType != "NP" || n.Policy != "NR, OP, CC" || n.Tenure != "2019" ||
		n.Source.Line != 6 || n.Source.Record != 1 {
		t.Errorf("1: %+v", n)
	}
	if e := c.errs[0]; e.Field != "when" || e.ID != "99999" || e.Loc.Line != 13 || e.Loc.Record != 2 || !strings.Contains(e.Err.Error(), "2021.02.30") {
		t.Errorf("impossible date: %v", e)
	}
	s := c.shoulders[0]
	if s.Prefix != "ark:/12345/x6" || s.NAAN != "12345" || s.Shoulder != "x6" || s.Where != "https://photos.example.org/resolve?ark=" ||
		s.Name != "Example Museum of Photography" || s.Date.Format("2006.01.02") != "2020.01.15" || s.Metadata["policy"] != "NR" {
		t.Errorf("shoulder block: %+v", s)
	}
	// NAAN kept as a string — leading zero and letters intact.
	z := c.naans[1]
	if z.NAAN != "012345" || z.RedirectCode != 303 || z.Where != "https://zero.example.org/ark:$id" || z.Tenure != "" ||
		z.Metadata["!why"] != "EZID ARK" || z.Metadata["!contact"] != "Doe, Jane (admin) ||| jane@example.org | 555" {
		t.Errorf("leading zero: %+v", z)
	}
	if b := c.naans[2]; b.NAAN != "b5060" || b.When != nil || b.Acronym != "SH" {
		t.Errorf("betanumeric: %+v", b)
	}
}

func TestNAANJSON(t *testing.T) {
	t.Parallel()
	const y2023 = `{"12345": {"what": "12345", "where": "https://ark.example.org", "target": "https://ark.example.org/$arkpid", "when": "2019-06-01T00:00:00+00:00", "who": {"name": "Example Museum of Photography", "acronym": "EMP"}, "na_policy": {"orgtype": "NP", "policy": "NR, OP, CC", "tenure": "2019", "policy_url": null}},
 "012345": {"what": "012345", "where": "https://z.example.org", "target": "https://z.example.org/$pid", "when": "2020-01-01T00:00:00+00:00", "who": {"name": "Z", "acronym": null}, "na_policy": {"orgtype": "NP", "policy": "NR", "tenure": 2020, "policy_url": null}},
 "99999": {"what": "99998", "where": "x", "target": "y", "when": "", "who": {"name": "M"}, "na_policy": {}}}`
	c := readString(t, y2023, "")
	if got := strings.Join(c.order, ""); got != "NNE" {
		t.Fatalf("2023 order %s %v", got, c.errs)
	}
	if n := c.naans[0]; n.NAAN != "12345" || n.Target != "https://ark.example.org/$arkpid" || n.Acronym != "EMP" || n.PolicyURL != "" || n.Source.Line != 1 {
		t.Errorf("2023: %+v", n)
	}
	if n := c.naans[1]; n.NAAN != "012345" || n.Tenure != "2020" || n.Source.Line != 2 {
		t.Errorf("2023 numeric tenure / leading zero: %+v", n)
	}
	if e := c.errs[0]; e.Field != "what" || e.Loc.Line != 3 {
		t.Errorf("key/what mismatch: %v", e)
	}
	c = readString(t, y2023[:strings.Index(y2023, `"012345": {`)+30], NAANJSON2023)
	if len(c.naans) != 1 || c.truncated == nil || c.truncated.Loc.Record != 2 {
		t.Errorf("2023 cut: %d, %v", len(c.naans), c.truncated)
	}

	const y2024 = `{"metadata": {"version": "1.0"}, "data": [
{"shoulder": "x6", "naan": "12345", "what": "12345/x6", "who": {"name": "Example Museum of Photography", "name_native": null, "acronym": "EMP"}, "where": "https://photos.example.org/resolve?ark=", "target": {"url": "https://photos.example.org/resolve?ark=${pid}", "http_code": 302}, "when": "2020-01-15T00:00:00+00:00", "na_policy": {"orgtype": "NP", "policy": "NR", "tenure": "2020", "policy_url": null}, "test_identifier": null, "rtype": "PublicNAANShoulder"},
{"what": "12345", "where": "https://ark.example.org", "target": {"url": "https://ark.example.org/ark:/${content}", "http_code": 302}, "when": "2019-06-01T00:00:00+00:00", "who": {"name": "Example Museum of Photography", "name_native": "Musée", "acronym": "EMP"}, "na_policy": {"orgtype": "NP", "policy": "NR, OP, CC", "tenure": "2019", "policy_url": null}, "test_identifier": null, "service_provider": null, "purpose": "unspecified", "rtype": "PublicNAAN"},
{"what": "1", "rtype": "Other"}
]}`
	c = readString(t, y2024, "")
	if got := strings.Join(c.order, ""); got != "SNE" {
		t.Fatalf("2024 order %s %v", got, c.errs)
	}
	if s := c.shoulders[0]; s.Prefix != "12345/x6" || s.Shoulder != "x6" || s.NAAN != "12345" || s.RedirectCode != 302 ||
		s.Target != "https://photos.example.org/resolve?ark=${pid}" || s.Source.Line != 2 {
		t.Errorf("2024 shoulder: %+v", s)
	}
	if n := c.naans[0]; n.NameNative != "Musée" || n.Target != "https://ark.example.org/ark:/${content}" || n.Purpose != "unspecified" || n.Source.Line != 3 {
		t.Errorf("2024 NAAN: %+v", n)
	}
	if e := c.errs[0]; e.Field != "rtype" || e.Loc.Line != 4 {
		t.Errorf("rtype: %v", e)
	}
	cut := y2024[:strings.Index(y2024, `"rtype": "PublicNAAN"`)]
	c = readString(t, cut, NAANJSON2024)
	if len(c.shoulders) != 1 || len(c.naans) != 0 || c.truncated == nil || c.truncated.Loc.Line != 3 || c.truncated.Loc.Record != 2 {
		t.Errorf("2024 cut: %v", c.truncated)
	}
	// a bare array of records
	c = readString(t, "["+strings.TrimSuffix(strings.SplitN(y2024, "\n", 3)[1], ",")+"]", NAANJSON2024)
	if len(c.shoulders) != 1 {
		t.Errorf("bare array: %+v", c)
	}
}

func TestShoulderLists(t *testing.T) {
	t.Parallel()
	c := readString(t, "ark:/87940/m4,UCSB Writing Program,https://n2t.net/a/ezid/m/ark/87940/m4\n"+
		"ark:/87286/,Biocode Commons (UCB only),\"\"\ndoi:10.7939/DVN,\"Alberta, Univ.\",\nbad,row\n", ShoulderListEZIDCSV)
	if len(c.shoulders) != 3 || len(c.errs) != 1 || c.errs[0].Loc.Line != 4 {
		t.Fatalf("csv: %+v %v", c.shoulders, c.errs)
	}
	if s := c.shoulders[1]; s.NAAN != "87286" || s.Shoulder != "" || s.Minter != "" {
		t.Errorf("NAAN-wide: %+v", s)
	}
	if s := c.shoulders[2]; s.Kind != "doi" || s.NAAN != "10.7939" || s.Shoulder != "DVN" || s.Name != "Alberta, Univ." {
		t.Errorf("doi: %+v", s)
	}
	c = readString(t, "# c\n:: ark:/13030/p\n# redirects\ntype: shoulder\nis_supershoulder: true\nname: ?2?\nminter:\n"+
		"date: 2014.02.31\n\n:: ark:/81986/s6.caida\ntype: shoulder\n", ShoulderListN2TANVL)
	if len(c.shoulders) != 1 || len(c.errs) != 1 || c.errs[0].Field != "date" || c.errs[0].Loc.Line != 2 {
		t.Fatalf("n2t: %+v %v", c.shoulders, c.errs)
	}
	if s := c.shoulders[0]; s.Shoulder != "s6.caida" || s.Source.Record != 2 {
		t.Errorf("dotted shoulder: %+v", s)
	}
}
