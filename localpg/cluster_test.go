package localpg

import (
	"context"
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// startTestCluster starts a throw-away cluster in a fresh directory with the derived socket
// directory, and stops it and removes that socket directory when t ends.
func startTestCluster(t *testing.T, cfg ClusterConfig) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := StartCluster(ctx, cfg)
	if err != nil {
		t.Fatalf("StartCluster: %v", err)
	}
	cleanupCluster(t, c)
	return c
}

// cleanupCluster stops c and removes its socket directory when t ends (registered after the
// data directory's temporary directory, so it runs before that is removed).
func cleanupCluster(t *testing.T, c *Cluster) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
		os.RemoveAll(c.SocketDir())
	})
}

func queryString(t *testing.T, url, sql string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	defer conn.Close(ctx)
	var s string
	if err := conn.QueryRow(ctx, sql).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}

func execSQL(t *testing.T, url, sql string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// TestClusterLifecycle: a cluster just made (a copy of the seed) is started, a second
// StartCluster reuses it, data survives Stop and a new start, and Stop is idempotent.
func TestClusterLifecycle(t *testing.T) {
	t.Parallel()
	// a copy of the seed, as initdb left it: making a new cluster is TestClusterConcurrentStart's
	// and TestClusterResolveDatabaseEmbedded's
	dataDir := seededDataDir(t)
	cfg := ClusterConfig{DataDir: dataDir, Settings: map[string]string{"work_mem": "7MB"}}
	c := startTestCluster(t, cfg)

	if c.Reused() {
		t.Error("first start: Reused() = true, want false")
	}
	if got, want := c.SocketDir(), DefaultSocketDir(dataDir); got != want {
		t.Errorf("SocketDir() = %q, want %q", got, want)
	}
	if !strings.Contains(c.URL("postgres"), "host=%2Ftmp%2Farkhe-") {
		t.Errorf("URL = %q, want host=/tmp/arkhe-... escaped", c.URL("postgres"))
	}
	settings := c.Settings()
	for k, want := range map[string]string{"fsync": "off", "full_page_writes": "off", "synchronous_commit": "off", "work_mem": "7MB", "listen_addresses": "", "wal_level": "minimal"} {
		if got, ok := settings[k]; !ok || got != want {
			t.Errorf("Settings()[%q] = %q (present %v), want %q", k, got, ok, want)
		}
	}
	u := c.URL("postgres")
	if v, _ := strconv.Atoi(queryString(t, u, "show server_version_num")); v < 140000 {
		t.Errorf("server_version_num = %d, want >= 140000", v)
	}
	if got := queryString(t, u, "select current_user"); got != "postgres" {
		t.Errorf("current_user = %q, want postgres", got)
	}
	if os.Geteuid() == 0 {
		pg, err := user.Lookup("postgres")
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(dataDir)
		if err != nil {
			t.Fatal(err)
		}
		if owner, _ := fileOwner(fi); strconv.Itoa(int(owner)) != pg.Uid {
			t.Errorf("data directory owner uid %d, want postgres (%s)", owner, pg.Uid)
		}
	}
	execSQL(t, u, "create table survivor (x int); insert into survivor values (42)")

	ctx := context.Background()
	again, err := StartCluster(ctx, cfg)
	if err != nil {
		t.Fatalf("second StartCluster: %v", err)
	}
	if !again.Reused() {
		t.Error("second start: Reused() = false, want true")
	}
	if again.URL("postgres") != u {
		t.Errorf("second start URL %q, want %q", again.URL("postgres"), u)
	}
	if got := queryString(t, again.URL("postgres"), "select x::text from survivor"); got != "42" {
		t.Errorf("reused cluster: survivor = %q, want 42", got)
	}

	if err := c.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := c.Stop(ctx); err != nil {
		t.Fatalf("second Stop of a stopped cluster: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "postmaster.pid")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Stop: postmaster.pid stat err = %v, want not exist", err)
	}
	if _, err := os.Stat(c.SocketDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Stop: socket directory %s stat err = %v, want removed", c.SocketDir(), err)
	}

	restarted := startTestCluster(t, cfg)
	if restarted.Reused() {
		t.Error("start after Stop: Reused() = true, want false")
	}
	if got := queryString(t, restarted.URL("postgres"), "select x::text from survivor"); got != "42" {
		t.Errorf("after restart: survivor = %q, want 42", got)
	}
}

// TestClusterConcurrentStart: two StartCluster calls racing on one new data directory both
// succeed on one server; exactly one of them started it.
func TestClusterConcurrentStart(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(shmTempDir(t), "pg")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var (
		wg       sync.WaitGroup
		clusters [2]*Cluster
		errs     [2]error
	)
	for i := range clusters {
		wg.Go(func() { clusters[i], errs[i] = StartCluster(ctx, ClusterConfig{DataDir: dataDir}) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("StartCluster #%d: %v", i, err)
		}
	}
	cleanupCluster(t, clusters[0])
	if clusters[0].Reused() == clusters[1].Reused() {
		t.Errorf("Reused() = %v and %v, want exactly one true", clusters[0].Reused(), clusters[1].Reused())
	}
	if clusters[0].URL("postgres") != clusters[1].URL("postgres") {
		t.Errorf("URLs differ: %q vs %q", clusters[0].URL("postgres"), clusters[1].URL("postgres"))
	}
	if got := queryString(t, clusters[1].URL("postgres"), "select 'ok'"); got != "ok" {
		t.Errorf("query = %q", got)
	}
}

// TestClusterStartFailureShowsLog: a refused setting makes pg_ctl start fail with the
// server's complaint in the error; a corrected start then succeeds on the same directory.
// The cluster is a copy of the seed (not a test of initdb).
func TestClusterStartFailureShowsLog(t *testing.T) {
	t.Parallel()
	dataDir := seededDataDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bad := ClusterConfig{DataDir: dataDir, Settings: map[string]string{"shared_buffers": "plenty"}}
	_, err := StartCluster(ctx, bad)
	t.Cleanup(func() { os.RemoveAll(DefaultSocketDir(dataDir)) })
	var ce *ClusterError
	if !errors.As(err, &ce) {
		t.Fatalf("StartCluster with a bad setting: err = %v, want *ClusterError", err)
	}
	if ce.Op != "start" {
		t.Errorf("Op = %q, want start", ce.Op)
	}
	if !strings.Contains(ce.LogTail, `"shared_buffers"`) || !strings.Contains(err.Error(), "server log (tail)") {
		t.Errorf("error lacks the server's complaint about shared_buffers:\n%v", err)
	}
	c := startTestCluster(t, ClusterConfig{DataDir: dataDir})
	t.Logf("the refused start said:\n%v", err)
	if got := queryString(t, c.URL("postgres"), "show shared_buffers"); got != "128MB" {
		t.Errorf("shared_buffers after a corrected start = %q, want the default 128MB", got)
	}
}

// TestClusterRefusals: configurations refused before anything is written.
func TestClusterRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	notEmpty := t.TempDir()
	if err := os.WriteFile(filepath.Join(notEmpty, "stray"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  ClusterConfig
		want string
	}{
		{"empty data dir", ClusterConfig{}, "data directory is empty"},
		{"long socket dir", ClusterConfig{DataDir: filepath.Join(t.TempDir(), "pg"), SocketDir: "/tmp/" + strings.Repeat("s", 100)}, "would not fit sun_path"},
		{"socket setting", ClusterConfig{DataDir: filepath.Join(t.TempDir(), "pg"), Settings: map[string]string{"unix_socket_directories": "/tmp"}}, "set ClusterConfig.SocketDir"},
		{"foreign directory", ClusterConfig{DataDir: notEmpty, SocketDir: filepath.Join("/tmp", "arkhe-refusal-test")}, "not a PostgreSQL data directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := StartCluster(ctx, tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(notEmpty, "stray")); err != nil {
		t.Errorf("refused directory was changed: %v", err)
	}
}

func TestClusterDefaultDataDir(t *testing.T) {
	t.Parallel()
	home := func() (string, error) { return "/home/ana", nil }
	noHome := func() (string, error) { return "", errors.New("$HOME is not defined") }
	for _, tc := range []struct {
		name string
		euid int
		env  map[string]string
		home func() (string, error)
		want string
	}{
		{"override", 1000, map[string]string{"ARKHE_DATA_DIR": "/srv/ark", "XDG_DATA_HOME": "/x"}, home, "/srv/ark"},
		{"override as root", 0, map[string]string{"ARKHE_DATA_DIR": "/srv/ark"}, home, "/srv/ark"},
		{"root", 0, map[string]string{"XDG_DATA_HOME": "/root/.local/share"}, home, "/var/lib/arkhe"},
		{"xdg", 1000, map[string]string{"XDG_DATA_HOME": "/data/ana"}, home, "/data/ana/arkhe"},
		{"relative xdg ignored", 1000, map[string]string{"XDG_DATA_HOME": "rel"}, home, "/home/ana/.local/share/arkhe"},
		{"home", 1000, nil, home, "/home/ana/.local/share/arkhe"},
		{"no home", 1000, nil, noHome, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := defaultDataDir(tc.euid, func(k string) string { return tc.env[k] }, tc.home)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("got %q, want an error", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestClusterResolveDatabaseOrder: an explicit URL beats $ARKHE_DATABASE_URL, which beats
// the libpq variables (""), none of which starts a cluster.
func TestClusterResolveDatabaseOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dataDir := filepath.Join(t.TempDir(), "never")
	for _, tc := range []struct {
		name     string
		explicit string
		env      map[string]string
		want     string
	}{
		{"explicit", "postgres://a/b", map[string]string{"ARKHE_DATABASE_URL": "postgres://c/d", "PGHOST": "h"}, "postgres://a/b"},
		{"arkhe env", "", map[string]string{"ARKHE_DATABASE_URL": "postgres://c/d", "PGHOST": "h"}, "postgres://c/d"},
		{"PGHOST", "", map[string]string{"PGHOST": "h"}, ""},
		{"PGDATABASE", "", map[string]string{"PGDATABASE": "d"}, ""},
		{"PGSERVICE", "", map[string]string{"PGSERVICE": "s"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resolveDatabase(ctx, tc.explicit, dataDir, nil, func(k string) string { return tc.env[k] })
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a cluster directory was made: stat err = %v", err)
	}
}

// TestClusterResolveDatabaseEmbedded: with nothing configured the persistent embedded
// cluster is started in <dataDir>/pg with database arkhe; a second call reuses both.
func TestClusterResolveDatabaseEmbedded(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dataDir := shmTempDir(t)
	noEnv := func(string) string { return "" }
	u, err := resolveDatabase(ctx, "", dataDir, nil, noEnv)
	t.Cleanup(func() {
		c, err := StartCluster(context.Background(), ClusterConfig{DataDir: filepath.Join(dataDir, "pg")})
		if err != nil {
			t.Errorf("reattach to stop: %v", err)
			return
		}
		cleanupCluster(t, c)
	})
	if err != nil {
		t.Fatalf("resolveDatabase: %v", err)
	}
	if got := queryString(t, u, "select current_database()"); got != "arkhe" {
		t.Errorf("current_database() = %q, want arkhe", got)
	}
	for setting, want := range map[string]string{"fsync": "on", "shared_buffers": "1GB", "max_wal_size": "4GB", "wal_level": "minimal"} {
		if got := queryString(t, u, "show "+setting); got != want {
			t.Errorf("embedded cluster %s = %q, want %q", setting, got, want)
		}
	}
	again, err := resolveDatabase(ctx, "", dataDir, nil, noEnv)
	if err != nil || again != u {
		t.Fatalf("second resolveDatabase = %q, %v; want %q", again, err, u)
	}
}

func TestClusterRenderSettings(t *testing.T) {
	t.Parallel()
	got := string(renderSettings(map[string]string{"b": `it's`, "a": `c:\x`, "listen_addresses": ""}))
	want := "a = 'c:\\\\x'\nb = 'it''s'\nlisten_addresses = ''\n"
	if !strings.HasSuffix(got, want) {
		t.Errorf("renderSettings =\n%s\nwant it to end with\n%s", got, want)
	}
}

func TestClusterLogTail(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "log")
	var b strings.Builder
	for i := range 1000 {
		b.WriteString("line " + strconv.Itoa(i) + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	tail := logTail(path, 0)
	if len(tail) > 4096 || !strings.HasPrefix(tail, "line ") || !strings.HasSuffix(tail, "line 999") {
		t.Errorf("logTail(0): %d bytes, starts %q, ends %q", len(tail), tail[:min(10, len(tail))], tail[max(0, len(tail)-10):])
	}
	size := fileSize(path)
	if got := logTail(path, size-len64("line 998\nline 999\n")); got != "line 998\nline 999" {
		t.Errorf("logTail(from the last two lines) = %q", got)
	}
	if got := logTail(filepath.Join(t.TempDir(), "missing"), 0); got != "" {
		t.Errorf("logTail(missing) = %q, want empty", got)
	}
}

func len64(s string) int64 { return int64(len(s)) }
