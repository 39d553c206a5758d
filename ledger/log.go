package ledger

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/ledger/internal/store"
)

// Error kinds. Every error the Log returns wraps exactly one of them
// (ErrUnavailable may come with ErrStorage), so the RPC edge can map it to
// a Connect code with errors.Is. The one exception is the context error
// of Append or Head when ctx ends first: it wraps ctx.Err().
var (
	ErrInvalid    = errors.New("invalid receipt")                           // malformed, oversized, not canonical, bad signature -> InvalidArgument
	ErrUnknownKey = errors.New("agent key is not enrolled")                 // -> PermissionDenied
	ErrChain      = errors.New("receipt does not extend the agent's chain") // -> FailedPrecondition
	ErrNotFound   = errors.New("not found")                                 // -> NotFound
	ErrRange      = errors.New("out of range")                              // -> OutOfRange / InvalidArgument
	ErrClosed     = errors.New("ledger is closed")                          // -> Unavailable
	ErrStorage    = errors.New("ledger storage failed")                     // disk or file trouble; Fsck says more -> Internal
	// ErrUnavailable: the PostgreSQL database could not be reached or the
	// connection was lost; trying again later may succeed. It may come
	// with ErrStorage. An Append that fails with it may have been
	// committed: sending the receipts again tells. -> Unavailable
	ErrUnavailable = store.ErrUnavailable
)

// Errors of Open (and, ErrLocked, of Fsck) besides ErrStorage.
var (
	ErrOtherLog = errors.New("the ledger file is another log's") // made with another origin or log key
	ErrLocked   = store.ErrLocked                                // another process has the file open
)

// DefaultMaxBatch is the number of receipts one group commit holds when
// Options.MaxBatch is 0.
const DefaultMaxBatch = 4096

// MaxEntries is the most receipts one Entries call returns, and the most
// entries one GetEntries RPC returns (the proto's documented 1000).
const MaxEntries = 1000

// Agents resolves a receipt key_id to an enrolled agent's public key. It
// must be safe for concurrent use.
type Agents interface {
	Lookup(keyID string) (ed25519.PublicKey, bool)
}

// AgentKeys is an Agents that holds the keys enrolled with Enroll, as
// the embedded ledger does for the chains of its receipts directory. It
// is safe for concurrent use; the zero AgentKeys is empty.
type AgentKeys struct {
	mu   sync.Mutex
	keys map[string]ed25519.PublicKey
}

// Enroll adds pub under its key id.
func (k *AgentKeys) Enroll(pub ed25519.PublicKey) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.keys == nil {
		k.keys = map[string]ed25519.PublicKey{}
	}
	k.keys[agentkey.KeyID(pub)] = pub
}

// Lookup returns the key enrolled under keyID.
func (k *AgentKeys) Lookup(keyID string) (ed25519.PublicKey, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	pub, ok := k.keys[keyID]
	return pub, ok
}

// Options configure a Log.
type Options struct {
	Origin   string       // checkpoint origin line; must match Signer's name
	Signer   note.Signer  // signs checkpoints (Ed25519 note key)
	Agents   Agents       // enrolled agents; Append refuses others
	MaxBatch int          // receipts per group commit; 0 means DefaultMaxBatch. Also the largest Append request.
	Logger   *slog.Logger // commit failures are logged here; nil discards
	// OnCommit, if set, is called by the committer after each commit that
	// added receipts, once they are durable and the checkpoint covering
	// them is published, before the Append calls are answered. It must
	// return quickly and must not modify the Commit's entries.
	OnCommit func(Commit)
	// LockWait is how long Open waits for another process to close the
	// file: 0 means about a second, a negative value not at all.
	LockWait time.Duration
	// DBPassword is the password of a PostgreSQL database (see Open);
	// empty leaves it to PostgreSQL's usual sources (PGPASSWORD,
	// ~/.pgpass, or the URL).
	DBPassword string
}

// A Commit is one durable transaction of the committer (see
// Options.OnCommit).
type Commit struct {
	First   uint64        // the leaf index of Entries[0]
	Entries [][]byte      // the receipts it added, in leaf order
	Took    time.Duration // from the start of the transaction until it was durable
}

// Head is the last receipt the log holds for one agent key.
type Head struct {
	Seq    uint64
	SHA256 [32]byte // SHA-256 of the receipt file
	Index  uint64   // its leaf index
}

