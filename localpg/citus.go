package localpg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

const (
	// DefaultCitusPort is the coordinator's port when CitusConfig.Port is 0; worker i
	// (counted from 1) listens on DefaultCitusPort+i. The ports only name sockets inside
	// the cluster's own socket directory, so they never clash with another server's.
	DefaultCitusPort = 9700
	// DefaultCitusWorkers is the number of workers when CitusConfig.Workers is 0.
	DefaultCitusWorkers = 2
	// citusCoordinatorDir and citusWorkerPrefix name the nodes' data directories under
	// CitusConfig.Dir: "coordinator", "worker1", "worker2", ...
	citusCoordinatorDir = "coordinator"
	citusWorkerPrefix   = "worker"
)

// ErrCitusNotInstalled is wrapped by StartCitus when the PostgreSQL server in use has no
// Citus extension (citus.so in its library directory, citus.control in its extension
// directory).
var ErrCitusNotInstalled = errors.New("the Citus extension is not installed")

// citusSettings are the server settings every Citus node gets on top of the throw-away set.
// Citus must be preloaded; a distributed transaction is committed by two-phase commit on
// every node it wrote (prepared transactions); every coordinator session may open
// connections to each worker, and every database using Citus runs a maintenance daemon
// (a background worker) on each node.
var citusSettings = map[string]string{
	"shared_preload_libraries":           "citus",
	"max_connections":                    "200",
	"max_prepared_transactions":          "200",
	"max_worker_processes":               "64",
	"citus.enable_statistics_collection": "off",
}

// CitusConfig describes a local Citus cluster for StartCitus: a coordinator and workers on
// one machine, each its own PostgreSQL server with its own data directory and port, all
// listening on Unix sockets in one directory.
type CitusConfig struct {
	// Dir holds the nodes' data directories "<Dir>/coordinator", "<Dir>/worker1", ...;
	// required.
	Dir string
	// SocketDir is the one directory of every node's Unix socket; empty means
	// DefaultSocketDir(Dir). At most 92 bytes (sun_path).
	SocketDir string
	// Workers is the number of worker nodes; 0 means DefaultCitusWorkers (2).
	Workers int
	// Port is the coordinator's port, worker i gets Port+i; 0 means DefaultCitusPort.
	Port int
	// BinDir holds initdb, pg_ctl, postgres and pg_config; empty picks them as StartCluster
	// does.
	BinDir string
	// Database, when not empty, is made ready at start as CreateDatabase does.
	Database string
	// Settings override or extend every node's server settings (e.g. "citus.shard_count").
	// "port" and unix_socket_directories are refused: set Port and SocketDir.
	Settings map[string]string
	// Log receives progress lines of every node; nil discards. Writes are serialized.
	Log io.Writer
	// Persistent gives every node the embedded default's settings (ClusterConfig.Persistent:
	// fsync on, the bulk-loading ones) instead of the throw-away ones (fsync off), e.g. for
	// a benchmark that compares the cluster with a single node of those settings.
	Persistent bool
}

// CitusCluster is a running local Citus cluster: a coordinator and its workers, each a
// *Cluster with throw-away settings (fsync off), reached over Unix sockets in one directory
// with trust authentication for the superuser "postgres". The servers outlive the process
// that started them until Stop.
type CitusCluster struct {
	dir         string
	socketDir   string
	coordinator *Cluster
	workers     []*Cluster
	log         io.Writer
}

