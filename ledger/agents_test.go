package ledger

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/bankdoor/bankdoor/internal/agentkey"
)

// swapAgents is an Agents whose answers the test changes between Appends.
type swapAgents struct {
	mu sync.Mutex
	m  map[string]ed25519.PublicKey
}

func (s *swapAgents) Lookup(keyID string) (ed25519.PublicKey, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pub, ok := s.m[keyID]
	return pub, ok
}

func (s *swapAgents) set(keyID string, pub ed25519.PublicKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if pub == nil {
		delete(s.m, keyID)
	} else {
		s.m[keyID] = pub
	}
}

// TestAppendAsksAgents checks that every receipt is checked with the key
// Options.Agents gives for it now: a key that Agents stops giving, or
// gives different bytes for, is not used again.
func TestAppendAsksAgents(t *testing.T) {
	a, b := newAgent(1), newAgent(2)
	agents := &swapAgents{m: map[string]ed25519.PublicKey{a.KeyID: a.Public()}}
	tl := openTestLog(t, 0)
	tl.opts.Agents = agents
	tl.Close()
	tl.reopen(t)
	ctx := context.Background()
	tl.mustAppend(t, a.Next(t))
	next := a.Next(t)

	for _, tc := range []struct {
		name string
		pub  ed25519.PublicKey
		want error
		msg  string
	}{
		{"another agent's key under its key_id", b.Public(), ErrInvalid, "does not match"},
		{"a key of the wrong length", ed25519.PublicKey("short"), ErrInvalid, "not an Ed25519 public key"},
		{"no longer enrolled", nil, ErrUnknownKey, a.KeyID},
	} {
		agents.set(a.KeyID, tc.pub)
		_, err := tl.Append(ctx, [][]byte{next})
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: Append: %v, want %v naming %q", tc.name, err, tc.want, tc.msg)
		}
	}
	agents.set(a.KeyID, a.Public())
	tl.mustAppend(t, next)
	if tl.Size() != 2 {
		t.Fatalf("size %d, want 2", tl.Size())
	}
}

// TestAgentKeys: an enrolled key is found by its id, another is not.
func TestAgentKeys(t *testing.T) {
	a, b := ed25519.NewKeyFromSeed(make([]byte, 32)), ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32))
	var k AgentKeys
	k.Enroll(a.Public().(ed25519.PublicKey))
	if pub, ok := k.Lookup(agentkey.KeyID(a.Public().(ed25519.PublicKey))); !ok || !pub.Equal(a.Public()) {
		t.Errorf("Lookup(enrolled) = %x, %v", pub, ok)
	}
	if _, ok := k.Lookup(agentkey.KeyID(b.Public().(ed25519.PublicKey))); ok {
		t.Error("Lookup found a key never enrolled")
	}
}
