package pipeline

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
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
			if st, err := os.Stat(path); err != nil || r.Position() != st.Size() {
				t.Errorf("%s: position %d at the end, want the file's size (%v)", path, r.Position(), err)
			}
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

// TestChangeManifestFieldCount: a CSV row with more or fewer fields than the header is a reject
// naming the file, the line and both counts; the rows around it are read.
func TestChangeManifestFieldCount(t *testing.T) {
	t.Parallel()
	p := writeTempBytes(t, "w.csv", []byte("ark,url\nark:/99999/x91,https://a.example.org/,extra\nark:/99999/x92\nark:/99999/x93,https://c.example.org/\n"))
	rows, bad := readChanges(t, p, nil)
	if len(rows) != 1 || rows[0].Cols["ark"] != "ark:/99999/x93" || len(bad) != 2 {
		t.Fatalf("rows %v, rejects %v", rows, bad)
	}
	for i, want := range []string{"has 3 fields, header has 2", "has 1 fields, header has 2"} {
		if bad[i].Loc.File != p || bad[i].Loc.Line != i+2 || bad[i].Reason != want {
			t.Errorf("reject %d: %+v, want line %d, %q", i, bad[i], i+2, want)
		}
	}
}

// TestChangeManifestBOM: a UTF-8 BOM at the start of a CSV (before a quoted header too) or JSON
// Lines manifest is dropped, as the mint readers drop it; the first column is "ark".
func TestChangeManifestBOM(t *testing.T) {
	t.Parallel()
	for name, text := range map[string]string{
		"bom.csv":   "\ufeffark,url\nark:/99999/x91,https://a.example.org/\n",
		"bomq.csv":  "\ufeff\"ark\",url\nark:/99999/x91,https://a.example.org/\n",
		"bom.jsonl": "\ufeff{\"ark\":\"ark:/99999/x91\",\"url\":\"https://a.example.org/\"}\n",
	} {
		rows, bad := readChanges(t, writeTempBytes(t, name, []byte(text)), nil)
		if len(rows) != 1 || len(bad) != 0 || rows[0].Cols["ark"] != "ark:/99999/x91" || len(rows[0].Cols) != 2 {
			t.Errorf("%s: rows %v, rejects %v", name, rows, bad)
		}
	}
}

// TestChangeManifestInvalidUTF8: invalid UTF-8 in a value is a reject naming the line and the
// field, never replaced by U+FFFD; so is a \u escape that is a lone surrogate.
func TestChangeManifestInvalidUTF8(t *testing.T) {
	t.Parallel()
	p := writeTempBytes(t, "u.csv", []byte("ark,what\nark:/99999/x91,caf\xe9\nark:/99999/x92,ok\n"))
	rows, bad := readChanges(t, p, nil)
	if len(rows) != 1 || rows[0].Cols["what"] != "ok" || len(bad) != 1 || bad[0].Loc.Line != 2 || bad[0].Field != "what" ||
		bad[0].Reason != "invalid UTF-8 at octet 4" {
		t.Fatalf("CSV: rows %v, rejects %v", rows, bad)
	}
	p = writeTempBytes(t, "u.jsonl", []byte("{\"ark\":\"ark:/99999/x91\",\"what\":\"caf\xe9\"}\n{\"ark\":\"ark:/99999/x92\",\"what\":\"\\ud800\"}\n{\"ark\":\"ark:/99999/x93\",\"what\":\"ok\"}\n"))
	rows, bad = readChanges(t, p, nil)
	if len(rows) != 1 || rows[0].Cols["what"] != "ok" || len(bad) != 2 {
		t.Fatalf("JSON: rows %v, rejects %v", rows, bad)
	}
	if bad[0].Loc.Line != 1 || bad[0].Field != "what" || bad[0].Reason != "invalid UTF-8 at octet 4" {
		t.Errorf("JSON raw byte: %+v", bad[0])
	}
	if bad[1].Loc.Line != 2 || bad[1].Field != "what" || !strings.Contains(bad[1].Reason, "lone UTF-16 surrogate") {
		t.Errorf("JSON lone surrogate: %+v", bad[1])
	}
	p = writeParquet(t, "u.parquet", []changeWhat{{ARK: "ark:/99999/x91", What: "caf\xe9"}, {ARK: "ark:/99999/x92", What: "ok"}})
	rows, bad = readChanges(t, p, nil)
	if len(rows) != 1 || rows[0].Cols["what"] != "ok" || len(bad) != 1 || bad[0].Loc.Record != 1 || bad[0].Field != "what" ||
		bad[0].Reason != "invalid UTF-8 at octet 4" {
		t.Fatalf("Parquet: rows %v, rejects %v", rows, bad)
	}
}

