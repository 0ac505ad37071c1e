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

// BenchmarkWrite10kRowsViaCopyFloor is the floor: 10k pre-built ARK rows (each with its
// receipt) per iteration, one COPY ark in one transaction.
func BenchmarkWrite10kRowsViaCopyFloor(b *testing.B) {
	l := benchLedger(b)
	ctx := context.Background()
	var shoulderID, clientPK int64
	if err := l.Pool.QueryRow(ctx, `select (select id from shoulder where shoulder = '/x9'), (select id from client where client_id = $1)`, benchClient).Scan(&shoulderID, &clientPK); err != nil {
		b.Fatal(err)
	}
	src := ark.NewSeededBlades([32]byte{1})
	blade := make([]byte, 8)
	iter := 0
	for b.Loop() {
		b.StopTimer()
		rows := benchRecords(fmt.Sprintf("floor%d-", iter), writeRows)
		iter++
		arks := make([][]any, 0, writeRows)
		now := time.Now()
		seen := map[string]bool{}
		for i := range rows {
			var name string
			for name == "" || seen[name] {
				_ = src.Blade(blade)
				name = ark.MintName(benchNAAN, benchShoulder, blade)
			}
			seen[name] = true
			r := &rows[i].Record
			key := benchNAAN + "/" + name
			arks = append(arks, []any{key, benchNAAN, shoulderID, name, r.URL, nil, r.Who, r.What, r.When, now, clientPK,
				r.RequestID, rows[i].Digest[:]})
		}
		b.StartTimer()
		err := pgx.BeginFunc(ctx, l.Pool, func(tx pgx.Tx) error {
			_, err := tx.CopyFrom(ctx, pgx.Identifier{"ark"}, floorARKColumns(), pgx.CopyFromRows(arks))
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*writeRows)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkWrite10kRowsViaMintSink is arkhe's sink on the same rows: receipts sampled, names
// drawn, checked per policy, COPY ark (receipts included) + counters in one transaction.
func BenchmarkWrite10kRowsViaMintSink(b *testing.B) {
	for _, check := range []ledger.Check{ledger.CheckAuto, ledger.CheckAlways} {
		b.Run("names="+check.String(), func(b *testing.B) {
			l := benchLedger(b)
			ctx := context.Background()
			sink, err := l.PrepareMint(ctx, ledger.MintConfig{ClientID: benchClient, NameCheck: check})
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
