package tlogpolicy

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/anchor/cosignature"
)

var _ cosignature.Trust = (*Policy)(nil)

// world is a log key, six witness keys (X1..X3, Y1..Y3) and a checkpoint
// the log signed, which any subset of the witnesses can cosign.
type world struct {
	logSkey, logVKey string
	wSkeys, wVKeys   map[string]string
	checkpoint       []byte
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{wSkeys: map[string]string{}, wVKeys: map[string]string{}}
	var err error
	if w.logSkey, w.logVKey, err = note.GenerateKey(rand.Reader, "bank.example/ledger"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"X1", "X2", "X3", "Y1", "Y2", "Y3"} {
		s, v, err := note.GenerateKey(rand.Reader, "witness-"+strings.ToLower(name)+".example")
		if err != nil {
			t.Fatal(err)
		}
		if v, err = fnote.VKeyToCosignatureV1(v); err != nil {
			t.Fatal(err)
		}
		w.wSkeys[name], w.wVKeys[name] = s, v
	}
	ls, err := note.NewSigner(w.logSkey)
	if err != nil {
		t.Fatal(err)
	}
	root := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32))
	if w.checkpoint, err = note.Sign(&note.Note{Text: "bank.example/ledger\n12\n" + root + "\n"}, ls); err != nil {
		t.Fatal(err)
	}
	return w
}

// cosigned returns the checkpoint cosigned by the named witnesses.
func (w *world) cosigned(t *testing.T, names ...string) []byte {
	t.Helper()
	text, _, _ := bytes.Cut(w.checkpoint, []byte("\n\n"))
	var lines [][]byte
	for _, n := range names {
		s, err := fnote.NewSignerForCosignatureV1(w.wSkeys[n])
		if err != nil {
			t.Fatal(err)
		}
		signed, err := note.Sign(&note.Note{Text: string(text) + "\n"}, s)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, signed[len(text)+2:])
	}
	lv, err := cosignature.NewLogVerifier(w.logVKey)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := cosignature.Merge(w.checkpoint, lv, lines...)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

// example is the spec's example policy with w's keys.
func (w *world) example() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# the spec's example\nlog %s https://bank.example/ledger\n\n", w.logVKey)
	for _, n := range []string{"X1", "X2", "X3"} {
		fmt.Fprintf(&b, "witness %s\t%s\n", n, w.wVKeys[n])
	}
	b.WriteString("group X-witnesses 2 X1 X2 X3\n\n")
	for _, n := range []string{"Y1", "Y2", "Y3"} {
		fmt.Fprintf(&b, "  witness %s %s https://%s.example/\n", n, w.wVKeys[n], n)
	}
	b.WriteString("group Y-witnesses any Y1 Y2 Y3\n\ngroup X-and-Y all X-witnesses Y-witnesses\nquorum X-and-Y\n")
	return b.String()
}

// TestQuorum: the spec's example, two levels of groups, against real
// cosignatures by each subset that matters.
func TestQuorum(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p, err := Parse([]byte(w.example()))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Logs) != 1 || len(p.Witnesses) != 6 || p.Logs[0].Name != "bank.example/ledger" || p.Witnesses[3].URL != "https://Y1.example/" {
		t.Fatalf("parsed %+v", p)
	}
	for _, c := range []struct {
		by []string
		ok bool
	}{
		{[]string{"X1", "X2", "Y3"}, true},
		{[]string{"X1", "X2", "X3", "Y1", "Y2", "Y3"}, true},
		{[]string{"X2", "X3", "Y1"}, true},
		{[]string{"X1", "Y1", "Y2", "Y3"}, false}, // one X
		{[]string{"X1", "X2", "X3"}, false},       // no Y
		{nil, false},
	} {
		v, err := p.Verify(w.cosigned(t, c.by...))
		if c.ok != (err == nil) {
			t.Errorf("cosigned by %v: %v, want ok %v", c.by, err, c.ok)
		}
		if err != nil && !errors.Is(err, cosignature.ErrQuorum) {
			t.Errorf("cosigned by %v: %v does not wrap ErrQuorum", c.by, err)
		}
		if err == nil && len(v.Cosigners) != len(c.by) {
			t.Errorf("cosigned by %v: %d cosigners", c.by, len(v.Cosigners))
		}
	}
	// A forged line by a known witness is refused, not skipped.
	cp := w.cosigned(t, "X1", "X2", "Y1")
	forged := bytes.Replace(cp, []byte("— witness-y1.example "), []byte("— witness-y1.example A"), 1)
	if _, err := p.Verify(forged); err == nil {
		t.Error("a corrupted cosignature of a known witness verified")
	}
}

