package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/ledger/receipt"
	"github.com/bankdoor/bankdoor/ledger/station"
	"github.com/bankdoor/bankdoor/proxy"
	"github.com/bankdoor/bankdoor/proxy/gate"
	"github.com/bankdoor/bankdoor/proxy/httpserve"
	"github.com/bankdoor/bankdoor/proxy/oauth"
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
	maxBank   int
	maxReqs   int
	bodyWait  time.Duration
	oauth     oauthFlags

	tls *tls.Config // loaded by check; nil: plain HTTP
}

// oauthFlags make the gateway an OAuth 2.1 resource server (package
// proxy/oauth).
type oauthFlags struct {
	issuer   string
	resource string
	scopes   repeated
	claim    string
	agents   repeated // CLAIMVALUE=AGENT
}

func (f *listenFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "listen", "", "serve agents over MCP streamable HTTP at http://HOST:PORT/mcp instead of stdio (loopback only), or https:// with --listen-cert; port 0 picks one")
	fs.StringVar(&f.tokens, "agent-tokens", "", "with --listen: file of \"NAME TOKEN\" lines (mode 0600), NAME the agent; each agent signs with the key in $BANKDOOR_HOME/agents/AGENT and writes receipts to --receipts/AGENT")
	fs.StringVar(&f.cert, "listen-cert", "", "with --listen: serve HTTPS (TLS 1.2 or later) with this PEM certificate chain (with --listen-key); then any address may be served")
	fs.StringVar(&f.key, "listen-key", "", "the PEM private key of --listen-cert")
	fs.StringVar(&f.agentCA, "agent-ca", "", "with --listen-cert: PEM CA certificates; a client certificate they issue authenticates the agent its Subject CommonName names, as a token does (mTLS)")
	fs.Var(&f.origins, "allow-origin", "with --listen: another accepted Origin header value (repeatable); http://HOST:PORT of --listen is always accepted")
	fs.DurationVar(&f.idle, "idle-timeout", httpserve.DefaultIdleTimeout, "with --listen: close an agent session after this long idle (no request in flight, no GET stream open)")
	fs.IntVar(&f.maxSess, "max-sessions", httpserve.DefaultMaxSessions, "with --listen: most open sessions per agent (each has its own bank server session); a new one evicts the least recently used idle one")
	fs.IntVar(&f.maxBank, "max-bank-sessions", httpserve.DefaultMaxBankSessions, "with --listen: most open sessions of all agents together, and so most bank server sessions (processes, with a command after --)")
	fs.IntVar(&f.maxReqs, "max-requests", httpserve.DefaultMaxRequests, "with --listen: most POSTs in flight per agent; more are refused with 429")
	fs.DurationVar(&f.bodyWait, "body-timeout", httpserve.DefaultBodyTimeout, "with --listen: a POST body not read whole this long after its headers is refused with 408")
	fs.StringVar(&f.oauth.issuer, "oauth-issuer", "", "with --listen: accept OAuth 2.1 access tokens (JWTs) of the authorization server with this issuer URL, for --oauth-resource and --oauth-scope")
	fs.StringVar(&f.oauth.resource, "oauth-resource", "", "with --oauth-issuer: this gateway's resource URI as agents reach it, which a token's aud must hold (default http[s]://LISTEN-ADDRESS/mcp)")
	fs.Var(&f.oauth.scopes, "oauth-scope", "with --oauth-issuer: a scope every token must grant (repeatable; at least one)")
	fs.StringVar(&f.oauth.claim, "oauth-agent-claim", "sub", "with --oauth-issuer: the token claim that names the agent")
	fs.Var(&f.oauth.agents, "oauth-agent", "with --oauth-issuer: VALUE=AGENT, a value of --oauth-agent-claim in the issuer's tokens (a client id it assigned) and the agent it is (repeatable; at least one); a token whose value is not one is refused, even if it equals an agent name")
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
		if f.oauth.issuer != "" {
			return hint(errors.New("--oauth-issuer needs --listen"), "serve agents over HTTP with --listen HOST:PORT, or drop it")
		}
	}
	if f.oauth.issuer == "" {
		if f.oauth.resource != "" || len(f.oauth.scopes) > 0 || len(f.oauth.agents) > 0 || f.oauth.claim != "sub" {
			return hint(errors.New("--oauth-resource, --oauth-scope, --oauth-agent and --oauth-agent-claim need --oauth-issuer"), "name the authorization server with --oauth-issuer URL, or drop them")
		}
	} else if len(f.oauth.scopes) == 0 {
		return hint(errors.New("--oauth-issuer needs --oauth-scope"), "name the scope a token must grant to reach this gateway, e.g. --oauth-scope bankdoor")
	} else if len(f.oauth.agents) == 0 {
		return hint(errors.New("--oauth-issuer needs --oauth-agent"),
			"map each client of the authorization server to its agent, e.g. --oauth-agent 0oa1f2c3@clients=reconciler (its --oauth-agent-claim value); no token names an agent by itself")
	} else if _, err := f.oauth.agentsMap(); err != nil {
		return err
	}
	if f.addr == "" {
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
	if f.maxSess < 1 || f.maxBank < 1 || f.maxReqs < 1 || f.idle <= 0 || f.bodyWait <= 0 {
		return hint(errors.New("--max-sessions, --max-bank-sessions, --max-requests, --idle-timeout and --body-timeout must be positive"),
			"give a count of at least 1 or a duration such as 2m, or leave the flag out for its default")
	}
	if f.tokens == "" && f.agentCA == "" && f.oauth.issuer == "" {
		return hint(errors.New("--listen needs a way for agents to authenticate"),
			"give --agent-tokens FILE (bearer tokens), --agent-ca FILE (client certificates, with --listen-cert) or --oauth-issuer URL (OAuth access tokens)")
	}
	return nil
}

