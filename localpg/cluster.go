package localpg

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

const (
	// clusterSuperuser is the superuser role initdb creates (-U) and the account the
	// server runs as when arkhe runs as root.
	clusterSuperuser = "postgres"
	// clusterDatabase is the database ResolveDatabase creates in the embedded cluster.
	clusterDatabase = "arkhe"
	// settingsFileName is the file, inside the data directory, that StartCluster rewrites
	// with the server settings before each start; postgresql.conf includes it.
	settingsFileName = "arkhe.conf"
	// serverLogName is the server's log file inside the data directory (pg_ctl -l).
	serverLogName = "server.log"
	// minServerMajor is the oldest PostgreSQL major version the cluster harness accepts.
	minServerMajor = 14
	// maxSocketDirLen bounds the socket directory so "<dir>/.s.PGSQL.65535" fits the
	// 107 usable bytes of sun_path (Linux: 108 bytes with the terminating NUL).
	maxSocketDirLen = 107 - len("/.s.PGSQL.65535")
	// clusterTimeout bounds StartCluster and Stop (lock wait, initdb, pg_ctl) beyond the
	// context's own deadline; a persistent cluster may replay up to max_wal_size of WAL
	// after a crash.
	clusterTimeout = 3 * time.Minute
	// duplicateDatabase is SQLSTATE 42P04 duplicate_database.
	duplicateDatabase = "42P04"
)

// persistentSettings are the server settings of the embedded default cluster, tuned for
// bulk loading on a 2-core / 24 GB machine; fsync stays on. wal_level=minimal lets a COPY
// into a table created or truncated in the same transaction skip WAL.
var persistentSettings = map[string]string{
	"shared_buffers":       "1GB",
	"effective_cache_size": "8GB",
	"work_mem":             "64MB",
	"maintenance_work_mem": "512MB",
	"max_wal_size":         "4GB",
	"min_wal_size":         "1GB",
	"checkpoint_timeout":   "30min",
	"wal_level":            "minimal",
	"max_wal_senders":      "0",
}

// throwawaySettings are the server settings of a non-persistent (test) cluster: nothing is
// made durable, so a crash loses the cluster.
var throwawaySettings = map[string]string{
	"fsync":              "off",
	"synchronous_commit": "off",
	"full_page_writes":   "off",
	"wal_level":          "minimal",
	"max_wal_senders":    "0",
}

// ClusterConfig describes a local PostgreSQL cluster for StartCluster.
type ClusterConfig struct {
	// DataDir is the cluster's data directory (PGDATA); required. The embedded default
	// uses "<data dir>/pg" (see DefaultDataDir). Its parent holds the
	// start lock "<DataDir>.lock".
	DataDir string
	// SocketDir is the directory of the server's Unix socket; empty means
	// "/tmp/arkhe-<first 8 hex digits of sha256(DataDir)>". At most 92 bytes, so the socket
	// path fits sun_path; never a t.TempDir() (too long).
	SocketDir string
	// BinDir holds initdb, pg_ctl and postgres; empty means the highest
	// /usr/lib/postgresql/<major>/bin with major >= 14, else `pg_config --bindir`, else PATH.
	// An existing data directory picks binaries of its own major version.
	BinDir string
	// Persistent keeps fsync on and applies the bulk-loading settings (shared_buffers=1GB,
	// max_wal_size=4GB, ...); false is for tests: fsync, synchronous_commit and
	// full_page_writes off, initdb --no-sync.
	Persistent bool
	// Settings override or extend the server settings (name → value as in
	// postgresql.conf). unix_socket_directories is refused: set SocketDir.
	Settings map[string]string
	// Log receives progress lines and the output of pg_ctl (initdb's only when it fails, in the
	// error); nil discards.
	Log io.Writer
}

// Cluster is a running local PostgreSQL server reached over its Unix socket only
// (listen_addresses=”), with trust authentication for the superuser "postgres". The
// server outlives the process that started it until Stop: the embedded default is left
// running after arkhe exits, like a daemon, so the next run starts fast.
type Cluster struct {
	dataDir   string
	socketDir string
	port      int
	binDir    string
	major     int
	user      serverUser
	settings  map[string]string
	reused    bool
	log       io.Writer
}