// Log is an append-only Merkle log of receipts in one bbolt file or
// PostgreSQL database. Its
// methods are safe for concurrent use. All writes go through one committer
// goroutine that groups concurrent Append requests into one durable
// transaction and signs one checkpoint per transaction.
type Log struct {
	store    store.Store
	path     string
	opts     Options
	logger   *slog.Logger
	maxBatch int

	// closeMu orders Append's send on reqs before Close's close(reqs).
	closeMu sync.RWMutex
	closed  bool
	reqs    chan *request
	done    chan struct{} // closed when the committer has returned
	kick    chan struct{} // asks the committer to refresh now (see awaitSize)

	// mu guards the published checkpoint and the channel Watch waits on.
	mu       sync.Mutex
	cp       published
	changed  chan struct{} // closed and replaced on each new checkpoint
	cosigned chan struct{} // closed and replaced on each stored cosignature
	stopped  bool          // set by Close once the last checkpoint is published

	// Owned by the committer goroutine after Open.
	rng        *compact.Range
	size       uint64
	index      *leafIndexer // its pending leaves are shared with readers
	indexLag   int
	refreshErr string // refresh's last failure, "" once it works

	stats commitStats
}

// commitStats counts the committer's work, for Stats.
type commitStats struct {
	commits, receipts atomic.Uint64
	prepare, total    atomic.Int64 // nanoseconds
}

// Stats describes the committer's work since Open.
type Stats struct {
	// Commits is the number of durable transactions that added receipts,
	// each with one signed checkpoint (and, with bbolt, two fdatasyncs:
	// the pages, then the meta page).
	Commits uint64
	// Receipts is the number of receipts they added.
	Receipts uint64
	// Prepare is the time spent checking and writing the batches inside
	// their transactions; Total adds the commits themselves (writing the
	// pages out and waiting for the disk).
	Prepare, Total time.Duration
}

// Stats returns the committer's counts since Open. Receipts/Commits is
// the mean batch size.
func (l *Log) Stats() Stats {
	return Stats{Commits: l.stats.commits.Load(), Receipts: l.stats.receipts.Load(),
		Prepare: time.Duration(l.stats.prepare.Load()), Total: time.Duration(l.stats.total.Load())}
}

// published is a signed checkpoint and the size it commits to.
type published struct {
	note []byte
	size uint64
	at   time.Time // when it was signed, or loaded by Open
}

var hasher = rfc6962.DefaultHasher

func rangeFactory() *compact.RangeFactory {
	return &compact.RangeFactory{Hash: hasher.HashChildren}
}

// Open opens or creates the log in db: a bbolt file's path, or a
// PostgreSQL database's postgres:// or postgresql:// URL (see the package
// doc), whose password is Options.DBPassword. It refuses a log made with
// a different origin or log key (ErrOtherLog), a store a Copy did not
// finish (ErrIncompleteCopy), one of an unknown storage format version,
// and one whose stored nodes do not match its checkpoint (ErrStorage;
// run Fsck to find out why). If another process has the
// bbolt file open, Open fails after Options.LockWait (ErrLocked).
func Open(db string, opts Options) (*Log, error) {
	return openPath(db, opts, defaultIndexLag)
}

// openPath is Open with the leaf index's lag (see leafIndexer).
func openPath(db string, opts Options, indexLag int) (*Log, error) {
	if err := checkOptions(opts); err != nil {
		return nil, err
	}
	s, name, err := openStore(db, opts, false)
	if err != nil {
		return nil, err
	}
	l, err := open(s, name, opts, indexLag)
	if err != nil {
		s.Close()
		return nil, err
	}
	return l, nil
}

// openTimeout bounds connecting to a PostgreSQL database and preparing
// its schema.
const openTimeout = time.Minute

// openStore opens db's store and returns the name messages give it: the
// path, or the URL without a password.
func openStore(db string, opts Options, readOnly bool) (store.Store, string, error) {
	if store.IsPostgresURL(db) {
		ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
		defer cancel()
		s, err := store.OpenPostgres(ctx, db, opts.DBPassword, readOnly)
		if err != nil {
			return nil, "", fmt.Errorf("%w: %w", ErrStorage, err)
		}
		return s, s.Name(), nil
	}
	var s *store.Bolt
	var err error
	if readOnly {
		s, err = store.OpenBolt(db, true)
	} else {
		s, err = store.OpenBoltWait(db, false, cmp.Or(opts.LockWait, store.DefaultLockWait))
	}
	if errors.Is(err, ErrLocked) {
		return nil, "", err
	} else if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrStorage, err)
	}
	return s, db, nil
}

