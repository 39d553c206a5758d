package verifier_test

// Helpers for the anchored tests: agents whose receipts go to a real
// ledger.Log (bbolt), witnesses whose keys the test generates and which
// cosign with the formats package's cosignature/v1 signer, and bundles
// made by bundle.Export from the log.

import (
	"context"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/anchor/anchortest"
	"github.com/bankdoor/bankdoor/anchor/cosignature"
	"github.com/bankdoor/bankdoor/internal/agentchain/chaintest"
	"github.com/bankdoor/bankdoor/internal/scratchlog"
	"github.com/bankdoor/bankdoor/ledger"
	"github.com/bankdoor/bankdoor/ledger/receipt"
	"github.com/bankdoor/bankdoor/verifier/bundle"
)

// agent makes a chain of signed receipts in memory (package agentchain)
// and keeps them all.
type agent struct {
	chaintest.Agent
	files [][]byte // seq i+1
}

func newAgent(t testing.TB) *agent {
	return &agent{Agent: *chaintest.Generate(t, time.Unix(1796000000, 0))}
}

// next signs n more receipts and returns them.
func (a *agent) next(t testing.TB, n int) [][]byte {
	rs := a.Chain(t, n)
	a.files = append(a.files, rs...)
	return rs
}

// writeDir writes the agent's receipts as a plain receipts directory.
func (a *agent) writeDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "receipts")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for i, b := range a.files {
		if err := os.WriteFile(filepath.Join(dir, receipt.FileName(uint64(i)+1)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// anchorWorld is a ledger with enrolled agents and two witnesses.
type anchorWorld struct {
	t         testing.TB
	log       *ledger.Log
	logVKey   string
	witnesses []note.Signer
	wVKeys    []string
}

func newAnchorWorld(t testing.TB, as ...*agent) *anchorWorld {
	t.Helper()
	var pubs []ed25519.PublicKey
	for _, a := range as {
		pubs = append(pubs, a.Public())
	}
	l := openLedger(t, pubs...)
	w := &anchorWorld{t: t, log: l.Log, logVKey: l.VKey}
	for _, name := range []string{"witness-a.test", "witness-b.test"} {
		s, v := newWitness(t, name)
		w.witnesses, w.wVKeys = append(w.witnesses, s), append(w.wVKeys, v)
	}
	return w
}

// openLedger opens a new ledger with a new log key, enrolling the given
// agents' keys.
func openLedger(t testing.TB, pubs ...ed25519.PublicKey) *scratchlog.Log {
	t.Helper()
	var keys ledger.AgentKeys
	for _, pub := range pubs {
		keys.Enroll(pub)
	}
	l, err := scratchlog.Open(filepath.Join(t.TempDir(), "ledger.db"), ledger.Options{Origin: origin, Agents: &keys})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// newWitness generates a witness key; its vkey is of type cosignature/v1.
func newWitness(t testing.TB, name string) (note.Signer, string) {
	t.Helper()
	s, _, vkey := anchortest.WitnessKey(t, name)
	return s, vkey
}

// append appends receipts to the log. Append returns once a checkpoint
// covering them is published.
func (w *anchorWorld) append(files [][]byte) {
	w.t.Helper()
	for len(files) > 0 {
		n := min(len(files), ledger.DefaultMaxBatch)
		if _, err := w.log.Append(context.Background(), files[:n]); err != nil {
			w.t.Fatal(err)
		}
		files = files[n:]
	}
}

// cosigned returns the log's latest checkpoint cosigned by the given
// witnesses.
func (w *anchorWorld) cosigned(by ...note.Signer) []byte {
	w.t.Helper()
	return cosign(w.t, w.log.Checkpoint(), w.logVKey, by...)
}

func cosign(t testing.TB, cp []byte, logVKey string, by ...note.Signer) []byte {
	t.Helper()
	v, err := note.NewVerifier(logVKey)
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(cp, note.VerifierList(v))
	if err != nil {
		t.Fatal(err)
	}
	out, err := note.Sign(n, by...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// policy trusts the log and the world's witnesses, with quorum q.
func (w *anchorWorld) policy(q int) *cosignature.Policy {
	w.t.Helper()
	p, err := cosignature.NewPolicy(w.logVKey, w.wVKeys, q)
	if err != nil {
		w.t.Fatal(err)
	}
	return p
}

// export writes a's bundle at the log's latest checkpoint, cosigned by
// both witnesses, and returns its directory and the checkpoint.
func (w *anchorWorld) export(a *agent) (string, []byte) {
	w.t.Helper()
	cp := w.cosigned(w.witnesses...)
	size := w.log.Size()
	b, files, err := bundle.Export(context.Background(), w.log.Source(), a.KeyID, cp, size)
	if err != nil {
		w.t.Fatal(err)
	}
	b.LogKey, b.Witnesses = w.logVKey, w.wVKeys
	dir := filepath.Join(w.t.TempDir(), "export")
	if err := bundle.Write(dir, b, files); err != nil {
		w.t.Fatal(err)
	}
	return dir, cp
}

func overwrite(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
