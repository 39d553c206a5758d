// Package agentkey stores and loads the Ed25519 key an agent's proxy signs
// receipts with.
//
// # Key Files
//
// A key directory holds two files:
//
//	bankdoor.key.pem  mode 0600  PEM block "PRIVATE KEY": PKCS#8 (RFC 5208, RFC 8410) Ed25519 private key
//	bankdoor.pub.pem  mode 0644  PEM block "PUBLIC KEY": SubjectPublicKeyInfo (RFC 5280, RFC 8410) Ed25519 public key
//
// The private key file is read by package secretfile: refused if its mode grants any permission to
// group or others, as OpenSSH does. A PEM file must hold exactly one block,
// without headers, and nothing but white space around it.
//
// The key directory is $BANKDOOR_HOME, or $HOME/.config/bankdoor when that
// is unset (also on macOS, where os.UserConfigDir would say
// ~/Library/Application Support).
//
// # Key ID
//
// A key's key_id, written in every receipt, is the first 16 lower-case hex
// digits (8 bytes) of the SHA-256 of the raw 32-byte public key.
package agentkey

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/bankdoor/bankdoor/internal/atomicfile"
	"github.com/bankdoor/bankdoor/internal/secretfile"
	"github.com/bankdoor/bankdoor/internal/weakkey"
)

// File names inside a key directory.
const (
	PrivateFile = "bankdoor.key.pem"
	PublicFile  = "bankdoor.pub.pem"
)

const (
	pemPrivate = "PRIVATE KEY"
	pemPublic  = "PUBLIC KEY"
	maxPEM     = 16 << 10 // far larger than any Ed25519 PEM file
)

// Dir returns the key directory: $BANKDOOR_HOME if set and non-empty,
// otherwise $HOME/.config/bankdoor.
func Dir() (string, error) {
	if d := os.Getenv("BANKDOOR_HOME"); d != "" {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cannot find the key directory: set $BANKDOOR_HOME or $HOME: %w", err)
	}
	return filepath.Join(home, ".config", "bankdoor"), nil
}

// KeyID returns the key_id of pub: the first 16 lower-case hex digits of
// the SHA-256 of the raw 32-byte public key.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// LoadPrivate reads dir/bankdoor.key.pem. It refuses a file whose mode
// grants any access to group or others, a file that is not a single
// "PRIVATE KEY" PEM block, and a PKCS#8 key that is not Ed25519.
func LoadPrivate(dir string) (ed25519.PrivateKey, error) {
	path := filepath.Join(dir, PrivateFile)
	b, err := secretfile.Read(path, maxPEM)
	if err != nil {
		return nil, fmt.Errorf("private key %w", err)
	}
	der, err := decodePEM(b, path, pemPrivate)
	if err != nil {
		return nil, err
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("%s: not a PKCS#8 private key: %w", path, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s: holds a %T, want an Ed25519 private key", path, k)
	}
	return priv, nil
}

// LoadPublic reads an SPKI "PUBLIC KEY" PEM file holding an Ed25519 key.
func LoadPublic(path string) (ed25519.PublicKey, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open public key: %w", err)
	}
	defer f.Close()
	der, err := readPEM(f, path, pemPublic)
	if err != nil {
		return nil, err
	}
	k, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, fmt.Errorf("%s: not a SubjectPublicKeyInfo public key: %w", path, err)
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("%s: holds a %T, want an Ed25519 public key", path, k)
	}
	if err := weakkey.Check(pub); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return pub, nil
}

// readPEM reads at most maxPEM bytes of r and decodes them (decodePEM).
func readPEM(r io.Reader, path, typ string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxPEM+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > maxPEM {
		return nil, fmt.Errorf("%s: larger than %d bytes, not a key file", path, maxPEM)
	}
	return decodePEM(b, path, typ)
}

// decodePEM decodes b, which must be exactly one PEM block of type typ,
// without headers, with nothing but white space around it.
func decodePEM(b []byte, path, typ string) ([]byte, error) {
	block, rest := pem.Decode(b)
	if block == nil {
		return nil, fmt.Errorf("%s: no PEM block found, want %q", path, typ)
	}
	if block.Type != typ {
		return nil, fmt.Errorf("%s: PEM block is %q, want %q", path, block.Type, typ)
	}
	if len(block.Headers) != 0 {
		return nil, fmt.Errorf("%s: PEM block has headers; want none", path)
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, fmt.Errorf("%s: data after the PEM block; want a single %q block", path, typ)
	}
	return block.Bytes, nil
}

// Generate creates a new Ed25519 key in dir and saves it there (see Save).
func Generate(dir string, force bool) (ed25519.PublicKey, error) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		return nil, err
	}
	if err := Save(dir, priv, force); err != nil {
		return nil, err
	}
	return pub, nil
}

// Save writes priv and its public key to dir (created with mode 0700 if
// missing). It refuses to replace an existing key file unless force is
// set; that error wraps fs.ErrExist. Each file is written through a synced
// temporary file (package atomicfile), so a crash leaves either the old
// file or the new one. Without force the private key is created
// exclusively: of several processes saving a key into one empty directory
// at once, exactly one succeeds, and the others get fs.ErrExist instead
// of replacing the key the first one already signs with.
func Save(dir string, priv ed25519.PrivateKey, force bool) error {
	privPath, pubPath := filepath.Join(dir, PrivateFile), filepath.Join(dir, PublicFile)
	if !force {
		for _, p := range []string{privPath, pubPath} {
			if _, err := os.Lstat(p); err == nil {
				return fmt.Errorf("key file %s: %w", p, fs.ErrExist)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create key directory: %w", err)
	}
	privPEM, pubPEM, err := encode(priv.Public().(ed25519.PublicKey), priv)
	if err != nil {
		return err
	}
	if force {
		err = atomicfile.Write(privPath, privPEM, 0o600)
	} else {
		err = atomicfile.Create(privPath, privPEM, 0o600)
	}
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("key file %s: %w", privPath, fs.ErrExist)
		}
		return err
	}
	return atomicfile.Write(pubPath, pubPEM, 0o644)
}

func encode(pub ed25519.PublicKey, priv ed25519.PrivateKey) (privPEM, pubPEM []byte, err error) {
	p8, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, nil, err
	}
	spki, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, nil, err
	}
	privPEM = pem.EncodeToMemory(&pem.Block{Type: pemPrivate, Bytes: p8})
	pubPEM = pem.EncodeToMemory(&pem.Block{Type: pemPublic, Bytes: spki})
	return privPEM, pubPEM, nil
}
