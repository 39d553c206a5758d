package verifier_test

// Online verification against the real ledger: a ledger.Log in a bbolt
// file behind the real Connect handler, over HTTP/1.1.

import (
	"context"
	"crypto/ed25519"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/ledger"
	"github.com/bankdoor/bankdoor/ledger/receipt"
	"github.com/bankdoor/bankdoor/ledger/rpc"
	ledgerv1 "github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1"
	"github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1/ledgerv1connect"
	"github.com/bankdoor/bankdoor/verifier"
)

const origin = "verifier.test/ledger"

// world is an agent's receipts directory and a ledger serving over HTTP.
type world struct {
	t      testing.TB
	key    ed25519.PrivateKey
	dir    string
	w      *receipt.Writer
	log    *ledger.Log
	client ledgerv1connect.LedgerServiceClient
	vkey   note.Verifier
}

func newWorld(t testing.TB) *world {
	t.Helper()
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, key: key, dir: filepath.Join(t.TempDir(), "receipts")}
	if w.w, err = receipt.OpenWriter(w.dir, key); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.w.Close() })
	w.log, w.client, w.vkey = serveLedger(t, w.pub())
	return w
}

func (w *world) pub() ed25519.PublicKey { return w.key.Public().(ed25519.PublicKey) }

// serveLedger opens a new ledger enrolling pub and serves it.
func serveLedger(t testing.TB, pub ed25519.PublicKey) (*ledger.Log, ledgerv1connect.LedgerServiceClient, note.Verifier) {
	t.Helper()
	l := openLedger(t, pub)
	path, h := rpc.New(l.Log, nil).Handler(nil)
	mux := http.NewServeMux()
	mux.Handle(path, h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return l.Log, ledgerv1connect.NewLedgerServiceClient(srv.Client(), srv.URL), l.Verifier
}

// write writes n receipts, and appends the first ship of them to the log.
func (w *world) write(n, ship int) {
	w.t.Helper()
	var files [][]byte
	for range n {
		name, _, err := w.w.Write(&receipt.Receipt{
			Decision: receipt.Deny, Server: "bank", Tool: "transfer", Rule: "name.write_word", Reason: "r",
			ArgNames: []string{}, ArgsSHA256: strings.Repeat("a", 64), PolicyID: "p", PolicySHA256: strings.Repeat("b", 64),
		})
		if err != nil {
			w.t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(w.dir, name))
		if err != nil {
			w.t.Fatal(err)
		}
		files = append(files, b)
	}
	if ship > 0 {
		if _, err := w.log.Append(context.Background(), files[:ship]); err != nil {
			w.t.Fatal(err)
		}
	}
}

func (w *world) verifyDir() *verifier.Report {
	w.t.Helper()
	rep, err := verifier.VerifyDir(w.dir, w.pub(), verifier.Options{})
	if err != nil {
		w.t.Fatal(err)
	}
	return rep
}

func (w *world) verifyInLog(client verifier.LedgerClient, vkey note.Verifier) (*verifier.LogReport, error) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A checkpoint follows each committed batch: wait for the one that
	// covers what was appended.
	for w.log.Size() != uint64(len(mustEntries(w.t, w.log))) {
		if ctx.Err() != nil {
			w.t.Fatal("no checkpoint covers the appended receipts")
		}
		time.Sleep(time.Millisecond)
	}
	return verifier.VerifyInLog(ctx, w.verifyDir(), client, vkey)
}

func mustEntries(t testing.TB, l *ledger.Log) [][]byte {
	e, err := l.Entries(0, 1000)
	if err != nil && !errors.Is(err, ledger.ErrRange) {
		t.Fatal(err)
	}
	return e
}

func TestVerifyInLog(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.write(5, 5)
	lr, err := w.verifyInLog(w.client, w.vkey)
	if err != nil {
		t.Fatal(err)
	}
	if lr.Origin != origin || lr.Size != 5 {
		t.Errorf("LogReport = %s size %d, want %s size 5", lr.Origin, lr.Size, origin)
	}
	if diff := cmp.Diff([]uint64{0, 1, 2, 3, 4}, lr.Indexes); diff != "" {
		t.Errorf("indexes (-want +got):\n%s", diff)
	}
}

