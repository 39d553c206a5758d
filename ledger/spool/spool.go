// Package spool ships an agent's receipts from its receipts directory to a
// ledger, exactly once and in order, without ever holding up a deny.
//
// The receipts directory (files NNNNNN.json, see package ledger/receipt)
// is the spool: a receipt is durable there before the agent hears of the
// deny, and it stays there whatever happens to the ledger. A [Shipper]
// copies the directory's chain into the ledger in the background.
//
// # Shipping Protocol
//
// The ledger, not the spool, is the record of what has been shipped; the
// spool keeps no state of its own. A Shipper for key_id K in directory D:
//
//  1. Syncs: asks the ledger for K's head (GetAgentHead, or Log.Head when
//     the ledger is embedded), say seq h with receipt hash H. If h > 0, the
//     file D/FileName(h) must exist and hash to H, or the directory and the
//     ledger hold different chains: shipping stops and says so. The next
//     receipt to ship is h+1; the last one D holds now is l.
//  2. Ships: reads D/FileName(next), next+1, ... up to a batch (64
//     receipts or 1 MiB by default), checks each parses and belongs to K
//     at that seq, and appends the batch (Append RPC). When the ledger
//     answers, the batch is durable there and next moves past it. The
//     receipt writer only ever adds seq l+1, l+2, ...: a file missing at
//     or before l was removed, and shipping stops there and says so.
//  3. If the ledger cannot be reached, or answers with anything but a
//     refusal, the Shipper forgets its position, waits (exponential
//     backoff, capped), and starts again at step 1. A batch the ledger
//     stored before its answer was lost is therefore not sent again; and
//     if it were, the ledger accepts a receipt it already holds without
//     storing it twice. Either way each receipt is in the log once.
//  4. If the ledger refuses a receipt (an [ErrRefused] error: unknown
//     agent key, broken chain, invalid receipt, bad token), resending it
//     would be refused again: the Shipper logs the error once, with what
//     to do, and ships nothing more for this chain until it is restarted.
//
// The ledger refuses any receipt that does not extend K's chain (seq =
// head + 1, prev = hash of the head receipt), so receipts arrive in seq
// order or not at all.
//
// The proxy's recorder calls [Shipper.Notify] after each durable receipt;
// Notify never blocks, and the deny path never waits for the ledger. The
// Shipper also polls the directory, so a missed wake-up costs at most one
// poll interval. When [Shipper.Run]'s context ends it makes one final
// attempt, bounded in time, to ship what is left; anything still unshipped
// stays in the directory and is shipped by the next Shipper.
package spool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bankdoor/bankdoor/ledger/receipt"
)

// Defaults for the zero values of Config.
const (
	DefaultMaxBatch      = 64
	DefaultMaxBatchBytes = 1 << 20
	DefaultPoll          = 5 * time.Second
	DefaultMinBackoff    = 250 * time.Millisecond
	DefaultMaxBackoff    = 15 * time.Second
	DefaultCallTimeout   = 10 * time.Second
	DefaultFinalTimeout  = 5 * time.Second
)

// Config is what a Shipper needs. Dir, KeyID and Ledger are required.
type Config struct {
	Dir    string   // the receipts directory
	KeyID  string   // key_id of the agent key whose chain Dir holds
	Ledger Appender // where the receipts go
	Logger *slog.Logger

	MaxBatch      int           // receipts per Append
	MaxBatchBytes int           // bytes of receipts per Append (one receipt may exceed it)
	Poll          time.Duration // how often to look for receipts without a Notify
	MinBackoff    time.Duration // first wait after a failed attempt
	MaxBackoff    time.Duration // longest wait between attempts
	CallTimeout   time.Duration // bounds each call to the ledger
	FinalTimeout  time.Duration // bounds the final attempt when Run's context ends
}

// A Shipper ships one receipts directory's chain to a ledger; see the
// package documentation. Notify and Shipped are safe for concurrent use
// with everything; Run and Sync take turns.
type Shipper struct {
	cfg    Config
	dir    dir
	log    *slog.Logger
	notify chan struct{}

	shipped atomic.Uint64 // seq of the last receipt the ledger confirmed
	seen    atomic.Uint64 // the highest seq known to be in the directory

	mu       sync.Mutex // one pass at a time; guards the fields below
	synced   bool       // next is the ledger's head + 1
	next     uint64
	lastSeen uint64 // the directory's last seq when synced
	stopped  error  // the refusal that stopped shipping, or nil
	lastErr  string
}