// ClusterError is a failure to initialize, start or stop a cluster; LogTail holds the end
// of the server log written during the attempt (may be empty). Err is the cause.
type ClusterError struct {
	Op      string // "initdb", "start", "stop", "connect", ...
	DataDir string
	LogTail string
	Err     error
}

// Error names the operation and data directory and appends the server log tail.
func (e *ClusterError) Error() string {
	msg := fmt.Sprintf("postgres cluster %s: %s: %v", e.DataDir, e.Op, e.Err)
	if e.LogTail != "" {
		msg += "\nserver log (tail):\n" + e.LogTail
	}
	return msg
}

// Unwrap returns the cause.
func (e *ClusterError) Unwrap() error { return e.Err }

// StartCluster returns the running cluster in cfg.DataDir, creating it with initdb
// (-U postgres --auth=trust -E UTF8 --locale=C) when PG_VERSION is missing and starting it
// with pg_ctl start -w when it is not running; a running server is reused as it is (its
// settings apply until it restarts), unless it does not run the binaries found now (the
// postgres file it was started from was replaced, e.g. by a package upgrade, or they are in
// another directory; see StartedFrom): then it is restarted (pg_ctl stop -m fast, which ends
// its sessions, and start), as the log says. Starts of one data directory are serialized by a
// flock(2) on "<DataDir>.lock", so concurrent processes neither corrupt nor double-start
// it. As root the binaries run as the "postgres" account and the data and socket
// directories are given to it; directories above them lacking search permission for it get
// o+x (reported on cfg.Log). The whole call is bounded by ctx and by 3 minutes. Errors are
// *ClusterError carrying the server log tail where there is one.
func StartCluster(ctx context.Context, cfg ClusterConfig) (*Cluster, error) {
	ctx, cancel := context.WithTimeout(ctx, clusterTimeout)
	defer cancel()
	if cfg.DataDir == "" {
		return nil, errors.New("postgres cluster: data directory is empty")
	}
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("postgres cluster %s: %w", cfg.DataDir, err)
	}
	fail := func(op string, err error) (*Cluster, error) {
		return nil, &ClusterError{Op: op, DataDir: dataDir, Err: err}
	}
	if _, ok := cfg.Settings["unix_socket_directories"]; ok {
		return fail("configure", errors.New("setting unix_socket_directories is refused: set ClusterConfig.SocketDir"))
	}
	socketDir := cfg.SocketDir
	if socketDir == "" {
		socketDir = DefaultSocketDir(dataDir)
	}
	if socketDir, err = filepath.Abs(socketDir); err != nil {
		return fail("configure", err)
	}
	if len(socketDir) > maxSocketDirLen {
		return fail("configure", fmt.Errorf("socket directory %s is %d bytes, over %d: the socket path would not fit sun_path", socketDir, len(socketDir), maxSocketDirLen))
	}
	user, err := currentServerUser()
	if err != nil {
		return fail("configure", err)
	}
	c := &Cluster{dataDir: dataDir, socketDir: socketDir, user: user, log: cfg.Log}
	if c.log == nil {
		c.log = io.Discard
	}

	if err := os.MkdirAll(filepath.Dir(dataDir), 0o755); err != nil {
		return fail("create parent", err)
	}
	unlock, err := c.lock(ctx)
	if err != nil {
		return fail("lock", err)
	}
	defer unlock()

	existingMajor, err := dataDirMajor(dataDir)
	if err != nil {
		return fail("inspect", err)
	}
	if c.binDir, c.major, err = findBinDir(ctx, cfg.BinDir, existingMajor); err != nil {
		return fail("find binaries", err)
	}
	if existingMajor == 0 {
		if err := c.initdb(ctx, cfg.Persistent); err != nil {
			return nil, err
		}
	}
	running, err := c.running(ctx)
	if err != nil {
		return fail("status", err)
	}
	settings := clusterSettings(cfg, socketDir)
	started := !running
	if running {
		c.reused = true
		pid, err := readPidFile(dataDir)
		if why := binariesChanged(dataDir, c.binDir, pid.pid); err == nil && why != "" {
			// its new sessions would load libraries of other binaries than it runs
			fmt.Fprintf(c.log, "the PostgreSQL server running in %s does not run the installed binaries: %s; restarting it\n", dataDir, why)
			if err := c.restartLocked(ctx, StopFast); err != nil {
				return nil, err
			}
			c.reused, started = false, true
		}
	} else if err := c.start(ctx, settings); err != nil {
		return nil, err
	}
	if err := c.awaitReady(ctx, settings); err != nil {
		return nil, err
	}
	if started {
		c.recordStartedFrom(ctx)
	}
	return c, nil
}

