package verifier_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"connectrpc.com/connect"
	"github.com/transparency-dev/merkle/rfc6962"

	ledgerv1 "github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1"
	"github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1/ledgerv1connect"
	"github.com/bankdoor/bankdoor/verifier"
)

// hostile is a ledger that answers with the fuzzer's checkpoint (if not
// empty) and, for the second receipt, the fuzzer's inclusion proof; other
// answers are the real ledger's.
type hostile struct {
	ledgerv1connect.LedgerServiceClient
	checkpoint  []byte
	second      [32]byte // RFC 6962 leaf hash of receipt 2
	index, size uint64
	hashes      [][]byte
}

func (h *hostile) GetCheckpoint(ctx context.Context, req *connect.Request[ledgerv1.GetCheckpointRequest]) (*connect.Response[ledgerv1.GetCheckpointResponse], error) {
	if len(h.checkpoint) > 0 {
		return connect.NewResponse(&ledgerv1.GetCheckpointResponse{Checkpoint: h.checkpoint}), nil
	}
	return h.LedgerServiceClient.GetCheckpoint(ctx, req)
}

func (h *hostile) GetInclusionProof(ctx context.Context, req *connect.Request[ledgerv1.GetInclusionProofRequest]) (*connect.Response[ledgerv1.GetInclusionProofResponse], error) {
	if bytes.Equal(req.Msg.GetLeafHash(), h.second[:]) {
		return connect.NewResponse(&ledgerv1.GetInclusionProofResponse{Index: h.index, TreeSize: h.size, Hashes: h.hashes}), nil
	}
	return h.LedgerServiceClient.GetInclusionProof(ctx, req)
}

// FuzzVerifyInLog: whatever checkpoint and inclusion proof a hostile
// ledger sends, VerifyInLog accepts only the real ones (another proof that
// verifies would be a SHA-256 collision), and never panics.
func FuzzVerifyInLog(f *testing.F) {
	w := newWorld(f)
	w.write(3, 3)
	rep := w.verifyDir()
	ctx := context.Background()
	real, err := verifier.VerifyInLog(ctx, rep, w.client, w.vkey)
	if err != nil {
		f.Fatal(err)
	}
	leaf := rfc6962.DefaultHasher.HashLeaf(readFile(f, filepath.Join(w.dir, rep.Receipts[1].File)))
	resp, err := w.client.GetInclusionProof(ctx, connect.NewRequest(&ledgerv1.GetInclusionProofRequest{
		Leaf: &ledgerv1.GetInclusionProofRequest_LeafHash{LeafHash: leaf}, TreeSize: real.Size}))
	if err != nil {
		f.Fatal(err)
	}
	index, size, flat := resp.Msg.GetIndex(), resp.Msg.GetTreeSize(), bytes.Join(resp.Msg.GetHashes(), nil)
	cp := w.log.Checkpoint()

	f.Add([]byte{}, index, size, flat) // the real answers
	f.Add(cp, index, size, flat)
	f.Add(append(bytes.Clone(cp), cp...), index, size, flat)
	f.Add(bytes.Replace(cp, []byte("\n3\n"), []byte("\n4\n"), 1), index, size, flat)
	f.Add([]byte{}, index+1, size, flat)
	f.Add([]byte{}, index, size+1, flat)
	f.Add([]byte{}, index, size, flat[:len(flat)-1])
	f.Add([]byte{}, index, size, append(bytes.Clone(flat), flat...))
	f.Fuzz(func(t *testing.T, checkpoint []byte, i, n uint64, hashes []byte) {
		h := &hostile{LedgerServiceClient: w.client, checkpoint: checkpoint, index: i, size: n, hashes: chunks(hashes, 32)}
		copy(h.second[:], leaf)
		got, err := verifier.VerifyInLog(ctx, rep, h, w.vkey)
		if err != nil {
			return
		}
		if got.Size != real.Size || !bytes.Equal(got.Root, real.Root) || i != index || !bytes.Equal(hashes, flat) {
			t.Fatalf("VerifyInLog accepted a forged answer: checkpoint %q, proof index %d size %d hashes %x", checkpoint, i, n, hashes)
		}
	})
}

// chunks cuts b into n-byte pieces; the last may be shorter.
func chunks(b []byte, n int) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		k := min(n, len(b))
		out = append(out, b[:k])
		b = b[k:]
	}
	return out
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
