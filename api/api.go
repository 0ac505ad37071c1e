// Package api is arkhe's online API over the ledger, as HTTP handlers: arklet's POST /mint and
// PUT /update with their request and response shapes and status codes, their bulk forms
// (POST /bulk_mint, PUT /bulk_update), API keys presented as "Authorization: Bearer <key>", and
// the Idempotency-Key header as a mint's request ID. Every write runs through the ledger's own
// functions (ark_mint_one, ark_mint_many, ark_repoint), which check the client's reach, scopes,
// expiry, deactivation and quota in the database; the single mints of one client and key that
// arrive together are minted in one statement (group commit), each with its own answer.
package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"math"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/time/rate"

	"github.com/arkhe-ledger/arkhe/ark"
	"github.com/arkhe-ledger/arkhe/ledger"
	"github.com/arkhe-ledger/arkhe/metrics"
)

// Limits of a request.
const (
	// DefaultMaxBody is the largest request body read, in octets, unless Config.MaxBody says
	// otherwise; a larger one is answered 413.
	DefaultMaxBody = 1 << 20
	// DefaultMaxRecords is the most records of one bulk request unless Config.MaxRecords says
	// otherwise; more are a 400 naming the limit.
	DefaultMaxRecords = 1000
	// DefaultMaxDraws is how many candidate names one mint tries (arklet's ten).
	DefaultMaxDraws = 10
	// MaxIdempotencyKey is the longest Idempotency-Key, in octets (a bulk record's request ID is
	// the key, "/" and the record's index, within the ledger's 255).
	MaxIdempotencyKey = 200
	// MaxFieldOctets is the longest metadata or commitment value, in octets (an ERC field's
	// limit).
	MaxFieldOctets = 64 << 10
	// keyCacheSize bounds the proved keys a server remembers.
	keyCacheSize = 4096
)

// TokenAuthenticator authenticates a bearer token that is not an arkhe API key (an OIDC access
// token, say): it returns the registered client the token stands for and ok, or ok false for a
// token it refuses (answered 401), or a *TokenError for a token it refuses with a reason
// (answered 401 with it), or another error when it cannot tell (answered 503). remote is the
// caller's address. It must be safe for concurrent use.
type TokenAuthenticator interface {
	AuthenticateToken(ctx context.Context, token string, remote netip.Addr) (clientID string, ok bool, err error)
}

// Config configures a Server. The zero value serves API keys only, with the default limits.
type Config struct {
	// Tokens, if set, authenticates bearer tokens that are not API keys; nil refuses them.
	Tokens TokenAuthenticator
	// MaxBody is the largest request body in octets (0: DefaultMaxBody).
	MaxBody int64
	// MaxRecords is the most records of a bulk request (0: DefaultMaxRecords).
	MaxRecords int
	// MaxDraws is how many candidate names a mint tries before it gives up (0: DefaultMaxDraws).
	MaxDraws int
	// Blades returns the blade source of one mint (nil: ark.NewRandomBlades). Tests script
	// blades to force collisions.
	Blades func() ark.BladeSource
	// RatePerSecond is the requests one client may make a second on average on the API's paths
	// (a token bucket per registered client, refilled at this rate); more are answered 429 with
	// Retry-After and the rule. 0: no limit.
	RatePerSecond float64
	// RateBurst is the requests one client may make at once, the bucket's size (0: RatePerSecond
	// rounded up, at least 1). Only with RatePerSecond.
	RateBurst int
	// OnError, if set, is told of every request answered 503: a *LedgerError (the ledger did
	// not answer) or an *IssuerError (a token's issuer could not be reached to check it).
	OnError func(error)
}

// Stats are a server's counts since New.
type Stats struct {
	Minted, Replayed, Updated int64 // ARKs minted, mints answered from a receipt, ARKs repointed
	Refused                   int64 // requests refused (4xx)
	Failed                    int64 // requests answered 5xx
	KeyDerivations            int64 // Argon2id derivations of presented API keys
	Throttled                 int64 // requests answered 429 by the per-client rate limit (counted in Refused too)
}