// StartCitus starts, or reuses where already running, a Citus cluster of a coordinator
// and cfg.Workers workers in cfg.Dir: each node is a StartCluster of its own data
// directory (created by initdb when missing) with the socket directory cfg.SocketDir, its
// own port, Citus preloaded (shared_preload_libraries=citus), max_connections and
// max_prepared_transactions 200, max_worker_processes 64, listen_addresses=” and fsync off
// (cfg.Persistent: the embedded default's settings, fsync on).
// The nodes start in parallel; when a step fails, the nodes this call started are stopped
// again.
// Before anything is written it checks that the server has Citus installed: otherwise the
// error wraps ErrCitusNotInstalled and says to run make citus. With cfg.Database set that
// database is then made ready (CreateDatabase). The whole call is bounded by ctx and by 3
// minutes per step. Errors are *ClusterError naming the node's data directory, with its
// server log tail where there is one.
func StartCitus(ctx context.Context, cfg CitusConfig) (*CitusCluster, error) {
	if cfg.Dir == "" {
		return nil, errors.New("citus cluster: directory is empty")
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("citus cluster %s: %w", cfg.Dir, err)
	}
	fail := func(op string, err error) (*CitusCluster, error) {
		return nil, &ClusterError{Op: op, DataDir: dir, Err: err}
	}
	for _, k := range []string{"port", "unix_socket_directories"} {
		if _, ok := cfg.Settings[k]; ok {
			return fail("configure", fmt.Errorf("setting %s is refused: set CitusConfig.Port and CitusConfig.SocketDir", k))
		}
	}
	workers := cfg.Workers
	if workers == 0 {
		workers = DefaultCitusWorkers
	}
	port := cfg.Port
	if port == 0 {
		port = DefaultCitusPort
	}
	if workers < 0 || port < 1 || port+workers > 65535 {
		return fail("configure", fmt.Errorf("%d workers from port %d: want workers >= 0 and ports within 1-65535", workers, port))
	}
	socketDir := cfg.SocketDir
	if socketDir == "" {
		socketDir = DefaultSocketDir(dir)
	}
	if socketDir, err = filepath.Abs(socketDir); err != nil {
		return fail("configure", err)
	}
	c := &CitusCluster{dir: dir, socketDir: socketDir, log: &lockedWriter{w: cfg.Log}}
	if cfg.Log == nil {
		c.log = io.Discard
	}

	coordDir := filepath.Join(dir, citusCoordinatorDir)
	existingMajor, err := dataDirMajor(coordDir)
	if err != nil {
		return fail("inspect", err)
	}
	binDir, _, err := findBinDir(ctx, cfg.BinDir, existingMajor)
	if err != nil {
		return fail("find binaries", err)
	}
	if err := citusInstalled(ctx, binDir); err != nil {
		return fail("find citus", err)
	}

	dirs := []string{coordDir}
	for i := 1; i <= workers; i++ {
		dirs = append(dirs, filepath.Join(dir, citusWorkerPrefix+strconv.Itoa(i)))
	}
	nodes := make([]*Cluster, len(dirs))
	errs := make([]error, len(dirs))
	var wg sync.WaitGroup
	for i, d := range dirs {
		settings := make(map[string]string, len(citusSettings)+len(cfg.Settings)+1)
		for k, v := range citusSettings {
			settings[k] = v
		}
		for k, v := range cfg.Settings {
			settings[k] = v
		}
		settings["port"] = strconv.Itoa(port + i)
		wg.Go(func() {
			nodes[i], errs[i] = StartCluster(ctx, ClusterConfig{DataDir: d, SocketDir: socketDir, BinDir: binDir, Settings: settings, Log: c.log,
				Persistent: cfg.Persistent})
		})
	}
	wg.Wait()
	// undo this call's starts when it fails; the failure is what the caller needs to see
	undo := func() {
		for _, n := range nodes {
			if n != nil && !n.Reused() {
				_ = n.Stop(context.WithoutCancel(ctx))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		undo()
		return nil, err
	}
	c.coordinator, c.workers = nodes[0], nodes[1:]
	if cfg.Database != "" {
		if err := c.CreateDatabase(ctx, cfg.Database); err != nil {
			undo()
			return nil, err
		}
	}
	return c, nil
}

// citusInstalled checks that the server whose binaries are in binDir has Citus: citus.so in
// `pg_config --pkglibdir` and citus.control in "`pg_config --sharedir`/extension"; without a
// pg_config beside the binaries, citus.so in "<binDir>/../lib" (Debian's layout). The error
// wraps ErrCitusNotInstalled and names the missing file.
func citusInstalled(ctx context.Context, binDir string) error {
	want := []string{filepath.Join(filepath.Dir(binDir), "lib", "citus.so")}
	if out, err := exec.CommandContext(ctx, filepath.Join(binDir, "pg_config"), "--pkglibdir", "--sharedir").Output(); err == nil {
		if lines := strings.Fields(string(out)); len(lines) == 2 {
			want = []string{filepath.Join(lines[0], "citus.so"), filepath.Join(lines[1], "extension", "citus.control")}
		}
	}
	for _, f := range want {
		if _, err := os.Stat(f); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%w for the PostgreSQL server in %s: %s is missing (run make citus to build and install it)", ErrCitusNotInstalled, binDir, f)
			}
			return err
		}
	}
	return nil
}