// recordStartedFrom records what the server was just started from (StartedFrom); a failure
// to is reported on the log only: the next use then cannot tell whether the binaries changed.
func (c *Cluster) recordStartedFrom(ctx context.Context) {
	if err := recordStartedFrom(ctx, c.dataDir, c.binDir); err != nil {
		fmt.Fprintf(c.log, "cannot record which binaries started the server in %s: %v\n", c.dataDir, err)
	}
}

// DefaultSocketDir returns the socket directory StartCluster derives for dataDir:
// "/tmp/arkhe-" and the first 8 hex digits of sha256(dataDir), 19 bytes.
func DefaultSocketDir(dataDir string) string {
	sum := sha256.Sum256([]byte(dataDir))
	return "/tmp/arkhe-" + hex.EncodeToString(sum[:4])
}

// DefaultDataDir returns arkhe's data directory when --data-dir is not given:
// $ARKHE_DATA_DIR, else /var/lib/arkhe for root (a root home is not
// readable by the postgres account), else $XDG_DATA_HOME/arkhe (when absolute), else
// ~/.local/share/arkhe. The embedded cluster lives in "<data dir>/pg". It errors only
// when the home directory is unknown.
func DefaultDataDir() (string, error) {
	return defaultDataDir(os.Geteuid(), os.Getenv, os.UserHomeDir)
}

func defaultDataDir(euid int, getenv func(string) string, home func() (string, error)) (string, error) {
	if d := getenv("ARKHE_DATA_DIR"); d != "" {
		abs, err := filepath.Abs(d)
		if err != nil {
			return "", fmt.Errorf("ARKHE_DATA_DIR %q: %w", d, err)
		}
		return abs, nil
	}
	if euid == 0 {
		return "/var/lib/arkhe", nil
	}
	if x := getenv("XDG_DATA_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "arkhe"), nil
	}
	h, err := home()
	if err != nil {
		return "", fmt.Errorf("default data directory: %w", err)
	}
	return filepath.Join(h, ".local", "share", "arkhe"), nil
}

// ResolveDatabase decides which database arkhe uses and returns its connection string:
// explicitURL when given (--database-url); else $ARKHE_DATABASE_URL; else "" when any of
// PGHOST, PGDATABASE or PGSERVICE is set (pgx.ParseConfig("") then reads the libpq
// environment); else the embedded cluster in "<dataDir>/pg" (dataDir "" means
// DefaultDataDir), started or reused with the persistent settings, with database "arkhe"
// created if missing (SQLSTATE 42P04 tolerated). The embedded server keeps running after
// arkhe exits. Progress goes to log (nil discards).
func ResolveDatabase(ctx context.Context, explicitURL, dataDir string, log io.Writer) (string, error) {
	return resolveDatabase(ctx, explicitURL, dataDir, log, os.Getenv)
}

func resolveDatabase(ctx context.Context, explicitURL, dataDir string, log io.Writer, getenv func(string) string) (string, error) {
	if explicitURL != "" {
		return explicitURL, nil
	}
	if u := getenv("ARKHE_DATABASE_URL"); u != "" {
		return u, nil
	}
	for _, k := range []string{"PGHOST", "PGDATABASE", "PGSERVICE"} {
		if getenv(k) != "" {
			return "", nil
		}
	}
	if dataDir == "" {
		d, err := defaultDataDir(os.Geteuid(), getenv, os.UserHomeDir)
		if err != nil {
			return "", err
		}
		dataDir = d
	}
	c, err := StartCluster(ctx, ClusterConfig{DataDir: filepath.Join(dataDir, "pg"), Persistent: true, Log: log})
	if err != nil {
		return "", err
	}
	if err := ensureDatabase(ctx, c.URL("postgres"), clusterDatabase); err != nil {
		return "", &ClusterError{Op: "create database " + clusterDatabase, DataDir: c.dataDir, Err: err}
	}
	return c.URL(clusterDatabase), nil
}

