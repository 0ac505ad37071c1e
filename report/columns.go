package report

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// colKind is the Go kind of one column's (pointed-to) field.
type colKind int

const (
	kindString colKind = iota + 1
	kindBool
	kindInt
	kindUint
	kindFloat
	kindTime
)

// column is one leaf column of a row type, derived once from its `parquet`
// struct tag so that CSV and JSON Lines use the names, order and NULL-ability
// Parquet uses.
type column struct {
	name     string
	index    []int   // reflect field index within the row struct
	kind     colKind // kind of the field, or of what it points to
	nullable bool    // a pointer field: nil is NULL
	layout   string  // kindTime: RFC 3339 UTC layout with the unit's fraction digits
}

var timeType = reflect.TypeFor[time.Time]()

// Time layouts for the three timestamp units: fixed fraction digits, always UTC.
const (
	layoutMillis = "2006-01-02T15:04:05.000Z"
	layoutMicros = "2006-01-02T15:04:05.000000Z"
	layoutNanos  = "2006-01-02T15:04:05.000000000Z"
)

// columnsOf derives the columns of the struct type t from its exported fields'
// `parquet` tags: the first tag element names the column (the Go field name
// when empty), "-" drops the field. Supported field types are string, bool,
// signed and unsigned integers, floats and time.Time, each optionally behind
// a pointer (a nullable column). Anything parquet-go could write but CSV or
// JSON Lines could not mirror — nested structs, slices, maps, the "optional"
// option on a non-pointer, local (non-UTC) timestamps, timestamp tags on
// non-time fields — is refused with an error naming the field, so that every
// accepted row type works in all three formats.
func columnsOf(t reflect.Type) ([]column, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("report: row type %v is not a struct", t)
	}
	var cols []column
	seen := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("parquet")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		c := column{name: name, index: f.Index}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			c.nullable = true
			ft = ft.Elem()
		}
		switch {
		case ft == timeType:
			c.kind = kindTime
			c.layout = layoutNanos // parquet-go's default for time.Time
		case ft.Kind() == reflect.String:
			c.kind = kindString
		case ft.Kind() == reflect.Bool:
			c.kind = kindBool
		case ft.Kind() >= reflect.Int && ft.Kind() <= reflect.Int64:
			c.kind = kindInt
		case ft.Kind() >= reflect.Uint && ft.Kind() <= reflect.Uint64:
			c.kind = kindUint
		case ft.Kind() == reflect.Float32 || ft.Kind() == reflect.Float64:
			c.kind = kindFloat
		default:
			return nil, fmt.Errorf("report: row type %v field %s: type %v is not supported (want string, bool, number or time.Time, optionally a pointer)", t, f.Name, f.Type)
		}
		if opts != "" {
			for _, opt := range strings.Split(opts, ",") {
				switch {
				case opt == "optional" && !c.nullable:
					return nil, fmt.Errorf("report: row type %v field %s: use a pointer field, not the optional tag, for a nullable column", t, f.Name)
				case opt == "timestamp" || strings.HasPrefix(opt, "timestamp("):
					if c.kind != kindTime {
						return nil, fmt.Errorf("report: row type %v field %s: timestamp tag on %v (want time.Time)", t, f.Name, f.Type)
					}
					layout, err := timestampLayout(strings.TrimPrefix(opt, "timestamp"))
					if err != nil {
						return nil, fmt.Errorf("report: row type %v field %s: %w", t, f.Name, err)
					}
					c.layout = layout
				}
			}
		}
		if seen[name] {
			return nil, fmt.Errorf("report: row type %v: column name %q used twice", t, name)
		}
		seen[name] = true
		cols = append(cols, c)
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("report: row type %v has no columns", t)
	}
	return cols, nil
}

