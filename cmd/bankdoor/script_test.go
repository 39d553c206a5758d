package main_test

// Command-line behaviour as testscript files: testdata/script/*.txt each
// read like a session at a terminal, one file per command. In the scripts,
// bankdoor is this test binary, which runs bankdoor's main (TestMain in
// e2e_test.go, with testscript.Main); the fixture bank-server is the
// binary TestMain built. Both are found on $PATH.

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

func TestScripts(t *testing.T) {
	t.Parallel()
	// A directory with the fixture alone: the built bankdoor beside it
	// must not shadow the test binary's.
	bin := t.TempDir()
	if err := os.Symlink(built.bankServer, filepath.Join(bin, "bank-server")); err != nil {
		t.Fatal(err)
	}
	if self, err := exec.LookPath("bankdoor"); err != nil || filepath.Dir(self) == filepath.Dir(built.bankdoor) {
		t.Fatalf("bankdoor on $PATH is %s (%v), want the test binary that testscript.Main installed", self, err)
	}
	policies, err := filepath.Abs(filepath.Join("..", "..", "policies"))
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(e *testscript.Env) error {
			e.Setenv("PATH", e.Getenv("PATH")+string(os.PathListSeparator)+bin)
			e.Setenv("POLICIES", policies)
			e.Setenv("GORACE", "atexit_sleep_ms=0")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"cosign":   cmdCosign,
			"exitcode": cmdExitcode,
			"flipbyte": cmdFlipbyte,
			"perm":     cmdPerm,
		},
	})
}

// cmdCosign adds to the checkpoint note FILE the cosignature line of the
// witness NAME, made as a witness makes it: by the transparency-dev/formats
// cosignature/v1 signer (the omniwitness's), with the key in NAME.skey and
// NAME.vkey in the current directory, a new one of TYPE (ed25519 or mldsa,
// i.e. ML-DSA-44) if there is none. It sets the variable VAR to the
// witness's vkey:
//
//	cosign FILE TYPE NAME VAR
func cmdCosign(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 4 {
		ts.Fatalf("usage: cosign FILE TYPE NAME VAR")
	}
	file, name := ts.MkAbs(args[0]), args[2]
	skey, vkey := witnessKey(ts, args[1], name)
	signer, err := fnote.NewSignerForCosignatureV1(skey)
	ts.Check(err)
	msg, err := os.ReadFile(file)
	ts.Check(err)
	text, _, ok := bytes.Cut(msg, []byte("\n\n"))
	if !ok {
		ts.Fatalf("cosign: %s is not a signed note", args[0])
	}
	signed, err := note.Sign(&note.Note{Text: string(text) + "\n"}, signer)
	ts.Check(err)
	ts.Check(os.WriteFile(file, append(msg, signed[len(text)+2:]...), 0o644))
	ts.Setenv(args[3], vkey)
}

// witnessKey reads NAME.skey and NAME.vkey (a script's own files end in
// a newline), or makes them with a new key of typ.
func witnessKey(ts *testscript.TestScript, typ, name string) (skey, vkey string) {
	sb, err := os.ReadFile(ts.MkAbs(name + ".skey"))
	if err == nil {
		vb, err := os.ReadFile(ts.MkAbs(name + ".vkey"))
		ts.Check(err)
		return strings.TrimSpace(string(sb)), strings.TrimSpace(string(vb))
	}
	switch typ {
	case "ed25519":
		skey, vkey, err = note.GenerateKey(rand.Reader, name)
		if err == nil {
			vkey, err = fnote.VKeyToCosignatureV1(vkey)
		}
	case "mldsa":
		skey, vkey, err = fnote.GenerateMLDSAKey(name)
	default:
		ts.Fatalf("cosign: TYPE is ed25519 or mldsa, not %q", typ)
	}
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(name+".skey"), []byte(skey), 0o600))
	ts.Check(os.WriteFile(ts.MkAbs(name+".vkey"), []byte(vkey), 0o644))
	return skey, vkey
}

// cmdFlipbyte flips the low bit of the byte at OFFSET in FILE:
//
//	flipbyte FILE OFFSET
func cmdFlipbyte(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: flipbyte FILE OFFSET")
	}
	name := ts.MkAbs(args[0])
	off, err := strconv.Atoi(args[1])
	ts.Check(err)
	b, err := os.ReadFile(name)
	ts.Check(err)
	if off < 0 || off >= len(b) {
		ts.Fatalf("flipbyte: offset %d is outside %s (%d bytes)", off, args[0], len(b))
	}
	b[off] ^= 1
	ts.Check(os.WriteFile(name, b, 0o644))
}

// cmdPerm checks that FILE has exactly the permission bits PERM (octal):
//
//	perm FILE 0600
func cmdPerm(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: [!] perm FILE MODE")
	}
	want, err := strconv.ParseUint(args[1], 8, 32)
	ts.Check(err)
	fi, err := os.Stat(ts.MkAbs(args[0]))
	ts.Check(err)
	got := fi.Mode().Perm()
	if (got == os.FileMode(want)) == neg {
		ts.Fatalf("%s has mode %s (%#o); want %s%#o", args[0], got, got, map[bool]string{true: "not ", false: ""}[neg], want)
	}
}

// cmdExitcode runs CMD ARGS... like exec and checks that it exits with
// status N; stdout and stderr are kept for the matchers that follow:
//
//	exitcode 2 bankdoor keygen extra
func cmdExitcode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exitcode N CMD ARGS...")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		got = ee.ExitCode()
	case err != nil:
		ts.Fatalf("%s: %v", args[1], err)
	}
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], got, want)
	}
}
