package report

import "time"

// The row types of the tests: the shapes of arkhe's reports (an ARK_CHANGE row, an ARK, an
// audit finding, a reconciliation difference), declared here because report knows none of
// its callers.

type changeRow struct {
	ARK       string     `parquet:"ark"`
	NAAN      string     `parquet:"naan,dict"`
	Shoulder  string     `parquet:"shoulder,dict"`
	At        *time.Time `parquet:"at,timestamp(microsecond:utc)"`
	Action    string     `parquet:"action,dict"`
	BeforeURL *string    `parquet:"before_url"`
	AfterURL  *string    `parquet:"after_url"`
	By        *string    `parquet:"by,dict"`
}

type arkRow struct {
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

type findingRow struct {
	Check    string  `parquet:"check,dict"`
	Severity string  `parquet:"severity,dict"`
	ARK      *string `parquet:"ark"`
	Detail   string  `parquet:"detail"`
}

type diffRow struct {
	Kind        string  `parquet:"kind,dict"`
	ARK         string  `parquet:"ark"`
	Field       *string `parquet:"field,dict"`
	ExportValue *string `parquet:"export_value"`
	LedgerValue *string `parquet:"ledger_value"`
	Source      *string `parquet:"source"`
	Note        *string `parquet:"note"`
}
