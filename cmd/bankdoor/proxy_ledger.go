package main

import (
	"cmp"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"connectrpc.com/connect"
	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/anchor/tlogwitness"
	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/ledger"
	"github.com/bankdoor/bankdoor/ledger/spool"
	"github.com/bankdoor/bankdoor/ledger/station"
	"github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1/ledgerv1connect"
)

// Embedded ledger defaults.
const (
	ledgerKeyFile       = "ledger.key" // in the key directory; + ".vkey"
	ledgerDBFile        = ".ledger.db" // in the receipts directory
	embeddedOriginStart = "bankdoor.local/embedded/"
)

// ledgerFlags are the proxy's ledger flags: a remote ledger, or the
// embedded one (the default), which --witness anchors.
type ledgerFlags struct {
	remote          remoteFlags
	db, key, origin string
	witnesses       witnessFlags

	client ledgerv1connect.LedgerServiceClient // set by check if remote.url is
	// clientOpts are added to the client's options (tracing), if any.
	clientOpts []connect.Option
	anchorTo   []*tlogwitness.Client // set by check: the embedded ledger's witnesses
	// embedded, if set, adds to the embedded ledger's configuration
	// (metrics hooks) before openEvidence opens it.
	embedded func(*station.Embedded)
}

func (f *ledgerFlags) register(fs *flag.FlagSet) {
	f.remote.register(fs, "ship receipts in the background to the ledger at this URL (bankdoor ledger serve) instead of the embedded ledger")
	fs.StringVar(&f.db, "ledger-db", "", "the embedded ledger's file (default: "+ledgerDBFile+" in the --receipts directory, so .bankdoor/receipts/"+ledgerDBFile+")")
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
		f.client, err = f.remote.client(f.clientOpts...)
		return err
	}
	if f.remote.ca != "" || f.remote.tokenEnv != "" {
		return hint(errors.New("--ledger-ca and --ledger-token-env are for a remote ledger"), "give its URL with --ledger URL")
	}
	var err error
	_, f.anchorTo, err = f.witnesses.load("", false) // the log key is checked once it is loaded
	return err
}

// evidence is the station (see package ledger/station) the flags
// configure, opened but not started: the embedded ledger's log key is
// loaded, or made in memory on first use and written by start.
type evidence struct {
	st      *station.Station
	keyPath string // the embedded ledger's log key file
	newKey  string // the log key made on first use, to be written to keyPath
	origin  string
	db      string // the embedded ledger's file
	existed bool   // it existed at open
}

// openEvidence opens the station of the receipts directory, whose chains
// are signed by keys in home, creating nothing. A remote ledger is not
// contacted: it may be down; the receipts wait in their directory. The
// embedded ledger's file defaults to defaultLedgerDB(receipts); a log key
// made on first use is named --ledger-origin or else defaultOrigin.
func (f *ledgerFlags) openEvidence(receipts, home, defaultOrigin string, logger *slog.Logger) (*evidence, error) {
	cfg := station.Config{Receipts: receipts, Chains: station.HomeChains(receipts, home), Logger: logger}
	v := &evidence{}
	if f.client != nil {
		cfg.Remote, cfg.RemoteName = spool.Remote{Client: f.client, URL: f.remote.url}, f.remote.url
		var err error
		v.st, err = station.Open(cfg)
		return v, err
	}
	signer, keyPath, newKey, err := f.signer(defaultOrigin)
	if err != nil {
		return nil, err
	}
	v.keyPath, v.newKey, v.origin = keyPath, newKey, signer.Name()
	if v.db = f.db; v.db == "" {
		v.db = defaultLedgerDB(receipts, logger)
	}
	e := &station.Embedded{Path: v.db, Options: ledger.Options{Origin: signer.Name(), Signer: signer, Logger: logger.With("ledger", "embedded")},
		Witnesses: f.anchorTo, WitnessInterval: f.witnesses.interval}
	if len(f.anchorTo) > 0 {
		var vkey string
		if newKey != "" {
			vkey, e.LogKey, err = logKeyVerifier(newKey)
		} else {
			vkey, e.LogKey, err = logVerifier(keyPath)
		}
		if err != nil {
			return nil, fmt.Errorf("the embedded ledger's key %s: %w", keyPath, err)
		}
		if err := f.witnesses.distinct(vkey, "the embedded ledger's log key "+keyPath); err != nil {
			return nil, err
		}
		for i, w := range f.anchorTo {
			w.Logger = logger
			logger.Info("anchoring the embedded ledger's checkpoints to witness", "witness", w.Name(), "url", f.witnesses.urls[i])
		}
	}
	if f.embedded != nil {
		f.embedded(e)
	}
	cfg.Embedded = e
	if _, err := os.Stat(v.db); err == nil {
		v.existed = true
	} else if cerr := creatable(v.db); cerr != nil || !errors.Is(err, fs.ErrNotExist) {
		return nil, v.dbError(cmp.Or(cerr, err))
	}
	if v.st, err = station.Open(cfg); err != nil {
		err = v.dbError(err)
		if newKey != "" {
			// The ledger file may be another proxy's, made with the log key
			// it wrote since this one found none.
			raced(&err, keyPath)
		}
		return nil, err
	}
	return v, nil
}

