package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"go.opentelemetry.io/otel/trace"

	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/ledger/receipt"
	"github.com/bankdoor/bankdoor/proxy"
	"github.com/bankdoor/bankdoor/proxy/gate"
	"github.com/bankdoor/bankdoor/proxy/policy"
)

// defaultReceipts is the receipts directory, relative to the working directory.
var defaultReceipts = filepath.Join(".bankdoor", "receipts")

func cmdProxy(e *env, args []string) int {
	fs := newFlags(e, "proxy", "proxy --policy P --server S [--receipts DIR] [--ledger URL | --ledger-db PATH [--witness URL --witness-key VKEY]...] {-- CMD ARGS... | --url URL [--url-ca PEM] [--header 'N: v']... [--header-env N=ENVVAR]...} [--listen HOST:PORT [--agent-tokens FILE] [--listen-cert FILE --listen-key FILE [--agent-ca FILE]]] [--metrics-addr HOST:PORT] [--events FILE|-]")
	policyPath := fs.String("policy", "", "policy file (required)")
	server := fs.String("server", "", "name of the server in the policy (required)")
	receipts := fs.String("receipts", defaultReceipts, "receipts directory; must be writable at start")
	maxFrame := fs.Int("max-frame", proxy.DefaultMaxFrame, "largest JSON-RPC line accepted from the agent, in bytes")
	verbose := fs.Bool("v", false, "log every decision to stderr")
	var lf ledgerFlags
	lf.register(fs.FlagSet)
	var df downFlags
	df.register(fs.FlagSet)
	var sf listenFlags
	sf.register(fs.FlagSet)
	var mf metricsFlags
	mf.register(fs.FlagSet)
	var evf eventsFlag
	evf.register(fs.FlagSet)
	pos, argv, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if !required(fs, "policy", "server") {
		return exitUsage
	}
	if len(pos) > 0 {
		return exitErr(e, exitUsage, hint(fmt.Errorf("unexpected argument %q", pos[0]), "give the bank server's command after --, e.g. -- bankmcp"))
	}
	logger := proxyLogger(e, *verbose)
	tp, err := startTracing("bankdoor-proxy", logger)
	if err != nil {
		return exitErr(e, exitUsage, err)
	}
	defer stopTracing(e, tp)
	if lf.clientOpts, err = connectTracing(tp); err != nil {
		return exitErr(e, exitFailure, err)
	}
	if sf.addr == "" {
		if err := evf.checkStdio(); err != nil {
			return exitErr(e, exitUsage, err)
		}
	}
	for _, check := range []func() error{func() error { return df.check(argv, os.Getenv) }, lf.check, sf.check, mf.check} {
		if err := check(); err != nil {
			return exitErr(e, exitUsage, err)
		}
	}
	p, err := loadPolicy(*policyPath, *server)
	if err != nil {
		return exitErr(e, exitUsage, err)
	}
	problems := failures(policy.Lint(p))
	for _, pr := range problems {
		e.warningf("%s", pr)
	}
	for _, h := range lintHints(p, problems) {
		e.printf("hint: %s", h)
	}
	c := &proxyConfig{policy: p, server: *server, receipts: *receipts, maxFrame: *maxFrame,
		logger: logger, ledger: &lf, down: &df, argv: argv, tracer: proxyTracer(tp)}
	c.metrics = mf.newProxyMetrics(p, *server, lf.client == nil)
	lf.embedded = c.metrics.hooks
	if c.events, err = evf.open(e.stdout, c.logger); err != nil {
		return exitErr(e, exitFailure, err)
	}
	defer c.events.close()
	c.events.count(mf.reg)
	if sf.addr != "" {
		return serveAgents(e, &agentsConfig{proxyConfig: *c, serve: &sf})
	}
	return proxyStdio(e, c)
}

// proxyConfig is what serving agents, over stdio or --listen, needs from
// cmdProxy.
type proxyConfig struct {
	policy   *policy.Policy
	server   string
	receipts string
	maxFrame int
	logger   *slog.Logger
	ledger   *ledgerFlags
	down     *downFlags
	argv     []string
	tracer   trace.Tracer  // nil: no tracing
	metrics  *proxyMetrics // nil without --metrics-addr
	events   *eventSink    // --events; nil without
}

// proxyStdio relays one agent on stdin and stdout. Everything that can
// be checked without creating a file is checked first (the signing key
// and log key loaded or made in memory, the ledger file opened if it
// exists and no other proxy holds it, the receipts directory and the bank
// server's command); then the receipts directory, the new keys and the
// ledger file are created, in that order.
func proxyStdio(e *env, c *proxyConfig) int {
	keyDir, err := agentkey.Dir()
	if err != nil {
		return exitErr(e, exitFailure, err)
	}
	ev, w, written, err := c.startStdio(e, keyDir)
	for attempt := 1; errors.Is(err, errStartRace) && attempt < 3; attempt++ {
		ev, w, written, err = c.startStdio(e, keyDir) // with the key the other proxy made
	}
	if err != nil {
		return exitErr(e, exitFailure, err)
	}
	defer ev.st.Close() // after the relay: see package ledger/station
	defer c.serveMetrics(e, ev)()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	conn, err := c.down.dial(ctx, c.argv)
	if err != nil {
		return exitErr(e, exitFailure, err)
	}
	rec := &proxy.ReceiptRecorder{W: w, Notify: written, Durable: c.events.durable(), Server: c.server, PolicyID: c.policy.ID, PolicySHA256: c.policy.SHA256}
	r := proxy.New(proxy.Config{
		Policy: c.policy, Server: c.server, Gate: gate.New(c.policy), Recorder: rec,
		Logger: c.logger, MaxFrame: c.maxFrame, Observer: c.metrics.observer(), Tracer: c.tracer,
	}, conn)
	if err := r.Run(ctx, e.stdin, e.stdout); err != nil {
		return exitErr(e, exitFailure, err)
	}
	return exitOK
}