// ensureDatabase creates database name through the server at adminURL unless it exists.
func ensureDatabase(ctx context.Context, adminURL, name string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, "select exists(select 1 from pg_database where datname = $1)", name).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "create database "+pgx.Identifier{name}.Sanitize())
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == duplicateDatabase {
		return nil
	}
	return err
}

// URL returns a pgx connection string for database dbname over the cluster's socket, as
// user postgres: "postgres://postgres@/<dbname>?host=<socket dir>&port=<port>&sslmode=disable".
func (c *Cluster) URL(dbname string) string {
	u := url.URL{
		Scheme: "postgres",
		User:   url.User(clusterSuperuser),
		Path:   "/" + dbname,
		RawQuery: url.Values{
			"host":    {c.socketDir},
			"port":    {strconv.Itoa(c.port)},
			"sslmode": {"disable"},
		}.Encode(),
	}
	return u.String()
}

// Stop shuts the server down with pg_ctl stop -m fast (sessions are disconnected, no data
// is lost), bounded by ctx and by 3 minutes. Stopping a stopped cluster is not an error.
// Errors are *ClusterError.
func (c *Cluster) Stop(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, clusterTimeout)
	defer cancel()
	unlock, err := c.lock(ctx)
	if err != nil {
		return &ClusterError{Op: "lock", DataDir: c.dataDir, Err: err}
	}
	defer unlock()
	running, err := c.running(ctx)
	if err != nil {
		return &ClusterError{Op: "status", DataDir: c.dataDir, Err: err}
	}
	if !running {
		return nil
	}
	fmt.Fprintf(c.log, "stopping PostgreSQL server in %s\n", c.dataDir)
	logStart := fileSize(c.LogFile())
	if out, err := c.run(ctx, logOutput, "pg_ctl", "stop", "-D", c.dataDir, "-m", "fast", "-w", "-s", "-t", timeoutSeconds(ctx)); err != nil {
		return &ClusterError{Op: "stop", DataDir: c.dataDir, Err: fmt.Errorf("%w: %s", err, out), LogTail: logTail(c.LogFile(), logStart)}
	}
	if c.socketDir == DefaultSocketDir(c.dataDir) {
		_ = os.Remove(c.socketDir) // the directory StartCluster made; only if empty (the server removed its socket)
	}
	return nil
}

// Settings returns the server's current value (current_setting) of each setting
// StartCluster configured, read when StartCluster returned; a reused server reports the
// values it was started with. The map is a copy.
func (c *Cluster) Settings() map[string]string {
	out := make(map[string]string, len(c.settings))
	for k, v := range c.settings {
		out[k] = v
	}
	return out
}

// DataDir returns the cluster's absolute data directory.
func (c *Cluster) DataDir() string { return c.dataDir }

// SocketDir returns the directory holding the server's Unix socket.
func (c *Cluster) SocketDir() string { return c.socketDir }

// LogFile returns the path of the server log ("<DataDir>/server.log").
func (c *Cluster) LogFile() string { return filepath.Join(c.dataDir, serverLogName) }

// BinDir returns the directory of the PostgreSQL binaries in use (initdb, pg_ctl, postgres).
func (c *Cluster) BinDir() string { return c.binDir }

// Reused reports whether StartCluster found the server already running.
func (c *Cluster) Reused() bool { return c.reused }

// Major returns the PostgreSQL major version of the binaries in use (e.g. 15).
func (c *Cluster) Major() int { return c.major }

// lock takes the start/stop lock "<DataDir>.lock" and returns its release.
func (c *Cluster) lock(ctx context.Context) (func(), error) {
	f, err := os.OpenFile(c.dataDir+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := LockFile(ctx, f, true); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil // closing the descriptor releases the flock
}

// dataDirMajor returns the major version recorded in dataDir/PG_VERSION, or 0 when the
// file does not exist.
func dataDirMajor(dataDir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "PG_VERSION"))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	major, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", filepath.Join(dataDir, "PG_VERSION"), err)
	}
	return major, nil
}

// versionPattern finds the version in `postgres --version` output, e.g.
// "postgres (PostgreSQL) 15.14 (Debian 15.14-0+deb12u1)".
var versionPattern = regexp.MustCompile(`\(PostgreSQL\) (\d+)`)

