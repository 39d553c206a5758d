package station

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/anchor"
	"github.com/bankdoor/bankdoor/anchor/tlogwitness"
	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/internal/flock"
	"github.com/bankdoor/bankdoor/ledger"
	"github.com/bankdoor/bankdoor/ledger/receipt"
	"github.com/bankdoor/bankdoor/ledger/spool"
)

// Defaults for the zero values of Config.
const (
	DefaultTakeover    = 250 * time.Millisecond
	DefaultPoll        = 500 * time.Millisecond
	DefaultFinalAnchor = 5 * time.Second
	DefaultAnchorRetry = time.Minute
)

// ShipLockName is the lock file in the receipts directory whose holder
// ships to a remote ledger.
const ShipLockName = ".ship.lock"

// A Chain is a directory holding one key's chain of receipts.
type Chain struct {
	Dir string
	Pub ed25519.PublicKey
}

// Config is what a Station needs. Receipts and exactly one of Remote and
// Embedded are required.
type Config struct {
	Receipts string // the receipts directory
	// Chains lists the chains under Receipts that the holder ships besides
	// those this station writes (see HomeChains); nil lists none.
	Chains func() ([]Chain, error)

	Remote     spool.Appender // a remote ledger
	RemoteName string         // for logs: its URL
	Embedded   *Embedded      // or the embedded one

	Logger   *slog.Logger
	Takeover time.Duration // how often a standby tries to become the holder
	Poll     time.Duration // how often the holder looks for receipts written elsewhere and for new chains

	// Spool's settings for the holder's shippers; Dir, KeyID, Ledger,
	// Logger and Poll are set by the Station.
	Spool spool.Config
}

// Embedded is the embedded ledger: a bbolt file and its anchoring.
type Embedded struct {
	Path    string
	Options ledger.Options // Agents and LockWait are set by the Station

	LogKey      note.Verifier // the log key's verifier; required with Witnesses
	Witnesses   []*tlogwitness.Client
	AnchorRetry time.Duration // anchor.Options.RetryInterval; 0: DefaultAnchorRetry
	// WitnessInterval is anchor.Options.Interval: the least time between
	// two add-checkpoint requests to one witness; 0: no budget.
	WitnessInterval time.Duration
	FinalAnchor     time.Duration // bounds the last anchoring at Close; 0: DefaultFinalAnchor
	// OnAnchor is anchor.Options.OnResult.
	OnAnchor func(witness string, size uint64, err error)
}

// A Station is one process's share of a receipts directory's evidence;
// see the package documentation. Its methods are safe for concurrent use.
type Station struct {
	cfg  Config
	log  *slog.Logger
	keys ledger.AgentKeys // the keys the embedded ledger enrolls

	mu      sync.Mutex
	own     map[string]ed25519.PublicKey // chains this station writes: dir -> key
	writers []*receipt.Writer
	held    *holding // nil: standby
	started bool
	closed  bool
	lastErr string // the last takeover failure logged
	scanErr string // the last Chains failure logged
	lapse   *lapse // while a process that ships nothing holds the ledger

	cancel context.CancelFunc
	done   chan struct{} // closed when the background loop has returned
}

// lapse is a standby's record of a lapse: the embedded ledger's file is
// held by a process that does not hold the ship lock, so no station ships
// this receipts directory. first and last are the seqs of the receipts
// this station saw written since (by key_id).
type lapse struct {
	first, last map[string]uint64
}

// holding is what the holder holds.
type holding struct {
	lock  *flock.File // the ship lock
	log   *ledger.Log // the embedded ledger
	loop  *anchor.Loop
	to    spool.Appender
	ships map[string]*shipping // by chain directory
}

// shipping is a running Shipper.
type shipping struct {
	keyID  string
	sh     *spool.Shipper
	cancel context.CancelFunc
	done   chan error
}