// TestQuorumNoneAndOne: quorum none needs only the log; quorum of one
// witness needs that witness; the log's origin picks among several logs.
func TestQuorumNoneAndOne(t *testing.T) {
	t.Parallel()
	w, other := newWorld(t), newWorld(t)
	none, err := Parse([]byte("log " + other.logVKey + "\nlog " + w.logVKey + "\nquorum none\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := none.Verify(w.checkpoint); err != nil {
		t.Errorf("quorum none: %v", err)
	}
	// Both logs have the origin bank.example/ledger: each one's
	// checkpoints verify; a third key's do not.
	if _, err := none.VerifyLog(other.checkpoint); err != nil {
		t.Errorf("two logs of one origin, the first's checkpoint: %v", err)
	}
	if _, err := none.VerifyLog(newWorld(t).checkpoint); !errors.Is(err, cosignature.ErrLogSignature) {
		t.Errorf("a third log key of the same origin: %v, want ErrLogSignature", err)
	}
	one, err := Parse([]byte("log " + w.logVKey + "\nwitness Y2 " + w.wVKeys["Y2"] + "\nquorum Y2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := one.Verify(w.cosigned(t, "Y2")); err != nil {
		t.Errorf("quorum Y2 cosigned by Y2: %v", err)
	}
	if _, err := one.Verify(w.cosigned(t, "Y1")); !errors.Is(err, cosignature.ErrQuorum) {
		t.Errorf("quorum Y2 cosigned by Y1 only: %v, want ErrQuorum", err)
	}
	if _, err := one.Verify(other.cosigned(t, "Y2")); !errors.Is(err, cosignature.ErrLogSignature) {
		t.Errorf("another log's checkpoint: %v, want ErrLogSignature", err)
	}
	nolog, err := Parse([]byte("quorum none\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nolog.Verify(w.checkpoint); err == nil || !strings.Contains(err.Error(), "names no log") {
		t.Errorf("a policy without logs: %v", err)
	}
}

// TestParseRefuses: every rule of the format, each with its own message.
func TestParseRefuses(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	lk, x1, x2 := w.logVKey, w.wVKeys["X1"], w.wVKeys["X2"]
	// X1's public key under another name and key type (Ed25519, 0x01).
	parts := strings.SplitN(x1, "+", 3)
	raw, _ := base64.StdEncoding.DecodeString(parts[2])
	sameKey, err := note.NewEd25519VerifierKey("other.example", ed25519.PublicKey(raw[1:]))
	if err != nil {
		t.Fatal(err)
	}
	unknownType := "w.example+" + parts[1] + "+" + base64.StdEncoding.EncodeToString(append([]byte{0x09}, raw[1:]...))
	// The log's public key as a witness's: its cosignature/v1 form, and
	// that under another name.
	lkCosig, err := fnote.VKeyToCosignatureV1(lk)
	if err != nil {
		t.Fatal(err)
	}
	lraw, _ := base64.StdEncoding.DecodeString(strings.SplitN(lk, "+", 3)[2])
	lkOther, err := note.NewEd25519VerifierKey("independent.example", ed25519.PublicKey(lraw[1:]))
	if err != nil {
		t.Fatal(err)
	}
	if lkOther, err = fnote.VKeyToCosignatureV1(lkOther); err != nil {
		t.Fatal(err)
	}
	const logIsWitness = "a log's key is never a witness's"
	for _, c := range []struct{ name, policy, want string }{
		{"no quorum", "log " + lk + "\n", "no quorum line"},
		{"two quorums", "quorum none\nquorum none\n", "line 2: a second quorum line"},
		{"unknown keyword", "logs " + lk + "\nquorum none\n", `line 1: "logs" is not log, witness, group or quorum`},
		{"unknown witness key type", "witness W " + unknownType + "\nquorum W\n", "line 1: witness W: witness key"},
		{"bad log key", "log notakey\nquorum none\n", "line 1: log key"},
		{"duplicate log", "log " + lk + "\nlog " + lk + "\nquorum none\n", "line 2: the log key wraps the same public key as line 1's"},
		{"duplicate witness key", "witness A " + x1 + "\nwitness B " + sameKey + "\nquorum A\n", "line 2: witness B: the key wraps the same public key as line 1's"},
		{"the log key as a witness", "log " + lk + "\nwitness W " + lk + "\nquorum W\n", "line 2: witness W: the key wraps the same public key as line 1's: " + logIsWitness},
		{"the log key as a witness, cosignature/v1", "log " + lk + "\nwitness W " + lkCosig + "\nquorum W\n", "line 2: witness W: the key wraps the same public key as line 1's: " + logIsWitness},
		{"the log key as a witness of another name", "log " + lk + "\nwitness W " + lkOther + "\nquorum W\n", "line 2: witness W: the key wraps the same public key as line 1's: " + logIsWitness},
		{"a witness key as a later log", "witness W " + x1 + "\nlog " + sameKey + "\nquorum W\n", "line 2: the log key wraps the same public key as line 1's: " + logIsWitness},
		{"name twice", "witness A " + x1 + "\nwitness A " + x2 + "\nquorum A\n", "line 2: A is defined twice"},
		{"group named like a witness", "witness A " + x1 + "\ngroup A any A\nquorum A\n", "line 2: A is defined twice"},
		{"reserved name", "witness none " + x1 + "\nquorum none\n", "line 1: none is a reserved name"},
		{"threshold above the members", "witness A " + x1 + "\nwitness B " + x2 + "\ngroup G 3 A B\nquorum G\n", `line 3: group G: threshold "3" is not all, any or a decimal from 1 to its 2 members`},
		{"threshold 0", "witness A " + x1 + "\ngroup G 0 A\nquorum G\n", `threshold "0"`},
		{"threshold with a leading zero", "witness A " + x1 + "\ngroup G 01 A\nquorum G\n", `threshold "01"`},
		{"group of nothing", "group G any\nquorum none\n", "line 1: want group"},
		{"member twice", "witness A " + x1 + "\ngroup G any A A\nquorum G\n", "line 2: group G: A is listed twice"},
		{"forward reference", "group G any A\nwitness A " + x1 + "\nquorum G\n", "line 1: group G: A is not a witness or group defined on an earlier line"},
		{"none as a member", "witness A " + x1 + "\ngroup G any A none\nquorum G\n", "none cannot be a member"},
		{"quorum before its witness", "quorum A\nwitness A " + x1 + "\n", "line 1: quorum A is not none or a witness or group defined on an earlier line"},
		{"control character", "quorum none\r\n", "control character 0x0d"},
		{"no final newline", "quorum none", "does not end in a newline"},
		{"witness without key", "witness A\nquorum none\n", "line 1: want witness <name> <vkey> [<url>]"},
		{"too many items", "log " + lk + " https://a https://b\nquorum none\n", "line 1: want log <vkey> [<url>]"},
	} {
		_, err := Parse([]byte(c.policy))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Parse = %v, want an error with %q", c.name, err, c.want)
		}
		t.Logf("%s: %v", c.name, err)
	}
	// The controls: comments, blank lines, tabs, a group of groups.
	if _, err := Parse([]byte("# c\n\t\nwitness A " + x1 + "\nwitness B\t" + x2 + "\ngroup G any A\ngroup H all G B\n  # c\nquorum H\n")); err != nil {
		t.Errorf("the control: %v", err)
	}
}

// FuzzParse: Parse never panics on any input.
func FuzzParse(f *testing.F) {
	f.Add([]byte("quorum none\n"))
	f.Add([]byte("witness A a.example+01234567+AQHo3oF6xY8MzbXfMZvUcOBc5bG7CeXPxdpFa3OT5Pc9\ngroup G 1 A\nquorum G\n"))
	f.Add([]byte("log x+01234567+AQ==\n# c\ngroup G all\nquorum\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err == nil && p == nil {
			t.Fatal("no policy and no error")
		}
	})
}
