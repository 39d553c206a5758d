package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"connectrpc.com/connect"
	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/anchor"
	"github.com/bankdoor/bankdoor/anchor/cosignature"
	"github.com/bankdoor/bankdoor/anchor/tlogwitness"
	"github.com/bankdoor/bankdoor/internal/metrics"
	"github.com/bankdoor/bankdoor/ledger"
	"github.com/bankdoor/bankdoor/ledger/rpc"
	"github.com/bankdoor/bankdoor/ledger/tiles"
)

// cosignedLog is a ledger whose checkpoint carries every cosignature
// stored for its size, as GetCheckpoint serves it: what the tlog-tiles
// API (package tiles) and export read.
type cosignedLog struct {
	*ledger.Log
	logKey note.Verifier
}

func (c cosignedLog) Checkpoint() ([]byte, error) {
	return cosignature.Cosigned(c.Log.Checkpoint(), c.logKey, c.CosignatureStore().Cosignatures)
}

// shutdownGrace is how long a stopping server waits for calls in flight.
const shutdownGrace = 30 * time.Second

// serveFlags are the flags of bankdoor ledger serve.
type serveFlags struct {
	db                                   dbFlags
	addr, logKey, origin, agents         string
	tlsCert, tlsKey, clientCA, tokenFile string
	authReads                            bool
	witnesses                            witnessFlags
	metrics                              metricsFlags
	events                               eventsFlag
}

func (f *serveFlags) register(fs *flag.FlagSet) {
	f.db.register(fs, "the ledger, created if missing")
	fs.StringVar(&f.addr, "addr", "", "listen on HOST:PORT; port 0 picks a free port (required)")
	fs.StringVar(&f.logKey, "log-key", "", "the log's note signer key file, from bankdoor ledger keygen (required)")
	fs.StringVar(&f.origin, "origin", "", "the log's origin; must be the name of the --log-key key (required)")
	fs.StringVar(&f.agents, "agents", "", "directory of enrolled agents' public keys, one *.pem each; SIGHUP reloads it (required)")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "serve HTTPS with this PEM certificate chain (with --tls-key)")
	fs.StringVar(&f.tlsKey, "tls-key", "", "the PEM private key of --tls-cert")
	fs.StringVar(&f.clientCA, "client-ca", "", "PEM CA certificates; a client certificate they issue authenticates the caller (mTLS; needs --tls-cert)")
	fs.StringVar(&f.tokenFile, "token-file", "", "file of \"NAME TOKEN\" lines, one per accepted bearer token (mode 0600)")
	fs.BoolVar(&f.authReads, "auth-reads", false, "require authentication for the read RPCs and the tlog-tiles API (/checkpoint, /tile/) too, not only for Append and AddCosignature (GET /healthz stays open)")
	f.witnesses.register(fs)
	f.metrics.register(fs)
	f.events.register(fs)
}

// serveConfig is what the flags name, loaded and checked before the
// ledger is opened.
type serveConfig struct {
	signer    note.Signer
	logKey    note.Verifier         // the signer's verifier
	witnesses []*tlogwitness.Client // anchored to in process
	accepted  []note.Verifier       // witness keys whose cosignatures AddCosignature takes
	agents    *rpc.Directory
	auth      *rpc.Auth
	tls       *tls.Config      // nil: plain HTTP
	events    *eventSink       // --events; nil without
	rpcOpts   []connect.Option // the Connect handler's extra options (tracing)
	password  string           // of a PostgreSQL --db; "" for PostgreSQL's defaults
}

func (f *serveFlags) load() (*serveConfig, error) {
	var c serveConfig
	var err error
	if c.password, err = f.db.password(); err != nil {
		return nil, err
	}
	if c.signer, err = ledger.LoadSigner(f.logKey); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			err = hint(err, "make one with bankdoor ledger keygen --out %s --origin ORIGIN", f.logKey)
		}
		return nil, fmt.Errorf("--log-key: %w", err)
	}
	if c.signer.Name() != f.origin {
		return nil, hint(fmt.Errorf("--origin %q is not the name of the --log-key key (%q)", f.origin, c.signer.Name()),
			"pass --origin %q, or the key made for this origin", c.signer.Name())
	}
	var logVKey string
	if logVKey, c.logKey, err = logVerifier(f.logKey); err != nil {
		return nil, fmt.Errorf("--log-key: %w", err)
	}
	if c.agents, err = rpc.LoadDirectory(f.agents); err != nil {
		return nil, hint(fmt.Errorf("--agents: %w", err), "give --agents a directory of the agents' public keys (*.pem, e.g. their bankdoor.pub.pem)")
	}
	if err := f.loadWitnesses(&c, logVKey); err != nil {
		return nil, err
	}
	if c.tls, err = f.loadTLS(); err != nil {
		return nil, err
	}
	if c.auth, err = f.loadAuth(); err != nil {
		return nil, err
	}
	return &c, nil
}

