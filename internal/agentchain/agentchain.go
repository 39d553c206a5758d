// Package agentchain signs receipt chains as one agent's proxy would,
// without a proxy: receipt seq 1, 2, …, each with Prev the hex SHA-256 of
// the receipt file before it (receipt.FirstPrev for seq 1), all signed by
// the agent's Ed25519 key with receipt.Sign. Every receipt is the deny the
// proxy writes when an agent calls the fixture bank's transfer tool (rule
// name.write_word, argument names only, a zero arguments hash), stamped
// Start plus seq milliseconds, or the current time if Start is zero.
//
// The ledger's tests, the RPC and verifier tests and cmd/bankdoor-report
// fill logs with these: real receipts that ledger.Log.Append and the verifier
// accept.
package agentchain

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/ledger/receipt"
)

// Reason is the reason every receipt gives, as the proxy words it.
const Reason = `tool name token "transfer" is a payment/write word`

// Agent is one agent's chain. Next and Chain move it on; Sign does not.
type Agent struct {
	Key   ed25519.PrivateKey
	KeyID string    // agentkey.KeyID of the public key
	Seq   uint64    // seq of the last receipt Next made; 0 before the first
	Prev  string    // the Prev of the next receipt
	Start time.Time // receipt seq is stamped Start + seq ms; zero: now
}

// New returns the agent with key, before its first receipt.
func New(key ed25519.PrivateKey) *Agent {
	return &Agent{Key: key, KeyID: agentkey.KeyID(key.Public().(ed25519.PublicKey)), Prev: receipt.FirstPrev}
}

// Generate returns an agent with a new random key.
func Generate() (*Agent, error) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	return New(key), nil
}

// Public returns the agent's public key.
func (a *Agent) Public() ed25519.PublicKey { return a.Key.Public().(ed25519.PublicKey) }

// Sign returns the signed receipt file with seq and prev, leaving the
// chain where it is (tests make out-of-order and forked receipts so).
func (a *Agent) Sign(seq uint64, prev string) ([]byte, error) {
	t := a.Start.Add(time.Duration(seq) * time.Millisecond)
	if a.Start.IsZero() {
		t = time.Now()
	}
	zero := hex.EncodeToString(make([]byte, 32))
	return receipt.Sign(&receipt.Receipt{
		Seq: seq, Time: t, Decision: receipt.Deny, Server: "bank", Tool: "transfer",
		Rule: "name.write_word", Reason: Reason, ArgNames: []string{"amount_cents", "to_account"},
		ArgsSHA256: zero, PolicyID: "bankdoor-fixture-readonly", PolicySHA256: zero, Prev: prev,
	}, a.Key)
}

// Next signs the chain's next receipt and moves the chain on.
func (a *Agent) Next() ([]byte, error) {
	b, err := a.Sign(a.Seq+1, a.Prev)
	if err != nil {
		return nil, err
	}
	h := receipt.Hash(b)
	a.Seq, a.Prev = a.Seq+1, hex.EncodeToString(h[:])
	return b, nil
}

// Chain returns the chain's next n receipts.
func (a *Agent) Chain(n int) ([][]byte, error) {
	out := make([][]byte, n)
	for i := range out {
		var err error
		if out[i], err = a.Next(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
