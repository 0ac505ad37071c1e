package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/pipeline"
	"github.com/arkhe-ledger/arkhe/textin"
)

// memSink is an in-memory pipeline.Sink with the duplicate rule of a manifest: the first
// occurrence of a request ID mints "ark:99999/x9" + request ID, a later identical one replays,
// a later differing one is rejected. It records which worker saw which request ID, in order, and
// flags an occurrence that reaches it before an earlier one (badOrder).
type memSink struct {
	mu       sync.Mutex
	receipts map[string][16]byte
	seenBy   map[string]int
	lastSeq  map[string]int64
	failAt   int // Write fails on this batch number (1-based, counted over all workers); 0 never
	batches  int
	maxBatch int
	badOrder []string
	window   *windowProbe
}

type windowProbe struct {
	written atomic.Int64 // rows written out by the collector
	maxGap  atomic.Int64 // largest Seq seen by the sink minus rows written
}

func newMemSink() *memSink {
	return &memSink{receipts: map[string][16]byte{}, seenBy: map[string]int{}, lastSeq: map[string]int64{}}
}

func (s *memSink) OpenWorker(ctx context.Context, worker int) (pipeline.SinkWorker, error) {
	return &memWorker{s: s, id: worker}, nil
}

type memWorker struct {
	s  *memSink
	id int
}

func (w *memWorker) Close() error { return nil }

func (w *memWorker) Write(ctx context.Context, b *pipeline.Batch) error {
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches++
	s.maxBatch = max(s.maxBatch, len(b.Rows))
	if s.failAt > 0 && s.batches == s.failAt {
		return errors.New("sink failed")
	}
	for i := range b.Rows {
		r := &b.Rows[i]
		rid := r.Record.RequestID
		if last, ok := s.lastSeq[rid]; ok && last >= r.Seq {
			s.badOrder = append(s.badOrder, fmt.Sprintf("%s: seq %d after %d", rid, r.Seq, last))
		}
		s.seenBy[rid], s.lastSeq[rid] = w.id, r.Seq
		if s.window != nil {
			if gap := r.Seq - s.window.written.Load(); gap > s.window.maxGap.Load() {
				s.window.maxGap.Store(gap)
			}
		}
		if r.Digest != pipeline.PayloadDigest(&r.Record) {
			return fmt.Errorf("row %d: digest not set", r.Seq)
		}
		d, ok := s.receipts[rid]
		switch {
		case !ok:
			s.receipts[rid] = r.Digest
			r.Outcome, r.ARK = pipeline.OutcomeMinted, "ark:99999/x9"+rid
		case d == r.Digest:
			r.Outcome, r.ARK = pipeline.OutcomeReplayed, "ark:99999/x9"+rid
		default:
			r.Outcome, r.Reject = pipeline.OutcomeRejected, &textin.RowError{Loc: r.Record.Source, Field: "request_id", Reason: "differs"}
		}
		b.Draws++
	}
	return nil
}

// memMap is a MintMapWriter in memory.
type memMap struct {
	rows  []pipeline.MintMapRow
	probe *windowProbe
}

