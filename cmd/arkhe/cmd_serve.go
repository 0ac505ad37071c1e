package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/arkhe-ledger/arkhe/api"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/metrics"
	"github.com/arkhe-ledger/arkhe/resolver"
)

// serveCommand is `arkhe serve`: the ledger's ARKs resolved over HTTP.
func serveCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "resolve the ledger's ARKs over HTTP: 302 to the target (suffixes passed through), ?info/?? descriptions, 410 for tombstones, forwarding NAANs and shoulders; /healthz and /metrics",
		Description: "Every request is answered from the ledger, but for the ARKs a request named exactly, whose rows a\n" +
			"cache holds (--cache-entries) on a single node: the ledger announces every change to an ARK or a NAAN\n" +
			"(LISTEN/NOTIFY) and the cache is dropped when the announcement arrives, within milliseconds of the commit;\n" +
			"while its listening connection is lost the cache is off. On Citus there is no cache: a repoint or a\n" +
			"tombstone is answered from the next request on. On a single node the lookups of concurrent requests are\n" +
			"read by one round trip (--batch, --batch-queries). The login needs only the resolver role (arkhe init\n" +
			"--roles). SIGTERM or SIGINT stops accepting and lets the requests in flight finish (up to --shutdown-timeout).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8080", Usage: "address to listen on (host:port; port 0 picks one, printed on stdout)"},
			&cli.StringFlag{Name: "forward-unknown", Usage: "where a request under a NAAN the ledger does not know goes (e.g. https://n2t.net/; ${pid}, ${content}, ${value} or ark:NAAN/name appended); without it, 404"},
			&cli.StringFlag{Name: "access-log", Usage: "file the access log (Combined Log Format) is appended to", DefaultText: "stderr"},
			&cli.IntFlag{Name: "max-connections", Value: 1024, Usage: "connections held open at once; more wait to be accepted"},
			&cli.IntFlag{Name: "pool", Value: 16, Usage: "ledger connections"},
			&cli.IntFlag{Name: "batch", Value: resolver.DefaultBatch, Usage: "most lookups of concurrent requests one round trip reads on a single node (1: a query per lookup; Citus always has one per lookup)"},
			&cli.IntFlag{Name: "batch-queries", Value: resolver.DefaultBatchQueries, Usage: "those round trips running at once"},
			&cli.IntFlag{Name: "cache-entries", Value: resolver.DefaultCacheEntries, Usage: "most ARK rows cached (ARKs a request named exactly; dropped on every change the ledger announces); 0: no cache. On Citus the cache is off"},
			&cli.DurationFlag{Name: "header-timeout", Value: 5 * time.Second, Usage: "how long a client may take to send a request's headers (a slow client is cut off after it)"},
			&cli.BoolFlag{Name: "api", Usage: "also answer arklet's API (POST /mint, PUT /update, POST /bulk_mint, PUT /bulk_update) and EZID's for ARKs (/shoulder/ark:/..., /id/ark:/...) with API keys; the login must be the writer role (docs/api.md)"},
			&cli.StringFlag{Name: "oidc-issuer", Usage: "with --api: also accept OIDC bearer tokens of people signed by this issuer (its URL, as the tokens' iss claim says); the client is matched by the token's azp"},
			&cli.StringFlag{Name: "oidc-audience", Usage: "with --oidc-issuer: the audience (aud) the tokens must name"},
			&cli.Int64Flag{Name: "api-max-body", Value: api.DefaultMaxBody, Usage: "with --api: the largest request body, in octets (more is 413)"},
			&cli.IntFlag{Name: "api-max-records", Value: api.DefaultMaxRecords, Usage: "with --api: the most records of one bulk request (more is 400)"},
			&cli.Float64Flag{Name: "api-rate", Value: api.DefaultRate, Usage: "with --api: the requests a second one client may make on average on the API's paths (a token bucket per client; more are 429 with Retry-After; resolution is not limited); 0: no limit"},
			&cli.IntFlag{Name: "api-burst", Value: api.DefaultBurst, Usage: "with --api: the requests one client may make at once above --api-rate (the bucket's size)"},
			&cli.DurationFlag{Name: "shutdown-timeout", Value: 10 * time.Second, Usage: "how long a stop waits for the requests in flight"},
		},
		Action: func(c *cli.Context) error { return runServe(c, e) },
	}
}

