package legacy

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"regexp"
	"strings"
)

// modelRE finds the first Django model name in a dumpdata head.
var modelRE = regexp.MustCompile(`"model"\s*:\s*"([^"]+)"`)

// naan2024RE matches the opening of naan_records.json: {"metadata": … or {"data": …
var naan2024RE = regexp.MustCompile(`^\{\s*"(metadata|data)"\s*:`)

// naan2023RE matches the opening of naans_public.json: {"12025": {"what": …
var naan2023RE = regexp.MustCompile(`^\{\s*"[0-9a-z]+"\s*:\s*\{`)

// DetectFormat recognises a format from the first bytes of an
// (uncompressed) export; path is used only in the error. head should hold a
// few KiB (Open passes 64 KiB). Rules, in order: a `VERSION=`/`HEADER=END`
// header is N2TDump; JSON is told apart by its first "model" (ark.* →
// ArkletJSON, ezidapp.shoulder → EZIDDBShoulders, ezidapp.linkchecker →
// EZIDLinkCheck, other ezidapp.* → EZIDDB) or by registry keys ("rtype",
// "data" → NAANJSON2024; an object of NAAN-keyed objects → NAANJSON2023); a
// tab-separated header naming identifier, url and returnCode →
// EZIDLinkCheckTSV; ANVL by its first record (`::` with `_` elements →
// EZIDANVL, with type/minter → ShoulderListN2TANVL; `erc:`/`naa:` →
// NAANANVL); log lines with " shoulder - " → ShoulderListEZIDLog; CSV by its
// first row (an `ark` column → ArkletCSV, an `_id` column → EZIDCSV, a
// three-field `ark:`/`doi:` row → ShoulderListEZIDCSV). Otherwise the error
// wraps ErrUnknownFormat.
func DetectFormat(path string, head []byte) (Format, error) {
	h := bytes.TrimPrefix(head, []byte(utf8BOM))
	h = bytes.TrimLeft(h, " \t\r\n")
	fail := func() (Format, error) {
		first, _, _ := bytes.Cut(h, []byte("\n"))
		return "", fmt.Errorf("%s: %w (first line %q); give the format explicitly", path, ErrUnknownFormat, clip(string(bytes.TrimRight(first, "\r")), 80))
	}
	if len(h) == 0 {
		return fail()
	}
	if bytes.HasPrefix(h, []byte("VERSION=")) || bytes.HasPrefix(h, []byte("format=")) ||
		bytes.Contains(h, []byte("\nHEADER=END")) {
		return N2TDump, nil
	}
	if h[0] == '[' || h[0] == '{' {
		if m := modelRE.FindSubmatch(h); m != nil {
			model := strings.ToLower(string(m[1]))
			switch {
			case strings.HasPrefix(model, "ark."):
				return ArkletJSON, nil
			case model == "ezidapp.shoulder":
				return EZIDDBShoulders, nil
			case model == "ezidapp.linkchecker":
				return EZIDLinkCheck, nil
			case strings.HasPrefix(model, "ezidapp."):
				return EZIDDB, nil
			}
		}
		if bytes.Contains(h, []byte(`"rtype"`)) || naan2024RE.Match(h) {
			return NAANJSON2024, nil
		}
		if naan2023RE.Match(h) && bytes.Contains(h, []byte(`"what"`)) {
			return NAANJSON2023, nil
		}
		return fail()
	}
	lines := strings.Split(string(h), "\n")
	var content []string
	for _, l := range lines {
		l = strings.TrimRight(l, "\r")
		if strings.HasPrefix(l, "#") {
			continue
		}
		content = append(content, l)
		if len(content) > 40 {
			break
		}
	}
	for len(content) > 0 && strings.TrimSpace(content[0]) == "" {
		content = content[1:]
	}
	if len(content) == 0 {
		return fail()
	}
	first := content[0]
	if tsv := strings.Split(strings.ToLower(first), "\t"); len(tsv) > 2 {
		cols := map[string]bool{}
		for _, c := range tsv {
			cols[strings.TrimSpace(c)] = true
		}
		if cols["identifier"] && cols["url"] && cols["returncode"] {
			return EZIDLinkCheckTSV, nil
		}
	}
	switch {
	case strings.HasPrefix(first, "::"):
		for _, l := range content[1:] {
			if strings.TrimSpace(l) == "" {
				break
			}
			name, _, _ := strings.Cut(l, ":")
			name = strings.TrimSpace(name)
			switch {
			case strings.HasPrefix(name, "_") || strings.HasPrefix(name, "erc") || strings.HasPrefix(name, "dc."):
				return EZIDANVL, nil
			case name == "type" || name == "minter" || name == "manager" || name == "is_supershoulder":
				return ShoulderListN2TANVL, nil
			}
		}
		return EZIDANVL, nil
	case strings.HasPrefix(first, "erc:") || strings.HasPrefix(first, "naa:"):
		return NAANANVL, nil
	case strings.Contains(first, shoulderLogMark):
		return ShoulderListEZIDLog, nil
	}
	cr := csv.NewReader(strings.NewReader(first))
	cr.LazyQuotes = true
	cr.FieldsPerRecord = -1
	fields, err := cr.Read()
	if err != nil {
		return fail()
	}
	has := func(name string) bool {
		for _, f := range fields {
			if strings.EqualFold(strings.TrimSpace(f), name) {
				return true
			}
		}
		return false
	}
	switch {
	case has("ark") && (has("assigned_name") || has("naan_id") || has("url")):
		return ArkletCSV, nil
	case has("_id"):
		return EZIDCSV, nil
	case len(fields) == 3 && (strings.HasPrefix(fields[0], "ark:") || strings.HasPrefix(fields[0], "doi:")):
		return ShoulderListEZIDCSV, nil
	}
	return fail()
}