// Server is the API. Create it with New; it is safe for concurrent use.
type Server struct {
	pool         *pgxpool.Pool
	cfg          Config
	keysRequired bool

	keysMu  sync.Mutex
	keys    map[string]provedKey // prefix → the key proved last with it
	flights map[string]*flight   // prefix + secret digest → the check under way
	checks  chan struct{}        // one slot per key check (Argon2id) that may run at once

	shoulders sync.Map // "NAAN/shoulder" (stored form) → ledger.ShoulderInfo

	limits  *clientLimits // nil: no rate limit
	batches mintBatches   // POST /mint's queues, one per principal (group commit)

	minted, replayed, updated, refused, failed, derivations, throttled atomic.Int64
}

// flight is a key check under way, run by a goroutine of its own; the requests presenting the
// same key and secret meanwhile wait for its outcome instead of hashing again.
type flight struct {
	done      chan struct{} // closed when check and err are set
	abandoned chan struct{} // closed when every request waiting has gone before the check ran
	waiters   int           // requests waiting for it, under Server.keysMu
	check     ledger.KeyCheck
	err       error
}

// provedData is the key of a connection's CustomData under which the server keeps the prefix of
// the key its session proved (arkhe_key_login): it lives and dies with the connection, so a
// connection the pool closes on its own (lifetime, idle time, health check) leaves nothing behind.
const provedData = "arkhe.api.proved"

// maxChecks bounds the key checks (each an Argon2id derivation of 64 MiB) running at once.
const maxChecks = 2

// provedKey is a key whose secret the ledger accepted: the SHA-256 of that secret (the secret
// has 256 random bits, so its digest stands for it) and what the ledger's check returned.
type provedKey struct {
	sum   [32]byte
	check ledger.KeyCheck
}

// New returns a Server on pool, which must log in as a role that writes (the writer role, or a
// login without roles). It reads whether the ledger requires keys (arkhe init --require-keys):
// then each connection proves the key of the client it writes for. A bad cfg is a *ConfigError.
func New(ctx context.Context, pool *pgxpool.Pool, cfg Config) (*Server, error) {
	switch {
	case cfg.MaxBody < 0:
		return nil, &ConfigError{Field: "MaxBody", Rule: "at least 0"}
	case cfg.MaxRecords < 0:
		return nil, &ConfigError{Field: "MaxRecords", Rule: "at least 0"}
	case cfg.MaxDraws < 0 || cfg.MaxDraws > 100:
		return nil, &ConfigError{Field: "MaxDraws", Rule: "from 0 to 100"}
	case cfg.RatePerSecond < 0 || math.IsNaN(cfg.RatePerSecond) || math.IsInf(cfg.RatePerSecond, 0):
		return nil, &ConfigError{Field: "RatePerSecond", Rule: "a finite number of requests a second, at least 0 (0: no limit)"}
	case cfg.RateBurst < 0:
		return nil, &ConfigError{Field: "RateBurst", Rule: "at least 0"}
	case cfg.RateBurst > 0 && cfg.RatePerSecond == 0:
		return nil, &ConfigError{Field: "RateBurst", Rule: "only with a rate (RatePerSecond)"}
	}
	if cfg.MaxBody == 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.MaxRecords == 0 {
		cfg.MaxRecords = DefaultMaxRecords
	}
	if cfg.MaxDraws == 0 {
		cfg.MaxDraws = DefaultMaxDraws
	}
	if cfg.Blades == nil {
		cfg.Blades = func() ark.BladeSource { return ark.NewRandomBlades() }
	}
	s := &Server{pool: pool, cfg: cfg, keys: map[string]provedKey{}, flights: map[string]*flight{}, checks: make(chan struct{}, maxChecks)}
	if cfg.RatePerSecond > 0 {
		burst := cfg.RateBurst
		if burst == 0 {
			burst = max(1, int(math.Ceil(cfg.RatePerSecond)))
		}
		s.limits = &clientLimits{perSecond: cfg.RatePerSecond, burst: burst, buckets: map[string]*rate.Limiter{}}
	}
	if pool != nil {
		on, err := ledger.KeysRequired(ctx, pool)
		if err != nil {
			return nil, err
		}
		s.keysRequired = on
	}
	return s, nil
}

