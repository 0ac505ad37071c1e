package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arkhe-ledger/arkhe/ledger"
)

// OIDCConfig configures an OIDC token authenticator.
type OIDCConfig struct {
	// Issuer is the authorization server's issuer URL, exactly as its tokens' iss claim and its
	// /.well-known/openid-configuration document state it. Required.
	Issuer string
	// Audience is the value the tokens' aud claim must hold (this API's identifier at the
	// issuer). Required.
	Audience string
}

// OIDC is a TokenAuthenticator of OIDC bearer tokens (JWTs): it verifies a token's signature
// against the issuer's published keys (JWKS, refetched when a token names a key it does not
// hold), its issuer, its audience and its expiry, then matches the client by the token's
// authorized party (the azp claim; client_id, as access tokens name it, when azp is absent)
// against the registered clients' client_id. People and machines stay apart: a verified token
// of a machine client is refused (machines hold API keys; a person cannot hold one, which the
// ledger enforces), as is one of a deactivated person client. A verified token naming no
// registered client is refused and recorded in unknown_subject (issuer, subject, first and last
// seen, count, address). Safe for concurrent use.
type OIDC struct {
	pool     *pgxpool.Pool
	issuer   string
	verifier *oidc.IDTokenVerifier
}

// jwksTimeout bounds one fetch of the issuer's key set.
const jwksTimeout = 10 * time.Second

// fetchNote is the context key under which AuthenticateToken passes its *keyFetch to the key
// set: go-oidc's verifier reports a failed verification as text only (it does not wrap the key
// set's error), so the key set tells the request that it could not fetch the keys this way.
type fetchNote struct{}

// keyFetch records, for one verification, that the issuer's keys could not be fetched.
type keyFetch struct{ err error }

// remoteKeys is the issuer's key set (go-oidc's RemoteKeySet, which refetches the keys when a
// token names a key it does not hold) with the fetch failures told apart from tokens that do
// not verify: RemoteKeySet wraps the error of a failed fetch (%w) and returns the others, a
// signature no key verifies included, unwrapped.
type remoteKeys struct{ set *oidc.RemoteKeySet }

// VerifySignature verifies jwt's signature (oidc.KeySet), noting a failed key fetch in the
// context's *keyFetch.
func (k remoteKeys) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	payload, err := k.set.VerifySignature(ctx, jwt)
	if err != nil && errors.Unwrap(err) != nil {
		if f, ok := ctx.Value(fetchNote{}).(*keyFetch); ok {
			f.err = err
		}
	}
	return payload, err
}

// signingAlgs are the signature algorithms go-oidc verifies.
var signingAlgs = map[string]bool{oidc.RS256: true, oidc.RS384: true, oidc.RS512: true, oidc.ES256: true,
	oidc.ES384: true, oidc.ES512: true, oidc.PS256: true, oidc.PS384: true, oidc.PS512: true, oidc.EdDSA: true}

// NewOIDC returns an OIDC authenticator on pool (a login that may run
// arkhe_note_unknown_subject: the writer role or the owner). It reads the issuer's discovery
// document now, so an unreachable issuer or one whose document names another issuer fails here
// (wrapped, with the URL). ctx bounds that read only. An empty Issuer or Audience is a
// *ConfigError.
func NewOIDC(ctx context.Context, pool *pgxpool.Pool, cfg OIDCConfig) (*OIDC, error) {
	switch {
	case cfg.Issuer == "":
		return nil, &ConfigError{Field: "OIDC.Issuer", Rule: "an issuer URL is required"}
	case cfg.Audience == "":
		return nil, &ConfigError{Field: "OIDC.Audience", Rule: "an audience is required"}
	}
	p, err := oidc.NewProvider(ctx, cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("api: OIDC issuer %s: %w", cfg.Issuer, err)
	}
	var doc struct {
		JWKS string   `json:"jwks_uri"`
		Algs []string `json:"id_token_signing_alg_values_supported"`
	}
	if err := p.Claims(&doc); err != nil {
		return nil, fmt.Errorf("api: OIDC issuer %s: discovery document: %w", cfg.Issuer, err)
	}
	if doc.JWKS == "" {
		return nil, fmt.Errorf("api: OIDC issuer %s: the discovery document names no jwks_uri", cfg.Issuer)
	}
	var algs []string
	for _, a := range doc.Algs {
		if signingAlgs[a] {
			algs = append(algs, a)
		}
	}
	// The key set fetches on its own context (each fetch bounded by jwksTimeout); a request
	// waits for a fetch under way until its own context ends.
	kctx := oidc.ClientContext(context.WithoutCancel(ctx), &http.Client{Timeout: jwksTimeout})
	keys := remoteKeys{set: oidc.NewRemoteKeySet(kctx, doc.JWKS)}
	v := oidc.NewVerifier(cfg.Issuer, keys, &oidc.Config{ClientID: cfg.Audience, SupportedSigningAlgs: algs})
	return &OIDC{pool: pool, issuer: cfg.Issuer, verifier: v}, nil
}

// AuthenticateToken verifies token and returns the person client it stands for. A token that
// does not verify (malformed, bad signature, expired, another issuer or audience), names no
// authorized party, names a machine or a deactivated client, or names no registered client (then
// recorded in unknown_subject from remote) is a *TokenError. When the issuer's keys, needed to
// check the token, cannot be fetched (the issuer unreachable, its key set not served), the
// token may be good and this server cannot tell: that is an *IssuerError (answered 503). An
// error of the ledger is returned wrapped.
func (o *OIDC) AuthenticateToken(ctx context.Context, token string, remote netip.Addr) (string, bool, error) {
	var fetch keyFetch
	idt, err := o.verifier.Verify(context.WithValue(ctx, fetchNote{}, &fetch), token)
	if err != nil {
		if fetch.err != nil {
			return "", false, &IssuerError{Issuer: o.issuer, Err: fetch.err}
		}
		return "", false, &TokenError{Reason: "the token does not verify", Err: err}
	}
	var c struct {
		AZP      string `json:"azp"`
		ClientID string `json:"client_id"`
	}
	if err := idt.Claims(&c); err != nil {
		return "", false, &TokenError{Reason: "the token's claims do not decode", Err: err}
	}
	subject := c.AZP
	if subject == "" {
		subject = c.ClientID
	}
	if subject == "" {
		return "", false, &TokenError{Reason: "the token names no authorized party (azp)"}
	}
	st, active, found, err := ledger.ClientSubject(ctx, o.pool, subject)
	if err != nil {
		return "", false, err
	}
	switch {
	case !found:
		if _, _, err := ledger.NoteUnknownSubject(ctx, o.pool, o.issuer, subject, remote); err != nil {
			return "", false, err
		}
		return "", false, &TokenError{Reason: fmt.Sprintf("no client is registered as %q of issuer %s", subject, o.issuer)}
	case st != "person":
		return "", false, &TokenError{Reason: fmt.Sprintf("client %s is a machine: machine clients present API keys, people present tokens", subject)}
	case !active:
		return "", false, &TokenError{Reason: fmt.Sprintf("client %s is deactivated", subject)}
	}
	return subject, true, nil
}
