package verify_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arkhe-ledger/arkhe/verify"
)

// baselineFileOf reads the baseline file at path as JSON.
func baselineFileOf(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f map[string]any
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, b)
	}
	return f
}

// TestBaselineFile: a clean full audit writes the baseline file; a file that records more
// than the ledger holds is a ledger.rollback finding, full and --since, and is left as it was;
// a file that is not a baseline file stops the audit, naming the file and the field.
func TestBaselineFile(t *testing.T) {
	t.Parallel()
	tl := newLedger(t)
	path := filepath.Join(t.TempDir(), "baseline.json")
	res, rows := tl.audit(verify.Config{Baseline: path})
	only(t, res, rows, "", 0, "")
	if !res.BaselineWritten || !strings.Contains(res.Check(verify.CheckRollback).Note, "no baseline file at "+path) {
		t.Errorf("first audit: written %v, note %q", res.BaselineWritten, res.Check(verify.CheckRollback).Note)
	}
	f := baselineFileOf(t, path)
	sh, _ := f["shoulders"].(map[string]any)["99999/x9"].(map[string]any)
	if f["format"] != "arkhe-verify-baseline/1" || f["arks"] != 120.0 || sh["arks"] != 120.0 || sh["draws"] != 0.0 ||
		!strings.HasPrefix(f["newest_ark"].(string), "ark:99999/x9") || f["high_water"].(float64) <= 0 {
		t.Fatalf("baseline file: %v", f)
	}

	// A shoulder with more ARKs and draws than the ledger has: rolled back.
	sh["arks"], sh["draws"], f["arks"] = 125, 7, 125
	b, _ := json.Marshal(f)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	res, rows = tl.audit(verify.Config{Baseline: path})
	only(t, res, rows, verify.CheckRollback, 2, "shoulder 99999/x9")
	var details []string
	for _, r := range rows {
		details = append(details, r.Detail)
	}
	joined := strings.Join(details, "\n")
	for _, want := range []string{"shoulder 99999/x9: 125 ARKs and 7 draws recorded in baseline file " + path,
		"120 ARKs and 0 draws now", "ledger: 125 ARKs recorded", "the ledger was rolled back"} {
		if !strings.Contains(joined, want) {
			t.Errorf("findings lack %q:\n%s", want, joined)
		}
	}
	if res.BaselineWritten {
		t.Error("an audit that found a rollback rewrote the baseline file")
	}
	if after, _ := os.ReadFile(path); string(after) != string(b) {
		t.Errorf("baseline file changed:\n%s", after)
	}
	// --since compares the draws and the ARK count
	res, rows = tl.audit(verify.Config{Baseline: path, Since: true})
	if res.Full {
		t.Fatal("--since ran a full audit")
	}
	only(t, res, rows, verify.CheckRollback, 2, "shoulder 99999/x9")

	// Not a baseline file: the audit does not start.
	for body, want := range map[string]string{
		`{"format": "something else"}`:                                                               `field format is "something else"`,
		`{"format": "arkhe-verify-baseline/1", "arks": -1}`:                                          "must not be negative",
		`{"format": "arkhe-verify-baseline/1", "ark": 3}`:                                            `unknown field "ark"`,
		`{"format": "arkhe-verify-baseline/1"} {}`:                                                   "more after the JSON object",
		`{"format": "arkhe-verify-baseline/1", "shoulders": {"99999/x9": {"arks": 1, "draws": -2}}}`: `shoulders["99999/x9"]`,
	} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := verify.Run(tl.ctx, tl.l, verify.Config{Baseline: path})
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), want) {
			t.Errorf("baseline file %s: error %v, want one naming the file and %q", body, err, want)
		}
	}
}

func TestDefaultBaselinePath(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                                       "",
		"/var/lib/node_exporter/textfile/v.prom": "/var/lib/node_exporter/textfile/" + verify.DefaultBaselineName,
		"v.prom":                                 verify.DefaultBaselineName,
	} {
		if got := verify.DefaultBaselinePath(in); got != want {
			t.Errorf("DefaultBaselinePath(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestReadBaseline reads a baseline file as verify writes it; a missing file wraps
// fs.ErrNotExist and a file of another format is refused, naming the file and the field.
func TestReadBaseline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "b.json")
	if err := os.WriteFile(path, []byte(`{"format": "arkhe-verify-baseline/1", "at": "2026-12-03T02:00:04Z", "arks": 50,
		"high_water": 7000000000057, "newest_ark": "ark:99999/x9abc", "shoulders": {"99999/x9": {"arks": 50, "draws": 52}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := verify.ReadBaseline(path)
	if err != nil {
		t.Fatal(err)
	}
	if b.ARKs != 50 || b.HighWater != 7000000000057 || b.NewestARK != "ark:99999/x9abc" || b.At.Format(time.RFC3339) != "2026-12-03T02:00:04Z" ||
		len(b.Shoulders) != 1 || b.Shoulders["99999/x9"] != (verify.BaselineShoulder{ARKs: 50, Draws: 52}) {
		t.Errorf("baseline %+v", b)
	}
	if _, err := verify.ReadBaseline(filepath.Join(dir, "none.json")); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "none.json") {
		t.Errorf("missing file: %v", err)
	}
	if err := os.WriteFile(path, []byte(`{"format": "other/2"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := verify.ReadBaseline(path); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "field format") {
		t.Errorf("file of another format: %v", err)
	}
}
