package pipeline

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/arkhe-ledger/arkhe/textin"
)

// readMintMap reads every row of the mint map at path, the good ones and the row errors.
func readMintMap(t *testing.T, path string) ([]MintMapEntry, []*textin.RowError) {
	t.Helper()
	r, err := OpenMintMap(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var rows []MintMapEntry
	var bad []*textin.RowError
	for {
		e, err := r.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return rows, bad
		}
		if re, ok := textin.AsRowError(err); ok {
			bad = append(bad, re)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, e)
	}
}

// TestOpenMintMapRoundTrip writes mint maps with CreateMintMap in every format and reads them
// back with OpenMintMap: the same rows, payload included, and each row's Record has the payload
// digest of the manifest row it stands for.
func TestOpenMintMapRoundTrip(t *testing.T) {
	t.Parallel()
	rows := mintMapRows()[:1000]
	for _, ext := range []string{".csv", ".jsonl", ".parquet"} {
		path := filepath.Join(t.TempDir(), "m"+ext)
		writeMintMap(t, path, rows)
		got, bad := readMintMap(t, path)
		if len(bad) > 0 || len(got) != len(rows) {
			t.Fatalf("%s: %d rows, %d bad (%v), want %d", ext, len(got), len(bad), bad, len(rows))
		}
		for i, e := range got {
			if !e.PayloadKnown || !reflect.DeepEqual(e.MintMapRow, rows[i]) || e.Source.File != path || e.Source.Record != i+1 {
				t.Fatalf("%s: row %d = %+v, want %+v", ext, i+1, e, rows[i])
			}
		}
		want := Record{}
		want.Set(FieldRequestID, rows[0].RequestID)
		want.Set(FieldURL, *rows[0].URL)
		want.Set(FieldWho, *rows[0].Who)
		want.Set(FieldWhat, *rows[0].What)
		want.Set(FieldWhen, *rows[0].When)
		want.Set(FieldCommitment, *rows[0].Commitment)
		rec := got[0].Record()
		if PayloadDigest(&rec) != PayloadDigest(&want) || rec.Has != want.Has {
			t.Errorf("%s: the first row's record %+v, want %+v", ext, rec, want)
		}
		if rec := got[1].Record(); rec.Has != HasRequestID|HasWhat {
			t.Errorf("%s: the second row's record has %b, want request_id and what", ext, rec.Has)
		}
	}
}

