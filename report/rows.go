package report

import "time"

// ChangeRow is one ARK_CHANGE row as `arkhe report changes` writes it
// (issue 5; data-model.md ARK_CHANGE). Columns, in order:
//
//   - ark (string, never NULL): the ARK in its canonical modern form
//     "ark:NAAN/name", e.g. "ark:99999/x9tn1qkq2g7" (ark-rules.md §1 decision:
//     modern label everywhere an ARK is printed); never an internal key
//     (README decisions 6 and 17).
//   - naan (string, never NULL): the NAAN, a string ("099999" is not "99999").
//   - shoulder (string, never NULL): the shoulder as the ledger stores it, with
//     its slash, e.g. "/x9" (ark-rules.md §1); "" only for the history of an
//     ARK that is no longer in the ledger (which `arkhe verify` reports).
//   - at (TIMESTAMP(isAdjustedToUTC=true, unit=MICROS), NULL allowed): when the
//     change was made; the instant is kept, finer than a microsecond is
//     truncated. NULL only where the ledger has no time for the change
//     (history imported from a legacy system that kept none; README decision
//     4: unknown is NULL, never "now").
//   - action (string, never NULL): what the change did, as the ledger records
//     it: "update" (repointed), "tombstone" (withdrawn, ark-rules.md §5),
//     "metadata" (ERC fields changed) or "restore" (a tombstone lifted).
//   - before_url (string, NULL allowed): the target before the change. NULL
//     when the ledger holds no previous target; "" when the target was truly
//     empty (an empty url returns the description, ark-rules.md §4).
//   - after_url (string, NULL allowed): the target after the change, with the
//     same NULL / "" rule as before_url.
//   - by (string, NULL allowed): the public client_id of the client that made
//     the change, never its internal key (README decision 6); for a change
//     without a registered client (e.g. imported history), who made it as the
//     source recorded it; NULL when neither is known. Never "".
type ChangeRow struct {
	ARK       string     `parquet:"ark"`
	NAAN      string     `parquet:"naan,dict"`
	Shoulder  string     `parquet:"shoulder,dict"`
	At        *time.Time `parquet:"at,timestamp(microsecond:utc)"`
	Action    string     `parquet:"action,dict"`
	BeforeURL *string    `parquet:"before_url"`
	AfterURL  *string    `parquet:"after_url"`
	By        *string    `parquet:"by,dict"`
}

// ARKRow is one ARK of the ledger as `arkhe report arks` writes it (issue 5;
// data-model.md ARK, ark-rules.md §4 and §5). Columns, in order:
//
//   - ark, naan, shoulder (string, never NULL): as in [ChangeRow].
//   - target (string, NULL allowed): the URL the ARK resolves to. "" is a real
//     value (an empty url returns the description, ark-rules.md §4); NULL only
//     where the ledger holds none.
//   - who, what, when (string, NULL allowed): the ERC kernel elements as
//     stored, kernel codes such as "(:unkn)" included verbatim (ark-rules.md
//     §4). NULL when the element was never given; "" only when it was given
//     empty.
//   - commitment (string, NULL allowed): the commitment statement for this
//     object; NULL when none was recorded.
//   - status (string, never NULL): the ARK's state as the ledger records it
//     (e.g. "public", "reserved", "unavailable"; ark-rules.md §5).
//   - tombstone_reason (string, NULL allowed): why the ARK was withdrawn;
//     NULL unless it is tombstoned (and then NULL only if no reason was kept).
//   - created_at, updated_at (TIMESTAMP(isAdjustedToUTC=true, unit=MICROS),
//     NULL allowed): when the ARK was minted or imported and last changed; NULL
//     where the ledger (or the legacy source it was imported from) has no time.
type ARKRow struct {
	ARK             string     `parquet:"ark"`
	NAAN            string     `parquet:"naan,dict"`
	Shoulder        string     `parquet:"shoulder,dict"`
	Target          *string    `parquet:"target"`
	Who             *string    `parquet:"who"`
	What            *string    `parquet:"what"`
	When            *string    `parquet:"when"`
	Commitment      *string    `parquet:"commitment,dict"`
	Status          string     `parquet:"status,dict"`
	TombstoneReason *string    `parquet:"tombstone_reason"`
	CreatedAt       *time.Time `parquet:"created_at,timestamp(microsecond:utc)"`
	UpdatedAt       *time.Time `parquet:"updated_at,timestamp(microsecond:utc)"`
}

// FindingRow is one finding of the nightly audit (`arkhe verify`, issue 5).
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
	// (ark-rules.md §2), so they are the same identifier.
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
//     "file:line"; NULL for only_in_ledger rows.
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
