package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/localpg"
)

// server is what every macro benchmark runs on: a working directory and a PostgreSQL server,
// with a pool on its maintenance database.
type server struct {
	// dir is the working directory: the caller's (kept), else a temporary one that close removes.
	dir string
	// adminURL is the connection string of the maintenance database "postgres".
	adminURL string
	// admin is a pool on adminURL.
	admin *pgxpool.Pool
	// desc says where the benchmark ran, for its report: "a local cluster in DIR" or "the
	// server at HOST:PORT" (never a password).
	desc string
	// dataDirs are the local cluster's data directories (one; on Citus every node's), whose
	// processes' CPU time is read; nil on the server of a URL.
	dataDirs []string
	// citus is the local Citus cluster when the benchmark runs on one (openCitus), else nil.
	citus *localpg.CitusCluster
	// settings are the ServerSettings as the server reports them.
	settings map[string]string
	// log receives progress lines (never nil).
	log io.Writer
	// name is the benchmark's, the prefix of its progress lines.
	name string
	// base is adminURL parsed when it is a postgres:// URL, else nil (keyword/value form).
	base *url.URL
	// undo holds what close undoes, last first.
	undo []func(context.Context) error
}

// openServer prepares a macro benchmark named name ("mint", "import", "verify", "sizing"): its
// working directory dir (created when missing), or with dir "" a temporary directory
// arkhe-bench-NAME-* under tempParent ("" means os.TempDir()); then the server of serverURL, or
// with serverURL "" a local cluster in DIR/pg with the embedded default's settings (fsync on,
// the bulk-loading ones); in a kept dir it stays, stopped, for the next run. It reads the ServerSettings. Progress lines go to
// log (nil discards). Every error names the benchmark; on an error nothing is left running.
// Call close when done.
func openServer(ctx context.Context, name, serverURL, dir, tempParent string, log io.Writer) (_ *server, err error) {
	if log == nil {
		log = io.Discard
	}
	fail := func(err error) error { return fmt.Errorf("bench %s: %w", name, err) }
	s := &server{dir: dir, adminURL: serverURL, log: log, name: name}
	defer func() {
		if err != nil {
			_ = s.close(context.WithoutCancel(ctx))
		}
	}()
	if s.dir == "" {
		d, err := os.MkdirTemp(tempParent, "arkhe-bench-"+name+"-")
		if err != nil {
			return nil, fail(err)
		}
		s.undo = append(s.undo, func(context.Context) error { return os.RemoveAll(d) })
		s.dir = d
	} else if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, fail(err)
	}
	if s.adminURL == "" {
		if err := os.Chmod(s.dir, 0o755); err != nil { // the postgres account must reach it when run as root
			return nil, fail(err)
		}
		cfg := localpg.ClusterConfig{DataDir: filepath.Join(s.dir, "pg"), Persistent: true, Log: log}
		if sock := filepath.Join(s.dir, "s"); len(sock) <= 92 { // else the default, which fits sun_path
			cfg.SocketDir = sock
		}
		s.logf("starting a local PostgreSQL cluster in %s", cfg.DataDir)
		c, err := localpg.StartCluster(ctx, cfg)
		if err != nil {
			return nil, fail(err)
		}
		s.undo = append(s.undo, c.Stop)
		s.adminURL = c.URL("postgres")
		s.desc = "a local cluster in " + c.DataDir()
		s.dataDirs = []string{c.DataDir()}
	} else {
		pc, err := pgconn.ParseConfig(s.adminURL)
		if err != nil {
			return nil, fail(fmt.Errorf("database URL: %w", err))
		}
		s.desc = "the server at " + net.JoinHostPort(pc.Host, strconv.Itoa(int(pc.Port)))
	}
	if strings.HasPrefix(s.adminURL, "postgres://") || strings.HasPrefix(s.adminURL, "postgresql://") {
		if s.base, err = url.Parse(s.adminURL); err != nil {
			return nil, fail(fmt.Errorf("database URL: %w", err))
		}
	}
	if s.admin, err = pgxpool.New(ctx, s.adminURL); err != nil {
		return nil, fail(fmt.Errorf("connect: %w", err))
	}
	s.undo = append(s.undo, func(context.Context) error { s.admin.Close(); return nil })
	if s.settings, err = readSettings(ctx, s.admin); err != nil {
		return nil, fail(err)
	}
	return s, nil
}

// logf writes one progress line, "bench NAME: " and the formatted text.
func (s *server) logf(format string, args ...any) {
	fmt.Fprintf(s.log, "bench "+s.name+": "+format+"\n", args...)
}

// close closes the pool, stops the local cluster and removes a temporary working directory,
// in that order; it returns the first error.
func (s *server) close(ctx context.Context) error {
	var errs []error
	for i := len(s.undo) - 1; i >= 0; i-- {
		errs = append(errs, s.undo[i](ctx))
	}
	s.undo = nil
	return errors.Join(errs...)
}

// url returns the connection string of database db on the server (on Citus the coordinator's): adminURL with its database
// replaced (the path of a postgres:// URL, without a dbname parameter that would override it;
// a quoted dbname appended to the keyword/value form).
func (s *server) url(db string) string {
	if s.citus != nil {
		return s.citus.URL(db) // the coordinator's
	}
	if s.base == nil {
		return s.adminURL + " dbname='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(db) + "'"
	}
	p := *s.base
	p.Path, p.RawPath = "/"+db, ""
	q := p.Query()
	q.Del("dbname")
	p.RawQuery = q.Encode()
	return p.String()
}

// printServer writes where a benchmark ran and its server settings, one a line, in
// ServerSettings order (any other name last, by name).
func printServer(w io.Writer, where string, settings map[string]string) {
	fmt.Fprintf(w, "server: %s\n", where)
	order := ServerSettings()
	rank := func(k string) int {
		if i := slices.Index(order, k); i >= 0 {
			return i
		}
		return len(order)
	}
	keys := slices.Collect(maps.Keys(settings))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(rank(a), rank(b)), strings.Compare(a, b)) })
	for _, k := range keys {
		fmt.Fprintf(w, "  %-22s %s\n", k, settings[k])
	}
}
