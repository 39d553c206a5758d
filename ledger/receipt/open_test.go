package receipt

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// openWith returns a key function for Open that gives pub for any receipt.
func openWith(pub ed25519.PublicKey) func(*Receipt) (ed25519.PublicKey, error) {
	return func(*Receipt) (ed25519.PublicKey, error) { return pub, nil }
}

// slowAccepts is what Open must agree with: Parse, then Verify.
func slowAccepts(b []byte, pub ed25519.PublicKey) error {
	r, err := Parse(b)
	if err != nil {
		return err
	}
	return r.Verify(pub)
}

// TestOpenSignsWhatVerifySigns checks the claim Open rests on: the file
// less its sig member is, byte for byte, the message Verify re-encodes.
func TestOpenSignsWhatVerifySigns(t *testing.T) {
	files := exampleFiles(t)
	for _, b := range files {
		r, sig, err := parse(b)
		if err != nil {
			t.Fatal(err)
		}
		want, err := r.encode(false)
		if err != nil {
			t.Fatal(err)
		}
		if got := signedPart(b, sig); !bytes.Equal(got, want) {
			t.Fatalf("signed part of the file:\n%s\nVerify's message:\n%s", got, want)
		}
		if !bytes.HasPrefix(b[sig[0]:], []byte(`,"sig":"`)) {
			t.Fatalf("sig span starts %q, want the comma before \"sig\"", b[sig[0]:min(sig[1], sig[0]+8)])
		}
		if _, err := Open(b, openWith(testPub())); err != nil {
			t.Fatalf("Open: %v", err)
		}
	}
}

func TestOpenRefusals(t *testing.T) {
	file := exampleFiles(t)[0]
	// The key function's error comes back unchanged, and it sees the receipt.
	refused := errors.New("not enrolled")
	var saw *Receipt
	_, err := Open(file, func(r *Receipt) (ed25519.PublicKey, error) { saw = r; return nil, refused })
	if err != refused {
		t.Fatalf("Open with a refusing key function: err = %v, want it unchanged", err)
	}
	if saw == nil || saw.Seq != 1 || saw.KeyID == "" {
		t.Fatalf("key function saw %+v, want the parsed receipt", saw)
	}
	// A key that is not the one key_id names.
	if _, err := Open(file, openWith(otherPub())); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("Open with another key: err = %v, want a key_id mismatch", err)
	}
	if _, err := Open(file, openWith(ed25519.PublicKey("short"))); err == nil {
		t.Fatal("Open with a 5-byte key: accepted")
	}
	// Signed by another key, claiming the real key_id.
	r, err := Parse(file)
	if err != nil {
		t.Fatal(err)
	}
	forged := *r
	b, err := Sign(&forged, otherKey())
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte(forged.KeyID), []byte(r.KeyID), 1)
	if _, err := Open(b, openWith(testPub())); !errors.Is(err, ErrSignature) {
		t.Fatalf("Open of a forged signature: err = %v, want ErrSignature", err)
	}
	if err := slowAccepts(b, testPub()); !errors.Is(err, ErrSignature) {
		t.Fatalf("Verify of a forged signature: err = %v, want ErrSignature", err)
	}
}

// FuzzOpen checks that Open accepts exactly what Parse and Verify accept,
// so that its shortcut (verifying the file's bytes, not a re-encoding)
// lets nothing more through, and that it never panics.
func FuzzOpen(f *testing.F) {
	for _, b := range exampleFiles(f) {
		f.Add(b)
	}
	// The committed corpus of FuzzParse too: valid and broken receipts.
	dir := filepath.Join("testdata", "fuzz", "FuzzParse")
	entries, err := os.ReadDir(dir)
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		f.Add(corpusBytes(f, filepath.Join(dir, e.Name())))
	}
	pub := testPub()
	f.Fuzz(func(t *testing.T, b []byte) {
		_, fast := Open(b, openWith(pub))
		slow := slowAccepts(b, pub)
		if (fast == nil) != (slow == nil) {
			t.Fatalf("Open: %v; Parse and Verify: %v; for %q", fast, slow, b)
		}
	})
}

// keyWith returns a key function for OpenKey that gives k for any receipt.
func keyWith(k *Key) func(*Receipt) (*Key, error) {
	return func(*Receipt) (*Key, error) { return k, nil }
}

// mustKey is NewKey, failing t on error.
func mustKey(t testing.TB, pub ed25519.PublicKey) *Key {
	t.Helper()
	k, err := NewKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// FuzzOpenKey checks that OpenKey accepts exactly what Open accepts with
// the same public key, failing the same way (the same message, and
// ErrSignature where Open's wraps it), and that it never panics.
func FuzzOpenKey(f *testing.F) {
	for _, b := range exampleFiles(f) {
		f.Add(b)
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzParse")
	entries, err := os.ReadDir(dir)
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		f.Add(corpusBytes(f, filepath.Join(dir, e.Name())))
	}
	pub := testPub()
	key := mustKey(f, pub)
	f.Fuzz(func(t *testing.T, b []byte) {
		_, fast := OpenKey(b, keyWith(key))
		_, slow := Open(b, openWith(pub))
		if (fast == nil) != (slow == nil) || errors.Is(fast, ErrSignature) != errors.Is(slow, ErrSignature) ||
			(fast != nil && fast.Error() != slow.Error()) {
			t.Fatalf("OpenKey: %v; Open: %v; for %q", fast, slow, b)
		}
	})
}

func TestOpenKey(t *testing.T) {
	files := exampleFiles(t)
	key := mustKey(t, testPub())
	if key.KeyID() == "" || !bytes.Equal(key.Public(), testPub()) {
		t.Fatalf("Key: key_id %q, public %x", key.KeyID(), key.Public())
	}
	for _, b := range files {
		r, err := OpenKey(b, keyWith(key))
		if err != nil {
			t.Fatalf("OpenKey: %v", err)
		}
		if r.KeyID != key.KeyID() {
			t.Fatalf("receipt key_id %s, key's %s", r.KeyID, key.KeyID())
		}
	}
	if _, err := NewKey(ed25519.PublicKey("short")); err == nil {
		t.Fatal("NewKey of a 5-byte key: accepted")
	}
	// The key function's error comes back unchanged.
	refused := errors.New("not enrolled")
	if _, err := OpenKey(files[0], func(*Receipt) (*Key, error) { return nil, refused }); err != refused {
		t.Fatalf("OpenKey with a refusing key function: err = %v, want it unchanged", err)
	}
	if _, err := OpenKey(files[0], keyWith(mustKey(t, otherPub()))); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("OpenKey with another key: err = %v, want a key_id mismatch", err)
	}
	// Signed by another key, claiming the real key_id.
	r, err := Parse(files[0])
	if err != nil {
		t.Fatal(err)
	}
	forged := *r
	b, err := Sign(&forged, otherKey())
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte(forged.KeyID), []byte(r.KeyID), 1)
	if _, err := OpenKey(b, keyWith(key)); !errors.Is(err, ErrSignature) {
		t.Fatalf("OpenKey of a forged signature: err = %v, want ErrSignature", err)
	}
}
