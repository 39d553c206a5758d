package cosignature_test

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/anchor/cosignature"
	"github.com/bankdoor/bankdoor/anchor/internal/testlog"
)

// withLines returns checkpoint followed by the cosignature lines.
func withLines(cp []byte, lines ...[]byte) []byte {
	return slices.Concat(append([][]byte{cp}, lines...)...)
}

func TestPolicyAccepts(t *testing.T) {
	f := newFixture(t)
	cp := f.log.Checkpoint()
	p, err := cosignature.NewPolicy(f.logVKey, f.wVKeys[:2], 2) // witness 2 is not trusted
	if err != nil {
		t.Fatal(err)
	}
	msg := withLines(cp, f.cosign(t, cp, 0), f.cosign(t, cp, 1), f.cosign(t, cp, 2))
	v, err := p.Verify(msg)
	if err != nil {
		t.Fatal(err)
	}
	if v.Size != 5 || v.Origin != origin || len(v.Hash) != 32 {
		t.Errorf("checkpoint = %+v; want %s size 5", v.Checkpoint, origin)
	}
	if len(v.Cosigners) != 2 || !strings.HasPrefix(v.Cosigners[0].Key, "witness0.test+") || !strings.HasPrefix(v.Cosigners[1].Key, "witness1.test+") {
		t.Errorf("cosigners = %q; want witness0.test and witness1.test", v.Cosigners)
	}
	for _, c := range v.Cosigners {
		if time.Since(c.Time) > time.Minute || time.Until(c.Time) > time.Minute {
			t.Errorf("cosigner %v: the timestamp is not the time of signing (now)", c)
		}
	}
	if len(v.Ignored) != 1 || v.Ignored[0].Name != "witness2.test" {
		t.Errorf("ignored = %+v; want the untrusted witness2.test line reported", v.Ignored)
	}
}

func TestPolicyRejects(t *testing.T) {
	f := newFixture(t)
	cp := f.log.Checkpoint()
	c0, c1, c2 := f.cosign(t, cp, 0), f.cosign(t, cp, 1), f.cosign(t, cp, 2)
	f.log.Append("receipt", 1)
	next := f.log.Checkpoint()
	otherSkey, otherVKey := testlog.NewKey(t, origin)
	impostor := testlog.New(t, otherSkey)
	impostor.Append("receipt", 5)
	trust2 := f.wVKeys[:2]
	for _, c := range []struct {
		name     string
		msg      []byte
		logVKey  string
		quorum   int
		want     error
		mentions string
	}{
		{"forged cosignature", withLines(cp, c0, flipSignatureBit(t, c1)), f.logVKey, 1, cosignature.ErrBadCosignature, "witness1.test"},
		{"cosignature of another checkpoint", withLines(cp, c0, f.cosign(t, next, 1)), f.logVKey, 1, cosignature.ErrBadCosignature, "different checkpoint"},
		{"unknown witness counts for nothing", withLines(cp, c0, c2), f.logVKey, 2, cosignature.ErrQuorum, "witness2.test"},
		{"quorum not met", withLines(cp, c1), f.logVKey, 2, cosignature.ErrQuorum, "1 of the 2 trusted witnesses"},
		{"no cosignature", cp, f.logVKey, 1, cosignature.ErrQuorum, "none"},
		{"altered size", bytes.Replace(withLines(cp, c0, c1), []byte("\n5\n"), []byte("\n4\n"), 1), f.logVKey, 0, cosignature.ErrLogSignature, "altered"},
		{"signed by another log key", withLines(impostor.Checkpoint(), c0, c1), f.logVKey, 0, cosignature.ErrLogSignature, "no signature line by"},
		{"wrong --log-key", withLines(cp, c0, c1), otherVKey, 0, cosignature.ErrLogSignature, "no signature line by"},
		{"not a note", []byte("hello\n"), f.logVKey, 0, cosignature.ErrMalformed, "signed note"},
	} {
		p, err := cosignature.NewPolicy(c.logVKey, trust2, c.quorum)
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Verify(c.msg)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.mentions) {
			t.Errorf("%s: err = %v; want %v mentioning %q", c.name, err, c.want, c.mentions)
		}
	}
}

func TestNewPolicyRejects(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct {
		name     string
		logVKey  string
		wVKeys   []string
		quorum   int
		mentions string
	}{
		{"quorum above the keys", f.logVKey, f.wVKeys[:1], 2, "impossible"},
		{"negative quorum", f.logVKey, f.wVKeys[:1], -1, "impossible"},
		{"a key twice", f.logVKey, []string{f.wVKeys[0], f.wVKeys[0]}, 1, "given twice"},
		{"bad witness key", f.logVKey, []string{"witness+00000000+AAAA"}, 0, "witness key"},
		{"bad log key", "nonsense", nil, 0, "log key"},
	} {
		if _, err := cosignature.NewPolicy(c.logVKey, c.wVKeys, c.quorum); err == nil || !strings.Contains(err.Error(), c.mentions) {
			t.Errorf("%s: err = %v; want an error mentioning %q", c.name, err, c.mentions)
		}
	}
}
