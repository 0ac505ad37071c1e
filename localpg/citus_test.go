package localpg

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// shortTempDir returns a new directory under /tmp (t.TempDir is too long for socket paths),
// searchable by the postgres account and removed when t ends.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "lpc-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// skipShort skips a test that starts a Citus cluster in -short mode (make test-short: the
// single node only).
func skipShort(t *testing.T) {
	if testing.Short() {
		t.Skip("-short runs the single node only")
	}
}

// TestCitusCluster: StartCitus makes a coordinator and two workers on one socket directory
// with consecutive ports; the database it prepares has the citus extension on every node and
// every node registered on the coordinator; a distributed table created through the
// coordinator takes rows through a worker; Stop stops every node, and StopCitus finds none
// left to stop.
func TestCitusCluster(t *testing.T) {
	t.Parallel()
	skipShort(t)
	dir := shortTempDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg := CitusConfig{Dir: filepath.Join(dir, "citus"), SocketDir: filepath.Join(dir, "s"), Database: "arkhe", Port: 9800}
	c, err := StartCitus(ctx, cfg)
	if err != nil {
		t.Fatalf("StartCitus: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	if len(c.Workers()) != 2 || len(c.WorkerURLs("arkhe")) != 2 || len(c.Nodes()) != 3 {
		t.Fatalf("%d workers, %d worker URLs, %d nodes; want 2, 2, 3", len(c.Workers()), len(c.WorkerURLs("arkhe")), len(c.Nodes()))
	}
	for i, n := range c.Nodes() {
		if got, want := n.DataDir(), filepath.Join(dir, "citus", []string{"coordinator", "worker1", "worker2"}[i]); got != want {
			t.Errorf("node %d data directory %s, want %s", i, got, want)
		}
		u := n.URL("arkhe")
		if got := queryString(t, u, "show port"); got != strconv.Itoa(9800+i) {
			t.Errorf("node %d port %s, want %d", i, got, 9800+i)
		}
		for setting, want := range map[string]string{"shared_preload_libraries": "citus", "max_prepared_transactions": "200", "fsync": "off", "listen_addresses": ""} {
			if got := queryString(t, u, "show "+setting); got != want {
				t.Errorf("node %d %s = %q, want %q", i, setting, got, want)
			}
		}
		if got := queryString(t, u, "select extversion from pg_extension where extname = 'citus'"); !strings.HasPrefix(got, "13.") {
			t.Errorf("node %d: citus extension version %q, want 13.x", i, got)
		}
	}
	if c.URL("arkhe") != c.Coordinator().URL("arkhe") {
		t.Errorf("URL = %s, want the coordinator's", c.URL("arkhe"))
	}
	nodes := queryString(t, c.URL("arkhe"), "select string_agg(groupid || '@' || nodename || ':' || nodeport, ' ' order by groupid) from pg_dist_node")
	s := c.SocketDir()
	if want := "0@" + s + ":9800 1@" + s + ":9801 2@" + s + ":9802"; nodes != want {
		t.Errorf("pg_dist_node = %q, want %q", nodes, want)
	}
	// idempotent: a second CreateDatabase changes nothing
	if err := c.CreateDatabase(ctx, "arkhe"); err != nil {
		t.Fatalf("second CreateDatabase: %v", err)
	}
	if got := queryString(t, c.URL("arkhe"), "select count(*)::text from pg_dist_node"); got != "3" {
		t.Errorf("after a second CreateDatabase pg_dist_node has %s rows, want 3", got)
	}
	execSQL(t, c.URL("arkhe"), `create table t (k text primary key, v int); select create_distributed_table('t', 'k')`)
	execSQL(t, c.WorkerURLs("arkhe")[1], "insert into t select 'k' || g, g from generate_series(1, 100) g")
	if got := queryString(t, c.WorkerURLs("arkhe")[0], "select sum(v)::text from t"); got != "5050" {
		t.Errorf("sum through worker 1 = %s, want 5050", got)
	}
	if got := queryString(t, c.URL("arkhe"), "select count(distinct nodeport)::text from citus_shards where table_name = 't'::regclass"); got != "2" {
		t.Errorf("shards of t on %s nodes, want 2 (the workers)", got)
	}

	// attaching to the running cluster reuses every node
	again, err := StartCitus(ctx, CitusConfig{Dir: cfg.Dir, SocketDir: cfg.SocketDir, Port: 9800})
	if err != nil {
		t.Fatalf("second StartCitus: %v", err)
	}
	for i, n := range again.Nodes() {
		if !n.Reused() {
			t.Errorf("second StartCitus: node %d not reused", i)
		}
	}
	if err := c.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	for _, n := range c.Nodes() {
		if _, err := os.Stat(filepath.Join(n.DataDir(), "postmaster.pid")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after Stop: %s/postmaster.pid stat err = %v, want not exist", n.DataDir(), err)
		}
	}
	if n, err := StopCitus(ctx, cfg.Dir); n != 0 || err != nil {
		t.Errorf("StopCitus on a stopped cluster = %d, %v; want 0, nil", n, err)
	}
}

// TestCitusStopOrphan: StopCitus stops the running nodes of a cluster whose *CitusCluster is
// lost and starts none of the stopped ones.
func TestCitusStopOrphan(t *testing.T) {
	t.Parallel()
	skipShort(t)
	dir := shortTempDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := StartCitus(ctx, CitusConfig{Dir: filepath.Join(dir, "citus"), SocketDir: filepath.Join(dir, "s"), Workers: 1})
	if err != nil {
		t.Fatalf("StartCitus: %v", err)
	}
	t.Cleanup(func() { c.Stop(context.Background()) })
	if err := c.Workers()[0].Stop(ctx); err != nil {
		t.Fatal(err)
	}
	n, err := StopCitus(ctx, c.Dir())
	if n != 1 || err != nil {
		t.Fatalf("StopCitus = %d, %v; want 1 (the coordinator; the worker was stopped already), nil", n, err)
	}
	for _, node := range c.Nodes() {
		if _, err := os.Stat(filepath.Join(node.DataDir(), "postmaster.pid")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still running: %v", node.DataDir(), err)
		}
	}
}

// TestCitusNotInstalled: a server without citus.so is refused before anything is created,
// with an error that wraps ErrCitusNotInstalled, names the missing file and says how to
// install it.
func TestCitusNotInstalled(t *testing.T) {
	t.Parallel()
	real, _, err := findBinDir(context.Background(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	fake := t.TempDir()
	bin := filepath.Join(fake, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"initdb", "pg_ctl", "postgres"} {
		if err := os.Symlink(filepath.Join(real, name), filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	script := "#!/bin/sh\necho " + filepath.Join(fake, "lib") + "\necho " + filepath.Join(fake, "share") + "\n"
	if err := os.WriteFile(filepath.Join(bin, "pg_config"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "citus")
	_, err = StartCitus(context.Background(), CitusConfig{Dir: dir, SocketDir: "/tmp/lpc-never", BinDir: bin})
	if !errors.Is(err, ErrCitusNotInstalled) {
		t.Fatalf("err = %v, want ErrCitusNotInstalled", err)
	}
	for _, want := range []string{filepath.Join(fake, "lib", "citus.so"), "run make citus"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the cluster directory was made: stat err = %v", err)
	}
}

// TestCitusRefusals: configurations refused before anything is written.
func TestCitusRefusals(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "citus")
	for _, tc := range []struct {
		name string
		cfg  CitusConfig
		want string
	}{
		{"empty dir", CitusConfig{}, "directory is empty"},
		{"port setting", CitusConfig{Dir: dir, Settings: map[string]string{"port": "5"}}, "set CitusConfig.Port"},
		{"socket setting", CitusConfig{Dir: dir, Settings: map[string]string{"unix_socket_directories": "/tmp"}}, "set CitusConfig.Port and CitusConfig.SocketDir"},
		{"ports overflow", CitusConfig{Dir: dir, Port: 65535, Workers: 2}, "ports within 1-65535"},
		{"negative workers", CitusConfig{Dir: dir, Workers: -1}, "want workers >= 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := StartCitus(context.Background(), tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused configuration made %s: stat err = %v", dir, err)
	}
}
