package verifier

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/ledger/receipt"
)

func key(b byte) ed25519.PrivateKey {
	seed := bytes.Repeat([]byte{b}, ed25519.SeedSize)
	return ed25519.NewKeyFromSeed(seed)
}

func pubOf(k ed25519.PrivateKey) ed25519.PublicKey { return k.Public().(ed25519.PublicKey) }

var policyA = hexSum("policy a")

func hexSum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// deny returns receipt number i of a test chain; tag varies its content.
func deny(i int, tag string) *receipt.Receipt {
	return &receipt.Receipt{
		Time:         time.Date(2026, 12, 2, 18, 0, i, 0, time.UTC),
		Decision:     receipt.Deny,
		Server:       "bank",
		Tool:         "transfer",
		Rule:         "name.write_word",
		Reason:       "call " + tag,
		ArgNames:     []string{"amount_cents", "to_account"},
		ArgsSHA256:   hexSum(tag),
		PolicyID:     "p",
		PolicySHA256: policyA,
	}
}

// makeDir writes n receipts signed by k into a new directory.
func makeDir(t *testing.T, k ed25519.PrivateKey, n int, tag string) string {
	t.Helper()
	dir := t.TempDir()
	w, err := receipt.OpenWriter(dir, k)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range n {
		if _, _, err := w.Write(deny(i, tag)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// wantError checks that err is an *Error for file whose reason holds want.
func wantError(t *testing.T, err error, file, want string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v, want a *verifier.Error", err)
	}
	if e.File != file || !strings.Contains(e.Reason, want) {
		t.Fatalf("err = %q, want file %q and a reason containing %q", err, file, want)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestIntactDirectoryVerifies(t *testing.T) {
	t.Parallel()
	k := key(1)
	dir := makeDir(t, k, 5, "a")
	rep, err := VerifyDir(dir, pubOf(k), Options{PolicySHA256: policyA})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Receipts) != 5 || rep.FirstSeq != 1 || rep.LastSeq != 5 || rep.KeyID != agentkey.KeyID(pubOf(k)) {
		t.Errorf("report = %+v", rep)
	}
	for i, c := range rep.Receipts {
		name := receipt.FileName(uint64(i + 1))
		if c.File != name || c.Seq != uint64(i+1) || c.SHA256 != sha256.Sum256(readFile(t, filepath.Join(dir, name))) {
			t.Errorf("receipt %d reported as %+v", i+1, c)
		}
	}
	if rep.Head != sha256.Sum256(readFile(t, filepath.Join(dir, "000005.json"))) {
		t.Error("head is not the SHA-256 of the last receipt file")
	}
}

// TestTamperAnyByte: changing any byte of any receipt fails verification,
// at that very file.
func TestTamperAnyByte(t *testing.T) {
	t.Parallel()
	k := key(1)
	dir := makeDir(t, k, 3, "a")
	for seq := uint64(1); seq <= 3; seq++ {
		name := receipt.FileName(seq)
		path := filepath.Join(dir, name)
		orig := readFile(t, path)
		step := 1
		if raceEnabled {
			step = 13
		}
		for i := 0; i < len(orig); i += step {
			b := bytes.Clone(orig)
			b[i] ^= 0x01
			writeFile(t, path, b)
			_, err := VerifyDir(dir, pubOf(k), Options{})
			var e *Error
			if !errors.As(err, &e) || e.File != name {
				t.Fatalf("%s byte %d flipped: err = %v, want an error for %s", name, i, err, name)
			}
		}
		writeFile(t, path, orig)
	}
	if _, err := VerifyDir(dir, pubOf(k), Options{}); err != nil {
		t.Fatalf("restored directory: %v", err)
	}
}

func TestDeletedReceipts(t *testing.T) {
	t.Parallel()
	k := key(1)
	tests := []struct {
		remove    []uint64
		file, why string
	}{
		{[]uint64{3}, "000004.json", "seq 3 missing between 000002.json and 000004.json"},
		{[]uint64{2, 3}, "000004.json", "seq 2 missing between 000001.json and 000004.json (2 receipts missing: seq 2 to 3)"},
		{[]uint64{1}, "000002.json", "seq 1 missing before 000002.json"},
	}
	for _, tt := range tests {
		dir := makeDir(t, k, 5, "a")
		for _, s := range tt.remove {
			if err := os.Remove(filepath.Join(dir, receipt.FileName(s))); err != nil {
				t.Fatal(err)
			}
		}
		_, err := VerifyDir(dir, pubOf(k), Options{})
		wantError(t, err, tt.file, tt.why)
	}
}

func TestReordered(t *testing.T) {
	t.Parallel()
	k := key(1)
	t.Run("swapped contents", func(t *testing.T) {
		dir := makeDir(t, k, 4, "a")
		a, b := filepath.Join(dir, "000002.json"), filepath.Join(dir, "000003.json")
		ab, bb := readFile(t, a), readFile(t, b)
		writeFile(t, a, bb)
		writeFile(t, b, ab)
		_, err := VerifyDir(dir, pubOf(k), Options{})
		wantError(t, err, "000002.json", "holds seq 3, so its name should be 000003.json")
	})
	t.Run("renamed", func(t *testing.T) {
		dir := makeDir(t, k, 4, "a")
		if err := os.Rename(filepath.Join(dir, "000004.json"), filepath.Join(dir, "000005.json")); err != nil {
			t.Fatal(err)
		}
		_, err := VerifyDir(dir, pubOf(k), Options{})
		wantError(t, err, "000005.json", "holds seq 4")
	})
	t.Run("spliced from another chain of the same key", func(t *testing.T) {
		dir, other := makeDir(t, k, 3, "a"), makeDir(t, k, 3, "b")
		writeFile(t, filepath.Join(dir, "000002.json"), readFile(t, filepath.Join(other, "000002.json")))
		_, err := VerifyDir(dir, pubOf(k), Options{})
		wantError(t, err, "000002.json", "prev does not match SHA-256 of 000001.json")
	})
}

func TestOtherKey(t *testing.T) {
	t.Parallel()
	real, attacker := key(1), key(2)
	realID, attackerID := agentkey.KeyID(pubOf(real)), agentkey.KeyID(pubOf(attacker))
	t.Run("whole directory", func(t *testing.T) {
		dir := makeDir(t, attacker, 2, "a")
		_, err := VerifyDir(dir, pubOf(real), Options{})
		wantError(t, err, "000001.json", "key_id "+attackerID+" is not the public key's key_id "+realID)
	})
	t.Run("one receipt replaced", func(t *testing.T) {
		// The attacker rewrites receipt 2 with its own key, seq and prev
		// kept right, so only the key gives it away.
		dir := makeDir(t, real, 3, "a")
		r, err := receipt.Parse(readFile(t, filepath.Join(dir, "000002.json")))
		if err != nil {
			t.Fatal(err)
		}
		r.Tool, r.Decision = "get_balances", receipt.Allow
		b, err := receipt.Sign(r, attacker)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, "000002.json"), b)
		_, err = VerifyDir(dir, pubOf(real), Options{})
		wantError(t, err, "000002.json", "key_id "+attackerID+" is not the public key's key_id "+realID)
	})
	t.Run("forged signature claiming the real key_id", func(t *testing.T) {
		dir := makeDir(t, real, 3, "a")
		path := filepath.Join(dir, "000002.json")
		r, err := receipt.Parse(readFile(t, path))
		if err != nil {
			t.Fatal(err)
		}
		r.Reason = "nothing happened"
		b, err := receipt.Sign(r, attacker)
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.Replace(b, []byte(`"key_id":"`+attackerID), []byte(`"key_id":"`+realID), 1)
		writeFile(t, path, b)
		_, err = VerifyDir(dir, pubOf(real), Options{})
		wantError(t, err, "000002.json", "signature does not verify")
	})
	t.Run("whole chain re-signed by the attacker", func(t *testing.T) {
		// A consistent chain that leaves out a deny: it verifies under the
		// attacker's key, and must not under the real one.
		dir := makeDir(t, real, 3, "a")
		forged := t.TempDir()
		w, err := receipt.OpenWriter(forged, attacker)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []uint64{1, 3} {
			r, err := receipt.Parse(readFile(t, filepath.Join(dir, receipt.FileName(s))))
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		w.Close()
		if _, err := VerifyDir(forged, pubOf(attacker), Options{}); err != nil {
			t.Fatalf("forged chain is not even consistent: %v", err)
		}
		_, err = VerifyDir(forged, pubOf(real), Options{})
		wantError(t, err, "000001.json", "is not the public key's key_id")
	})
}

func TestPolicyHash(t *testing.T) {
	t.Parallel()
	k := key(1)
	dir := makeDir(t, k, 2, "a")
	other := hexSum("policy b")
	_, err := VerifyDir(dir, pubOf(k), Options{PolicySHA256: other})
	wantError(t, err, "000001.json", "policy_sha256 "+policyA+" is not the policy's SHA-256 "+other)
	if _, err := VerifyDir(dir, pubOf(k), Options{PolicySHA256: strings.ToUpper(policyA)}); err == nil {
		t.Error("an upper-case policy hash option was accepted")
	}
	// A later receipt under another policy.
	w, err := receipt.OpenWriter(dir, k)
	if err != nil {
		t.Fatal(err)
	}
	r := deny(9, "c")
	r.PolicySHA256 = other
	if _, _, err := w.Write(r); err != nil {
		t.Fatal(err)
	}
	w.Close()
	_, err = VerifyDir(dir, pubOf(k), Options{PolicySHA256: policyA})
	wantError(t, err, "000003.json", "policy_sha256")
	if _, err := VerifyDir(dir, pubOf(k), Options{}); err != nil {
		t.Errorf("without --policy the directory verifies: %v", err)
	}
}

func TestDirectoryContents(t *testing.T) {
	t.Parallel()
	k := key(1)
	t.Run("empty", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, ".lock"), nil)
		_, err := VerifyDir(dir, pubOf(k), Options{})
		wantError(t, err, "", "no receipts in "+dir)
	})
	t.Run("dot files ignored", func(t *testing.T) {
		dir := makeDir(t, k, 2, "a")
		writeFile(t, filepath.Join(dir, ".tmp-123"), []byte("junk"))
		if _, err := VerifyDir(dir, pubOf(k), Options{}); err != nil {
			t.Fatal(err)
		}
	})
	for _, name := range []string{"notes.txt", "0000003.json", "000003.json.orig"} {
		t.Run("stray "+name, func(t *testing.T) {
			dir := makeDir(t, k, 2, "a")
			writeFile(t, filepath.Join(dir, name), []byte("{}"))
			_, err := VerifyDir(dir, pubOf(k), Options{})
			wantError(t, err, name, "not a receipt file name")
		})
	}
	t.Run("the first stray by name", func(t *testing.T) {
		// The directory lists them in its own order; the error names the
		// first in name order, whichever it lists first.
		dir := makeDir(t, k, 2, "a")
		for i := range 20 {
			writeFile(t, filepath.Join(dir, fmt.Sprintf("stray-%02d.txt", 20-i)), nil)
		}
		if err := os.Mkdir(filepath.Join(dir, "000009.json"), 0o700); err != nil {
			t.Fatal(err)
		}
		_, err := VerifyDir(dir, pubOf(k), Options{})
		wantError(t, err, "000009.json", "not a regular file")
		if err := os.Remove(filepath.Join(dir, "000009.json")); err != nil {
			t.Fatal(err)
		}
		_, err = VerifyDir(dir, pubOf(k), Options{})
		wantError(t, err, "stray-01.txt", "not a receipt file name")
	})
	t.Run("subdirectories skipped", func(t *testing.T) {
		dir := makeDir(t, k, 2, "a")
		sub := filepath.Join(dir, "agent-b")
		w, err := receipt.OpenWriter(sub, key(2))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if _, _, err := w.Write(deny(0, "b")); err != nil {
			t.Fatal(err)
		}
		rep, err := VerifyDir(dir, pubOf(k), Options{})
		if err != nil || rep.LastSeq != 2 {
			t.Fatalf("VerifyDir beside a subdirectory: %+v, %v; want seq 1..2", rep, err)
		}
		if _, err := VerifyDir(sub, pubOf(key(2)), Options{}); err != nil {
			t.Fatalf("VerifyDir of the subdirectory: %v", err)
		}
	})
	t.Run("directory named like a receipt", func(t *testing.T) {
		dir := makeDir(t, k, 2, "a")
		if err := os.Mkdir(filepath.Join(dir, "000003.json"), 0o700); err != nil {
			t.Fatal(err)
		}
		_, err := VerifyDir(dir, pubOf(k), Options{})
		wantError(t, err, "000003.json", "not a regular file")
	})
	t.Run("missing directory", func(t *testing.T) {
		_, err := VerifyDir(filepath.Join(t.TempDir(), "nope"), pubOf(k), Options{})
		if !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("err = %v, want os.ErrNotExist", err)
		}
	})
	t.Run("non-canonical receipt", func(t *testing.T) {
		dir := makeDir(t, k, 2, "a")
		path := filepath.Join(dir, "000002.json")
		writeFile(t, path, append(readFile(t, path), '\n'))
		_, err := VerifyDir(dir, pubOf(k), Options{})
		wantError(t, err, "000002.json", "not in RFC 8785 canonical form")
	})
}

