package legacy

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// zonedLayouts are the time stamp shapes with a zone found in the exports:
// Django dumpdata ("2025-03-04T10:11:12.345Z"), EZID convertTimestamps
// ("2020-01-01T00:00:00Z"), registry JSON ("2001-03-08T00:00:00+00:00") and
// PostgreSQL COPY output ("2025-03-04 10:11:12.345+00", "… +05:30").
var zonedLayouts = [...]string{
	time.RFC3339Nano,
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999Z07",
	"2006-01-02T15:04:05.999999999Z07",
	"2006-01-02 15:04:05.999999999Z07:00:00",
}

// naiveLayouts have no zone (Django with USE_TZ=False, PostgreSQL
// `timestamp without time zone`).
var naiveLayouts = [...]string{
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999",
}

// parseTimestamp reads a time stamp as given, keeping its zone. A stamp
// without a zone is read as UTC and naive is true (the caller records the raw
// text). "" is an error; callers treat empty/null as absent beforehand.
func parseTimestamp(v string) (t time.Time, naive bool, err error) {
	for _, l := range zonedLayouts {
		if t, err := time.Parse(l, v); err == nil {
			return t, false, nil
		}
	}
	for _, l := range naiveLayouts {
		if t, err := time.ParseInLocation(l, v, time.UTC); err == nil {
			return t, true, nil
		}
	}
	return time.Time{}, false, fmt.Errorf("%q is not an ISO 8601 / RFC 3339 time stamp", v)
}

// parseUnix reads decimal Unix seconds (EZID `_created`, N2T `_,ec`/`__mc`)
// as a UTC time.
func parseUnix(v string) (time.Time, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not Unix seconds", v)
	}
	if n < 0 || n > 253402300799 { // year 9999
		return time.Time{}, fmt.Errorf("%q is outside years 1970–9999", v)
	}
	return time.Unix(n, 0).UTC(), nil
}

// parseUnixOrISO reads EZID's time forms: Unix seconds, or ISO
// "YYYY-MM-DDTHH:MM:SSZ" when the download used convertTimestamps=yes.
func parseUnixOrISO(v string) (time.Time, error) {
	v = strings.TrimSpace(v)
	if v != "" && isDigit(v[0]) && !strings.ContainsAny(v, "-:T") {
		return parseUnix(v)
	}
	t, naive, err := parseTimestamp(v)
	if err != nil {
		return time.Time{}, err
	}
	if naive {
		return time.Time{}, fmt.Errorf("%q has no time zone", v)
	}
	return t, nil
}

// parseDate reads a calendar date "2006-01-02" or the registry's
// "2006.01.02" as 00:00 UTC that day; impossible dates (2021.02.30) fail.
func parseDate(v string) (time.Time, error) {
	v = strings.TrimSpace(v)
	for _, l := range [...]string{"2006.01.02", "2006-01-02"} {
		if t, err := time.Parse(l, v); err == nil {
			return t, nil
		}
	}
	if t, naive, err := parseTimestamp(v); err == nil && !naive {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is not a calendar date (yyyy.mm.dd or yyyy-mm-dd)", v)
}