// dbError names the ledger file in err and says what to do; existed
// says whether the file was there before Open. The error of a PostgreSQL
// database names it without the password.
func dbError(db string, existed bool, err error) error {
	if strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://") {
		err = fmt.Errorf("--db: %w", err)
		if errors.Is(err, ledger.ErrOtherLog) {
			return hint(err, "give the --log-key and --origin this database's log was made with, or another database")
		}
		if errors.Is(err, ledger.ErrIncompleteCopy) {
			return hint(err, "drop the database and create it anew, then run bankdoor ledger copy again")
		}
		return hint(err, "check that the database server is up and --db, the password and the database are right; bankdoor ledger fsck --db URL checks the log")
	}
	err = fmt.Errorf("--db %s: %w", db, err)
	switch {
	case errors.Is(err, ledger.ErrOtherLog):
		return hint(err, "give the --log-key and --origin this file was made with, or another file with --db PATH")
	case errors.Is(err, ledger.ErrLocked):
		return hint(err, "stop the ledger server or proxy that has it open, or give another file with --db PATH")
	case existed && errors.Is(err, ledger.ErrStorage):
		return hint(err, "check the file with bankdoor ledger fsck --db %s (with the server stopped)", db)
	}
	return err
}

// logVerifier returns the verifier key (vkey) of the signer key file at
// path, which ledger.LoadSigner has already checked, and its verifier.
func logVerifier(path string) (string, note.Verifier, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", nil, err
	}
	return logKeyVerifier(string(bytes.TrimSpace(b)))
}

// logKeyVerifier returns the vkey of the log key skey and its verifier.
func logKeyVerifier(skey string) (string, note.Verifier, error) {
	vkey, err := ledger.VerifierKey(skey)
	if err != nil {
		return "", nil, err
	}
	v, err := cosignature.NewLogVerifier(vkey)
	return vkey, v, err
}

// loadWitnesses reads --witness and --witness-key, none of which may be
// the log's key logVKey. With --witness, each URL pairs with a key and
// the ledger anchors to them in process; with --witness-key alone, it
// only accepts the cosignatures a bankdoor anchor elsewhere hands back
// for those keys.
func (f *serveFlags) loadWitnesses(c *serveConfig, logVKey string) error {
	var err error
	c.accepted, c.witnesses, err = f.witnesses.load(logVKey, true)
	return err
}

// loadTLS loads --tls-cert, --tls-key and --client-ca. A client
// certificate presented is always verified; whether one is needed is up
// to rpc.Auth, per procedure.
func (f *serveFlags) loadTLS() (*tls.Config, error) {
	return loadServerTLS(fileFlag{"tls-cert", f.tlsCert}, fileFlag{"tls-key", f.tlsKey}, fileFlag{"client-ca", f.clientCA})
}

func (f *serveFlags) loadAuth() (*rpc.Auth, error) {
	a := &rpc.Auth{ClientCerts: f.clientCA != "", Reads: f.authReads}
	if f.tokenFile != "" {
		tokens, err := rpc.LoadTokens(f.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("--token-file: %w", err)
		}
		a.Tokens = tokens
	}
	if f.authReads && f.tokenFile == "" && f.clientCA == "" {
		return nil, hint(errors.New("--auth-reads needs a way to authenticate"), "pass --token-file or --client-ca")
	}
	return a, nil
}