// timestampLayout maps the arguments of a parquet-go timestamp tag ("",
// "()", "(microsecond)", "(microsecond:utc)", ...) to the text layout of that
// unit. parquet-go's default unit is the millisecond; ":local" is refused
// because report timestamps are UTC.
func timestampLayout(args string) (string, error) {
	if args == "" || args == "()" {
		return layoutMillis, nil
	}
	inner, ok := strings.CutPrefix(args, "(")
	if ok {
		inner, ok = strings.CutSuffix(inner, ")")
	}
	if !ok {
		return "", fmt.Errorf("malformed timestamp tag arguments %q", args)
	}
	unit, adjust, _ := strings.Cut(inner, ":")
	if adjust != "" && adjust != "utc" {
		return "", fmt.Errorf("timestamp tag %q: report timestamps must be UTC", args)
	}
	switch unit {
	case "millisecond":
		return layoutMillis, nil
	case "microsecond":
		return layoutMicros, nil
	case "nanosecond":
		return layoutNanos, nil
	}
	return "", fmt.Errorf("timestamp tag %q: unknown unit %q", args, unit)
}

// value returns the field of column c in the row rv (a struct value) with the
// pointer removed, and whether it is NULL.
func (c *column) value(rv reflect.Value) (reflect.Value, bool) {
	fv := rv.FieldByIndex(c.index)
	if c.nullable {
		if fv.IsNil() {
			return fv, true
		}
		fv = fv.Elem()
	}
	return fv, false
}

// ValueError reports a value that cannot be written faithfully: a string that
// is not valid UTF-8 (Parquet STRING, JSON and DuckDB all require UTF-8), a
// zero time.Time (an absent time must be NULL), or a NaN or infinite float in
// JSON Lines. Row is 1-based over the whole file
// (the header is not a row). After a ValueError the [Writer] is failed: Close
// removes the temporary file and returns the error.
type ValueError struct {
	Path   string // final path of the report
	Row    int64  // 1-based row number in the file
	Column string // column name
	Reason string // what is wrong with the value
}

// Error returns "report PATH: row N column C: REASON".
func (e *ValueError) Error() string {
	return fmt.Sprintf("report %s: row %d column %s: %s", e.Path, e.Row, e.Column, e.Reason)
}

// checkRow validates row rv before it is encoded: every non-NULL string must
// be valid UTF-8, and no timestamp may be the zero time.Time (an absent time
// is NULL in a pointer column, never 0001-01-01, which would only hide a
// caller's forgotten field).
func checkRow(cols []column, rv reflect.Value, path string, row int64) error {
	for i := range cols {
		c := &cols[i]
		if c.kind != kindString && c.kind != kindTime {
			continue
		}
		v, null := c.value(rv)
		if null {
			continue
		}
		if c.kind == kindString && !utf8.ValidString(v.String()) {
			return &ValueError{Path: path, Row: row, Column: c.name, Reason: "invalid UTF-8"}
		}
		if c.kind == kindTime && v.Interface().(time.Time).IsZero() {
			return &ValueError{Path: path, Row: row, Column: c.name, Reason: "zero time (an absent time must be NULL)"}
		}
	}
	return nil
}

// appendText appends the text form shared by CSV and JSON Lines of a
// non-NULL value of column c (unquoted; strings raw).
func (c *column) appendText(buf []byte, v reflect.Value) []byte {
	switch c.kind {
	case kindString:
		return append(buf, v.String()...)
	case kindBool:
		return strconv.AppendBool(buf, v.Bool())
	case kindInt:
		return strconv.AppendInt(buf, v.Int(), 10)
	case kindUint:
		return strconv.AppendUint(buf, v.Uint(), 10)
	case kindFloat:
		return strconv.AppendFloat(buf, v.Float(), 'g', -1, v.Type().Bits())
	case kindTime:
		t := v.Interface().(time.Time)
		return t.UTC().AppendFormat(buf, c.layout)
	}
	return buf
}

