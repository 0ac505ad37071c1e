package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arkhe-ledger/arkhe/api"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// APIConfig configures RunAPI.
type APIConfig struct {
	// Clients is the number of concurrent HTTP clients, each on its own keep-alive connection
	// (0: 32); the pgbench floor runs as many clients.
	Clients int
	// Duration is how long each side is measured (0: 10 s).
	Duration time.Duration
	// Pool is the API server's ledger connections (0: 16, arkhe serve's default).
	Pool int
	// Arklet is arklet's source archive (git archive, .tar.gz) to measure as well; "" for none.
	Arklet string
	// ServerURL, Dir: as in VerifyConfig ("" for a throw-away local cluster in a temporary
	// directory).
	ServerURL, Dir string
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

// APIResult is what RunAPI measured.
type APIResult struct {
	Server   string
	Clients  int
	Duration time.Duration
	// Mints are the ARKs the API minted (HTTP 200) in Elapsed; Errors the requests answered
	// otherwise or failed.
	Mints, Errors int64
	Elapsed       time.Duration
	// FloorTPS is pgbench's rate of the same single-row mint through ark_mint_one, called by
	// Clients sessions with -M prepared (0 when pgbench did not run: FloorNote says why).
	FloorTPS  float64
	FloorNote string
	// KeyDerivations are the API's Argon2id derivations (one per client key and secret).
	KeyDerivations int64
	// ArkletMints and ArkletElapsed are arklet's POST /mint under the same load (Django's
	// threaded server, Debian's Django and psycopg2), ArkletErrors its other answers; ArkletNote
	// says why it did not run ("" when it did).
	ArkletMints, ArkletErrors int64
	ArkletElapsed             time.Duration
	ArkletNote                string
}

// ArkletRate is arklet's mints per second (0 when it did not run).
func (r APIResult) ArkletRate() float64 {
	if r.ArkletElapsed <= 0 {
		return 0
	}
	return float64(r.ArkletMints) / r.ArkletElapsed.Seconds()
}

// Rate is the API's mints per second.
func (r APIResult) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Mints) / r.Elapsed.Seconds()
}

// Ratio is the API's rate over the floor's (0 without a floor).
func (r APIResult) Ratio() float64 {
	if r.FloorTPS <= 0 {
		return 0
	}
	return r.Rate() / r.FloorTPS
}

// Print writes the result.
func (r APIResult) Print(w io.Writer) {
	fmt.Fprintf(w, "bench api on %s: %d clients, %s each side\n", r.Server, r.Clients, r.Duration)
	fmt.Fprintf(w, "  arkhe API (POST /mint over HTTP/1.1 keep-alive, Idempotency-Key on each): %d mints in %.2f s, %.0f mints/s (%d errors, %d key derivations)\n",
		r.Mints, r.Elapsed.Seconds(), r.Rate(), r.Errors, r.KeyDerivations)
	if r.FloorTPS > 0 {
		fmt.Fprintf(w, "  floor (pgbench, select ark_mint_one(...) per transaction, -M prepared): %.0f mints/s\n", r.FloorTPS)
		fmt.Fprintf(w, "  ratio (API / floor): %.2f (target >= 0.5; goal >= 2000 mints/s)\n", r.Ratio())
	} else {
		fmt.Fprintf(w, "  floor: not run (%s)\n", r.FloorNote)
	}
	if r.ArkletNote != "" {
		fmt.Fprintf(w, "  arklet POST /mint: not run (%s)\n", r.ArkletNote)
		return
	}
	fmt.Fprintf(w, "  arklet POST /mint (Django's threaded server, same clients): %d mints in %.2f s, %.0f mints/s (%d errors)\n",
		r.ArkletMints, r.ArkletElapsed.Seconds(), r.ArkletRate(), r.ArkletErrors)
	if r.ArkletRate() > 0 {
		fmt.Fprintf(w, "  ratio (API / arklet): %.1f\n", r.Rate()/r.ArkletRate())
	}
}

