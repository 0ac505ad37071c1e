package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// baselineFormat names the layout of a baseline file (Config.Baseline); a file of another
// format is refused.
const baselineFormat = "arkhe-verify-baseline/1"

// DefaultBaselineName is the baseline file's name when it is derived from the metrics file's
// (DefaultBaselinePath).
const DefaultBaselineName = "arkhe_verify.baseline.json"

// DefaultBaselinePath returns where `arkhe verify` keeps its baseline file when --baseline is
// not given: DefaultBaselineName in the directory of metricsFile, or "" (no baseline file)
// when metricsFile is "".
func DefaultBaselinePath(metricsFile string) string {
	if metricsFile == "" {
		return ""
	}
	return filepath.Join(filepath.Dir(metricsFile), DefaultBaselineName)
}

// baselineFile is what a baseline file holds: the largest numbers a full audit of the ledger
// has seen, which only ever rise (an ARK is never deleted, a shoulder's draws only rise).
// The file lives outside the ledger, so restoring the ledger from a backup does not take it
// back with the ledger's own audit summaries.
type baselineFile struct {
	Format string    `json:"format"`
	At     time.Time `json:"at"` // the snapshot time of the audit that last wrote the file
	ARKs   int64     `json:"arks"`
	// HighWater is the ledger's largest insertion number (ark.seq) at that audit, and
	// NewestARK the canonical ARK that carries it ("" for an empty ledger).
	HighWater int64                    `json:"high_water"`
	NewestARK string                   `json:"newest_ark"`
	Shoulders map[string]shoulderCount `json:"shoulders"` // by label NAAN + stored shoulder, e.g. "99999/x9"
}

// shoulderCount is a shoulder's ARKs in the ledger and its draws (blades tried by mint,
// shoulder_tally.draws).
type shoulderCount struct {
	ARKs  int64 `json:"arks"`
	Draws int64 `json:"draws"`
}

// readBaselineFile reads the baseline file at path; a file that does not exist is (nil, nil).
// A file that cannot be read or is not a baseline file is an error naming it and the field.
func readBaselineFile(path string) (*baselineFile, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("verify: baseline file: %w", err)
	}
	var f baselineFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("verify: baseline file %s: %w", path, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("verify: baseline file %s: more after the JSON object; want one object", path)
	}
	if f.Format != baselineFormat {
		return nil, fmt.Errorf("verify: baseline file %s: field format is %q, want %q", path, f.Format, baselineFormat)
	}
	if f.ARKs < 0 || f.HighWater < 0 {
		return nil, fmt.Errorf("verify: baseline file %s: fields arks and high_water must not be negative (%d, %d)", path, f.ARKs, f.HighWater)
	}
	for label, c := range f.Shoulders {
		if c.ARKs < 0 || c.Draws < 0 {
			return nil, fmt.Errorf("verify: baseline file %s: shoulders[%q]: arks and draws must not be negative (%d, %d)", path, label, c.ARKs, c.Draws)
		}
	}
	return &f, nil
}

// Baseline is what a baseline file (Config.Baseline) records: the largest numbers full audits
// of the ledger have seen, which only rise. At is the snapshot time of the audit that last
// wrote it; ARKs the ARKs in all; HighWater the ledger's largest insertion number (ark.seq) and
// NewestARK the ARK that carries it ("ark:NAAN/name", "" for an empty ledger); Shoulders, by
// label NAAN + shoulder as stored ("99999/x9"), each shoulder's ARKs and draws (blades tried
// by mint, shoulder_tally.draws).
type Baseline struct {
	At        time.Time
	ARKs      int64
	HighWater int64
	NewestARK string
	Shoulders map[string]BaselineShoulder
}

// BaselineShoulder is one shoulder's ARKs and draws in a Baseline.
type BaselineShoulder struct {
	ARKs, Draws int64
}