// findBinDir picks the directory of the PostgreSQL binaries: explicit, else the Debian
// layout (highest version first), else pg_config --bindir, else PATH. want > 0 requires
// that major version (an existing data directory); otherwise the first >= 14 wins. Each
// source is consulted only when the ones before it have no fitting binaries (pg_config is a
// script that runs several processes).
func findBinDir(ctx context.Context, explicit string, want int) (string, int, error) {
	var sources []func() []string
	if explicit != "" {
		sources = []func() []string{func() []string { return []string{explicit} }}
	} else {
		sources = []func() []string{
			func() []string {
				dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
				sort.Slice(dirs, func(i, j int) bool {
					vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
					vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
					return vi > vj
				})
				return dirs
			},
			func() []string {
				if pgConfig, err := exec.LookPath("pg_config"); err == nil {
					if out, err := exec.CommandContext(ctx, pgConfig, "--bindir").Output(); err == nil {
						return []string{strings.TrimSpace(string(out))}
					}
				}
				return nil
			},
			func() []string {
				if pgCtl, err := exec.LookPath("pg_ctl"); err == nil {
					return []string{filepath.Dir(pgCtl)}
				}
				return nil
			},
		}
	}
	var tried []string
	seen := map[string]bool{}
	for _, source := range sources {
		for _, dir := range source() {
			if seen[dir] {
				continue
			}
			seen[dir] = true
			major, err := binMajor(ctx, dir)
			if err != nil {
				tried = append(tried, err.Error())
				continue
			}
			tried = append(tried, fmt.Sprintf("%s is PostgreSQL %d", dir, major))
			if (want > 0 && major == want) || (want == 0 && major >= minServerMajor) {
				return dir, major, nil
			}
		}
	}
	need := fmt.Sprintf("PostgreSQL >= %d", minServerMajor)
	if want > 0 {
		need = fmt.Sprintf("PostgreSQL %d (the data directory's version)", want)
	}
	if len(tried) == 0 {
		return "", 0, fmt.Errorf("no %s binaries found (looked in /usr/lib/postgresql/*/bin, pg_config --bindir, PATH)", need)
	}
	return "", 0, fmt.Errorf("no %s binaries found: %s", need, strings.Join(tried, "; "))
}

// ServerBinaries returns the directory and major version of the PostgreSQL binaries
// StartCluster uses for a new data directory when ClusterConfig.BinDir is empty (see
// ClusterConfig.BinDir for the search order). It errors when none of version 14 or later is found.
func ServerBinaries(ctx context.Context) (dir string, major int, err error) {
	return findBinDir(ctx, "", 0)
}

// binMajor runs "<dir>/postgres --version" (allowed as root) and checks initdb and pg_ctl.
func binMajor(ctx context.Context, dir string) (int, error) {
	for _, name := range []string{"initdb", "pg_ctl"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return 0, fmt.Errorf("%s: %w", dir, err)
		}
	}
	out, err := exec.CommandContext(ctx, filepath.Join(dir, "postgres"), "--version").Output()
	if err != nil {
		return 0, fmt.Errorf("%s/postgres --version: %w", dir, err)
	}
	m := versionPattern.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("%s/postgres --version: unrecognized output %q", dir, bytes.TrimSpace(out))
	}
	major, err := strconv.Atoi(string(m[1]))
	if err != nil {
		return 0, fmt.Errorf("%s/postgres --version: %w", dir, err)
	}
	return major, nil
}

// initdbArgs returns the arguments every cluster is created with (initdb, besides its data
// directory and, for a throw-away cluster, --no-sync): superuser, authentication, encoding and
// locale.
func initdbArgs() []string {
	return []string{"-U", clusterSuperuser, "--auth=trust", "-E", "UTF8", "--locale=C", "--no-instructions"}
}

// InitdbArgsHash returns 8 hexadecimal digits hashing the arguments every cluster is created
// with (superuser, authentication, encoding, locale): a copy of a cluster stands for a new one
// only if both were made with the same, so seed clusters kept across runs (fixtures/pgtest's,
// localpg's own tests') carry it in their names.
func InitdbArgsHash() string {
	sum := sha256.Sum256([]byte(strings.Join(initdbArgs(), "\x00")))
	return hex.EncodeToString(sum[:4])
}