func cmdLedgerServe(e *env, args []string) int {
	fs := newFlags(e, "ledger serve", "ledger serve --db PATH|URL [--db-password-file FILE|--db-password-env VAR] --addr HOST:PORT --log-key FILE --origin ORIGIN --agents DIR [--witness URL --witness-key VKEY]... [--witness-interval DURATION] [--tls-cert FILE --tls-key FILE] [--client-ca FILE] [--token-file FILE] [--auth-reads] [--metrics-addr HOST:PORT] [--events FILE|-]")
	var f serveFlags
	f.register(fs.FlagSet)
	pos, _, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return fs.usageErr("ledger serve takes no arguments (got %q); the ledger file is --db PATH", pos[0])
	}
	if !required(fs, "db", "addr", "log-key", "origin", "agents") {
		return exitUsage
	}
	if err := f.metrics.check(); err != nil {
		return exitErr(e, exitUsage, err)
	}
	// Signals are caught from here on, so none is lost once the ledger
	// is open.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(sigs)
	cfg, err := f.load()
	if err != nil {
		return exitErr(e, exitUsage, err)
	}
	logger := slog.New(slog.NewTextHandler(e.stderr, nil))
	tp, err := startTracing("bankdoor-ledger", logger)
	if err != nil {
		return exitErr(e, exitUsage, err)
	}
	defer stopTracing(e, tp)
	if cfg.rpcOpts, err = connectTracing(tp); err != nil {
		return exitErr(e, exitFailure, err)
	}
	if cfg.events, err = f.events.open(e.stdout, logger); err != nil {
		return exitErr(e, exitFailure, err)
	}
	defer cfg.events.close() // after the log is closed: its last commits are queued
	cfg.events.count(f.metrics.reg)
	s, err := startLedger(e, logger, &f, cfg)
	if err != nil {
		return exitErr(e, exitFailure, err)
	}
	return s.run(sigs)
}

// ledgerServer is a running ledger server.
type ledgerServer struct {
	logger *slog.Logger
	agents *rpc.Directory
	log    *ledger.Log
	svc    *rpc.Service
	http   *http.Server
	done   chan error // Serve's result

	anchor      *anchor.Loop
	stopMetrics func()
}

// startLedger listens on --addr, then opens (or creates) the ledger file,
// so that an address that cannot be listened on leaves no file behind,
// and serves it.
func startLedger(e *env, logger *slog.Logger, f *serveFlags, cfg *serveConfig) (*ledgerServer, error) {
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return nil, fmt.Errorf("--addr: %w", err)
	}
	_, err = os.Stat(f.db.db)
	existed := err == nil
	opts := ledger.Options{Origin: f.origin, Signer: cfg.signer, Agents: cfg.agents, Logger: logger, DBPassword: cfg.password}
	var mx *metrics.Ledger
	var handlerOpts []connect.HandlerOption
	if f.metrics.reg != nil {
		mx = f.metrics.reg.Ledger()
		opts.OnCommit = mx.Committed
		handlerOpts = append(handlerOpts, connect.WithInterceptors(mx.Interceptor()))
	}
	opts.OnCommit = cfg.events.onCommit(opts.OnCommit)
	l, err := ledger.Open(f.db.db, opts)
	if err != nil {
		ln.Close()
		return nil, dbError(f.db.db, existed, err)
	}
	s := &ledgerServer{logger: logger, agents: cfg.agents, log: l, svc: rpc.New(l, logger), done: make(chan error, 1)}
	if err := s.svc.Cosign(cfg.logKey, cfg.accepted); err != nil {
		l.Close()
		ln.Close()
		return nil, fmt.Errorf("serving cosignatures: %w", err)
	}
	for _, w := range cfg.witnesses {
		w.Logger = logger
	}
	aopts := anchor.Options{Log: l, LogKey: cfg.logKey, Store: l.CosignatureStore(),
		Witnesses: cfg.witnesses, RetryInterval: anchorRetry, Interval: f.witnesses.interval, Logger: logger}
	if mx != nil {
		aopts.OnResult = mx.Anchored
		mx.Watch(func() *ledger.Log { return l }, witnessNames(cfg.witnesses))
	}
	if s.anchor, err = anchor.StartLoop(aopts, l.Watch); err != nil {
		l.Close()
		ln.Close()
		return nil, fmt.Errorf("--witness: %w", err)
	}
	s.stopMetrics = f.metrics.serve(e, logger)
	s.http = newHTTPServer(s.svc, tiles.Handler(cosignedLog{l, cfg.logKey}, logger), cfg, logger, handlerOpts...)
	scheme := "http"
	if cfg.tls != nil {
		scheme = "https"
	}
	logStart(logger, f, cfg)
	e.printf("listening on %s://%s", scheme, ln.Addr())
	go func() {
		if cfg.tls != nil {
			s.done <- s.http.ServeTLS(ln, "", "")
		} else {
			s.done <- s.http.Serve(ln)
		}
	}()
	return s, nil
}