// startStdio opens the stdio proxy's evidence: its signing key, the
// station of its receipts directory and its chain. It fails with
// errStartRace, after undoing what it did, if it made a key in memory
// that another proxy starting at the same moment wrote first: started
// again, it loads that one.
func (c *proxyConfig) startStdio(e *env, keyDir string) (ev *evidence, w *receipt.Writer, written func(), err error) {
	key, newKey, err := loadKey(keyDir)
	if err != nil {
		return nil, nil, nil, err
	}
	if newKey {
		defer raced(&err, filepath.Join(keyDir, agentkey.PrivateFile))
	}
	pub := key.Public().(ed25519.PublicKey)
	if err := receiptsCreatable(c.receipts); err != nil {
		return nil, nil, nil, err
	}
	ev, err = c.ledger.openEvidence(c.receipts, keyDir, embeddedOriginStart+agentkey.KeyID(pub), c.logger)
	if err != nil {
		return nil, nil, nil, err
	}
	defer ev.raced(&err)
	if c.down.url == "" {
		if err := checkCommand(c.argv); err != nil {
			return nil, nil, nil, err
		}
	}
	if w, written, err = ev.st.Chain(c.receipts, key); err != nil {
		return nil, nil, nil, receiptsError(c.receipts, err)
	}
	if newKey {
		if err := saveKey(e, keyDir, key); err != nil {
			return nil, nil, nil, err
		}
	}
	if err := ev.start(e); err != nil {
		return nil, nil, nil, err
	}
	return ev, w, written, nil
}

// errStartRace is the error of a start that made a key in memory while
// another process wrote that key's file: a new start loads it.
var errStartRace = errors.New("another proxy starting at the same moment created the key")

// raced replaces a non-nil *err with errStartRace if the key file path,
// which did not exist when the start made its key, exists now.
func raced(err *error, path string) {
	if *err == nil || errors.Is(*err, errStartRace) {
		return
	}
	if _, serr := os.Lstat(path); serr == nil {
		*err = fmt.Errorf("%w (%s): %w", errStartRace, path, *err)
	}
}

// proxyLogger logs warnings and errors to stderr; with -v, decisions too.
func proxyLogger(e *env, verbose bool) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level})).With("bankdoor", "proxy")
}

// receiptsHint says how to fix a receipts directory that cannot be used.
const receiptsHint = "give a writable directory with --receipts DIR (MCP clients often start servers in / or $HOME)"

// receiptsCreatable checks that the receipts directory dir is one, or
// could be created, without creating it.
func receiptsCreatable(dir string) error {
	abs, _ := filepath.Abs(dir)
	fi, err := os.Stat(dir)
	switch {
	case err == nil && !fi.IsDir():
		err = errors.New("not a directory")
	case err != nil:
		if cerr := creatable(dir); cerr != nil || errors.Is(err, fs.ErrNotExist) {
			err = cerr
		}
	}
	if err != nil {
		return hint(fmt.Errorf("--receipts %s: %w", abs, err), receiptsHint)
	}
	return nil
}

// receiptsError names the receipts directory dir in err, which opening
// it returned, and says how to fix it.
func receiptsError(dir string, err error) error {
	abs, _ := filepath.Abs(dir)
	return hint(fmt.Errorf("--receipts %s: %w", abs, err), receiptsHint)
}

// loadKey loads the signing key in dir. On the very first start (no key
// file at all) it makes one in memory, and newKey is true: saveKey writes
// it once the receipts directory is open, so that the proxy runs on a
// fresh machine and a proxy that fails to start leaves no key. An
// existing key that cannot be read is an error, never replaced.
func loadKey(dir string) (key ed25519.PrivateKey, newKey bool, err error) {
	key, err = agentkey.LoadPrivate(dir)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, false, err
	}
	pubPath := filepath.Join(dir, agentkey.PublicFile)
	if _, err := os.Lstat(pubPath); err == nil {
		return nil, false, hint(fmt.Errorf("the key directory has %s but no %s", pubPath, agentkey.PrivateFile),
			"restore %s, or make a new key with bankdoor keygen --force", filepath.Join(dir, agentkey.PrivateFile))
	}
	_, key, err = ed25519.GenerateKey(nil)
	return key, true, err
}

// saveKey writes the signing key loadKey made and says where.
func saveKey(e *env, dir string, key ed25519.PrivateKey) error {
	if err := agentkey.Save(dir, key, false); err != nil {
		return fmt.Errorf("no signing key in %s, and saving a new one failed: %w", dir, err)
	}
	e.printf("created signing key %s in %s (key_id %s); keep %s for verify --pub",
		agentkey.PrivateFile, dir, agentkey.KeyID(key.Public().(ed25519.PublicKey)), filepath.Join(dir, agentkey.PublicFile))
	return nil
}