// appendCSVField appends one CSV field: nothing for NULL, s bare when it is
// safe, else s in double quotes with inner quotes doubled (RFC 4180).
func appendCSVField(buf []byte, s string, null bool) []byte {
	if null {
		return buf
	}
	if !csvNeedsQuotes(s) {
		return append(buf, s...)
	}
	buf = append(buf, '"')
	for {
		i := strings.IndexByte(s, '"')
		if i < 0 {
			break
		}
		buf = append(buf, s[:i+1]...)
		buf = append(buf, '"')
		s = s[i+1:]
	}
	buf = append(buf, s...)
	return append(buf, '"')
}

// csvNeedsQuotes reports whether a non-NULL CSV field must be quoted: the
// empty string (to tell it from NULL), the PostgreSQL end-of-data marker \.,
// any field with a comma, double quote, CR or LF, and any with leading or
// trailing space or tab (which some readers trim).
func csvNeedsQuotes(s string) bool {
	if s == "" || s == `\.` {
		return true
	}
	if strings.ContainsAny(s, ",\"\r\n") {
		return true
	}
	first, last := s[0], s[len(s)-1]
	return first == ' ' || first == '\t' || last == ' ' || last == '\t'
}

// appendCSVRow appends the CSV record of row rv, "\n"-terminated. scratch is
// reused for number and time text.
func appendCSVRow(buf []byte, cols []column, rv reflect.Value, scratch []byte) ([]byte, []byte) {
	for i := range cols {
		if i > 0 {
			buf = append(buf, ',')
		}
		c := &cols[i]
		v, null := c.value(rv)
		if null {
			continue
		}
		if c.kind == kindString {
			buf = appendCSVField(buf, v.String(), false)
			continue
		}
		scratch = c.appendText(scratch[:0], v)
		buf = appendCSVField(buf, string(scratch), false)
	}
	return append(buf, '\n'), scratch
}

// appendCSVHeader appends the header record: the column names.
func appendCSVHeader(buf []byte, cols []column) []byte {
	for i := range cols {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendCSVField(buf, cols[i].name, false)
	}
	return append(buf, '\n')
}

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s to buf as a JSON string (RFC 8259 §7) and returns the extended
// buffer: '"', '\\' and control characters escaped (\n, \r, \t by name, the others as \u00XX),
// U+2028 and U+2029 escaped as \u2028 and \u2029 (JavaScript reads them as line ends), every
// other character as it is; HTML characters are not escaped, so URLs stay readable. It is the
// one JSON string encoder of arkhe: the JSON Lines writer, the legacy metadata column and the
// fixture generators use it. s should be valid UTF-8: bytes that are not are copied as they
// are (the writer refuses such a value before it gets here; a fixture writes one on purpose).
func AppendJSONString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch b {
			case '"', '\\':
				buf = append(buf, '\\', b)
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == '\u2028' || r == '\u2029' {
			buf = append(buf, s[start:i]...)
			buf = append(buf, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}

// appendJSONRow appends the JSON Lines object of row rv, "\n"-terminated:
// keys in column order, NULL as null, strings and timestamps as JSON strings,
// numbers and booleans bare. A NaN or infinite float has no JSON form and
// gives a *ValueError.
func appendJSONRow(buf []byte, cols []column, rv reflect.Value, path string, row int64) ([]byte, error) {
	buf = append(buf, '{')
	for i := range cols {
		if i > 0 {
			buf = append(buf, ',')
		}
		c := &cols[i]
		buf = AppendJSONString(buf, c.name)
		buf = append(buf, ':')
		v, null := c.value(rv)
		switch {
		case null:
			buf = append(buf, "null"...)
		case c.kind == kindString:
			buf = AppendJSONString(buf, v.String())
		case c.kind == kindTime:
			buf = append(buf, '"')
			buf = c.appendText(buf, v)
			buf = append(buf, '"')
		case c.kind == kindFloat && (math.IsNaN(v.Float()) || math.IsInf(v.Float(), 0)):
			return buf, &ValueError{Path: path, Row: row, Column: c.name, Reason: "NaN or infinite number has no JSON form"}
		default:
			buf = c.appendText(buf, v)
		}
	}
	return append(buf, '}', '\n'), nil
}
