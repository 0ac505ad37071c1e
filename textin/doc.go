// Package textin reads text input, the layer under arkhe's manifest readers (package pipeline)
// and legacy-export readers (package legacy): where a record came from (Location), the errors
// that name a file, line and field (RowError, CSVError, DecodeError, in errors.go), one rule
// for line ends, decompression of gzip and xz that reports where a broken stream stops, the
// CSV scanner that rejects a broken record alone and reads on, the lexical pieces of JSON the
// hand-written scanners share with their depth bound, and the rule for an acceptable target URL
// (CheckTarget, with its Limits). It knows no record type, no mapping and no database.
package textin
