package tlogproof

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/anchor/cosignature"
	"github.com/bankdoor/bankdoor/internal/agentchain"
	"github.com/bankdoor/bankdoor/internal/scratchlog"
	"github.com/bankdoor/bankdoor/ledger"
)

const origin = "tlogproof.test/log"

// fixture is a real ledger of seven receipts whose checkpoint a witness
// cosigned, and the policy that trusts the log and that witness.
type fixture struct {
	receipts   [][]byte
	checkpoint []byte // cosigned
	size       uint64
	log        *scratchlog.Log
	policy     *cosignature.Policy
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	a, err := agentchain.Generate()
	if err != nil {
		t.Fatal(err)
	}
	var keys ledger.AgentKeys
	keys.Enroll(a.Public())
	l, err := scratchlog.Open(filepath.Join(t.TempDir(), "ledger.db"), ledger.Options{Origin: origin, Agents: &keys})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	rs, err := a.Chain(7)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(t.Context(), rs); err != nil {
		t.Fatal(err)
	}
	wskey, wvkey, err := note.GenerateKey(rand.Reader, "witness.test")
	if err != nil {
		t.Fatal(err)
	}
	if wvkey, err = fnote.VKeyToCosignatureV1(wvkey); err != nil {
		t.Fatal(err)
	}
	ws, err := fnote.NewSignerForCosignatureV1(wskey)
	if err != nil {
		t.Fatal(err)
	}
	cp := l.Checkpoint()
	text, _, _ := bytes.Cut(cp, []byte("\n\n"))
	signed, err := note.Sign(&note.Note{Text: string(text) + "\n"}, ws)
	if err != nil {
		t.Fatal(err)
	}
	lv, err := cosignature.NewLogVerifier(l.VKey)
	if err != nil {
		t.Fatal(err)
	}
	if cp, err = cosignature.Merge(cp, lv, signed[len(text)+2:]); err != nil {
		t.Fatal(err)
	}
	pol, err := cosignature.NewPolicy(l.VKey, []string{wvkey}, 1)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{receipts: rs, checkpoint: cp, size: l.Size(), log: l, policy: pol}
}

func (f *fixture) proof(t *testing.T, i uint64) *Proof {
	t.Helper()
	hs, err := f.log.InclusionProof(i, f.size)
	if err != nil {
		t.Fatal(err)
	}
	return &Proof{Index: i, Hashes: hs, Checkpoint: f.checkpoint}
}

// TestRoundTrip: a proof of every leaf of a real, cosigned ledger
// survives Marshal and Parse unchanged and verifies under the policy.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for i, r := range f.receipts {
		p := f.proof(t, uint64(i))
		if i == 3 {
			p.Extra = []byte("opaque")
		}
		data := p.Marshal()
		got, err := Parse(data)
		if err != nil {
			t.Fatalf("leaf %d: Parse(Marshal): %v\n%s", i, err, data)
		}
		if !reflect.DeepEqual(got, p) {
			t.Fatalf("leaf %d: Parse(Marshal(p)) = %+v, want %+v", i, got, p)
		}
		cp, err := got.Verify(r, f.policy)
		if err != nil {
			t.Fatalf("leaf %d: %v", i, err)
		}
		if cp.Size != f.size || len(cp.Cosigners) != 1 {
			t.Fatalf("leaf %d: verified size %d with %d cosigners, want %d and 1", i, cp.Size, len(cp.Cosigners), f.size)
		}
	}
}

