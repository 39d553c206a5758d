package anchor_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/anchor"
	"github.com/bankdoor/bankdoor/anchor/anchortest"
	"github.com/bankdoor/bankdoor/anchor/cosignature"
	"github.com/bankdoor/bankdoor/anchor/internal/testlog"
	"github.com/bankdoor/bankdoor/anchor/tlogwitness"
	"github.com/transparency-dev/formats/log"
	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

const origin = "bankdoor.test/ledger"

// setup is one log, one real omniwitness, and a way to make anchorers.
type setup struct {
	skey, vkey string
	logKey     note.Verifier
	witness    *anchortest.Omniwitness
	requests   *countingTransport
}

func newSetup(t testing.TB) *setup {
	skey, vkey := testlog.NewKey(t, origin)
	logKey, err := cosignature.NewLogVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return &setup{skey: skey, vkey: vkey, logKey: logKey, witness: startOmniwitness(t, vkey), requests: &countingTransport{}}
}

// anchorer returns an Anchorer for l with its own store, talking to the witness.
func (s *setup) anchorer(t testing.TB, l anchor.Log, store anchor.CosignatureStore) *anchor.Anchorer {
	t.Helper()
	c, err := tlogwitness.New(s.witness.URL, s.witness.VKey)
	if err != nil {
		t.Fatal(err)
	}
	c.HTTP = &http.Client{Transport: s.requests, Timeout: 10 * time.Second}
	c.Backoff = tlogwitness.Backoff{Attempts: 2, Initial: 10 * time.Millisecond, Max: 10 * time.Millisecond}
	c.Logger = slog.New(slog.DiscardHandler)
	a, err := anchor.New(anchor.Options{Log: l, LogKey: s.logKey, Store: store, Witnesses: []*tlogwitness.Client{c}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestOmniwitnessCosigns anchors a growing log to the real omniwitness and
// checks the served notes carry cosignatures that verify with the formats
// package, with no request when there is nothing new to cosign.
func TestOmniwitnessCosigns(t *testing.T) {
	s := newSetup(t)
	l, store := testlog.New(t, s.skey), anchortest.NewMemStore()
	a := s.anchorer(t, l, store)
	ctx := context.Background()
	for _, n := range []int{3, 5, 1, 64} { // sizes 3, 8, 9, 73: proofs of several shapes
		l.Append("receipt", n)
		if err := a.Anchor(ctx, l.Checkpoint()); err != nil {
			t.Fatalf("anchoring size %d: %v", l.Size(), err)
		}
		if got := s.requests.take(); got != 1 {
			t.Errorf("size %d: %d requests to the witness; want 1", l.Size(), got)
		}
		checkCosigned(t, s, l, store)
	}
	if err := a.Anchor(ctx, l.Checkpoint()); err != nil {
		t.Fatalf("anchoring the same checkpoint again: %v", err)
	}
	if got := s.requests.take(); got != 0 {
		t.Errorf("anchoring a checkpoint the witness already cosigned sent %d requests; want 0", got)
	}
}

// checkCosigned checks the served note with formats' parser and verifiers.
func checkCosigned(t *testing.T, s *setup, l *testlog.Log, store anchor.CosignatureStore) {
	t.Helper()
	served, err := cosignature.Cosigned(l.Checkpoint(), s.logKey, store.Cosignatures)
	if err != nil {
		t.Fatal(err)
	}
	wv, err := fnote.NewVerifierForCosignatureV1(s.witness.VKey)
	if err != nil {
		t.Fatal(err)
	}
	cp, _, n, err := log.ParseCheckpoint(served, origin, s.logKey, wv)
	if err != nil {
		t.Fatalf("formats rejects the served note: %v\n%s", err, served)
	}
	if cp.Size != l.Size() || len(n.Sigs) != 2 || n.Sigs[1].Name != s.witness.Name {
		t.Fatalf("served note: size %d, verified signatures %+v; want size %d signed by the log and %s", cp.Size, n.Sigs, l.Size(), s.witness.Name)
	}
	if ts, err := fnote.CoSigV1Timestamp(n.Sigs[1]); err != nil || time.Since(ts) > time.Minute {
		t.Errorf("cosignature timestamp %v, %v; want within the last minute", ts, err)
	}
	if _, err := policy(t, s).Verify(served); err != nil {
		t.Fatalf("policy with quorum 1 rejects the served note: %v", err)
	}
}

// policy trusts the log key and the witness, with quorum 1.
func policy(t testing.TB, s *setup) *cosignature.Policy {
	p, err := cosignature.NewPolicy(s.vkey, []string{s.witness.VKey}, 1)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOmniwitnessConflict: an anchor that lost its store sends old size 0;
// the witness answers 409 with the size it cosigned, and the anchor resends
// a proof from that size, once.
func TestOmniwitnessConflict(t *testing.T) {
	s := newSetup(t)
	l := testlog.New(t, s.skey)
	l.Append("receipt", 10)
	ctx := context.Background()
	if err := s.anchorer(t, l, anchortest.NewMemStore()).Anchor(ctx, l.Checkpoint()); err != nil {
		t.Fatal(err)
	}
	l.Append("receipt", 7)
	s.requests.take()
	fresh := anchortest.NewMemStore()
	if err := s.anchorer(t, l, fresh).Anchor(ctx, l.Checkpoint()); err != nil {
		t.Fatalf("anchoring with a store that forgot the witness's size: %v", err)
	}
	if got := s.requests.take(); got != 2 {
		t.Errorf("%d requests; want 2 (old 0 -> 409 size 10 -> old 10 with a proof)", got)
	}
	if size, _, _ := fresh.Latest(s.witness.Name); size != 17 {
		t.Errorf("store's latest size for the witness = %d; want 17", size)
	}
	// Again with a store that forgot, at the size the witness holds: the
	// resend is "old 17" with no proof, and the witness cosigns again.
	if err := s.anchorer(t, l, anchortest.NewMemStore()).Anchor(ctx, l.Checkpoint()); err != nil {
		t.Fatalf("anchoring the size the witness holds with a store that forgot it: %v", err)
	}
	if got := s.requests.take(); got != 2 {
		t.Errorf("%d requests; want 2 (old 0 -> 409 size 17 -> old 17)", got)
	}
}

// TestOmniwitnessRollback: the log is recreated with the same key and fewer
// entries. The witness refuses it, and the anchor reports a possible rollback
// at once instead of retrying.
func TestOmniwitnessRollback(t *testing.T) {
	s := newSetup(t)
	ctx := context.Background()
	l, store := testlog.New(t, s.skey), anchortest.NewMemStore()
	l.Append("receipt", 10)
	if err := s.anchorer(t, l, store).Anchor(ctx, l.Checkpoint()); err != nil {
		t.Fatal(err)
	}
	recreated := testlog.New(t, s.skey)
	recreated.Append("receipt", 4) // the same first 4 entries; 6 are gone
	cases := []struct {
		name     string
		store    anchor.CosignatureStore
		requests int64
		want     string
	}{
		{"store remembers size 10", store, 0, "has cosigned size 10 of bankdoor.test/ledger (by the cosignature store)"},
		{"store lost", anchortest.NewMemStore(), 1, "has cosigned size 10 of bankdoor.test/ledger (by its own answer (409))"},
	}
	for _, c := range cases {
		s.requests.take()
		start := time.Now()
		err := s.anchorer(t, recreated, c.store).Anchor(ctx, recreated.Checkpoint())
		if !errors.Is(err, anchor.ErrPossibleRollback) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v; want ErrPossibleRollback saying %q", c.name, err, c.want)
		}
		if anchor.Transient(err) {
			t.Errorf("%s: a possible rollback is reported as transient, so Run would retry it", c.name)
		}
		if got := s.requests.take(); got != c.requests || time.Since(start) > 5*time.Second {
			t.Errorf("%s: %d requests in %v; want %d, promptly", c.name, got, time.Since(start), c.requests)
		}
	}
}

// TestOmniwitnessFork: a log with the same key but a different history. The
// witness refuses its consistency proof (larger tree) or its root (same
// size), and the anchor reports a possible fork.
func TestOmniwitnessFork(t *testing.T) {
	s := newSetup(t)
	ctx := context.Background()
	l := testlog.New(t, s.skey)
	l.Append("receipt", 10)
	if err := s.anchorer(t, l, anchortest.NewMemStore()).Anchor(ctx, l.Checkpoint()); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{10, 12} {
		fork := testlog.New(t, s.skey)
		fork.Append("other", size)
		err := s.anchorer(t, fork, anchortest.NewMemStore()).Anchor(ctx, fork.Checkpoint())
		if !errors.Is(err, anchor.ErrPossibleRollback) || !errors.Is(err, tlogwitness.ErrInconsistent) {
			t.Errorf("fork of size %d: err = %v; want ErrPossibleRollback wrapping the witness's 422", size, err)
		}
	}
}

// TestOmniwitnessRefusals: a log the witness does not know and a checkpoint
// signed by another key for the known origin are not cosigned, and the anchor
// gives up after a bounded number of requests. The tlog-witness spec says 404
// and 403; this omniwitness answers 500 to both (its SQLite log config fails
// on an unknown origin, and a bad log signature is not mapped to 403), which
// the client must treat as a failing witness: retried Attempts times, then
// reported. tlogwitness's own tests cover 404 and 403.
func TestOmniwitnessRefusals(t *testing.T) {
	s := newSetup(t)
	ctx := context.Background()
	otherSkey, otherVKey := testlog.NewKey(t, "unknown.test/log")
	forgedSkey, forgedVKey := testlog.NewKey(t, origin) // same origin, not the key the witness trusts
	for _, c := range []struct {
		skey, vkey string
		spec       error
	}{
		{otherSkey, otherVKey, tlogwitness.ErrUnknownLog},
		{forgedSkey, forgedVKey, tlogwitness.ErrLogKey},
	} {
		l := testlog.New(t, c.skey)
		l.Append("receipt", 2)
		s2 := *s
		s2.logKey, _ = cosignature.NewLogVerifier(c.vkey)
		s.requests.take()
		err := s2.anchorer(t, l, anchortest.NewMemStore()).Anchor(ctx, l.Checkpoint())
		var refused *tlogwitness.RefusedError
		if !errors.As(err, &refused) {
			t.Fatalf("log %s: err = %v; want a RefusedError", c.vkey, err)
		}
		requests := s.requests.take()
		switch {
		case errors.Is(err, c.spec) && requests == 1:
		case errors.Is(err, tlogwitness.ErrUnavailable) && refused.Status == 500 && requests == 2:
			t.Logf("log %s: omniwitness answered 500 where the spec says %v; reported after %d tries: %v", c.vkey, c.spec, requests, err)
		default:
			t.Errorf("log %s: err = %v after %d requests; want %v after 1, or a 500 after 2 (Backoff.Attempts)", c.vkey, err, requests, c.spec)
		}
	}
}
