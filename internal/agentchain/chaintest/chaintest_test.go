package chaintest_test

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/internal/agentchain"
	"github.com/bankdoor/bankdoor/internal/agentchain/chaintest"
	"github.com/bankdoor/bankdoor/ledger/receipt"
)

// TestSameReceipts: the wrapper signs agentchain's receipts byte for byte.
func TestSameReceipts(t *testing.T) {
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, ed25519.SeedSize))
	start := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	a, c := chaintest.New(key, start), agentchain.New(key)
	c.Start = start
	want, err := c.Chain(3)
	if err != nil {
		t.Fatal(err)
	}
	got := append([][]byte{a.Next(t)}, a.Chain(t, 2)...)
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("receipt %d differs from agentchain's:\n%s\n%s", i+1, got[i], want[i])
		}
	}
}

// fatalRecorder is a testing.TB whose Fatal records and ends the goroutine.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}
func (r *fatalRecorder) Fatal(args ...any) {
	r.msg = fmt.Sprint(args...)
	runtime.Goexit()
}

// TestSignFails: a receipt agentchain refuses to sign fails the test.
func TestSignFails(t *testing.T) {
	a := chaintest.Generate(t, time.Time{})
	r := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.Sign(r, 1, "not hex")
	}()
	<-done
	if !strings.Contains(r.msg, "prev") {
		t.Errorf("Sign with a bad prev: Fatal(%q), want a message about prev", r.msg)
	}
	if a.Seq != 0 || a.Prev != receipt.FirstPrev {
		t.Errorf("a failed Sign moved the chain to seq %d", a.Seq)
	}
}
