package report

import "testing"

// TestTimestampLayoutArguments: the arguments of a timestamp tag map to the unit's text layout,
// and anything not of the form "(unit)" or "(unit:utc)" is refused, an unopened parenthesis too.
func TestTimestampLayoutArguments(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]string{"": layoutMillis, "()": layoutMillis,
		"(millisecond)": layoutMillis, "(microsecond)": layoutMicros, "(nanosecond:utc)": layoutNanos} {
		if got, err := timestampLayout(args); err != nil || got != want {
			t.Errorf("timestampLayout(%q) = %q, %v; want %q", args, got, err, want)
		}
	}
	for _, args := range []string{"microsecond)", "(microsecond", "(microsecond:local)", "(fortnight)"} {
		if got, err := timestampLayout(args); err == nil {
			t.Errorf("timestampLayout(%q) = %q, want an error", args, got)
		}
	}
}
