package pipeline

import (
	"os"
	"strings"
	"testing"
)

type changeUnsigned struct {
	ARK  string `parquet:"ark"`
	Size uint32 `parquet:"size"`
}

// TestChangeManifestParquetStrict: unsigned integers read as unsigned, a bad footer is refused
// as the mint reader refuses it.
func TestChangeManifestParquetStrict(t *testing.T) {
	t.Parallel()
	p := writeParquet(t, "u.parquet", []changeUnsigned{{ARK: "ark:/99999/x91", Size: 4000000000}})
	rows, bad := readChanges(t, p, nil)
	if len(rows) != 1 || len(bad) != 0 || rows[0].Cols["size"] != "4000000000" {
		t.Fatalf("unsigned: rows %v, rejects %v", rows, bad)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-8], b[len(b)-7], b[len(b)-6], b[len(b)-5] = 0xff, 0xff, 0xff, 0x7f
	_, err = OpenChangeManifest(writeTempBytes(t, "f.parquet", b), nil, "ark")
	if err == nil || !strings.Contains(err.Error(), "footer length") {
		t.Fatalf("bad footer length: %v", err)
	}
	_, err = OpenChangeManifest(writeTempBytes(t, "g.parquet", b[:len(b)-3]), nil, "ark")
	if err == nil || !strings.Contains(err.Error(), "does not end with PAR1") {
		t.Fatalf("no footer: %v", err)
	}
}
