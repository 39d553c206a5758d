package scratchlog_test

import (
	"path/filepath"
	"testing"

	"github.com/transparency-dev/formats/log"

	"github.com/bankdoor/bankdoor/internal/agentchain"
	"github.com/bankdoor/bankdoor/internal/scratchlog"
	"github.com/bankdoor/bankdoor/ledger"
)

// TestOpen: the log accepts an enrolled agent's chain and its checkpoint
// verifies with Verifier, for the origin asked; two logs' keys differ.
func TestOpen(t *testing.T) {
	a, err := agentchain.Generate()
	if err != nil {
		t.Fatal(err)
	}
	var keys ledger.AgentKeys
	keys.Enroll(a.Public())
	open := func(name string) *scratchlog.Log {
		l, err := scratchlog.Open(filepath.Join(t.TempDir(), name), ledger.Options{Origin: "scratch.test/log", Agents: &keys})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	l := open("a.db")
	rs, err := a.Chain(3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(t.Context(), rs); err != nil {
		t.Fatal(err)
	}
	cp, _, _, err := log.ParseCheckpoint(l.Checkpoint(), "scratch.test/log", l.Verifier)
	if err != nil || cp.Size != 3 {
		t.Fatalf("checkpoint: %+v, %v; want size 3 verified with Verifier", cp, err)
	}
	if other := open("b.db"); other.VKey == l.VKey {
		t.Error("two scratch logs share a key")
	}
}