// Paths are the request paths the server answers; a server mounting it routes these here.
func Paths() []string { return []string{"/mint", "/update", "/bulk_mint", "/bulk_update"} }

// ServeHTTP answers the paths of Paths and EZID's (Handles); any other is 404.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/mint":
		s.serveMint(w, r)
	case "/update":
		s.serveUpdate(w, r)
	case "/bulk_mint":
		s.serveBulkMint(w, r)
	case "/bulk_update":
		s.serveBulkUpdate(w, r)
	default:
		switch {
		case strings.HasPrefix(r.URL.Path, "/id/"):
			s.serveIdentifier(w, r)
			return
		case strings.HasPrefix(r.URL.Path, "/shoulder/"):
			s.serveShoulder(w, r)
			return
		}
		http.NotFound(w, r)
	}
}

// Stats returns the server's counts.
func (s *Server) Stats() Stats {
	return Stats{Minted: s.minted.Load(), Replayed: s.replayed.Load(), Updated: s.updated.Load(),
		Refused: s.refused.Load(), Failed: s.failed.Load(), KeyDerivations: s.derivations.Load(), Throttled: s.throttled.Load()}
}

// Metrics returns the server's counts as metric families (arkhe_api_*).
func (s *Server) Metrics() []metrics.Family {
	st := s.Stats()
	c := func(name, help string, v int64) metrics.Family {
		return metrics.Family{Name: name, Help: help, Type: metrics.Counter, Samples: []metrics.Sample{{Value: float64(v)}}}
	}
	return []metrics.Family{
		c("arkhe_api_minted_total", "ARKs minted through the API.", st.Minted),
		c("arkhe_api_replayed_total", "Mints answered from a receipt (a retried request ID).", st.Replayed),
		c("arkhe_api_updated_total", "ARKs repointed through the API.", st.Updated),
		c("arkhe_api_refused_total", "API requests refused (4xx).", st.Refused),
		c("arkhe_api_failed_total", "API requests the ledger could not answer (5xx).", st.Failed),
		c("arkhe_api_key_derivations_total", "Argon2id derivations of presented API keys.", st.KeyDerivations),
		c("arkhe_api_throttled_total", "API requests answered 429 by the per-client rate limit.", st.Throttled),
	}
}

// principal is who a request acts as: a registered client, with the API key it presented ("" for
// a token).
type principal struct {
	clientID string
	key      *ledger.KeyCheck
}

// prefix returns the presented key's prefix, "" for none.
func (p principal) prefix() string {
	if p.key == nil {
		return ""
	}
	return p.key.Prefix
}

// authenticate reads "Authorization: Bearer <credential>" (arklet takes the header's last word,
// so a bare credential is accepted too). An API key whose secret the server proved before is
// accepted without hashing (conn checks once per request that it is still active and not
// locked); any other is checked by the ledger (ledger.CheckKey: a locked or revoked key without
// hashing). A token that is not an API key goes to Config.Tokens. The client then spends one
// request of its rate limit (throttle: 429 when it has none left).
func (s *Server) authenticate(ctx context.Context, r *http.Request) (principal, *answer) {
	p, a := s.authenticateBearer(ctx, r)
	if a != nil {
		return p, a
	}
	return p, s.throttle(p)
}

