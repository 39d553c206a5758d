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

	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/ledger/receipt"
	"github.com/bankdoor/bankdoor/proxy"
	"github.com/bankdoor/bankdoor/proxy/gate"
	"github.com/bankdoor/bankdoor/proxy/policy"
)

// defaultReceipts is the receipts directory, relative to the working directory.
var defaultReceipts = filepath.Join(".bankdoor", "receipts")

func cmdProxy(e *env, args []string) int {
	fs := newFlags(e, "proxy", "proxy --policy P --server S [--receipts DIR] [--ledger URL | --ledger-db PATH [--witness URL --witness-key VKEY]...] {-- CMD ARGS... | --url URL [--url-ca PEM] [--header 'N: v']... [--header-env N=ENVVAR]...} [--listen HOST:PORT [--agent-tokens FILE] [--listen-cert FILE --listen-key FILE [--agent-ca FILE]]]")
	policyPath := fs.String("policy", "", "policy file (required)")
	server := fs.String("server", "", "name of the server in the policy (required)")
	receipts := fs.String("receipts", defaultReceipts, "receipts directory; must be writable at start")
	maxFrame := fs.Int("max-frame", proxy.DefaultMaxFrame, "largest JSON-RPC line accepted from the agent, in bytes")
	verbose := fs.Bool("v", false, "log every decision to stderr")
	var lf ledgerFlags
	lf.register(fs)
	var df downFlags
	df.register(fs)
	var sf listenFlags
	sf.register(fs)
	pos, argv, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if !required(e, fs, "policy", "server") {
		return exitUsage
	}
	if len(pos) > 0 {
		return fail(e, exitUsage, "proxy: unexpected argument %q; give the bank server's command after --", pos[0])
	}
	if err := df.check(argv, os.Getenv); err != nil {
		return fail(e, exitUsage, "proxy: %v", err)
	}
	if err := lf.check(); err != nil {
		return fail(e, exitUsage, "proxy: %v", err)
	}
	if err := sf.check(); err != nil {
		return fail(e, exitUsage, "proxy: %v", err)
	}
	p, err := policy.Load(*policyPath)
	if err != nil {
		return fail(e, exitUsage, "proxy: --policy: %v", err)
	}
	if _, ok := p.Servers[*server]; !ok {
		return fail(e, exitUsage, "proxy: --server %q is not in %s (servers: %s)", *server, *policyPath, serverNames(p))
	}
	for _, pr := range policy.Lint(p) {
		fmt.Fprintf(e.stderr, "bankdoor proxy: warning: %s\n", pr)
	}
	if sf.addr != "" {
		return serveAgents(e, &agentsConfig{policy: p, server: *server, receipts: *receipts, maxFrame: *maxFrame,
			logger: proxyLogger(e, *verbose), ledger: &lf, down: &df, argv: argv, serve: &sf})
	}
	keyDir, err := agentkey.Dir()
	if err != nil {
		return fail(e, exitFailure, "proxy: %v", err)
	}
	rec, key, closeRec, err := openRecorder(e, p, *server, keyDir, *receipts)
	if err != nil {
		return fail(e, exitFailure, "proxy: %v", err)
	}
	defer closeRec()
	logger := proxyLogger(e, *verbose)
	pub := key.Public().(ed25519.PublicKey)
	sink, err := lf.openSink(e, *receipts, oneAgent{id: agentkey.KeyID(pub), pub: pub}, embeddedOriginStart+agentkey.KeyID(pub), logger)
	if err != nil {
		return fail(e, exitFailure, "proxy: %v", err)
	}
	defer sink.close() // after the shipper's final attempt
	ship, err := sink.ship(*receipts, pub, logger)
	if err != nil {
		return fail(e, exitFailure, "proxy: %v", err)
	}
	defer ship.stop() // before closeRec: the final attempt reads the directory
	rec.Notify = ship.sh.Notify

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	conn, err := df.dial(ctx, argv)
	if err != nil {
		return fail(e, exitFailure, "proxy: %v", err)
	}
	r := proxy.New(proxy.Config{
		Policy: p, Server: *server, Gate: gate.New(p), Recorder: rec,
		Logger: logger, MaxFrame: *maxFrame,
	}, conn)
	if err := r.Run(ctx, e.stdin, e.stdout); err != nil {
		return fail(e, exitFailure, "proxy: %v", err)
	}
	return exitOK
}

// proxyLogger logs warnings and errors to stderr; with -v, decisions too.
func proxyLogger(e *env, verbose bool) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level})).With("bankdoor", "proxy")
}

// openRecorder loads the signing key in keyDir and opens the receipts
// directory, so that a proxy that could not leave evidence never starts.
func openRecorder(e *env, p *policy.Policy, server, keyDir, dir string) (*proxy.ReceiptRecorder, ed25519.PrivateKey, func(), error) {
	key, err := loadOrCreateKey(e, keyDir)
	if err != nil {
		return nil, nil, nil, err
	}
	w, err := receipt.OpenWriter(dir, key)
	if err != nil {
		abs, _ := filepath.Abs(dir)
		return nil, nil, nil, fmt.Errorf("--receipts %s: %v (give a writable directory with --receipts DIR; MCP clients often start servers in / or $HOME)", abs, err)
	}
	rec := &proxy.ReceiptRecorder{W: w, Server: server, PolicyID: p.ID, PolicySHA256: p.SHA256}
	return rec, key, func() { w.Close() }, nil
}

// loadOrCreateKey loads the signing key, creating one on the very first
// start (no key file at all) so that the proxy runs on a fresh machine. An
// existing key that cannot be read is an error, never replaced.
func loadOrCreateKey(e *env, dir string) (ed25519.PrivateKey, error) {
	key, err := agentkey.LoadPrivate(dir)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	pub, gerr := agentkey.Generate(dir, false)
	if gerr != nil {
		return nil, fmt.Errorf("no signing key in %s and creating one failed: %v", dir, gerr)
	}
	fmt.Fprintf(e.stderr, "bankdoor proxy: created signing key %s in %s (key_id %s); keep %s for verify --pub\n",
		agentkey.PrivateFile, dir, agentkey.KeyID(pub), filepath.Join(dir, agentkey.PublicFile))
	return agentkey.LoadPrivate(dir)
}