func runServe(c *cli.Context, e *env) error {
	if c.NArg() > 0 {
		return usagef("serve: unexpected argument %q", c.Args().First())
	}
	if n := c.Int("max-connections"); n < 1 {
		return usagef("serve: --max-connections %d: at least 1", n)
	}
	if n := c.Int("pool"); n < 1 || n > 1000 {
		return usagef("serve: --pool %d: from 1 to 1000", n)
	}
	if d := c.Duration("header-timeout"); d <= 0 {
		return usagef("serve: --header-timeout %s: positive", d)
	}
	if c.Int("batch") < 1 || c.Int("batch-queries") < 1 {
		return usagef("serve: --batch %d, --batch-queries %d: at least 1", c.Int("batch"), c.Int("batch-queries"))
	}
	if r := c.Float64("api-rate"); r < 0 || math.IsNaN(r) || math.IsInf(r, 0) {
		return usagef("serve: --api-rate %v: a number of requests a second, at least 0 (0: no limit)", r)
	}
	if c.Float64("api-rate") > 0 && c.Int("api-burst") < 1 {
		return usagef("serve: --api-burst %d: at least 1", c.Int("api-burst"))
	}
	if n := c.Int("cache-entries"); n < 0 {
		return usagef("serve: --cache-entries %d: not negative", n)
	}
	// the flags are checked before the ledger is reached
	if _, err := resolver.New(nil, resolver.Config{ForwardUnknown: c.String("forward-unknown")}); err != nil {
		return usagef("serve: --forward-unknown: %w", err)
	}
	var logw io.Writer = e.stderr
	if p := c.String("access-log"); p != "" {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("serve: access log: %w", err)
		}
		defer f.Close()
		logw = f
	}
	// a request does not wait for the log's write; what is held is written on the way out
	logBuf := resolver.NewLogBuffer(logw, 100*time.Millisecond)
	defer logBuf.Close()
	l, err := openChecked(c, e, int32(c.Int("pool")))
	if err != nil {
		return err
	}
	defer l.Close()
	onError := func(err error) { e.log.Warn("serve: answered 503", "err", err) }
	r, err := resolver.New(l.Pool, resolver.Config{ForwardUnknown: c.String("forward-unknown"), OnError: onError,
		Batch: c.Int("batch"), BatchQueries: c.Int("batch-queries"), CacheEntries: c.Int("cache-entries"),
		OnCacheError: func(err error) { e.log.Warn("serve: cache off until its listener listens again", "err", err) }})
	if err != nil {
		return err
	}
	listenCtx, stopListen := context.WithCancel(c.Context)
	defer stopListen()
	go func() {
		if err := r.Listen(listenCtx); err != nil {
			e.log.Info("serve: no cache", "err", err)
		}
	}()
	var apiServer *api.Server
	if (c.IsSet("oidc-issuer") || c.IsSet("oidc-audience")) && !c.Bool("api") {
		return fmt.Errorf("serve: --oidc-issuer and --oidc-audience need --api")
	}
	if c.Bool("api") {
		var tokens api.TokenAuthenticator
		if c.IsSet("oidc-issuer") || c.IsSet("oidc-audience") {
			o, err := api.NewOIDC(c.Context, l.Pool, api.OIDCConfig{Issuer: c.String("oidc-issuer"), Audience: c.String("oidc-audience")})
			if err != nil {
				return fmt.Errorf("serve: --oidc-issuer: %w", err)
			}
			tokens = o
		}
		burst := 0
		if c.Float64("api-rate") > 0 {
			burst = c.Int("api-burst")
		}
		apiServer, err = api.New(c.Context, l.Pool, api.Config{Tokens: tokens, MaxBody: c.Int64("api-max-body"), MaxRecords: c.Int("api-max-records"),
			RatePerSecond: c.Float64("api-rate"), RateBurst: burst,
			OnError: func(err error) { e.log.Warn("serve: api answered 503", "err", err) }})
		if err != nil {
			return fmt.Errorf("serve: --api: %w", err)
		}
	}
	ln, err := net.Listen("tcp", c.String("listen"))
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	srv := &http.Server{
		Handler:           resolver.AccessLog(serveMux(l, r, apiServer), logBuf),
		ReadHeaderTimeout: c.Duration("header-timeout"),
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    16 << 10,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(c.Context) },
	}
	fmt.Fprintf(e.stdout, "arkhe serve: resolving on http://%s\n", ln.Addr())
	if apiServer != nil {
		fmt.Fprintf(e.stdout, "arkhe serve: arklet's API (POST /mint, PUT /update, POST /bulk_mint, PUT /bulk_update) on http://%s\n", ln.Addr())
		fmt.Fprintf(e.stdout, "arkhe serve: EZID's API for ARKs (/shoulder/ark:/..., /id/ark:/...) on http://%s\n", ln.Addr())
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(resolver.LimitListener(ln, c.Int("max-connections"))) }()
	select {
	case err := <-done:
		return fmt.Errorf("serve: %w", err)
	case <-c.Context.Done():
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Context), c.Duration("shutdown-timeout"))
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("serve: shutdown: %w", err)
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	if err := logBuf.Close(); err != nil {
		return fmt.Errorf("serve: access log: %w", err)
	}
	fmt.Fprintf(e.stdout, "arkhe serve: stopped\n")
	return nil
}

// serveMux routes /healthz and /metrics, the API's paths to a (nil: none), and every other path
// to the resolver (an ARK path is read as sent: http.ServeMux would clean it, and redirect "//"
// and ".." itself).
func serveMux(l *ledger.Ledger, r *resolver.Resolver, a *api.Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if a != nil && api.Handles(req.URL.Path) {
			a.ServeHTTP(w, req)
			return
		}
		switch req.URL.Path {
		case "/healthz":
			ctx, cancel := context.WithTimeout(req.Context(), 2*time.Second)
			defer cancel()
			var one int
			if err := l.Pool.QueryRow(ctx, "select 1").Scan(&one); err != nil || one != 1 {
				http.Error(w, "the ledger does not answer", http.StatusServiceUnavailable)
				return
			}
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			io.WriteString(w, "ok\n")
		case "/metrics":
			st := l.Pool.Stat()
			fams := r.Metrics()
			if a != nil {
				fams = append(fams, a.Metrics()...)
			}
			fams = append(fams,
				metrics.G("arkhe_resolver_ledger_connections", "Ledger connections open.", float64(st.TotalConns())),
				metrics.G("arkhe_resolver_ledger_connections_busy", "Ledger connections in use.", float64(st.AcquiredConns())))
			w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
			if err := metrics.Encode(w, fams); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
			}
		default:
			r.ServeHTTP(w, req)
		}
	})
}