// CreateDatabase makes database name ready for distributed tables: on every node, in
// parallel, the database is created unless it exists (SQLSTATE 42P04 tolerated) and the
// citus extension created in it; then, in the coordinator's database, the coordinator is
// registered (citus_set_coordinator_host) and every worker added (citus_add_node), each by
// the socket directory and its port. Every step is idempotent. Citus keeps its node list per
// database, so a database made otherwise (e.g. CREATE DATABASE on the coordinator alone)
// has no workers. Errors are *ClusterError naming the node.
func (c *CitusCluster) CreateDatabase(ctx context.Context, name string) error {
	nodes := c.Nodes()
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() {
			if err := ensureDatabase(ctx, n.URL("postgres"), name); err != nil {
				errs[i] = &ClusterError{Op: "create database " + name, DataDir: n.dataDir, Err: err}
				return
			}
			if err := execOn(ctx, n.URL(name), "create extension if not exists citus"); err != nil {
				errs[i] = &ClusterError{Op: "create extension citus in " + name, DataDir: n.dataDir, Err: err}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fail := func(err error) error {
		return &ClusterError{Op: "register nodes in " + name, DataDir: c.coordinator.dataDir, Err: err}
	}
	conn, err := pgx.Connect(ctx, c.coordinator.URL(name))
	if err != nil {
		return fail(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "select citus_set_coordinator_host($1, $2)", c.socketDir, c.coordinator.port); err != nil {
		return fail(fmt.Errorf("citus_set_coordinator_host(%s, %d): %w", c.socketDir, c.coordinator.port, err))
	}
	for _, w := range c.workers {
		if _, err := conn.Exec(ctx, "select citus_add_node($1, $2)", c.socketDir, w.port); err != nil {
			return fail(fmt.Errorf("citus_add_node(%s, %d): %w", c.socketDir, w.port, err))
		}
	}
	return nil
}

// objectInUse is SQLSTATE 55006 object_in_use.
const objectInUse = "55006"

// MarkTemplate makes database name, already made on every node (CreateDatabase and the
// schema applied), a template on every node: is_template, allow_connections false, and every
// session on it ended (EndSessions). CREATE DATABASE ... TEMPLATE fails while a session holds
// the template ("source database is being accessed by other users"), and Citus's maintenance
// daemon and the connections it keeps between nodes are such sessions. Errors are
// *ClusterError naming the node.
func (c *CitusCluster) MarkTemplate(ctx context.Context, name string) error {
	for _, n := range c.Nodes() {
		if err := execOn(ctx, n.URL("postgres"), "alter database "+pgx.Identifier{name}.Sanitize()+" with is_template true allow_connections false"); err != nil {
			return &ClusterError{Op: "mark " + name + " a template", DataDir: n.dataDir, Err: err}
		}
	}
	return c.EndSessions(ctx, name)
}

// EndSessions ends every session on database name on every node, the coordinator first (its
// sessions hold connections to the workers), waiting up to 10 s for each to exit. Errors are
// *ClusterError naming the node.
func (c *CitusCluster) EndSessions(ctx context.Context, name string) error {
	for _, n := range c.Nodes() {
		if err := execOn(ctx, n.URL("postgres"), "select pg_terminate_backend(pid, 10000) from pg_stat_activity where datname = '"+
			strings.ReplaceAll(name, "'", "''")+"' and pid <> pg_backend_pid()"); err != nil {
			return &ClusterError{Op: "end the sessions on " + name, DataDir: n.dataDir, Err: err}
		}
	}
	return nil
}

// CloneDatabase creates database name from template tmpl (MarkTemplate) on every node: the
// template's sessions ended, then the workers' copies in parallel, then the coordinator's,
// whose maintenance daemon for the new database connects to the workers' copies. The clone
// keeps the template's node list and distributed tables. Errors are *ClusterError naming the
// node.
func (c *CitusCluster) CloneDatabase(ctx context.Context, tmpl, name string) error {
	if err := c.EndSessions(ctx, tmpl); err != nil {
		return err
	}
	create := func(n *Cluster) error {
		if err := execOn(ctx, n.URL("postgres"), "create database "+pgx.Identifier{name}.Sanitize()+" template "+pgx.Identifier{tmpl}.Sanitize()); err != nil {
			return &ClusterError{Op: "create database " + name + " from template " + tmpl, DataDir: n.dataDir, Err: err}
		}
		return nil
	}
	errs := make([]error, len(c.workers))
	var wg sync.WaitGroup
	for i, w := range c.workers {
		wg.Go(func() { errs[i] = create(w) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return create(c.coordinator)
}

// DropDatabase drops database name, if it exists, on every node: the coordinator first, then
// the workers in parallel. DROP DATABASE ... WITH (FORCE) ends the database's sessions, but
// Citus's maintenance daemon may connect again before the drop takes its lock (55006
// object_in_use): each node is tried up to 20 times, 100 ms apart. Errors are *ClusterError
// naming the node.
func (c *CitusCluster) DropDatabase(ctx context.Context, name string) error {
	drop := func(n *Cluster) error {
		var err error
		for range 20 {
			err = execOn(ctx, n.URL("postgres"), "drop database if exists "+pgx.Identifier{name}.Sanitize()+" with (force)")
			var pe *pgconn.PgError
			if err == nil || !errors.As(err, &pe) || pe.Code != objectInUse {
				break
			}
			select {
			case <-ctx.Done():
				err = ctx.Err()
			case <-time.After(100 * time.Millisecond):
				continue
			}
			break
		}
		if err != nil {
			return &ClusterError{Op: "drop database " + name, DataDir: n.dataDir, Err: err}
		}
		return nil
	}
	if err := drop(c.coordinator); err != nil {
		return err
	}
	errs := make([]error, len(c.workers))
	var wg sync.WaitGroup
	for i, w := range c.workers {
		wg.Go(func() { errs[i] = drop(w) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// execOn runs sql once on a new connection to u.
func execOn(ctx context.Context, u, sql string) error {
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, sql)
	return err
}

// URL returns the connection string of database dbname on the coordinator (see
// Cluster.URL): the entry point for distributed DDL and for queries.
func (c *CitusCluster) URL(dbname string) string { return c.coordinator.URL(dbname) }

// WorkerURLs returns the connection strings of database dbname on each worker, in worker
// order; every worker accepts queries and writes on distributed tables too.
func (c *CitusCluster) WorkerURLs(dbname string) []string {
	out := make([]string, len(c.workers))
	for i, w := range c.workers {
		out[i] = w.URL(dbname)
	}
	return out
}

// Coordinator returns the coordinator node.
func (c *CitusCluster) Coordinator() *Cluster { return c.coordinator }

// Workers returns the worker nodes in order (a copy of the slice).
func (c *CitusCluster) Workers() []*Cluster { return append([]*Cluster(nil), c.workers...) }

// Nodes returns the coordinator followed by the workers.
func (c *CitusCluster) Nodes() []*Cluster { return append([]*Cluster{c.coordinator}, c.workers...) }

// Dir returns the absolute directory holding the nodes' data directories.
func (c *CitusCluster) Dir() string { return c.dir }

// SocketDir returns the directory of every node's Unix socket.
func (c *CitusCluster) SocketDir() string { return c.socketDir }

// Stop shuts every node down in parallel (Cluster.Stop: pg_ctl stop -m fast) and then
// removes the socket directory when it is the derived default and empty. Stopping a stopped
// cluster is not an error. Errors are the nodes' *ClusterError, joined.
func (c *CitusCluster) Stop(ctx context.Context) error {
	nodes := c.Nodes()
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() { errs[i] = n.Stop(ctx) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if c.socketDir == DefaultSocketDir(c.dir) {
		_ = os.Remove(c.socketDir) // only if empty: the servers removed their sockets
	}
	return nil
}

// StopCitus stops every node of the Citus cluster StartCitus laid out in dir that has a
// server running (a postmaster.pid), without starting any, and returns how many it stopped.
// It is for a cluster whose *CitusCluster is lost, e.g. one left by a crashed process. A
// directory without nodes is not an error.
func StopCitus(ctx context.Context, dir string) (int, error) {
	workers, _ := filepath.Glob(filepath.Join(dir, citusWorkerPrefix+"*"))
	stopped := 0
	var errs []error
	for _, d := range append([]string{filepath.Join(dir, citusCoordinatorDir)}, workers...) {
		if _, err := os.Stat(filepath.Join(d, "postmaster.pid")); err != nil {
			continue
		}
		// attaching to the running server reuses it as it is; Stop then stops it
		n, err := StartCluster(ctx, ClusterConfig{DataDir: d})
		if err == nil {
			err = n.Stop(ctx)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		stopped++
	}
	return stopped, errors.Join(errs...)
}

// lockedWriter serializes writes of the nodes' concurrent starts to one io.Writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