// TestOpenMintMapOldAndBad reads a mint map of the three first columns (written before the
// payload was), and bad rows and files: errors name the file, line and field.
func TestOpenMintMapOldAndBad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old := filepath.Join(dir, "old.csv")
	write := func(path, s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(old, "request_id,ark,status\nr1,ark:99999/x9a,minted\nr2,ark:99999/x9b,replayed\n")
	rows, bad := readMintMap(t, old)
	if len(bad) > 0 || len(rows) != 2 || rows[0].PayloadKnown || rows[0].URL != nil || rows[1].ARK != "ark:99999/x9b" || rows[1].Source.Line != 3 {
		t.Errorf("3-column CSV map: %+v %v", rows, bad)
	}
	oldJSON := filepath.Join(dir, "old.jsonl")
	write(oldJSON, `{"request_id":"r1","ark":"ark:99999/x9a","status":"minted"}`+"\n")
	if rows, bad := readMintMap(t, oldJSON); len(bad) > 0 || len(rows) != 1 || rows[0].PayloadKnown {
		t.Errorf("3-key JSON Lines map: %+v %v", rows, bad)
	}
	newJSON := filepath.Join(dir, "new.jsonl")
	write(newJSON, `{"request_id":"r1","ark":"ark:99999/x9a","status":"minted","url":null,"who":"w","what":null,"when":null,"commitment":null}`+"\n")
	if rows, bad := readMintMap(t, newJSON); len(bad) > 0 || len(rows) != 1 || !rows[0].PayloadKnown || rows[0].URL != nil || cell(rows[0].Who) != "w" {
		t.Errorf("JSON Lines map with a payload: %+v %v", rows, bad)
	}

	badCSV := filepath.Join(dir, "bad.csv")
	write(badCSV, "request_id,ark,status,url,who,what,when,commitment\n"+
		"r1,ark:99999/x9a,minted,https://example.org/,,,,\n"+
		",ark:99999/x9b,minted,,,,,\n"+
		"r3,,minted,,,,,\n"+
		"r4,ark:99999/x9d,new,,,,,\n"+
		"r5,99999/x9e junk,minted,,,,,\n"+
		"r6,ark:99999/x9f,\n"+
		"r7,ark:99999/x9g,minted,,,,,\n")
	rows, bad = readMintMap(t, badCSV)
	if len(rows) != 2 || rows[0].RequestID != "r1" || cell(rows[0].URL) != "https://example.org/" || rows[1].RequestID != "r7" {
		t.Errorf("good rows of the bad map: %+v", rows)
	}
	want := []struct {
		line  int
		field string
	}{{3, "request_id"}, {4, "ark"}, {5, "status"}, {6, "ark"}, {7, ""}}
	if len(bad) != len(want) {
		t.Fatalf("bad rows: %v, want %d", bad, len(want))
	}
	for i, w := range want {
		if bad[i].Loc.File != badCSV || bad[i].Loc.Line != w.line || bad[i].Field != w.field {
			t.Errorf("bad row %d: %v (line %d, field %q), want line %d field %q", i, bad[i], bad[i].Loc.Line, bad[i].Field, w.line, w.field)
		}
	}

	noStatus := filepath.Join(dir, "nostatus.csv")
	write(noStatus, "request_id,ark\nr1,ark:99999/x9a\n")
	_, err := OpenMintMap(noStatus)
	var me *ManifestError
	if !errors.As(err, &me) || !errors.Is(err, ErrMissingColumn) || !strings.Contains(err.Error(), noStatus) || !strings.Contains(err.Error(), "status") {
		t.Errorf("map without a status column: %v", err)
	}
	if _, err := OpenMintMap(filepath.Join(dir, "m.xlsx")); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("xlsx: %v", err)
	}
}

// BenchmarkMintMap writes and reads back mint maps of 100,000 rows in each format, with no
// payload and with a Tate-like one (a target, an artist, a title, a date), reporting rows/s:
// what recording the payload costs a mint's output, and what a recovery reads.
func BenchmarkMintMap(b *testing.B) {
	const n = 100_000
	url := "http://www.tate.org.uk/art/artworks/blake-a-figure-bowing-before-a-seated-old-man-a00001"
	who, what, when := "Robert Blake", "A Figure Bowing before a Seated Old Man with his Arm Outstretched in Benediction", "date not known"
	for _, ext := range []string{".csv", ".jsonl", ".parquet"} {
		for _, payload := range []bool{false, true} {
			name := ext[1:] + "/no-payload"
			if payload {
				name = ext[1:] + "/payload"
			}
			path := filepath.Join(b.TempDir(), "m"+ext)
			b.Run("write/"+name, func(b *testing.B) {
				for range b.N {
					w, err := CreateMintMap(path)
					if err != nil {
						b.Fatal(err)
					}
					for i := range n {
						r := MintMapRow{RequestID: "A" + strconv.Itoa(i), ARK: "ark:99999/x9f94c14dfm", Status: StatusMinted}
						if payload {
							r.URL, r.Who, r.What, r.When = &url, &who, &what, &when
						}
						if err := w.Write(r); err != nil {
							b.Fatal(err)
						}
					}
					if err := w.Close(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			})
			b.Run("read/"+name, func(b *testing.B) {
				for range b.N {
					r, err := OpenMintMap(path)
					if err != nil {
						b.Fatal(err)
					}
					rows := 0
					for {
						_, err := r.Next(context.Background())
						if errors.Is(err, io.EOF) {
							break
						}
						if err != nil {
							b.Fatal(err)
						}
						rows++
					}
					r.Close()
					if rows != n {
						b.Fatalf("read %d rows, want %d", rows, n)
					}
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			})
		}
	}
}
