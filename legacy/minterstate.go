package legacy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/arkhe-ledger/arkhe/ark"
)

// MinterState is what arkhe takes from the state of an N2T "Nog" (NOID) minter, the database
// EZID keeps per shoulder, exported as one JSON object (EZID's 77913_r7.json): the shoulder it
// mints in, its mask and the blade template that follows from it, and how many names it has
// issued out of how many its mask allows.
type MinterState struct {
	// Source is the file it was read from.
	Source string
	// NAAN and Shoulder (stored form, "/r7") the minter mints in, from its "shoulder" field
	// ("77913/r7").
	NAAN, Shoulder string
	// Mask is the minter's mask as stored ("eedk"); Template the blade classes it draws
	// ("eed") and Check whether a check character ends each name (a final "k").
	Mask     string
	Template ark.Template
	Check    bool
	// Type is the generator type ("rand" or "seq"), "" when the state does not say.
	Type string
	// Issued is how many names the minter has handed out under its current mask (its
	// "oacounter"); Total how many the mask allows ("total"); -1 when the state does not say.
	Issued, Total int64
}

// Label returns "NAAN/shoulder" as the minter names it ("77913/r7").
func (s MinterState) Label() string { return s.NAAN + s.Shoulder }

// ReadMinterState reads the JSON state of an N2T/EZID minter from path. The fields it uses are
// "shoulder" (or, without it, the part of "template" before "{"), "mask" (or the part of
// "template" between braces), "type", "oacounter" and "total"; values may be JSON strings, as
// the minter writes them, or numbers. A mask and template that disagree, a shoulder that is not
// NAAN/shoulder, or a mask ParseNOIDMask refuses is an error naming the file and the field.
func ReadMinterState(path string) (MinterState, error) {
	st := MinterState{Source: path, Issued: -1, Total: -1}
	b, err := os.ReadFile(path)
	if err != nil {
		return st, fmt.Errorf("minter state: %w", err)
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return st, fmt.Errorf("minter state %s: not a JSON object (an N2T/EZID minter state, e.g. 77913_r7.json): %w", path, err)
	}
	field := func(name string) (string, bool, error) {
		v, ok := raw[name]
		if !ok {
			return "", false, nil
		}
		var s string
		if err := json.Unmarshal(v, &s); err == nil {
			return s, true, nil
		}
		var n json.Number
		if err := json.Unmarshal(v, &n); err == nil {
			return n.String(), true, nil
		}
		return "", true, fmt.Errorf("minter state %s: field %q: want a string or a number, got %s", path, name, v)
	}
	bad := func(name, format string, args ...any) error {
		return fmt.Errorf("minter state %s: field %q: %s", path, name, fmt.Sprintf(format, args...))
	}
	tmpl, hasTmpl, err := field("template")
	if err != nil {
		return st, err
	}
	var tmplShoulder, tmplMask string
	if hasTmpl {
		lb, rb := strings.IndexByte(tmpl, '{'), strings.LastIndexByte(tmpl, '}')
		if lb < 0 || rb != len(tmpl)-1 || rb < lb {
			return st, bad("template", "%q is not SHOULDER{MASK}, e.g. 77913/r7{eedk}", tmpl)
		}
		tmplShoulder, tmplMask = tmpl[:lb], tmpl[lb+1:rb]
	}
	shoulder, hasShoulder, err := field("shoulder")
	if err != nil {
		return st, err
	}
	switch {
	case !hasShoulder && !hasTmpl:
		return st, bad("shoulder", "missing (and no template to read it from)")
	case !hasShoulder:
		shoulder = tmplShoulder
	case hasTmpl && tmplShoulder != shoulder:
		return st, bad("template", "%q names shoulder %q, the field shoulder %q", tmpl, tmplShoulder, shoulder)
	}
	naan, sh, ok := strings.Cut(shoulder, "/")
	if !ok || naan == "" || sh == "" || strings.Contains(sh, "/") {
		return st, bad("shoulder", "%q is not NAAN/shoulder, e.g. 77913/r7", shoulder)
	}
	st.NAAN, st.Shoulder = naan, "/"+sh
	mask, hasMask, err := field("mask")
	if err != nil {
		return st, err
	}
	switch {
	case !hasMask && !hasTmpl:
		return st, bad("mask", "missing (and no template to read it from)")
	case !hasMask:
		mask = tmplMask
	case hasTmpl && tmplMask != mask:
		return st, bad("template", "%q holds mask %q, the field mask %q", tmpl, tmplMask, mask)
	}
	st.Mask = mask
	if st.Template, st.Check, err = ark.ParseNOIDMask(mask); err != nil {
		return st, bad("mask", "%v", err)
	}
	if st.Type, _, err = field("type"); err != nil {
		return st, err
	}
	for _, f := range []struct {
		name string
		dst  *int64
	}{{"oacounter", &st.Issued}, {"total", &st.Total}} {
		v, ok, err := field(f.name)
		if err != nil {
			return st, err
		}
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return st, bad(f.name, "%q is not a count", v)
		}
		*f.dst = n
	}
	return st, nil
}
