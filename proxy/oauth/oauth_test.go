package oauth_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/bankdoor/bankdoor/proxy/httpserve"
	"github.com/bankdoor/bankdoor/proxy/oauth"
)

const resource = "https://gate.bank.example/mcp"

// as is an authorization server for the tests: its metadata (RFC 8414 or
// OpenID Connect discovery) and JWK set, and the keys that sign tokens.
type as struct {
	srv      *httptest.Server
	mu       sync.Mutex
	keys     []jose.JSONWebKey // public, served
	jwksGets atomic.Int32
	oidcOnly bool // serve only .well-known/openid-configuration
}

func newAS(t *testing.T) *as {
	a := &as{}
	mux := http.NewServeMux()
	meta := func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"issuer": a.srv.URL, "jwks_uri": a.srv.URL + "/jwks"})
	}
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		if a.oidcOnly {
			http.NotFound(w, r)
			return
		}
		meta(w, r)
	})
	mux.HandleFunc("/.well-known/openid-configuration", meta)
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		a.jwksGets.Add(1)
		a.mu.Lock()
		defer a.mu.Unlock()
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: a.keys})
	})
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	return a
}

// key makes a signing key of alg, publishes it in the JWK set if publish,
// and returns a signer for it.
func (a *as) key(t *testing.T, alg jose.SignatureAlgorithm, kid string, publish bool) jose.Signer {
	t.Helper()
	var priv crypto.Signer
	var err error
	switch alg {
	case jose.RS256:
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	case jose.ES256:
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case jose.EdDSA:
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	}
	if err != nil {
		t.Fatal(err)
	}
	if publish {
		a.mu.Lock()
		a.keys = append(a.keys, jose.JSONWebKey{Key: priv.Public(), KeyID: kid, Algorithm: string(alg), Use: "sig"})
		a.mu.Unlock()
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: priv, KeyID: kid}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// rawKey makes an Ed25519 key, publishes it in the JWK set, and returns
// it, for tokens whose bytes a test writes itself.
func (a *as) rawKey(t *testing.T, kid string) ed25519.PrivateKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	a.keys = append(a.keys, jose.JSONWebKey{Key: pub, KeyID: kid, Algorithm: string(jose.EdDSA), Use: "sig"})
	a.mu.Unlock()
	return priv
}

