package cosignature_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/bankdoor/bankdoor/anchor/cosignature"
	"github.com/bankdoor/bankdoor/anchor/internal/testlog"
	"golang.org/x/mod/sumdb/note"
)

const origin = "bankdoor.test/ledger"

// fixture is a log with a few checkpoints and three witnesses' real keys.
type fixture struct {
	logSkey, logVKey string
	log              *testlog.Log
	wSkeys, wVKeys   []string
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{}
	f.logSkey, f.logVKey = testlog.NewKey(t, origin)
	f.log = testlog.New(t, f.logSkey)
	f.log.Append("receipt", 5)
	for i := range 3 {
		s, v := testlog.NewWitnessKey(t, fmt.Sprintf("witness%d.test", i))
		f.wSkeys, f.wVKeys = append(f.wSkeys, s), append(f.wVKeys, v)
	}
	return f
}

// cosign returns the cosignature line witness i makes on checkpoint.
func (f *fixture) cosign(t *testing.T, checkpoint []byte, i int) []byte {
	t.Helper()
	return cosignWith(t, checkpoint, f.wSkeys[i])
}

func (f *fixture) witness(t *testing.T, i int) note.Verifier {
	v, err := cosignature.NewWitnessVerifier(f.wVKeys[i])
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (f *fixture) logKey(t *testing.T) note.Verifier {
	v, err := cosignature.NewLogVerifier(f.logVKey)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestVerifyAcceptsTheWitnessLine(t *testing.T) {
	f := newFixture(t)
	cp := f.log.Checkpoint()
	line0, line1 := f.cosign(t, cp, 0), f.cosign(t, cp, 1)
	got, err := cosignature.Verify(cp, append(slices.Clone(line1), line0...), f.witness(t, 0))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, line0) {
		t.Errorf("Verify returned %q; want only witness 0's line %q", got, line0)
	}
}

func TestVerifyRefuses(t *testing.T) {
	f := newFixture(t)
	cp := f.log.Checkpoint()
	line := f.cosign(t, cp, 0)
	f.log.Append("receipt", 1)
	other := f.log.Checkpoint()
	for _, c := range []struct {
		name  string
		lines []byte
		want  error
	}{
		{"another checkpoint's cosignature", f.cosign(t, other, 0), cosignature.ErrBadCosignature},
		{"forged", flipSignatureBit(t, line), cosignature.ErrBadCosignature},
		{"another witness only", f.cosign(t, cp, 1), cosignature.ErrNoCosignature},
		{"empty", nil, cosignature.ErrMalformed},
		{"no final newline", bytes.TrimSuffix(line, []byte("\n")), cosignature.ErrMalformed},
		{"a blank line that would move the note text", append([]byte("\n"), line...), cosignature.ErrMalformed},
		{"text before the line", append([]byte("5\n"), line...), cosignature.ErrMalformed},
	} {
		_, err := cosignature.Verify(cp, c.lines, f.witness(t, 0))
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v; want %v", c.name, err, c.want)
		}
	}
}

// flipSignatureBit changes the last byte of the Ed25519 signature in a line.
func flipSignatureBit(t *testing.T, line []byte) []byte {
	t.Helper()
	_, err := note.Open(append([]byte("x\n\n"), line...), note.VerifierList())
	var u *note.UnverifiedNoteError
	if !errors.As(err, &u) {
		t.Fatalf("parsing line %q: %v", line, err)
	}
	s := u.Note.UnverifiedSigs[0]
	raw := []byte(s.Base64)
	// Flip a bit inside the last full base64 quantum's decoded bytes.
	i := len(raw) - 5
	raw[i] = map[bool]byte{true: 'A', false: 'B'}[raw[i] != 'A']
	return fmt.Appendf(nil, "— %s %s\n", s.Name, raw)
}

func TestMergeIsStableAndDeduplicated(t *testing.T) {
	f := newFixture(t)
	cp := f.log.Checkpoint()
	l0, l1, l2 := f.cosign(t, cp, 0), f.cosign(t, cp, 1), f.cosign(t, cp, 2)
	want, err := cosignature.Merge(cp, f.logKey(t), l0, l1, l2)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range [][][]byte{
		{l2, l1, l0},
		{l1, l0, l2, l1, l0},                  // repeated lines
		{append(slices.Clone(l2), l0...), l1}, // several lines in one cosignature
	} {
		got, err := cosignature.Merge(cp, f.logKey(t), in...)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("Merge(%q) =\n%s\nwant\n%s", in, got, want)
		}
	}
	if n := bytes.Count(want, []byte("\n— ")); n != 4 {
		t.Errorf("merged note has %d signature lines; want 4 (log + 3 witnesses):\n%s", n, want)
	}
	if !bytes.HasPrefix(want, cp) {
		t.Errorf("merged note does not start with the log-signed checkpoint:\n%s", want)
	}
	p, err := cosignature.NewPolicy(f.logVKey, f.wVKeys, 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Verify(want); err != nil {
		t.Errorf("the merged note fails a 3-of-3 policy: %v", err)
	}
}

func TestMergeKeepsOneLinePerKey(t *testing.T) {
	f := newFixture(t)
	cp := f.log.Checkpoint()
	a, b := f.cosign(t, cp, 0), flipSignatureBit(t, f.cosign(t, cp, 0))
	ab, err := cosignature.Merge(cp, f.logKey(t), a, b)
	if err != nil {
		t.Fatal(err)
	}
	ba, err := cosignature.Merge(cp, f.logKey(t), b, a)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ab, ba) || bytes.Count(ab, []byte("witness0.test")) != 1 {
		t.Errorf("two lines by one key: Merge(a, b) =\n%s\nMerge(b, a) =\n%s\nwant the same note with one line by the key", ab, ba)
	}
}

func TestMergeRefuses(t *testing.T) {
	f := newFixture(t)
	cp := f.log.Checkpoint()
	_, err := cosignature.Merge(cp, f.logKey(t), []byte("x\n\n— witness0.test AAAA\n"))
	if !errors.Is(err, cosignature.ErrMalformed) {
		t.Errorf("a cosignature holding note text: err = %v; want ErrMalformed", err)
	}
	tampered := bytes.Replace(cp, []byte("\n5\n"), []byte("\n4\n"), 1)
	if _, err := cosignature.Merge(tampered, f.logKey(t)); !errors.Is(err, cosignature.ErrLogSignature) {
		t.Errorf("a checkpoint whose size was altered: err = %v; want ErrLogSignature", err)
	}
}

func TestOpenStrict(t *testing.T) {
	f := newFixture(t)
	signer, err := note.NewSigner(f.logSkey)
	if err != nil {
		t.Fatal(err)
	}
	root := "x9XqKJ6PnN6Q3/CtT9u6NEnd4fnQV6mpg2Qzr8B3E3M="
	for _, text := range []string{
		origin + "\n05\n" + root + "\n", // non-canonical size
		origin + "\n5\nAAAA\n",          // 3-byte root hash
		"other.test/log\n5\n" + root + "\n",
	} {
		msg, err := note.Sign(&note.Note{Text: text}, signer)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := cosignature.Open(msg, f.logKey(t)); !errors.Is(err, cosignature.ErrMalformed) {
			t.Errorf("Open(%q) = %v; want ErrMalformed", text, err)
		}
	}
}
