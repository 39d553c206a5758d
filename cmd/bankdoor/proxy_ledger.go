package main

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/anchor/tlogwitness"
	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/ledger"
	"github.com/bankdoor/bankdoor/ledger/spool"
	"github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1/ledgerv1connect"
)

// Embedded ledger defaults.
const (
	ledgerKeyFile       = "ledger.key" // in the key directory; + ".vkey"
	ledgerDBFile        = "ledger.db"  // beside the receipts directory
	embeddedOriginStart = "bankdoor.local/embedded/"
)

// ledgerFlags are the proxy's ledger flags: a remote ledger, or the
// embedded one (the default), which --witness anchors.
type ledgerFlags struct {
	remote          remoteFlags
	db, key, origin string
	witnesses       witnessFlags

	client   ledgerv1connect.LedgerServiceClient // set by check if remote.url is
	anchorTo []*tlogwitness.Client               // set by check: the embedded ledger's witnesses
}

func (f *ledgerFlags) register(fs *flag.FlagSet) {
	f.remote.register(fs, "ship receipts in the background to the ledger at this URL (bankdoor ledger serve) instead of the embedded ledger")
	fs.StringVar(&f.db, "ledger-db", "", "the embedded ledger's file (default: "+ledgerDBFile+" beside the --receipts directory, so .bankdoor/"+ledgerDBFile+")")
	fs.StringVar(&f.key, "ledger-key", "", "the embedded ledger's log key file (default: "+ledgerKeyFile+" in the key directory, created on first use)")
	fs.StringVar(&f.origin, "ledger-origin", "", "the embedded ledger's checkpoint origin: the log key's name (default for a new key: "+embeddedOriginStart+"<key_id>, or "+embeddedOriginStart+"gateway-<random> with --listen)")
	f.witnesses.register(fs)
}

// check reports flags that do not go together or do not parse, and makes
// the remote ledger's client or the embedded ledger's witness clients. It
// has no side effects.
func (f *ledgerFlags) check() error {
	if f.remote.url != "" {
		for _, fl := range []struct{ name, v string }{{"ledger-db", f.db}, {"ledger-key", f.key}, {"ledger-origin", f.origin}} {
			if fl.v != "" {
				return hint(fmt.Errorf("--ledger and --%s do not go together", fl.name),
					"--ledger ships receipts to a remote ledger, --%s configures the embedded one; give one or the other", fl.name)
			}
		}
		if len(f.witnesses.urls) > 0 || len(f.witnesses.keys) > 0 {
			return hint(errors.New("--witness and --witness-key anchor the embedded ledger, not a remote --ledger"),
				"anchor that ledger where it runs: bankdoor anchor --ledger URL --log-key VKEY --witness URL --witness-key VKEY, or bankdoor ledger serve ... --witness URL --witness-key VKEY")
		}
		var err error
		f.client, err = f.remote.client()
		return err
	}
	if f.remote.ca != "" || f.remote.tokenEnv != "" {
		return hint(errors.New("--ledger-ca and --ledger-token-env are for a remote ledger"), "give its URL with --ledger URL")
	}
	var err error
	_, f.anchorTo, err = f.witnesses.load(false)
	return err
}

// ledgerSink is the ledger the proxy's shippers ship to: the remote one
// the flags name, or the embedded one, open in this process with its
// anchoring loop.
type ledgerSink struct {
	to     spool.Appender
	name   string      // for logs: the URL, or "embedded"
	log    *ledger.Log // the embedded ledger; nil for a remote one
	anchor *localAnchor
	logger *slog.Logger
}

// pendingSink is the ledger the flags name, checked but not created: the
// embedded ledger's log key is loaded, or made in memory on first use;
// its file is opened if it exists, or else its directory is checked.
// open creates what is missing; discard closes what prepare opened.
type pendingSink struct {
	f       *ledgerFlags
	signer  note.Signer
	keyPath string
	newKey  string // the log key made on first use, to be written to keyPath
	db      string
	existed bool        // the file existed at prepare
	log     *ledger.Log // the embedded ledger, if its file existed; then open's
	agents  ledger.Agents
	logger  *slog.Logger
}

