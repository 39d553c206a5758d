package rpc_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"testing"
	"time"

	"connectrpc.com/connect"
	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/anchor/cosignature"
	"github.com/bankdoor/bankdoor/ledger/rpc"
	ledgerv1 "github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1"
	"github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1/ledgerv1connect"
)

// witness is a witness key: it cosigns checkpoints as omniwitness does
// (cosignature/v1), with no network in between.
type witness struct {
	signer   note.Signer
	vkey     string
	verifier note.Verifier
}

func newWitness(t testing.TB, name string) *witness {
	t.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, name)
	if err != nil {
		t.Fatal(err)
	}
	w := &witness{vkey: vkey}
	if w.signer, err = fnote.NewSignerForCosignatureV1(skey); err != nil {
		t.Fatal(err)
	}
	if w.verifier, err = cosignature.NewWitnessVerifier(vkey); err != nil {
		t.Fatal(err)
	}
	return w
}

// cosign returns w's signature line on the checkpoint note cp.
func (w *witness) cosign(t testing.TB, cp []byte) []byte {
	t.Helper()
	text, _, _ := bytes.Cut(cp, []byte("\n\n"))
	text = append(text, '\n')
	signed, err := note.Sign(&note.Note{Text: string(text)}, w.signer)
	if err != nil {
		t.Fatal(err)
	}
	return signed[len(text)+1:]
}

// forge flips one bit of the Ed25519 signature in a signature line,
// keeping its name, key hash and timestamp.
func forge(t testing.TB, line []byte) []byte {
	t.Helper()
	prefix, b64, _ := bytes.Cut(bytes.TrimSuffix(line, []byte("\n")), []byte(" ")) // "—", then name and base64
	name, sig64, _ := bytes.Cut(b64, []byte(" "))
	sig, err := base64.StdEncoding.DecodeString(string(sig64))
	if err != nil {
		t.Fatal(err)
	}
	sig[len(sig)-1] ^= 1
	return fmt.Appendf(nil, "%s %s %s\n", prefix, name, base64.StdEncoding.EncodeToString(sig))
}

// cosigningLedger is a test ledger that serves cosignatures and accepts
// those of the witnesses.
func cosigningLedger(t testing.TB, auth *rpc.Auth, a *agent, ws ...*witness) *testLedger {
	t.Helper()
	l := newTestLedger(t, auth, a)
	var vs []note.Verifier
	for _, w := range ws {
		vs = append(vs, w.verifier)
	}
	if err := l.svc.Cosign(l.verifier, vs); err != nil {
		t.Fatal(err)
	}
	return l
}

func addCosignature(c ledgerv1connect.LedgerServiceClient, t *testing.T, size uint64, lines []byte) error {
	_, err := c.AddCosignature(t.Context(), connect.NewRequest(&ledgerv1.AddCosignatureRequest{TreeSize: size, Cosignature: lines}))
	return err
}

// TestCosignedCheckpoint hands the ledger two witnesses' cosignatures
// over each protocol: GetCheckpoint then serves the log's signature and
// both cosignatures, and the note meets a quorum of 2 that it did not
// meet with one.
func TestCosignedCheckpoint(t *testing.T) {
	t.Parallel()
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			a, w1, w2 := newAgent(t), newWitness(t, "w1.example"), newWitness(t, "w2.example")
			l := cosigningLedger(t, nil, a, w1, w2)
			c := p.client(l)
			wantIndexes(t, c, a.Chain(t, 3), 0, 1, 2)
			cp := getCheckpoint(t, c)
			policy, err := cosignature.NewPolicy(l.vkey, []string{w1.vkey, w2.vkey}, 2)
			if err != nil {
				t.Fatal(err)
			}
			if err := addCosignature(c, t, 3, w1.cosign(t, cp)); err != nil {
				t.Fatalf("AddCosignature(w1): %v", err)
			}
			if _, err := policy.Verify(getCheckpoint(t, c)); !errors.Is(err, cosignature.ErrQuorum) {
				t.Fatalf("with one cosignature, a quorum of 2: err = %v; want ErrQuorum", err)
			}
			if err := addCosignature(c, t, 3, w2.cosign(t, cp)); err != nil {
				t.Fatalf("AddCosignature(w2): %v", err)
			}
			served := getCheckpoint(t, c)
			v, err := policy.Verify(served)
			if err != nil {
				t.Fatalf("served checkpoint:\n%s\ndoes not meet the quorum: %v", served, err)
			}
			if v.Checkpoint.Size != 3 || len(v.Cosigners) != 2 {
				t.Errorf("verified size %d with %d cosigners; want 3 and 2", v.Checkpoint.Size, len(v.Cosigners))
			}
		})
	}
}

