package main_test

// Command-line behaviour as testscript files: testdata/script/*.txt each
// read like a session at a terminal, one file per command. In the scripts,
// bankdoor is this test binary, which runs bankdoor's main (TestMain in
// e2e_test.go, with testscript.Main); the fixture bank-server is the
// binary TestMain built. Both are found on $PATH.

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
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
			"exitcode": cmdExitcode,
			"flipbyte": cmdFlipbyte,
			"perm":     cmdPerm,
		},
	})
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
