package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/internal/mcptest"
)

// everythingServing is the line server-everything prints on stderr once it
// listens.
var everythingServing = regexp.MustCompile(`^MCP Streamable HTTP Server (listening) on port \d+$`)

// Everything is server-everything serving streamable HTTP on loopback.
type Everything struct {
	URL string // http://127.0.0.1:PORT/mcp
	srv *mcptest.Server
}

// StartEverything starts server-everything's streamable HTTP transport on
// a free port of 127.0.0.1 (it takes its port from PORT and listens on
// every interface; the port is found free just before).
func (s *Suite) StartEverything(ctx context.Context) (*Everything, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(s.Node(), filepath.Join(s.Dir, "node_modules", filepath.FromSlash(EverythingPackage), "dist", "index.js"), "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	srv, err := mcptest.Serve(ctx, cmd, everythingServing)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", EverythingPackage, err)
	}
	return &Everything{URL: "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp", srv: srv}, nil
}

// Close stops the server.
func (e *Everything) Close() error {
	err := e.srv.Stop()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return nil // node exits 143 on SIGTERM: a stop, not a failure
	}
	return err
}

// freePort returns a port of 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// GatewayServer is the server name the gateway's policy
// (testdata/everything.yaml) gives server-everything.
const GatewayServer = "everything"

// Gateway is bankdoor proxy --listen in front of a server-everything,
// and the reverse proxy in front of it that adds the agent's token.
type Gateway struct {
	URL      string // the front proxy's endpoint, for the runner
	Receipts string // the receipts directory of the gateway's one agent
	srv      *mcptest.Server
	front    *http.Server
}

// GatewayConfig is how StartGateway runs bankdoor.
type GatewayConfig struct {
	Bankdoor string // the bankdoor binary
	Policy   string // a policy for GatewayServer, pinned
	Upstream string // server-everything's endpoint (--url)
	Work     string // a directory for keys, tokens and receipts
	// Flags are more flags for bankdoor proxy (e.g. --max-sessions).
	Flags []string
}

// StartGateway starts bankdoor proxy --listen on 127.0.0.1 with one agent,
// "conformance", and the front proxy on another port.
func StartGateway(ctx context.Context, c GatewayConfig) (*Gateway, error) {
	home := filepath.Join(c.Work, "home")
	if _, err := agentkey.Generate(home, false); err != nil {
		return nil, err
	}
	tok := make([]byte, 20)
	rand.Read(tok)
	token := hex.EncodeToString(tok)
	tokens := filepath.Join(c.Work, "tokens")
	if err := os.WriteFile(tokens, []byte("conformance "+token+"\n"), 0o600); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	frontURL := "http://" + ln.Addr().String()
	receipts := filepath.Join(c.Work, "receipts")
	args := append([]string{"proxy", "--policy", c.Policy, "--server", GatewayServer, "--receipts", receipts,
		"--listen", "127.0.0.1:0", "--agent-tokens", tokens, "--allow-origin", frontURL, "--url", c.Upstream}, c.Flags...)
	cmd := exec.Command(c.Bankdoor, args...)
	cmd.Env = mcptest.Env("BANKDOOR_HOME=" + home)
	srv, err := mcptest.Serve(ctx, cmd, mcptest.ProxyServing)
	if err != nil {
		ln.Close()
		return nil, err
	}
	target, err := url.Parse(srv.URL)
	if err != nil {
		ln.Close()
		srv.Stop()
		return nil, err
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.URL.Path = target.Path
			r.Out.Header.Set("Authorization", "Bearer "+token)
		},
		FlushInterval: -1,
	}
	front := &http.Server{Handler: rp}
	go front.Serve(ln)
	return &Gateway{URL: frontURL + "/mcp", Receipts: filepath.Join(receipts, "conformance"), srv: srv, front: front}, nil
}

// Stderr is what the gateway has written so far.
func (g *Gateway) Stderr() string { return g.srv.Stderr() }

// Close stops the front proxy and the gateway; an error is the gateway's
// exit (see mcptest.Server.Stop).
func (g *Gateway) Close() error {
	g.front.Close()
	return g.srv.Stop()
}