// RunAPI measures single mints through the API over real HTTP against the pgbench floor of the
// same single-row mint through the ledger's function, on one ledger (NAAN 99999, shoulder /x9,
// client bench-minter with one API key), each for cfg.Duration.
func RunAPI(ctx context.Context, cfg APIConfig) (APIResult, error) {
	if cfg.Clients <= 0 {
		cfg.Clients = 32
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 10 * time.Second
	}
	if cfg.Pool <= 0 {
		cfg.Pool = 16
	}
	res := APIResult{Clients: cfg.Clients, Duration: cfg.Duration}
	srv, err := openServer(ctx, "api", cfg.ServerURL, cfg.Dir, "", cfg.Log)
	if err != nil {
		return res, err
	}
	defer func() { _ = srv.close(context.WithoutCancel(ctx)) }()
	res.Server = srv.desc
	const db = "bench_api"
	if _, err := srv.admin.Exec(ctx, "drop database if exists "+pgx.Identifier{db}.Sanitize()+" with (force)"); err != nil {
		return res, err
	}
	if _, err := srv.admin.Exec(ctx, "create database "+pgx.Identifier{db}.Sanitize()); err != nil {
		return res, err
	}
	l, err := ledger.Open(ctx, srv.url(db), int32(cfg.Pool))
	if err != nil {
		return res, err
	}
	defer l.Close()
	if _, err := l.Init(ctx, ledger.LayoutAuto); err != nil {
		return res, err
	}
	if err := RegisterBench(ctx, l); err != nil {
		return res, err
	}
	key, err := l.CreateKey(ctx, benchClient)
	if err != nil {
		return res, err
	}
	s, err := api.New(ctx, l.Pool, api.Config{})
	if err != nil {
		return res, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return res, err
	}
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	srv.logf("API on http://%s: %d clients for %s", ln.Addr(), cfg.Clients, cfg.Duration)
	res.Mints, res.Errors, res.Elapsed, err = driveMints(ctx, "http://"+ln.Addr().String()+"/mint", key.Key, cfg.Clients, cfg.Duration)
	if err != nil {
		return res, err
	}
	res.KeyDerivations = s.Stats().KeyDerivations
	srv.logf("pgbench floor: %d clients for %s", cfg.Clients, cfg.Duration)
	res.FloorTPS, res.FloorNote = pgbenchFloor(ctx, srv, srv.url(db), key.Prefix, cfg)
	if cfg.Arklet == "" {
		res.ArkletNote = "no arklet source given (--arklet)"
		return res, nil
	}
	srv.logf("arklet: %d clients for %s", cfg.Clients, cfg.Duration)
	if err := runArklet(ctx, srv, cfg, &res); err != nil {
		return res, err
	}
	return res, nil
}

// runArklet runs arklet (cfg.Arklet, its source archive, unpacked into the working directory)
// under /usr/bin/python3 with Debian's Django and psycopg2 on a database of its own on the same
// server (NAAN 99999, one active key), Django's threaded server on a loopback port, and drives
// its POST /mint as the API was driven. What stops it is res.ArkletNote.
func runArklet(ctx context.Context, srv *server, cfg APIConfig, res *APIResult) error {
	const python = "/usr/bin/python3"
	if out, err := exec.CommandContext(ctx, python, "-c", "import django, psycopg2").CombinedOutput(); err != nil {
		res.ArkletNote = fmt.Sprintf("%s cannot import Django and psycopg2 (Debian: python3-django python3-psycopg2): %s", python, lastLine(string(out)))
		return nil
	}
	dir := filepath.Join(srv.dir, "arklet")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if out, err := exec.CommandContext(ctx, "tar", "-xzf", cfg.Arklet, "-C", dir, "--strip-components=1").CombinedOutput(); err != nil {
		res.ArkletNote = fmt.Sprintf("unpack %s: %v: %s", cfg.Arklet, err, lastLine(string(out)))
		return nil
	}
	const db = "bench_api_arklet"
	if _, err := srv.admin.Exec(ctx, "drop database if exists "+pgx.Identifier{db}.Sanitize()+" with (force)"); err != nil {
		return err
	}
	if _, err := srv.admin.Exec(ctx, "create database "+pgx.Identifier{db}.Sanitize()); err != nil {
		return err
	}
	pc, err := pgx.ParseConfig(srv.url(db))
	if err != nil {
		return err
	}
	env := append(os.Environ(), "PYTHONPATH="+filepath.Join(dir, "src"), "DJANGO_SETTINGS_MODULE=arklet.entrypoints.settings",
		"ARKLET_POSTGRES_NAME="+db, "ARKLET_POSTGRES_HOST="+pc.Host, "ARKLET_POSTGRES_PORT="+strconv.Itoa(int(pc.Port)),
		"ARKLET_POSTGRES_USER="+pc.User, "ARKLET_POSTGRES_PASSWORD="+pc.Password, "ARKLET_HOST=127.0.0.1", "ARKLET_DEBUG=false")
	manage := func(args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, python, append([]string{filepath.Join(dir, "manage.py")}, args...)...)
		cmd.Env, cmd.Dir = env, dir
		return cmd
	}
	if out, err := manage("migrate", "--noinput").CombinedOutput(); err != nil {
		res.ArkletNote = fmt.Sprintf("arklet's migrations fail with Debian's Django: %v: %s", err, lastLine(string(out)))
		return nil
	}
	conn, err := pgx.ConnectConfig(ctx, pc)
	if err != nil {
		return err
	}
	var key string
	err = conn.QueryRow(ctx, `with n as (insert into ark_naan (naan, name, description, url) values (99999, 'bench', '', 'https://example.org') returning naan)
		insert into ark_key (key, naan_id, active) select gen_random_uuid(), naan, true from n returning key::text`).Scan(&key)
	conn.Close(context.WithoutCancel(ctx))
	if err != nil {
		return fmt.Errorf("bench api: arklet's key: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := manage("runserver", "--noreload", "--insecure", addr)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		<-exited
	}()
	for deadline := time.Now().Add(30 * time.Second); ; {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-exited:
			res.ArkletNote = "arklet's server exited: " + lastLine(out.String())
			return nil
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			res.ArkletNote = "arklet's server did not listen within 30 s: " + lastLine(out.String())
			return nil
		}
	}
	body := `{"naan": 99999, "shoulder": "/x9", "url": "https://example.org/bench"}`
	res.ArkletMints, res.ArkletErrors, res.ArkletElapsed, err = driveMintsBody(ctx, "http://"+addr+"/mint", key, body, cfg.Clients, cfg.Duration)
	if err != nil {
		res.ArkletNote = err.Error()
	}
	return nil
}

