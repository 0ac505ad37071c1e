package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/localpg"
)

// citusShardCountSetting is printed with the server settings of a Citus run.
const citusShardCountSetting = "citus.shard_count"

// openCitus prepares a macro benchmark named name on a throw-away Citus cluster in dir (a
// coordinator and two workers, localpg.StartCitus: data directories in DIR/citus, sockets in
// DIR/c, the embedded default's settings on every node, fsync on, Citus's default shard
// count), with a pool on the coordinator's maintenance database; close stops the cluster.
// Progress lines go to log (nil discards). On an error nothing is left running.
func openCitus(ctx context.Context, name, dir string, log io.Writer) (_ *server, err error) {
	if log == nil {
		log = io.Discard
	}
	fail := func(err error) error { return fmt.Errorf("bench %s on Citus: %w", name, err) }
	s := &server{dir: dir, log: log, name: name}
	defer func() {
		if err != nil {
			_ = s.close(context.WithoutCancel(ctx))
		}
	}()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fail(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // the postgres account must reach it when run as root
		return nil, fail(err)
	}
	cfg := localpg.CitusConfig{Dir: filepath.Join(dir, "citus"), Persistent: true, Log: log}
	if sock := filepath.Join(dir, "c"); len(sock) <= 92 { // else the default, which fits sun_path
		cfg.SocketDir = sock
	}
	s.logf("starting a local Citus cluster (a coordinator and %d workers) in %s", localpg.DefaultCitusWorkers, cfg.Dir)
	c, err := localpg.StartCitus(ctx, cfg)
	if err != nil {
		return nil, fail(err)
	}
	s.undo = append(s.undo, c.Stop)
	s.citus = c
	s.adminURL = c.URL("postgres")
	s.desc = fmt.Sprintf("a local Citus cluster in %s (a coordinator and %d workers)", c.Dir(), len(c.Workers()))
	for _, n := range c.Nodes() {
		s.dataDirs = append(s.dataDirs, n.DataDir())
	}
	if s.admin, err = pgxpool.New(ctx, s.adminURL); err != nil {
		return nil, fail(fmt.Errorf("connect: %w", err))
	}
	s.undo = append(s.undo, func(context.Context) error { s.admin.Close(); return nil })
	if s.settings, err = readSettings(ctx, s.admin); err != nil {
		return nil, fail(err)
	}
	var shards string
	if err := s.admin.QueryRow(ctx, `select current_setting($1)`, citusShardCountSetting).Scan(&shards); err != nil {
		return nil, fail(err)
	}
	s.settings[citusShardCountSetting] = shards
	return s, nil
}

// kind returns "citus" on a Citus cluster, else "single".
func (s *server) kind() string {
	if s.citus != nil {
		return "citus"
	}
	return "single"
}

// nodeURLs returns the connection strings of database db on every node that takes writes:
// the server's; on Citus the coordinator's, then each worker's.
func (s *server) nodeURLs(db string) []string {
	if s.citus == nil {
		return []string{s.url(db)}
	}
	return append([]string{s.citus.URL(db)}, s.citus.WorkerURLs(db)...)
}

// hasTemplate reports whether template ledger tpl exists (on Citus: marked a template, so
// built to the end).
func (s *server) hasTemplate(ctx context.Context, tpl string) (bool, error) {
	q := `select exists (select 1 from pg_database where datname = $1)`
	if s.citus != nil {
		q = `select exists (select 1 from pg_database where datname = $1 and datistemplate)`
	}
	var ok bool
	err := s.admin.QueryRow(ctx, q, tpl).Scan(&ok)
	return ok, err
}

// create creates the empty database db (on Citus on every node, the citus extension in it and
// the nodes registered: localpg.CitusCluster.CreateDatabase).
func (s *server) create(ctx context.Context, db string) error {
	if s.citus != nil {
		if err := s.citus.CreateDatabase(ctx, db); err != nil {
			return fmt.Errorf("bench %s: %w", s.name, err)
		}
		return nil
	}
	if _, err := s.admin.Exec(ctx, `create database `+pgx.Identifier{db}.Sanitize()); err != nil {
		return fmt.Errorf("bench %s: %w", s.name, err)
	}
	return nil
}

