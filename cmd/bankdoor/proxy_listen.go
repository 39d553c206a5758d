package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/proxy"
	"github.com/bankdoor/bankdoor/proxy/gate"
	"github.com/bankdoor/bankdoor/proxy/httpserve"
	"github.com/bankdoor/bankdoor/proxy/policy"
)

// listenFlags make the proxy serve agents over streamable HTTP.
type listenFlags struct {
	addr      string
	tokens    string
	cert, key string
	agentCA   string
	origins   repeated
	idle      time.Duration
	maxSess   int

	tls *tls.Config // loaded by check; nil: plain HTTP
}

func (f *listenFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "listen", "", "serve agents over MCP streamable HTTP at http://HOST:PORT/mcp instead of stdio (loopback only), or https:// with --listen-cert; port 0 picks one")
	fs.StringVar(&f.tokens, "agent-tokens", "", "with --listen: file of \"AGENT TOKEN\" lines (mode 0600); each agent signs with the key in $BANKDOOR_HOME/agents/AGENT and writes receipts to --receipts/AGENT")
	fs.StringVar(&f.cert, "listen-cert", "", "with --listen: serve HTTPS (TLS 1.2 or later) with this PEM certificate chain (with --listen-key); then any address may be served")
	fs.StringVar(&f.key, "listen-key", "", "the PEM private key of --listen-cert")
	fs.StringVar(&f.agentCA, "agent-ca", "", "with --listen-cert: PEM CA certificates; a client certificate they issue authenticates the agent its Subject CommonName names, as a token does (mTLS)")
	fs.Var(&f.origins, "allow-origin", "with --listen: another accepted Origin header value (repeatable); http://HOST:PORT of --listen is always accepted")
	fs.DurationVar(&f.idle, "idle-timeout", httpserve.DefaultIdleTimeout, "with --listen: close an agent session after this long without a request")
	fs.IntVar(&f.maxSess, "max-sessions", httpserve.DefaultMaxSessions, "with --listen: most open sessions per agent (each has its own bank server session)")
}

// check reports serve flags that do not go together and loads the TLS
// files. Plain HTTP carries bearer tokens, so without --listen-cert
// --listen takes loopback addresses only.
func (f *listenFlags) check(lf *ledgerFlags) error {
	if f.addr == "" {
		if f.tokens != "" || len(f.origins) > 0 {
			return errors.New("--agent-tokens and --allow-origin need --listen")
		}
		if f.cert != "" || f.key != "" || f.agentCA != "" {
			return errors.New("--listen-cert, --listen-key and --agent-ca need --listen")
		}
		return nil
	}
	host, _, err := net.SplitHostPort(f.addr)
	if err != nil {
		return fmt.Errorf("--listen %q: want HOST:PORT, e.g. 127.0.0.1:8700", f.addr)
	}
	if f.tls, err = loadServerTLS(fileFlag{"listen-cert", f.cert}, fileFlag{"listen-key", f.key}, fileFlag{"agent-ca", f.agentCA}); err != nil {
		return err
	}
	if f.tls == nil && !isLoopback(host) {
		return fmt.Errorf("--listen %q: plain HTTP carries the agents' tokens, so only a loopback address is served; pass --listen-cert and --listen-key to serve HTTPS, or put a TLS-terminating proxy in front", f.addr)
	}
	if f.tokens == "" && f.agentCA == "" {
		return errors.New("--listen needs --agent-tokens FILE (bearer tokens) or --agent-ca FILE (client certificates, with --listen-cert): agents must authenticate")
	}
	if lf.db != "" || lf.key != "" || lf.origin != "" {
		return errors.New("--listen ships receipts only to a remote ledger (--ledger URL); --ledger-db, --ledger-key and --ledger-origin configure the one-agent embedded ledger")
	}
	return nil
}

// agentsConfig is what serving agents needs from cmdProxy.
type agentsConfig struct {
	policy   *policy.Policy
	server   string
	receipts string
	maxFrame int
	logger   *slog.Logger
	ledger   *ledgerFlags
	down     *downFlags
	argv     []string
	serve    *listenFlags
}