// ReadBaseline reads the baseline file at path, the file `arkhe verify --baseline` writes
// (format arkhe-verify-baseline/1). Errors name the file and, for a file that is not a
// baseline file, the field; a file that does not exist is an error wrapping fs.ErrNotExist.
func ReadBaseline(path string) (*Baseline, error) {
	f, err := readBaselineFile(path)
	if err != nil {
		return nil, err
	}
	if f == nil {
		return nil, fmt.Errorf("verify: baseline file %s: %w", path, fs.ErrNotExist)
	}
	b := &Baseline{At: f.At, ARKs: f.ARKs, HighWater: f.HighWater, NewestARK: f.NewestARK, Shoulders: map[string]BaselineShoulder{}}
	for l, c := range f.Shoulders {
		b.Shoulders[l] = BaselineShoulder(c)
	}
	return b, nil
}

// writeBaselineFile replaces the file at path with f, atomically: a temporary file in the same
// directory, synced, renamed over path, and the directory synced; a reader sees the old file
// or the new one, never a part.
func writeBaselineFile(path string, f *baselineFile) (err error) {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("verify: baseline file %s: %w", path, err)
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("verify: baseline file %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("verify: baseline file %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("verify: baseline file %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("verify: baseline file %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("verify: baseline file %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("verify: baseline file %s: %w", path, err)
	}
	if d, derr := os.Open(dir); derr == nil {
		// the rename is durable once the directory is; a failure here leaves the new file in place
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// readDraws reads each shoulder's draws (shoulder_tally) in the audit's snapshot, by label.
func (a *audit) readDraws(ctx context.Context, ln *lane) error {
	rows, err := ln.tx.Query(ctx, `select shoulder_id, draws from shoulder_tally`)
	if err != nil {
		return fmt.Errorf("verify: read the shoulders' draws: %w", err)
	}
	defer rows.Close()
	a.draws = map[string]int64{}
	for rows.Next() {
		var id, n int64
		if err := rows.Scan(&id, &n); err != nil {
			return fmt.Errorf("verify: read the shoulders' draws: %w", err)
		}
		label := unregisteredShoulder
		if sh := a.shoulder[id]; sh != nil {
			label = sh.label
		}
		a.draws[label] += n
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("verify: read the shoulders' draws: %w", err)
	}
	return nil
}

// compareBaselineFile runs ledger.rollback: no shoulder may hold fewer ARKs or have fewer draws,
// and the ledger's high-water mark may not be lower, than the baseline file recorded. A --since
// audit, which does not count every ARK, compares the draws and the number of ARKs in the
// ledger only.
func (a *audit) compareBaselineFile(ctx context.Context, ln *lane) error {
	path, f := a.cfg.Baseline, a.file
	if path == "" {
		return nil
	}
	if f == nil {
		a.rec.note(CheckRollback, fmt.Sprintf("no baseline file at %s yet: a full audit without this finding writes it", path))
		return nil
	}
	when := f.At.UTC().Format(time.RFC3339)
	rolledBack := "the ledger was rolled back (restored from an earlier backup?): names minted since may be drawn again; put them back before minting"
	if a.since {
		a.rec.note(CheckRollback, "--since compares the shoulders' draws and the number of ARKs with the baseline file; the full audit also compares the ARKs per shoulder and the high-water mark")
	}
	labels := make([]string, 0, len(f.Shoulders))
	for l := range f.Shoulders {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	var lost []string // the shoulders that went back, for the note
	for _, l := range labels {
		was := f.Shoulders[l]
		now := shoulderCount{ARKs: a.digest.shoulders[l], Draws: a.draws[l]}
		arksDown := !a.since && now.ARKs < was.ARKs
		if !arksDown && now.Draws >= was.Draws {
			continue
		}
		subject := "shoulder " + l
		if l == unregisteredShoulder {
			subject = "ARKs of unregistered shoulders"
		}
		var detail string
		if a.since {
			detail = fmt.Sprintf("%s: %d draws recorded in baseline file %s (audit of %s), %d now: %s", subject, was.Draws, path, when, now.Draws, rolledBack)
		} else {
			detail = fmt.Sprintf("%s: %d ARKs and %d draws recorded in baseline file %s (audit of %s), %d ARKs and %d draws now: %s",
				subject, was.ARKs, was.Draws, path, when, now.ARKs, now.Draws, rolledBack)
		}
		a.rec.add(CheckRollback, subject, "", detail)
		if a.since {
			lost = append(lost, fmt.Sprintf("%s %d draws then, %d now", subject, was.Draws, now.Draws))
		} else {
			lost = append(lost, fmt.Sprintf("%s %d ARKs then, %d now", subject, was.ARKs, now.ARKs))
		}
	}
	arks := a.digest.total.n
	if a.since {
		arks = a.base.count + a.fresh
	}
	if arks < f.ARKs {
		a.rec.add(CheckRollback, "ledger", "", fmt.Sprintf("ledger: %d ARKs recorded in baseline file %s (audit of %s), %d now: %s", f.ARKs, path, when, arks, rolledBack))
	}
	if !a.since && a.digest.mark < f.HighWater {
		newest := ""
		if f.NewestARK != "" {
			var present bool
			if err := ln.tx.QueryRow(ctx, `select exists (select 1 from ark where ark = $1)`, strings.TrimPrefix(f.NewestARK, "ark:")).Scan(&present); err != nil {
				return fmt.Errorf("verify: %s: %w", CheckRollback, err)
			}
			newest = fmt.Sprintf(" (the newest ARK then, %s, is %s)", f.NewestARK, map[bool]string{true: "still in the ledger", false: "not in the ledger"}[present])
		}
		a.rec.add(CheckRollback, "high-water mark", "", fmt.Sprintf("high-water mark: the ledger's newest ARK was inserted before the newest one recorded in baseline file %s (audit of %s)%s: %s",
			path, when, newest, rolledBack))
	}
	if a.rec.count(CheckRollback) > 0 {
		what := "the ledger holds fewer ARKs or has a lower high-water mark"
		if len(lost) > 0 {
			what = strings.Join(lost, "; ")
		}
		a.rec.note(CheckRollback, fmt.Sprintf("the ledger was rolled back since the audit of %s that wrote baseline file %s (%s): restored from an earlier backup? Names minted since may be drawn again; put them back before minting. The file is left as it is", when, path, what))
	}
	return nil
}

// newestARK returns the canonical ARK whose insertion number is mark ("" when none is).
func (a *audit) newestARK(ctx context.Context, ln *lane, mark int64) (string, error) {
	var key *string
	if err := ln.tx.QueryRow(ctx, `select (select 'ark:' || ark from ark where seq = $1 limit 1)`, mark).Scan(&key); err != nil {
		return "", fmt.Errorf("verify: the newest ARK: %w", err)
	}
	if key == nil {
		return "", nil
	}
	return *key, nil
}

// nextBaselineFile returns the baseline file this full audit leaves: each number the larger of
// the file's and this audit's, so the file never goes down; newest is the ARK at this audit's
// high-water mark.
func (a *audit) nextBaselineFile(newest string) *baselineFile {
	d := a.digest
	next := &baselineFile{Format: baselineFormat, At: a.snap.at, ARKs: d.total.n, HighWater: d.mark, NewestARK: newest,
		Shoulders: map[string]shoulderCount{}}
	for l, n := range d.shoulders {
		next.Shoulders[l] = shoulderCount{ARKs: n, Draws: a.draws[l]}
	}
	for l, n := range a.draws {
		c := next.Shoulders[l]
		c.Draws = n
		next.Shoulders[l] = c
	}
	if f := a.file; f != nil {
		next.ARKs = max(next.ARKs, f.ARKs)
		if f.HighWater > next.HighWater {
			next.HighWater, next.NewestARK = f.HighWater, f.NewestARK
		}
		for l, was := range f.Shoulders {
			c := next.Shoulders[l]
			next.Shoulders[l] = shoulderCount{ARKs: max(c.ARKs, was.ARKs), Draws: max(c.Draws, was.Draws)}
		}
	}
	return next
}
