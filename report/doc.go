// Package report is arkhe's one writer for tabular outputs: the ARK_CHANGE
// history (`arkhe report changes`), the ledger itself (`arkhe report arks`),
// audit findings (`arkhe verify`) and reconciliation differences (issue 5).
//
// A [Writer] streams rows of one struct type to a file in one of three
// formats — Parquet (parquet-go, zstd), CSV with a header, or JSON Lines —
// with the columns, their names and their NULL-ability all taken from the
// struct's `parquet` tags, so the three formats always agree. The file is
// written under a temporary name in the destination directory and renamed
// into place only by a successful [Writer.Close]; a failed or aborted run
// leaves no file that looks complete.
//
// The package does no database access (layout.md: report imports only ark):
// callers feed it rows from iterators over PostgreSQL. Users only ever see the
// canonical ARK string and public client IDs, never internal keys
// (README decisions 6 and 17).
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
