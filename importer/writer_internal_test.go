package importer

import (
	"strconv"
	"testing"
)

// TestImportKeyFilter: every added key is found (a miss would insert a duplicate unchecked), and
// keys never added are found rarely: 100,000 keys in the smallest filter (2^20 bits) wrongly match
// about 1 other key in 100.
func TestImportKeyFilter(t *testing.T) {
	t.Parallel()
	f := newKeyFilter(0)
	if got := len(f.words) * 64; got != 1<<20 {
		t.Fatalf("%d bits, want 2^20", got)
	}
	for i := range 100_000 {
		f.add("12345/x6" + strconv.Itoa(i))
	}
	for i := range 100_000 {
		if !f.mayContain("12345/x6" + strconv.Itoa(i)) {
			t.Fatalf("added key %d not found", i)
		}
	}
	wrong := 0
	for i := range 100_000 {
		if f.mayContain("12345/y7" + strconv.Itoa(i)) {
			wrong++
		}
	}
	if wrong == 0 || wrong > 3_000 {
		t.Fatalf("%d of 100,000 keys never added match; want about 1,000", wrong)
	}
	if testing.Verbose() {
		t.Logf("%d of 100,000 keys never added match", wrong)
	}
	if big := newKeyFilter(10 << 30); len(big.words)*64 != 1<<28 {
		t.Fatalf("a 10 GB file gets %d bits, want the 2^28 cap", len(big.words)*64)
	}
}