// driveMints runs clients loops of POST /mint of the bench shoulder on keep-alive connections for
// d and counts the answers.
func driveMints(ctx context.Context, url, key string, clients int, d time.Duration) (ok, failed int64, elapsed time.Duration, err error) {
	return driveMintsBody(ctx, url, key, `{"naan": "99999", "shoulder": "/x9", "url": "https://example.org/bench"}`, clients, d)
}

// driveMintsBody is driveMints with the request body given.
func driveMintsBody(ctx context.Context, url, key, reqBody string, clients int, d time.Duration) (ok, failed int64, elapsed time.Duration, err error) {
	tr := &http.Transport{MaxIdleConns: clients, MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients, IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	var nOK, nBad atomic.Int64
	var first atomic.Value
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := []byte(reqBody)
			for i := 0; ctx.Err() == nil; i++ {
				req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodPost, url, bytes.NewReader(body))
				if err != nil {
					first.CompareAndSwap(nil, err)
					return
				}
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", "c"+strconv.Itoa(c)+"-"+strconv.Itoa(i))
				resp, err := hc.Do(req)
				if err != nil {
					nBad.Add(1)
					first.CompareAndSwap(nil, err)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					nOK.Add(1)
				} else {
					nBad.Add(1)
					first.CompareAndSwap(nil, fmt.Errorf("POST /mint: %s", resp.Status))
				}
			}
		}()
	}
	wg.Wait()
	elapsed = time.Since(start)
	if nOK.Load() == 0 {
		if e, _ := first.Load().(error); e != nil {
			return 0, nBad.Load(), elapsed, fmt.Errorf("bench api: no mint succeeded: %w", e)
		}
	}
	return nOK.Load(), nBad.Load(), elapsed, nil
}

// tpsRE reads pgbench's rate.
var tpsRE = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)

// pgbenchFloor runs pgbench with cfg.Clients clients for cfg.Duration, each transaction one
// ark_mint_one call of a fresh name and request ID (digits: betanumerics that never need a check
// character's redraw) as the API's client with its key; it returns the rate, or 0 and why not.
func pgbenchFloor(ctx context.Context, srv *server, url, prefix string, cfg APIConfig) (float64, string) {
	bin, err := exec.LookPath("pgbench")
	if err != nil {
		return 0, "pgbench is not on PATH"
	}
	script := filepath.Join(srv.dir, "mint_one.sql")
	sql := `\set n random(1, 999999999999)
select ark_mint_one('` + benchClient + `', '` + prefix + `', 'pg-' || :client_id || '-' || :n, '\x00112233445566778899aabbccddeeff',
  (select id from shoulder where naan = '` + benchNAAN + `' and shoulder = '` + benchShoulder + `'),
  array['x9' || lpad(:n::text, 12, '0') || 'a', 'x9' || lpad(:n::text, 12, '0') || 'b'],
  'https://example.org/bench', null, null, null, null, null);
`
	if err := os.WriteFile(script, []byte(sql), 0o644); err != nil {
		return 0, err.Error()
	}
	secs := max(1, int(cfg.Duration.Seconds()))
	cmd := exec.CommandContext(ctx, bin, "-n", "-M", "prepared", "-c", strconv.Itoa(cfg.Clients), "-j", "2",
		"-T", strconv.Itoa(secs), "-f", script, url)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return 0, fmt.Sprintf("pgbench: %v: %s", err, lastLine(errb.String()))
	}
	m := tpsRE.FindStringSubmatch(out.String())
	if m == nil {
		return 0, "pgbench printed no rate: " + lastLine(out.String())
	}
	tps, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, err.Error()
	}
	return tps, ""
}

// lastLine returns the last non-empty line of s.
func lastLine(s string) string {
	b := bytes.TrimSpace([]byte(s))
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	return string(b)
}
