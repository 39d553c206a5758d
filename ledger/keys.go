package ledger

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/internal/atomicfile"
	"github.com/bankdoor/bankdoor/internal/secretfile"
)

// Log key files. The signer key file holds one line, the note signer key
// ("PRIVATE+KEY+<origin>+<key hash>+<base64 key>", golang.org/x/mod/sumdb/note),
// mode 0600; FILE.vkey beside it holds the verifier key
// ("<origin>+<key hash>+<base64 key>") that auditors and witnesses use,
// mode 0644.
const (
	VerifierKeySuffix = ".vkey"
	maxKeyFile        = 4 << 10
)

// GenerateKey returns a new Ed25519 note signer key and its verifier key,
// named origin: the checkpoint origin line and the key name are the same
// string.
func GenerateKey(origin string) (skey, vkey string, err error) {
	skey, vkey, err = note.GenerateKey(rand.Reader, origin)
	if err == nil {
		_, err = note.NewSigner(skey) // GenerateKey does not check the name
	}
	if err != nil {
		return "", "", fmt.Errorf("generate log key for origin %q: %w; an origin is non-empty, without spaces or '+', e.g. bank.example/ledger", origin, err)
	}
	return skey, vkey, nil
}

// VerifierKey returns the verifier key of the Ed25519 signer key skey.
func VerifierKey(skey string) (string, error) {
	if _, err := note.NewSigner(skey); err != nil {
		return "", fmt.Errorf("log key: %w", err)
	}
	parts := strings.SplitN(skey, "+", 5) // PRIVATE, KEY, name, hash, key (base64 may hold "+"); checked by NewSigner
	key, err := base64.StdEncoding.DecodeString(parts[4])
	if err != nil || len(key) != 1+ed25519.SeedSize || key[0] != 1 {
		return "", errors.New("log key: not an Ed25519 note key")
	}
	pub := ed25519.NewKeyFromSeed(key[1:]).Public().(ed25519.PublicKey)
	return note.NewEd25519VerifierKey(parts[2], pub)
}

// WriteKey writes the signer key skey to path (mode 0600) and its
// verifier key to path+".vkey" (mode 0644), each through a synced
// temporary file (package atomicfile), so a crash leaves the old file or
// the new one. Unless replace is set it refuses to replace an existing path;
// that error wraps fs.ErrExist. With replace, the old key stays in place
// until the new one is on disk: a write that fails loses nothing.
func WriteKey(path, skey string, replace bool) error {
	vkey, err := VerifierKey(skey)
	if err != nil {
		return err
	}
	if !replace {
		// The signer key first, created exclusively: of several processes
		// making this log's key at once, exactly one succeeds.
		if err := atomicfile.Create(path, []byte(skey+"\n"), 0o600); err != nil {
			return fmt.Errorf("log key: %w", err)
		}
		return atomicfile.Write(path+VerifierKeySuffix, []byte(vkey+"\n"), 0o644)
	}
	// Replacing, the verifier key first: if writing the signer key then
	// fails, the old signer key is still there (and its verifier key can be
	// derived from it again); the other order could lose it.
	if err := atomicfile.Write(path+VerifierKeySuffix, []byte(vkey+"\n"), 0o644); err != nil {
		return err
	}
	return atomicfile.Write(path, []byte(skey+"\n"), 0o600)
}

// LoadSigner reads the signer key file at path. It refuses a file that
// group or others may read, or that is not a regular file (package
// secretfile).
func LoadSigner(path string) (note.Signer, error) {
	b, err := secretfile.Read(path, maxKeyFile)
	if err != nil {
		return nil, fmt.Errorf("log key %w", err)
	}
	s, err := note.NewSigner(string(bytes.TrimSpace(b)))
	if err != nil {
		return nil, fmt.Errorf("log key %s: %w; want a note signer key, the line PRIVATE+KEY+NAME+HASH+KEY", path, err)
	}
	return s, nil
}

// LoadVerifier parses a verifier key string ("<origin>+<hash>+<key>"), as
// printed by bankdoor ledger keygen and stored in FILE.vkey. Surrounding
// white space is ignored.
func LoadVerifier(vkey string) (note.Verifier, error) {
	v, err := note.NewVerifier(strings.TrimSpace(vkey))
	if err != nil {
		return nil, fmt.Errorf("log verifier key: %w; want the <origin>+<hash>+<key> line of the .vkey file", err)
	}
	return v, nil
}
