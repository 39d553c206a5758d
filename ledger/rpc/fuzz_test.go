package rpc_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"testing"

	"connectrpc.com/connect"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"google.golang.org/protobuf/proto"

	"github.com/bankdoor/bankdoor/internal/agentchain/chaintest"
	"github.com/bankdoor/bankdoor/ledger/receipt"
	ledgerv1 "github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1"
)

// fuzzAgent has a fixed key (seed 00 01 ... 1f, the example key of package
// receipt), so that the committed seed corpus holds receipts it signed.
func fuzzAgent() *agent {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(i)
	}
	return chaintest.New(ed25519.NewKeyFromSeed(seed), receiptsStart)
}

// FuzzAppendRequest decodes arbitrary bytes as an AppendRequest (or, if
// they are not one, as a single receipt) and appends it. It must never
// panic; a refused request must leave the log as it was; an accepted one
// must have stored exactly its receipts, each a receipt of an enrolled
// agent, at the indexes returned.
func FuzzAppendRequest(f *testing.F) {
	a := fuzzAgent()
	l := openTestLedger(f, a)
	good := a.Chain(f, 3)
	for _, rs := range [][][]byte{good[:1], good, {good[1]}, {good[0], []byte("{}")}} {
		b, err := proto.Marshal(&ledgerv1.AppendRequest{Receipts: rs})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(good[0])
	f.Fuzz(func(t *testing.T, data []byte) {
		req := &ledgerv1.AppendRequest{}
		if err := proto.Unmarshal(data, req); err != nil {
			req.Receipts = [][]byte{data}
		}
		before := l.log.Checkpoint()
		resp, err := l.svc.Append(t.Context(), connect.NewRequest(req))
		if err != nil {
			if after := l.log.Checkpoint(); !bytes.Equal(before, after) {
				t.Fatalf("refused Append (%v) changed the log:\n%s\nwas\n%s", err, after, before)
			}
			wantEdgeError(t, err)
			return
		}
		checkStored(t, l, req.Receipts, resp.Msg.Indexes)
	})
}

// checkStored: each receipt is a valid receipt of an enrolled agent and
// the log holds it at its index.
func checkStored(t *testing.T, l *testLedger, rs [][]byte, indexes []uint64) {
	t.Helper()
	if len(indexes) != len(rs) {
		t.Fatalf("Append returned %d indexes for %d receipts", len(indexes), len(rs))
	}
	for i, r := range rs {
		parsed, err := receipt.Parse(r)
		if err != nil {
			t.Fatalf("Append accepted receipts[%d], which does not parse: %v", i, err)
		}
		if err := parsed.Verify(fuzzAgent().Public()); err != nil {
			t.Fatalf("Append accepted receipts[%d], which the enrolled key does not verify: %v", i, err)
		}
		got, err := l.log.Entries(indexes[i], 1)
		if err != nil || len(got) != 1 || !bytes.Equal(got[0], r) {
			t.Fatalf("entry %d is not receipts[%d]: %q, %v", indexes[i], i, got, err)
		}
	}
}

// wantEdgeError: every refusal is a Connect error with a code the edge
// chose, never an internal error.
func wantEdgeError(t *testing.T, err error) {
	t.Helper()
	var ce *connect.Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %v is not a Connect error", err)
	}
	switch ce.Code() {
	case connect.CodeInvalidArgument, connect.CodePermissionDenied, connect.CodeFailedPrecondition,
		connect.CodeNotFound, connect.CodeOutOfRange:
	default:
		t.Fatalf("error code %v (%s): want a code that blames the request", ce.Code(), ce.Message())
	}
}

// FuzzProofRequest asks for proofs and entries with arbitrary fields. An
// answer must verify against the signed checkpoint of the size it names;
// a refusal must blame the request.
func FuzzProofRequest(f *testing.F) {
	a := fuzzAgent()
	l := openTestLedger(f, a)
	const n = 7
	rs := a.Chain(f, n)
	roots := map[uint64][]byte{} // tree size -> root hash, from signed checkpoints
	for i, r := range rs {
		if _, err := l.svc.Append(f.Context(), appendReq(r)); err != nil {
			f.Fatal(err)
		}
		roots[uint64(i+1)] = l.checkpoint(l.log.Checkpoint()).Hash
	}
	f.Add(leafHash(rs[3]), uint64(0), uint64(0), uint64(2), uint64(0), true)
	f.Add([]byte(nil), uint64(5), uint64(6), uint64(1), uint64(7), false)
	f.Add(make([]byte, 31), uint64(1<<63), uint64(8), uint64(8), uint64(1), true)
	f.Fuzz(func(t *testing.T, hash []byte, index, size, from, to uint64, byHash bool) {
		req := &ledgerv1.GetInclusionProofRequest{TreeSize: size, Leaf: &ledgerv1.GetInclusionProofRequest_Index{Index: index}}
		if byHash {
			req.Leaf = &ledgerv1.GetInclusionProofRequest_LeafHash{LeafHash: hash}
		}
		if resp, err := l.svc.GetInclusionProof(t.Context(), connect.NewRequest(req)); err != nil {
			wantEdgeError(t, err)
		} else {
			m := resp.Msg
			if err := proof.VerifyInclusion(rfc6962.DefaultHasher, m.Index, m.TreeSize, leafHash(rs[m.Index]), m.Hashes, roots[m.TreeSize]); err != nil {
				t.Fatalf("inclusion proof for %v does not verify: %v", req, err)
			}
			if byHash && !bytes.Equal(hash, leafHash(rs[m.Index])) {
				t.Fatalf("proof for leaf hash %s is of leaf %d", hex.EncodeToString(hash), m.Index)
			}
		}
		creq := &ledgerv1.GetConsistencyProofRequest{FromSize: from, ToSize: to}
		if resp, err := l.svc.GetConsistencyProof(t.Context(), connect.NewRequest(creq)); err != nil {
			wantEdgeError(t, err)
		} else {
			m := resp.Msg
			if err := proof.VerifyConsistency(rfc6962.DefaultHasher, m.FromSize, m.ToSize, m.Hashes, roots[m.FromSize], roots[m.ToSize]); err != nil {
				t.Fatalf("consistency proof for %v does not verify: %v", creq, err)
			}
		}
		ereq := &ledgerv1.GetEntriesRequest{Start: from, Count: to}
		if resp, err := l.svc.GetEntries(t.Context(), connect.NewRequest(ereq)); err != nil {
			wantEdgeError(t, err)
		} else {
			for i, e := range resp.Msg.Entries {
				if !bytes.Equal(e, rs[from+uint64(i)]) {
					t.Fatalf("GetEntries(%d, %d)[%d] is not receipt %d", from, to, i, from+uint64(i))
				}
			}
		}
	})
}
