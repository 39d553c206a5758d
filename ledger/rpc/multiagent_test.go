package rpc_test

import (
	"encoding/hex"
	"sync"
	"testing"

	"connectrpc.com/connect"
	"github.com/transparency-dev/formats/log"

	"github.com/bankdoor/bankdoor/ledger"
	"github.com/bankdoor/bankdoor/ledger/receipt"
	ledgerv1 "github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1"
	"github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1/ledgerv1connect"
)

// TestManyAgents: several agents with their own keys append concurrently,
// over both protocols, in batches of varying size, each also re-sending
// one batch. At the end every receipt is in the log exactly once, every
// agent's chain is whole and in order, every inclusion proof verifies
// against the final checkpoint, every checkpoint seen on the way is
// consistent with it, and fsck finds the file clean.
func TestManyAgents(t *testing.T) {
	t.Parallel()
	const agents, perAgent = 5, 24
	as := make([]*agent, agents)
	for i := range as {
		as[i] = newAgent(t)
	}
	l := newTestLedger(t, nil, as...)
	seen := watch(t, l)

	var wg sync.WaitGroup
	for i, a := range as {
		c := protocols[i%len(protocols)].client(l)
		rs := a.Chain(t, perAgent)
		wg.Go(func() { appendAll(t, c, rs, i) })
	}
	wg.Wait()

	c := l.grpc()
	final := l.checkpoint(getCheckpoint(t, c))
	if final.Size != agents*perAgent {
		t.Fatalf("final size %d, want %d: receipts lost or duplicated", final.Size, agents*perAgent)
	}
	entries := allEntries(t, c, final.Size)
	checkChains(t, entries, as, perAgent)
	checkInclusion(t, c, entries, final.Size, final.Hash)
	for _, cp := range seen() {
		if cp.Size > 0 && cp.Size < final.Size {
			checkConsistency(t, c, cp.Size, cp.Hash, final.Size, final.Hash)
		}
	}

	l.srv.Close()
	if err := l.log.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := ledger.Fsck(t.Context(), l.db, l.verifier)
	if err != nil {
		t.Fatalf("fsck: %v", err)
	}
	if rep.Size != final.Size || rep.Agents != agents {
		t.Fatalf("fsck: %v; want size %d, %d agents", rep, final.Size, agents)
	}
}

// appendAll sends rs in batches of 1 to 5, re-sending the second batch.
func appendAll(t *testing.T, c ledgerv1connect.LedgerServiceClient, rs [][]byte, seed int) {
	var batches [][][]byte
	for i, n := 0, seed; i < len(rs); n++ {
		size := min(1+n%5, len(rs)-i)
		batches = append(batches, rs[i:i+size])
		i += size
	}
	batches = append(batches[:2], append([][][]byte{batches[1]}, batches[2:]...)...)
	for _, b := range batches {
		if _, err := c.Append(t.Context(), appendReq(b...)); err != nil {
			t.Errorf("agent %d: Append: %v", seed, err)
			return
		}
	}
}

// watch collects the checkpoints WatchCheckpoints sends until the test
// calls the function it returns.
func watch(t *testing.T, l *testLedger) func() []*log.Checkpoint {
	stream, err := l.grpc().WatchCheckpoints(t.Context(), connect.NewRequest(&ledgerv1.WatchCheckpointsRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	var cps []*log.Checkpoint
	done := make(chan struct{})
	go func() {
		defer close(done)
		for stream.Receive() {
			cps = append(cps, l.checkpoint(stream.Msg().Checkpoint))
		}
	}()
	return func() []*log.Checkpoint {
		stream.Close()
		<-done
		if len(cps) < 2 {
			t.Errorf("watch saw %d checkpoints, want several", len(cps))
		}
		return cps
	}
}

func allEntries(t *testing.T, c ledgerv1connect.LedgerServiceClient, size uint64) [][]byte {
	t.Helper()
	var all [][]byte
	for uint64(len(all)) < size {
		resp, err := c.GetEntries(t.Context(), connect.NewRequest(&ledgerv1.GetEntriesRequest{Start: uint64(len(all)), Count: 7}))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, resp.Msg.Entries...)
	}
	return all
}

// checkChains: the entries are exactly the agents' receipts, each once,
// each agent's in seq order with whole prev links.
func checkChains(t *testing.T, entries [][]byte, as []*agent, perAgent int) {
	t.Helper()
	heads := map[string]string{} // key_id -> hash of its last receipt seen
	seqs := map[string]uint64{}
	keys := map[string]*agent{}
	for _, a := range as {
		keys[a.KeyID] = a
	}
	for i, e := range entries {
		r, err := receipt.Parse(e)
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		a, ok := keys[r.KeyID]
		if !ok {
			t.Fatalf("entry %d: key_id %s is not one of the agents", i, r.KeyID)
		}
		if err := r.Verify(a.Public()); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		want := heads[r.KeyID]
		if want == "" {
			want = receipt.FirstPrev
		}
		if r.Seq != seqs[r.KeyID]+1 || r.Prev != want {
			t.Fatalf("entry %d: agent %s seq %d prev %s; want seq %d prev %s", i, r.KeyID, r.Seq, r.Prev, seqs[r.KeyID]+1, want)
		}
		sum := receipt.Hash(e)
		heads[r.KeyID], seqs[r.KeyID] = hex.EncodeToString(sum[:]), r.Seq
	}
	for _, a := range as {
		if seqs[a.KeyID] != uint64(perAgent) || heads[a.KeyID] != a.Prev {
			t.Errorf("agent %s: log ends at seq %d, want %d", a.KeyID, seqs[a.KeyID], perAgent)
		}
	}
}
