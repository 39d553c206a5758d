package ledger

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/proof"
	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/internal/agentchain/chaintest"
	"github.com/bankdoor/bankdoor/internal/pgtest"
	"github.com/bankdoor/bankdoor/ledger/internal/store"
	"github.com/bankdoor/bankdoor/ledger/receipt"
)

// replicas opens n Logs on one new PostgreSQL database of srv (the test
// binary's shared server if nil), as n ledger servers would.
func replicas(t testing.TB, srv *pgtest.Server, n int, agents ...*agent) []*testLog {
	t.Helper()
	if srv == nil {
		srv = pg.Server(t)
	}
	return replicasOn(t, srv.NewDB(t), n, agents...)
}

// replicasOn opens n Logs on db, as n ledger servers would.
func replicasOn(t testing.TB, db pgtest.DB, n int, agents ...*agent) []*testLog {
	t.Helper()
	first := openTestLogOn(t, onBolt, 0, agents...) // keys and options
	first.Close()
	ls := make([]*testLog, n)
	for i := range ls {
		ls[i] = &testLog{path: db.URL, agents: first.agents, verifier: first.verifier, opts: first.opts}
		ls[i].opts.DBPassword = db.Password
		ls[i].reopen(t)
	}
	return ls
}

// checkpoints records every checkpoint the Logs publish (see Watch) and
// fails the test if two different ones have one size.
type checkpoints struct {
	t      *testing.T
	mu     sync.Mutex
	bySize map[uint64]string
	wg     sync.WaitGroup
}

func watchCheckpoints(t *testing.T, ctx context.Context, ls ...*testLog) *checkpoints {
	c := &checkpoints{t: t, bySize: map[uint64]string{}}
	for _, l := range ls {
		ch := l.Watch(ctx)
		c.wg.Go(func() {
			for n := range ch {
				cp, _, _, err := log.ParseCheckpoint(n, testOrigin, l.verifier)
				if err != nil {
					t.Errorf("published checkpoint: %v\n%s", err, n)
					continue
				}
				c.mu.Lock()
				if prev, ok := c.bySize[cp.Size]; ok && prev != string(n) {
					t.Errorf("two checkpoints signed for size %d:\n%s\n%s", cp.Size, prev, n)
				}
				c.bySize[cp.Size] = string(n)
				c.mu.Unlock()
			}
		})
	}
	return c
}

// converge waits until every Log's checkpoint covers each agent's head,
// then checks that they publish the same checkpoint, of size want.
func converge(t *testing.T, ls []*testLog, want uint64, agents ...*agent) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for i, l := range ls {
		for _, a := range agents {
			if _, _, err := l.Head(ctx, a.KeyID); err != nil {
				t.Fatalf("replica %d: Head of %s: %v", i, a.KeyID, err)
			}
		}
		if l.Size() != want {
			t.Fatalf("replica %d has size %d, want %d", i, l.Size(), want)
		}
		if i > 0 && string(l.Checkpoint()) != string(ls[0].Checkpoint()) {
			t.Fatalf("replicas 0 and %d publish different checkpoints of size %d:\n%s\n%s", i, want, ls[0].Checkpoint(), l.Checkpoint())
		}
	}
}