func sign(t *testing.T, s jose.Signer, claims map[string]any) string {
	t.Helper()
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

var now = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

func verifier(t *testing.T, a *as, mod func(*oauth.Config)) *oauth.Verifier {
	t.Helper()
	cfg := oauth.Config{Issuer: a.srv.URL, Resource: resource, Scopes: []string{"bankdoor"}, Agents: agents,
		Now: func() time.Time { return now }, CheckAgent: httpserve.CheckAgent}
	if mod != nil {
		mod(&cfg)
	}
	v, err := oauth.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// client is the sub of the tests' tokens, and agents maps it to the
// agent reconciler, as an authorization server names a client by an id
// of its own.
const client = "0oa1f2c3@clients"

var agents = map[string]string{client: "reconciler"}

func claims(mod func(map[string]any)) map[string]any {
	c := map[string]any{
		"iss": "", "aud": []string{resource}, "sub": client, "scp": []string{"bankdoor"},
		"iat": now.Add(-time.Minute).Unix(), "nbf": now.Add(-time.Minute).Unix(), "exp": now.Add(time.Hour).Unix(),
	}
	if mod != nil {
		mod(c)
	}
	return c
}

// TestAgent: a table of tokens, each accepted as its agent or refused
// with its status, error code and reason.
func TestAgent(t *testing.T) {
	a := newAS(t)
	rs := a.key(t, jose.RS256, "rs", true)
	es := a.key(t, jose.ES256, "es", true)
	ed := a.key(t, jose.EdDSA, "ed", true)
	unpublished := a.key(t, jose.RS256, "rs", false) // same kid, another key
	other := newAS(t)
	otherKey := other.key(t, jose.RS256, "rs", true)

	iss := func(c map[string]any) { c["iss"] = a.srv.URL }
	with := func(mods ...func(map[string]any)) map[string]any {
		return claims(func(c map[string]any) {
			iss(c)
			for _, m := range mods {
				m(c)
			}
		})
	}
	hmac, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: []byte("0123456789abcdef0123456789abcdef")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		token  string
		agent  string
		status int
		code   string
		reason string // a regexp
	}{
		{name: "RS256", token: sign(t, rs, with()), agent: "reconciler"},
		{name: "ES256", token: sign(t, es, with()), agent: "reconciler"},
		{name: "EdDSA", token: sign(t, ed, with()), agent: "reconciler"},
		{name: "aud as a string", token: sign(t, rs, with(func(c map[string]any) { c["aud"] = resource })), agent: "reconciler"},
		{name: "scope string", token: sign(t, rs, with(func(c map[string]any) { delete(c, "scp"); c["scope"] = "read bankdoor" })), agent: "reconciler"},
		{name: "scp string", token: sign(t, rs, with(func(c map[string]any) { c["scp"] = "bankdoor" })), agent: "reconciler"},
		{name: "another audience", token: sign(t, rs, with(func(c map[string]any) { c["aud"] = []string{"https://other.bank.example/mcp"} })),
			status: 401, code: "invalid_token", reason: `expected audience "https://gate.bank.example/mcp"`},
		{name: "audience with a trailing slash", token: sign(t, rs, with(func(c map[string]any) { c["aud"] = resource + "/" })),
			status: 401, code: "invalid_token", reason: "expected audience"},
		{name: "no audience", token: sign(t, rs, with(func(c map[string]any) { delete(c, "aud") })),
			status: 401, code: "invalid_token", reason: "expected audience"},
		{name: "another issuer's claim", token: sign(t, rs, with(func(c map[string]any) { c["iss"] = other.srv.URL })),
			status: 401, code: "invalid_token", reason: "issued by a different provider"},
		{name: "another issuer's key and claim", token: sign(t, otherKey, claims(func(c map[string]any) { c["iss"] = other.srv.URL })),
			status: 401, code: "invalid_token", reason: "failed to verify"},
		{name: "another issuer's key, our claim", token: sign(t, otherKey, with()),
			status: 401, code: "invalid_token", reason: "failed to verify"},
		{name: "unpublished key with a published kid", token: sign(t, unpublished, with()),
			status: 401, code: "invalid_token", reason: "failed to verify"},
		{name: "expired", token: sign(t, rs, with(func(c map[string]any) { c["exp"] = now.Add(-time.Second).Unix() })),
			status: 401, code: "invalid_token", reason: "expired at 2026-12-03T11:59:59Z"},
		{name: "no exp", token: sign(t, rs, with(func(c map[string]any) { delete(c, "exp") })),
			status: 401, code: "invalid_token", reason: "expired"},
		{name: "not yet valid", token: sign(t, rs, with(func(c map[string]any) { c["nbf"] = now.Add(time.Hour).Unix() })),
			status: 401, code: "invalid_token", reason: "nbf"},
		{name: "HS256", token: sign(t, hmac, with()), status: 401, code: "invalid_token", reason: "unsupported algorithm|malformed"},
		{name: "alg none", token: unsigned(with()), status: 401, code: "invalid_token", reason: "malformed"},
		{name: "not a JWT", token: "0123456789abcdef0123456789abcdef", status: 401, code: "invalid_token", reason: "malformed"},
		{name: "no scope", token: sign(t, rs, with(func(c map[string]any) { delete(c, "scp") })),
			status: 403, code: "insufficient_scope", reason: "does not grant scope bankdoor"},
		{name: "another scope", token: sign(t, rs, with(func(c map[string]any) { c["scp"] = []string{"bankdoor:read"} })),
			status: 403, code: "insufficient_scope", reason: "does not grant scope bankdoor"},
		{name: "no sub", token: sign(t, rs, with(func(c map[string]any) { delete(c, "sub") })),
			status: 401, code: "invalid_token", reason: "no string claim sub"},
		{name: "sub not an agent name", token: sign(t, rs, with(func(c map[string]any) { c["sub"] = "../alice" })),
			status: 403, code: "insufficient_scope", reason: `sub "../alice" is not one of this gateway's agents`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := verifier(t, a, nil)
			agent, err := v.Agent(context.Background(), tc.token)
			if tc.status == 0 {
				if err != nil || agent != tc.agent {
					t.Fatalf("Agent = %q, %v; want %q", agent, err, tc.agent)
				}
				return
			}
			var oe *oauth.Error
			if !errors.As(err, &oe) || oe.Status != tc.status || oe.Code != tc.code || !regexp.MustCompile(tc.reason).MatchString(oe.Reason) {
				t.Fatalf("Agent = %q, %v; want %d %s matching %q", agent, err, tc.status, tc.code, tc.reason)
			}
			if agent != "" {
				t.Errorf("a refused token named agent %q", agent)
			}
		})
	}
}