// TestAddCosignatureRefuses sends cosignatures the ledger must not store:
// each is refused with its code, and nothing is served or stored.
func TestAddCosignatureRefuses(t *testing.T) {
	t.Parallel()
	a, w, other := newAgent(t), newWitness(t, "w.example"), newWitness(t, "other.example")
	l := cosigningLedger(t, nil, a, w)
	c := l.connectJSON()
	wantIndexes(t, c, a.Chain(t, 2), 0, 1)
	cp2 := getCheckpoint(t, c)
	wantIndexes(t, c, a.Chain(t, 1), 2)
	cp3 := getCheckpoint(t, c)
	good := w.cosign(t, cp3)
	forged := forge(t, good)
	tests := []struct {
		name  string
		size  uint64
		lines []byte
		code  connect.Code
		want  string
	}{
		{"forged", 3, forged, connect.CodePermissionDenied, "does not verify"},
		{"another checkpoint", 3, w.cosign(t, cp2), connect.CodePermissionDenied, "does not verify"},
		{"right lines, wrong size", 2, good, connect.CodePermissionDenied, "does not verify"},
		{"unknown witness", 3, other.cosign(t, cp3), connect.CodePermissionDenied, "no line by a witness key"},
		{"not signature lines", 3, []byte("hello\n"), connect.CodePermissionDenied, "not a note signature line"},
		{"empty", 3, nil, connect.CodeInvalidArgument, "empty"},
		{"oversized", 3, bytes.Repeat(good, rpc.MaxCosignatureBytes/len(good)+1), connect.CodeInvalidArgument, "limit"},
		{"beyond the log", 4, good, connect.CodeOutOfRange, "beyond"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantCode(t, addCosignature(c, t, tc.size, tc.lines), tc.code, tc.want)
		})
	}
	for size := range uint64(5) {
		if got, err := l.log.CosignatureStore().Cosignatures(size); len(got) != 0 || err != nil {
			t.Errorf("after refused calls, size %d has cosignatures %q (err %v); want none", size, got, err)
		}
	}
	if served := getCheckpoint(t, c); !bytes.Equal(served, cp3) {
		t.Errorf("after refused calls, GetCheckpoint = %q; want the log-signed note only", served)
	}
}

// TestAddCosignatureOldSize stores a cosignature of a size the log has
// since outgrown: it verifies over the log's checkpoint of that size.
func TestAddCosignatureOldSize(t *testing.T) {
	t.Parallel()
	a, w := newAgent(t), newWitness(t, "w.example")
	l := cosigningLedger(t, nil, a, w)
	c := l.grpc()
	wantIndexes(t, c, a.Chain(t, 2), 0, 1)
	cp2 := getCheckpoint(t, c)
	wantIndexes(t, c, a.Chain(t, 1), 2)
	if err := addCosignature(c, t, 2, w.cosign(t, cp2)); err != nil {
		t.Fatalf("AddCosignature of size 2 in a log of 3: %v", err)
	}
	if n, ok, _ := l.log.CosignatureStore().Latest(w.verifier.Name()); n != 2 || !ok {
		t.Errorf("witness's latest size = %d, %v; want 2, true", n, ok)
	}
}

// TestAddCosignatureNeedsAuth checks that AddCosignature, a write, needs
// credentials whenever Append does, even with reads left open.
func TestAddCosignatureNeedsAuth(t *testing.T) {
	t.Parallel()
	a, w := newAgent(t), newWitness(t, "w.example")
	l := cosigningLedger(t, &rpc.Auth{Tokens: []rpc.Token{token(t, goodToken)}}, a, w)
	c := l.connectJSON()
	cp := getCheckpoint(t, c)
	wantCode(t, addCosignature(c, t, 0, w.cosign(t, cp)), connect.CodeUnauthenticated, "AddCosignature requires authentication")
	if got, _ := l.log.CosignatureStore().Cosignatures(0); len(got) != 0 {
		t.Errorf("an unauthenticated AddCosignature stored %q", got)
	}
}

// TestAddCosignatureNotConfigured checks that a ledger given no witness
// keys refuses every cosignature.
func TestAddCosignatureNotConfigured(t *testing.T) {
	t.Parallel()
	a, w := newAgent(t), newWitness(t, "w.example")
	l := newTestLedger(t, nil, a)
	c := l.connectJSON()
	wantCode(t, addCosignature(c, t, 0, w.cosign(t, getCheckpoint(t, c))), connect.CodeFailedPrecondition, "trusts no witness key")
}

