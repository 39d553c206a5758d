package rpc_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/bankdoor/bankdoor/ledger"
	"github.com/bankdoor/bankdoor/ledger/rpc"
	ledgerv1 "github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1"
	"github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1/ledgerv1connect"
)

// TestAppendAndRead appends over each protocol and checks every read
// against the signed checkpoint: proofs verify, entries are the receipts
// byte for byte, the agent's head is the last receipt.
func TestAppendAndRead(t *testing.T) {
	t.Parallel()
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			a := newAgent(t)
			l := newTestLedger(t, nil, a)
			c := p.client(l)
			first, second := a.Chain(t, 3), a.Chain(t, 2)

			wantIndexes(t, c, first, 0, 1, 2)
			cp3 := l.checkpoint(getCheckpoint(t, c))
			wantIndexes(t, c, second, 3, 4)
			// A replayed batch is idempotent: same indexes, no growth.
			wantIndexes(t, c, first, 0, 1, 2)
			cp5 := l.checkpoint(getCheckpoint(t, c))
			if cp3.Size != 3 || cp5.Size != 5 {
				t.Fatalf("checkpoint sizes %d, %d; want 3, 5", cp3.Size, cp5.Size)
			}
			all := append(first, second...)
			checkInclusion(t, c, all, cp3.Size, cp3.Hash)
			checkInclusion(t, c, all, cp5.Size, cp5.Hash)
			checkConsistency(t, c, cp3.Size, cp3.Hash, cp5.Size, cp5.Hash)

			resp, err := c.GetEntries(t.Context(), connect.NewRequest(&ledgerv1.GetEntriesRequest{}))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(all, resp.Msg.Entries); diff != "" {
				t.Errorf("GetEntries(0, 0) differs from the receipts (-want +got):\n%s", diff)
			}
			checkHead(t, c, a.KeyID, &ledgerv1.GetAgentHeadResponse{Found: true, Seq: 5, ReceiptSha256: sha(all[4]), Index: 4})
			checkHead(t, c, newAgent(t).KeyID, &ledgerv1.GetAgentHeadResponse{})
		})
	}
}

func wantIndexes(t *testing.T, c ledgerv1connect.LedgerServiceClient, rs [][]byte, want ...uint64) {
	t.Helper()
	resp, err := c.Append(t.Context(), appendReq(rs...))
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	if diff := cmp.Diff(want, resp.Msg.Indexes); diff != "" {
		t.Fatalf("Append indexes (-want +got):\n%s", diff)
	}
}

func getCheckpoint(t *testing.T, c ledgerv1connect.LedgerServiceClient) []byte {
	t.Helper()
	resp, err := c.GetCheckpoint(t.Context(), connect.NewRequest(&ledgerv1.GetCheckpointRequest{}))
	if err != nil {
		t.Fatalf("GetCheckpoint: %v", err)
	}
	return resp.Msg.Checkpoint
}

// checkInclusion proves every receipt in the tree of size, by index and
// by leaf hash.
func checkInclusion(t *testing.T, c ledgerv1connect.LedgerServiceClient, rs [][]byte, size uint64, root []byte) {
	t.Helper()
	for i := range size {
		for _, req := range []*ledgerv1.GetInclusionProofRequest{
			{Leaf: &ledgerv1.GetInclusionProofRequest_Index{Index: i}, TreeSize: size},
			{Leaf: &ledgerv1.GetInclusionProofRequest_LeafHash{LeafHash: leafHash(rs[i])}, TreeSize: size},
		} {
			resp, err := c.GetInclusionProof(t.Context(), connect.NewRequest(req))
			if err != nil {
				t.Fatalf("GetInclusionProof(%v): %v", req, err)
			}
			m := resp.Msg
			if m.Index != i || m.TreeSize != size {
				t.Fatalf("GetInclusionProof(%v) = index %d size %d; want %d, %d", req, m.Index, m.TreeSize, i, size)
			}
			if err := proof.VerifyInclusion(rfc6962.DefaultHasher, i, size, leafHash(rs[i]), m.Hashes, root); err != nil {
				t.Fatalf("inclusion proof of leaf %d in size %d does not verify: %v", i, size, err)
			}
		}
	}
}

func checkConsistency(t *testing.T, c ledgerv1connect.LedgerServiceClient, from uint64, fromRoot []byte, to uint64, toRoot []byte) {
	t.Helper()
	resp, err := c.GetConsistencyProof(t.Context(), connect.NewRequest(&ledgerv1.GetConsistencyProofRequest{FromSize: from, ToSize: to}))
	if err != nil {
		t.Fatalf("GetConsistencyProof(%d, %d): %v", from, to, err)
	}
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, from, to, resp.Msg.Hashes, fromRoot, toRoot); err != nil {
		t.Fatalf("consistency proof %d -> %d does not verify: %v", from, to, err)
	}
}

func checkHead(t *testing.T, c ledgerv1connect.LedgerServiceClient, keyID string, want *ledgerv1.GetAgentHeadResponse) {
	t.Helper()
	resp, err := c.GetAgentHead(t.Context(), connect.NewRequest(&ledgerv1.GetAgentHeadRequest{KeyId: keyID}))
	if err != nil {
		t.Fatalf("GetAgentHead(%s): %v", keyID, err)
	}
	got := resp.Msg
	if got.Found != want.Found || got.Seq != want.Seq || got.Index != want.Index || !bytes.Equal(got.ReceiptSha256, want.ReceiptSha256) {
		t.Fatalf("GetAgentHead(%s) = %v, want %v", keyID, got, want)
	}
}