// unsigned returns a JWT with alg none.
func unsigned(c map[string]any) string {
	b, _ := json.Marshal(c)
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc(b) + "."
}

// TestAgentsMap: with Config.Agents, only a mapped claim value is an
// agent, by the name it maps to; the claim may be another one than sub.
func TestAgentsMap(t *testing.T) {
	a := newAS(t)
	rs := a.key(t, jose.RS256, "rs", true)
	v := verifier(t, a, func(c *oauth.Config) {
		c.AgentClaim = "client_id"
		c.Agents = map[string]string{"0oa1f2@clients": "reconciler"}
	})
	tok := sign(t, rs, claims(func(c map[string]any) { c["iss"] = a.srv.URL; c["client_id"] = "0oa1f2@clients" }))
	if agent, err := v.Agent(context.Background(), tok); err != nil || agent != "reconciler" {
		t.Errorf("mapped client_id: %q, %v; want reconciler", agent, err)
	}
	tok = sign(t, rs, claims(func(c map[string]any) { c["iss"] = a.srv.URL; c["client_id"] = "reconciler" }))
	var oe *oauth.Error
	if _, err := v.Agent(context.Background(), tok); !errors.As(err, &oe) || oe.Status != 403 {
		t.Errorf("unmapped client_id: %v, want 403", err)
	}
}

// TestAgentIsMapped: no claim value is an agent by being its name. A
// verifier needs at least one mapped value, and a token whose sub is an
// agent's name (here the very agent the mapping names) is refused, so an
// authorization server's client that is called, or registers itself as,
// an agent does not become it.
func TestAgentIsMapped(t *testing.T) {
	a := newAS(t)
	rs := a.key(t, jose.RS256, "rs", true)
	for _, m := range []map[string]string{nil, {}} {
		cfg := oauth.Config{Issuer: a.srv.URL, Resource: resource, Scopes: []string{"bankdoor"}, Agents: m, CheckAgent: httpserve.CheckAgent}
		if _, err := oauth.New(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "no agent") {
			t.Errorf("New with Agents %v: %v, want an error saying no agent is mapped", m, err)
		}
	}
	cfg := oauth.Config{Issuer: a.srv.URL, Resource: resource, Scopes: []string{"bankdoor"}, Agents: map[string]string{"": "reconciler"}, CheckAgent: httpserve.CheckAgent}
	if _, err := oauth.New(context.Background(), cfg); err == nil {
		t.Error("New mapped an empty claim value")
	}
	v := verifier(t, a, nil)
	for _, sub := range []string{"reconciler", ""} {
		tok := sign(t, rs, claims(func(c map[string]any) { c["iss"] = a.srv.URL; c["sub"] = sub }))
		agent, err := v.Agent(context.Background(), tok)
		var oe *oauth.Error
		if !errors.As(err, &oe) || oe.Status != 403 || !strings.Contains(oe.Reason, "is not one of this gateway's agents") {
			t.Errorf("sub %q, not mapped: Agent = %q, %v; want 403, not one of this gateway's agents", sub, agent, err)
		}
	}
}

