// Package oauth makes the gateway an OAuth 2.1 resource server, as the MCP
// authorization specification has one
// (https://modelcontextprotocol.io/specification/2025-11-25/basic/authorization):
// an agent presents an access token that an authorization server issued
// for the gateway, and the gateway checks it and takes the agent's
// identity from it. It never passes the token on: the bank server sees
// the gateway's own credentials (if any), never an agent's token.
//
// # Tokens accepted
//
// An access token is a JWT (RFC 7519, as profiled by RFC 9068) and is
// accepted when every one of these holds:
//
//   - it is a JWS in the compact serialization (RFC 7515 §7.1): exactly
//     three parts of unpadded base64url (RFC 4648 §5, no padding, no
//     whitespace, no other byte) joined by two dots; never the JSON
//     serialization, never a detached or unencoded payload;
//   - its header and its payload are each one strict JSON object: no
//     duplicate member names (escaped spellings included), valid UTF-8,
//     nothing after the object (package jsonobj); the header has no crit;
//   - its claims, where present, have their registered types: iss and sub
//     strings; aud a string or an array of strings; exp, nbf and iat JSON
//     numbers (a NumericDate of 1970..9999, never a string); scope a
//     string; scp a string or an array of strings;
//   - it is signed (RS256/384/512, PS256/384/512, ES256/384/512 or EdDSA;
//     never "none" or an HMAC) by a key in the authorization server's JWK
//     set, whose URL (jwks_uri) New finds in the server's metadata (RFC
//     8414 .well-known/oauth-authorization-server, else OpenID Connect
//     discovery .well-known/openid-configuration) and whose keys are
//     fetched again when a token names a key not yet seen;
//   - its iss is Config.Issuer, exactly;
//   - its aud holds Config.Resource, the gateway's canonical resource URI
//     (RFC 8707, MCP "Token Audience Binding"): a token issued for another
//     resource, even by the same server, is refused;
//   - it has an exp, which has not passed, and its nbf, if any, has (with
//     5 minutes' leeway for nbf only);
//   - it grants every scope of Config.Scopes, in scope (a space-separated
//     string, RFC 9068) or scp (a list or a string, as several servers
//     issue it);
//   - its Config.AgentClaim (sub unless set) is a string that Config.Agents
//     maps to an agent. The map is the whole of the identity: an agent is
//     the pair (Config.Issuer, that value), and a value is never an agent
//     by being an agent's name, so an authorization server's client that
//     is called, or registers itself as, "reconciler" is not the agent
//     reconciler unless it is mapped to it.
//
// The signature and the JWK set are checked by github.com/coreos/go-oidc's
// RemoteKeySet (and go-jose); every other decision is this package's, on
// the one strict parse above. Opaque tokens, which only token
// introspection (RFC 7662) could check, are not accepted.
//
// # Refusals and the challenge
//
// A request without a token, or with one refused, gets the challenge of
// RFC 6750 §3 with the protected resource metadata's URL (RFC 9728 §5.1)
// and the scopes needed (MCP "Scope Selection Strategy"):
//
//	no token                 401  Bearer resource_metadata="URL", scope="S"
//	token refused            401  Bearer error="invalid_token", error_description="WHY", resource_metadata="URL", scope="S"
//	a scope missing          403  Bearer error="insufficient_scope", error_description="WHY", resource_metadata="URL", scope="S"
//	claim names no agent     403  Bearer error="insufficient_scope", error_description="WHY", resource_metadata="URL", scope="S"
//
// # Protected resource metadata
//
// Metadata is the gateway's protected resource metadata (RFC 9728 §2), a
// JSON object served at MetadataPath, the resource's path under
// /.well-known/oauth-protected-resource (RFC 9728 §3.1; for
// https://gate.example/mcp it is /.well-known/oauth-protected-resource/mcp):
//
//	{"resource": RESOURCE, "authorization_servers": [ISSUER],
//	 "scopes_supported": [SCOPES], "bearer_methods_supported": ["header"],
//	 "resource_name": "bankdoor"}
//
// A client reads it to find the authorization server, and asks that
// server for a token for RESOURCE (RFC 8707 resource parameter, or the
// server's own audience parameter).
package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
)

