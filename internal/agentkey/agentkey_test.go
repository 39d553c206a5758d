package agentkey

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestGenerateLoadRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	pub, err := Generate(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	priv, err := LoadPrivate(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !pub.Equal(priv.Public()) {
		t.Error("LoadPrivate returned a key that does not match the generated public key")
	}
	pub2, err := LoadPublic(filepath.Join(dir, PublicFile))
	if err != nil {
		t.Fatal(err)
	}
	if !pub.Equal(pub2) {
		t.Error("LoadPublic returned a different key")
	}
	msg := []byte("receipt")
	if !ed25519.Verify(pub2, msg, ed25519.Sign(priv, msg)) {
		t.Error("loaded keys do not sign and verify")
	}
	wantMode(t, dir, 0o700)
	wantMode(t, filepath.Join(dir, PrivateFile), 0o600)
	wantMode(t, filepath.Join(dir, PublicFile), 0o644)
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("key directory holds %d entries, want 2 (temporary files left behind?)", len(entries))
	}
}

func wantMode(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s: mode %04o, want %04o", path, got, want)
	}
}

// TestSaveWritesTheKeyGiven: Save writes a key made elsewhere (the proxy
// makes one in memory and saves it once it can start), and, like
// Generate, never replaces a key without force.
func TestSaveWritesTheKeyGiven(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if err := Save(dir, priv, false); err != nil {
		t.Fatal(err)
	}
	got, err := LoadPrivate(dir)
	if err != nil || !got.Equal(priv) {
		t.Fatalf("LoadPrivate after Save = %v, %v; want the key saved", got, err)
	}
	pub, err := LoadPublic(filepath.Join(dir, PublicFile))
	if err != nil || !pub.Equal(priv.Public()) {
		t.Fatalf("LoadPublic after Save = %v, %v; want its public key", pub, err)
	}
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	if err := Save(dir, other, false); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Save over a key without force = %v, want fs.ErrExist", err)
	}
	if err := Save(dir, other, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := LoadPrivate(dir); !got.Equal(other) {
		t.Fatal("Save with force did not replace the key")
	}
}

func TestGenerateRefusesOverwrite(t *testing.T) {
	dir := t.TempDir()
	first, err := Generate(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Generate(dir, false)
	if !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), filepath.Join(dir, PrivateFile)) {
		t.Fatalf("second Generate without force: err = %v, want an fs.ErrExist error naming the key file", err)
	}
	priv, err := LoadPrivate(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Equal(priv.Public()) {
		t.Fatal("refused Generate still replaced the key")
	}
	second, err := Generate(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	if first.Equal(second) {
		t.Fatal("Generate with force returned the old key")
	}
	priv, err = LoadPrivate(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !second.Equal(priv.Public()) {
		t.Fatal("Generate with force did not replace the key file")
	}
}

func TestGenerateRefusesIfOnlyPublicExists(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, PublicFile), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(dir, false); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("err = %v, want fs.ErrExist", err)
	}
}

func TestLoadPrivateRefusesLooseMode(t *testing.T) {
	dir := t.TempDir()
	if _, err := Generate(dir, false); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, PrivateFile)
	for _, mode := range []fs.FileMode{0o640, 0o604, 0o644, 0o660, 0o602} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		_, err := LoadPrivate(dir)
		if err == nil {
			t.Fatalf("mode %04o: LoadPrivate accepted the key", mode)
		}
		for _, want := range []string{path, "chmod 600 " + path} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("mode %04o: error %q does not contain %q", mode, err, want)
			}
		}
		if want := "mode 0" + octal(mode); !strings.Contains(err.Error(), want) {
			t.Errorf("mode %04o: error %q does not contain %q", mode, err, want)
		}
	}
	if err := os.Chmod(path, 0o400); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadPrivate(dir); err != nil {
		t.Errorf("mode 0400: %v", err)
	}
}

func octal(m fs.FileMode) string {
	const digits = "01234567"
	p := uint32(m.Perm())
	return string([]byte{digits[p>>6&7], digits[p>>3&7], digits[p&7]})
}

