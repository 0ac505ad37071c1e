package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/arkhe-ledger/arkhe/importer"
)

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// progressLines parses the key=value fields of each log line in b (time left out).
func progressLines(t *testing.T, b *bytes.Buffer) []map[string]string {
	t.Helper()
	var out []map[string]string
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if line == "" {
			continue
		}
		m := map[string]string{}
		for _, f := range strings.Fields(line) {
			k, v, ok := strings.Cut(f, "=")
			if !ok {
				t.Fatalf("log line %q: field %q is not key=value", line, f)
			}
			m[k] = v
		}
		out = append(out, m)
	}
	return out
}

// TestProgressLogLines drives the progress of a mint off a terminal with a fake clock: a line
// every interval with the rows read, the octets read of the total, the percentage, the rows/s
// as a moving average over the last ten seconds (not the average since the start) and the ETA
// at the recent speed; no rate before a second of samples.
func TestProgressLogLines(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	start := clock.t
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	p := newProgressWith(nil, log, "minting", "rows", clock.now)
	p.SetTotal(2_000_000, true)

	// the first instant: 189,559,884 rows/s would be absurd; nothing is logged, no rate is known
	clock.t = start.Add(10 * time.Millisecond)
	p.Set(1024, 65536)
	if f := p.figures(); f.Rate >= 0 || f.ETA >= 0 || f.Percent != 100*65536.0/2_000_000 {
		t.Fatalf("figures after 10 ms: %+v, want no rate and no ETA yet", f)
	}
	if buf.Len() > 0 {
		t.Fatalf("a line before the interval: %s", buf.String())
	}

	// ten seconds at 10,000 rows/s (10 octets a row), then ten at 1,000 rows/s
	var rows int64
	for s := 1; s <= 20; s++ {
		if s <= 10 {
			rows += 10_000
		} else {
			rows += 1_000
		}
		clock.t = start.Add(time.Duration(s) * time.Second)
		p.Set(rows, rows*10)
	}
	lines := progressLines(t, &buf)
	if len(lines) != 4 {
		t.Fatalf("%d log lines in 20 s, want one every 5 s:\n%s", len(lines), buf.String())
	}
	want := []map[string]string{
		{"msg": "minting", "rows": "50000", "octets": "500000", "total_octets": "2000000", "percent": "25.0", "rows_per_s": "10000", "eta": "15s"},
		{"msg": "minting", "rows": "100000", "octets": "1000000", "total_octets": "2000000", "percent": "50.0", "rows_per_s": "10000", "eta": "10s"},
		// the last ten seconds: five at 10,000 rows/s, five at 1,000
		{"msg": "minting", "rows": "105000", "octets": "1050000", "total_octets": "2000000", "percent": "52.5", "rows_per_s": "5500", "eta": "17s"},
		// only the slow seconds in the window: 1,000 rows/s, not the 5,500 since the start
		{"msg": "minting", "rows": "110000", "octets": "1100000", "total_octets": "2000000", "percent": "55.0", "rows_per_s": "1000", "eta": "1m30s"},
	}
	for i, w := range want {
		for k, v := range w {
			if lines[i][k] != v {
				t.Errorf("line %d: %s=%q, want %q (line %v)", i+1, k, lines[i][k], v, lines[i])
			}
		}
		if lines[i]["level"] != "INFO" {
			t.Errorf("line %d: level %q", i+1, lines[i]["level"])
		}
	}

	// everything read: the ETA is 0 while the last batches commit
	clock.t = start.Add(26 * time.Second)
	p.Set(200_000, 2_000_000)
	if l := progressLines(t, &buf); l[len(l)-1]["percent"] != "100.0" || l[len(l)-1]["eta"] != "0s" {
		t.Errorf("last line %v, want 100.0 percent and eta 0s", l[len(l)-1])
	}
	p.Finish()
}

