// Package anchor gets the ledger's checkpoints cosigned by independent
// witnesses, so that the log cannot later drop its newest entries (tail
// truncation), roll back, or show different histories to different readers
// without a witness's signature on the record contradicting it.
//
// For each new checkpoint and each configured witness, an Anchorer sends the
// C2SP tlog-witness add-checkpoint request (https://c2sp.org/tlog-witness,
// package anchor/tlogwitness): the size the witness last cosigned, the log's
// RFC 6962 consistency proof from that size, and the checkpoint signed by the
// log alone. It checks the cosignature that comes back against the witness's
// key over that exact checkpoint (https://c2sp.org/tlog-cosignature, package
// anchor/cosignature), stores it, and remembers the size. cosignature.Cosigned
// returns the checkpoint with the log's signature and every stored
// cosignature for its size: the note the ledger serves.
//
// A 409 answer means the witness last cosigned another size: the Anchorer
// fetches a proof from that size and resends, once. A witness that has
// cosigned a larger size than the log now has, or that refuses the log's
// consistency proof or root hash (422), is reported as ErrPossibleRollback and
// never retried for that checkpoint. Network errors, 429 and 5xx answers are
// retried with bounded backoff by the client, then by Run after RetryInterval.
//
// # Anchoring budget
//
// A witness serves many logs and admits each at a declared rate; the public
// witness network rate-limits or drops a log that sends more. With
// Options.Interval, the Anchorer keeps at least that long between the
// add-checkpoint requests it starts to one witness (the resend after a 409
// answer completes the same request and follows at once). Run never queues
// checkpoints: when a witness's interval ends it is sent the log's latest
// checkpoint, if that one is not cosigned yet, so the newest entry is
// covered at most one interval (plus the witness's answer) after the log
// stops growing, and a witness is sent at most one request per interval
// however fast the log grows. Each request is one attempt (the clients'
// Backoff is not used, so that no retry adds a request inside the
// interval; a witness answering 429 is asking for less): a witness that
// failed is tried again when its interval ends.
package anchor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/bankdoor/bankdoor/anchor/cosignature"
	"github.com/bankdoor/bankdoor/anchor/tlogwitness"
	"github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"
)

// ErrPossibleRollback means a witness holds evidence that the log lost
// entries or forked: it cosigned a larger tree than the log now has, or it
// refuses the log's tree as inconsistent with the one it cosigned. Retrying
// cannot fix this; a person must find out what happened to the log.
var ErrPossibleRollback = errors.New("possible rollback or fork of the log")

// ErrStale means a witness has cosigned a larger tree than the checkpoint
// given, and the log has since grown at least as large: another anchor (or
// an earlier round) was quicker. Anchor the log's latest checkpoint instead.
var ErrStale = errors.New("checkpoint is older than one the witness already cosigned")

// ErrInterval means a witness was not sent a checkpoint because its
// anchoring interval (Options.Interval) would not pass before the
// deadline: the checkpoint stays uncosigned by it for now.
var ErrInterval = errors.New("the witness's anchoring interval has not passed")

// Log is the part of the ledger the anchor reads.
type Log interface {
	// Checkpoint returns the latest checkpoint note, signed by the log key;
	// it may already carry cosignatures, which the anchor ignores.
	Checkpoint() []byte
	// ConsistencyProof returns the RFC 6962 consistency proof that the tree
	// of size from is a prefix of the tree of size to, for 0 < from < to <=
	// the latest size. The anchor never asks for from == 0 or from == to.
	ConsistencyProof(from, to uint64) ([][]byte, error)
}

// CosignatureStore keeps the cosignatures the anchor collected. A witness is
// identified by its key's name (tlogwitness.Client.Name), unique among the
// configured witnesses. A cosignature is the witness's signature line(s),
// each "— name base64\n", already verified over the log's checkpoint of that
// size. Implementations must be safe for concurrent use: the anchor calls
// them from one goroutine per witness.
type CosignatureStore interface {
	// Put durably records (before returning) cosignature as witness's
	// signature on the log's checkpoint of size, replacing any earlier one
	// for the same witness and size, and makes size the witness's Latest
	// if it is larger than the current one.
	Put(witness string, size uint64, cosignature []byte) error
	// Get returns what Put recorded for witness and size; ok is false if
	// nothing was.
	Get(witness string, size uint64) (cosignature []byte, ok bool, err error)
	// Latest returns the largest size Put recorded for witness; ok is false
	// if Put was never called for witness.
	Latest(witness string) (size uint64, ok bool, err error)
	// Cosignatures returns what Put recorded for size, for every witness,
	// in any order; none is not an error.
	Cosignatures(size uint64) ([][]byte, error)
}

