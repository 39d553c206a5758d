package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/bankdoor/bankdoor/internal/agentchain"
	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/proxy"
	"github.com/bankdoor/bankdoor/proxy/gate"
	"github.com/bankdoor/bankdoor/proxy/httpserve"
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
func (f *listenFlags) check() error {
	if f.addr == "" {
		if f.tokens != "" || len(f.origins) > 0 {
			return hint(errors.New("--agent-tokens and --allow-origin need --listen"), "serve agents over HTTP with --listen HOST:PORT, or drop them")
		}
		if f.cert != "" || f.key != "" || f.agentCA != "" {
			return hint(errors.New("--listen-cert, --listen-key and --agent-ca need --listen"), "serve agents over HTTPS with --listen HOST:PORT, or drop them")
		}
		return nil
	}
	host, _, err := net.SplitHostPort(f.addr)
	if err != nil {
		return hint(fmt.Errorf("--listen %q: not HOST:PORT", f.addr), "give an address such as --listen 127.0.0.1:8700")
	}
	if f.tls, err = loadServerTLS(fileFlag{"listen-cert", f.cert}, fileFlag{"listen-key", f.key}, fileFlag{"agent-ca", f.agentCA}); err != nil {
		return err
	}
	if f.tls == nil && !isLoopback(host) {
		return hint(fmt.Errorf("--listen %q: plain HTTP carries the agents' tokens, so only a loopback address is served", f.addr),
			"pass --listen-cert and --listen-key to serve HTTPS, or put a TLS-terminating proxy in front")
	}
	if f.tokens == "" && f.agentCA == "" {
		return hint(errors.New("--listen needs a way for agents to authenticate"),
			"give --agent-tokens FILE (bearer tokens) or --agent-ca FILE (client certificates, with --listen-cert)")
	}
	return nil
}

// agentsConfig is what serving agents needs from cmdProxy.
type agentsConfig struct {
	proxyConfig
	serve *listenFlags
}

// serveAgents runs the proxy as a server of agents until SIGINT or
// SIGTERM. It listens before it creates the embedded ledger's key or
// file, so that an address in use leaves nothing behind.
func serveAgents(e *env, c *agentsConfig) int {
	var tokens httpserve.Tokens
	if c.serve.tokens != "" {
		var err error
		if tokens, err = httpserve.LoadTokens(c.serve.tokens); err != nil {
			return fail(e, exitUsage, "--agent-tokens: %w", err)
		}
	}
	home, err := agentkey.Dir()
	if err != nil {
		return exitErr(e, exitFailure, err)
	}
	agents := &agentRecorders{e: e, c: c, home: home, keys: &agentchain.Keys{}, open: map[string]*agentRecorder{}}
	known := agents.enrollKnown()
	pending, err := c.precheck(agents.keys, gatewayOrigin())
	defer pending.discard()
	if err != nil {
		return exitErr(e, exitFailure, err)
	}
	ln, err := net.Listen("tcp", c.serve.addr)
	if err != nil {
		return fail(e, exitFailure, "--listen: %w", err)
	}
	defer ln.Close() // in case of an early return; Serve closes it too
	if agents.sink, err = pending.open(e); err != nil {
		return exitErr(e, exitFailure, err)
	}
	defer agents.sink.close() // after every shipper's final attempt
	defer agents.close()
	if err := agents.catchUp(known); err != nil {
		return exitErr(e, exitFailure, err)
	}
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
	e.printf("serving agents at %s://%s/mcp", scheme, ln.Addr())
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
		return exitErr(e, exitFailure, err)
	}
	return exitOK
}

// gatewayOrigin names the log key that the embedded ledger of a proxy
// serving agents makes on first use: the gateway has no key of its own,
// so the name is random, and no two gateways share a witness's record.
func gatewayOrigin() string {
	b := make([]byte, 8)
	rand.Read(b) // never fails
	return embeddedOriginStart + "gateway-" + hex.EncodeToString(b)
}