// TestProgressCountsWithoutTotal: work without a known total (verify, reports) logs the count
// under its noun and the rate, neither a percentage nor an ETA; the bar's text says the same.
func TestProgressCountsWithoutTotal(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	p := newProgressWith(nil, log, "verifying", "ARKs", clock.now)
	for range 6 {
		clock.t = clock.t.Add(time.Second)
		p.Add(2000)
	}
	lines := progressLines(t, &buf)
	if len(lines) != 1 || lines[0]["arks"] != "10000" || lines[0]["arks_per_s"] != "2000" ||
		lines[0]["percent"] != "" || lines[0]["eta"] != "" {
		t.Fatalf("log lines %v, want arks=10000 arks_per_s=2000 and no percent or eta", lines)
	}
	if got, want := p.describe(p.figures()), "12,000 ARKs · 2,000 ARKs/s"; got != want {
		t.Errorf("bar text %q, want %q", got, want)
	}
	p.Finish()
}

// TestProgressBarText: the bar's text for a gzip manifest names the octets read of the total,
// the rows, the moving average and the ETA; the bar's percentage is of the octets.
func TestProgressBarText(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	var bar bytes.Buffer
	p := newProgressWith(&bar, nil, "minting", "rows", clock.now)
	p.SetTotal(7_812_778, true)
	clock.t = clock.t.Add(4 * time.Second)
	p.Set(22_500, 3_906_389)
	if got, want := p.describe(p.figures()), "3.9 MB of 7.8 MB · 22,500 rows · 5,625 rows/s · ETA 4s"; got != want {
		t.Errorf("bar text %q, want %q", got, want)
	}
	if st := p.bar.State(); st.CurrentPercent != 0.5 || !strings.Contains(bar.String(), "minting: ") {
		t.Errorf("bar at %v, drawn %q; want half of the octets", st.CurrentPercent, bar.String())
	}
	p.Finish()
}

// TestImportProgressAcrossFiles: the import's reports of two files add up against the inputs'
// total; a file read a second time adds its size to the total again.
func TestImportProgressAcrossFiles(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	p := newProgressWith(nil, nil, "importing", "records", clock.now)
	p.SetTotal(300, true)
	feed := importProgress(p, 300)
	check := func(count, pos, total int64) {
		t.Helper()
		if f := p.figures(); f.Count != count || f.Pos != pos || f.Total != total {
			t.Fatalf("figures %+v, want %d records, %d of %d octets", f, count, pos, total)
		}
	}
	feed(importer.Progress{File: "a", Pass: 1, Read: 10, Octets: 50, Size: 100})
	check(10, 50, 300)
	feed(importer.Progress{File: "a", Pass: 1, Read: 20, Octets: 100, Size: 100})
	feed(importer.Progress{File: "b", Pass: 1, Read: 5, Octets: 40, Size: 200})
	check(25, 140, 300)
	feed(importer.Progress{File: "b", Pass: 2, Read: 3, Octets: 20, Size: 200})
	check(28, 320, 500)
	p.Finish()
}

// TestProgressSettlingETA: a mint reads ahead of its commits; once everything is read, the ETA
// is the time to commit the rest at the recent commit speed, not 0, the rate is that of the rows
// done, and the text says how many rows are done.
func TestProgressSettlingETA(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	p := newProgressWith(nil, log, "minting", "rows", clock.now)
	p.SetTotal(1_000_000, true)
	// read 20,000 rows a second for 5 s, then nothing (the window is full) while 5,000 rows a
	// second commit
	for s := int64(1); s <= 10; s++ {
		clock.t = clock.t.Add(time.Second)
		read := min(s, 5) * 20_000
		p.SetSettled(s * 5_000)
		p.Set(read, read*10)
	}
	f := p.figures()
	if f.Pos != f.Total || f.Settled != 50_000 || f.ETA != 10*time.Second {
		t.Fatalf("figures %+v, want all read, 50,000 done and 10 s to commit the other 50,000", f)
	}
	if got, want := p.describe(f), "1.0 MB of 1.0 MB · 100,000 rows read, 50,000 done · 5,000 rows/s · ETA 10s"; got != want {
		t.Errorf("bar text %q, want %q", got, want)
	}
	lines := progressLines(t, &buf)
	if last := lines[len(lines)-1]; last["done"] != "50000" || last["eta"] != "10s" || last["percent"] != "100.0" || last["rows_per_s"] != "5000" {
		t.Errorf("last log line %v, want done=50000 eta=10s percent=100.0 rows_per_s=5000 (rows done, once all are read)", last)
	}
	p.Finish()
}