// TestReplicasOneLog: two Logs on one PostgreSQL database, appended to
// at once by four agents whose requests alternate between them, keep one
// log: every receipt once, at the index its Append returned, the same
// checkpoint on both once they converge, never two checkpoints signed
// for one size, proofs from one replica verifying against the other's
// checkpoint, and a clean fsck.
func TestReplicasOneLog(t *testing.T) {
	t.Parallel()
	agents := []*agent{newAgent(1), newAgent(2), newAgent(3), newAgent(4)}
	ls := replicas(t, nil, 2, agents...)
	ctx, cancel := context.WithCancel(t.Context())
	cps := watchCheckpoints(t, ctx, ls...)

	const perAgent = 40
	type placed struct {
		file  []byte
		index uint64
	}
	var mu sync.Mutex
	var all []placed
	var wg sync.WaitGroup
	for n, a := range agents {
		rs := a.Chain(t, perAgent)
		wg.Go(func() {
			for i := 0; i < len(rs); {
				k := min(1+(i+n)%3, len(rs)-i) // requests of 1 to 3 receipts
				l := ls[(i/3+n)%2]
				idx, err := l.Append(t.Context(), rs[i:i+k])
				if err != nil {
					t.Errorf("agent %d, receipts %d..%d: %v", n, i+1, i+k, err)
					return
				}
				mu.Lock()
				for j, x := range idx {
					all = append(all, placed{rs[i+j], x})
				}
				mu.Unlock()
				i += k
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	total := uint64(len(agents) * perAgent)
	converge(t, ls, total, agents...)
	cancel()
	cps.wg.Wait()

	cp, _, _, err := log.ParseCheckpoint(ls[0].Checkpoint(), testOrigin, ls[0].verifier)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]bool{}
	for _, p := range all {
		if seen[p.index] {
			t.Fatalf("index %d returned for two receipts", p.index)
		}
		seen[p.index] = true
		leaf := hasher.HashLeaf(p.file)
		for i, l := range ls {
			got, err := l.LeafIndex(leaf)
			if err != nil || got != p.index {
				t.Fatalf("replica %d: LeafIndex = %d, %v; Append returned %d", i, got, err, p.index)
			}
		}
		pr, err := ls[1-p.index%2].InclusionProof(p.index, cp.Size)
		if err != nil {
			t.Fatal(err)
		}
		if err := proof.VerifyInclusion(hasher, p.index, cp.Size, leaf, pr, cp.Hash); err != nil {
			t.Fatalf("index %d: %v", p.index, err)
		}
	}
	if uint64(len(seen)) != total {
		t.Fatalf("%d receipts placed, want %d", len(seen), total)
	}
	if len(cps.bySize) < 2 {
		t.Errorf("saw %d checkpoints; want the replicas' several", len(cps.bySize))
	}
	rep, err := FsckDB(t.Context(), ls[0].path, ls[0].opts.DBPassword, testVerifier(t))
	if err != nil || rep.Size != total || rep.Agents != len(agents) {
		t.Fatalf("FsckDB: %v, %v; want a consistent log of %d receipts of %d agents", rep, err, total, len(agents))
	}
}

// TestReplicaFollows: a replica that appends nothing follows the log
// another one appends to: Head waits for (and fetches) the checkpoint
// covering the head it reads, and proofs are served at that size.
func TestReplicaFollows(t *testing.T) {
	t.Parallel()
	a := newAgent(1)
	ls := replicas(t, nil, 2, a)
	writer, reader := ls[0], ls[1]
	for range 3 {
		writer.mustAppend(t, a.Chain(t, 5)...)
	}
	h, ok, err := reader.Head(t.Context(), a.KeyID)
	if err != nil || !ok || h.Seq != 15 || h.Index != 14 {
		t.Fatalf("reader's Head = %+v, %v, %v; want seq 15 at index 14", h, ok, err)
	}
	if reader.Size() < 15 {
		t.Fatalf("reader's checkpoint has size %d after Head returned index 14", reader.Size())
	}
	if _, err := reader.InclusionProof(14, 15); err != nil {
		t.Fatal(err)
	}
	// The reader appends on top of what it has not seen committed.
	writer.mustAppend(t, a.Next(t))
	if idx := reader.mustAppend(t, a.Next(t)); idx[0] != 16 {
		t.Fatalf("reader appended at %d, want 16", idx[0])
	}
	converge(t, ls, 17, a)
}

// TestReplicasRaceOneChain: two replicas given two different receipts of
// one agent with the same seq at the same moment (a forked chain) store
// exactly one; the other Append fails with ErrChain. Given the same
// receipt, both succeed at the same index.
func TestReplicasRaceOneChain(t *testing.T) {
	t.Parallel()
	a := newAgent(1)
	twin := chaintest.New(a.Key, a.Start.Add(time.Hour)) // same key, other times
	ls := replicas(t, nil, 2, a)
	prev := receipt.FirstPrev
	const rounds = 12
	for seq := uint64(1); seq <= rounds; seq++ {
		rs := [][]byte{a.Sign(t, seq, prev), twin.Sign(t, seq, prev)}
		if seq%3 == 0 {
			rs[1] = rs[0] // the same receipt to both
		}
		var idx [2]uint64
		var errs [2]error
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 2 {
			wg.Go(func() {
				<-start
				var got []uint64
				got, errs[i] = ls[i].Append(t.Context(), rs[i:i+1])
				if errs[i] == nil {
					idx[i] = got[0]
				}
			})
		}
		close(start)
		wg.Wait()
		win := 0
		switch {
		case seq%3 == 0:
			if errs[0] != nil || errs[1] != nil || idx[0] != idx[1] || idx[0] != seq-1 {
				t.Fatalf("seq %d, one receipt to both: indexes %v, errors %v; want both %d", seq, idx, errs, seq-1)
			}
		case errs[0] == nil && errors.Is(errs[1], ErrChain):
		case errs[1] == nil && errors.Is(errs[0], ErrChain):
			win = 1
		default:
			t.Fatalf("seq %d, a fork to each replica: errors %v; want one nil and one ErrChain", seq, errs)
		}
		if idx[win] != seq-1 {
			t.Fatalf("seq %d stored at %d, want %d", seq, idx[win], seq-1)
		}
		sum := receipt.Hash(rs[win])
		prev = hex.EncodeToString(sum[:])
	}
	converge(t, ls, rounds, a)
	rep, err := FsckDB(t.Context(), ls[0].path, ls[0].opts.DBPassword, testVerifier(t))
	if err != nil || rep.Size != rounds {
		t.Fatalf("FsckDB: %v, %v", rep, err)
	}
}

// TestPostgresDown: while the database is down, Append and Head fail
// with ErrUnavailable and the published checkpoint is still served;
// once it is back, appends go on, a retried Append returns the index of
// a receipt whose commit answer was lost, and nothing acknowledged is
// lost. It has a server of its own, which it stops.
func TestPostgresDown(t *testing.T) {
	t.Parallel()
	srv := pgtest.Private(t)
	agents := []*agent{newAgent(1), newAgent(2), newAgent(3), newAgent(4)}
	ls := replicas(t, srv, 1, agents...)
	l := ls[0]

	const perAgent = 30
	var acked sync.Map // receipt -> index
	failed := make(chan error, len(agents))
	third := make(chan struct{}, len(agents))
	down := make(chan struct{})
	var wg sync.WaitGroup
	for n, a := range agents {
		rs := a.Chain(t, perAgent)
		wg.Go(func() {
			reported := false
			for i := 0; i < len(rs); {
				if i == perAgent/3 && !reported {
					third <- struct{}{}
					<-down // a third appended before the server stops
				}
				idx, err := l.Append(t.Context(), rs[i:i+1])
				if err != nil {
					if !errors.Is(err, ErrUnavailable) {
						t.Errorf("agent %d, receipt %d: %v; want ErrUnavailable", n, i+1, err)
						return
					}
					if !reported {
						reported = true
						failed <- err
					}
					time.Sleep(20 * time.Millisecond) // a spool's backoff; the retry is the same request
					continue
				}
				acked.Store(string(rs[i]), idx[0])
				i++
			}
		})
	}
	for range agents {
		<-third
	}
	before := l.Checkpoint()
	if err := srv.Down(); err != nil {
		t.Fatal(err)
	}
	close(down)
	for range agents {
		if err := <-failed; err != nil {
			t.Logf("while down: %v", err)
		}
	}
	if string(l.Checkpoint()) != string(before) {
		t.Errorf("checkpoint changed while the database was down")
	}
	if _, _, err := l.Head(t.Context(), agents[0].KeyID); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Head while down: %v; want ErrUnavailable", err)
	}
	if err := srv.Up(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	total := uint64(len(agents) * perAgent)
	if l.Size() != total {
		t.Fatalf("size %d after every receipt was acknowledged, want %d", l.Size(), total)
	}
	acked.Range(func(k, v any) bool {
		got, err := l.LeafIndex(hasher.HashLeaf([]byte(k.(string))))
		if err != nil || got != v.(uint64) {
			t.Errorf("acknowledged at %d; LeafIndex = %d, %v", v, got, err)
		}
		return true
	})
	rep, err := FsckDB(t.Context(), l.path, l.opts.DBPassword, testVerifier(t))
	if err != nil || rep.Size != total {
		t.Fatalf("FsckDB: %v, %v", rep, err)
	}
}

// lostReplyStore loses the answer of one Update, once armed: the commit
// is applied and Update says the connection broke.
type lostReplyStore struct {
	store.Store
	lose atomic.Bool
}

func (s *lostReplyStore) Update(fn func(store.Tx) error) error {
	err := s.Store.Update(fn)
	if err == nil && s.lose.CompareAndSwap(true, false) {
		return fmt.Errorf("%w: the connection broke during COMMIT", store.ErrUnavailable)
	}
	return err
}

// TestLostCommitReply: a commit whose answer is lost leaves the Log
// behind the database it committed to; the retried Append returns the
// index the receipts got, and appends go on (before replicas, the Log
// refused every later Append until restarted).
func TestLostCommitReply(t *testing.T) {
	t.Parallel()
	a := newAgent(1)
	tl := openTestLogOn(t, onPostgres, 0, a)
	tl.Close()
	s, name, err := openStore(tl.path, tl.opts, false)
	if err != nil {
		t.Fatal(err)
	}
	ls := &lostReplyStore{Store: s}
	l, err := open(ls, name, tl.opts, defaultIndexLag)
	if err != nil {
		s.Close()
		t.Fatal(err)
	}
	defer l.Close()
	rs := a.Chain(t, 3)
	if _, err := l.Append(t.Context(), rs[:1]); err != nil {
		t.Fatal(err)
	}
	ls.lose.Store(true)
	if _, err := l.Append(t.Context(), rs[1:2]); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Append with its answer lost = %v; want ErrUnavailable", err)
	}
	if l.Size() != 1 {
		t.Fatalf("size %d after a lost answer; the commit was not acknowledged", l.Size())
	}
	for i, r := range [][]byte{rs[1], rs[1], rs[2]} { // the retry, again, the next
		want := uint64(max(i, 1))
		idx, err := l.Append(t.Context(), [][]byte{r})
		if err != nil || idx[0] != want {
			t.Fatalf("Append %d after the lost answer = %v, %v; want index %d", i, idx, err, want)
		}
	}
	if l.Size() != 3 {
		t.Fatalf("size %d, want 3", l.Size())
	}
	rep, err := FsckDB(t.Context(), tl.path, tl.opts.DBPassword, testVerifier(t))
	if err != nil || rep.Size != 3 {
		t.Fatalf("FsckDB: %v, %v", rep, err)
	}
}

// appendAfterRestore appends r to l after its database was restored (see
// pgtest.Server.Restore), which cut l's connections: attempts that fail
// because the database is unavailable are retried, for up to a minute.
// An Append that succeeds fails the test; the first other error is
// returned.
func appendAfterRestore(t *testing.T, l *testLog, r []byte) error {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := l.Append(t.Context(), [][]byte{r})
		switch {
		case err == nil:
			t.Fatal("Append on a restored database succeeded")
		case !errors.Is(err, ErrUnavailable) || time.Now().After(deadline):
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReplicaRefusesShrunkLog: a ledger server whose database is restored
// from an older backup while it runs (the stored log now smaller than
// the one it signed) appends nothing on top of it: signing the restored
// log's next sizes would make a second checkpoint for sizes it signed
// before, a fork. It goes on publishing its own checkpoint, and the
// database is left as the backup made it.
func TestReplicaRefusesShrunkLog(t *testing.T) {
	t.Parallel()
	srv := pg.Server(t)
	a, fresh := newAgent(1), newAgent(3)
	db := srv.NewDB(t)
	l := replicasOn(t, db, 1, a, fresh)[0]
	l.mustAppend(t, a.Chain(t, 3)...)
	l.Close()
	backup := srv.Snapshot(t, db)
	l.reopen(t)
	l.mustAppend(t, a.Chain(t, 2)...)
	signed := l.Checkpoint()
	if err := srv.Restore(db, backup); err != nil {
		t.Fatal(err)
	}
	// A new agent's first receipt, which the restored log would take.
	err := appendAfterRestore(t, l, fresh.Next(t))
	if !errors.Is(err, ErrStorage) || !errors.Is(err, errShrunk) || !strings.Contains(err.Error(), "stored size 3, last seen 5") {
		t.Fatalf("Append on a database restored to size 3 = %v; want ErrStorage: %v (stored size 3, last seen 5)", err, errShrunk)
	}
	if l.Size() != 5 || string(l.Checkpoint()) != string(signed) {
		t.Fatalf("after the refusal the server publishes size %d:\n%s\nwant its checkpoint of size 5:\n%s", l.Size(), l.Checkpoint(), signed)
	}
	l.Close()
	if restored := replicasOn(t, db, 1, a)[0]; restored.Size() != 3 {
		t.Fatalf("the restored database holds a log of size %d, want the backup's 3", restored.Size())
	}
}

// TestReplicaRefusesOtherLog: a ledger server whose database is replaced
// by another log's (a larger one, signed by another log key) while it
// runs neither appends to it nor publishes its checkpoint: ErrOtherLog,
// as Open says of such a database.
func TestReplicaRefusesOtherLog(t *testing.T) {
	t.Parallel()
	srv := pg.Server(t)
	a, b, fresh := newAgent(1), newAgent(2), newAgent(3)
	theirsDB, oursDB := srv.NewDB(t), srv.NewDB(t)
	theirs := replicasOn(t, theirsDB, 1, a, b, fresh)[0]
	theirs.mustAppend(t, a.Chain(t, 5)...)
	theirs.Close()

	skey, vkey, err := GenerateKey(testOrigin) // same origin, another key
	if err != nil {
		t.Fatal(err)
	}
	ours := &testLog{path: oursDB.URL, agents: theirs.agents, opts: theirs.opts}
	ours.opts.DBPassword = oursDB.Password
	if ours.opts.Signer, err = note.NewSigner(skey); err != nil {
		t.Fatal(err)
	}
	if ours.verifier, err = note.NewVerifier(vkey); err != nil {
		t.Fatal(err)
	}
	ours.reopen(t)
	ours.mustAppend(t, b.Chain(t, 3)...)
	signed := ours.Checkpoint()
	if err := srv.Restore(oursDB, theirsDB); err != nil {
		t.Fatal(err)
	}
	// A new agent's first receipt, which the other log would take.
	err = appendAfterRestore(t, ours, fresh.Next(t))
	if !errors.Is(err, ErrStorage) || !errors.Is(err, ErrOtherLog) || !strings.Contains(err.Error(), keyName(ours.opts.Signer.Name(), ours.opts.Signer.KeyHash())) {
		t.Fatalf("Append on a database holding another log = %v; want ErrStorage and ErrOtherLog naming this log key", err)
	}
	if ours.Size() != 3 || string(ours.Checkpoint()) != string(signed) {
		t.Fatalf("after the refusal the server publishes size %d:\n%s\nwant its own checkpoint of size 3:\n%s", ours.Size(), ours.Checkpoint(), signed)
	}
}
