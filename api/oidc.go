package api

import (
	"context"
	"fmt"
	"net/netip"

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
	// The key set's fetches after this call run under the context of the request that needs
	// them; the provider keeps no other use of ctx.
	v := p.Verifier(&oidc.Config{ClientID: cfg.Audience})
	return &OIDC{pool: pool, issuer: cfg.Issuer, verifier: v}, nil
}

// AuthenticateToken verifies token and returns the person client it stands for. A token that
// does not verify (malformed, bad signature, expired, another issuer or audience), names no
// authorized party, names a machine or a deactivated client, or names no registered client (then
// recorded in unknown_subject from remote) is a *TokenError (the issuer's keys not being
// fetched included: go-oidc does not tell that apart); an error of the ledger is returned wrapped.
func (o *OIDC) AuthenticateToken(ctx context.Context, token string, remote netip.Addr) (string, bool, error) {
	idt, err := o.verifier.Verify(ctx, token)
	if err != nil {
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
