package sizing

// Report is everything `arkhe sizing` shows, in one value for text, TSV and JSON: the
// measurement and its comparison with the model (measured mode) or the plan (model mode), the
// per-row costs the projection uses, and the projections. It carries no internal key.
type Report struct {
	// Mode is "measured" (a live ledger) or "model" (--model, no database).
	Mode        string       `json:"mode"`
	Measurement *Measurement `json:"measurement,omitempty"`
	Comparison  *Comparison  `json:"comparison,omitempty"`
	// Plan is, in model mode, the size of the planned ledger.
	Plan *Point `json:"plan,omitempty"`
	// Fields are the average field lengths the model used: the ledger's own (measured mode,
	// DefaultFields while it is empty) or the plan's.
	Fields Fields `json:"fields"`
	// Model are the structural model's costs for Fields; Costs those the projection uses
	// (measured where the ledger has enough rows, see Measurement.Costs).
	Model Costs `json:"model"`
	Costs Costs `json:"costs"`
	// ReceiptsPerARK and ChangesPerARK are the proportions projected.
	ReceiptsPerARK float64 `json:"receipts_per_ark"`
	ChangesPerARK  float64 `json:"changes_per_ark"`
	// MaxWALSize caps WAL on disk in the projection (the server's max_wal_size, or
	// DefaultMaxWALSize in model mode).
	MaxWALSize int64 `json:"max_wal_size"`
	// Projection is at ProjectionARKs, Plot at PlotARKs (the --table rows).
	Projection []Point `json:"projection"`
	Plot       []Point `json:"plot"`
	// Workers is, for a ledger measured on Citus, the Projection spread over 1, 4 and 16
	// workers (ProjectionWorkers), by ARK count then workers; nil on a single node.
	Workers []WorkerPoint `json:"workers,omitempty"`
	// CollisionWarning is the collision rate from which a shoulder is flagged; Warnings counts
	// the flagged shoulders.
	CollisionWarning float64 `json:"collision_warning"`
	Warnings         int     `json:"warnings"`
}

// MeasuredReport builds the report of a measured ledger: the model fed with the ledger's field
// lengths (DefaultFields while it holds no ARK), Compare, and projections from the measured
// per-row costs in the ledger's proportions of receipts and changes (one receipt and no change
// per ARK while it is empty).
func MeasuredReport(m *Measurement, warnAt float64) *Report {
	if warnAt <= 0 {
		warnAt = DefaultCollisionWarning
	}
	r := &Report{Mode: "measured", Measurement: m, Fields: m.Fields, MaxWALSize: m.Settings.MaxWALSize,
		CollisionWarning: warnAt, ReceiptsPerARK: 1}
	if m.ARKs == 0 {
		r.Fields = DefaultFields()
	} else {
		r.ReceiptsPerARK = float64(m.Receipts) / float64(m.ARKs)
		r.ChangesPerARK = float64(m.Changes) / float64(m.ARKs)
		if m.Receipts == 0 {
			r.Fields.RequestID = DefaultFields().RequestID
		}
	}
	r.Model = ArkheModel(r.Fields)
	r.Costs = m.Costs(r.Model)
	cmp := Compare(m)
	r.Comparison = &cmp
	r.project()
	for _, n := range m.Namespaces {
		for _, s := range n.Shoulders {
			if s.Warn {
				r.Warnings++
			}
		}
	}
	return r
}

// ModelReport builds the report of a plan without a database: the structural model for f, the
// plan's size and projections in the plan's proportions (one receipt per ARK when the plan has
// no ARK).
func ModelReport(p Plan, f Fields) *Report {
	r := &Report{Mode: "model", Fields: f, MaxWALSize: DefaultMaxWALSize, ReceiptsPerARK: 1,
		CollisionWarning: DefaultCollisionWarning}
	if p.ARKs > 0 {
		r.ReceiptsPerARK = float64(p.Receipts) / float64(p.ARKs)
		r.ChangesPerARK = float64(p.Changes) / float64(p.ARKs)
	}
	r.Model = ArkheModel(f)
	r.Costs = r.Model
	r.Costs.WALPer = WALPerLedgerByte * (r.Costs.ARK.Total() + r.ReceiptsPerARK*r.Costs.Receipt.Total())
	pt := r.Costs.Size(p, r.MaxWALSize)
	r.Plan = &pt
	r.project()
	return r
}

func (r *Report) project() {
	r.Projection = r.Costs.Project(ProjectionARKs(), r.ReceiptsPerARK, r.ChangesPerARK, r.MaxWALSize)
	r.Plot = r.Costs.Project(PlotARKs(), r.ReceiptsPerARK, r.ChangesPerARK, r.MaxWALSize)
	if r.Measurement != nil && len(r.Measurement.Nodes) > 0 {
		r.Workers = SpreadOverWorkers(r.Projection, ProjectionWorkers())
	}
}

// WorkerPoint is a projected ledger spread over a number of Citus workers: PerWorker octets on
// each, the distributed tables' share (ARKs, receipts, ARK_CHANGE, evenly spread by their hash)
// plus a full copy of everything else (the reference tables: registration and audit).
type WorkerPoint struct {
	Workers   int   `json:"workers"`
	Point     Point `json:"ledger"`
	PerWorker int64 `json:"per_worker_bytes"`
}

// ProjectionWorkers returns the worker counts of the Citus projection: 1, 4 and 16.
func ProjectionWorkers() []int { return []int{1, 4, 16} }

// SpreadOverWorkers returns each point spread over each worker count: (Total − FixedBytes) /
// workers + FixedBytes per worker, in points order then workers order. It assumes shards spread
// evenly (hash distribution over many shards does, to within a shard's size).
func SpreadOverWorkers(points []Point, workers []int) []WorkerPoint {
	out := make([]WorkerPoint, 0, len(points)*len(workers))
	for _, p := range points {
		for _, w := range workers {
			out = append(out, WorkerPoint{Workers: w, Point: p, PerWorker: (p.Total-p.FixedBytes)/int64(w) + p.FixedBytes})
		}
	}
	return out
}

// AllInPerARK returns the projection's ark + receipt octets per ARK (the 400 B budget's
// figure) under the report's costs and proportions.
func (r *Report) AllInPerARK() float64 {
	return r.Costs.ARK.Total() + r.ReceiptsPerARK*r.Costs.Receipt.Total()
}