// serveAgents runs the proxy as a server of agents until SIGINT or SIGTERM.
func serveAgents(e *env, c *agentsConfig) int {
	var tokens httpserve.Tokens
	if c.serve.tokens != "" {
		var err error
		if tokens, err = httpserve.LoadTokens(c.serve.tokens); err != nil {
			return fail(e, exitUsage, "proxy: --agent-tokens: %v", err)
		}
	}
	home, err := agentkey.Dir()
	if err != nil {
		return fail(e, exitFailure, "proxy: %v", err)
	}
	ln, err := net.Listen("tcp", c.serve.addr)
	if err != nil {
		return fail(e, exitFailure, "proxy: --listen: %v", err)
	}
	if c.ledger.client == nil {
		fmt.Fprintln(e.stderr, "bankdoor proxy: warning: with --listen, receipts are shipped only to a remote ledger; give --ledger URL (each agent's key enrolled) to ship them")
	}
	agents := &agentRecorders{e: e, c: c, home: home, open: map[string]*agentRecorder{}}
	defer agents.close()
	scheme := "http"
	if c.serve.tls != nil {
		scheme = "https"
	}
	srv := httpserve.New(httpserve.Config{
		Tokens: tokens, ClientCerts: c.serve.agentCA != "", Origins: append([]string{scheme + "://" + ln.Addr().String()}, c.serve.origins...),
		MaxBody: int64(c.maxFrame), IdleTimeout: c.serve.idle, MaxSessions: c.serve.maxSess, Logger: c.logger, Start: agents.session,
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv)
	hs := &http.Server{Handler: mux, TLSConfig: c.serve.tls, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(c.logger.Handler(), slog.LevelWarn)}
	fmt.Fprintf(e.stderr, "bankdoor proxy: serving agents at %s://%s/mcp\n", scheme, ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	served := make(chan error, 1)
	go func() {
		if c.serve.tls != nil {
			served <- hs.ServeTLS(ln, "", "")
		} else {
			served <- hs.Serve(ln)
		}
	}()
	select {
	case err = <-served:
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Close() // ends the sessions first: open streams would hold up Shutdown
	hs.Shutdown(sctx)
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fail(e, exitFailure, "proxy: %v", err)
	}
	return exitOK
}

// agentRecorders opens each agent's key, receipts directory and shipping
// at its first session and keeps them until the server stops: sessions of
// one agent share one chain.
type agentRecorders struct {
	e    *env
	c    *agentsConfig
	home string

	mu   sync.Mutex
	open map[string]*agentRecorder
}

type agentRecorder struct {
	rec   *proxy.ReceiptRecorder
	close func()
}

func (a *agentRecorders) get(agent string) (*proxy.ReceiptRecorder, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if r := a.open[agent]; r != nil {
		return r.rec, nil
	}
	dir := filepath.Join(a.c.receipts, agent)
	rec, key, closeRec, err := openRecorder(a.e, a.c.policy, a.c.server, filepath.Join(a.home, "agents", agent), dir)
	if err != nil {
		return nil, fmt.Errorf("agent %s: %v", agent, err)
	}
	r := &agentRecorder{rec: rec, close: closeRec}
	if a.c.ledger.client != nil {
		ship, err := startShipping(a.e, a.c.ledger, dir, key, a.c.logger.With("agent", agent))
		if err != nil {
			closeRec()
			return nil, fmt.Errorf("agent %s: %v", agent, err)
		}
		rec.Notify = ship.sh.Notify
		r.close = func() { ship.stop(); closeRec() }
	}
	a.open[agent] = r
	return rec, nil
}

// session runs one agent session: its own bank server session and relay.
func (a *agentRecorders) session(ctx context.Context, agent string, side proxy.AgentSide) error {
	rec, err := a.get(agent)
	if err != nil {
		return err
	}
	conn, err := a.c.down.dial(ctx, a.c.argv)
	if err != nil {
		return err
	}
	r := proxy.New(proxy.Config{
		Policy: a.c.policy, Server: a.c.server, Gate: gate.New(a.c.policy), Recorder: rec,
		Logger: a.c.logger.With("agent", agent), MaxFrame: a.c.maxFrame,
	}, conn)
	return r.RunAgent(ctx, side)
}

func (a *agentRecorders) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range a.open {
		r.close()
	}
}
