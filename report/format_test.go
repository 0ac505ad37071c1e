package report

import (
	"errors"
	"strings"
	"testing"
)

func TestParseFormat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want Format
	}{
		{"parquet", Parquet}, {"csv", CSV}, {"jsonl", JSONL}, {" Parquet ", Parquet}, {"CSV", CSV}, {"JSONL", JSONL},
	} {
		got, err := ParseFormat(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseFormat(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "json", "ndjson", "parq", "xlsx", "csv,jsonl"} {
		if got, err := ParseFormat(in); !errors.Is(err, ErrUnknownFormat) || got != 0 {
			t.Errorf("ParseFormat(%q) = %v, %v; want ErrUnknownFormat", in, got, err)
		} else if !strings.Contains(err.Error(), "\""+in+"\"") {
			t.Errorf("ParseFormat(%q) error %q does not quote the input", in, err)
		}
	}
}

func TestFormatNames(t *testing.T) {
	t.Parallel()
	for f, want := range map[Format][2]string{
		Parquet: {"parquet", ".parquet"}, CSV: {"csv", ".csv"}, JSONL: {"jsonl", ".jsonl"}, Format(0): {"Format(0)", ""}, Format(9): {"Format(9)", ""},
	} {
		if f.String() != want[0] || f.Extension() != want[1] {
			t.Errorf("%d: String %q Extension %q, want %q %q", int(f), f.String(), f.Extension(), want[0], want[1])
		}
	}
}

func TestFormatFromPath(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Format{
		"changes.parquet": Parquet, "/tmp/x/A.PARQUET": Parquet, "out.csv": CSV, "dir.jsonl/out.csv": CSV, "x.jsonl": JSONL,
	} {
		if got, err := FormatFromPath(in); err != nil || got != want {
			t.Errorf("FormatFromPath(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"changes", "changes.json", "changes.parquet.gz", "csv", ".csv/x", ""} {
		if _, err := FormatFromPath(in); !errors.Is(err, ErrUnknownFormat) {
			t.Errorf("FormatFromPath(%q) = %v, want ErrUnknownFormat", in, err)
		}
	}
}

func TestResolveFormat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		flag, path string
		want       Format
		err        string // substring; "" means success
	}{
		{"", "x.parquet", Parquet, ""},
		{"", "x.jsonl", JSONL, ""},
		{"csv", "x.out", CSV, ""},
		{"csv", "x.csv", CSV, ""},
		{"jsonl", "-", JSONL, ""},
		{"", "x.out", 0, "pass --format"},
		{"csv", "x.parquet", 0, "contradicts"},
		{"xml", "x.csv", 0, `"xml"`},
	} {
		got, err := ResolveFormat(tc.flag, tc.path)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ResolveFormat(%q, %q) = %v, %v; want %v", tc.flag, tc.path, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ResolveFormat(%q, %q) = %v, %v; want an error containing %q", tc.flag, tc.path, got, err, tc.err)
		}
	}
}
