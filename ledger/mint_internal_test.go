package ledger

import "testing"

func TestCopyLine(t *testing.T) {
	t.Parallel()
	for where, want := range map[string]int{
		"COPY ark, line 3, column erc_what":                   3,
		"COPY ark, line 100000, column payload_digest":        100000,
		"COPY ark, line 12, column url: \"https://x\"":        12,
		"PL/pgSQL function arkhe_ark_reach() line 5 at RAISE": 0,
		"":                          0,
		"COPY ark, line , column x": 0,
	} {
		if got := copyLine(where); got != want {
			t.Errorf("copyLine(%q) = %d, want %d", where, got, want)
		}
	}
}

func TestExpectedCollisions(t *testing.T) {
	t.Parallel()
	// 100k draws against 10 million ARKs with 8-character blades collide about twice,
	// against 100 million about twenty times
	if e := ExpectedCollisions(100_000, 10_000_000, 8); e < 1.9 || e > 2.1 {
		t.Errorf("10 million: %.2f", e)
	}
	if e := ExpectedCollisions(100_000, 100_000_000, 8); e < 19 || e > 21 {
		t.Errorf("100 million: %.2f", e)
	}
}
