package pipeline

import (
	"encoding/csv"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/arkhe-ledger/arkhe/textin"
)

func TestRejectWriter(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "rejects.csv")
	w := NewRejectWriter(path)
	if _, err := os.Stat(path + ".tmp"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("file created before the first reject: %v", err)
	}
	var r Record
	r.Set(FieldRequestID, "A00001")
	r.Set(FieldWho, "a\x00b")
	r.Source = textin.Location{File: "tate.jsonl.gz", Line: 17, Record: 17}
	if err := w.Write(*Validate(&r, textin.DefaultLimits()), r.RequestID); err != nil {
		t.Fatal(err)
	}
	// A reader's row error with an underlying error, on a Parquet row (no line).
	re := textin.RowError{Loc: textin.Location{File: "m.parquet", Record: 4}, Reason: "bad", Err: errors.New("cause")}
	if err := w.Write(re, "bad\xffid\x00"); err != nil {
		t.Fatal(err)
	}
	if w.Count() != 2 {
		t.Errorf("Count = %d", w.Count())
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("final file visible before Close: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".tmp"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("temporary file left: %v", err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"file", "line", "record", "request_id", "field", "reason"},
		{"tate.jsonl.gz", "17", "17", "A00001", "who", "NUL byte at octet 2"},
		{"m.parquet", "", "4", `"bad\xffid\x00"`, "", "bad: cause"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("reject file:\n got %q\nwant %q", got, want)
	}
	if err := w.Write(re, "x"); err == nil {
		t.Error("Write after Close succeeded")
	}
}

func TestRejectWriterCleanRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "rejects.csv")
	// A clean run leaves no reject file...
	if err := NewRejectWriter(path).Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("clean run created %s: %v", path, err)
	}
	// ...and removes a stale one from an earlier run,
	stale := "file,line,record,request_id,field,reason\nm.csv,3,2,r2,who,NUL byte at octet 2\n"
	if err := os.WriteFile(path, []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := NewRejectWriter(path).Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale reject file kept: %v", err)
	}
	// ...but never a file that is not a reject file.
	other := "id,name\n1,x\n"
	if err := os.WriteFile(path, []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := NewRejectWriter(path).Close(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != other {
		t.Errorf("foreign file changed: %q, %v", b, err)
	}
}

func TestRejectWriterCreateError(t *testing.T) {
	t.Parallel()
	w := NewRejectWriter(filepath.Join(t.TempDir(), "no", "such", "dir", "rejects.csv"))
	err := w.Write(textin.RowError{Reason: "x"}, "")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("err = %v, want fs.ErrNotExist", err)
	}
	if err2 := w.Close(); err2 != err {
		t.Errorf("Close = %v, want the sticky %v", err2, err)
	}
}
