package api_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/arkhe-ledger/arkhe/api"
	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// issuer is a local OIDC issuer on a loopback socket: its discovery document and a JWKS of one
// RSA key made in the test; sign makes tokens with that key (or another).
type issuer struct {
	t    *testing.T
	url  string
	key  *rsa.PrivateKey
	hs   *httptest.Server
	down atomic.Bool // when set, the JWKS is answered 503
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	must(t, err)
	is := &issuer{t: t, key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": is.url, "jwks_uri": is.url + "/jwks",
			"authorization_endpoint": is.url + "/auth", "token_endpoint": is.url + "/token",
			"id_token_signing_alg_values_supported": []string{"RS256", "ES256"},
		})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		if is.down.Load() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
			{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	is.url, is.hs = hs.URL, hs
	return is
}

// sign returns a compact JWS of claims signed by key (an *rsa.PrivateKey for RS256 or an
// *ecdsa.PrivateKey for ES256) under key ID k1.
func (is *issuer) sign(key any, claims map[string]any) string {
	is.t.Helper()
	alg := jose.RS256
	if _, ok := key.(*ecdsa.PrivateKey); ok {
		alg = jose.ES256
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
	must(is.t, err)
	payload, err := json.Marshal(claims)
	must(is.t, err)
	obj, err := sig.Sign(payload)
	must(is.t, err)
	tok, err := obj.CompactSerialize()
	must(is.t, err)
	return tok
}

// claims returns the claims of a good token of azp for audience arkhe-api.
func (is *issuer) claims(azp string) map[string]any {
	now := time.Now()
	return map[string]any{"iss": is.url, "aud": "arkhe-api", "sub": "u-" + azp, "azp": azp,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
}

// TestOIDCTokens: OIDC bearer tokens of a local issuer against the API, with person client
// alice of m1 (scope ark:mint) and the site's machine client svc.
func TestOIDCTokens(t *testing.T) {
	t.Parallel()
	pgtest.Each(t, func(t *testing.T, db pgtest.DB) {
		ctx := context.Background()
		is := newIssuer(t)
		o, err := api.NewOIDC(ctx, db.Pool, api.OIDCConfig{Issuer: is.url, Audience: "arkhe-api"})
		must(t, err)
		s := newSite(t, db, api.Config{Tokens: o})
		must(t, s.l.AddClient(ctx, ledger.Client{ClientID: "alice", NAAN: "12345", Manager: "m1", Authority: "manager",
			SubjectType: "person", Scopes: []string{"ark:mint"}}))
		mintWith := func(tok string) (int, string) {
			t.Helper()
			status, body, _ := s.do(http.MethodPost, "/mint", map[string]any{"naan": 12345, "shoulder": "/t2"},
				"Authorization", "Bearer "+tok, "Content-Type", "application/json")
			return status, body
		}
		arks := func() int { return s.count(`select count(*) from ark`) }

		t.Run("valid token mints", func(t *testing.T) {
			status, body := mintWith(is.sign(is.key, is.claims("alice")))
			if status != 200 {
				t.Fatalf("mint: %d %q", status, body)
			}
			a := arkOf(t, body)
			var by string
			must(t, s.l.Pool.QueryRow(ctx, `select c.client_id from ark a join client c on c.id = a.created_by where a.ark = $1`,
				strings.TrimLeft(strings.TrimPrefix(a, "ark:"), "/")).Scan(&by))
			if by != "alice" {
				t.Fatalf("%s minted by %q, want alice", a, by)
			}
		})

		other, err := rsa.GenerateKey(rand.Reader, 2048)
		must(t, err)
		ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		must(t, err)
		expired := is.claims("alice")
		expired["exp"] = time.Now().Add(-time.Hour).Unix()
		expired["iat"] = time.Now().Add(-2 * time.Hour).Unix()
		wrongAud := is.claims("alice")
		wrongAud["aud"] = "another-api"
		wrongIss := is.claims("alice")
		wrongIss["iss"] = "https://issuer.invalid"
		noAZP := is.claims("alice")
		delete(noAZP, "azp")
		for _, c := range []struct {
			name, token, want string
		}{
			{"expired", is.sign(is.key, expired), "does not verify"},
			{"wrong audience", is.sign(is.key, wrongAud), "does not verify"},
			{"wrong issuer", is.sign(is.key, wrongIss), "does not verify"},
			{"bad signature (another RSA key)", is.sign(other, is.claims("alice")), "does not verify"},
			{"bad signature (an EC key)", is.sign(ec, is.claims("alice")), "does not verify"},
			{"tampered payload", tamper(t, is.sign(is.key, is.claims("alice"))), "does not verify"},
			{"no azp", is.sign(is.key, noAZP), "no authorized party"},
			{"machine client via token", is.sign(is.key, is.claims("svc")), "is a machine"},
		} {
			t.Run(c.name, func(t *testing.T) {
				before := arks()
				status, body, resp := s.do(http.MethodPost, "/mint", map[string]any{"naan": 12345, "shoulder": "/t2"},
					"Authorization", "Bearer "+c.token, "Content-Type", "application/json")
				if status != 401 || !strings.Contains(body, c.want) {
					t.Fatalf("%d %q, want 401 saying %q", status, body, c.want)
				}
				if h := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(h, "Bearer") {
					t.Fatalf("WWW-Authenticate %q", h)
				}
				if n := arks(); n != before {
					t.Fatalf("%d ARKs after the refusal, %d before", n, before)
				}
				if n := s.count(`select count(*) from unknown_subject`); n != 0 {
					t.Fatalf("%d unknown subjects recorded for a token of a registered client or none verified", n)
				}
			})
		}

		t.Run("unknown subject recorded", func(t *testing.T) {
			before := arks()
			for i := 0; i < 2; i++ {
				if status, body := mintWith(is.sign(is.key, is.claims("alcie"))); status != 401 || !strings.Contains(body, `"alcie"`) {
					t.Fatalf("try %d: %d %q, want 401 naming alcie", i+1, status, body)
				}
			}
			if n := arks(); n != before {
				t.Fatalf("%d ARKs after the refusals, %d before", n, before)
			}
			var (
				iss, ip     string
				seen        int
				first, last time.Time
			)
			must(t, s.l.Pool.QueryRow(ctx, `select issuer, seen, host(ip), first_seen, last_seen from unknown_subject where subject = 'alcie'`).
				Scan(&iss, &seen, &ip, &first, &last))
			if iss != is.url || seen != 2 || ip != "127.0.0.1" || last.Before(first) {
				t.Fatalf("unknown_subject: issuer %q seen %d ip %q first %v last %v; want %q, 2, 127.0.0.1, last >= first",
					iss, seen, ip, first, last, is.url)
			}
			us, err := s.l.ListUnknownSubjects(ctx)
			must(t, err)
			if len(us) != 1 || us[0].Subject != "alcie" || us[0].Seen != 2 || us[0].Issuer != is.url {
				t.Fatalf("ListUnknownSubjects: %+v", us)
			}
			// registering the subject takes it off the list
			must(t, s.l.AddClient(ctx, ledger.Client{ClientID: "alcie", NAAN: "12345", Manager: "m1", Authority: "manager",
				SubjectType: "person", Scopes: []string{"ark:mint"}}))
			if us, err := s.l.ListUnknownSubjects(ctx); err != nil || len(us) != 0 {
				t.Fatalf("after registering alcie: %+v, %v; want none", us, err)
			}
			if status, body := mintWith(is.sign(is.key, is.claims("alcie"))); status != 200 {
				t.Fatalf("alcie registered: %d %q", status, body)
			}
		})

		t.Run("deactivated person refused", func(t *testing.T) {
			must(t, firstErr(s.l.SetClientActive(ctx, "alice", false)))
			if status, body := mintWith(is.sign(is.key, is.claims("alice"))); status != 401 || !strings.Contains(body, "deactivated") {
				t.Fatalf("%d %q, want 401 deactivated", status, body)
			}
		})

		t.Run("person client cannot hold an API key", func(t *testing.T) {
			_, err := s.l.CreateKey(ctx, "alcie")
			if err == nil {
				t.Fatal("CreateKey of a person client: no error")
			}
			if n := s.count(`select count(*) from credential k join client c on c.id = k.client_pk where c.subject_type = 'person'`); n != 0 {
				t.Fatalf("%d credentials of person clients", n)
			}
			_, err = s.l.Pool.Exec(ctx, `insert into credential (client_pk, kind, prefix, hashed)
				select id, 'api_key', 'pfx', 'x' from client where client_id = 'alcie'`)
			if ledger.SQLState(err) != "AK005" {
				t.Fatalf("insert of a person's api_key: %v, want SQLSTATE AK005", err)
			}
		})
	})
}

// tamper flips one character of a token's payload, keeping its signature.
func tamper(t *testing.T, tok string) string {
	t.Helper()
	p := strings.Split(tok, ".")
	if len(p) != 3 || len(p[1]) < 10 {
		t.Fatalf("token %q is not a compact JWS", tok)
	}
	b := []byte(p[1])
	if b[5] == 'A' {
		b[5] = 'B'
	} else {
		b[5] = 'A'
	}
	p[1] = string(b)
	return strings.Join(p, ".")
}

// TestNewOIDCConfig: an empty issuer or audience is a *ConfigError.
func TestNewOIDCConfig(t *testing.T) {
	t.Parallel()
	for _, c := range []api.OIDCConfig{{Audience: "a"}, {Issuer: "http://127.0.0.1:1"}} {
		if _, err := api.NewOIDC(context.Background(), nil, c); !api.IsConfigError(err) {
			t.Fatalf("NewOIDC(%+v): %v, want a *ConfigError", c, err)
		}
	}
}

// TestOIDCIssuerUnreachable: a token that cannot be checked because the issuer's keys cannot be
// fetched is answered 503 (the token may be good), not 401, and told to OnError as an
// *IssuerError: the key set answered 503, then the issuer gone (connection refused). A token
// that does not verify against keys that were fetched stays a 401.
func TestOIDCIssuerUnreachable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.DB{Kind: pgtest.KindSingle, Pool: pgtest.New(t)}
	is := newIssuer(t)
	o, err := api.NewOIDC(ctx, db.Pool, api.OIDCConfig{Issuer: is.url, Audience: "arkhe-api"})
	must(t, err)
	var told atomic.Int64
	var last atomic.Value
	s := newSite(t, db, api.Config{Tokens: o, OnError: func(err error) {
		if api.IsIssuerError(err) {
			told.Add(1)
		}
		last.Store(err.Error())
	}})
	must(t, s.l.AddClient(ctx, ledger.Client{ClientID: "alice", NAAN: "12345", Manager: "m1", Authority: "manager",
		SubjectType: "person", Scopes: []string{"ark:mint"}}))
	mintWith := func(tok string) (int, string, *http.Response) {
		t.Helper()
		return s.do(http.MethodPost, "/mint", map[string]any{"naan": 12345, "shoulder": "/t2"},
			"Authorization", "Bearer "+tok, "Content-Type", "application/json")
	}
	is.down.Store(true)
	if status, body, _ := mintWith(is.sign(is.key, is.claims("alice"))); status != 503 || !strings.Contains(body, "could not be reached") {
		t.Fatalf("JWKS answering 503: %d %q, want 503 naming the issuer", status, body)
	}
	if n := told.Load(); n != 1 {
		t.Fatalf("OnError told of %d IssuerErrors, want 1 (last: %v)", n, last.Load())
	}
	is.down.Store(false)
	if status, body, _ := mintWith(is.sign(is.key, is.claims("alice"))); status != 200 {
		t.Fatalf("issuer back: %d %q, want 200", status, body)
	}
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	must(t, err)
	if status, body, resp := mintWith(is.sign(other, is.claims("alice"))); status != 401 || resp.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("bad signature, issuer up: %d %q, want 401", status, body)
	}
	is.hs.Close()
	// another key ID than the one held, so the keys are fetched again: the issuer is gone
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: is.key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k2"))
	must(t, err)
	payload, err := json.Marshal(is.claims("alice"))
	must(t, err)
	obj, err := sig.Sign(payload)
	must(t, err)
	tok, err := obj.CompactSerialize()
	must(t, err)
	if status, body, _ := mintWith(tok); status != 503 || !strings.Contains(body, is.url) {
		t.Fatalf("issuer gone: %d %q, want 503 naming %s", status, body, is.url)
	}
	if n := told.Load(); n != 2 {
		t.Fatalf("OnError told of %d IssuerErrors, want 2 (last: %v)", n, last.Load())
	}
	if n := s.count(`select count(*) from ark`); n != 1 {
		t.Fatalf("%d ARKs, want the 1 minted while the issuer answered", n)
	}
}