// agentsMap parses the --oauth-agent VALUE=AGENT flags.
func (f *oauthFlags) agentsMap() (map[string]string, error) {
	m := map[string]string{}
	for _, a := range f.agents {
		value, agent, ok := strings.Cut(a, "=")
		if !ok || value == "" {
			return nil, hint(fmt.Errorf("--oauth-agent %q: not VALUE=AGENT", a), "give the claim's value and the agent name, e.g. --oauth-agent 0oa1f2c3@clients=reconciler")
		}
		if _, dup := m[value]; dup {
			return nil, hint(fmt.Errorf("--oauth-agent: %s %q given twice", f.claim, value), "give each value once")
		}
		m[value] = agent
	}
	return m, nil
}

// verifier makes the OAuth verifier of the flags (nil without
// --oauth-issuer), fetching the authorization server's metadata; addr is
// where the gateway listens, for the default resource URI.
func (f *oauthFlags) verifier(scheme string, addr net.Addr, logger *slog.Logger) (*oauth.Verifier, error) {
	if f.issuer == "" {
		return nil, nil
	}
	agents, err := f.agentsMap()
	if err != nil {
		return nil, err
	}
	resource := cmp.Or(f.resource, scheme+"://"+addr.String()+"/mcp")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := oauth.New(ctx, oauth.Config{Issuer: f.issuer, Resource: resource, Scopes: f.scopes, AgentClaim: f.claim, Agents: agents, CheckAgent: httpserve.CheckAgent})
	if err != nil {
		return nil, hint(fmt.Errorf("--oauth-issuer: %w", err), "check --oauth-issuer, --oauth-resource and --oauth-scope, and that the authorization server is reachable from here")
	}
	logger.Info("accepting OAuth access tokens", "issuer", f.issuer, "resource", resource, "metadata", v.MetadataURL())
	return v, nil
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
	ev, ln, err := c.startGateway(e, home)
	for attempt := 1; errors.Is(err, errStartRace) && attempt < 3; attempt++ {
		ev, ln, err = c.startGateway(e, home) // with the log key the other proxy made
	}
	if err != nil {
		return exitErr(e, exitFailure, err)
	}
	defer ev.st.Close() // after the sessions: see package ledger/station
	defer ln.Close()    // in case of an early return; Serve closes it too
	defer c.serveMetrics(e, ev)()
	agents := &agentRecorders{e: e, c: c, home: home, st: ev.st, open: map[string]*proxy.ReceiptRecorder{}}
	scheme := "http"
	if c.serve.tls != nil {
		scheme = "https"
	}
	verifier, err := c.serve.oauth.verifier(scheme, ln.Addr(), c.logger)
	if err != nil {
		return exitErr(e, exitFailure, err)
	}
	srv := httpserve.New(httpserve.Config{
		Tokens: tokens, OAuth: verifier, ClientCerts: c.serve.agentCA != "", Origins: append([]string{scheme + "://" + ln.Addr().String()}, c.serve.origins...),
		MaxBody: int64(c.maxFrame), BodyTimeout: c.serve.bodyWait, IdleTimeout: c.serve.idle,
		MaxSessions: c.serve.maxSess, MaxBankSessions: c.serve.maxBank, MaxRequests: c.serve.maxReqs,
		Logger: c.logger, Start: agents.session, Recorder: agents.recorder, Observer: c.metrics.observer(),
	})
	c.metrics.sessions(srv.Sessions)
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv)
	if verifier != nil {
		mux.HandleFunc(verifier.MetadataPath(), verifier.ServeMetadata)
	}
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