// start writes the embedded ledger's log key if it is new, then starts
// the station: the ledger file is created if it is missing.
func (v *evidence) start(e *env) error {
	if v.newKey != "" {
		if err := writeLogKey(v.keyPath, v.newKey); err != nil {
			return hint(fmt.Errorf("creating the embedded ledger's log key: %w", err), "give one with --ledger-key FILE (bankdoor ledger keygen makes one)")
		}
		e.printf("created log key %s for the embedded ledger (origin %s); its verifier key is in %s",
			v.keyPath, v.origin, v.keyPath+ledger.VerifierKeySuffix)
	}
	err := v.st.Start()
	if err != nil && v.db == "" { // a remote ledger: the lock is in the receipts directory
		return hint(err, receiptsHint)
	}
	return v.dbError(err)
}

// raced closes the station if *err is not nil, and replaces *err with
// errStartRace if the log key was made in memory and another process has
// written its file since.
func (v *evidence) raced(err *error) {
	if *err == nil {
		return
	}
	v.st.Close()
	if v.newKey != "" {
		raced(err, v.keyPath)
	}
}

// defaultLedgerDB is the embedded ledger's file of the receipts directory
// receipts: ledgerDBFile inside it, so that two receipts directories never
// share one. If it does not exist yet but ledger.db beside the directory,
// where earlier versions kept it, does, the proxy says so: that log's
// checkpoints may be cosigned, and it is kept only by moving it (or by
// --ledger-db); using it by default would let two directories share it
// again.
func defaultLedgerDB(receipts string, logger *slog.Logger) string {
	db := filepath.Join(receipts, ledgerDBFile)
	legacy := filepath.Join(filepath.Dir(filepath.Clean(receipts)), "ledger.db")
	if _, err := os.Stat(db); errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(legacy); err == nil {
			logger.Warn("an embedded ledger of an earlier bankdoor is beside the receipts directory; this proxy starts a new one inside it. To keep the old log (its checkpoints may be cosigned by witnesses), stop every proxy and move it to the new place, or give it with --ledger-db",
				"old", legacy, "new", db)
		}
	}
	return db
}

// dbError names the embedded ledger's file in err and says what to do.
func (v *evidence) dbError(err error) error {
	if err == nil {
		return nil
	}
	abs, _ := filepath.Abs(v.db)
	err = fmt.Errorf("--ledger-db %s: %w", abs, err)
	switch {
	case errors.Is(err, ledger.ErrOtherLog):
		return hint(err, "the embedded ledger is signed with --ledger-key (by default %s in the key directory): give the log key and --ledger-origin this file was made with, another file with --ledger-db PATH, or a remote ledger with --ledger URL", ledgerKeyFile)
	case v.existed && errors.Is(err, ledger.ErrStorage):
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
