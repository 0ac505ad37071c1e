package report

import "time"

// The row types of the writer's tests, declared here because report knows none of its
// callers: a row with every column kind the reports use (text, dictionary text, nullable text,
// a UTC timestamp), modelled on the change report, and a short one for escaping and streaming.
// The real report rows are written and read back in cmd/arkhe's tests.

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

type findingRow struct {
	Check    string  `parquet:"check,dict"`
	Severity string  `parquet:"severity,dict"`
	ARK      *string `parquet:"ark"`
	Detail   string  `parquet:"detail"`
}