// clone creates db from template tpl (on Citus on every node:
// localpg.CitusCluster.CloneDatabase).
func (s *server) clone(ctx context.Context, db, tpl string) error {
	if s.citus != nil {
		if err := s.citus.CloneDatabase(ctx, tpl, db); err != nil {
			return fmt.Errorf("bench %s: %w", s.name, err)
		}
		return nil
	}
	return cloneDatabase(ctx, s.admin, db, tpl)
}

// drop drops db if it exists (on Citus on every node).
func (s *server) drop(ctx context.Context, db string) error {
	if s.citus != nil {
		if err := s.citus.DropDatabase(ctx, db); err != nil {
			return fmt.Errorf("bench %s: %w", s.name, err)
		}
		return nil
	}
	if _, err := s.admin.Exec(ctx, `drop database if exists `+pgx.Identifier{db}.Sanitize()+` with (force)`); err != nil {
		return fmt.Errorf("bench %s: %w", s.name, err)
	}
	return nil
}

// checkpoint runs CHECKPOINT on the server (on Citus on every node), so a phase does not pay
// for the dirty pages of the one before.
func (s *server) checkpoint(ctx context.Context) error {
	if s.citus == nil {
		if _, err := s.admin.Exec(ctx, `checkpoint`); err != nil {
			return fmt.Errorf("bench %s: checkpoint: %w", s.name, err)
		}
		return nil
	}
	for _, n := range s.citus.Nodes() {
		conn, err := pgx.Connect(ctx, n.URL("postgres"))
		if err != nil {
			return fmt.Errorf("bench %s: checkpoint: %w", s.name, err)
		}
		_, err = conn.Exec(ctx, `checkpoint`)
		_ = conn.Close(context.WithoutCancel(ctx))
		if err != nil {
			return fmt.Errorf("bench %s: checkpoint on %s: %w", s.name, n.DataDir(), err)
		}
	}
	return nil
}

// runMintCitus is RunMint with cfg.Citus: a single node and a Citus cluster side by side in
// one working directory (cfg.Dir, else a temporary one, removed), one manifest for both, the
// pairs alternating between them. The result is the Citus cluster's, with the single node's in
// SingleNode.
func runMintCitus(ctx context.Context, cfg MintConfig) (MintResult, error) {
	res := MintResult{Config: cfg, LoadBefore: loadAverage()}
	single := MintResult{Config: cfg}
	res.SingleNode = &single
	if cfg.DatabaseURL != "" {
		return res, errors.New("bench mint --citus: runs on clusters of its own: --database-url must not be given")
	}
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "arkhe-bench-mint-")
		if err != nil {
			return res, fmt.Errorf("bench mint: %w", err)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	ssrv, err := openServer(ctx, "mint", "", dir, "", cfg.Log)
	if err != nil {
		return res, err
	}
	defer func() { _ = ssrv.close(context.WithoutCancel(ctx)) }()
	csrv, err := openCitus(ctx, "mint", dir, cfg.Log)
	if err != nil {
		return res, err
	}
	defer func() { _ = csrv.close(context.WithoutCancel(ctx)) }()
	sb := &mintBench{srv: ssrv, cfg: cfg, res: &single}
	cb := &mintBench{srv: csrv, cfg: cfg, res: &res}
	if err := sb.prepare(ctx, ""); err != nil {
		return res, err
	}
	if err := cb.prepare(ctx, sb.manifest); err != nil {
		return res, err
	}
	for i := range cfg.Repeat {
		ssrv.logf("single node, run %d of %d", i+1, cfg.Repeat)
		if err := sb.pair(ctx, i); err != nil {
			return res, err
		}
		csrv.logf("Citus, run %d of %d", i+1, cfg.Repeat)
		if err := cb.pair(ctx, i); err != nil {
			return res, err
		}
	}
	sb.finish()
	cb.finish()
	res.LoadAfter = loadAverage()
	single.LoadBefore, single.LoadAfter = res.LoadBefore, res.LoadAfter
	return res, nil
}