func TestVerifyInLogNamesReceiptsNotInLog(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		write, ship int
		want        []string
	}{
		{"empty log", 2, 0, []string{"000001.json", "000002.json"}},
		{"tail not shipped", 4, 2, []string{"000003.json", "000004.json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.write(tc.write, tc.ship)
			_, err := w.verifyInLog(w.client, w.vkey)
			var nil_ *verifier.NotInLogError
			if !errors.As(err, &nil_) {
				t.Fatalf("VerifyInLog = %v, want a *NotInLogError", err)
			}
			if diff := cmp.Diff(tc.want, nil_.Files); diff != "" {
				t.Errorf("files not in log (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVerifyInLogRejects(t *testing.T) {
	t.Parallel()
	t.Run("wrong log key", func(t *testing.T) {
		w := newWorld(t)
		w.write(2, 2)
		_, _, other := serveLedger(t, w.pub()) // same origin, another key
		_, err := w.verifyInLog(w.client, other)
		wantReason(t, err, "", "does not verify with the log key")
	})
	t.Run("another ledger", func(t *testing.T) {
		w := newWorld(t)
		w.write(2, 2)
		_, client, _ := serveLedger(t, w.pub())
		_, err := w.verifyInLog(client, w.vkey)
		wantReason(t, err, "", "does not verify with the log key")
	})
	t.Run("tampered proof", func(t *testing.T) {
		w := newWorld(t)
		w.write(3, 3)
		_, err := w.verifyInLog(tamper{w.client}, w.vkey)
		wantReason(t, err, "000001.json", "does not verify against its signed checkpoint")
	})
	// A note the log key signed is still refused if its text is not a
	// canonical checkpoint, as cosignature.Open refuses it everywhere else:
	// no witness would cosign it.
	for _, text := range []string{
		origin + "\n03\n" + strings.Repeat("A", 43) + "=\n", // a size with a leading zero
		origin + "\n2\n" + strings.Repeat("A", 42) + "B=\n", // non-zero padding bits
	} {
		t.Run("non-canonical "+strings.ReplaceAll(text, "\n", `\n`), func(t *testing.T) {
			w := newWorld(t)
			w.write(2, 2)
			skey, vkey, err := note.GenerateKey(nil, origin)
			if err != nil {
				t.Fatal(err)
			}
			signer, _ := note.NewSigner(skey)
			v, _ := note.NewVerifier(vkey)
			msg, err := note.Sign(&note.Note{Text: text}, signer)
			if err != nil {
				t.Fatal(err)
			}
			_, err = w.verifyInLog(checkpointAs{w.client, msg}, v)
			wantReason(t, err, "", "not a canonical tlog-checkpoint")
		})
	}
	t.Run("tail removed from the directory", func(t *testing.T) {
		w := newWorld(t)
		w.write(4, 4)
		if err := os.Remove(filepath.Join(w.dir, "000004.json")); err != nil {
			t.Fatal(err)
		}
		_, err := w.verifyInLog(w.client, w.vkey)
		wantReason(t, err, "", "receipts seq 4..4 are missing from the directory")
	})
}

func TestVerifyInLogRereadsFiles(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.write(2, 2)
	rep := w.verifyDir()
	path := filepath.Join(w.dir, "000002.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, ' '), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = verifier.VerifyInLog(context.Background(), rep, w.client, w.vkey)
	wantReason(t, err, "000002.json", "changed while it was being verified")
}

// checkpointAs answers GetCheckpoint with its note.
type checkpointAs struct {
	ledgerv1connect.LedgerServiceClient
	note []byte
}

func (c checkpointAs) GetCheckpoint(context.Context, *connect.Request[ledgerv1.GetCheckpointRequest]) (*connect.Response[ledgerv1.GetCheckpointResponse], error) {
	return connect.NewResponse(&ledgerv1.GetCheckpointResponse{Checkpoint: c.note}), nil
}

// tamper changes one byte of the first hash of every inclusion proof.
type tamper struct {
	ledgerv1connect.LedgerServiceClient
}

func (c tamper) GetInclusionProof(ctx context.Context, req *connect.Request[ledgerv1.GetInclusionProofRequest]) (*connect.Response[ledgerv1.GetInclusionProofResponse], error) {
	resp, err := c.LedgerServiceClient.GetInclusionProof(ctx, req)
	if err == nil && len(resp.Msg.Hashes) > 0 {
		resp.Msg.Hashes[0][0] ^= 1
	}
	return resp, err
}

func wantReason(t *testing.T, err error, file, want string) {
	t.Helper()
	var e *verifier.Error
	if !errors.As(err, &e) || e.File != file || !strings.Contains(e.Reason, want) {
		t.Fatalf("err = %v, want a *verifier.Error for %q containing %q", err, file, want)
	}
}
