package textin

import "strconv"

// Location says where a record came from, in a manifest or a legacy export: File is the path
// as given to the reader; Line is the 1-based physical line on which the record starts (0 when
// the format has no lines, Parquet, or it is unknown); Record is the 1-based number of the
// record among the file's data records (every record counts, bad ones included; a CSV header,
// blank JSON lines, comments and admin keys do not; 0 when unknown).
type Location struct {
	File   string
	Line   int
	Record int
}

// String renders the location in the GNU "FILE:LINE: message" convention, with the record
// number after it: "tate.jsonl.gz:17 (record 16)"; without a record number "FILE:LINE",
// without a line (Parquet) "FILE (record R)", and with neither just "FILE". Every error,
// reject reason and report of arkhe that names a place in an input file uses this form.
func (l Location) String() string {
	s := l.File
	if l.Line > 0 {
		s += ":" + strconv.Itoa(l.Line)
	}
	if l.Record > 0 {
		s += " (record " + strconv.Itoa(l.Record) + ")"
	}
	return s
}
