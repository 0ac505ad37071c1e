package main

import (
	"slices"
	"strings"
	"testing"
)

const testTable = "| path | owns | may import (ours) | its tests may also import (ours) |\n" +
	"|---|---|---|---|\n" +
	"| `a` | a leaf | nothing | nothing |\n" +
	"| `b` | b | `a` | `c` |\n" +
	"| `c` | c | anything but `d` | nothing |\n" +
	"| `gone` | a package that was removed | nothing | nothing |\n"

// TestCheck: every arrow the table does not allow is named, test imports against both cells,
// and so are a package without a row and a row without a package.
func TestCheck(t *testing.T) {
	t.Parallel()
	rules, err := parseTable(strings.NewReader(testTable))
	if err != nil {
		t.Fatal(err)
	}
	got := check(rules, []pkg{
		{path: "a"},
		{path: "b", code: []string{"a", "c"}, tests: []string{"a", "b", "c", "d"}},
		{path: "c", code: []string{"a", "b", "d"}},
		{path: "new", code: []string{"a"}},
	})
	want := []string{
		"b -> c: not in its row of docs/packages.md",
		"b -> d (in its tests): not in its row of docs/packages.md",
		"c -> d: not in its row of docs/packages.md",
		"gone: docs/packages.md has a row for it, but there is no such package",
		"new: no row in docs/packages.md",
	}
	if !slices.Equal(got, want) {
		t.Errorf("check =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestParseTableRefusesAnUnreadableCell: a cell that is neither a list nor one of the words is an
// error naming the line and the package, never read as "nothing".
func TestParseTableRefusesAnUnreadableCell(t *testing.T) {
	t.Parallel()
	_, err := parseTable(strings.NewReader(testTable + "| `e` | e | ark and ledger | nothing |\n"))
	if err == nil || !strings.Contains(err.Error(), "line 7 (e)") {
		t.Errorf("parseTable = %v, want an error for line 7 (e)", err)
	}
}