// prepare checks the ledger the flags name, creating nothing. A remote
// ledger is not contacted: it may be down; the receipts wait in their
// directory. The embedded ledger's file defaults to one beside receipts;
// it enrolls agents, and a log key made on first use is named
// --ledger-origin or else defaultOrigin.
func (f *ledgerFlags) prepare(receipts string, agents ledger.Agents, defaultOrigin string, logger *slog.Logger) (*pendingSink, error) {
	p := &pendingSink{f: f, agents: agents, logger: logger}
	if f.client != nil {
		return p, nil
	}
	var err error
	if p.signer, p.keyPath, p.newKey, err = f.signer(defaultOrigin); err != nil {
		return nil, err
	}
	p.db = f.db
	if p.db == "" {
		p.db = filepath.Join(filepath.Dir(filepath.Clean(receipts)), ledgerDBFile)
	}
	p.logger = logger.With("ledger", "embedded")
	if _, err := os.Stat(p.db); err == nil {
		p.existed = true
		p.log, err = p.openDB()
		return p, err
	} else if cerr := creatable(p.db); cerr != nil || !errors.Is(err, fs.ErrNotExist) {
		return p, p.dbError(cmp.Or(cerr, err))
	}
	return p, nil
}

// open creates the embedded ledger's log key and file if they are new
// and starts its anchoring loop, or returns the remote ledger.
func (p *pendingSink) open(e *env) (*ledgerSink, error) {
	f := p.f
	if f.client != nil {
		return &ledgerSink{to: spool.Remote{Client: f.client, URL: f.remote.url}, name: f.remote.url, logger: p.logger}, nil
	}
	if p.newKey != "" {
		if err := writeLogKey(p.keyPath, p.newKey); err != nil {
			return nil, hint(fmt.Errorf("creating the embedded ledger's log key: %w", err), "give one with --ledger-key FILE (bankdoor ledger keygen makes one)")
		}
		e.printf("created log key %s for the embedded ledger (origin %s); its verifier key is in %s",
			p.keyPath, p.signer.Name(), p.keyPath+ledger.VerifierKeySuffix)
	}
	if p.log == nil {
		if err := os.MkdirAll(filepath.Dir(p.db), 0o700); err != nil {
			return nil, p.dbError(err)
		}
		var err error
		if p.log, err = p.openDB(); err != nil {
			return nil, err
		}
	}
	l := p.log
	p.log = nil // the sink's now
	s := &ledgerSink{to: spool.Embedded{Log: l}, name: "embedded", log: l, logger: p.logger}
	var err error
	if s.anchor, err = f.startAnchor(l, p.keyPath, p.logger); err != nil {
		l.Close()
		return nil, err
	}
	return s, nil
}

// discard closes the embedded ledger if prepare opened it and open did
// not take it.
func (p *pendingSink) discard() {
	if p != nil && p.log != nil {
		p.log.Close()
		p.log = nil
	}
}

func (p *pendingSink) openDB() (*ledger.Log, error) {
	l, err := ledger.Open(p.db, ledger.Options{Origin: p.signer.Name(), Signer: p.signer, Agents: p.agents, Logger: p.logger})
	return l, p.dbError(err)
}

// dbError names the embedded ledger's file in err and says what to do.
func (p *pendingSink) dbError(err error) error {
	if err == nil {
		return nil
	}
	abs, _ := filepath.Abs(p.db)
	err = fmt.Errorf("--ledger-db %s: %w", abs, err)
	switch {
	case errors.Is(err, ledger.ErrOtherLog):
		return hint(err, "the embedded ledger is signed with --ledger-key (by default %s in the key directory): give the log key and --ledger-origin this file was made with, another file with --ledger-db PATH, or a remote ledger with --ledger URL", ledgerKeyFile)
	case errors.Is(err, ledger.ErrLocked):
		return hint(err, "the file is open in another proxy: stop it, or give this one another file with --ledger-db PATH")
	case p.existed && errors.Is(err, ledger.ErrStorage):
		return hint(err, "check the file with bankdoor ledger fsck --db %s, or give another one with --ledger-db PATH", abs)
	}
	return hint(err, "give the embedded ledger a file with --ledger-db PATH, or ship to a remote ledger with --ledger URL")
}

// creatable checks that path could be created: its nearest existing
// ancestor is a directory. It creates nothing.
func creatable(path string) error {
	dir := filepath.Dir(filepath.Clean(path))
	for {
		fi, err := os.Stat(dir)
		switch {
		case err == nil && !fi.IsDir():
			return fmt.Errorf("%s is not a directory", dir)
		case err == nil:
			return nil
		case !errors.Is(err, fs.ErrNotExist):
			return err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil
		}
		dir = parent
	}
}