// TestStrictToken: a token is the JWS compact serialization of strict
// JSON with claims of their registered types, or it is refused, though
// its signature is good. Each row is signed by a published key, and the
// first, which is accepted, shows that the rest are refused for their
// defect alone.
func TestStrictToken(t *testing.T) {
	a := newAS(t)
	priv := a.rawKey(t, "raw")
	signer := a.key(t, jose.EdDSA, "ed", true)
	enc := base64.RawURLEncoding.EncodeToString
	header := `{"alg":"EdDSA","kid":"raw","typ":"JWT"}`
	good := fmt.Sprintf(`{"iss":%q,"aud":[%q],"sub":%q,"scp":["bankdoor"],"iat":%d,"nbf":%d,"exp":%d}`,
		a.srv.URL, resource, client, now.Add(-time.Minute).Unix(), now.Add(-time.Minute).Unix(), now.Add(time.Hour).Unix())
	// edit returns good with old replaced by new, once.
	edit := func(old, new string) string {
		if !strings.Contains(good, old) {
			t.Fatalf("%s not in %s", old, good)
		}
		return strings.Replace(good, old, new, 1)
	}
	exp := fmt.Sprint(now.Add(time.Hour).Unix())
	nbf := fmt.Sprint(now.Add(-time.Minute).Unix())
	jws, err := signer.Sign([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	compact := raw(priv, header, good)
	for _, tc := range []struct {
		name, token string
		reason      string // "" for accepted; else a regexp
	}{
		{"good", compact, ""},
		{"fractional exp", raw(priv, header, edit(`"exp":`+exp, `"exp":`+exp+`.5`)), ""},
		{"aud a string", raw(priv, header, edit(`"aud":[`+quote(resource)+`]`, `"aud":`+quote(resource))), ""},
		{"exp a string", raw(priv, header, edit(`"exp":`+exp, `"exp":"`+exp+`"`)), `exp is not a number`},
		{"nbf a string", raw(priv, header, edit(`"nbf":`+nbf, `"nbf":"`+nbf+`"`)), `nbf is not a number`},
		{"iat a string", raw(priv, header, edit(`"iat":`+nbf, `"iat":"`+nbf+`"`)), `iat is not a number`},
		{"exp null", raw(priv, header, edit(`"exp":`+exp, `"exp":null`)), `exp is not a number`},
		{"exp out of range", raw(priv, header, edit(`"exp":`+exp, `"exp":1e400`)), `exp`},
		{"iss an array", raw(priv, header, edit(`"iss":`+quote(a.srv.URL), `"iss":[`+quote(a.srv.URL)+`]`)), `iss is not a string`},
		{"aud with a number", raw(priv, header, edit(`"aud":[`, `"aud":[1,`)), `aud is not a string or an array of strings`},
		{"scp with a number", raw(priv, header, edit(`"scp":["bankdoor"]`, `"scp":["bankdoor",1]`)), `scp is not a string or an array of strings`},
		{"scope an array", raw(priv, header, edit(`"scp":["bankdoor"]`, `"scope":["bankdoor"]`)), `scope is not a string`},
		{"duplicate claim", raw(priv, header, edit(`"sub":`, `"sub":"mallory","sub":`)), `duplicate member "sub"`},
		{"duplicate claim, escaped", raw(priv, header, edit(`"sub":`, `"sub":"mallory","s\u0075b":`)), `duplicate member "sub"`},
		{"data after the claims", raw(priv, header, good+`{}`), `after`},
		{"duplicate header member", raw(priv, `{"alg":"EdDSA","kid":"raw","kid":"ed","typ":"JWT"}`, good), `duplicate member "kid"`},
		{"critical header", raw(priv, `{"alg":"EdDSA","kid":"raw","crit":["exp"],"exp":1}`, good), `crit`},
		{"JSON serialization", jws.FullSerialize(), `malformed`},
		{"whitespace inside", compact[:20] + "\n" + compact[20:], `malformed`},
		{"padded", strings.Replace(compact, ".", "==.", 1), `malformed`},
		{"four parts", compact + "." + enc([]byte("x")), `malformed`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			agent, err := verifier(t, a, nil).Agent(context.Background(), tc.token)
			if tc.reason == "" {
				if err != nil || agent != "reconciler" {
					t.Fatalf("Agent = %q, %v; want reconciler", agent, err)
				}
				return
			}
			var oe *oauth.Error
			if !errors.As(err, &oe) || oe.Status != 401 || oe.Code != "invalid_token" || !regexp.MustCompile(tc.reason).MatchString(oe.Reason) {
				t.Fatalf("Agent = %q, %v; want 401 invalid_token matching %q", agent, err, tc.reason)
			}
		})
	}
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// raw returns the compact JWS of header and payload, exactly those bytes,
// signed with priv.
func raw(priv ed25519.PrivateKey, header, payload string) string {
	enc := base64.RawURLEncoding.EncodeToString
	in := enc([]byte(header)) + "." + enc([]byte(payload))
	return in + "." + enc(ed25519.Sign(priv, []byte(in)))
}

// TestKeyRotation: a token signed by a key published after the first
// fetch is accepted once the set is fetched again; the set is not fetched
// again for tokens of keys already known.
func TestKeyRotation(t *testing.T) {
	a := newAS(t)
	first := a.key(t, jose.RS256, "k1", true)
	v := verifier(t, a, nil)
	c := claims(func(c map[string]any) { c["iss"] = a.srv.URL })
	for range 3 {
		if _, err := v.Agent(context.Background(), sign(t, first, c)); err != nil {
			t.Fatal(err)
		}
	}
	if n := a.jwksGets.Load(); n != 1 {
		t.Errorf("%d JWK set fetches for three tokens of one key, want 1", n)
	}
	second := a.key(t, jose.RS256, "k2", true)
	if _, err := v.Agent(context.Background(), sign(t, second, c)); err != nil {
		t.Errorf("a token of the rotated-in key: %v", err)
	}
}

// TestDiscovery: the JWK set is found through RFC 8414 metadata or, if
// the server has none, OpenID Connect discovery; metadata naming another
// issuer, and bad configurations, are refused.
func TestDiscovery(t *testing.T) {
	a := newAS(t)
	a.oidcOnly = true
	rs := a.key(t, jose.RS256, "rs", true)
	v := verifier(t, a, nil)
	if _, err := v.Agent(context.Background(), sign(t, rs, claims(func(c map[string]any) { c["iss"] = a.srv.URL }))); err != nil {
		t.Errorf("OpenID Connect discovery only: %v", err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*oauth.Config)
		want string
	}{
		{"issuer with a slash", func(c *oauth.Config) { c.Issuer += "/" }, "issuer"},
		{"issuer not there", func(c *oauth.Config) { c.Issuer = "http://127.0.0.1:1" }, "authorization server metadata"},
		{"plain http issuer", func(c *oauth.Config) { c.Issuer = "http://as.bank.example" }, "plain http only for a loopback host"},
		{"plain http resource", func(c *oauth.Config) { c.Resource = "http://gate.bank.example/mcp" }, "plain http only for a loopback host"},
		{"resource with a fragment", func(c *oauth.Config) { c.Resource += "#x" }, "without user, query or fragment"},
		{"no scope", func(c *oauth.Config) { c.Scopes = nil }, "no required scope"},
		{"scope with a quote", func(c *oauth.Config) { c.Scopes = []string{`a"b`} }, "printable ASCII"},
		{"mapped to a bad name", func(c *oauth.Config) { c.Agents = map[string]string{"x": "A B"} }, "agent name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := oauth.Config{Issuer: a.srv.URL, Resource: resource, Scopes: []string{"bankdoor"}, Agents: agents, CheckAgent: httpserve.CheckAgent}
			tc.mod(&cfg)
			if _, err := oauth.New(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestMetadataAndChallenge: the protected resource metadata (RFC 9728)
// sits at the resource's path under the well-known prefix and names the
// resource, the issuer and the scopes; the challenge points at it.
func TestMetadataAndChallenge(t *testing.T) {
	a := newAS(t)
	v := verifier(t, a, func(c *oauth.Config) { c.Scopes = []string{"bankdoor", "read"} })
	if got, want := v.MetadataPath(), "/.well-known/oauth-protected-resource/mcp"; got != want {
		t.Errorf("MetadataPath = %q, want %q", got, want)
	}
	rec := httptest.NewRecorder()
	v.ServeMetadata(rec, httptest.NewRequest("GET", v.MetadataPath(), nil))
	var md struct {
		Resource string   `json:"resource"`
		AS       []string `json:"authorization_servers"`
		Scopes   []string `json:"scopes_supported"`
		Methods  []string `json:"bearer_methods_supported"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &md); err != nil || md.Resource != resource || len(md.AS) != 1 || md.AS[0] != a.srv.URL ||
		strings.Join(md.Scopes, " ") != "bankdoor read" || strings.Join(md.Methods, ",") != "header" || rec.Header().Get("Content-Type") != "application/json" {
		t.Errorf("metadata %s (%v)", rec.Body, err)
	}
	meta := "https://gate.bank.example/.well-known/oauth-protected-resource/mcp"
	if got, want := v.Challenge(nil), fmt.Sprintf(`Bearer resource_metadata="%s", scope="bankdoor read"`, meta); got != want {
		t.Errorf("Challenge(nil) = %s, want %s", got, want)
	}
	got := v.Challenge(&oauth.Error{Status: 401, Code: "invalid_token", Reason: `aud "x" \ é`})
	if want := fmt.Sprintf(`Bearer error="invalid_token", error_description="aud 'x' ' ?", resource_metadata="%s", scope="bankdoor read"`, meta); got != want {
		t.Errorf("Challenge = %s, want %s", got, want)
	}
}
