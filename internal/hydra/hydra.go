// Package hydra builds and runs the real OAuth 2.1 authorization server
// of bankdoor's tests: Ory Hydra (github.com/ory/hydra/v2), at the version
// its own tools module, tools/hydra/go.mod, pins with a tool directive
// (Version). The OAuth end-to-end tests of the gateway get their access
// tokens from it, so a token the gateway accepts or refuses is one a real
// authorization server issued.
//
// Build compiles Hydra with that module, with cgo and the sqlite build tag
// (its in-memory storage is SQLite's), downloading what the module cache
// lacks through the go command's usual GOPROXY. Start runs a built binary
// with everything in a directory of its own:
//
//	DIR/hydra.yaml   its configuration: in-memory storage (dsn: memory),
//	                 JWT access tokens, the issuer URL, a random system secret
//	DIR/public.sock  its public API (token endpoint, discovery, JWK set)
//	DIR/admin.sock   its admin API (OAuth clients)
//	DIR/output.log   what it writes to stdout and stderr
//
// Hydra cannot listen on a port the kernel picks (it refuses port 0) and
// must know its issuer URL before it starts, so both its APIs listen on
// Unix sockets and Start serves the public one on a loopback TCP port it
// holds from the start (a plain reverse proxy, as a load balancer in front
// of Hydra would be); the issuer is http://127.0.0.1:PORT. Hydra runs with
// --dev, which lets it serve an http issuer; that is the only check it
// relaxes.
package hydra

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/bankdoor/bankdoor/internal/toolmod"
)

// Pkg is Hydra's main package, named in tools/hydra/go.mod's tool
// directive.
const Pkg = "github.com/ory/hydra/v2"

// Version is the version of Pkg that tools/hydra/go.mod requires; a test
// holds the two equal.
const Version = "v2.3.0"

// ModFile is Hydra's tools module, relative to the root of the bankdoor
// module.
const ModFile = "tools/hydra/go.mod"

// startTimeout bounds how long Start waits for Hydra to be ready.
const startTimeout = 60 * time.Second

// Tool is Hydra as package toolmod builds it: with cgo and the sqlite
// tags, for its in-memory storage.
var Tool = toolmod.Tool{Pkg: Pkg, ModFile: ModFile, Cgo: true, Tags: []string{"sqlite", "sqlite_omit_load_extension"}}

// Build compiles Pkg into the file out, as
//
//	go build -modfile=ROOT/tools/hydra/go.mod -tags sqlite,sqlite_omit_load_extension -o OUT PKG
//
// with CGO_ENABLED=1, run in ROOT, the root of the bankdoor module that
// holds moduleDir ("" is the current directory); see toolmod.Tool.Build.
func Build(ctx context.Context, moduleDir, out string) error { return Tool.Build(ctx, moduleDir, out) }

// Server is a running Hydra.
type Server struct {
	Issuer string // http://127.0.0.1:PORT, also the URL of its public API
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd has exited
	front  *http.Server
	ln     net.Listener
	admin  *http.Client // over DIR/admin.sock
	out    string       // DIR/output.log
}

// Start runs the Hydra binary bin with its files in dir (which must exist
// and have a short path: Unix socket paths are limited to 107 bytes), and
// returns once it is ready; Stop ends it.
func Start(bin, dir string) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{Issuer: "http://" + ln.Addr().String(), ln: ln, out: filepath.Join(dir, "output.log"), exited: make(chan struct{})}
	public, admin := filepath.Join(dir, "public.sock"), filepath.Join(dir, "admin.sock")
	secret := make([]byte, 32)
	rand.Read(secret) // never fails
	config := fmt.Sprintf(`dsn: memory
serve:
  public:
    host: unix:%s
  admin:
    host: unix:%s
urls:
  self:
    issuer: %s
secrets:
  system:
    - %s
strategies:
  access_token: jwt
log:
  level: warn
`, public, admin, s.Issuer, hex.EncodeToString(secret))
	if err := os.WriteFile(filepath.Join(dir, "hydra.yaml"), []byte(config), 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	out, err := os.Create(s.out)
	if err != nil {
		ln.Close()
		return nil, err
	}
	defer out.Close() // the child has its own copy of the descriptor
	s.cmd = exec.Command(bin, "serve", "all", "--dev", "--sqa-opt-out", "-c", filepath.Join(dir, "hydra.yaml"))
	s.cmd.Stdout, s.cmd.Stderr = out, out
	if err := s.cmd.Start(); err != nil {
		ln.Close()
		return nil, fmt.Errorf("starting hydra %s: %w", bin, err)
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	s.admin = unixClient(admin)
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&url.URL{Scheme: "http", Host: "hydra"})
			r.Out.Host = r.In.Host
		},
		Transport: unixClient(public).Transport,
	}
	s.front = &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	go s.front.Serve(ln)
	if err := s.ready(); err != nil {
		s.Stop()
		return nil, fmt.Errorf("hydra: %w; its output:\n%s", err, s.Output())
	}
	return s, nil
}

