// Package report is arkhe's one writer of tabular files: CSV, JSON Lines and
// Parquet. The mint map, the ARK_CHANGE history and the ledger itself
// (`arkhe report changes|arks`), audit findings (`arkhe verify`) and
// reconciliation differences (`arkhe reconcile`) are all written by it.
//
// A [Writer] streams rows of one struct type to a file in one of three
// formats — Parquet (parquet-go, zstd), CSV with a header, or JSON Lines —
// with the columns, their names and their NULL-ability all taken from the
// struct's `parquet` tags, so the three formats always agree. The file is
// written under a temporary name in the destination directory and renamed
// into place only by a successful [Writer.Close]; a failed or aborted run
// leaves no file that looks complete.
//
// The package knows no database and imports nothing of arkhe's: each caller
// declares its row type beside the code that produces the rows and feeds it
// rows, often from an iterator over PostgreSQL.
//
// # Columns
//
// Each exported field of the row struct is one column, in field order, named
// by the first element of its `parquet` tag (the field name when empty; "-"
// drops the field). A field is a string, bool, integer, float or time.Time,
// or a pointer to one (a nullable column); the "dict" option and the
// timestamp options below pass through to parquet-go. Anything parquet-go
// could write but CSV or JSON Lines could not mirror — nested structs,
// slices, maps, "optional" on a non-pointer, local (non-UTC) timestamps — is
// refused by [Create] with an error naming the field.
//
// # NULL and the empty string
//
// A pointer field is a nullable column: nil is NULL, a pointer to "" is the
// empty string. Parquet and JSON Lines keep the two apart (JSON writes null).
// CSV follows the PostgreSQL COPY CSV convention: NULL is an empty unquoted
// field, the empty string is written as "" (two double quotes). PostgreSQL
// COPY ... CSV and DuckDB read_csv(..., allow_quoted_nulls=false) read that
// distinction back; readers that do not follow the convention (spreadsheets,
// Go's encoding/csv) see both as an empty field and cannot tell them apart.
//
// # Timestamps
//
// Timestamp columns must be UTC-adjusted (`timestamp(microsecond:utc)` or
// `timestamp(microsecond)`, whose default is UTC). In Parquet they carry the
// logical type TIMESTAMP(isAdjustedToUTC=true, unit=MICROS); in CSV and JSON
// Lines they are RFC 3339 in UTC with exactly as many fractional digits as the
// unit has (six for microseconds, e.g. 2024-05-01T12:00:00.000001Z). Finer
// parts of a time.Time are truncated, never rounded, in all three formats.
package report
