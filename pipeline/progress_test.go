package pipeline_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/pipeline"
)

// TestRunProgressCountsCompressedOctetsAsRead runs the real Tate manifest (69,202 rows, gzip) and
// checks the run's reports: the total is the file's size as stored, the share read grows
// through the compressed file (so a .gz shows a true percentage) and ends at the total, the
// count of rows read moves before any batch is settled, and rows settle before they are written
// out in manifest order.
func TestRunProgressCountsCompressedOctetsAsRead(t *testing.T) {
	t.Parallel()
	tate := fixtures.SharedData(t, "tategallery-collection", "artworks.jsonl.gz")
	st, err := os.Stat(tate)
	if err != nil {
		t.Fatal(err)
	}
	m, err := pipeline.ParseMapping("request_id=acno,what=title,who=all_artists,when=dateText,url=url")
	if err != nil {
		t.Fatal(err)
	}
	var reports []pipeline.Progress
	sum, err := pipeline.Run(t.Context(), pipeline.RunConfig{Inputs: []string{tate}, Mapping: m, Sink: newMemSink(),
		Workers: 2, BatchSize: 10_000, Progress: func(p pipeline.Progress) { reports = append(reports, p) }})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Read != 69_202 {
		t.Fatalf("read %d rows, want 69,202", sum.Read)
	}
	var midway, beforeBatch bool
	var last pipeline.Progress
	for i, p := range reports {
		if p.Input.Rows || p.Input.Total != st.Size() {
			t.Fatalf("report %d: input %+v, want a total of %d octets (the .gz as stored)", i, p.Input, st.Size())
		}
		if p.Settled < p.Done || p.Read < p.Settled {
			t.Fatalf("report %d: %d read, %d settled, %d done in order: want read ≥ settled ≥ done", i, p.Read, p.Settled, p.Done)
		}
		if p.Input.Done < last.Input.Done || p.Read < last.Read || p.Settled < last.Settled || p.Done < last.Done {
			t.Fatalf("report %d went backwards: %+v after %+v", i, p, last)
		}
		if p.Input.Done > 0 && p.Input.Done < p.Input.Total/2 {
			midway = true
		}
		// the first batch of a worker holds 1,250 rows: 1,024 rows read cannot have settled
		if p.Read >= 1024 && p.Done == 0 {
			beforeBatch = true
		}
		last = p
	}
	if !midway || !beforeBatch {
		t.Fatalf("%d reports: a share below half read %v, rows counted before a batch settled %v", len(reports), midway, beforeBatch)
	}
	if last.Input.Done != st.Size() || last.Read != 69_202 || last.Settled != 69_202 || last.Done != 69_202 {
		t.Fatalf("last report %+v, want all %d octets and 69,202 rows", last, st.Size())
	}
}

// TestRunProgressParquetInRows: a run of Parquet manifests only counts rows, its total the row
// counts of the footers; mixed with a CSV manifest it counts octets, the Parquet file its size.
func TestRunProgressParquetInRows(t *testing.T) {
	t.Parallel()
	type row struct {
		ID string `parquet:"request_id"`
	}
	rows := make([]row, 3000)
	for i := range rows {
		rows[i] = row{ID: fmt.Sprintf("pq-%05d", i)}
	}
	dir := t.TempDir()
	pq := filepath.Join(dir, "m.parquet")
	f, err := os.Create(pq)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[row](f, parquet.MaxRowsPerRowGroup(1000))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	run := func(inputs ...string) []pipeline.Progress {
		var reports []pipeline.Progress
		if _, err := pipeline.Run(t.Context(), pipeline.RunConfig{Inputs: inputs, Sink: newMemSink(), BatchSize: 100,
			Progress: func(p pipeline.Progress) { reports = append(reports, p) }}); err != nil {
			t.Fatal(err)
		}
		return reports
	}
	reports := run(pq)
	midway := false
	for _, p := range reports {
		if !p.Input.Rows || p.Input.Total != 3000 {
			t.Fatalf("report %+v: want a total of 3,000 rows", p)
		}
		if p.Input.Done > 0 && p.Input.Done < 3000 {
			midway = true
		}
	}
	if last := reports[len(reports)-1]; !midway || last.Input.Done != 3000 {
		t.Fatalf("parquet: midway %v, last report %+v", midway, last)
	}

	csv := writeFile(t, dir, "b.csv", "request_id\ncsv-1\ncsv-2\n")
	pst, _ := os.Stat(pq)
	cst, _ := os.Stat(csv)
	reports = run(pq, csv)
	last := reports[len(reports)-1]
	if last.Input.Rows || last.Input.Total != pst.Size()+cst.Size() || last.Input.Done != last.Input.Total {
		t.Fatalf("parquet and csv: last report %+v, want %d + %d octets, all read", last, pst.Size(), cst.Size())
	}
}
