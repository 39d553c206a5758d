package ledger

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"
)

func TestKeyFiles(t *testing.T) {
	t.Parallel()
	skey, vkey, err := GenerateKey("bank.example/ledger")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := VerifierKey(skey); err != nil || got != vkey {
		t.Fatalf("VerifierKey = %q, %v; want %q", got, err, vkey)
	}
	path := filepath.Join(t.TempDir(), "log.key")
	if err := WriteKey(path, skey, false); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		path string
		mode os.FileMode
		text string
	}{{path, 0o600, skey + "\n"}, {path + ".vkey", 0o644, vkey + "\n"}} {
		fi, err := os.Stat(f.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(f.path)
		if fi.Mode().Perm() != f.mode || string(b) != f.text {
			t.Errorf("%s: mode %04o, content %q; want %04o, %q", f.path, fi.Mode().Perm(), b, f.mode, f.text)
		}
	}
	if err := WriteKey(path, skey, false); !errors.Is(err, fs.ErrExist) {
		t.Errorf("WriteKey over an existing file = %v", err)
	}
	s, err := LoadSigner(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := LoadVerifier(" " + vkey + "\n")
	if err != nil {
		t.Fatal(err)
	}
	cp, err := signCheckpoint(s, s.Name(), 7, make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	if c, _, _, err := log.ParseCheckpoint(cp, "bank.example/ledger", v); err != nil || c.Size != 7 {
		t.Fatalf("checkpoint signed with the loaded key: %v, %v", c, err)
	}
	checkReplace(t, path, skey)
}

func TestLoadSignerRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	skey, _, _ := GenerateKey("o")
	write := func(name, text string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		path string
		want string
	}{
		{write("readable", skey, 0o644), "chmod 600 " + filepath.Join(dir, "readable")},
		{write("group", skey, 0o640), "chmod 600"},
		{write("vkey-not-skey", "o+12345678+AAAA", 0o600), "PRIVATE+KEY"},
		{write("garbage", "hello", 0o600), "PRIVATE+KEY"},
		{write("huge", strings.Repeat("A", 5000), 0o600), "larger than"},
		{filepath.Join(dir, "missing"), "no such file"},
		{dir, "not a regular file"},
	}
	for _, tt := range tests {
		if _, err := LoadSigner(tt.path); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("LoadSigner(%s) = %v; want an error saying %q", filepath.Base(tt.path), err, tt.want)
		}
	}
	for _, origin := range []string{"", "has space", "a+b"} {
		if _, _, err := GenerateKey(origin); err == nil {
			t.Errorf("GenerateKey(%q) succeeded", origin)
		}
	}
	if _, err := LoadVerifier("PRIVATE+KEY+o+00000000+AA=="); err == nil {
		t.Error("LoadVerifier accepted a signer key")
	}
	if _, err := VerifierKey("o+12345678+AAAA"); err == nil {
		t.Error("VerifierKey accepted a verifier key")
	}
}

// TestOpenRefuses checks the options and file checks of Open.
func TestOpenRefuses(t *testing.T) {
	t.Parallel()
	s, _ := testKeys(t)
	agents := &AgentKeys{}
	otherSkey, _, _ := GenerateKey("other.example/log")
	other, err := note.NewSigner(otherSkey)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ledger.db")
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"no signer", Options{Origin: testOrigin, Agents: agents}, "Signer"},
		{"no agents", Options{Origin: testOrigin, Signer: s}, "Agents"},
		{"no origin", Options{Signer: s, Agents: agents}, "Options.Origin is empty"},
		{"origin is not the key's name", Options{Origin: "x", Signer: s, Agents: agents}, `is not the log key's name`},
		{"negative batch", Options{Origin: testOrigin, Signer: s, Agents: agents, MaxBatch: -1}, "MaxBatch"},
	}
	for _, tt := range tests {
		if _, err := Open(path, tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Open = %v; want an error saying %q", tt.name, err, tt.want)
		}
	}
	l, err := Open(path, Options{Origin: testOrigin, Signer: s, Agents: agents})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, Options{Origin: testOrigin, Signer: s, Agents: agents}); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("second Open of a held file = %v; want an error naming it", err)
	}
	if _, err := Open(path, Options{Origin: testOrigin, Signer: s, Agents: agents, LockWait: -1}); !errors.Is(err, ErrLocked) {
		t.Errorf("Open of a held file without waiting = %v; want ErrLocked", err)
	}
	l.Close()
	// Both keys are named (name+hash, as their verifier keys start).
	mine := fmt.Sprintf("%s+%08x", s.Name(), s.KeyHash())
	_, err = Open(path, Options{Origin: other.Name(), Signer: other, Agents: agents})
	if theirs := fmt.Sprintf("%s+%08x", other.Name(), other.KeyHash()); err == nil || !errors.Is(err, ErrOtherLog) ||
		!strings.Contains(err.Error(), mine) || !strings.Contains(err.Error(), theirs) {
		t.Errorf("Open with another origin = %v; want ErrOtherLog naming the file's key %s and the given one %s", err, mine, theirs)
	}
	// Same origin, another key: the log's verifiers could not check its
	// checkpoints any more.
	sameName, _, _ := GenerateKey(testOrigin)
	impostor, err := note.NewSigner(sameName)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(path, Options{Origin: testOrigin, Signer: impostor, Agents: agents})
	if theirs := fmt.Sprintf("%s+%08x", impostor.Name(), impostor.KeyHash()); err == nil || !errors.Is(err, ErrOtherLog) ||
		!strings.Contains(err.Error(), mine) || !strings.Contains(err.Error(), theirs) {
		t.Errorf("Open with another key of the same name = %v; want ErrOtherLog naming the file's key %s and the given one %s", err, mine, theirs)
	}
	if l, err := Open(path, Options{Origin: testOrigin, Signer: s, Agents: agents}); err != nil {
		t.Errorf("Open with the right key after refusals: %v", err)
	} else {
		l.Close()
	}
}

// checkReplace: WriteKey with replace puts a new pair in place of the old
// one at path (skey, its verifier key beside it), and a replacement whose
// write fails leaves the old signer key as it was.
func checkReplace(t *testing.T, path, skey string) {
	t.Helper()
	skey2, vkey2, err := GenerateKey("bank.example/ledger")
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteKey(path, skey2, true); err != nil {
		t.Fatalf("WriteKey with replace: %v", err)
	}
	for name, want := range map[string]string{path: skey2 + "\n", path + VerifierKeySuffix: vkey2 + "\n"} {
		if b, _ := os.ReadFile(name); string(b) != want {
			t.Errorf("after WriteKey with replace, %s holds %q, want %q", name, b, want)
		}
	}
	// A failed replacement: the verifier key's path is a directory.
	other := filepath.Join(t.TempDir(), "log.key")
	if err := WriteKey(other, skey, false); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(other + VerifierKeySuffix); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(other+VerifierKeySuffix, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteKey(other, skey2, true); err == nil {
		t.Fatal("WriteKey with replace over a directory: no error")
	}
	if b, _ := os.ReadFile(other); string(b) != skey+"\n" {
		t.Errorf("a failed replacement changed the signer key to %q", b)
	}
}