func sha(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

// TestGetEntriesCap: a GetEntries returns at most ledger.MaxEntries
// entries, the one limit of the ledger's Entries too, however many are
// asked for, and never past the checkpoint.
func TestGetEntriesCap(t *testing.T) {
	t.Parallel()
	a := newAgent(t)
	l := newTestLedger(t, nil, a)
	c := l.grpc()
	rs := a.Chain(t, ledger.MaxEntries+5)
	for at := 0; at < len(rs); at += rpc.MaxAppendReceipts / 2 {
		if _, err := c.Append(t.Context(), appendReq(rs[at:min(at+rpc.MaxAppendReceipts/2, len(rs))]...)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		start, count uint64
		want         int
	}{
		{0, 0, ledger.MaxEntries},
		{0, 5000, ledger.MaxEntries},
		{1, 10, 10},
		{ledger.MaxEntries, 0, 5},
		{ledger.MaxEntries + 4, 100, 1},
	} {
		resp, err := c.GetEntries(t.Context(), connect.NewRequest(&ledgerv1.GetEntriesRequest{Start: tc.start, Count: tc.count}))
		if err != nil {
			t.Fatalf("GetEntries(%d, %d): %v", tc.start, tc.count, err)
		}
		if got := resp.Msg.Entries; len(got) != tc.want || !bytes.Equal(got[0], rs[tc.start]) {
			t.Errorf("GetEntries(%d, %d) = %d entries, want %d starting with receipt %d", tc.start, tc.count, len(got), tc.want, tc.start)
		}
	}
}

// TestWatchCheckpoints: the stream sends the latest checkpoint, then one
// covering each new append.
func TestWatchCheckpoints(t *testing.T) {
	t.Parallel()
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			a := newAgent(t)
			l := newTestLedger(t, nil, a)
			c := p.client(l)
			stream, err := c.WatchCheckpoints(t.Context(), connect.NewRequest(&ledgerv1.WatchCheckpointsRequest{}))
			if err != nil {
				t.Fatal(err)
			}
			defer stream.Close()
			for want := uint64(0); want <= 3; want++ {
				if want > 0 {
					wantIndexes(t, c, a.Chain(t, 1), want-1)
				}
				// A slow reader may skip to the newest, never go back.
				for {
					if !stream.Receive() {
						t.Fatalf("stream ended: %v", stream.Err())
					}
					got := l.checkpoint(stream.Msg().Checkpoint).Size
					if got > want {
						t.Fatalf("watch sent size %d before the append that makes size %d", got, want)
					}
					if got == want {
						break
					}
				}
			}
		})
	}
}

// TestWatchStop: Stop ends the streams with Unavailable, so that a server
// can shut down, and the health check turns 503.
func TestWatchStop(t *testing.T) {
	t.Parallel()
	l := newTestLedger(t, nil)
	stream, err := l.grpc().WatchCheckpoints(t.Context(), connect.NewRequest(&ledgerv1.WatchCheckpointsRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	if !stream.Receive() {
		t.Fatalf("no first checkpoint: %v", stream.Err())
	}
	l.svc.Stop()
	if stream.Receive() {
		t.Fatalf("stream went on after Stop")
	}
	wantCode(t, stream.Err(), connect.CodeUnavailable, "shutting down")
	resp, err := http.Get(l.srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("GET /healthz after Stop: %s, want 503", resp.Status)
	}
}

func TestHealth(t *testing.T) {
	t.Parallel()
	a := newAgent(t)
	l := newTestLedger(t, nil, a)
	wantIndexes(t, l.grpc(), a.Chain(t, 2), 0, 1)
	resp, err := http.Get(l.srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var got struct {
		Status string
		Size   uint64
	}
	if err := json.Unmarshal(body, &got); err != nil || resp.StatusCode != 200 || got.Status != "ok" || got.Size != 2 {
		t.Fatalf("GET /healthz = %s %q (%v), want 200 with status ok and size 2", resp.Status, body, err)
	}
}

// TestCompressLargeAnswersOnly: a client that accepts gzip gets small
// answers (Append's, a checkpoint) uncompressed and a large one (a page of
// entries) compressed.
func TestCompressLargeAnswersOnly(t *testing.T) {
	a := newAgent(t)
	l := newTestLedger(t, nil, a)
	rs := a.Chain(t, 20)
	post := func(procedure, body string) (string, int) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), "POST", l.srv.URL+procedure, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept-Encoding", "gzip") // set by hand: the transport leaves the answer as sent
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		n, err := io.Copy(io.Discard, resp.Body)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %s, %v", procedure, resp.Status, err)
		}
		return resp.Header.Get("Content-Encoding"), int(n)
	}
	for _, r := range rs {
		body := fmt.Sprintf(`{"receipts":[%q]}`, base64.StdEncoding.EncodeToString(r))
		if enc, n := post(ledgerv1connect.LedgerServiceAppendProcedure, body); enc != "" {
			t.Fatalf("Append's answer (%d bytes) sent with Content-Encoding %q; want none", n, enc)
		}
	}
	if enc, n := post(ledgerv1connect.LedgerServiceGetCheckpointProcedure, `{}`); enc != "" {
		t.Errorf("GetCheckpoint's answer (%d bytes) sent with Content-Encoding %q; want none", n, enc)
	}
	if enc, n := post(ledgerv1connect.LedgerServiceGetEntriesProcedure, `{"start":"0","count":"20"}`); enc != "gzip" {
		t.Errorf("GetEntries' answer of 20 receipts (%d bytes on the wire) sent with Content-Encoding %q; want gzip", n, enc)
	}
}