type changeWhat struct {
	ARK  string `parquet:"ark"`
	What string `parquet:"what"`
}

// TestChangeManifestDuplicateKey: a JSON line giving a key twice is a reject naming the key, as
// the mint reader refuses it (json.Unmarshal would keep the last value).
func TestChangeManifestDuplicateKey(t *testing.T) {
	t.Parallel()
	p := writeTempBytes(t, "d.jsonl", []byte(`{"ark":"ark:/99999/x91","url":"https://a.example.org/","url":"https://b.example.org/"}`+"\n"+`{"ark":"ark:/99999/x92"}`+"\n"))
	rows, bad := readChanges(t, p, nil)
	if len(rows) != 1 || len(bad) != 1 || bad[0].Loc.Line != 1 || bad[0].Field != "url" || bad[0].Reason != `key "url" given twice` {
		t.Fatalf("rows %v, rejects %v", rows, bad)
	}
}

// TestChangeManifestTruncatedGzip: a gzip stream cut short yields its whole rows, then one
// reject at the line where it stops saying the file is truncated, then io.EOF.
func TestChangeManifestTruncatedGzip(t *testing.T) {
	t.Parallel()
	for _, ext := range []string{"csv", "jsonl"} {
		var text bytes.Buffer
		if ext == "csv" {
			text.WriteString("ark,url\n")
		}
		for i := range 2000 {
			ark, url := "ark:/99999/x9"+strconv.Itoa(i), "https://a.example.org/"+strings.Repeat("p", i%13)
			if ext == "csv" {
				text.WriteString(ark + "," + url + "\n")
			} else {
				text.WriteString(`{"ark":"` + ark + `","url":"` + url + `"}` + "\n")
			}
		}
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		if _, err := zw.Write(text.Bytes()); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		p := writeTempBytes(t, "t."+ext+".gz", gz.Bytes()[:gz.Len()/2])
		r, err := OpenChangeManifest(p, nil, "ark")
		if err != nil {
			t.Fatal(err)
		}
		first := 1 // the first data line
		if ext == "csv" {
			first = 2
		}
		var n int
		var bad []*textin.RowError
		for {
			row, rerr, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: fatal after %d rows: %v", ext, n, err)
			}
			if rerr != nil {
				bad = append(bad, rerr)
				continue
			}
			if len(bad) != 0 {
				t.Fatalf("%s: row %+v after the reject", ext, row)
			}
			n++
		}
		_ = r.Close()
		if n == 0 || n >= 2000 || len(bad) != 1 || bad[0].Loc.File != p || bad[0].Loc.Line != first+n || bad[0].Loc.Record != n+1 ||
			!strings.Contains(bad[0].Reason, "the file is truncated") {
			t.Fatalf("%s: %d rows, rejects %v", ext, n, bad)
		}
	}
}

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

// TestChangeManifestDuplicateColumn: a CSV header naming a column twice, or two names that stand
// for one column under the mapping, is refused at line 1 naming both positions: which value would
// be applied cannot be known.
func TestChangeManifestDuplicateColumn(t *testing.T) {
	t.Parallel()
	p := writeTempBytes(t, "d.csv", []byte("ark,url,url\nark:/99999/x91,https://a.example.org/,https://b.example.org/\n"))
	_, err := OpenChangeManifest(p, nil, "ark")
	var me *ManifestError
	if !errors.As(err, &me) || !errors.Is(err, ErrDuplicateColumn) || me.Loc.Line != 1 || !strings.Contains(err.Error(), "columns 2 and 3 both give url") {
		t.Fatalf("url twice: %v", err)
	}
	p = writeTempBytes(t, "m.csv", []byte("ark,new_url,url\nark:/99999/x91,https://a.example.org/,https://b.example.org/\n"))
	if _, err := OpenChangeManifest(p, map[string]string{"url": "new_url"}, "ark"); !errors.Is(err, ErrDuplicateColumn) || !strings.Contains(err.Error(), "columns 2 and 3 both give url") {
		t.Fatalf("new_url mapped to url beside url: %v", err)
	}
}
