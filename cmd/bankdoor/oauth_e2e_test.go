package main_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/internal/hydra"
	"github.com/bankdoor/bankdoor/internal/mcptest"
)

// hydraBin is the Hydra binary, built once per test binary.
var hydraBin struct {
	once     sync.Once
	dir, bin string
	err      error
}

// startHydras builds Hydra once and starts n of them at once for the
// test, each stopped at its end.
func startHydras(t *testing.T, n int) []*hydra.Server {
	t.Helper()
	hydraBin.once.Do(func() {
		if hydraBin.dir, hydraBin.err = os.MkdirTemp("", "bankdoor-hydra-"); hydraBin.err != nil {
			return
		}
		hydraBin.bin = filepath.Join(hydraBin.dir, "hydra")
		hydraBin.err = hydra.Build(context.Background(), "", hydraBin.bin)
	})
	if hydraBin.err != nil {
		t.Fatal(hydraBin.err)
	}
	hs, errs := make([]*hydra.Server, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range hs {
		dir, err := os.MkdirTemp("", "hydra-") // short: it holds Unix sockets
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		wg.Go(func() { hs[i], errs[i] = hydra.Start(hydraBin.bin, dir) }) // each takes seconds to migrate its store
	}
	wg.Wait()
	for i, h := range hs {
		if h != nil {
			t.Cleanup(h.Stop)
		}
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
	}
	return hs
}

// TestE2EListenOAuth: the gateway as an OAuth 2.1 resource server in front
// of the fixture over HTTP, with a real authorization server (Ory Hydra)
// issuing client-credentials tokens. Two clients' tokens are the agents
// --oauth-agent maps them to: reads pass, writes are denied, each agent's
// receipts are its own chain. An agent of the tokens file is served beside
// them. Tokens for another resource, expired, of another authorization
// server, or without the scope, of clients not mapped though named as
// agents (one of the tokens file, one of the mapping), and a token neither
// in the file nor a JWT, are refused with their status and a challenge
// naming the protected resource metadata, which names the issuer. The bank
// sees the gateway's own credential on every request, never an agent's
// token (no passthrough).
func TestE2EListenOAuth(t *testing.T) {
	t.Parallel()
	hs := startHydras(t, 2)
	as, other := hs[0], hs[1]
	w := newWorld(t)
	ctx := testContext(t, 2*time.Minute)
	f := w.fixture()
	tokensFile, static := agentTokens(t) // alice and bob; bob's alone is used
	const bankSecret = "gateway-credential-9f3e"
	bank := startHTTPFixture(t, f, "BANK_FIXTURE_HTTP_TOKEN="+bankSecret)

	cmd := exec.Command(built.bankdoor, "proxy", "--policy", w.policy, "--server", "bank", "--receipts", w.receipts,
		"--listen", "127.0.0.1:0", "--oauth-issuer", as.Issuer, "--oauth-scope", "bankdoor",
		"--oauth-agent", "svc-alice=alice", "--oauth-agent", "svc-carol=carol", "--oauth-agent", "svc-dave=dave",
		"--agent-tokens", tokensFile, "--url", bank.URL, "--header-env", "Authorization=BANK_TOKEN")
	cmd.Env = mcptest.Env("BANKDOOR_HOME="+w.home, "BANK_TOKEN=Bearer "+bankSecret)
	p, err := mcptest.Serve(ctx, cmd, mcptest.ProxyServing)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop() })
	resource := p.URL // http://127.0.0.1:PORT/mcp, the default --oauth-resource

	const secret = "client-secret-0123456789abcdef"
	for _, c := range []hydra.Client{
		{ID: "svc-alice", Audience: []string{resource}, Scope: "bankdoor"},
		{ID: "svc-carol", Audience: []string{resource, "http://127.0.0.1:1/mcp"}, Scope: "bankdoor other"},
		{ID: "svc-dave", Audience: []string{resource}, Scope: "bankdoor", Lifespan: time.Second},
		{ID: "alice", Audience: []string{resource}, Scope: "bankdoor"}, // an agent's name, not mapped
		{ID: "bob", Audience: []string{resource}, Scope: "bankdoor"},   // the tokens file's agent's name
	} {
		c.Secret = secret
		if err := as.CreateClient(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := other.CreateClient(ctx, hydra.Client{ID: "svc-alice", Secret: secret, Audience: []string{resource}, Scope: "bankdoor"}); err != nil {
		t.Fatal(err)
	}
	token := func(h *hydra.Server, id, scope, aud string) (string, time.Time) {
		tok, exp, err := h.Token(ctx, id, secret, scope, aud)
		if err != nil {
			t.Fatal(err)
		}
		return tok, exp
	}

	expired, exp := token(as, "svc-dave", "bankdoor", resource)
	for _, tc := range []struct {
		name, token string
		status      int
		code        string // error= of the challenge
		body        string
	}{
		{"no token", "", 401, "", "missing access token"},
		{"neither in the tokens file nor a JWT", strings.Repeat("c3", 20), 401, "invalid_token", "access token refused: malformed"},
		{"another resource", tokenOnly(token(as, "svc-carol", "bankdoor", "http://127.0.0.1:1/mcp")), 401, "invalid_token", "expected audience"},
		{"another authorization server", tokenOnly(token(other, "svc-alice", "bankdoor", resource)), 401, "invalid_token", "access token refused"},
		{"without the scope", tokenOnly(token(as, "svc-carol", "other", resource)), 403, "insufficient_scope", "does not grant scope bankdoor"},
		{"a client named as a mapped agent", tokenOnly(token(as, "alice", "bankdoor", resource)), 403, "insufficient_scope", `sub "alice" is not one of this gateway's agents`},
		{"a client named as a tokens file agent", tokenOnly(token(as, "bob", "bankdoor", resource)), 403, "insufficient_scope", `sub "bob" is not one of this gateway's agents`},
		{"expired", expired, 401, "invalid_token", "expired at"},
	} {
		if tc.name == "expired" {
			waitUntil(ctx, t, exp.Add(time.Second)) // past exp by the gateway's clock, which this machine shares
		}
		req, err := http.NewRequestWithContext(ctx, "POST", p.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		body := string(b)
		challenge := resp.Header.Get("WWW-Authenticate")
		if resp.StatusCode != tc.status || !strings.Contains(body, tc.body) || resp.Header.Get("Mcp-Session-Id") != "" {
			t.Errorf("%s: %s %q, want %d with %q and no session", tc.name, resp.Status, body, tc.status, tc.body)
		}
		wantCode := ""
		if tc.code != "" {
			wantCode = `error="` + tc.code + `", `
		}
		meta := regexp.MustCompile(`^Bearer ` + regexp.QuoteMeta(wantCode) + `(error_description="[^"]*", )?resource_metadata="([^"]+)", scope="bankdoor"$`).FindStringSubmatch(challenge)
		if meta == nil {
			t.Errorf("%s: WWW-Authenticate %q, want Bearer %sresource_metadata=..., scope=\"bankdoor\"", tc.name, challenge, wantCode)
			continue
		}
		if tc.name == "no token" {
			checkResourceMetadata(ctx, t, meta[2], resource, as.Issuer)
		}
	}
	if names, err := mcptest.Receipts(w.receipts); err != nil || len(names) != 0 {
		t.Errorf("refused tokens left receipts %q (%v); an unauthenticated request names no agent", names, err)
	}
	if _, err := os.Stat(filepath.Join(w.home, "agents")); !os.IsNotExist(err) {
		t.Errorf("refused tokens made agent keys (%v)", err)
	}

	// alice and carol by access token, bob by the tokens file at once.
	bearer := map[string]string{"bob": static["bob"]}
	for _, agent := range []string{"alice", "carol"} {
		bearer[agent], _ = token(as, "svc-"+agent, "bankdoor", resource)
	}
	clients := bearerClients(p.URL, bearer)
	readAndBeDenied(t, p, f, clients)
	checkAgentChains(t, w, map[string]int{"alice": 2, "bob": 2, "carol": 2})

	log := bank.Stderr()
	if !strings.Contains(log, "token matches") || strings.Contains(log, "refused") {
		t.Errorf("the bank did not see the gateway's own credential on every request (an agent's token passed through?):\n%s", log)
	}
}

func tokenOnly(tok string, _ time.Time) string { return tok }

// waitUntil returns once the clock passes t.
func waitUntil(ctx context.Context, tb testing.TB, t time.Time) {
	tb.Helper()
	select {
	case <-time.After(time.Until(t)):
	case <-ctx.Done():
		tb.Fatal(ctx.Err())
	}
}

// checkResourceMetadata fetches the protected resource metadata at url
// (RFC 9728) and checks that it names resource and issuer.
func checkResourceMetadata(ctx context.Context, t *testing.T, url, resource, issuer string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var md struct {
		Resource string   `json:"resource"`
		AS       []string `json:"authorization_servers"`
		Scopes   []string `json:"scopes_supported"`
	}
	if err := json.Unmarshal(body, &md); err != nil || resp.StatusCode != 200 || md.Resource != resource ||
		len(md.AS) != 1 || md.AS[0] != issuer || len(md.Scopes) != 1 || md.Scopes[0] != "bankdoor" {
		t.Errorf("GET %s: %s %s (%v); want resource %s, authorization_servers [%s], scopes_supported [bankdoor]", url, resp.Status, body, err, resource, issuer)
	}
}