// printSideBySide writes the single node (r.SingleNode) and Citus (r) figures of a --citus run
// in two columns, and what Citus costs more per ARK.
func (r MintResult) printSideBySide(w io.Writer) {
	s := r.SingleNode
	if s == nil {
		return
	}
	perM := func(d CPU, rows int64) float64 {
		if rows == 0 {
			return 0
		}
		return d.Server.Seconds() / float64(rows) * 1e6
	}
	fmt.Fprintf(w, "single node and Citus side by side (same machine, same run, same manifest; medians of %d runs):\n", len(r.Pairs))
	fmt.Fprintf(w, "  %-46s %14s %14s\n", "", "single node", "Citus")
	row := func(label, format string, a, b float64) {
		fmt.Fprintf(w, "  %-46s %14s %14s\n", label, fmt.Sprintf(format, a), fmt.Sprintf(format, b))
	}
	row("(b) arkhe mint, rows/s", "%.0f", s.Mint.Rate(), r.Mint.Rate())
	row("(a) floor, rows/s", "%.0f", s.Floor.Rate(), r.Floor.Rate())
	row("ratio (b)/(a), median of the runs' ratios", "%.2f", s.Ratio(), r.Ratio())
	if s.Plain.Rows > 0 { // the plain floor runs on the single node only
		fmt.Fprintf(w, "  %-46s %14.0f %14s\n", "(c) plain floor, rows/s", s.Plain.Rate(), "not measured")
		fmt.Fprintf(w, "  %-46s %14.2f %14s\n", "ratio (b)/(c), median of the runs' ratios", s.PlainRatio(), "not measured")
	}
	row("server CPU s per million ARKs, (b) arkhe", "%.1f", perM(s.MintCPU, s.Mint.Rows), perM(r.MintCPU, r.Mint.Rows))
	row("server CPU s per million ARKs, (a) floor", "%.1f", perM(s.FloorCPU, s.Floor.Rows), perM(r.FloorCPU, r.Floor.Rows))
	row("client CPU s per million ARKs, (b) arkhe", "%.1f", s.MintCPU.Client.Seconds()/float64(max(s.Mint.Rows, 1))*1e6,
		r.MintCPU.Client.Seconds()/float64(max(r.Mint.Rows, 1))*1e6)
	row("octets per ARK: ark (heap, TOAST, indexes)", "%.0f", s.Size.PerARK(s.Size.ARK), r.Size.PerARK(r.Size.ARK))
	row("octets per ARK: its receipt", "%.0f", s.Size.PerARK(s.Size.Receipts), r.Size.PerARK(r.Size.Receipts))
	row("octets per ARK: the whole ledger, every node", "%.0f", s.Size.PerARK(s.Size.Total), r.Size.PerARK(r.Size.Total))
	fmt.Fprintf(w, "  (octets after the first run's (b), %d ARKs; Citus: every shard placement on %d nodes, reference tables on each)\n",
		r.Size.ARKs, r.Size.Nodes)
	cpu := perM(r.MintCPU, r.Mint.Rows) - perM(s.MintCPU, s.Mint.Rows)
	fmt.Fprintf(w, "Citus's overhead per ARK minted: %+.1f µs of server CPU (Citus spends %.1fx the single node's), %+.0f octets on disk (whole ledger)\n",
		cpu, perM(r.MintCPU, r.Mint.Rows)/max(perM(s.MintCPU, s.Mint.Rows), 1e-9), r.Size.PerARK(r.Size.Total)-s.Size.PerARK(s.Size.Total))
}

// receiptsOnRow turns the Citus ledger at u into the layout its receipt table was chosen over:
// receipts as the ark row's request_id and payload_digest, as on a single node, indexed by
// (client, request ID) like the single node's ark_receipt but not unique (a unique index on a
// table distributed by the ARK string must contain it). For MintConfig.ReceiptOnRow only: the
// ledger no longer keeps one receipt per request ID.
func receiptsOnRow(ctx context.Context, u string) error {
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return fmt.Errorf("bench mint: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `alter table ark drop constraint ark_receipt_elsewhere`); err != nil {
		return fmt.Errorf("bench mint: receipts on the ark row: %w", err)
	}
	if _, err := conn.Exec(ctx, `create index ark_receipt_on_row on ark (created_by, request_id) where request_id is not null`); err != nil {
		return fmt.Errorf("bench mint: receipts on the ark row: %w", err)
	}
	return nil
}