// New returns a Shipper for cfg. It does not touch the ledger or the
// directory until Run or Sync.
func New(cfg Config) (*Shipper, error) {
	if cfg.Dir == "" || cfg.Ledger == nil {
		return nil, errors.New("spool: Config.Dir and Config.Ledger are required")
	}
	if len(cfg.KeyID) != 16 || strings.Trim(cfg.KeyID, "0123456789abcdef") != "" {
		return nil, fmt.Errorf("spool: Config.KeyID %q is not a key_id (16 lower-case hex digits)", cfg.KeyID)
	}
	setDefaults(&cfg)
	return &Shipper{
		cfg:    cfg,
		dir:    dir{path: cfg.Dir, keyID: cfg.KeyID},
		log:    cfg.Logger.With("receipts", cfg.Dir, "key_id", cfg.KeyID),
		notify: make(chan struct{}, 1),
	}, nil
}

func setDefaults(c *Config) {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.Poll, DefaultPoll)
	def(&c.MinBackoff, DefaultMinBackoff)
	def(&c.MaxBackoff, max(DefaultMaxBackoff, c.MinBackoff))
	def(&c.CallTimeout, DefaultCallTimeout)
	def(&c.FinalTimeout, DefaultFinalTimeout)
	if c.MaxBatch <= 0 {
		c.MaxBatch = DefaultMaxBatch
	}
	if c.MaxBatchBytes <= 0 {
		c.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Notify tells the Shipper that a receipt is durable in the directory. It
// never blocks.
func (s *Shipper) Notify() {
	select {
	case s.notify <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// Written tells the Shipper that the receipt seq is durable in the
// directory, and wakes it as Notify does. It never blocks.
func (s *Shipper) Written(seq uint64) {
	raise(&s.seen, seq)
	s.Notify()
}

// Shipped returns the seq of the last receipt the ledger has confirmed
// holding, 0 before the first sync or if it holds none.
func (s *Shipper) Shipped() uint64 { return s.shipped.Load() }

// Backlog returns how many receipts the Shipper knows to be in the
// directory and not yet confirmed by the ledger: those it has read or
// was told of (Written) and, once synced, those the directory held then.
// Receipts written by other processes count once a pass has read them.
func (s *Shipper) Backlog() uint64 {
	seen, shipped := s.seen.Load(), s.shipped.Load()
	if seen <= shipped {
		return 0
	}
	return seen - shipped
}

// raise sets v to n if n is larger.
func raise(v *atomic.Uint64, n uint64) {
	for {
		old := v.Load()
		if n <= old || v.CompareAndSwap(old, n) {
			return
		}
	}
}

// Run ships receipts until ctx is done, waking on Notify and every Poll,
// and retrying with backoff while the ledger is unavailable. When ctx is
// done it makes one final attempt, bounded by FinalTimeout, and returns
// what stopped shipping: nil if everything in the directory was shipped,
// the refusal if the ledger refused a receipt, or the error of the final
// attempt.
func (s *Shipper) Run(ctx context.Context) error {
	b := backoff{min: s.cfg.MinBackoff, max: s.cfg.MaxBackoff}
	timer := time.NewTimer(0) // the first pass starts at once
	defer timer.Stop()
	for {
		notify := s.notify
		if b.failing() {
			notify = nil // a deny does not cut a backoff short
		}
		select {
		case <-ctx.Done():
			return s.final()
		case <-notify:
		case <-timer.C:
		}
		err := s.Sync(ctx)
		switch {
		case errors.Is(err, ErrRefused):
			<-ctx.Done()
			return err
		case err != nil && ctx.Err() == nil:
			timer.Reset(b.fail())
		default:
			b.reset()
			timer.Reset(s.cfg.Poll)
		}
	}
}

// final makes the last attempt of Run.
func (s *Shipper) final() error {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.FinalTimeout)
	defer cancel()
	err := s.Sync(ctx)
	if err == nil || errors.Is(err, ErrRefused) { // a refusal is logged already
		return err
	}
	if last, lerr := s.dir.last(); lerr == nil && last > s.Shipped() {
		s.log.Warn(fmt.Sprintf("receipts seq %d..%d are not in the ledger yet; they stay in the receipts directory and the next proxy started on it ships them",
			s.Shipped()+1, last), "err", err)
	}
	return err
}

// Sync ships every receipt in the directory that the ledger does not hold
// yet, and returns nil once it has, or the first error. After a refusal
// (an error wrapping ErrRefused) every later Sync returns that refusal
// without shipping.
func (s *Shipper) Sync(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped != nil {
		return s.stopped
	}
	err := s.pass(ctx)
	switch {
	case err == nil:
		if s.lastErr != "" { // at the level of the warning it ends
			s.log.Warn("ledger reachable again; the receipts held back are shipped", "shipped", s.Shipped())
			s.lastErr = ""
		}
	case errors.Is(err, ErrRefused):
		s.stopped = err
		s.log.Error("shipping receipts to the ledger STOPPED; receipts are still written to the receipts directory; fix the cause and restart the proxy to ship them",
			"err", err)
	default:
		s.synced = false
		if msg := err.Error(); msg != s.lastErr && ctx.Err() == nil {
			s.log.Warn("cannot ship receipts to the ledger; they stay in the receipts directory; retrying", "err", err)
			s.lastErr = msg
		}
	}
	return err
}

// pass syncs with the ledger if needed, then ships batch after batch
// until the directory holds no more.
func (s *Shipper) pass(ctx context.Context) error {
	if !s.synced {
		if err := s.sync(ctx); err != nil {
			return err
		}
	}
	for {
		batch, err := s.batch()
		if err != nil {
			return err
		}
		if len(batch) == 0 {
			return s.checkGap()
		}
		if err := s.append(ctx, batch); err != nil {
			return err
		}
	}
}

// sync is step 1 of the protocol.
func (s *Shipper) sync(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	h, err := s.cfg.Ledger.Head(cctx, s.cfg.KeyID)
	if err != nil {
		return fmt.Errorf("get the ledger's head for key_id %s: %w", s.cfg.KeyID, err)
	}
	last, err := s.dir.last()
	if err != nil {
		return err
	}
	if err := s.checkHead(h, last); err != nil {
		return err
	}
	s.next, s.lastSeen, s.synced = h.Seq+1, last, true
	s.shipped.Store(h.Seq)
	raise(&s.seen, last)
	s.log.Debug("ledger head", "seq", h.Seq)
	return nil
}

// checkHead checks that the ledger's head is a receipt of the directory,
// whose last seq is last.
func (s *Shipper) checkHead(h Head, last uint64) error {
	name := receipt.FileName(h.Seq)
	if h.Seq > last {
		return refused(fmt.Errorf("the ledger holds key_id %s up to seq %d, but the receipts directory %s ends at seq %d",
			s.cfg.KeyID, h.Seq, s.cfg.Dir, last),
			"receipts were removed from the directory, or another directory is signed with the same key; restore "+name+" and the files before it, or give this key's receipts their own ledger")
	}
	if h.Seq == 0 {
		return nil
	}
	b, err := s.dir.read(h.Seq)
	if errors.Is(err, errMissing) || errors.Is(err, errDamaged) {
		return refused(err, "the ledger's head is "+name+"; restore it")
	} else if err != nil {
		return err
	}
	if receipt.Hash(b) != h.SHA256 {
		return refused(fmt.Errorf("the ledger's receipt seq %d of key_id %s is not %s in %s", h.Seq, s.cfg.KeyID, name, s.cfg.Dir),
			"the directory's chain has forked from the ledger's (a directory restored from a copy, or two proxies with one key): keep the ledger's chain and give this proxy a new agent key and an empty receipts directory")
	}
	return nil
}

// checkGap is called when the next receipt file is not there: that is a
// gap, not the end of the chain, if the directory held a later one when
// the Shipper synced (the writer only ever adds the next seq).
func (s *Shipper) checkGap() error {
	if s.next > s.lastSeen {
		return nil
	}
	return refused(fmt.Errorf("%s is missing from %s, which holds receipts up to seq %d",
		receipt.FileName(s.next), s.cfg.Dir, s.lastSeen), "restore it; verifying the directory names every missing receipt")
}

// batch reads the next receipts to ship: from next on, up to MaxBatch
// files or MaxBatchBytes, stopping at the first file not written yet.
func (s *Shipper) batch() ([][]byte, error) {
	var batch [][]byte
	size := 0
	for seq := s.next; len(batch) < s.cfg.MaxBatch; seq++ {
		b, err := s.dir.read(seq)
		switch {
		case errors.Is(err, errMissing):
			return batch, nil
		case errors.Is(err, errDamaged):
			return nil, refused(err, "shipping cannot go past a damaged receipt")
		case err != nil:
			return nil, err
		}
		if len(batch) > 0 && size+len(b) > s.cfg.MaxBatchBytes {
			break
		}
		batch, size = append(batch, b), size+len(b)
		raise(&s.seen, seq)
	}
	return batch, nil
}

// append is step 2 of the protocol for one batch.
func (s *Shipper) append(ctx context.Context, batch [][]byte) error {
	first, last := s.next, s.next+uint64(len(batch))-1
	cctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	if err := s.cfg.Ledger.Append(cctx, batch); err != nil {
		return fmt.Errorf("append receipts seq %d..%d of key_id %s: %w", first, last, s.cfg.KeyID, err)
	}
	s.next = last + 1
	s.shipped.Store(last)
	s.log.Debug("shipped", "first", first, "last", last)
	return nil
}

// backoff is a capped exponential backoff with full jitter in its upper
// half, so proxies restarted together do not retry in step.
type backoff struct {
	min, max, cur time.Duration
}

func (b *backoff) failing() bool { return b.cur > 0 }
func (b *backoff) reset()        { b.cur = 0 }

// fail returns how long to wait after one more failure.
func (b *backoff) fail() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur = min(2*b.cur, b.max)
	}
	return b.cur/2 + rand.N(b.cur/2+1)
}