// Config is what a Verifier checks tokens against.
type Config struct {
	// Issuer is the authorization server's issuer identifier: an https URL
	// (http only on a loopback host), exactly as its tokens' iss claim.
	Issuer string
	// Resource is the gateway's canonical resource URI (RFC 8707 §2), as
	// agents reach it: https://HOST[:PORT]/mcp. A token's aud must hold it.
	Resource string
	// Scopes must all be granted by a token; at least one.
	Scopes []string
	// AgentClaim is the claim that names the agent; "" means sub.
	AgentClaim string
	// Agents maps a value of AgentClaim in a token of Issuer to an agent
	// name; at least one. A token whose value is not in it is refused.
	Agents map[string]string
	// HTTPClient fetches the metadata and JWK set; nil means a client with
	// a 10-second timeout.
	HTTPClient *http.Client
	// Now is the clock for exp and nbf; nil means time.Now.
	Now func() time.Time
	// CheckAgent checks each agent name of Agents.
	CheckAgent func(string) error
}

// Verifier checks access tokens (see the package doc).
type Verifier struct {
	cfg      Config
	keys     *oidc.RemoteKeySet
	metadata []byte
	path     string // of the metadata
	// metadataURL is the metadata's absolute URL.
	metadataURL string
}

// signingAlgs are the accepted JWS algorithms: asymmetric only.
var signingAlgs = []string{
	oidc.RS256, oidc.RS384, oidc.RS512, oidc.PS256, oidc.PS384, oidc.PS512,
	oidc.ES256, oidc.ES384, oidc.ES512, oidc.EdDSA,
}