// startGateway opens the gateway's evidence (the station of its receipts
// directory) and listens, then creates the embedded ledger's log key and
// file if they are new: an address that cannot be listened on leaves
// nothing behind. It fails with errStartRace, after undoing what it did,
// if it made the log key in memory and another proxy starting at the same
// moment wrote it first.
func (c *agentsConfig) startGateway(e *env, home string) (ev *evidence, ln net.Listener, err error) {
	if err := receiptsCreatable(c.receipts); err != nil {
		return nil, nil, err
	}
	if ev, err = c.ledger.openEvidence(c.receipts, home, gatewayOrigin(), c.logger); err != nil {
		return nil, nil, err
	}
	defer ev.raced(&err)
	if c.down.url == "" {
		if err := checkCommand(c.argv); err != nil {
			return nil, nil, err
		}
	}
	if ln, err = net.Listen("tcp", c.serve.addr); err != nil {
		return nil, nil, fmt.Errorf("--listen: %w", err)
	}
	if err := ev.start(e); err != nil {
		ln.Close()
		return nil, nil, err
	}
	return ev, ln, nil
}

// gatewayOrigin names the log key that the embedded ledger of a proxy
// serving agents makes on first use: the gateway has no key of its own,
// so the name is random, and no two gateways share a witness's record.
func gatewayOrigin() string {
	b := make([]byte, 8)
	rand.Read(b) // never fails
	return embeddedOriginStart + "gateway-" + hex.EncodeToString(b)
}

// agentRecorders opens each agent's key and receipts directory at its
// first session and keeps them until the server stops: sessions of one
// agent share one chain (with the sessions of other gateways on the same
// receipts directory, too). The station's holder ships every agent's
// chain and enrolls its key in the embedded ledger.
type agentRecorders struct {
	e    *env
	c    *agentsConfig
	home string
	st   *station.Station

	mu   sync.Mutex
	open map[string]*proxy.ReceiptRecorder
}

func (a *agentRecorders) get(agent string) (*proxy.ReceiptRecorder, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if r := a.open[agent]; r != nil {
		return r, nil
	}
	keyDir := filepath.Join(a.home, "agents", agent)
	w, written, err := a.chain(agent, keyDir)
	for attempt := 1; errors.Is(err, errStartRace) && attempt < 3; attempt++ {
		w, written, err = a.chain(agent, keyDir) // with the key another gateway made
	}
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", agent, err)
	}
	r := &proxy.ReceiptRecorder{W: w, Notify: written, Durable: a.c.events.durable(), Server: a.c.server, PolicyID: a.c.policy.ID, PolicySHA256: a.c.policy.SHA256}
	a.open[agent] = r
	return r, nil
}

// recorder is get as a httpserve.Config.Recorder.
func (a *agentRecorders) recorder(agent string) (proxy.Recorder, error) { return a.get(agent) }

// chain opens the agent's key, making it on its first session, and its
// chain in the receipts directory.
func (a *agentRecorders) chain(agent, keyDir string) (w *receipt.Writer, written func(), err error) {
	key, newKey, err := loadKey(keyDir)
	if err != nil {
		return nil, nil, err
	}
	if newKey {
		defer raced(&err, filepath.Join(keyDir, agentkey.PrivateFile))
	}
	dir := filepath.Join(a.c.receipts, agent)
	if w, written, err = a.st.Chain(dir, key); err != nil {
		return nil, nil, receiptsError(dir, err)
	}
	if newKey {
		if err := saveKey(a.e, keyDir, key); err != nil {
			return nil, nil, err
		}
	}
	return w, written, nil
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
		Logger: a.c.logger.With("agent", agent), MaxFrame: a.c.maxFrame, Observer: a.c.metrics.observer(), Tracer: a.c.tracer,
	}, conn)
	return r.RunAgent(ctx, side)
}