func unixClient(path string) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		},
	}}
}

// ready polls the admin API's readiness endpoint until Hydra answers 200
// (it opens its sockets only once its storage is migrated), it exits, or
// startTimeout passes.
func (s *Server) ready() error {
	deadline := time.Now().Add(startTimeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := s.admin.Get("http://hydra/health/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %v: %v", startTimeout, err)
		}
		select {
		case <-s.exited:
			return errors.New("exited before it was ready")
		case <-tick.C:
		}
	}
}

// Output returns what Hydra wrote to stdout and stderr so far.
func (s *Server) Output() string {
	b, _ := os.ReadFile(s.out)
	return string(b)
}

// Stop ends Hydra (SIGKILL: its storage is in memory) and the front.
func (s *Server) Stop() {
	s.cmd.Process.Kill()
	<-s.exited
	s.front.Close()
}

// Client is an OAuth client that gets tokens with the client credentials
// grant.
type Client struct {
	ID, Secret string
	// Audience lists the audiences it may ask tokens for.
	Audience []string
	// Scope lists the scopes it may ask for, space-separated.
	Scope string
	// Lifespan is its access tokens' lifespan; 0 means Hydra's (1 hour).
	Lifespan time.Duration
}

// CreateClient registers c through the admin API.
func (s *Server) CreateClient(ctx context.Context, c Client) error {
	body := map[string]any{
		"client_id": c.ID, "client_secret": c.Secret, "grant_types": []string{"client_credentials"},
		"audience": c.Audience, "scope": c.Scope, "token_endpoint_auth_method": "client_secret_post",
		"access_token_strategy": "jwt",
	}
	if c.Lifespan > 0 {
		body["client_credentials_grant_access_token_lifespan"] = c.Lifespan.String()
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://hydra/admin/clients", bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.admin.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("hydra: creating client %s: %s: %s", c.ID, resp.Status, msg)
	}
	return nil
}

// Token gets an access token for client id with the client credentials
// grant at the token endpoint (through the issuer URL, as any client
// would), asking for scope and audience; it returns the token (a JWT) and
// its exp claim, read without verifying it.
func (s *Server) Token(ctx context.Context, id, secret, scope, audience string) (string, time.Time, error) {
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}, "scope": {scope}, "audience": {audience}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.Issuer+"/oauth2/token", strings.NewReader(form.Encode()))
	if err != nil {
		return "", time.Time{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", time.Time{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", time.Time{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return "", time.Time{}, fmt.Errorf("hydra: token for %s: %s: %s", id, resp.Status, body)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(body, &tok); err != nil {
		return "", time.Time{}, fmt.Errorf("hydra: token for %s: %v", id, err)
	}
	exp, err := expiry(tok.AccessToken)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("hydra: token for %s: %v", id, err)
	}
	return tok.AccessToken, exp, nil
}

// expiry returns the exp claim of a JWT, without verifying it.
func expiry(jwt string) (time.Time, error) {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return time.Time{}, errors.New("the access token is not a JWT")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}, fmt.Errorf("the access token's payload: %v", err)
	}
	var claims struct {
		Exp int64 `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil || claims.Exp == 0 {
		return time.Time{}, fmt.Errorf("the access token has no exp claim (%v)", err)
	}
	return time.Unix(claims.Exp, 0), nil
}