// startAnchor starts anchoring the embedded ledger l, signed with the
// log key at keyPath, to the --witness witnesses.
func (f *ledgerFlags) startAnchor(l *ledger.Log, keyPath string, logger *slog.Logger) (*localAnchor, error) {
	if len(f.anchorTo) == 0 {
		return startLocalAnchor(l, nil, nil, logger)
	}
	logKey, err := logVerifier(keyPath)
	if err != nil {
		return nil, fmt.Errorf("the embedded ledger's key %s: %w", keyPath, err)
	}
	for i, w := range f.anchorTo {
		logger.Info("anchoring the embedded ledger's checkpoints to witness", "witness", w.Name(), "url", f.witnesses.urls[i])
	}
	return startLocalAnchor(l, logKey, f.anchorTo, logger)
}

// ship starts shipping the receipts directory of the agent key pub.
func (s *ledgerSink) ship(receipts string, pub ed25519.PublicKey, logger *slog.Logger) (*shipping, error) {
	cfg := spool.Config{Dir: receipts, KeyID: agentkey.KeyID(pub), Ledger: s.to, Logger: logger.With("ledger", s.name)}
	sh, err := spool.New(cfg)
	if err != nil {
		return nil, err
	}
	cfg.Logger.Info("shipping receipts to the ledger in the background", "receipts", receipts)
	ctx, cancel := context.WithCancel(context.Background())
	ship := &shipping{sh: sh, cancel: cancel, done: make(chan error, 1)}
	go func() { ship.done <- sh.Run(ctx) }()
	return ship, nil
}

// close closes the embedded ledger, once every shipper has stopped: its
// anchoring loop makes a last bounded attempt to get the final
// checkpoint cosigned, then the file is closed.
func (s *ledgerSink) close() {
	if s.log == nil {
		return
	}
	if err := s.anchor.finish(); err != nil {
		s.logger.Warn("the embedded ledger's latest checkpoint is not cosigned by every witness; the next proxy started on the ledger anchors it",
			"size", s.log.Size(), "err", err)
	}
	if err := s.log.Close(); err != nil {
		s.logger.Error("closing the embedded ledger", "err", err)
	}
}

// shipping is a running Shipper.
type shipping struct {
	sh     *spool.Shipper
	cancel context.CancelFunc
	done   chan error
}

// stop ends shipping after one bounded final attempt (see spool.Shipper.Run).
func (s *shipping) stop() {
	s.cancel()
	<-s.done // Run has logged what it could not ship
}

// signer loads the embedded ledger's log key and returns it with its
// file. The default key, in the key directory, is made in memory on first
// use, named --ledger-origin or else defaultOrigin, and returned as newKey
// for open to write; nothing is written here.
func (f *ledgerFlags) signer(defaultOrigin string) (s note.Signer, path, newKey string, err error) {
	path = f.key
	if path == "" {
		dir, err := agentkey.Dir()
		if err != nil {
			return nil, "", "", err
		}
		path = filepath.Join(dir, ledgerKeyFile)
		if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
			return newLogKey(path, cmp.Or(f.origin, defaultOrigin))
		}
	}
	s, err = ledger.LoadSigner(path)
	switch {
	case err != nil && f.key != "":
		if errors.Is(err, fs.ErrNotExist) {
			err = hint(err, "make one with bankdoor ledger keygen --out %s --origin ORIGIN, or drop --ledger-key to use the default one in the key directory", path)
		}
		return nil, "", "", fmt.Errorf("--ledger-key: %w", err)
	case err != nil:
		return nil, "", "", fmt.Errorf("the embedded ledger's log key: %w", err)
	case f.origin != "" && s.Name() != f.origin:
		return nil, "", "", hint(fmt.Errorf("--ledger-origin %q is not the name of the log key %s (%q)", f.origin, path, s.Name()),
			"drop --ledger-origin, or give the key made for it with --ledger-key")
	}
	return s, path, "", nil
}

// newLogKey makes a log key named origin, to be written to path.
func newLogKey(path, origin string) (note.Signer, string, string, error) {
	skey, _, err := ledger.GenerateKey(origin)
	if err != nil {
		return nil, "", "", fmt.Errorf("--ledger-origin: %w", err)
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		return nil, "", "", err
	}
	return s, path, skey, nil
}

// writeLogKey writes the log key skey to path, creating its directory.
func writeLogKey(path, skey string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return ledger.WriteKey(path, skey, false)
}

// oneAgent enrolls a single agent key: the stdio proxy's own (none, in
// an export, which only reads).
type oneAgent struct {
	id  string
	pub ed25519.PublicKey
}

func (a oneAgent) Lookup(keyID string) (ed25519.PublicKey, bool) {
	if keyID != a.id {
		return nil, false
	}
	return a.pub, true
}