// authenticateBearer is authenticate without the rate limit.
func (s *Server) authenticateBearer(ctx context.Context, r *http.Request) (principal, *answer) {
	h := r.Header.Get("Authorization")
	f := splitFields(h)
	if len(f) == 0 {
		return principal{}, forbidden("an API key is required: Authorization: Bearer <key>")
	}
	cred := f[len(f)-1]
	prefix, secret, err := ledger.ParseKey(cred)
	if err != nil {
		if s.cfg.Tokens == nil {
			return principal{}, forbidden("the credential is not an arkhe API key")
		}
		remote, _ := netip.ParseAddrPort(r.RemoteAddr)
		id, ok, err := s.cfg.Tokens.AuthenticateToken(ctx, cred, remote.Addr())
		var te *TokenError
		var ie *IssuerError
		switch {
		case errors.As(err, &te):
			return principal{}, tokenRefused(te.Reason)
		case errors.As(err, &ie):
			if s.cfg.OnError != nil {
				s.cfg.OnError(ie)
			}
			return principal{}, &answer{status: http.StatusServiceUnavailable,
				text: "the token's issuer " + ie.Issuer + " could not be reached to check it; try again"}
		case err != nil:
			return principal{}, s.unavailable("authenticate token", err)
		case !ok:
			return principal{}, tokenRefused("the token is not accepted")
		}
		return principal{clientID: id}, nil
	}
	return s.authenticateKey(ctx, cred, prefix, secret)
}

// authenticateKey accepts the API key cred (parsed into prefix and secret by ledger.ParseKey):
// one whose secret the server proved before without hashing, any other as the ledger's check
// answers (checkKey). A refusal is answered as keyRefusal says. Every way of presenting a key
// (Bearer, EZID's HTTP Basic) comes here.
func (s *Server) authenticateKey(ctx context.Context, cred, prefix, secret string) (principal, *answer) {
	sum := sha256.Sum256([]byte(secret))
	s.keysMu.Lock()
	pk, ok := s.keys[prefix]
	s.keysMu.Unlock()
	if ok && subtle.ConstantTimeCompare(pk.sum[:], sum[:]) == 1 {
		kc := pk.check
		return principal{clientID: kc.ClientID, key: &kc}, nil
	}
	kc, err := s.checkKey(ctx, prefix, sum, cred)
	if err != nil {
		return principal{}, s.keyRefusal(err)
	}
	return principal{clientID: kc.ClientID, key: &kc}, nil
}

// tokenRefused answers a refused bearer token: 401 with a WWW-Authenticate challenge.
func tokenRefused(reason string) *answer {
	a := &answer{status: http.StatusUnauthorized, text: reason}
	a.header = map[string]string{"WWW-Authenticate": `Bearer error="invalid_token"`}
	return a
}

// checkKey has the ledger check a key not proved before (ledger.CheckKey), at most maxChecks at
// once; requests presenting the same key and secret while one check runs share its outcome, so
// a burst of them costs one derivation (and one counted failure, for a wrong secret). An
// accepted key is remembered. The check belongs to none of the requests sharing it: a request
// that is cancelled (its client hung up) returns ctx.Err() and leaves the others waiting for the
// ledger's verdict; a check that has not started when all its requests have gone is dropped, and
// one that started runs to its end (so a wrong secret is counted whoever hangs up).
func (s *Server) checkKey(ctx context.Context, prefix string, sum [32]byte, cred string) (ledger.KeyCheck, error) {
	fk := prefix + string(sum[:])
	s.keysMu.Lock()
	f := s.flights[fk]
	if f == nil {
		f = &flight{done: make(chan struct{}), abandoned: make(chan struct{})}
		s.flights[fk] = f
		go s.runCheck(context.WithoutCancel(ctx), f, fk, prefix, sum, cred)
	}
	f.waiters++
	s.keysMu.Unlock()
	select {
	case <-f.done:
		return f.check, f.err
	case <-ctx.Done():
		s.keysMu.Lock()
		if f.waiters--; f.waiters == 0 && s.flights[fk] == f {
			delete(s.flights, fk) // a later request starts a check of its own
			close(f.abandoned)
		}
		s.keysMu.Unlock()
		return ledger.KeyCheck{}, ctx.Err()
	}
}

