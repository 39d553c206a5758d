package anchor_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/anchor"
	"github.com/bankdoor/bankdoor/anchor/anchortest"
	"github.com/bankdoor/bankdoor/anchor/cosignature"
	"github.com/bankdoor/bankdoor/anchor/internal/testlog"
	"github.com/bankdoor/bankdoor/anchor/tlogwitness"
	fnote "github.com/transparency-dev/formats/note"
	"github.com/transparency-dev/witness/persistence/inmemory"
	"github.com/transparency-dev/witness/witness"
	"golang.org/x/mod/sumdb/note"
)

// inProcessWitness is the witness module's own tlog-witness handler, with
// in-memory state, behind a switch that can make it fail. It keeps the
// anchor's unit tests fast; interop_test.go runs the real omniwitness binary.
type inProcessWitness struct {
	URL, Name, VKey string
	fail            atomic.Int32 // status to answer instead of handling, 0 for none
	requests        atomic.Int32
	lastBody        atomic.Value // []byte
}

func newInProcessWitness(t *testing.T, name string, logKey note.Verifier) *inProcessWitness {
	skey, vkey := testlog.NewWitnessKey(t, name)
	signer, err := fnote.NewSignerForCosignatureV1(skey)
	if err != nil {
		t.Fatal(err)
	}
	w, err := witness.New(context.Background(), witness.Opts{
		Persistence: inmemory.New(),
		Signers:     []note.Signer{signer},
		VerifierForLog: func(_ context.Context, origin string) (note.Verifier, bool, error) {
			return logKey, origin == logKey.Name(), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	h := witness.NewHTTPHandler(w)
	iw := &inProcessWitness{Name: name, VKey: vkey}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		iw.requests.Add(1)
		body, _ := io.ReadAll(r.Body)
		iw.lastBody.Store(body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if s := iw.fail.Load(); s != 0 {
			http.Error(rw, "injected failure", int(s))
			return
		}
		h.AddCheckpoint(rw, r)
	}))
	t.Cleanup(srv.Close)
	iw.URL = srv.URL
	return iw
}

func client(t *testing.T, url, vkey string) *tlogwitness.Client {
	c, err := tlogwitness.New(url, vkey)
	if err != nil {
		t.Fatal(err)
	}
	c.Backoff = tlogwitness.Backoff{Attempts: 1}
	c.Logger = slog.New(slog.DiscardHandler)
	return c
}

type unit struct {
	log    *testlog.Log
	logKey note.Verifier
	vkey   string
	store  *anchortest.MemStore
}

func newUnit(t *testing.T) *unit {
	skey, vkey := testlog.NewKey(t, origin)
	logKey, err := cosignature.NewLogVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return &unit{log: testlog.New(t, skey), logKey: logKey, vkey: vkey, store: anchortest.NewMemStore()}
}

func (u *unit) anchorer(t *testing.T, retry time.Duration, ws ...*tlogwitness.Client) *anchor.Anchorer {
	a, err := anchor.New(anchor.Options{Log: u.log, LogKey: u.logKey, Store: u.store, Witnesses: ws,
		RetryInterval: retry, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestAnchorSeveralWitnesses: one refusing witness does not stop the others,
// its error names it, and the served note carries the others' cosignatures.
func TestAnchorSeveralWitnesses(t *testing.T) {
	u := newUnit(t)
	w1, w2 := newInProcessWitness(t, "w1.test", u.logKey), newInProcessWitness(t, "w2.test", u.logKey)
	w3 := newInProcessWitness(t, "w3.test", u.logKey)
	w3.fail.Store(http.StatusForbidden)
	a := u.anchorer(t, time.Minute, client(t, w1.URL, w1.VKey), client(t, w2.URL, w2.VKey), client(t, w3.URL, w3.VKey))
	u.log.Append("receipt", 6)
	err := a.Anchor(context.Background(), u.log.Checkpoint())
	if !errors.Is(err, tlogwitness.ErrLogKey) || !strings.Contains(err.Error(), "w3.test") || strings.Contains(err.Error(), "w1.test") {
		t.Fatalf("err = %v; want only w3.test's 403", err)
	}
	served, err := cosignature.Cosigned(u.log.Checkpoint(), u.logKey, u.store.Cosignatures)
	if err != nil {
		t.Fatal(err)
	}
	p, err := cosignature.NewPolicy(u.vkey, []string{w1.VKey, w2.VKey, w3.VKey}, 2)
	if err != nil {
		t.Fatal(err)
	}
	v, err := p.Verify(served)
	if err != nil || len(v.Cosigners) != 2 {
		t.Fatalf("served note with a 2-of-3 policy: %v, %+v\n%s", err, v, served)
	}
	p.Quorum = 3
	if _, err := p.Verify(served); !errors.Is(err, cosignature.ErrQuorum) {
		t.Errorf("served note with a 3-of-3 policy: err = %v; want ErrQuorum", err)
	}
}

// TestRunRetriesOnlyTransientFailures: an unavailable witness is tried again
// after RetryInterval; one that refused is not asked again until the next
// checkpoint.
func TestRunRetriesOnlyTransientFailures(t *testing.T) {
	u := newUnit(t)
	down, refusing := newInProcessWitness(t, "down.test", u.logKey), newInProcessWitness(t, "refusing.test", u.logKey)
	down.fail.Store(http.StatusServiceUnavailable)
	refusing.fail.Store(http.StatusUnprocessableEntity)
	a := u.anchorer(t, 5*time.Millisecond, client(t, down.URL, down.VKey), client(t, refusing.URL, refusing.VKey))
	u.log.Append("receipt", 3)
	ctx, cancel := context.WithCancel(context.Background())
	wakes := []chan []byte{make(chan []byte), make(chan []byte)} // down's, refusing's
	watched := 0
	done := make(chan error)
	go func() {
		done <- a.Run(ctx, func(context.Context) <-chan []byte { watched++; return wakes[watched-1] })
	}()

	waitFor(t, "3 tries of the unavailable witness", func() bool { return down.requests.Load() >= 3 })
	down.fail.Store(0)
	waitFor(t, "the recovered witness's cosignature", func() bool { size, _, _ := u.store.Latest("down.test"); return size == 3 })
	// Each try of the unavailable witness was a round in which the
	// refusing one could have been asked again. Two wake-ups of its loop
	// with no new checkpoint: the second is received only after the round
	// of the first is over.
	wakes[1] <- nil
	wakes[1] <- nil
	if n := refusing.requests.Load(); n != 1 {
		t.Errorf("the refusing witness was sent the same checkpoint %d times; want 1", n)
	}
	refusing.fail.Store(0)
	u.log.Append("receipt", 2)
	wakes[0] <- nil
	wakes[1] <- nil
	waitFor(t, "both witnesses at size 5", func() bool {
		a, _, _ := u.store.Latest("down.test")
		b, _, _ := u.store.Latest("refusing.test")
		return a == 5 && b == 5
	})
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run returned %v; want context.Canceled", err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestAnchorStaleCheckpoint: a checkpoint older than one a witness already
// cosigned, from a log that has grown since, is stale, not a rollback.
func TestAnchorStaleCheckpoint(t *testing.T) {
	u := newUnit(t)
	w := newInProcessWitness(t, "w1.test", u.logKey)
	a := u.anchorer(t, time.Minute, client(t, w.URL, w.VKey))
	u.log.Append("receipt", 5)
	old := u.log.Checkpoint()
	u.log.Append("receipt", 3)
	ctx := context.Background()
	if err := a.Anchor(ctx, u.log.Checkpoint()); err != nil {
		t.Fatal(err)
	}
	err := a.Anchor(ctx, old)
	if !errors.Is(err, anchor.ErrStale) || errors.Is(err, anchor.ErrPossibleRollback) || !anchor.Transient(err) {
		t.Errorf("anchoring size 5 after size 8: err = %v; want a transient ErrStale", err)
	}
	// Another anchor, whose store knows nothing, learns size 8 from a 409.
	u.store = anchortest.NewMemStore()
	err = u.anchorer(t, time.Minute, client(t, w.URL, w.VKey)).Anchor(ctx, old)
	if !errors.Is(err, anchor.ErrStale) {
		t.Errorf("anchoring size 5 with a fresh store: err = %v; want ErrStale", err)
	}
}

// TestAnchorSendsTheLogSignatureOnly: cosignatures already on the log's
// note are not forwarded to witnesses.
func TestAnchorSendsTheLogSignatureOnly(t *testing.T) {
	u := newUnit(t)
	w1, w2 := newInProcessWitness(t, "w1.test", u.logKey), newInProcessWitness(t, "w2.test", u.logKey)
	u.log.Append("receipt", 4)
	ctx := context.Background()
	if err := u.anchorer(t, time.Minute, client(t, w1.URL, w1.VKey)).Anchor(ctx, u.log.Checkpoint()); err != nil {
		t.Fatal(err)
	}
	served, err := cosignature.Cosigned(u.log.Checkpoint(), u.logKey, u.store.Cosignatures)
	if err != nil || !bytes.Contains(served, []byte("— w1.test ")) {
		t.Fatalf("served note %q, %v; want w1.test's cosignature on it", served, err)
	}
	if err := u.anchorer(t, time.Minute, client(t, w2.URL, w2.VKey)).Anchor(ctx, served); err != nil {
		t.Fatal(err)
	}
	body := w2.lastBody.Load().([]byte)
	if !bytes.HasSuffix(body, u.log.Checkpoint()) || bytes.Contains(body, []byte("w1.test")) {
		t.Errorf("request to w2.test:\n%s\nwant the note with the log's signature only", body)
	}
}

// TestAnchorRefusesAForgedLogCheckpoint: the anchor sends nothing for a
// checkpoint the log key did not sign.
func TestAnchorRefusesAForgedLogCheckpoint(t *testing.T) {
	u := newUnit(t)
	w := newInProcessWitness(t, "w1.test", u.logKey)
	a := u.anchorer(t, time.Minute, client(t, w.URL, w.VKey))
	u.log.Append("receipt", 2)
	forged := []byte(strings.Replace(string(u.log.Checkpoint()), "\n2\n", "\n3\n", 1))
	if err := a.Anchor(context.Background(), forged); !errors.Is(err, cosignature.ErrLogSignature) || w.requests.Load() != 0 {
		t.Errorf("err = %v, %d requests; want ErrLogSignature and none", err, w.requests.Load())
	}
}

func TestNewRejectsDuplicateWitnessNames(t *testing.T) {
	u := newUnit(t)
	_, vkey1 := testlog.NewWitnessKey(t, "same.test")
	_, vkey2 := testlog.NewWitnessKey(t, "same.test")
	_, err := anchor.New(anchor.Options{Log: u.log, LogKey: u.logKey, Store: u.store,
		Witnesses: []*tlogwitness.Client{client(t, "https://a.test", vkey1), client(t, "https://b.test", vkey2)}})
	if err == nil || !strings.Contains(err.Error(), "same.test") {
		t.Errorf("err = %v; want an error naming same.test", err)
	}
}