// TestVerifyRefuses: every change to what a proof binds is caught.
func TestVerifyRefuses(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, otherKey, err := note.GenerateKey(rand.Reader, origin) // the same origin, another key
	if err != nil {
		t.Fatal(err)
	}
	other, err := cosignature.NewPolicy(otherKey, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	noWitness, err := cosignature.NewPolicy(f.log.VKey, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	uncosigned, _, _ := bytes.Cut(f.checkpoint, []byte("\n— witness.test"))
	for _, c := range []struct {
		name   string
		change func(p *Proof) ([]byte, *cosignature.Policy)
		want   string
	}{
		{"another entry", func(p *Proof) ([]byte, *cosignature.Policy) { return f.receipts[1], f.policy }, "does not verify"},
		{"another index", func(p *Proof) ([]byte, *cosignature.Policy) { p.Index = 3; return f.receipts[2], f.policy }, "does not verify"},
		{"index beyond the tree", func(p *Proof) ([]byte, *cosignature.Policy) { p.Index = f.size; return f.receipts[2], f.policy }, "not in the checkpoint's tree"},
		{"a flipped proof bit", func(p *Proof) ([]byte, *cosignature.Policy) { p.Hashes[0][5] ^= 1; return f.receipts[2], f.policy }, "does not verify"},
		{"a hash short", func(p *Proof) ([]byte, *cosignature.Policy) { p.Hashes = p.Hashes[1:]; return f.receipts[2], f.policy }, "does not verify"},
		{"the checkpoint's size changed", func(p *Proof) ([]byte, *cosignature.Policy) {
			p.Checkpoint = bytes.Replace(p.Checkpoint, []byte("\n7\n"), []byte("\n8\n"), 1)
			return f.receipts[2], f.policy
		}, "tlog-proof: checkpoint: "},
		{"another log key", func(p *Proof) ([]byte, *cosignature.Policy) { return f.receipts[2], other }, "tlog-proof: checkpoint: "},
		{"no cosignature for a quorum of 1", func(p *Proof) ([]byte, *cosignature.Policy) {
			p.Checkpoint = append(bytes.Clone(uncosigned), '\n')
			return f.receipts[2], f.policy
		}, "tlog-proof: checkpoint: "},
	} {
		p := f.proof(t, 2)
		entry, pol := c.change(p)
		if _, err := p.Verify(entry, pol); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Verify = %v, want an error with %q", c.name, err, c.want)
		}
	}
	// The control: the same proof, unchanged, with and without witnesses.
	for _, pol := range []*cosignature.Policy{f.policy, noWitness} {
		if _, err := f.proof(t, 2).Verify(f.receipts[2], pol); err != nil {
			t.Fatal(err)
		}
	}
}

// TestParseRefuses: every line of the format is held to its one form.
func TestParseRefuses(t *testing.T) {
	t.Parallel()
	h := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))
	cp := "o\n1\n" + h + "\n\n— o AAAA\n"
	for _, c := range []struct{ name, data, want string }{
		{"empty", "", "first line"},
		{"another version", "c2sp.org/tlog-proof@v2\nindex 0\n\n" + cp, "first line"},
		{"CRLF", Header + "\r\nindex 0\n\n" + cp, "first line"},
		{"no index", Header + "\n\n" + cp, "index"},
		{"leading zero", Header + "\nindex 01\n\n" + cp, "leading zeros"},
		{"signed index", Header + "\nindex +1\n\n" + cp, "leading zeros"},
		{"index overflow", Header + "\nindex 18446744073709551616\n\n" + cp, "leading zeros"},
		{"empty extra", Header + "\nextra \nindex 0\n\n" + cp, "extra"},
		{"unpadded extra", Header + "\nextra YQ\nindex 0\n\n" + cp, "extra"},
		{"extra after index", Header + "\nindex 0\nextra YQ==\n\n" + cp, "proof hash 1"},
		{"short hash", Header + "\nindex 0\n" + h[:40] + "\n\n" + cp, "proof hash 1"},
		{"URL base64", Header + "\nindex 0\n" + strings.Repeat("_", 43) + "=\n\n" + cp, "proof hash 1"},
		{"no empty line", Header + "\nindex 0\n" + h + "\n", "no empty line"},
		{"no checkpoint", Header + "\nindex 0\n\n", "no checkpoint"},
		{"checkpoint without its newline", Header + "\nindex 0\n\n" + strings.TrimSuffix(cp, "\n"), "newline"},
		{"65 hashes", Header + "\nindex 0\n" + strings.Repeat(h+"\n", 65) + "\n" + cp, "more than 64"},
		{"huge", Header + "\nindex 0\n\n" + strings.Repeat("x", MaxSize), "bytes, more than"},
	} {
		if _, err := Parse([]byte(c.data)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Parse = %v, want an error with %q", c.name, err, c.want)
		}
	}
	if _, err := Parse([]byte(Header + "\nindex 0\n\n" + cp)); err != nil {
		t.Errorf("the control: %v", err)
	}
}

// FuzzParse: Parse never panics, and what it accepts Marshal writes back
// byte for byte (one encoding per proof).
func FuzzParse(f *testing.F) {
	h := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	f.Add([]byte(Header + "\nindex 0\n\no\n1\n" + h + "\n\n— o AAAA\n"))
	f.Add([]byte(Header + "\nextra YWJj\nindex 73894\n" + h + "\n" + h + "\n\no\n2\n" + h + "\n\n— o AAAA\n"))
	f.Add([]byte(Header + "\nindex 5\n" + h + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			return
		}
		if got := p.Marshal(); !bytes.Equal(got, data) {
			t.Fatalf("Marshal(Parse(%q)) = %q", data, got)
		}
	})
}