// Open checks cfg and, with the embedded ledger, opens its file if it
// exists and no other process holds it, checking that it is the log of
// the configured log key (the error wraps ledger.ErrOtherLog if not). It
// creates nothing but, in an existing receipts directory, the ship lock's
// file.
func Open(cfg Config) (*Station, error) {
	if cfg.Receipts == "" || (cfg.Remote == nil) == (cfg.Embedded == nil) {
		return nil, errors.New("station: Config.Receipts and one of Config.Remote and Config.Embedded are required")
	}
	if e := cfg.Embedded; e != nil && len(e.Witnesses) > 0 && e.LogKey == nil {
		return nil, errors.New("station: Embedded.LogKey is required to anchor to witnesses")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Takeover <= 0 {
		cfg.Takeover = DefaultTakeover
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	s := &Station{cfg: cfg, log: cfg.Logger, own: map[string]ed25519.PublicKey{}, done: make(chan struct{})}
	if e := cfg.Embedded; e != nil {
		if _, err := os.Lstat(e.Path); err == nil {
			if err := s.openExisting(); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

// openExisting opens the embedded ledger's existing file to check it, and
// holds it if it can. Without the receipts directory there is no ship lock
// to take (and nothing is created): the file is checked and closed again,
// and Start holds it.
func (s *Station) openExisting() error {
	if fi, err := os.Stat(s.cfg.Receipts); err != nil || !fi.IsDir() {
		l, err := s.openLedger()
		if l != nil {
			l.Close()
		}
		if err != nil && !errors.Is(err, ledger.ErrLocked) {
			return err
		}
		return nil
	}
	h, err := s.holdEmbedded()
	if err != nil && !errors.Is(err, errHeldElsewhere) && !errors.Is(err, errLapse) {
		return err
	}
	s.held = h
	return nil
}

// openLedger opens the embedded ledger without waiting for its lock.
func (s *Station) openLedger() (*ledger.Log, error) {
	e := s.cfg.Embedded
	opts := e.Options
	opts.Agents, opts.LockWait = &s.keys, -1
	return ledger.Open(e.Path, opts)
}

// Chain opens dir, creating it if need be, for writing the chain of key
// (see receipt.OpenWriter), and returns its writer and the function to
// call after each receipt it writes. The writer is closed by Close. If the
// station holds the ledger, the chain is shipped from now on.
func (s *Station) Chain(dir string, key ed25519.PrivateKey) (w *receipt.Writer, written func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, errors.New("station: closed")
	}
	if w, err = receipt.OpenWriter(dir, key); err != nil {
		return nil, nil, err
	}
	pub := key.Public().(ed25519.PublicKey)
	dir = filepath.Clean(dir)
	s.writers = append(s.writers, w)
	s.own[dir] = pub
	s.keys.Enroll(pub)
	if s.held != nil && s.started {
		s.ship(Chain{dir, pub})
	}
	return w, func() { s.notify(dir, w.Seq()) }, nil
}

// notify tells the shipper of dir, if this station holds the ledger,
// that receipt seq is durable.
func (s *Station) notify(dir string, seq uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.lapse; l != nil {
		k := agentkey.KeyID(s.own[dir])
		if l.first[k] == 0 {
			l.first[k] = seq
		}
		l.last[k] = max(l.last[k], seq)
	}
	if s.held != nil {
		if sh := s.held.ships[dir]; sh != nil {
			sh.sh.Written(seq)
		}
	}
}

// Backlog returns, while this station holds the ledger, the receipts of
// each chain it ships (by key_id) not yet in the ledger (see
// spool.Shipper.Backlog); during a lapse (see Lapsed), the receipts of its
// own chains written since it began, as far as this station saw them (a
// lower bound); nil while another station holds the ledger.
func (s *Station) Backlog() map[string]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.lapse; l != nil {
		b := make(map[string]uint64, len(l.first))
		for k, first := range l.first {
			b[k] = l.last[k] - first + 1
		}
		return b
	}
	if s.held == nil {
		return nil
	}
	b := make(map[string]uint64, len(s.held.ships))
	for _, p := range s.held.ships {
		b[p.keyID] += p.sh.Backlog()
	}
	return b
}

// Ledger returns the embedded ledger while this station holds it, else nil.
func (s *Station) Ledger() *ledger.Log {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == nil {
		return nil
	}
	return s.held.log
}

// Start creates the embedded ledger's file if it is missing (and its
// directory), or with a remote ledger the receipts directory, and holds
// the ledger if no other process does, or stands by.
// It fails only if this station cannot hold the ledger for a reason other
// than another holder: the ledger file is another log's, or damaged.
func (s *Station) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.closed {
		return errors.New("station: Start called twice or after Close")
	}
	var err error
	if s.held == nil {
		var h *holding
		h, err = s.tryHold()
		if err != nil && !errors.Is(err, errHeldElsewhere) && !errors.Is(err, errLapse) {
			return err
		}
		s.held = h
	}
	s.started = true
	switch {
	case s.held != nil:
		s.hold()
	case errors.Is(err, errLapse):
		s.lapsed(err)
	default:
		s.log.Info("another proxy holds the ledger and ships this receipts directory; this one writes receipts and takes over when it stops",
			"receipts", s.cfg.Receipts)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go s.run(ctx)
	return nil
}

// Errors of tryHold: another station holds the ledger (it holds the ship
// lock), or a process that is no station of this receipts directory holds
// the embedded ledger's file (see lapse).
var (
	errHeldElsewhere = errors.New("another process holds the ledger")
	errLapse         = errors.New("a process that ships nothing holds the ledger file")
)

// tryHold takes what makes this station the holder, without waiting.
func (s *Station) tryHold() (*holding, error) {
	if s.cfg.Remote != nil {
		// The lock lives in the receipts directory, which a gateway
		// creates only at its first agent's first session.
		if err := os.MkdirAll(s.cfg.Receipts, 0o700); err != nil {
			return nil, fmt.Errorf("create the receipts directory: %w", err)
		}
		f, err := flock.TryLock(filepath.Join(s.cfg.Receipts, ShipLockName))
		if errors.Is(err, flock.ErrLocked) {
			return nil, errHeldElsewhere
		} else if err != nil {
			return nil, err
		}
		return &holding{lock: f, to: s.cfg.Remote}, nil
	}
	if err := os.MkdirAll(s.cfg.Receipts, 0o700); err != nil {
		return nil, fmt.Errorf("create the receipts directory: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(s.cfg.Embedded.Path), 0o700); err != nil {
		return nil, fmt.Errorf("create the embedded ledger's directory: %w", err)
	}
	return s.holdEmbedded()
}

// holdEmbedded takes the ship lock, then the embedded ledger's file,
// without waiting. A holder takes the ship lock before the file and
// releases it after (Close), so a file held while the ship lock is free
// is held by a process that ships nothing here: errLapse.
func (s *Station) holdEmbedded() (*holding, error) {
	f, err := flock.TryLock(filepath.Join(s.cfg.Receipts, ShipLockName))
	if errors.Is(err, flock.ErrLocked) {
		return nil, errHeldElsewhere
	} else if err != nil {
		return nil, err
	}
	l, err := s.openLedger()
	if err != nil {
		f.Close()
		if errors.Is(err, ledger.ErrLocked) {
			return nil, fmt.Errorf("%w: %w", errLapse, err)
		}
		return nil, err
	}
	return &holding{lock: f, log: l, to: spool.Embedded{Log: l}}, nil
}

// hold starts shipping every chain and the anchoring loop. s.mu is held.
func (s *Station) hold() {
	h := s.held
	h.ships = map[string]*shipping{}
	s.rescan()
	for dir, pub := range s.own {
		s.ship(Chain{dir, pub})
	}
	if e := s.cfg.Embedded; e != nil {
		var err error
		h.loop, err = anchor.StartLoop(anchor.Options{Log: h.log, LogKey: e.LogKey, Store: h.log.CosignatureStore(),
			Witnesses: e.Witnesses, RetryInterval: orDefault(e.AnchorRetry, DefaultAnchorRetry), Interval: e.WitnessInterval, Logger: s.log, OnResult: e.OnAnchor}, h.log.Watch)
		if err != nil { // Witnesses with one name twice: the caller checks that
			s.log.Error("the embedded ledger's checkpoints are not anchored", "err", err)
		}
	}
	s.log.Info("holding the ledger: shipping every chain of the receipts directory", "receipts", s.cfg.Receipts, "ledger", s.ledgerName())
}

func (s *Station) ledgerName() string {
	if s.cfg.Embedded != nil {
		return s.cfg.Embedded.Path
	}
	return s.cfg.RemoteName
}

// rescan ships the chains Config.Chains lists that are not shipped yet.
// s.mu is held.
func (s *Station) rescan() {
	if s.cfg.Chains == nil {
		return
	}
	chains, err := s.cfg.Chains()
	if err == nil {
		s.scanErr = ""
	} else if msg := err.Error(); msg != s.scanErr {
		s.scanErr = msg
		s.log.Warn("cannot list the chains of the receipts directory; shipping those already found", "receipts", s.cfg.Receipts, "err", err)
	}
	for _, c := range chains {
		s.keys.Enroll(c.Pub)
		s.ship(c)
	}
}

// ship starts shipping chain c unless it is shipped already. s.mu is held.
func (s *Station) ship(c Chain) {
	dir := filepath.Clean(c.Dir)
	h := s.held
	if h.ships[dir] != nil {
		return
	}
	cfg := s.cfg.Spool
	cfg.Dir, cfg.KeyID, cfg.Ledger, cfg.Poll = dir, agentkey.KeyID(c.Pub), h.to, s.cfg.Poll
	cfg.Logger = s.log.With("ledger", s.ledgerName())
	sh, err := spool.New(cfg)
	if err != nil { // the Config is complete: cannot happen
		s.log.Error("cannot ship a chain", "receipts", dir, "err", err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &shipping{keyID: cfg.KeyID, sh: sh, cancel: cancel, done: make(chan error, 1)}
	go func() { p.done <- sh.Run(ctx) }()
	h.ships[dir] = p
}

// run is the background loop: a standby tries to take over every
// Takeover; the holder looks for new chains every Poll.
func (s *Station) run(ctx context.Context) {
	defer close(s.done)
	for {
		s.mu.Lock()
		wait := s.cfg.Poll
		if s.held == nil {
			wait = s.cfg.Takeover
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		s.mu.Lock()
		if s.held != nil {
			s.rescan()
		} else {
			s.takeOver()
		}
		s.mu.Unlock()
	}
}

// lapsed logs, once per lapse, that a process that ships nothing holds
// the ledger file (err names it and its holder), and starts counting the
// receipts written. s.mu is held.
func (s *Station) lapsed(err error) {
	if s.lapse != nil {
		return
	}
	s.lapse = &lapse{first: map[string]uint64{}, last: map[string]uint64{}}
	s.log.Error("a process that is no proxy of this receipts directory holds the ledger file and ships nothing: no receipt is shipped or anchored until it lets go; this proxy writes receipts and takes over then",
		"receipts", s.cfg.Receipts, "err", err)
}

// takeOver tries once to become the holder. s.mu is held.
func (s *Station) takeOver() {
	h, err := s.tryHold()
	if s.lapse != nil && !errors.Is(err, errLapse) {
		s.lapse = nil
		s.log.Warn("the process that held the ledger file let go", "receipts", s.cfg.Receipts)
	}
	switch {
	case errors.Is(err, errLapse):
		s.lapsed(err)
		return
	case errors.Is(err, errHeldElsewhere):
		return
	case err != nil:
		if msg := err.Error(); msg != s.lastErr {
			s.log.Error("cannot take over the ledger; this proxy writes receipts only and tries again", "err", err)
			s.lastErr = msg
		}
		return
	}
	s.lastErr = ""
	s.held = h
	s.log.Info("took over the ledger from a proxy that stopped")
	s.hold()
}

// Lapsed reports whether this station finds the embedded ledger's file
// held by a process that is no station of its receipts directory, so that
// nothing is shipped or anchored (a lapse; it is logged once).
func (s *Station) Lapsed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lapse != nil
}

// Holding reports whether this station is the holder.
func (s *Station) Holding() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held != nil && s.started
}

// Close stops the station in the order the package documentation gives
// and releases the ledger. It returns what kept the holder from shipping
// every receipt or anchoring the last checkpoint; everything left is
// shipped and anchored by the next holder.
func (s *Station) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	var errs []error
	for _, w := range s.writers { // 1
		errs = append(errs, w.Close())
	}
	s.mu.Unlock()
	if s.cancel != nil { // 2
		s.cancel()
		<-s.done
	}
	s.mu.Lock()
	if s.held == nil && s.started {
		// 2: a standby's last try, so that the last proxy to stop ships
		// what the others wrote since the holder stopped.
		if h, err := s.tryHold(); err == nil {
			s.held = h
			s.hold()
		}
	}
	h := s.held
	if h != nil && h.ships != nil {
		s.rescan() // 3: the chains started elsewhere since the last Poll
	}
	s.held = nil
	s.mu.Unlock()
	if h == nil {
		return errors.Join(errs...)
	}
	var wg sync.WaitGroup // 3
	shipErrs := make([]error, 0, len(h.ships))
	var emu sync.Mutex
	for _, p := range h.ships {
		wg.Go(func() {
			p.cancel()
			if err := <-p.done; err != nil {
				emu.Lock()
				shipErrs = append(shipErrs, err)
				emu.Unlock()
			}
		})
	}
	wg.Wait()
	errs = append(errs, shipErrs...)
	if e := s.cfg.Embedded; h.loop != nil { // 4
		if err := h.loop.Finish(orDefault(e.FinalAnchor, DefaultFinalAnchor)); err != nil {
			s.log.Warn("the embedded ledger's latest checkpoint is not cosigned by every witness; the next proxy to hold the ledger anchors it",
				"size", h.log.Size(), "err", err)
			errs = append(errs, fmt.Errorf("anchoring: %w", err))
		}
	}
	if h.log != nil { // 5
		errs = append(errs, h.log.Close())
	}
	if h.lock != nil {
		errs = append(errs, h.lock.Close())
	}
	return errors.Join(errs...)
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
