package pipeline

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/ulikunitz/xz"

	"github.com/arkhe-ledger/arkhe/textin"
)

// readChanges reads every row of the change manifest at path.
func readChanges(t *testing.T, path string, m map[string]string) ([]ChangeRow, []*textin.RowError) {
	t.Helper()
	r, err := OpenChangeManifest(path, m, "ark", "request_id")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var rows []ChangeRow
	var bad []*textin.RowError
	for {
		row, rerr, err := r.Next()
		if errors.Is(err, io.EOF) {
			return rows, bad
		}
		if err != nil {
			t.Fatal(err)
		}
		if rerr != nil {
			bad = append(bad, rerr)
			continue
		}
		rows = append(rows, row)
	}
}

// TestChangeManifestFormats: the same three change rows as CSV, JSON Lines (plain, .gz, .xz)
// and Parquet read as the same columns, where a present empty value stays present (it empties
// the field) and an absent column is absent; --map renames; line numbers are the file's.
func TestChangeManifestFormats(t *testing.T) {
	t.Parallel()
	csvText := "acno,url,what\nA1,https://new.example.org/1,\nA2,,Two\n\nA3,https://new.example.org/3,Three\n"
	jsonText := `{"acno":"A1","url":"https://new.example.org/1","what":""}` + "\n" +
		`{"acno":"A2","url":null,"what":"Two"}` + "\n\n" +
		`{"acno":"A3","url":"https://new.example.org/3","what":"Three"}` + "\n"
	var xzb bytes.Buffer
	w, err := xz.NewWriter(&xzb)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(w, csvText); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	type pqRow struct {
		Acno string  `parquet:"acno"`
		URL  *string `parquet:"url,optional"`
		What string  `parquet:"what"`
	}
	u1, u3 := "https://new.example.org/1", "https://new.example.org/3"
	files := map[string]string{
		"csv":      writeTempBytes(t, "c.csv", []byte(csvText)),
		"csv.xz":   writeTempBytes(t, "c.csv.xz", xzb.Bytes()),
		"jsonl":    writeTempBytes(t, "c.jsonl", []byte(jsonText)),
		"jsonl.gz": writeTempBytes(t, "c.jsonl.gz", gzipBytes(t, jsonText)),
		"parquet":  writeParquet(t, "c.parquet", []pqRow{{"A1", &u1, ""}, {"A2", nil, "Two"}, {"A3", &u3, "Three"}}),
	}
	m := map[string]string{"request_id": "acno"}
	for name, p := range files {
		rows, bad := readChanges(t, p, m)
		if len(rows) != 3 || len(bad) != 0 {
			t.Fatalf("%s: %d rows, rejects %v", name, len(rows), bad)
		}
		for i, want := range []map[string]string{
			{"request_id": "A1", "url": u1, "what": ""},
			{"request_id": "A2", "url": "", "what": "Two"},
			{"request_id": "A3", "url": u3, "what": "Three"},
		} {
			got := rows[i].Cols
			if len(got) != len(want) {
				t.Errorf("%s row %d: %v, want %v", name, i+1, got, want)
			}
			for k, v := range want {
				if g, ok := got[k]; !ok || g != v {
					t.Errorf("%s row %d: %s = %q (present %v), want %q", name, i+1, k, g, ok, v)
				}
			}
		}
		wantLine := map[string]int{"csv": 5, "csv.xz": 5, "jsonl": 4, "jsonl.gz": 4, "parquet": 0}[name]
		if rows[2].Loc.Line != wantLine || rows[2].Loc.Record != 3 {
			t.Errorf("%s: the third row is at %+v, want line %d, record 3", name, rows[2].Loc, wantLine)
		}
	}
}

// TestChangeManifestBadRows: a broken CSV record, a bad JSON line and a JSON value that is no
// string are rejects naming their line; the rows around them are read; a manifest without a
// column naming the ARK is refused at the header.
func TestChangeManifestBadRows(t *testing.T) {
	t.Parallel()
	p := writeTempBytes(t, "b.csv", []byte("ark,url\nark:/99999/x91,https://a.example.org/\nark:/99999/x92,\"https://b\"x\nark:/99999/x93,https://c.example.org/\n"))
	rows, bad := readChanges(t, p, nil)
	if len(rows) != 2 || len(bad) != 1 || bad[0].Loc.Line != 3 || rows[1].Cols["ark"] != "ark:/99999/x93" {
		t.Fatalf("CSV: rows %v, rejects %v", rows, bad)
	}
	p = writeTempBytes(t, "b.jsonl", []byte(`{"ark":"ark:/99999/x91","url":"https://a.example.org/"}`+"\n{\"ark\":\n"+`{"ark":"ark:/99999/x92","url":7}`+"\n"+`{"ark":"ark:/99999/x93"}`+"\n"))
	rows, bad = readChanges(t, p, nil)
	if len(rows) != 2 || len(bad) != 2 || bad[0].Loc.Line != 2 || bad[1].Loc.Line != 3 || bad[1].Field != "url" {
		t.Fatalf("JSON Lines: rows %v, rejects %v", rows, bad)
	}
	p = writeTempBytes(t, "h.csv", []byte("id,url\nx,https://a.example.org/\n"))
	if _, err := OpenChangeManifest(p, nil, "ark", "request_id"); !errors.Is(err, ErrMissingColumn) {
		t.Fatalf("no ARK column: %v", err)
	}
	if _, err := OpenChangeManifest(writeTempBytes(t, "x.txt", []byte("ark\n")), nil); !errors.Is(err, ErrUnknownFormat) {
		t.Fatalf("a .txt manifest: %v", err)
	}
}
