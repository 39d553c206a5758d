package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"connectrpc.com/connect"
	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/anchor"
	"github.com/bankdoor/bankdoor/anchor/cosignature"
	"github.com/bankdoor/bankdoor/anchor/tlogwitness"
	"github.com/bankdoor/bankdoor/ledger/rpc"
	ledgerv1 "github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1"
	"github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1/ledgerv1connect"
)

// witnessFlags are the repeatable --witness URL and --witness-key VKEY,
// paired in the order given: the n-th key is the n-th witness's, and
// --witness-interval, the least time between two add-checkpoint requests
// to one witness.
type witnessFlags struct {
	urls, keys repeated
	interval   time.Duration
}

// defaultWitnessInterval suits the public witness network, whose
// witnesses admit a log at a declared rate: at most 6 requests a minute
// to each witness, and the newest receipt cosigned within about 10 s.
const defaultWitnessInterval = 10 * time.Second

func (f *witnessFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.urls, "witness", "a C2SP tlog-witness URL to get checkpoints cosigned by (repeatable; pairs with the --witness-key in the same position)")
	fs.Var(&f.keys, "witness-key", "a witness's verifier key, name+hash+key (cosignature/v1 Ed25519 or ML-DSA-44, or Ed25519), as its operator publishes it (repeatable)")
	fs.DurationVar(&f.interval, "witness-interval", defaultWitnessInterval, "the least time between two add-checkpoint requests to one witness; the newest checkpoint is sent when it ends (0: a request for every checkpoint)")
}

// checkInterval reports a negative --witness-interval.
func (f *witnessFlags) checkInterval() error {
	if f.interval < 0 {
		return hint(fmt.Errorf("--witness-interval %v is negative", f.interval),
			"give the least time between two requests to a witness, e.g. --witness-interval 10s, or 0 for a request per checkpoint")
	}
	return nil
}

// clients returns a tlog-witness client for each --witness and its key.
func (f *witnessFlags) clients(logger *slog.Logger) ([]*tlogwitness.Client, error) {
	if err := f.checkInterval(); err != nil {
		return nil, err
	}
	if len(f.urls) != len(f.keys) {
		return nil, hint(fmt.Errorf("--witness and --witness-key go in pairs: got %d --witness and %d --witness-key", len(f.urls), len(f.keys)),
			"give each witness URL with its key, in the same order")
	}
	var cs []*tlogwitness.Client
	for i, u := range f.urls {
		c, err := tlogwitness.New(u, f.keys[i])
		if err != nil {
			return nil, fmt.Errorf("--witness %s --witness-key %s (pair %d): %w", u, cosignature.ShortKey(f.keys[i]), i+1, err)
		}
		c.Logger = logger
		cs = append(cs, c)
	}
	return cs, nil
}

// verifiers returns the verifier of each --witness-key.
func (f *witnessFlags) verifiers() ([]note.Verifier, error) {
	var vs []note.Verifier
	for _, k := range f.keys {
		v, err := cosignature.NewWitnessVerifier(k)
		if err != nil {
			return nil, fmt.Errorf("--witness-key %s: %w", cosignature.ShortKey(k), err)
		}
		vs = append(vs, v)
	}
	return vs, nil
}

// distinct checks that the --witness-key keys are distinct witnesses and,
// unless logVKey is "", that none is the log's key, which logFrom names
// (cosignature.KeySet).
func (f *witnessFlags) distinct(logVKey, logFrom string) error {
	var keys cosignature.KeySet
	if logVKey != "" {
		if err := keys.Add(logVKey, true, logFrom); err != nil {
			return fmt.Errorf("%s: %w", logFrom, err)
		}
	}
	for _, k := range f.keys {
		where := "--witness-key " + cosignature.ShortKey(k)
		if err := keys.Add(k, false, where); err != nil {
			return hint(fmt.Errorf("%s: %w", where, err), "give each witness's own key once, as its operator publishes it")
		}
	}
	return nil
}

// load reads the flags for a ledger open in this process, whose log key
// is logVKey ("" if it is not loaded yet: then the caller checks it with
// distinct): the verifier of every --witness-key, whose cosignatures the
// ledger accepts (their names must differ: a cosignature is stored under
// its key's name), and a client for each --witness URL paired with its
// key. With keyOnly, a --witness-key with no --witness at all is accepted
// and anchors nothing (ledger serve takes the cosignatures a bankdoor
// anchor elsewhere hands back); otherwise URLs and keys must pair up.
func (f *witnessFlags) load(logVKey string, keyOnly bool) (accepted []note.Verifier, clients []*tlogwitness.Client, err error) {
	if err := f.checkInterval(); err != nil {
		return nil, nil, err
	}
	if accepted, err = f.verifiers(); err != nil {
		return nil, nil, err
	}
	if err := f.distinct(logVKey, "--log-key"); err != nil {
		return nil, nil, err
	}
	if err := rpc.UniqueWitnesses(accepted); err != nil {
		return nil, nil, fmt.Errorf("--witness-key: %w", err)
	}
	if keyOnly && len(f.urls) == 0 {
		return accepted, nil, nil
	}
	if clients, err = f.clients(nil); err != nil { // the logger is set once it exists
		return nil, nil, err
	}
	return accepted, clients, nil
}

