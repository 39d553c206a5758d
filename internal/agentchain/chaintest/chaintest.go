// Package chaintest is package agentchain for tests: its Agent's Sign,
// Next and Chain take a testing.TB first and fail it instead of returning
// an error. The receipts are agentchain's, byte for byte.
package chaintest

import (
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/internal/agentchain"
)

// Agent is an agentchain.Agent whose methods fail the test on error.
type Agent struct{ agentchain.Agent }

// New returns the agent with key, its receipts stamped from start (the
// zero time: the current time).
func New(key ed25519.PrivateKey, start time.Time) *Agent {
	a := &Agent{*agentchain.New(key)}
	a.Start = start
	return a
}

// Generate returns an agent with a new random key, its receipts stamped
// from start.
func Generate(tb testing.TB, start time.Time) *Agent {
	tb.Helper()
	c, err := agentchain.Generate()
	if err != nil {
		tb.Fatal(err)
	}
	return New(c.Key, start)
}

// Sign is agentchain.Agent.Sign: the receipt with seq and prev, leaving
// the chain where it is.
func (a *Agent) Sign(tb testing.TB, seq uint64, prev string) []byte {
	tb.Helper()
	b, err := a.Agent.Sign(seq, prev)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// Next is agentchain.Agent.Next: the chain's next receipt.
func (a *Agent) Next(tb testing.TB) []byte {
	tb.Helper()
	b, err := a.Agent.Next()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// Chain is agentchain.Agent.Chain: the chain's next n receipts.
func (a *Agent) Chain(tb testing.TB, n int) [][]byte {
	tb.Helper()
	rs, err := a.Agent.Chain(n)
	if err != nil {
		tb.Fatal(err)
	}
	return rs
}