// Options configure an Anchorer.
type Options struct {
	Log       Log
	LogKey    note.Verifier // the log's checkpoint key; its name is the origin
	Store     CosignatureStore
	Witnesses []*tlogwitness.Client
	// RetryInterval is how long Run waits before trying again a witness that
	// was unavailable, without a budget (with one, the Interval). Zero
	// means one minute.
	RetryInterval time.Duration
	// Interval is the least time between two add-checkpoint requests to one
	// witness (see Anchoring budget). Zero means no budget: a request for
	// every new checkpoint, retried as the client's Backoff says. Negative
	// is an error.
	Interval time.Duration
	Clock    Clock        // nil means the system clock
	Logger   *slog.Logger // nil means slog.Default()
	// OnResult, if set, is called after each attempt to have a witness
	// cosign a checkpoint of size size, with its error (see
	// FailureReason) or nil. It must return quickly and be safe for
	// concurrent use: each witness is anchored by its own goroutine.
	OnResult func(witness string, size uint64, err error)
}

// Clock is the time the Anchorer keeps Interval and RetryInterval by. The
// system clock is used unless a test controls time.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Anchorer anchors the log's checkpoints to witnesses.
type Anchorer struct {
	opts Options

	sentMu sync.Mutex
	sent   map[string]time.Time // witness -> when the last add-checkpoint to it started
}

// New checks the options and returns an Anchorer.
func New(opts Options) (*Anchorer, error) {
	if opts.Log == nil || opts.LogKey == nil || opts.Store == nil {
		return nil, errors.New("anchor: Options.Log, LogKey and Store are required")
	}
	seen := make(map[string]bool)
	for _, w := range opts.Witnesses {
		if seen[w.Name()] {
			return nil, fmt.Errorf("anchor: two witnesses have keys named %q: each witness needs its own key name", w.Name())
		}
		seen[w.Name()] = true
	}
	if opts.Interval < 0 {
		return nil, fmt.Errorf("anchor: Options.Interval is %v: want zero (no budget) or a positive interval", opts.Interval)
	}
	if opts.RetryInterval <= 0 {
		opts.RetryInterval = time.Minute
	}
	if opts.Clock == nil {
		opts.Clock = systemClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Interval > 0 {
		opts.Witnesses = oneAttempt(opts.Witnesses)
	}
	return &Anchorer{opts: opts, sent: make(map[string]time.Time)}, nil
}

// oneAttempt returns copies of ws that try each request once.
func oneAttempt(ws []*tlogwitness.Client) []*tlogwitness.Client {
	out := make([]*tlogwitness.Client, len(ws))
	for i, w := range ws {
		c := *w
		c.Backoff = tlogwitness.Backoff{Attempts: 1}
		out[i] = &c
	}
	return out
}

// checkpoint is a parsed checkpoint and the note that is sent: the text
// with the log's signature only.
type checkpoint struct {
	log.Checkpoint
	note []byte
}

// Anchor gets checkpoint cosigned by every witness that has not cosigned its
// size yet, concurrently, and stores the cosignatures. It returns the joined
// errors of the witnesses that failed; each names its witness. A witness
// whose Interval since the last request has not passed is waited for, if
// it passes before ctx's deadline; otherwise the error wraps ErrInterval.
func (a *Anchorer) Anchor(ctx context.Context, checkpoint []byte) error {
	c, err := a.parse(checkpoint)
	if err != nil {
		return err
	}
	return errors.Join(a.anchorEach(ctx, c, a.opts.Witnesses)...)
}

// anchorEach anchors c to the witnesses concurrently; errs[i] is ws[i]'s.
func (a *Anchorer) anchorEach(ctx context.Context, c *checkpoint, ws []*tlogwitness.Client) (errs []error) {
	errs = make([]error, len(ws))
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Go(func() { errs[i] = a.anchorOne(ctx, w, c) })
	}
	wg.Wait()
	return errs
}

// anchorOne anchors c to w and reports the result to OnResult.
func (a *Anchorer) anchorOne(ctx context.Context, w *tlogwitness.Client, c *checkpoint) error {
	err := a.anchorTo(ctx, w, c)
	if a.opts.OnResult != nil {
		a.opts.OnResult(w.Name(), c.Size, err)
	}
	return err
}

// FailureReason names the kind of an anchoring error, one of a fixed set
// fit for a metric's label: "rollback" (ErrPossibleRollback), "stale"
// (ErrStale), "interval" (ErrInterval), "conflict" (the witness answered
// 409), "unavailable" (tlogwitness.ErrUnavailable), "unknown_log",
// "log_key", "bad_request", "inconsistent", "refused" (the witness's
// other refusals), "canceled", and "other".
func FailureReason(err error) string {
	var conflict *tlogwitness.ConflictError
	for _, k := range []struct {
		err    error
		reason string
	}{
		{ErrPossibleRollback, "rollback"}, {ErrStale, "stale"}, {ErrInterval, "interval"},
		{tlogwitness.ErrUnavailable, "unavailable"}, {tlogwitness.ErrUnknownLog, "unknown_log"},
		{tlogwitness.ErrLogKey, "log_key"}, {tlogwitness.ErrBadRequest, "bad_request"},
		{tlogwitness.ErrInconsistent, "inconsistent"}, {tlogwitness.ErrRefused, "refused"},
		{context.Canceled, "canceled"}, {context.DeadlineExceeded, "canceled"},
	} {
		if errors.Is(err, k.err) {
			return k.reason
		}
	}
	if errors.As(err, &conflict) {
		return "conflict"
	}
	return "other"
}

