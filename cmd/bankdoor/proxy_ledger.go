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
// embedded one (the default).
type ledgerFlags struct {
	remote          remoteFlags
	db, key, origin string

	client ledgerv1connect.LedgerServiceClient // set by check if remote.url is
}

func (f *ledgerFlags) register(fs *flag.FlagSet) {
	f.remote.register(fs, "ship receipts in the background to the ledger at this URL (bankdoor ledger serve) instead of the embedded ledger")
	fs.StringVar(&f.db, "ledger-db", "", "the embedded ledger's file (default: "+ledgerDBFile+" beside the --receipts directory, so .bankdoor/"+ledgerDBFile+")")
	fs.StringVar(&f.key, "ledger-key", "", "the embedded ledger's log key file (default: "+ledgerKeyFile+" in the key directory, created on first use)")
	fs.StringVar(&f.origin, "ledger-origin", "", "the embedded ledger's checkpoint origin: the log key's name (default for a new key: "+embeddedOriginStart+"<key_id>)")
}

// check reports flags that do not go together or do not parse, and makes
// the remote ledger's client. It has no side effects.
func (f *ledgerFlags) check() error {
	if f.remote.url != "" {
		for _, fl := range []struct{ name, v string }{{"ledger-db", f.db}, {"ledger-key", f.key}, {"ledger-origin", f.origin}} {
			if fl.v != "" {
				return fmt.Errorf("--ledger and --%s do not go together: --ledger ships receipts to a remote ledger, --%s configures the embedded one; give one or the other", fl.name, fl.name)
			}
		}
		var err error
		f.client, err = f.remote.client()
		return err
	}
	if f.remote.ca != "" || f.remote.tokenEnv != "" {
		return errors.New("--ledger-ca and --ledger-token-env are for a remote ledger; give its URL with --ledger")
	}
	return nil
}

// shipping is a running Shipper and the ledger it ships to.
type shipping struct {
	sh     *spool.Shipper
	cancel context.CancelFunc
	done   chan error
	close  func() error // closes the embedded ledger; nil for a remote one
}

// startShipping opens the ledger the flags name and starts shipping the
// receipts directory to it. A remote ledger is not contacted here: it
// may be down; the receipts wait in the directory.
func startShipping(e *env, f *ledgerFlags, receipts string, key ed25519.PrivateKey, logger *slog.Logger) (*shipping, error) {
	pub := key.Public().(ed25519.PublicKey)
	cfg := spool.Config{Dir: receipts, KeyID: agentkey.KeyID(pub)}
	s := &shipping{done: make(chan error, 1)}
	if f.client != nil {
		cfg.Ledger = spool.Remote{Client: f.client, URL: f.remote.url}
		cfg.Logger = logger.With("ledger", f.remote.url)
	} else {
		l, err := f.openEmbedded(e, receipts, pub, logger)
		if err != nil {
			return nil, err
		}
		cfg.Ledger, s.close = spool.Embedded{Log: l}, l.Close
		cfg.Logger = logger.With("ledger", "embedded")
	}
	sh, err := spool.New(cfg)
	if err != nil {
		if s.close != nil {
			s.close()
		}
		return nil, err
	}
	cfg.Logger.Info("shipping receipts to the ledger in the background", "receipts", receipts)
	ctx, cancel := context.WithCancel(context.Background())
	s.sh, s.cancel = sh, cancel
	go func() { s.done <- sh.Run(ctx) }()
	return s, nil
}

// stop ends shipping after one bounded final attempt (see spool.Shipper.Run)
// and closes the embedded ledger.
func (s *shipping) stop() {
	s.cancel()
	<-s.done // Run has logged what it could not ship
	if s.close != nil {
		s.close()
	}
}

// openEmbedded opens the embedded ledger, enrolling only the proxy's own
// agent key.
func (f *ledgerFlags) openEmbedded(e *env, receipts string, pub ed25519.PublicKey, logger *slog.Logger) (*ledger.Log, error) {
	signer, err := f.signer(e, agentkey.KeyID(pub))
	if err != nil {
		return nil, err
	}
	db := f.db
	if db == "" {
		db = filepath.Join(filepath.Dir(filepath.Clean(receipts)), ledgerDBFile)
	}
	l, err := openLedgerDB(db, signer, pub, logger)
	if err != nil {
		abs, _ := filepath.Abs(db)
		return nil, fmt.Errorf("--ledger-db %s: %v (the embedded ledger is signed with --ledger-key, by default %s in the key directory: give the key and --ledger-origin the file was made with, another file with --ledger-db PATH, or a remote ledger with --ledger URL)",
			abs, err, ledgerKeyFile)
	}
	return l, nil
}

func openLedgerDB(db string, signer note.Signer, pub ed25519.PublicKey, logger *slog.Logger) (*ledger.Log, error) {
	if err := os.MkdirAll(filepath.Dir(db), 0o700); err != nil {
		return nil, err
	}
	return ledger.Open(db, ledger.Options{
		Origin: signer.Name(),
		Signer: signer,
		Agents: oneAgent{id: agentkey.KeyID(pub), pub: pub},
		Logger: logger.With("ledger", "embedded"),
	})
}

// signer loads the embedded ledger's log key, creating the default one
// on first use.
func (f *ledgerFlags) signer(e *env, keyID string) (note.Signer, error) {
	path, flagName := f.key, "--ledger-key"
	if path == "" {
		dir, err := agentkey.Dir()
		if err != nil {
			return nil, err
		}
		path, flagName = filepath.Join(dir, ledgerKeyFile), "the embedded ledger's key"
		if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
			if err := f.createKey(e, path, keyID); err != nil {
				return nil, fmt.Errorf("no log key %s and creating one failed: %v (give one with --ledger-key FILE)", path, err)
			}
		}
	}
	s, err := ledger.LoadSigner(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flagName, err)
	}
	if f.origin != "" && s.Name() != f.origin {
		return nil, fmt.Errorf("--ledger-origin %q is not the name of the log key %s (%q); drop --ledger-origin or give the key made for it with --ledger-key",
			f.origin, path, s.Name())
	}
	return s, nil
}

func (f *ledgerFlags) createKey(e *env, path, keyID string) error {
	origin := f.origin
	if origin == "" {
		origin = embeddedOriginStart + keyID
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

// oneAgent enrolls a single agent key: the proxy's own.
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
