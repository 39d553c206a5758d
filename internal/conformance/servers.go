package conformance

import (
	"context"
	"crypto/rand"
	"embed"
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
	"strconv"
	"syscall"
	"time"

	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/internal/mcptest"
	"github.com/bankdoor/bankdoor/ledger/receipt"
)

// Target is an MCP server the suite runs against.
type Target string

const (
	// Reference is the suite's own everything-server
	// (reference/everything-server.ts), which every server scenario is
	// written for: all of them pass against it directly.
	Reference Target = "reference"
	// ServerEverything is @modelcontextprotocol/server-everything, the
	// MCP project's published demonstration server; many scenarios call
	// tools, prompts and resources it does not have.
	ServerEverything Target = "server-everything"
)

// Targets are the targets, in the order the report shows them.
var Targets = []Target{Reference, ServerEverything}

// policies are the policies the gateway runs with, testdata/TARGET.yaml.
//
//go:embed testdata/reference.yaml testdata/server-everything.yaml
var policies embed.FS

// Policy is the policy the gateway runs with in front of t
// (testdata/TARGET.yaml).
func (t Target) Policy() ([]byte, error) { return policies.ReadFile("testdata/" + string(t) + ".yaml") }

// Upstream is a target serving streamable HTTP on 127.0.0.1.
type Upstream struct {
	URL    string // http://127.0.0.1:PORT/mcp
	cmd    *exec.Cmd
	output mcptest.SyncBuffer
	exited chan struct{}
}

// Start starts t's streamable HTTP transport on a port of 127.0.0.1 that
// was free a moment before (both servers take it from PORT), and waits
// until it accepts connections.
func (s *Suite) Start(ctx context.Context, t Target) (*Upstream, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	var args []string
	switch t {
	case Reference:
		args = []string{filepath.Join(s.Dir, "everything-server.ts")}
	case ServerEverything:
		args = []string{filepath.Join(s.Dir, "node_modules", filepath.FromSlash(EverythingPackage), "dist", "index.js"), "streamableHttp"}
	default:
		return nil, fmt.Errorf("no conformance target %q", t)
	}
	u := &Upstream{URL: "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp", exited: make(chan struct{})}
	u.cmd = exec.Command(s.Node(), args...)
	u.cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	u.cmd.Stdout, u.cmd.Stderr = &u.output, &u.output
	if err := u.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { u.cmd.Wait(); close(u.exited) }()
	if err := u.waitListening(ctx, port); err != nil {
		u.Close()
		return nil, fmt.Errorf("starting %s: %w\n%s", t, err, u.output.String())
	}
	return u, nil
}

// waitListening dials port until it accepts, the process exits, or 30
// seconds pass.
func (u *Upstream) waitListening(ctx context.Context, port int) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			c.Close()
			return nil
		}
		select {
		case <-u.exited:
			return errors.New("exited before listening")
		case <-ctx.Done():
			return fmt.Errorf("not listening on port %d: %w", port, ctx.Err())
		case <-tick.C:
		}
	}
}

// Close stops the server (SIGTERM, then SIGKILL after 10 seconds).
func (u *Upstream) Close() {
	u.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-u.exited:
	case <-time.After(10 * time.Second):
		u.cmd.Process.Kill()
		<-u.exited
	}
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

// GatewayServer is the server name the gateway's policies (under
// testdata) give the target.
const GatewayServer = "everything"

// Gateway is bankdoor proxy --listen in front of a target,
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
	Target   Target // whose policy the gateway runs with
	Upstream string // the target's endpoint (--url)
	Work     string // a directory for keys, tokens and receipts
	// Flags are more flags for bankdoor proxy (e.g. --max-sessions).
	Flags []string
}

// StartGateway starts bankdoor proxy --listen on 127.0.0.1 with one agent,
// "conformance", and the front proxy on another port.
func StartGateway(ctx context.Context, c GatewayConfig) (*Gateway, error) {
	policy, err := c.Target.Policy()
	if err != nil {
		return nil, err
	}
	policyFile := filepath.Join(c.Work, "policy.yaml")
	if err := os.WriteFile(policyFile, policy, 0o644); err != nil {
		return nil, err
	}
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
	args := append([]string{"proxy", "--policy", policyFile, "--server", GatewayServer, "--receipts", receipts,
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

// Denial is a deny the gateway signed a receipt for.
type Denial struct {
	Receipt string // the receipt's file name, NNNNNN.json
	Tool    string // the tool of a tools/call, or "" (the reason names the method)
	Rule    string
	Reason  string
}

// String names what was denied, and the rule.
func (d Denial) String() string {
	if d.Tool != "" {
		return fmt.Sprintf("tools/call %q (%s)", d.Tool, d.Rule)
	}
	return fmt.Sprintf("%s (%s)", d.Reason, d.Rule)
}

// receipts returns the names of the gateway's receipt files, in seq order.
func (g *Gateway) receipts() ([]string, error) { return mcptest.Receipts(g.Receipts) }

// denialsAfter returns the denies among the gateway's receipts after the
// first n, in seq order.
func (g *Gateway) denialsAfter(n int) ([]Denial, error) {
	names, err := g.receipts()
	if err != nil {
		return nil, err
	}
	var ds []Denial
	for _, name := range names[min(n, len(names)):] {
		r, err := mcptest.ReadReceipt(g.Receipts, name)
		if err != nil {
			return nil, err
		}
		if r.Decision == receipt.Deny {
			ds = append(ds, Denial{Receipt: name, Tool: r.Tool, Rule: r.Rule, Reason: r.Reason})
		}
	}
	return ds, nil
}
