package main

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/arkhe-ledger/arkhe/fixtures/pgtest"
	"github.com/arkhe-ledger/arkhe/ledger"
)

// testIssuer is an OIDC issuer on a loopback socket: its discovery document and the JWKS of one
// RSA key made in the test; token signs RS256 tokens with that key.
type testIssuer struct {
	url string
	key *rsa.PrivateKey
}

func newTestIssuer(t *testing.T) *testIssuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	is := &testIssuer{key: key}
	b64 := base64.RawURLEncoding.EncodeToString
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": is.url, "jwks_uri": is.url + "/jwks",
			"authorization_endpoint": is.url + "/auth", "token_endpoint": is.url + "/token",
			"id_token_signing_alg_values_supported": []string{"RS256"},
		})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{
			"kty": "RSA", "kid": "k1", "alg": "RS256", "use": "sig",
			"n": b64(key.PublicKey.N.Bytes()), "e": b64(big.NewInt(int64(key.PublicKey.E)).Bytes())}}})
	})
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	is.url = hs.URL
	return is
}

// token returns a compact JWS (RS256, key ID k1) of a good token of azp for audience arkhe-api.
func (is *testIssuer) token(t *testing.T, azp string) string {
	t.Helper()
	now := time.Now()
	b64 := base64.RawURLEncoding.EncodeToString
	header, _ := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": "k1"})
	claims, _ := json.Marshal(map[string]any{"iss": is.url, "aud": "arkhe-api", "sub": "u-" + azp, "azp": azp,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	signed := b64(header) + "." + b64(claims)
	sum := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, is.key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return signed + "." + b64(sig)
}

// TestServeOIDC runs `arkhe serve --api --oidc-issuer ... --oidc-audience ...` as a process of
// its own against an issuer on loopback: a registered person's token mints (200, the ARK by
// that client); a verified token of a subject no client is registered as is refused (401) and
// then listed by `arkhe client unknown` with the issuer.
func TestServeOIDC(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.URL(t)
	pool := pgtest.New(t)
	l := &ledger.Ledger{Pool: pool}
	if _, err := l.AddNAAN(ctx, ledger.NAAN{NAAN: "12345", Name: "test"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AddManager(ctx, ledger.Manager{NAAN: "12345", Name: "m1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AddShoulder(ctx, ledger.Shoulder{NAAN: "12345", Shoulder: "/t2", Manager: "m1"}, 0); err != nil {
		t.Fatal(err)
	}
	if err := l.AddClient(ctx, ledger.Client{ClientID: "alice", NAAN: "12345", Manager: "m1", Authority: "manager",
		SubjectType: "person", Scopes: []string{"ark:mint"}}); err != nil {
		t.Fatal(err)
	}
	is := newTestIssuer(t)
	_, sc, errb, base := startServe(t, url, "--api", "--oidc-issuer", is.url, "--oidc-audience", "arkhe-api")
	for i := 0; i < 2; i++ { // the API's two lines
		if !sc.Scan() || !strings.HasPrefix(sc.Text(), "arkhe serve: ") {
			t.Fatalf("serve --api line %d: %q; stderr:\n%s", i+2, sc.Text(), errb.String())
		}
	}
	mint := func(tok string) (int, string, http.Header) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+"/mint", strings.NewReader(`{"naan": 12345, "shoulder": "/t2", "url": "https://example.org/a"}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	status, body, _ := mint(is.token(t, "alice"))
	if status != 200 || !strings.HasPrefix(body, `{"ark":"ark:/12345/t2`) {
		t.Fatalf("POST /mint with alice's token: %d %q; stderr:\n%s", status, body, errb.String())
	}
	minted := strings.TrimSuffix(strings.TrimPrefix(body, `{"ark":"ark:/`), `"}`)
	var by string
	if err := pool.QueryRow(ctx, `select c.client_id from ark a join client c on c.id = a.created_by where a.ark = $1`, minted).Scan(&by); err != nil || by != "alice" {
		t.Fatalf("%s minted by %q (%v), want alice", minted, by, err)
	}
	status, body, h := mint(is.token(t, "stranger"))
	if status != 401 || !strings.Contains(body, `"stranger"`) || h.Get("WWW-Authenticate") == "" {
		t.Fatalf("POST /mint with an unknown subject's token: %d %q, want 401 naming it", status, body)
	}
	code, out, errOut := arkhe(t, url, "", "client", "unknown")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 {
		t.Fatalf("client unknown: %d\n%s\n%s", code, out, errOut)
	}
	if f := strings.Fields(lines[1]); len(f) != 7 || f[1] != "stranger" || f[2] != is.url || f[5] != "1" || f[6] != "127.0.0.1" {
		t.Fatalf("client unknown row %q: want stranger of %s, seen once, from 127.0.0.1", lines[1], is.url)
	}
}
