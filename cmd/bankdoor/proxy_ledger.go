package main

import (
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
				return fmt.Errorf("--ledger and --%s do not go together: --ledger ships receipts to a remote ledger, --%s configures the embedded one; give one or the other", fl.name, fl.name)
			}
		}
		if len(f.witnesses.urls) > 0 || len(f.witnesses.keys) > 0 {
			return errors.New("--witness and --witness-key anchor the embedded ledger, not a remote --ledger: anchor that ledger where it runs, with bankdoor anchor --ledger URL --log-key VKEY --witness URL --witness-key VKEY or bankdoor ledger serve ... --witness URL --witness-key VKEY")
		}
		var err error
		f.client, err = f.remote.client()
		return err
	}
	if f.remote.ca != "" || f.remote.tokenEnv != "" {
		return errors.New("--ledger-ca and --ledger-token-env are for a remote ledger; give its URL with --ledger")
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

// openSink opens the ledger the flags name. A remote ledger is not
// contacted here: it may be down; the receipts wait in their directory.
// The embedded ledger's file defaults to one beside receipts; it enrolls
// agents, and a log key made on first use is named defaultOrigin.
func (f *ledgerFlags) openSink(e *env, receipts string, agents ledger.Agents, defaultOrigin string, logger *slog.Logger) (*ledgerSink, error) {
	if f.client != nil {
		return &ledgerSink{to: spool.Remote{Client: f.client, URL: f.remote.url}, name: f.remote.url, logger: logger}, nil
	}
	signer, keyPath, err := f.signer(e, defaultOrigin)
	if err != nil {
		return nil, err
	}
	db := f.db
	if db == "" {
		db = filepath.Join(filepath.Dir(filepath.Clean(receipts)), ledgerDBFile)
	}
	logger = logger.With("ledger", "embedded")
	l, err := openLedgerDB(db, signer, agents, logger)
	if err != nil {
		abs, _ := filepath.Abs(db)
		return nil, fmt.Errorf("--ledger-db %s: %v (the embedded ledger is signed with --ledger-key, by default %s in the key directory: give the key and --ledger-origin the file was made with, another file with --ledger-db PATH, or a remote ledger with --ledger URL)",
			abs, err, ledgerKeyFile)
	}
	s := &ledgerSink{to: spool.Embedded{Log: l}, name: "embedded", log: l, logger: logger}
	if s.anchor, err = f.startAnchor(l, keyPath, logger); err != nil {
		l.Close()
		return nil, err
	}
	return s, nil
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

func openLedgerDB(db string, signer note.Signer, agents ledger.Agents, logger *slog.Logger) (*ledger.Log, error) {
	if err := os.MkdirAll(filepath.Dir(db), 0o700); err != nil {
		return nil, err
	}
	return ledger.Open(db, ledger.Options{
		Origin: signer.Name(),
		Signer: signer,
		Agents: agents,
		Logger: logger,
	})
}

// signer loads the embedded ledger's log key and returns it with its
// file, creating the default one on first use, named --ledger-origin or
// else defaultOrigin.
func (f *ledgerFlags) signer(e *env, defaultOrigin string) (note.Signer, string, error) {
	path, flagName := f.key, "--ledger-key"
	if path == "" {
		dir, err := agentkey.Dir()
		if err != nil {
			return nil, "", err
		}
		path, flagName = filepath.Join(dir, ledgerKeyFile), "the embedded ledger's key"
		if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
			if err := f.createKey(e, path, defaultOrigin); err != nil {
				return nil, "", fmt.Errorf("no log key %s and creating one failed: %v (give one with --ledger-key FILE)", path, err)
			}
		}
	}
	s, err := ledger.LoadSigner(path)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", flagName, err)
	}
	if f.origin != "" && s.Name() != f.origin {
		return nil, "", fmt.Errorf("--ledger-origin %q is not the name of the log key %s (%q); drop --ledger-origin or give the key made for it with --ledger-key",
			f.origin, path, s.Name())
	}
	return s, path, nil
}

func (f *ledgerFlags) createKey(e *env, path, defaultOrigin string) error {
	origin := f.origin
	if origin == "" {
		origin = defaultOrigin
	}
	skey, _, err := ledger.GenerateKey(origin)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if err := ledger.WriteKey(path, skey); err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "bankdoor proxy: created log key %s for the embedded ledger (origin %s); its verifier key is in %s\n",
		path, origin, path+ledger.VerifierKeySuffix)
	return nil
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
