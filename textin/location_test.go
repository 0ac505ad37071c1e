package textin

import "testing"

// TestLocationString: every form of a location, with and without a line and a record.
func TestLocationString(t *testing.T) {
	t.Parallel()
	cases := []struct {
		loc  Location
		want string
	}{
		{Location{"tate.jsonl.gz", 17, 17}, "tate.jsonl.gz:17 (record 17)"},
		{Location{"m.parquet", 0, 4}, "m.parquet (record 4)"},
		{Location{"m.csv", 1, 0}, "m.csv:1"},
		{Location{"m.csv", 0, 0}, "m.csv"},
	}
	for _, c := range cases {
		if got := c.loc.String(); got != c.want {
			t.Errorf("%#v.String() = %q, want %q", c.loc, got, c.want)
		}
	}
}
