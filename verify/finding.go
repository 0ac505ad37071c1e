package verify

// FindingRow is one finding of the nightly audit (`arkhe verify`).
// Columns, in order:
//
//   - check (string, never NULL): the check's stable name, the same in every
//     run so schedulers and dashboards can key on it.
//   - severity (string, never NULL): how bad the finding is, as the verify
//     package grades it (e.g. "error", "warning").
//   - ark (string, NULL allowed): the canonical "ark:NAAN/name" the finding is
//     about; NULL for findings about the ledger as a whole (a missing
//     trigger, a digest mismatch). Never "".
//   - detail (string, never NULL): a human-readable explanation; "" only when
//     the check name says it all.
type FindingRow struct {
	Check    string  `parquet:"check,dict"`
	Severity string  `parquet:"severity,dict"`
	ARK      *string `parquet:"ark"`
	Detail   string  `parquet:"detail"`
}