// anchorRetry is how long the loop waits before asking again a witness
// that was unreachable.
const anchorRetry = time.Minute

func cmdAnchor(e *env, args []string) int {
	fs := newFlags(e, "anchor", "anchor --ledger URL --log-key VKEY --witness URL --witness-key VKEY [--witness URL --witness-key VKEY]... [--witness-interval DURATION] [--ledger-ca FILE] [--ledger-token-env VAR]")
	var remote remoteFlags
	remote.register(fs.FlagSet, "the ledger whose checkpoints to get cosigned, e.g. https://ledger.example:8443 (required)")
	logKey := fs.String("log-key", "", "the ledger's verifier key, <origin>+<hash>+<key>: the line of its .vkey file (required)")
	var wf witnessFlags
	wf.register(fs.FlagSet)
	pos, _, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return fs.usageErr("anchor takes no arguments (got %q); the ledger is --ledger URL", pos[0])
	}
	if !required(fs, "ledger", "log-key", "witness", "witness-key") {
		return exitUsage
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(sigs)
	logger := slog.New(slog.NewTextHandler(e.stderr, nil))
	r, err := newRemoteAnchor(&remote, *logKey, &wf, logger)
	if err != nil {
		return exitErr(e, exitUsage, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := r.start(ctx); err != nil {
		return exitErr(e, exitFailure, err)
	}
	go func() {
		sig := <-sigs
		logger.Info("shutting down", "signal", sig.String())
		cancel()
	}()
	r.run(ctx)
	return exitOK
}

// remoteAnchor runs the anchoring loop against a ledger over Connect: it
// follows the ledger's checkpoints with WatchCheckpoints, reads
// consistency proofs with GetConsistencyProof, and hands each verified
// cosignature back with AddCosignature.
type remoteAnchor struct {
	client   ledgerv1connect.LedgerServiceClient
	logKey   note.Verifier
	logger   *slog.Logger
	anchorer *anchor.Anchorer
	store    *remoteStore

	mu     sync.Mutex
	latest []byte        // the newest checkpoint seen, verified with logKey
	wakes  []chan []byte // one per witness's anchoring loop, holding at most one wake-up
}

func newRemoteAnchor(remote *remoteFlags, logKey string, wf *witnessFlags, logger *slog.Logger) (*remoteAnchor, error) {
	client, err := remote.client()
	if err != nil {
		return nil, err
	}
	lk, err := cosignature.NewLogVerifier(logKey)
	if err != nil {
		return nil, fmt.Errorf("--log-key: %w", err)
	}
	witnesses, err := wf.clients(logger)
	if err != nil {
		return nil, err
	}
	if err := wf.distinct(logKey, "--log-key"); err != nil {
		return nil, err
	}
	r := &remoteAnchor{client: client, logKey: lk, logger: logger}
	r.store = &remoteStore{MemStore: anchor.NewMemStore(), client: client}
	r.anchorer, err = anchor.New(anchor.Options{Log: r, LogKey: lk, Store: r.store, Witnesses: witnesses, RetryInterval: anchorRetry,
		Interval: wf.interval, Logger: logger})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// start reads the ledger's latest checkpoint, so that a wrong URL or log
// key fails at once.
func (r *remoteAnchor) start(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, ledgerCallTimeout)
	defer cancel()
	resp, err := r.client.GetCheckpoint(ctx, connect.NewRequest(&ledgerv1.GetCheckpointRequest{}))
	if err != nil {
		return ledgerHint(fmt.Errorf("--ledger: GetCheckpoint: %w", err))
	}
	if err := r.observe(resp.Msg.GetCheckpoint()); err != nil {
		return hint(err, "check that --log-key is the verifier key of the ledger at --ledger")
	}
	return nil
}

// observe makes msg the latest checkpoint if the log key signed it.
func (r *remoteAnchor) observe(msg []byte) error {
	cp, _, err := cosignature.Open(msg, r.logKey)
	if err != nil {
		return fmt.Errorf("the ledger's checkpoint does not verify with --log-key %s+%08x: %w", r.logKey.Name(), r.logKey.KeyHash(), err)
	}
	r.mu.Lock()
	prev := r.latest
	r.latest = msg
	for _, wake := range r.wakes { // never blocks: replace an unread wake-up, the anchor reads the latest itself
		select {
		case <-wake:
		default:
		}
		wake <- msg
	}
	r.mu.Unlock()
	r.logger.Debug("ledger checkpoint", "size", cp.Size)
	r.checkGrowth(prev, cp.Size)
	return nil
}

// wakeUps gives one witness's anchoring loop its wake-ups (anchor.Run);
// the loop reads the latest checkpoint when it starts.
func (r *remoteAnchor) wakeUps(context.Context) <-chan []byte {
	wake := make(chan []byte, 1)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wakes = append(r.wakes, wake)
	return wake
}

// checkGrowth reports a checkpoint smaller than the one seen before it.
// The witnesses refuse it too (and a fork at the same size); this says
// so even before they answer.
func (r *remoteAnchor) checkGrowth(prev []byte, size uint64) {
	if prev == nil {
		return
	}
	if before, _, err := cosignature.Open(prev, r.logKey); err == nil && size < before.Size {
		r.logger.Error("the ledger's checkpoint went back: possible rollback of the log", "was", before.Size, "now", size)
	}
}

// run anchors until ctx is done.
func (r *remoteAnchor) run(ctx context.Context) {
	go r.follow(ctx)
	_ = r.anchorer.Run(ctx, r.wakeUps) // returns ctx.Err()
}

// follow watches the ledger's checkpoints until ctx is done, reconnecting
// with backoff when the stream ends.
func (r *remoteAnchor) follow(ctx context.Context) {
	const minWait, maxWait = time.Second, 30 * time.Second
	wait := minWait
	for ctx.Err() == nil {
		got, err := r.watch(ctx)
		if ctx.Err() != nil {
			return
		}
		if got { // a stream that worked ends at the call timeout: reconnect quietly
			wait = minWait
			r.logger.Debug("checkpoint stream ended; reconnecting", "err", err)
		} else {
			r.logger.Warn("watching the ledger's checkpoints failed; reconnecting", "err", err, "retry_in", wait)
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, maxWait)
	}
}

// watch reads one WatchCheckpoints stream; got reports whether it
// delivered a checkpoint.
func (r *remoteAnchor) watch(ctx context.Context) (got bool, err error) {
	stream, err := r.client.WatchCheckpoints(ctx, connect.NewRequest(&ledgerv1.WatchCheckpointsRequest{}))
	if err != nil {
		return false, err
	}
	defer stream.Close()
	for stream.Receive() {
		got = true
		if err := r.observe(stream.Msg().GetCheckpoint()); err != nil {
			r.logger.Error("ignoring a checkpoint from the ledger", "err", err)
		}
	}
	if err := stream.Err(); err != nil {
		return got, err
	}
	return got, errors.New("the ledger ended the stream")
}

// Checkpoint implements anchor.Log: the newest checkpoint seen.
func (r *remoteAnchor) Checkpoint() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.latest
}

// ConsistencyProof implements anchor.Log with GetConsistencyProof.
func (r *remoteAnchor) ConsistencyProof(from, to uint64) ([][]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ledgerCallTimeout)
	defer cancel()
	resp, err := r.client.GetConsistencyProof(ctx, connect.NewRequest(&ledgerv1.GetConsistencyProofRequest{FromSize: from, ToSize: to}))
	if err != nil {
		return nil, fmt.Errorf("the ledger's consistency proof from size %d to %d: %w", from, to, err)
	}
	return resp.Msg.GetHashes(), nil
}

// remoteStore is the anchor.CosignatureStore of a remote anchor: Put
// hands the cosignature to the ledger (AddCosignature), which verifies
// and keeps it; the embedded MemStore remembers what was put for this
// process's life, so that a checkpoint is not sent twice to a witness.
// After a restart the first request to each witness learns its size from
// a 409 answer.
type remoteStore struct {
	*anchor.MemStore
	client ledgerv1connect.LedgerServiceClient
}

// Put implements anchor.CosignatureStore.
func (s *remoteStore) Put(witness string, size uint64, lines []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), ledgerCallTimeout)
	defer cancel()
	_, err := s.client.AddCosignature(ctx, connect.NewRequest(&ledgerv1.AddCosignatureRequest{TreeSize: size, Cosignature: lines}))
	if connect.CodeOf(err) == connect.CodeFailedPrecondition {
		return fmt.Errorf("handing %s's cosignature of size %d to the ledger: %w (start the ledger with --witness-key VKEY for each witness bankdoor anchor asks)", witness, size, err)
	} else if err != nil {
		return fmt.Errorf("handing %s's cosignature of size %d to the ledger: %w", witness, size, err)
	}
	return s.MemStore.Put(witness, size, lines)
}