// parse verifies the log's signature and keeps only it on the note.
func (a *Anchorer) parse(msg []byte) (*checkpoint, error) {
	cp, n, err := cosignature.Open(msg, a.opts.LogKey)
	if err != nil {
		return nil, fmt.Errorf("anchor: the log's checkpoint: %w", err)
	}
	sent, err := note.Sign(&note.Note{Text: n.Text, Sigs: n.Sigs})
	if err != nil {
		return nil, fmt.Errorf("anchor: re-encoding the checkpoint: %v", err)
	}
	return &checkpoint{Checkpoint: *cp, note: sent}, nil
}

// anchorTo gets c cosigned by w, unless w's cosignature on it is stored.
func (a *Anchorer) anchorTo(ctx context.Context, w *tlogwitness.Client, c *checkpoint) error {
	start := time.Now()
	old, done, err := a.cosignedSize(w, c)
	if err != nil || done {
		return err
	}
	if err := a.await(ctx, w); err != nil {
		return err
	}
	lines, err := a.send(ctx, w, old, c, "by the cosignature store")
	if conflict := (*tlogwitness.ConflictError)(nil); errors.As(err, &conflict) {
		lines, err = a.send(ctx, w, conflict.Size, c, "by its own answer (409)")
	}
	if err != nil {
		return classify(w, c, err)
	}
	if err := a.opts.Store.Put(w.Name(), c.Size, lines); err != nil {
		return fmt.Errorf("witness %s: storing its cosignature of size %d: %w", w.Name(), c.Size, err)
	}
	a.opts.Logger.InfoContext(ctx, "checkpoint cosigned", "witness", w.Name(), "origin", c.Origin, "size", c.Size, "old", old, "took", time.Since(start))
	return nil
}

// cosignedSize returns the size w last cosigned according to the store, and
// done if that is c's size and the stored cosignature verifies over c (a
// cosignature that does not was made for another tree of the same size: the
// witness will judge).
func (a *Anchorer) cosignedSize(w *tlogwitness.Client, c *checkpoint) (old uint64, done bool, err error) {
	old, ok, err := a.opts.Store.Latest(w.Name())
	if err != nil || !ok || old != c.Size {
		return old, false, storeErr(w, err)
	}
	line, ok, err := a.opts.Store.Get(w.Name(), old)
	if err != nil || !ok {
		return old, false, storeErr(w, err)
	}
	_, err = cosignature.Verify(c.note, line, w.Key)
	return old, err == nil, nil
}

func storeErr(w *tlogwitness.Client, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("witness %s: reading the cosignature store: %w", w.Name(), err)
}

// send asks w to cosign c, proving consistency from old, the size w last
// cosigned according to source.
func (a *Anchorer) send(ctx context.Context, w *tlogwitness.Client, old uint64, c *checkpoint, source string) ([]byte, error) {
	if old > c.Size {
		return nil, a.behind(w, old, c, source)
	}
	var proof [][]byte
	if old > 0 && old < c.Size {
		var err error
		if proof, err = a.opts.Log.ConsistencyProof(old, c.Size); err != nil {
			return nil, fmt.Errorf("witness %s: the log's consistency proof from size %d to %d: %w", w.Name(), old, c.Size, err)
		}
	}
	return w.AddCheckpoint(ctx, old, proof, c.note)
}

// behind explains a witness that has cosigned size old > c.Size: c is stale
// if the log has grown to old since, else the log lost entries.
func (a *Anchorer) behind(w *tlogwitness.Client, old uint64, c *checkpoint, source string) error {
	latest, _, err := cosignature.Open(a.opts.Log.Checkpoint(), a.opts.LogKey)
	if err == nil && latest.Size >= old {
		return fmt.Errorf("%w: witness %s has cosigned size %d (%s), this checkpoint has size %d, the log now has %d",
			ErrStale, w.Name(), old, source, c.Size, latest.Size)
	}
	return fmt.Errorf("%w: witness %s has cosigned size %d of %s (%s), but the log's checkpoint has size %d: "+
		"entries the witness saw are gone (truncation or rollback) or the log was recreated; do not trust this log until that is explained",
		ErrPossibleRollback, w.Name(), old, c.Origin, source, c.Size)
}

// classify adds ErrPossibleRollback to a witness's refusal of the log's tree.
func classify(w *tlogwitness.Client, c *checkpoint, err error) error {
	if errors.Is(err, tlogwitness.ErrInconsistent) {
		return fmt.Errorf("%w: witness %s refuses %s size %d as inconsistent with the tree it cosigned before "+
			"(the log was rewritten, rolled back or forked); do not trust this log until that is explained: %w",
			ErrPossibleRollback, w.Name(), c.Origin, c.Size, err)
	}
	return err
}

// Transient reports whether err may go away by itself: the witness was
// unreachable, overloaded or failing, or another anchor raced this one.
func Transient(err error) bool {
	var conflict *tlogwitness.ConflictError
	return errors.Is(err, tlogwitness.ErrUnavailable) || errors.Is(err, ErrStale) || errors.Is(err, ErrInterval) || errors.As(err, &conflict)
}