func checkOptions(opts Options) error {
	switch {
	case opts.Signer == nil:
		return errors.New("ledger: Options.Signer is nil; load the log key with LoadSigner")
	case opts.Agents == nil:
		return errors.New("ledger: Options.Agents is nil; give the enrolled agent keys")
	case opts.Origin == "":
		return errors.New("ledger: Options.Origin is empty; set it to the log key's name")
	case opts.Origin != opts.Signer.Name():
		return fmt.Errorf("ledger: origin %q is not the log key's name %q", opts.Origin, opts.Signer.Name())
	case opts.MaxBatch < 0:
		return fmt.Errorf("ledger: Options.MaxBatch is %d; want 0 (default %d) or more", opts.MaxBatch, DefaultMaxBatch)
	}
	return nil
}

// open prepares the store and starts the committer.
func open(s store.Store, path string, opts Options, indexLag int) (*Log, error) {
	l := &Log{
		indexLag: indexLag,
		store:    s,
		path:     path,
		opts:     opts,
		logger:   opts.Logger,
		maxBatch: opts.MaxBatch,
		reqs:     make(chan *request, 256),
		done:     make(chan struct{}),
		changed:  make(chan struct{}),
		cosigned: make(chan struct{}),
		kick:     make(chan struct{}, 1),
	}
	if l.logger == nil {
		l.logger = slog.New(slog.DiscardHandler)
	}
	if l.maxBatch == 0 {
		l.maxBatch = DefaultMaxBatch
	}
	if err := s.Update(l.load); err != nil {
		return nil, err
	}
	go l.commitLoop()
	return l, nil
}

// load initialises an empty store, or checks an existing one and reads
// its tree state.
func (l *Log) load(tx store.Tx) error {
	if err := checkCopied(tx); err != nil { // before create takes it for an empty store
		return fmt.Errorf("%s: %w", l.path, err)
	}
	version, err := tx.Meta(store.MetaVersion)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrStorage, l.path, err)
	}
	if version == nil {
		return l.create(tx)
	}
	if string(version) != store.Version {
		return fmt.Errorf("%w: %s: storage format version is %q; this bankdoor reads only version %q",
			ErrStorage, l.path, version, store.Version)
	}
	origin, err := tx.Meta(store.MetaOrigin)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrStorage, l.path, err)
	}
	st, err := readState(tx)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrStorage, l.path, err)
	}
	if string(origin) != l.opts.Origin || !signedBy(st.note, l.opts.Signer.Name(), l.opts.Signer.KeyHash()) {
		return fmt.Errorf("%w: %s holds the log of key %s, not of this log key %s",
			ErrOtherLog, l.path, logKeyOf(st.note, string(origin)), keyName(l.opts.Signer.Name(), l.opts.Signer.KeyHash()))
	}
	if l.index, err = loadLeafIndex(tx, st.size, l.indexLag, l.store.Shared()); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrStorage, l.path, err)
	}
	l.rng, l.size, l.cp = st.rng, st.size, published{note: st.note, size: st.size, at: time.Now()}
	return nil
}

// create writes the meta of a new, empty log and its first checkpoint.
func (l *Log) create(tx store.Tx) error {
	cp, err := signCheckpoint(l.opts.Signer, l.opts.Origin, 0, hasher.EmptyRoot())
	if err != nil {
		return err
	}
	for _, kv := range []struct {
		k string
		v []byte
	}{
		{store.MetaVersion, []byte(store.Version)},
		{store.MetaOrigin, []byte(l.opts.Origin)},
		{store.MetaSize, store.IndexKey(0)},
		{store.MetaCheckpoint, cp},
		{store.MetaLeavesFrom, store.IndexKey(0)},
	} {
		if err := tx.SetMeta(kv.k, kv.v); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrStorage, l.path, err)
		}
	}
	l.rng, l.size, l.cp = rangeFactory().NewEmptyRange(0), 0, published{note: cp, size: 0, at: time.Now()}
	l.index = &leafIndexer{pending: newPendingLeaves(), lag: l.indexLag, atOnce: l.store.Shared()}
	return nil
}

