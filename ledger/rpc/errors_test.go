package rpc_test

import (
	"bytes"
	"testing"

	"connectrpc.com/connect"

	"github.com/bankdoor/bankdoor/ledger/receipt"
	"github.com/bankdoor/bankdoor/ledger/rpc"
	ledgerv1 "github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1"
	"github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1/ledgerv1connect"
)

// TestBadRequests sends every kind of bad request over both protocols and
// checks the code, that the message names the problem, and that the log
// did not change.
func TestBadRequests(t *testing.T) {
	t.Parallel()
	a, stranger := newAgent(t), newAgent(t)
	good := a.Chain(t, 2)
	next := a.Chain(t, 1)[0]     // seq 3, not yet sent
	skip := a.Sign(t, 5, a.Prev) // seq 5 after head 2
	foreign := stranger.Chain(t, 1)[0]
	tampered := bytes.Replace(next, []byte(`"seq":3`), []byte(`"seq":4`), 1)
	small := func(n int) [][]byte {
		rs := make([][]byte, n)
		for i := range rs {
			rs[i] = []byte("{}")
		}
		return rs
	}
	type client = ledgerv1connect.LedgerServiceClient
	incl := func(req *ledgerv1.GetInclusionProofRequest) func(t *testing.T, c client) error {
		return func(t *testing.T, c client) error {
			_, err := c.GetInclusionProof(t.Context(), connect.NewRequest(req))
			return err
		}
	}
	appendRs := func(rs ...[]byte) func(t *testing.T, c client) error {
		return func(t *testing.T, c client) error {
			_, err := c.Append(t.Context(), appendReq(rs...))
			return err
		}
	}
	cons := func(from, to uint64) func(t *testing.T, c client) error {
		return func(t *testing.T, c client) error {
			_, err := c.GetConsistencyProof(t.Context(), connect.NewRequest(&ledgerv1.GetConsistencyProofRequest{FromSize: from, ToSize: to}))
			return err
		}
	}
	byIndex := func(i, size uint64) *ledgerv1.GetInclusionProofRequest {
		return &ledgerv1.GetInclusionProofRequest{Leaf: &ledgerv1.GetInclusionProofRequest_Index{Index: i}, TreeSize: size}
	}
	byHash := func(h []byte) *ledgerv1.GetInclusionProofRequest {
		return &ledgerv1.GetInclusionProofRequest{Leaf: &ledgerv1.GetInclusionProofRequest_LeafHash{LeafHash: h}}
	}
	tests := []struct {
		name string
		call func(t *testing.T, c client) error
		code connect.Code
		want []string
	}{
		{"append nothing", appendRs(), connect.CodeInvalidArgument, []string{"receipts is empty"}},
		{"append garbage", appendRs([]byte("\x00\xffnot a receipt")), connect.CodeInvalidArgument, []string{"invalid receipt"}},
		{"append empty receipt", appendRs(next, nil), connect.CodeInvalidArgument, []string{"receipts[1] is empty"}},
		{"append oversized receipt", appendRs(bytes.Repeat([]byte("x"), receipt.MaxSize+1)), connect.CodeInvalidArgument, []string{"16385 bytes, over the 16384-byte"}},
		{"append too many", appendRs(small(rpc.MaxAppendReceipts + 1)...), connect.CodeInvalidArgument, []string{"1001 receipts, over the limit of 1000", "split"}},
		{"append unknown key", appendRs(foreign), connect.CodePermissionDenied, []string{stranger.KeyID, "not enrolled"}},
		{"append broken chain", appendRs(skip), connect.CodeFailedPrecondition, []string{"the next is seq 3"}},
		{"append tampered", appendRs(tampered), connect.CodeInvalidArgument, nil},
		{"append good then bad", appendRs(next, foreign), connect.CodePermissionDenied, nil},
		{"inclusion without leaf", incl(&ledgerv1.GetInclusionProofRequest{}), connect.CodeInvalidArgument, []string{"set leaf_hash or index"}},
		{"inclusion short leaf_hash", incl(byHash(make([]byte, 31))), connect.CodeInvalidArgument, []string{"leaf_hash is 31 bytes, want 32"}},
		{"inclusion long leaf_hash", incl(byHash(make([]byte, 33))), connect.CodeInvalidArgument, []string{"leaf_hash is 33 bytes, want 32"}},
		{"inclusion unknown leaf", incl(byHash(leafHash(next))), connect.CodeNotFound, nil},
		{"inclusion size beyond tree", incl(byIndex(0, 3)), connect.CodeOutOfRange, []string{"tree_size 3 is beyond", "size 2"}},
		{"inclusion index beyond size", incl(byIndex(1, 1)), connect.CodeOutOfRange, []string{"leaf 1 is not in the tree of size 1"}},
		{"inclusion huge index", incl(byIndex(1<<63, 0)), connect.CodeOutOfRange, nil},
		{"consistency from 0", cons(0, 2), connect.CodeInvalidArgument, []string{"from_size 0"}},
		{"consistency from > to", cons(2, 1), connect.CodeInvalidArgument, []string{"from_size 2"}},
		{"consistency beyond tree", cons(1, 3), connect.CodeOutOfRange, []string{"to_size 3 is beyond"}},
		{"entries beyond tree", func(t *testing.T, c client) error {
			_, err := c.GetEntries(t.Context(), connect.NewRequest(&ledgerv1.GetEntriesRequest{Start: 2}))
			return err
		}, connect.CodeOutOfRange, []string{"start 2"}},
		{"head bad key_id", func(t *testing.T, c client) error {
			_, err := c.GetAgentHead(t.Context(), connect.NewRequest(&ledgerv1.GetAgentHeadRequest{KeyId: a.KeyID[:15] + "A"}))
			return err
		}, connect.CodeInvalidArgument, []string{"16 lower-case hex"}},
	}
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			l := newTestLedger(t, nil, a)
			c := p.client(l)
			wantIndexes(t, c, good, 0, 1)
			before := l.log.Checkpoint()
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					wantCode(t, tc.call(t, c), tc.code, tc.want...)
					if after := l.log.Checkpoint(); !bytes.Equal(after, before) {
						t.Fatalf("the log changed:\n%s\nwant\n%s", after, before)
					}
					checkHead(t, c, a.KeyID, &ledgerv1.GetAgentHeadResponse{Found: true, Seq: 2, ReceiptSha256: sha(good[1]), Index: 1})
				})
			}
		})
	}
}

// TestOversizedMessage: a message over MaxRequestBytes is refused before
// it is decoded.
func TestOversizedMessage(t *testing.T) {
	t.Parallel()
	a := newAgent(t)
	l := newTestLedger(t, nil, a)
	big := bytes.Repeat([]byte("x"), receipt.MaxSize)
	rs := make([][]byte, rpc.MaxRequestBytes/receipt.MaxSize+1)
	for i := range rs {
		rs[i] = big
	}
	_, err := l.grpc().Append(t.Context(), appendReq(rs...))
	wantCode(t, err, connect.CodeResourceExhausted)
	if l.log.Size() != 0 {
		t.Fatalf("log size %d after an oversized request, want 0", l.log.Size())
	}
}
