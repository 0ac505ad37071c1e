package textin

import "testing"

// TestJSONNumberEnd: the RFC 8259 §6 number grammar, with the offset of the first byte that
// breaks it, for both instantiations.
func TestJSONNumberEnd(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in  string
		end int
		ok  bool
	}{
		{"0", 1, true}, {"-0", 2, true}, {"12,", 2, true}, {"1.5e+10}", 7, true}, {"2E-3", 4, true},
		{"-", 1, false}, {"01", 1, true}, {"1.", 2, false}, {"1.e5", 2, false}, {"1e", 2, false},
		{"1e+", 3, false}, {"+1", 0, false}, {".5", 0, false}, {"-a", 1, false},
	} {
		end, ok := JSONNumberEnd(c.in, 0)
		bend, bok := JSONNumberEnd([]byte(c.in), 0)
		if end != c.end || ok != c.ok || bend != end || bok != ok {
			t.Errorf("JSONNumberEnd(%q) = %d, %v (bytes: %d, %v), want %d, %v", c.in, end, ok, bend, bok, c.end, c.ok)
		}
	}
	if got := JSONSpaceEnd(" \t\r\n x", 0); got != 5 {
		t.Errorf("JSONSpaceEnd = %d, want 5", got)
	}
	if got := JSONSpaceEnd([]byte("  "), 1); got != 2 {
		t.Errorf("JSONSpaceEnd at the end = %d, want 2", got)
	}
}