// Close waits for in-flight batches, then closes the file. Appends after
// Close fail with ErrClosed; Watch channels are closed.
func (l *Log) Close() error {
	l.closeMu.Lock()
	if l.closed {
		l.closeMu.Unlock()
		return nil
	}
	l.closed = true
	close(l.reqs)
	l.closeMu.Unlock()
	<-l.done
	l.mu.Lock()
	l.stopped = true
	close(l.changed)
	close(l.cosigned)
	l.mu.Unlock()
	return l.store.Close()
}

// Checkpoint returns the latest signed checkpoint note.
func (l *Log) Checkpoint() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]byte(nil), l.cp.note...)
}

// Size returns the size of the latest checkpoint.
func (l *Log) Size() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cp.size
}

// CheckpointTime returns when the latest checkpoint was signed, or, if
// none was signed since Open, when Open loaded it (a checkpoint holds no
// time of its own).
func (l *Log) CheckpointTime() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cp.at
}

// publish makes cp the latest checkpoint and wakes the watchers.
func (l *Log) publish(cp published) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cp = cp
	close(l.changed)
	l.changed = make(chan struct{})
}

// Head returns the agent's head; ok is false if the log has none. The
// head Head returns is covered by the latest checkpoint (Checkpoint,
// Size): a head stored by a commit whose checkpoint is not published yet
// (this server's commit in flight, or another server's on a shared
// database, which makes the committer catch up at once) is returned once
// it is, so that a caller who sees its receipts in the log can prove them
// against the log's checkpoint and get that checkpoint cosigned. If ctx
// ends first, Head returns ctx's error.
func (l *Log) Head(ctx context.Context, keyID string) (h Head, ok bool, err error) {
	err = l.view(func(tx store.Tx) error {
		sh, found, err := tx.Head(keyID)
		h, ok = Head(sh), found
		return err
	})
	if err != nil || !ok {
		return h, ok, err
	}
	if err := l.awaitSize(ctx, h.Index+1); err != nil {
		return Head{}, false, fmt.Errorf("the head of key_id %s (seq %d, index %d) is stored but not covered by a checkpoint yet: %w",
			keyID, h.Seq, h.Index, err)
	}
	return h, true, nil
}

// awaitSize returns once the latest checkpoint's size is at least size,
// or ctx's error, or ErrClosed once the log is closed.
func (l *Log) awaitSize(ctx context.Context, size uint64) error {
	for {
		l.mu.Lock()
		cur, changed, stopped := l.cp.size, l.changed, l.stopped
		l.mu.Unlock()
		switch {
		case cur >= size:
			return nil
		case stopped:
			return ErrClosed
		}
		if l.store.Shared() { // another server's commit: refresh now
			select {
			case l.kick <- struct{}{}:
			default:
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// view runs fn on a snapshot, mapping store failures to ErrStorage.
func (l *Log) view(fn func(store.Tx) error) error { return l.storageErr(l.store.View(fn)) }

// read runs fn with store.Store.Read (no snapshot: for what the published
// checkpoint covers, which no commit changes), mapping store failures to
// ErrStorage.
func (l *Log) read(fn func(store.Tx) error) error { return l.storageErr(l.store.Read(fn)) }

// storageErr wraps a store failure that is not of a kind yet in
// ErrStorage.
func (l *Log) storageErr(err error) error {
	if err != nil && !isKind(err) {
		return fmt.Errorf("%w: %s: %w", ErrStorage, l.path, err)
	}
	return err
}

// isKind reports whether err already wraps one of the error kinds.
func isKind(err error) bool {
	for _, k := range []error{ErrInvalid, ErrUnknownKey, ErrChain, ErrNotFound, ErrRange, ErrClosed, ErrStorage, ErrUnavailable} {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}

// Watch returns a channel that receives the latest checkpoint, then every
// new one, until ctx is done or the log is closed; then it is closed. A
// slow reader skips to the newest: the channel holds at most one note, and
// the committer never waits for a reader.
func (l *Log) Watch(ctx context.Context) <-chan []byte {
	out := make(chan []byte, 1)
	go l.watch(ctx, out)
	return out
}

func (l *Log) watch(ctx context.Context, out chan []byte) {
	defer close(out)
	var last []byte
	for {
		l.mu.Lock()
		cp, changed, stopped := l.cp.note, l.changed, l.stopped
		l.mu.Unlock()
		if string(cp) != string(last) {
			select { // drop the unread older note, if any
			case <-out:
			default:
			}
			out <- append([]byte(nil), cp...) // never blocks: this goroutine is the only sender
			last = cp
		}
		if stopped {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}