// TestOrderIsNumeric: 1000000.json comes after 999999.json although it
// sorts before it as a string.
func TestOrderIsNumeric(t *testing.T) {
	t.Parallel()
	k := key(1)
	dir := t.TempDir()
	prev := receipt.FirstPrev
	for _, seq := range []uint64{999999, 1000000} {
		r := deny(int(seq%60), "x")
		r.Seq, r.Prev = seq, prev
		if seq == 999999 {
			r.Prev = hexSum("receipt 999998")
		}
		b, err := receipt.Sign(r, k)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, receipt.FileName(seq)), b)
		h := sha256.Sum256(b)
		prev = hex.EncodeToString(h[:])
	}
	// The first file is seq 999999: the report must name seq 1 missing
	// before it, not complain about 1000000.json first.
	_, err := VerifyDir(dir, pubOf(k), Options{})
	wantError(t, err, "999999.json", "seq 1 missing before 999999.json")
}

// TestReadReceiptSizes: readReceipt returns a file whole up to one byte
// over the receipt limit (so that the parser names the size), reads an
// empty file, and names the file it cannot open.
func TestReadReceiptSizes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, size := range []int{0, 1, 2047, 2048, 2049, 5000, receipt.MaxSize, receipt.MaxSize + 1, receipt.MaxSize + 2, 3 * receipt.MaxSize} {
		b := make([]byte, size)
		for i := range b {
			b[i] = byte(i)
		}
		path := filepath.Join(dir, fmt.Sprint(size))
		writeFile(t, path, b)
		got, err := readReceipt(path)
		want := b[:min(size, receipt.MaxSize+1)]
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("size %d: read %d bytes (%v), want the first %d", size, len(got), err, len(want))
		}
	}
	if _, err := readReceipt(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "missing") || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want an error naming it that is os.ErrNotExist", err)
	}
}
