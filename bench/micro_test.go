package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/fixtures"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/loader"
	"github.com/arkhe-ledger/arkhe/pipeline"
)

// nullSink settles every row as minted without a database: what the streaming engine costs.
type nullSink struct{}

func (nullSink) OpenWorker(context.Context, int) (pipeline.SinkWorker, error) { return nullSink{}, nil }
func (nullSink) Close() error                                                 { return nil }
func (nullSink) Write(_ context.Context, b *pipeline.Batch) error {
	for i := range b.Rows {
		b.Rows[i].Outcome, b.Rows[i].ARK = pipeline.OutcomeMinted, "ark:99999/x9bcdfghjk0"
	}
	return nil
}

type discardMap struct{ n int }

func (d *discardMap) Write(pipeline.MintMapRow) error { d.n++; return nil }
func (d *discardMap) Close() error                    { return nil }
func (d *discardMap) Abort() error                    { return nil }

// BenchmarkPipelineRun100k reads, validates, routes, digests and reorders a 100k-row CSV manifest
// through a sink that does nothing: the engine's own cost per row.
func BenchmarkPipelineRun100k(b *testing.B) {
	in := filepath.Join(b.TempDir(), "m.csv")
	st, err := fixtures.CreateManifestCSV(in, fixtures.ManifestConfig{Rows: 100_000, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Bytes)
	b.ReportAllocs()
	for b.Loop() {
		mm := &discardMap{}
		if _, err := pipeline.Run(context.Background(), pipeline.RunConfig{Inputs: []string{in}, Sink: nullSink{}, MintMap: mm, BatchSize: 10_000}); err != nil {
			b.Fatal(err)
		}
		if mm.n != 100_000 {
			b.Fatalf("%d rows", mm.n)
		}
	}
	b.ReportMetric(float64(b.N*100_000)/b.Elapsed().Seconds(), "rows/s")
}

// benchRecords returns n records with request IDs prefix + number.
func benchRecords(prefix string, n int) []pipeline.Row {
	rows := make([]pipeline.Row, n)
	for i := range rows {
		var rec pipeline.Record
		rec.Set(pipeline.FieldRequestID, prefix+strconv.Itoa(i))
		rec.Set(pipeline.FieldURL, "https://example.org/objects/"+strconv.Itoa(i))
		rec.Set(pipeline.FieldWhat, "Study of a River "+strconv.Itoa(i))
		rec.Set(pipeline.FieldWho, "Hokusai")
		rec.Set(pipeline.FieldWhen, "1830")
		rows[i] = pipeline.Row{Seq: int64(i), Record: rec, Digest: pipeline.PayloadDigest(&rec)}
	}
	return rows
}

func benchLedger(b *testing.B) *ledger.Ledger {
	l := &ledger.Ledger{Pool: pgtest.New(b)}
	if err := RegisterBench(context.Background(), l); err != nil {
		b.Fatal(err)
	}
	return l
}

const writeRows = 10_000

// microFloorRows builds the floor's rows for records: one ARK per record under the bench
// shoulder, names drawn from src without a repeat, in floorARKColumns' order (the ARK and its
// receipt on one row, change_seq NULL and the digest's first ledger.ReceiptDigestOctets octets,
// as arkhe's mint writes a row on one node).
func microFloorRows(records []pipeline.Row, src ark.BladeSource, shoulderID, clientPK int64, now time.Time) [][]any {
	arks := make([][]any, 0, len(records))
	blade := make([]byte, 8)
	seen := map[string]bool{}
	for i := range records {
		var name string
		for name == "" || seen[name] {
			_ = src.Blade(blade)
			name = ark.MintName(benchNAAN, benchShoulder, blade)
		}
		seen[name] = true
		r := &records[i].Record
		arks = append(arks, []any{benchNAAN + "/" + name, benchNAAN, shoulderID, name, r.URL, nil, r.Who, r.What, r.When,
			nil, now, clientPK, r.RequestID, records[i].Digest[:ledger.ReceiptDigestOctets]})
	}
	return arks
}

// microFloorKeys reads the bench shoulder's and client's keys for microFloorRows.
func microFloorKeys(ctx context.Context, l *ledger.Ledger) (shoulderID, clientPK int64, err error) {
	err = l.Pool.QueryRow(ctx, `select (select id from shoulder where shoulder = $1), (select id from client where client_id = $2)`,
		benchShoulder, benchClient).Scan(&shoulderID, &clientPK)
	return shoulderID, clientPK, err
}

// copyFloorRowsOnce COPYs arks into ark in one transaction, as the floor benchmark does.
func copyFloorRowsOnce(ctx context.Context, l *ledger.Ledger, arks [][]any) (int64, error) {
	var n int64
	err := pgx.BeginFunc(ctx, l.Pool, func(tx pgx.Tx) error {
		var err error
		n, err = tx.CopyFrom(ctx, pgx.Identifier{"ark"}, floorARKColumns(), pgx.CopyFromRows(arks))
		return err
	})
	return n, err
}

// TestMicroFloorRowsLand: the rows the floor benchmark COPYs are rows the ledger accepts, with
// their receipts (make bench stopped at this benchmark when the floor's columns gained
// change_seq and its rows did not).
func TestMicroFloorRowsLand(t *testing.T) {
	ctx := t.Context()
	l := &ledger.Ledger{Pool: pgtest.New(t)}
	if err := RegisterBench(ctx, l); err != nil {
		t.Fatal(err)
	}
	shoulderID, clientPK, err := microFloorKeys(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	arks := microFloorRows(benchRecords("floor-", 50), ark.NewSeededBlades([32]byte{1}), shoulderID, clientPK, time.Now())
	if n, err := copyFloorRowsOnce(ctx, l, arks); err != nil || n != 50 {
		t.Fatalf("COPY of the floor's rows: %d rows, %v", n, err)
	}
	var receipts int
	if err := l.Pool.QueryRow(ctx, `select count(*) from mint_receipt where request_id like 'floor-%'`).Scan(&receipts); err != nil || receipts != 50 {
		t.Fatalf("%d receipts of the floor's rows (%v), want 50", receipts, err)
	}
}

// BenchmarkWrite10kRowsViaCopyFloor is the floor: 10k pre-built ARK rows (each with its
// receipt) per iteration, one COPY ark in one transaction.
func BenchmarkWrite10kRowsViaCopyFloor(b *testing.B) {
	l := benchLedger(b)
	ctx := context.Background()
	shoulderID, clientPK, err := microFloorKeys(ctx, l)
	if err != nil {
		b.Fatal(err)
	}
	src := ark.NewSeededBlades([32]byte{1})
	iter := 0
	for b.Loop() {
		b.StopTimer()
		arks := microFloorRows(benchRecords(fmt.Sprintf("floor%d-", iter), writeRows), src, shoulderID, clientPK, time.Now())
		iter++
		b.StartTimer()
		if _, err := copyFloorRowsOnce(ctx, l, arks); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*writeRows)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkWrite10kRowsViaMintSink is arkhe's sink on the same rows: receipts sampled, names
// drawn, checked per policy, COPY ark (receipts included) + counters in one transaction.
func BenchmarkWrite10kRowsViaMintSink(b *testing.B) {
	for _, check := range []loader.Check{loader.CheckAuto, loader.CheckAlways} {
		b.Run("names="+check.String(), func(b *testing.B) {
			l := benchLedger(b)
			ctx := context.Background()
			sink, err := loader.PrepareMint(ctx, l, loader.MintConfig{ClientID: benchClient, NameCheck: check})
			if err != nil {
				b.Fatal(err)
			}
			w, err := sink.OpenWorker(ctx, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			iter := 0
			for b.Loop() {
				b.StopTimer()
				batch := &pipeline.Batch{Rows: benchRecords(fmt.Sprintf("sink%d-", iter), writeRows)}
				iter++
				b.StartTimer()
				if err := w.Write(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*writeRows)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