// newHTTPServer serves the Connect service, the tlog-tiles read API
// (tileAPI, at /checkpoint and under /tile/, behind the same auth as the
// read RPCs) and GET /healthz.
func newHTTPServer(svc *rpc.Service, tileAPI http.Handler, cfg *serveConfig, logger *slog.Logger, opts ...connect.HandlerOption) *http.Server {
	mux := http.NewServeMux()
	mux.Handle(svc.Handler(cfg.auth, append(opts, handlerOptions(cfg.rpcOpts)...)...))
	tileAPI = cfg.auth.Middleware(tileAPI)
	mux.Handle("/checkpoint", tileAPI)
	mux.Handle("/tile/", tileAPI)
	mux.Handle("GET /healthz", svc.Health())
	var p http.Protocols
	p.SetHTTP1(true)
	if cfg.tls != nil {
		p.SetHTTP2(true)
	} else {
		p.SetUnencryptedHTTP2(true) // h2c, for gRPC without TLS
	}
	return &http.Server{
		Handler:           mux,
		Protocols:         &p,
		TLSConfig:         cfg.tls,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

func logStart(logger *slog.Logger, f *serveFlags, cfg *serveConfig) {
	for i, w := range cfg.witnesses {
		logger.Info("anchoring checkpoints to witness", "witness", w.Name(), "url", f.witnesses.urls[i])
	}
	if len(cfg.witnesses) == 0 && len(cfg.accepted) > 0 {
		logger.Info("no --witness: this ledger does not anchor itself; it accepts the cosignatures of --witness-key keys that bankdoor anchor hands back", "witness_keys", len(cfg.accepted))
	}
	ids := cfg.agents.KeyIDs()
	logger.Info("agents enrolled", "dir", f.agents, "count", len(ids), "key_ids", ids)
	if len(ids) == 0 {
		logger.Warn("no agent is enrolled: every Append will be refused until a public key is put in --agents and SIGHUP is sent", "dir", f.agents)
	}
	switch {
	case len(cfg.auth.Tokens) == 0 && !cfg.auth.ClientCerts:
		logger.Warn("no --token-file or --client-ca: anyone who reaches the server may Append (receipts must still be signed by enrolled agents)")
	case cfg.tls == nil:
		logger.Warn("bearer tokens are sent without TLS; pass --tls-cert and --tls-key unless a TLS proxy is in front")
	}
}

// run serves until a signal stops it or the server fails: SIGHUP reloads
// the agents, SIGTERM and SIGINT shut down gracefully.
func (s *ledgerServer) run(sigs <-chan os.Signal) int {
	for {
		select {
		case err := <-s.done:
			s.logger.Error("server failed", "err", err)
			s.anchor.Stop()
			s.stopMetrics()
			s.log.Close()
			return exitFailure
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				s.reload()
				continue
			}
			s.logger.Info("shutting down", "signal", sig.String())
			return s.shutdown()
		}
	}
}

func (s *ledgerServer) reload() {
	ch, err := s.agents.Reload()
	if err != nil {
		s.logger.Error("agents not reloaded; the previous set stays enrolled", "dir", s.agents.Dir(), "err", err)
		return
	}
	s.logger.Info("agents reloaded", "dir", s.agents.Dir(), "enrolled", ch.Enrolled, "removed", ch.Removed, "count", len(s.agents.KeyIDs()))
}

// shutdown stops accepting calls, waits for those in flight, then closes
// the log, which waits for batches being committed.
func (s *ledgerServer) shutdown() int {
	code := exitOK
	s.svc.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := s.http.Shutdown(ctx); err != nil {
		s.logger.Error("calls still in flight after the grace period; closing their connections", "grace", shutdownGrace, "err", err)
		s.http.Close()
		code = exitFailure
	}
	if err := <-s.done; !errors.Is(err, http.ErrServerClosed) {
		s.logger.Error("server failed", "err", err)
		code = exitFailure
	}
	s.anchor.Stop()
	s.stopMetrics()
	size := s.log.Size()
	if err := s.log.Close(); err != nil {
		s.logger.Error("closing the ledger", "err", err)
		return exitFailure
	}
	s.logger.Info("stopped", "size", size)
	return code
}
