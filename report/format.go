package report

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Format is the file format of a report: [Parquet], [CSV] or [JSONL]. The zero
// value is not a valid format.
type Format int

const (
	// Parquet is Apache Parquet written by parquet-go with zstd compression. Name "parquet", extension ".parquet".
	Parquet Format = iota + 1
	// CSV is comma-separated values, one header line of column names, "\n"
	// line ends, NULL as an empty unquoted field and the empty string as ""
	// (the PostgreSQL COPY CSV convention; see the package doc). Name "csv",
	// extension ".csv".
	CSV
	// JSONL is JSON Lines: one JSON object per row, keys in column order, NULL
	// as null, "\n" line ends. Name "jsonl", extension ".jsonl".
	JSONL
)

// ErrUnknownFormat is wrapped by the errors of [ParseFormat], [FormatFromPath]
// and [ResolveFormat] when a name or extension is not one of the formats.
var ErrUnknownFormat = errors.New("unknown report format")

// String returns the format's name as accepted by --format: "parquet", "csv"
// or "jsonl"; an invalid Format gives "Format(n)".
func (f Format) String() string {
	switch f {
	case Parquet:
		return "parquet"
	case CSV:
		return "csv"
	case JSONL:
		return "jsonl"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// Extension returns the file extension of the format, with its dot:
// ".parquet", ".csv" or ".jsonl"; "" for an invalid Format.
func (f Format) Extension() string {
	switch f {
	case Parquet, CSV, JSONL:
		return "." + f.String()
	}
	return ""
}

// valid reports whether f is one of the three formats.
func (f Format) valid() bool { return f == Parquet || f == CSV || f == JSONL }

// ParseFormat parses the value of a --format flag: "parquet", "csv" or
// "jsonl", case-insensitive, surrounding spaces ignored. Any other value gives
// an error wrapping [ErrUnknownFormat] that quotes it.
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "parquet":
		return Parquet, nil
	case "csv":
		return CSV, nil
	case "jsonl":
		return JSONL, nil
	}
	return 0, fmt.Errorf("report: format %q (want parquet, csv or jsonl): %w", s, ErrUnknownFormat)
}

// FormatFromPath infers the format from an output path's extension
// (case-insensitive): ".parquet", ".csv" or ".jsonl". Any other extension, or
// none, gives an error wrapping [ErrUnknownFormat] that names the path.
func FormatFromPath(path string) (Format, error) {
	ext := strings.ToLower(filepath.Ext(path))
	for _, f := range []Format{Parquet, CSV, JSONL} {
		if ext == f.Extension() {
			return f, nil
		}
	}
	return 0, fmt.Errorf("report: cannot tell the format of %q from its extension (want .parquet, .csv or .jsonl, or pass --format): %w", path, ErrUnknownFormat)
}

// ResolveFormat settles the format of `-o path [--format flag]`:
// a non-empty flag is parsed with [ParseFormat] and wins over the extension,
// except that a path with a different known extension (say --format csv
// -o x.parquet) is refused as a contradiction; an empty flag falls back to
// [FormatFromPath]. Errors wrap [ErrUnknownFormat] for unknown names or
// extensions; a contradiction gives a plain error naming both.
func ResolveFormat(flag, path string) (Format, error) {
	if strings.TrimSpace(flag) == "" {
		return FormatFromPath(path)
	}
	f, err := ParseFormat(flag)
	if err != nil {
		return 0, err
	}
	if byExt, err := FormatFromPath(path); err == nil && byExt != f {
		return 0, fmt.Errorf("report: --format %s contradicts the extension of %q", f, path)
	}
	return f, nil
}