// runCheck runs flight f's check once a check slot is free (unless every request waiting for it
// has gone first), remembers an accepted key and closes f.done.
func (s *Server) runCheck(ctx context.Context, f *flight, fk, prefix string, sum [32]byte, cred string) {
	defer func() {
		s.keysMu.Lock()
		if s.flights[fk] == f {
			delete(s.flights, fk)
		}
		if f.err == nil {
			if len(s.keys) >= keyCacheSize {
				clear(s.keys)
			}
			s.keys[prefix] = provedKey{sum: sum, check: f.check}
		}
		s.keysMu.Unlock()
		close(f.done)
	}()
	select {
	case s.checks <- struct{}{}:
	case <-f.abandoned:
		f.err = context.Canceled
		return
	}
	f.check, f.err = ledger.CheckKey(ctx, s.pool, cred)
	<-s.checks
	if f.check.Derived {
		s.derivations.Add(1)
	}
}

// forget drops what the server remembers of key prefix (a key the ledger refused).
func (s *Server) forget(prefix string) {
	s.keysMu.Lock()
	delete(s.keys, prefix)
	s.keysMu.Unlock()
}

// keyRefusal answers a refused key: 401 for a locked key (with Retry-After), else 403 as arklet
// answers any key it does not accept; a database error is 503.
func (s *Server) keyRefusal(err error) *answer {
	ke, ok := asKeyError(err)
	if !ok {
		return s.unavailable("check API key", err)
	}
	s.forget(ke.Prefix)
	if ke.Reason == "locked" {
		a := &answer{status: http.StatusUnauthorized, text: ke.Error()}
		a.header = map[string]string{"WWW-Authenticate": `Bearer error="invalid_token", error_description="the key is locked"`}
		if ke.LockedUntil != nil {
			a.header["Retry-After"] = retryAfter(*ke.LockedUntil)
		}
		return a
	}
	return forbidden(ke.Error())
}

// conn acquires a connection for one request's writes as p. A key p presented is checked on it
// once, before any write of the request, whatever the path (mint, update, bulk): registered,
// active (not revoked) and not locked (ledger.KeyUsable, no hashing), so a key revoked after the
// server proved it is refused as a key never proved is (403, 401 when locked); the client's own
// registration (active, unexpired, in reach) is checked by each write in the database. On a
// ledger requiring keys, the session proves p's key (arkhe_key_login, once per connection and
// key), which checks the key the same way.
func (s *Server) conn(ctx context.Context, p principal) (*pgxpool.Conn, *answer) {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, s.unavailable("connect to the ledger", err)
	}
	if p.key == nil {
		return c, nil
	}
	data := c.Conn().PgConn().CustomData()
	if v, ok := data[provedData].(string); !s.keysRequired || ok && v == p.key.Prefix {
		if err := ledger.KeyUsable(ctx, c, p.key.Prefix); err != nil {
			c.Release()
			return nil, s.keyRefusal(err)
		}
		return c, nil
	}
	if err := ledger.LoginKey(ctx, c, *p.key); err != nil {
		delete(data, provedData)
		c.Release()
		return nil, s.keyRefusal(err)
	}
	data[provedData] = p.key.Prefix
	return c, nil
}

// release returns c to the pool.
func (s *Server) release(c *pgxpool.Conn) { c.Release() }

// shoulder returns the registered shoulder (stored form) of naan, remembered after the first
// look-up (what is kept, the key and blade rules, does not change; the ledger checks the
// shoulder's status on every mint).
func (s *Server) shoulder(ctx context.Context, q ledger.Querier, naan, shoulder string) (ledger.ShoulderInfo, bool, error) {
	k := naan + shoulder
	if v, ok := s.shoulders.Load(k); ok {
		return v.(ledger.ShoulderInfo), true, nil
	}
	sh, found, err := ledger.LookupShoulder(ctx, q, naan, shoulder)
	if err != nil || !found {
		return sh, found, err
	}
	s.shoulders.Store(k, sh)
	return sh, true, nil
}