// TestWatchSendsCosigned checks that a watcher gets the checkpoint again
// once a cosignature of it is stored.
func TestWatchSendsCosigned(t *testing.T) {
	t.Parallel()
	a, w := newAgent(t), newWitness(t, "w.example")
	l := cosigningLedger(t, nil, a, w)
	c := l.grpc()
	wantIndexes(t, c, a.Chain(t, 1), 0)
	stream, err := c.WatchCheckpoints(t.Context(), connect.NewRequest(&ledgerv1.WatchCheckpointsRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	if !stream.Receive() {
		t.Fatalf("no first checkpoint: %v", stream.Err())
	}
	cp := stream.Msg().Checkpoint
	if err := addCosignature(c, t, 1, w.cosign(t, cp)); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		if stream.Receive() {
			got <- stream.Msg().Checkpoint
		}
		close(got)
	}()
	select {
	case n := <-got:
		policy, err := cosignature.NewPolicy(l.vkey, []string{w.vkey}, 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := policy.Verify(n); err != nil {
			t.Errorf("second note from the watch: %v\n%s", err, n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not send the cosigned checkpoint within 10s")
	}
}

// BenchmarkGetCheckpointCosigned measures GetCheckpoint over Connect JSON
// for a checkpoint with three stored cosignatures: the bbolt read and the
// merge (log signature checked, lines sorted) on every call.
func BenchmarkGetCheckpointCosigned(b *testing.B) {
	a, ws := newAgent(b), []*witness{newWitness(b, "w1.example"), newWitness(b, "w2.example"), newWitness(b, "w3.example")}
	l := cosigningLedger(b, nil, a, ws...)
	c := l.connectJSON()
	if _, err := c.Append(b.Context(), appendReq(a.Chain(b, 1)...)); err != nil {
		b.Fatal(err)
	}
	cp := l.log.Checkpoint()
	for _, w := range ws {
		if err := l.log.CosignatureStore().Put(w.verifier.Name(), 1, w.cosign(b, cp)); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		resp, err := c.GetCheckpoint(b.Context(), connect.NewRequest(&ledgerv1.GetCheckpointRequest{}))
		if err != nil || bytes.Count(resp.Msg.Checkpoint, []byte("\n— ")) != 4 {
			b.Fatalf("GetCheckpoint: %v\n%s", err, resp.Msg.GetCheckpoint())
		}
	}
}

// FuzzAddCosignature sends arbitrary cosignature bytes for the log's
// checkpoints: AddCosignature must never panic, must store nothing it
// refuses, and may accept only lines that verify with the witness's key
// (the seeds include a genuine one, and one forged).
func FuzzAddCosignature(f *testing.F) {
	a, w := newAgent(f), newWitness(f, "w.example")
	l := openTestLedger(f, a)
	if err := l.svc.Cosign(l.verifier, []note.Verifier{w.verifier}); err != nil {
		f.Fatal(err)
	}
	if _, err := l.log.Append(f.Context(), a.Chain(f, 2)); err != nil {
		f.Fatal(err)
	}
	good := w.cosign(f, l.log.Checkpoint())
	f.Add(uint64(2), good)
	f.Add(uint64(2), forge(f, good))
	f.Add(uint64(1), good)
	f.Add(uint64(0), []byte("— w.example AAAA\n"))
	f.Fuzz(func(t *testing.T, size uint64, lines []byte) {
		before, _, _ := l.log.CosignatureStore().Get(w.verifier.Name(), size)
		_, err := l.svc.AddCosignature(t.Context(), connect.NewRequest(&ledgerv1.AddCosignatureRequest{TreeSize: size, Cosignature: lines}))
		stored, _, _ := l.log.CosignatureStore().Get(w.verifier.Name(), size)
		if err != nil {
			wantEdgeError(t, err)
			if !bytes.Equal(before, stored) {
				t.Fatalf("refused AddCosignature (%v) changed the stored cosignature of size %d from %q to %q", err, size, before, stored)
			}
			return
		}
		cp, cerr := l.log.CheckpointAt(size)
		if cerr != nil {
			t.Fatalf("AddCosignature accepted size %d that has no checkpoint: %v", size, cerr)
		}
		if _, verr := cosignature.Verify(cp, stored, w.verifier); verr != nil {
			t.Fatalf("AddCosignature accepted %q for size %d, which does not verify: %v", lines, size, verr)
		}
	})
}