func (m *memMap) Write(r pipeline.MintMapRow) error {
	m.rows = append(m.rows, r)
	if m.probe != nil {
		m.probe.written.Add(1)
	}
	return nil
}
func (m *memMap) Close() error { return nil }
func (m *memMap) Abort() error { return nil }

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunKeepsManifestOrder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := filepath.Join(dir, "a.csv")
	st, err := fixtures.CreateManifestCSV(a, fixtures.ManifestConfig{Rows: 500, Seed: 1, BadEvery: 37, DuplicateEvery: 11})
	if err != nil {
		t.Fatal(err)
	}
	b := writeFile(t, dir, "b.csv", "request_id,url\nlast-1,https://example.org/1\nlast-2,https://example.org/2\n")
	sink := newMemSink()
	mm := &memMap{}
	rw := pipeline.NewRejectWriter(filepath.Join(dir, "rejects.csv"))
	var progress []pipeline.Progress
	sum, err := pipeline.Run(t.Context(), pipeline.RunConfig{Inputs: []string{a, b}, Sink: sink, Workers: 3, BatchSize: 8,
		MintMap: mm, Rejects: rw, Progress: func(p pipeline.Progress) { progress = append(progress, p) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	if sum.Read != 502 || sum.Rejected != int64(st.Bad) || sum.Minted != int64(st.Unique)+2 || sum.Replayed != int64(st.Duplicates) {
		t.Fatalf("summary %+v; manifest has %d bad, %d unique, %d duplicates", sum, st.Bad, st.Unique, st.Duplicates)
	}
	if sum.Draws != sum.Minted+sum.Replayed || sum.Batches < 500/8 {
		t.Fatalf("summary %+v: draws or batches not summed", sum)
	}
	if len(sink.badOrder) > 0 {
		t.Fatalf("routing broke first-occurrence-mints order: %v", sink.badOrder[:min(5, len(sink.badOrder))])
	}
	// the mint map follows the manifests: request IDs never go backwards except for duplicates
	prev := ""
	for i, r := range mm.rows {
		if r.RequestID < prev && !(r.Status == pipeline.StatusReplayed) && !strings.HasPrefix(r.RequestID, "last-") {
			t.Fatalf("mint map row %d: %q after %q", i, r.RequestID, prev)
		}
		if r.RequestID > prev || strings.HasPrefix(r.RequestID, "last-") {
			prev = r.RequestID
		}
		if r.ARK != "ark:99999/x9"+r.RequestID {
			t.Fatalf("row %d: ARK %q for %q", i, r.ARK, r.RequestID)
		}
	}
	if n := len(mm.rows); mm.rows[n-2].RequestID != "last-1" || mm.rows[n-1].RequestID != "last-2" {
		t.Fatalf("the second manifest does not come last: %v", mm.rows[n-2:])
	}
	if len(progress) == 0 || progress[len(progress)-1].Done != 502 {
		t.Fatalf("progress: %d calls, last %+v", len(progress), progress[len(progress)-1])
	}
	// the reject file lists the bad rows in order, with file, line, field
	body, err := os.ReadFile(filepath.Join(dir, "rejects.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	if len(lines) != st.Bad+1 || !strings.HasPrefix(lines[1], a+",38,37,obj-000000037,what,NUL byte") {
		t.Fatalf("reject file:\n%s", body)
	}
}

func TestRunSkewedRequestIDsDoNotDeadlock(t *testing.T) {
	t.Parallel()
	// one request ID repeated: every row after the first few goes to one worker, while the
	// oldest rows wait in other workers' partial batches; the window forces them out.
	var body strings.Builder
	body.WriteString("request_id,url\n")
	for i := range 5 {
		fmt.Fprintf(&body, "first-%d,https://example.org/%d\n", i, i)
	}
	for range 3000 {
		body.WriteString("same,https://example.org/same\n")
	}
	in := writeFile(t, t.TempDir(), "skew.csv", body.String())
	sink := newMemSink()
	probe := &windowProbe{}
	sink.window = probe
	mm := &memMap{probe: probe}
	const window = 64
	sum, err := pipeline.Run(t.Context(), pipeline.RunConfig{Inputs: []string{in}, Sink: sink, Workers: 4, BatchSize: 1000, Window: window, MintMap: mm})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Minted != 6 || sum.Replayed != 2999 || len(mm.rows) != 3005 {
		t.Fatalf("summary %+v, %d mint map rows", sum, len(mm.rows))
	}
	if g := probe.maxGap.Load(); g >= window {
		t.Fatalf("a row %d ahead of the writer reached the sink; the window is %d", g, window)
	}
	if sink.maxBatch > window {
		t.Fatalf("a batch of %d rows with a window of %d", sink.maxBatch, window)
	}
}

func TestRunSinkErrorStopsTheRun(t *testing.T) {
	t.Parallel()
	in := filepath.Join(t.TempDir(), "m.csv")
	if _, err := fixtures.CreateManifestCSV(in, fixtures.ManifestConfig{Rows: 400, Seed: 2}); err != nil {
		t.Fatal(err)
	}
	sink := newMemSink()
	sink.failAt = 3
	sum, err := pipeline.Run(t.Context(), pipeline.RunConfig{Inputs: []string{in}, Sink: sink, Workers: 2, BatchSize: 10, MintMap: &memMap{}})
	if err == nil || !strings.Contains(err.Error(), "sink failed") {
		t.Fatalf("run error %v, want the sink's", err)
	}
	if sum.Minted >= 400 {
		t.Fatalf("summary %+v after a failure", sum)
	}
}

func TestRunCancelFromProgress(t *testing.T) {
	t.Parallel()
	in := filepath.Join(t.TempDir(), "m.csv")
	if _, err := fixtures.CreateManifestCSV(in, fixtures.ManifestConfig{Rows: 2000, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	sum, err := pipeline.Run(ctx, pipeline.RunConfig{Inputs: []string{in}, Sink: newMemSink(), Workers: 2, BatchSize: 10,
		Progress: func(p pipeline.Progress) {
			if p.Done >= 100 {
				cancel()
			}
		}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("run error %v, want context.Canceled", err)
	}
	if sum.Minted < 100 || sum.Minted >= 2000 {
		t.Fatalf("summary %+v", sum)
	}
}

func TestRunManifestErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := writeFile(t, dir, "good.csv", "request_id\na\n")
	_, err := pipeline.Run(t.Context(), pipeline.RunConfig{Inputs: []string{good, filepath.Join(dir, "missing.csv")}, Sink: newMemSink()})
	var me *pipeline.ManifestError
	if !errors.As(err, &me) || me.Loc.File != filepath.Join(dir, "missing.csv") {
		t.Fatalf("missing manifest: %v, want a *ManifestError naming it", err)
	}
	_, err = pipeline.Run(t.Context(), pipeline.RunConfig{Inputs: []string{writeFile(t, dir, "x.txt", "a")}, Sink: newMemSink()})
	if !errors.Is(err, pipeline.ErrUnknownFormat) {
		t.Fatalf("unknown format: %v", err)
	}
	if _, err := pipeline.Run(t.Context(), pipeline.RunConfig{Sink: newMemSink()}); err == nil {
		t.Fatal("a run without manifests was accepted")
	}
}

func TestRunJSONLinesAndMapping(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := writeFile(t, dir, "m.jsonl", `{"acno":"A1","title":"One","artists":[{"name":"X"},{"name":"Y"}]}
{"acno":"A2","title":"Two\u0000bad"}
{"acno":"A3","title":"Three","artists":null}
`)
	m, err := pipeline.ParseMapping("request_id=acno,what=title,who=artists[].name")
	if err != nil {
		t.Fatal(err)
	}
	var seen []pipeline.Record
	sink := &recordSink{seen: &seen}
	sum, err := pipeline.Run(t.Context(), pipeline.RunConfig{Inputs: []string{in}, Mapping: m, Sink: sink, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Minted != 2 || sum.Rejected != 1 || len(seen) != 2 {
		t.Fatalf("summary %+v, %d records", sum, len(seen))
	}
	if seen[0].Who != "X; Y" || seen[1].Has&pipeline.HasWho != 0 {
		t.Fatalf("records %+v", seen)
	}
}

type recordSink struct{ seen *[]pipeline.Record }

func (s *recordSink) OpenWorker(context.Context, int) (pipeline.SinkWorker, error) { return s, nil }
func (s *recordSink) Close() error                                                 { return nil }
func (s *recordSink) Write(_ context.Context, b *pipeline.Batch) error {
	for i := range b.Rows {
		*s.seen = append(*s.seen, b.Rows[i].Record)
		b.Rows[i].Outcome, b.Rows[i].ARK = pipeline.OutcomeMinted, "ark:99999/x9"+b.Rows[i].Record.RequestID
	}
	return nil
}

func TestRunBatchesAreNotCutShort(t *testing.T) {
	t.Parallel()
	in := filepath.Join(t.TempDir(), "m.csv")
	if _, err := fixtures.CreateManifestCSV(in, fixtures.ManifestConfig{Rows: 3000, Seed: 4}); err != nil {
		t.Fatal(err)
	}
	sink := newMemSink()
	sum, err := pipeline.Run(t.Context(), pipeline.RunConfig{Inputs: []string{in}, Sink: sink, Workers: 1, BatchSize: 100, MintMap: &memMap{}})
	if err != nil {
		t.Fatal(err)
	}
	want := int64(3) // 12 + 25 + 50 rows, then batches of 100
	for left := 3000 - 12 - 25 - 50; left > 0; left -= 100 {
		want++
	}
	if pipeline.RampBatchSize(100, 0) != 12 || pipeline.RampBatchSize(100, 2) != 50 || pipeline.RampBatchSize(100, 3) != 100 {
		t.Fatalf("ramp %d %d %d", pipeline.RampBatchSize(100, 0), pipeline.RampBatchSize(100, 2), pipeline.RampBatchSize(100, 3))
	}
	if sum.Batches != want || sum.Minted != 3000 {
		t.Fatalf("%d batches for 3000 rows of batch size 100 (summary %+v): a window flush cut batches short", sum.Batches, sum)
	}
}

// limitedSink is a memSink that allows one worker (pipeline.WorkerLimiter) and records the
// worker numbers it was opened with.
type limitedSink struct {
	*memSink
	opened []int
}

func (s *limitedSink) MaxWorkers() int { return 1 }

func (s *limitedSink) OpenWorker(ctx context.Context, worker int) (pipeline.SinkWorker, error) {
	s.opened = append(s.opened, worker)
	return s.memSink.OpenWorker(ctx, worker)
}

// TestRunWorkerLimiter: a sink that allows one worker gets one, whatever RunConfig.Workers
// says, and sees every row in manifest order (a daily quota goes to the first rows).
func TestRunWorkerLimiter(t *testing.T) {
	t.Parallel()
	in := filepath.Join(t.TempDir(), "m.csv")
	if _, err := fixtures.CreateManifestCSV(in, fixtures.ManifestConfig{Rows: 200, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	sink := &limitedSink{memSink: newMemSink()}
	cfg := pipeline.RunConfig{Inputs: []string{in}, Sink: sink, Workers: 4, BatchSize: 10}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Workers != 1 {
		t.Fatalf("Validate left %d workers, want 1", cfg.Workers)
	}
	var seq []int64
	rec := &seqSink{limitedSink: sink, seq: &seq}
	sum, err := pipeline.Run(t.Context(), pipeline.RunConfig{Inputs: []string{in}, Sink: rec, Workers: 4, BatchSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(sink.opened) != 1 || sink.opened[0] != 0 || sum.Minted != 200 {
		t.Fatalf("opened workers %v, summary %+v; want worker 0 only and 200 minted", sink.opened, sum)
	}
	for i, s := range seq {
		if s != int64(i) {
			t.Fatalf("row %d reached the sink as Seq %d: not in manifest order", i, s)
		}
	}
}

// seqSink records the Seq of every row in the order the sink sees them.
type seqSink struct {
	*limitedSink
	seq *[]int64
}

func (s *seqSink) OpenWorker(ctx context.Context, worker int) (pipeline.SinkWorker, error) {
	if _, err := s.limitedSink.OpenWorker(ctx, worker); err != nil {
		return nil, err
	}
	return &recordSeq{seq: s.seq}, nil
}

type recordSeq struct{ seq *[]int64 }

func (r *recordSeq) Close() error { return nil }
func (r *recordSeq) Write(_ context.Context, b *pipeline.Batch) error {
	for i := range b.Rows {
		*r.seq = append(*r.seq, b.Rows[i].Seq)
		b.Rows[i].Outcome, b.Rows[i].ARK = pipeline.OutcomeMinted, "ark:99999/x9"+b.Rows[i].Record.RequestID
	}
	return nil
}

func TestRunRoutesContiguousRuns(t *testing.T) {
	t.Parallel()
	// 4,000 consecutive IDs: every batch is one contiguous run of the manifest, so each worker
	// appends runs of consecutive IDs to the receipt index and the two never write into the
	// same stretch of it at once
	var body strings.Builder
	body.WriteString("request_id\n")
	for i := range 4000 {
		fmt.Fprintf(&body, "obj-%06d\n", i)
	}
	in := writeFile(t, t.TempDir(), "m.csv", body.String())
	sink := &runSink{memSink: newMemSink()}
	if _, err := pipeline.Run(t.Context(), pipeline.RunConfig{Inputs: []string{in}, Sink: sink, Workers: 2, BatchSize: 500}); err != nil {
		t.Fatal(err)
	}
	workers := map[int]int{}
	rows := 0
	for _, r := range sink.runs {
		if r.last-r.first+1 != int64(r.n) {
			t.Fatalf("worker %d got a batch of %d rows from Seq %d to %d: not a contiguous run", r.worker, r.n, r.first, r.last)
		}
		workers[r.worker]++
		rows += r.n
	}
	if rows != 4000 || len(workers) != 2 {
		t.Fatalf("%d rows in %d batches, by workers %v; want 4000 rows on both workers", rows, len(sink.runs), workers)
	}
	if len(sink.badOrder) > 0 {
		t.Fatal(sink.badOrder[0])
	}
}

// runSink is a memSink that records the Seq range of every batch it gets.
type runSink struct {
	*memSink
	mu   sync.Mutex
	runs []seqRun
}

type seqRun struct {
	worker, n   int
	first, last int64
}

func (s *runSink) OpenWorker(ctx context.Context, worker int) (pipeline.SinkWorker, error) {
	w, err := s.memSink.OpenWorker(ctx, worker)
	return &runWorker{SinkWorker: w, s: s, id: worker}, err
}

type runWorker struct {
	pipeline.SinkWorker
	s  *runSink
	id int
}

func (w *runWorker) Write(ctx context.Context, b *pipeline.Batch) error {
	w.s.mu.Lock()
	w.s.runs = append(w.s.runs, seqRun{worker: w.id, n: len(b.Rows), first: b.Rows[0].Seq, last: b.Rows[len(b.Rows)-1].Seq})
	w.s.mu.Unlock()
	return w.SinkWorker.Write(ctx, b)
}

// TestRunReusesBatches: a batch whose rows were all written out is filled again, and what it
// held does not leak into the rows it gets.
func TestRunReusesBatches(t *testing.T) {
	t.Parallel()
	in := filepath.Join(t.TempDir(), "m.csv")
	if _, err := fixtures.CreateManifestCSV(in, fixtures.ManifestConfig{Rows: 12000, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	sink := &arraySink{memSink: newMemSink(), arrays: map[*pipeline.Row]bool{}}
	mm := &memMap{}
	sum, err := pipeline.Run(t.Context(), pipeline.RunConfig{Inputs: []string{in}, Sink: sink, Workers: 2, BatchSize: 100, MintMap: mm})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Minted != 12000 || len(mm.rows) != 12000 {
		t.Fatalf("summary %+v, %d mint map rows", sum, len(mm.rows))
	}
	for i, r := range mm.rows {
		if want := fmt.Sprintf("obj-%09d", i+1); r.RequestID != want || r.ARK != "ark:99999/x9"+want {
			t.Fatalf("mint map row %d: %+v, want %s (a reused batch leaked a row)", i, r, want)
		}
	}
	// how many arrays depends on how far the reader runs ahead of the collector (a new one when
	// none is free); a run that never fills a written-out batch again has one per batch
	if sum.Batches < 120 || len(sink.arrays) >= int(sum.Batches) {
		t.Fatalf("%d batches in %d row arrays: written-out batches are not filled again", sum.Batches, len(sink.arrays))
	}
}

// arraySink is a memSink that records the row arrays of the batches it gets.
type arraySink struct {
	*memSink
	mu     sync.Mutex
	arrays map[*pipeline.Row]bool
}

func (s *arraySink) OpenWorker(ctx context.Context, worker int) (pipeline.SinkWorker, error) {
	w, err := s.memSink.OpenWorker(ctx, worker)
	return &arrayWorker{SinkWorker: w, s: s}, err
}

type arrayWorker struct {
	pipeline.SinkWorker
	s *arraySink
}

func (w *arrayWorker) Write(ctx context.Context, b *pipeline.Batch) error {
	w.s.mu.Lock()
	w.s.arrays[&b.Rows[:1][0]] = true
	w.s.mu.Unlock()
	return w.SinkWorker.Write(ctx, b)
}