// initdb creates the cluster in "<DataDir>.initdb" and renames it into place, so a crash
// never leaves a half-made DataDir; DataDir must be absent or empty.
func (c *Cluster) initdb(ctx context.Context, persistent bool) error {
	fail := func(err error) error { return &ClusterError{Op: "initdb", DataDir: c.dataDir, Err: err} }
	if entries, err := os.ReadDir(c.dataDir); err == nil {
		if len(entries) > 0 {
			return fail(fmt.Errorf("%s is not empty and has no PG_VERSION: not a PostgreSQL data directory", c.dataDir))
		}
		if err := os.Remove(c.dataDir); err != nil {
			return fail(err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fail(err)
	}
	tmp := c.dataDir + ".initdb"
	if err := os.RemoveAll(tmp); err != nil {
		return fail(err)
	}
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return fail(err)
	}
	if err := c.user.chown(tmp); err != nil {
		return fail(err)
	}
	if err := c.makeSearchable(filepath.Dir(tmp)); err != nil {
		return fail(err)
	}
	fmt.Fprintf(c.log, "creating PostgreSQL %d cluster in %s\n", c.major, c.dataDir)
	args := append([]string{"-D", tmp}, initdbArgs()...)
	if !persistent {
		args = append(args, "--no-sync")
	}
	// initdb's own chatter (20 lines) is kept out of the log; it is in the error when it fails
	if out, err := c.run(ctx, 0, "initdb", args...); err != nil {
		os.RemoveAll(tmp)
		return fail(fmt.Errorf("%w: %s", err, out))
	}
	if err := ensureInclude(filepath.Join(tmp, "postgresql.conf")); err != nil {
		os.RemoveAll(tmp)
		return fail(err)
	}
	if err := os.Rename(tmp, c.dataDir); err != nil {
		os.RemoveAll(tmp)
		return fail(err)
	}
	return nil
}

// includeLine is appended to postgresql.conf so the settings StartCluster writes apply
// (ALTER SYSTEM's postgresql.auto.conf is read later and still wins).
const includeLine = "include_if_exists = '" + settingsFileName + "'\t# written by arkhe"

// ensureInclude appends includeLine to the postgresql.conf at path unless present.
func ensureInclude(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if bytes.Contains(b, []byte(includeLine)) {
		return nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(f, "\n%s\n", includeLine); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// clusterSettings merges the fixed socket settings, the persistent or throw-away set and
// cfg.Settings (which win).
func clusterSettings(cfg ClusterConfig, socketDir string) map[string]string {
	s := map[string]string{"listen_addresses": "", "unix_socket_directories": socketDir}
	base := throwawaySettings
	if cfg.Persistent {
		base = persistentSettings
	}
	for k, v := range base {
		s[k] = v
	}
	for k, v := range cfg.Settings {
		s[k] = v
	}
	return s
}

// renderSettings writes settings in postgresql.conf syntax, sorted, values single-quoted
// with quotes and backslashes escaped.
func renderSettings(settings map[string]string) []byte {
	var b bytes.Buffer
	b.WriteString("# Written by arkhe before each server start; changes here are overwritten.\n")
	b.WriteString("# Use ALTER SYSTEM (postgresql.auto.conf) or arkhe's settings instead.\n")
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	esc := strings.NewReplacer(`\`, `\\`, `'`, `''`)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s = '%s'\n", k, esc.Replace(settings[k]))
	}
	return b.Bytes()
}

// start prepares directories and settings and runs pg_ctl start -w.
func (c *Cluster) start(ctx context.Context, settings map[string]string) error {
	fail := func(op string, err error) error { return &ClusterError{Op: op, DataDir: c.dataDir, Err: err} }
	if err := c.prepareSocketDir(); err != nil {
		return fail("socket directory", err)
	}
	if err := c.chownDataDir(); err != nil {
		return fail("data directory", err)
	}
	if err := c.makeSearchable(filepath.Dir(c.dataDir)); err != nil {
		return fail("data directory", err)
	}
	conf := filepath.Join(c.dataDir, settingsFileName)
	if err := os.WriteFile(conf, renderSettings(settings), 0o600); err != nil {
		return fail("write settings", err)
	}
	if err := c.user.chown(conf); err != nil {
		return fail("write settings", err)
	}
	if err := ensureInclude(filepath.Join(c.dataDir, "postgresql.conf")); err != nil {
		return fail("write settings", err)
	}
	logFile := c.LogFile()
	f, err := os.OpenFile(logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fail("server log", err)
	}
	f.Close()
	if err := c.user.chown(logFile); err != nil {
		return fail("server log", err)
	}
	logStart := fileSize(logFile)
	fmt.Fprintf(c.log, "starting PostgreSQL %d server in %s (socket %s, log %s)\n", c.major, c.dataDir, c.socketDir, logFile)
	out, err := c.run(ctx, logOutput|ownGroup, "pg_ctl", "start", "-D", c.dataDir, "-l", logFile, "-w", "-s", "-t", timeoutSeconds(ctx))
	if err != nil {
		return &ClusterError{Op: "start", DataDir: c.dataDir, Err: fmt.Errorf("%w: %s", err, out), LogTail: logTail(logFile, logStart)}
	}
	return nil
}

// prepareSocketDir creates the socket directory (mode 0700, owned by the server account)
// or checks that an existing one belongs to it or to this process.
func (c *Cluster) prepareSocketDir() error {
	if err := os.MkdirAll(filepath.Dir(c.socketDir), 0o755); err != nil {
		return err
	}
	if err := os.Mkdir(c.socketDir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	fi, err := os.Lstat(c.socketDir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", c.socketDir)
	}
	if owner, ok := fileOwner(fi); ok && owner != c.user.uid && owner != uint32(os.Geteuid()) {
		return fmt.Errorf("%s belongs to another user; remove it or set a socket directory", c.socketDir)
	}
	if err := c.user.chown(c.socketDir); err != nil {
		return err
	}
	if err := os.Chmod(c.socketDir, 0o700); err != nil {
		return err
	}
	return c.makeSearchable(filepath.Dir(c.socketDir))
}

// chownDataDir gives the data directory tree to the server account (root only); the walk
// is skipped when the directory itself already belongs to it.
func (c *Cluster) chownDataDir() error {
	if !c.user.drop {
		return nil
	}
	fi, err := os.Lstat(c.dataDir)
	if err != nil {
		return err
	}
	if c.user.owns(fi) {
		return nil
	}
	return filepath.WalkDir(c.dataDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return c.user.chown(path)
	})
}

// makeSearchable adds o+x to dir and its ancestors where the server account could not
// traverse them (root only), reporting each change on the log.
func (c *Cluster) makeSearchable(dir string) error {
	if !c.user.drop {
		return nil
	}
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		if !c.user.canSearch(fi) {
			if err := os.Chmod(d, fi.Mode().Perm()|0o001); err != nil {
				return fmt.Errorf("make %s searchable by %s: %w", d, c.user.name, err)
			}
			fmt.Fprintf(c.log, "added o+x to %s so the %s account can reach the cluster\n", d, c.user.name)
		}
		if parent := filepath.Dir(d); parent == d {
			return nil
		}
	}
}

// running reports whether a server is running on the data directory (pg_ctl status: exit
// 0 running, 3 not running, 4 no data directory).
func (c *Cluster) running(ctx context.Context) (bool, error) {
	out, err := c.run(ctx, 0, "pg_ctl", "status", "-D", c.dataDir)
	if err == nil {
		return true, nil
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) && (exit.ExitCode() == 3 || exit.ExitCode() == 4) {
		return false, nil
	}
	return false, fmt.Errorf("pg_ctl status: %w: %s", err, out)
}

// awaitReady waits for postmaster.pid to say "ready", takes the socket directory and port
// from it, connects once and reads the current value of each configured setting.
func (c *Cluster) awaitReady(ctx context.Context, settings map[string]string) error {
	fail := func(err error) error {
		return &ClusterError{Op: "connect", DataDir: c.dataDir, Err: err, LogTail: logTail(c.LogFile(), fileSize(c.LogFile())-4096)}
	}
	for {
		pid, err := readPidFile(c.dataDir)
		if err == nil && (pid.status == "ready" || pid.status == "standby") {
			if pid.socketDir == "" {
				return fail(errors.New("the server listens on no Unix socket (unix_socket_directories is empty)"))
			}
			if pid.socketDir != c.socketDir {
				fmt.Fprintf(c.log, "running server uses socket directory %s\n", pid.socketDir)
			}
			c.socketDir, c.port = pid.socketDir, pid.port
			break
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("server status %q", pid.status)
			}
			return fail(fmt.Errorf("waiting for the server: %w (%w)", ctx.Err(), err))
		case <-time.After(50 * time.Millisecond):
		}
	}
	cfg, err := pgx.ParseConfig(c.URL("postgres"))
	if err != nil {
		return fail(err)
	}
	cfg.ConnectTimeout = 10 * time.Second
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fail(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	names := make([]string, 0, len(settings))
	for k := range settings {
		names = append(names, k)
	}
	rows, err := conn.Query(ctx, "select name, current_setting(name, true) from unnest($1::text[]) as name", names)
	if err != nil {
		return fail(err)
	}
	c.settings = make(map[string]string, len(names))
	for rows.Next() {
		var name string
		var value *string
		if err := rows.Scan(&name, &value); err != nil {
			return fail(err)
		}
		if value != nil {
			c.settings[name] = *value
		}
	}
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	return nil
}

// pidFile is what postmaster.pid says: line 1 PID, 4 port, 5 first socket directory,
// 8 status ("starting", "stopping", "ready", "standby").
type pidFile struct {
	pid       int
	port      int
	socketDir string
	status    string
}

func readPidFile(dataDir string) (pidFile, error) {
	path := filepath.Join(dataDir, "postmaster.pid")
	b, err := os.ReadFile(path)
	if err != nil {
		return pidFile{}, err
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 8 {
		return pidFile{}, fmt.Errorf("%s: %d lines, want at least 8", path, len(lines))
	}
	var p pidFile
	if p.pid, err = strconv.Atoi(strings.TrimSpace(lines[0])); err != nil {
		return pidFile{}, fmt.Errorf("%s line 1: %w", path, err)
	}
	if p.port, err = strconv.Atoi(strings.TrimSpace(lines[3])); err != nil {
		return pidFile{}, fmt.Errorf("%s line 4: %w", path, err)
	}
	p.socketDir = strings.TrimSpace(lines[4])
	p.status = strings.TrimSpace(lines[7])
	return p, nil
}

// runOpts modify run: logOutput copies the output to the cluster's log; ownGroup starts
// the process (and so the postmaster it spawns) in a new process group.
type runOpts uint8

const (
	logOutput runOpts = 1 << iota
	ownGroup
)

// run runs a PostgreSQL binary as the server account with a clean environment (no PG*
// variables, C locale), from "/", and returns its combined output.
func (c *Cluster) run(ctx context.Context, opts runOpts, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.binDir, name), args...)
	cmd.Dir = "/"
	cmd.Env = serverEnv(os.Environ())
	var out bytes.Buffer
	cmd.Stdout = &out
	if opts&logOutput != 0 {
		cmd.Stdout = io.MultiWriter(&out, c.log)
	}
	cmd.Stderr = cmd.Stdout
	cmd.WaitDelay = 5 * time.Second
	c.user.apply(cmd, opts&ownGroup != 0)
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("%s: %w", name, err)
	}
	return strings.TrimSpace(out.String()), err
}

// serverEnv drops the libpq/server variables (PGDATA, PGPORT, ...) and locale variables
// that would change what the binaries do, and sets LC_ALL=C.
func serverEnv(environ []string) []string {
	env := make([]string, 0, len(environ)+1)
	for _, kv := range environ {
		if strings.HasPrefix(kv, "PG") || strings.HasPrefix(kv, "LC_") || strings.HasPrefix(kv, "LANG") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C")
}

// timeoutSeconds is the pg_ctl -t value: ctx's remaining time, else clusterTimeout.
func timeoutSeconds(ctx context.Context) string {
	d := clusterTimeout
	if deadline, ok := ctx.Deadline(); ok {
		d = time.Until(deadline)
	}
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}

// fileSize returns the size of path, or 0.
func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// logTail returns what was written to path after offset from, at most its last 4 KiB
// trimmed to whole lines; "" when unreadable.
func logTail(path string, from int64) string {
	const limit = 4096
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	size := fileSize(path)
	start := min(size, max(0, from, size-limit))
	b := make([]byte, size-start)
	n, _ := f.ReadAt(b, start)
	b = b[:n]
	if start > max(0, from) {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return strings.TrimRight(string(b), "\n")
}