// agentRecorders opens each agent's key, receipts directory and shipping
// at its first session and keeps them until the server stops: sessions of
// one agent share one chain. The embedded ledger enrolls keys: each agent
// key directory there is at start, and each new agent's key at its first
// session, before its receipts are shipped.
type agentRecorders struct {
	e    *env
	c    *agentsConfig
	home string
	keys *agentchain.Keys
	sink *ledgerSink

	mu   sync.Mutex
	open map[string]*agentRecorder
}

type agentRecorder struct {
	rec      *proxy.ReceiptRecorder // nil until the agent's first session
	closeRec func()
	ship     *shipping
}

// knownAgent is an agent whose key directory exists.
type knownAgent struct {
	name string
	pub  ed25519.PublicKey
}

// enrollKnown enrolls the public key of every agent key directory in
// $BANKDOOR_HOME/agents: after a restart the ledger holds their chains,
// and their shippers resume from its heads. A directory whose public key
// cannot be read is skipped with a warning: that agent's key is enrolled
// at its first session, from its private key, as a new agent's is.
func (a *agentRecorders) enrollKnown() []knownAgent {
	dir := filepath.Join(a.home, "agents")
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		a.c.logger.Warn("cannot list the agents' key directories; agents are enrolled at their first session", "dir", dir, "err", err)
	}
	var known []knownAgent
	for _, ent := range entries {
		if !ent.IsDir() {
			continue
		}
		path := filepath.Join(dir, ent.Name(), agentkey.PublicFile)
		pub, err := agentkey.LoadPublic(path)
		if err != nil {
			a.c.logger.Warn("cannot read an agent's public key; its receipts are enrolled and shipped from its next session", "agent", ent.Name(), "file", path, "err", err)
			continue
		}
		a.keys.Enroll(pub)
		known = append(known, knownAgent{ent.Name(), pub})
	}
	return known
}

// catchUp starts shipping the receipts directory of each known agent
// that has one, so that receipts a stopped proxy could not ship reach
// the ledger even if that agent does not come back.
func (a *agentRecorders) catchUp(known []knownAgent) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, k := range known {
		dir := filepath.Join(a.c.receipts, k.name)
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		ship, err := a.sink.ship(dir, k.pub, a.c.logger.With("agent", k.name))
		if err != nil {
			return fmt.Errorf("agent %s: %v", k.name, err)
		}
		a.open[k.name] = &agentRecorder{ship: ship}
	}
	return nil
}

func (a *agentRecorders) get(agent string) (*proxy.ReceiptRecorder, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.open[agent]
	if r != nil && r.rec != nil {
		return r.rec, nil
	}
	dir := filepath.Join(a.c.receipts, agent)
	keyDir := filepath.Join(a.home, "agents", agent)
	key, newKey, err := loadKey(keyDir)
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", agent, err)
	}
	rec, closeRec, err := openRecorder(a.c.policy, a.c.server, key, dir)
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", agent, err)
	}
	if newKey {
		if err := saveKey(a.e, keyDir, key); err != nil {
			closeRec()
			return nil, fmt.Errorf("agent %s: %w", agent, err)
		}
	}
	pub := key.Public().(ed25519.PublicKey)
	a.keys.Enroll(pub) // before its receipts are shipped
	if r == nil {      // not shipping since the start
		ship, err := a.sink.ship(dir, pub, a.c.logger.With("agent", agent))
		if err != nil {
			closeRec()
			return nil, fmt.Errorf("agent %s: %v", agent, err)
		}
		r = &agentRecorder{ship: ship}
	}
	rec.Notify = r.ship.sh.Notify
	r.rec, r.closeRec = rec, closeRec
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
		r.ship.stop() // before closeRec: the final attempt reads the directory
		if r.closeRec != nil {
			r.closeRec()
		}
	}
}