func writePEM(t *testing.T, path, typ string, der []byte, extra string) {
	t.Helper()
	b := append(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), extra...)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestLoadPrivateRejects(t *testing.T) {
	_, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	edDER, _ := x509.MarshalPKCS8PrivateKey(edPriv)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ecDER, _ := x509.MarshalPKCS8PrivateKey(ec)
	tests := []struct {
		name, typ string
		der       []byte
		extra     string
		want      string
	}{
		{"wrong type", "ED25519 PRIVATE KEY", edDER, "", `PEM block is "ED25519 PRIVATE KEY"`},
		{"public in private file", "PUBLIC KEY", edDER, "", `want "PRIVATE KEY"`},
		{"ecdsa", "PRIVATE KEY", ecDER, "", "want an Ed25519 private key"},
		{"garbage der", "PRIVATE KEY", []byte("nope"), "", "not a PKCS#8 private key"},
		{"two blocks", "PRIVATE KEY", edDER, string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: edDER})), "data after the PEM block"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writePEM(t, filepath.Join(dir, PrivateFile), tt.typ, tt.der, tt.extra)
			_, err := LoadPrivate(dir)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	t.Run("not pem", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, PrivateFile), []byte("hello"), 0o600)
		if _, err := LoadPrivate(dir); err == nil || !strings.Contains(err.Error(), "no PEM block") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("missing", func(t *testing.T) {
		_, err := LoadPrivate(t.TempDir())
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), PrivateFile) {
			t.Fatalf("err = %v, want fs.ErrNotExist naming the key file", err)
		}
	})
}

func TestLoadPublicRejects(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ecDER, _ := x509.MarshalPKIXPublicKey(&ec.PublicKey)
	edPub, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	edDER, _ := x509.MarshalPKIXPublicKey(edPub)
	privDER, _ := x509.MarshalPKCS8PrivateKey(edPriv)
	// The identity point: every receipt "signed" under it verifies.
	weakDER, _ := x509.MarshalPKIXPublicKey(ed25519.PublicKey(append([]byte{1}, make([]byte, 31)...)))
	tests := []struct {
		name, typ string
		der       []byte
		want      string
	}{
		{"ecdsa", "PUBLIC KEY", ecDER, "want an Ed25519 public key"},
		{"private key", "PRIVATE KEY", privDER, `want "PUBLIC KEY"`},
		{"garbage", "PUBLIC KEY", []byte{1, 2, 3}, "not a SubjectPublicKeyInfo"},
		{"small order", "PUBLIC KEY", weakDER, "a point of small order"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "k.pem")
			writePEM(t, path, tt.typ, tt.der, "")
			_, err := LoadPublic(path)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("err = %v, want it to name %s and contain %q", err, path, tt.want)
			}
		})
	}
	path := filepath.Join(t.TempDir(), "ok.pem")
	writePEM(t, path, "PUBLIC KEY", edDER, "\n\n")
	got, err := LoadPublic(path)
	if err != nil || !got.Equal(edPub) {
		t.Fatalf("LoadPublic = %x, %v; want %x", got, err, edPub)
	}
}

func TestKeyID(t *testing.T) {
	pub := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)).Public().(ed25519.PublicKey)
	sum := sha256.Sum256(pub)
	want := hex.EncodeToString(sum[:])[:16]
	if got := KeyID(pub); got != want {
		t.Errorf("KeyID = %s, want %s", got, want)
	}
	// Fixed vector, computed independently: the all-zero seed's public key
	// and the first 8 bytes of its SHA-256.
	if got := hex.EncodeToString(pub); got != "3b6a27bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da29" {
		t.Fatalf("zero-seed public key = %s", got)
	}
	if got := KeyID(pub); got != "139e3940e64b5491" {
		t.Errorf("KeyID(zero-seed key) = %s", got)
	}
}

func TestDir(t *testing.T) {
	t.Setenv("BANKDOOR_HOME", "/x/bankdoor-home")
	if d, err := Dir(); err != nil || d != "/x/bankdoor-home" {
		t.Errorf("with $BANKDOOR_HOME: Dir = %q, %v", d, err)
	}
	t.Setenv("BANKDOOR_HOME", "")
	t.Setenv("HOME", "/home/auditor")
	if d, err := Dir(); err != nil || d != "/home/auditor/.config/bankdoor" {
		t.Errorf("without $BANKDOOR_HOME: Dir = %q, %v", d, err)
	}
}

// TestSaveConcurrentOneKey: proxies starting at once on an empty key
// directory each make a key in memory and save it. Exactly one Save
// succeeds, the others get fs.ErrExist, and the key on disk is the
// winner's, so no process signs with a key other than the one saved.
func TestSaveConcurrentOneKey(t *testing.T) {
	for round := range 10 {
		dir := filepath.Join(t.TempDir(), "home")
		const n = 8
		keys := make([]ed25519.PrivateKey, n)
		errs := make([]error, n)
		for i := range keys {
			_, keys[i], _ = ed25519.GenerateKey(rand.Reader)
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				errs[i] = Save(dir, keys[i], false)
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: Save %d and %d both succeeded", round, winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, fs.ErrExist):
				t.Fatalf("round %d: Save %d: %v, want fs.ErrExist", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no Save succeeded", round)
		}
		priv, err := LoadPrivate(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !priv.Equal(keys[winner]) {
			t.Fatalf("round %d: the saved key is not the one whose Save succeeded", round)
		}
	}
}