// New checks cfg, fetches the authorization server's metadata to find its
// JWK set, and returns a Verifier. The keys themselves are fetched on the
// first token.
func New(ctx context.Context, cfg Config) (*Verifier, error) {
	issuer, err := checkURL("issuer", cfg.Issuer, false)
	if err != nil {
		return nil, err
	}
	resource, err := checkURL("resource", cfg.Resource, true)
	if err != nil {
		return nil, err
	}
	if len(cfg.Scopes) == 0 {
		return nil, errors.New("no required scope: a token must be asked to grant at least one")
	}
	for _, s := range cfg.Scopes {
		if s == "" || strings.ContainsAny(s, " \"\\") || strings.IndexFunc(s, func(c rune) bool { return c < '!' || c > '~' }) >= 0 {
			return nil, fmt.Errorf("scope %q: a scope is printable ASCII without spaces, quotes or backslashes (RFC 6749 §3.3)", s)
		}
	}
	if cfg.AgentClaim == "" {
		cfg.AgentClaim = "sub"
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.CheckAgent == nil {
		return nil, errors.New("no agent name check given")
	}
	if len(cfg.Agents) == 0 {
		return nil, fmt.Errorf("no agent: map at least one value of claim %s to an agent; a value is never an agent by being its name", cfg.AgentClaim)
	}
	for value, agent := range cfg.Agents {
		if value == "" {
			return nil, fmt.Errorf("%s \"\": an empty claim value names no client", cfg.AgentClaim)
		}
		if err := cfg.CheckAgent(agent); err != nil {
			return nil, fmt.Errorf("%s %q: %w", cfg.AgentClaim, value, err)
		}
	}
	jwks, err := discover(ctx, cfg.HTTPClient, issuer)
	if err != nil {
		return nil, err
	}
	// The key set's context is a bag of settings (go-oidc): it carries the
	// HTTP client, and its cancellation is ignored.
	v := &Verifier{cfg: cfg, keys: oidc.NewRemoteKeySet(oidc.ClientContext(context.Background(), cfg.HTTPClient), jwks)}
	v.path = "/.well-known/oauth-protected-resource" + strings.TrimSuffix(resource.EscapedPath(), "/")
	v.metadataURL = (&url.URL{Scheme: resource.Scheme, Host: resource.Host, Path: v.path}).String()
	v.metadata, err = json.Marshal(map[string]any{
		"resource":                 cfg.Resource,
		"authorization_servers":    []string{cfg.Issuer},
		"scopes_supported":         cfg.Scopes,
		"bearer_methods_supported": []string{"header"},
		"resource_name":            "bankdoor",
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

// checkURL checks an issuer or resource URL: absolute, https (or http on
// a loopback host), no fragment; a resource has no query either (RFC 8707
// §2), an issuer neither (RFC 8414 §2).
func checkURL(what, s string, resource bool) (*url.URL, error) {
	if s == "" {
		return nil, fmt.Errorf("no %s URL", what)
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %v", what, s, err)
	}
	if u.Host == "" || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "" {
		return nil, fmt.Errorf("%s %q: want an absolute https URL without user, query or fragment", what, s)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !loopback(u.Hostname()) {
			if resource {
				return nil, fmt.Errorf("%s %q: plain http only for a loopback host; agents' tokens travel to it", what, s)
			}
			return nil, fmt.Errorf("%s %q: plain http only for a loopback host; the keys that sign tokens come from it", what, s)
		}
	default:
		return nil, fmt.Errorf("%s %q: scheme %q, want https", what, s, u.Scheme)
	}
	return u, nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// discover fetches the authorization server's metadata, RFC 8414 first
// and OpenID Connect discovery second, checks that it is the issuer's,
// and returns its jwks_uri.
func discover(ctx context.Context, hc *http.Client, issuer *url.URL) (string, error) {
	path := strings.TrimSuffix(issuer.EscapedPath(), "/")
	host := issuer.Scheme + "://" + issuer.Host
	candidates := []string{
		host + "/.well-known/oauth-authorization-server" + path,
		host + path + "/.well-known/openid-configuration",
	}
	var errs []error
	for _, c := range candidates {
		var md struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		if err := getJSON(ctx, hc, c, &md); err != nil {
			errs = append(errs, err)
			continue
		}
		if md.Issuer != issuer.String() {
			return "", fmt.Errorf("authorization server metadata %s: issuer %q, want %q exactly", c, md.Issuer, issuer)
		}
		if _, err := checkURL("jwks_uri of "+c, md.JWKSURI, false); err != nil {
			return "", err
		}
		return md.JWKSURI, nil
	}
	return "", fmt.Errorf("authorization server metadata of %s: %w", issuer, errors.Join(errs...))
}

// maxMetadata bounds the metadata document read.
const maxMetadata = 1 << 20

func getJSON(ctx context.Context, hc *http.Client, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadata+1))
	if err != nil {
		return fmt.Errorf("GET %s: %v", u, err)
	}
	if len(body) > maxMetadata {
		return fmt.Errorf("GET %s: more than %d bytes", u, maxMetadata)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: %v", u, err)
	}
	return nil
}

// Error is a refused token: Status is the HTTP status (401 or 403), Code
// the RFC 6750 error code ("" for a request without a token).
type Error struct {
	Status int
	Code   string
	Reason string
}

func (e *Error) Error() string { return e.Reason }

// Agent returns the agent that an access token authenticates, or an
// *Error saying why the token is refused.
func (v *Verifier) Agent(ctx context.Context, token string) (string, error) {
	if err := checkCompact(token); err != nil {
		return "", invalid("access token refused: " + err.Error())
	}
	payload, err := v.keys.VerifySignature(ctx, token)
	if err != nil {
		msg := strings.ReplaceAll(strings.TrimPrefix(err.Error(), "oidc: "), "id token", "access token")
		return "", invalid("access token refused: " + msg)
	}
	c, err := parseClaims(payload)
	if err != nil {
		return "", invalid("access token refused: " + err.Error())
	}
	if err := v.checkClaims(c); err != nil {
		return "", err
	}
	var value string
	if err := stringClaim(c.obj, v.cfg.AgentClaim, &value); err != nil || !c.obj.Has(v.cfg.AgentClaim) {
		return "", invalid(fmt.Sprintf("the access token has no string claim %s to name its agent", v.cfg.AgentClaim))
	}
	agent, ok := v.cfg.Agents[value]
	if !ok {
		return "", &Error{http.StatusForbidden, "insufficient_scope", fmt.Sprintf("%s %q is not one of this gateway's agents", v.cfg.AgentClaim, value)}
	}
	return agent, nil
}

// checkClaims checks iss, aud, exp, nbf and the scopes.
func (v *Verifier) checkClaims(c *claims) error {
	if c.iss != v.cfg.Issuer {
		return invalid(fmt.Sprintf("access token refused: issued by a different provider, expected %q got %q", v.cfg.Issuer, c.iss))
	}
	if !slices.Contains(c.aud, v.cfg.Resource) {
		return invalid(fmt.Sprintf("access token refused: expected audience %q got %q", v.cfg.Resource, c.aud))
	}
	now := v.cfg.Now()
	if c.exp.IsZero() {
		return invalid("access token refused: no exp; a token that says no expiry is taken as expired")
	}
	if !now.Before(c.exp) {
		return invalid(fmt.Sprintf("the access token expired at %s", c.exp.Format(time.RFC3339)))
	}
	if !c.nbf.IsZero() && now.Add(nbfLeeway).Before(c.nbf) {
		return invalid(fmt.Sprintf("access token refused: not valid before its nbf, %s", c.nbf.Format(time.RFC3339)))
	}
	var missing []string
	for _, s := range v.cfg.Scopes {
		if !slices.Contains(c.scopes, s) {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		return &Error{http.StatusForbidden, "insufficient_scope", fmt.Sprintf("the access token does not grant scope %s", strings.Join(missing, " "))}
	}
	return nil
}

// nbfLeeway allows for an authorization server's clock running ahead, as
// go-oidc and other resource servers do.
const nbfLeeway = 5 * time.Minute

func invalid(reason string) *Error {
	return &Error{http.StatusUnauthorized, "invalid_token", reason}
}

// Challenge returns the WWW-Authenticate value for a refusal: err is an
// *Error from Agent, or nil for a request that sent no token.
func (v *Verifier) Challenge(err *Error) string {
	var b strings.Builder
	b.WriteString("Bearer ")
	if err != nil && err.Code != "" {
		fmt.Fprintf(&b, `error="%s", error_description="%s", `, err.Code, quotable(err.Reason))
	}
	fmt.Fprintf(&b, `resource_metadata="%s", scope="%s"`, v.MetadataURL(), strings.Join(v.cfg.Scopes, " "))
	return b.String()
}

// quotable makes s fit RFC 6750's error_description: %x20-21 / %x23-5B /
// %x5D-7E, so no quote, backslash or byte outside printable ASCII.
func quotable(s string) string {
	return strings.Map(func(c rune) rune {
		if c == '"' || c == '\\' {
			return '\''
		}
		if c < ' ' || c > '~' {
			return '?'
		}
		return c
	}, s)
}

// MetadataPath is the path at which the gateway serves Metadata.
func (v *Verifier) MetadataPath() string { return v.path }

// MetadataURL is the absolute URL of the protected resource metadata.
func (v *Verifier) MetadataURL() string { return v.metadataURL }

// ServeMetadata serves the protected resource metadata document.
func (v *Verifier) ServeMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "bankdoor: the protected resource metadata is read with GET", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "max-age=300")
	w.Write(v.metadata)
}
