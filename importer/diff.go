package importer

// Kinds of [DiffRow], one per way an export and the ledger can disagree.
const (
	// DiffOnlyInExport: the ARK is in the export but not in the ledger.
	DiffOnlyInExport = "only_in_export"
	// DiffOnlyInLedger: the ARK is in the ledger but not in the export.
	DiffOnlyInLedger = "only_in_ledger"
	// DiffTargetDiffers: both hold the ARK with different targets.
	DiffTargetDiffers = "target_differs"
	// DiffMetadataDiffers: an ERC or commitment field differs (field names it).
	DiffMetadataDiffers = "metadata_differs"
	// DiffStatusDiffers: the status or tombstone state differs.
	DiffStatusDiffers = "status_differs"
	// DiffSpellingOnly: the two spellings differ but normalize to the same ARK
	// (draft-kunze-ark §3.2), so they are the same identifier.
	DiffSpellingOnly = "spelling_only"
)

// DiffRow is one difference found by reconciling a legacy export against the
// ledger (arkhe reconcile). Columns, in order:
//
//   - kind (string, never NULL): one of [DiffOnlyInExport], [DiffOnlyInLedger],
//     [DiffTargetDiffers], [DiffMetadataDiffers], [DiffStatusDiffers],
//     [DiffSpellingOnly].
//   - ark (string, never NULL): the canonical "ark:NAAN/name".
//   - field (string, NULL allowed): the field that differs ("target", "who",
//     "status", ...); "target" on an only_in_export row (the export's target);
//     NULL for only_in_ledger and spelling_only rows.
//   - export_value, ledger_value (string, NULL allowed): the two values as
//     found; NULL where that side has no value (or no row), "" where it holds
//     the empty string. For spelling_only, export_value is the export's
//     spelling and ledger_value the canonical one.
//   - source (string, NULL allowed): where the export row came from, as
//     "FILE:LINE (record R)" (textin.Location); NULL for only_in_ledger rows.
//   - note (string, NULL allowed): why the row is there when that is known,
//     e.g. on an only_in_export row "reserved in the export (arkhe import
//     leaves it out without --include-reserved)".
type DiffRow struct {
	Kind        string  `parquet:"kind,dict"`
	ARK         string  `parquet:"ark"`
	Field       *string `parquet:"field,dict"`
	ExportValue *string `parquet:"export_value"`
	LedgerValue *string `parquet:"ledger_value"`
	Source      *string `parquet:"source"`
	Note        *string `parquet:"note"`
}
