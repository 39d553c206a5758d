package debpkg

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// buildDeb builds, with dpkg-deb --build, a package named
// bankdoor-debpkg-test at version 1.0-1 holding usr/bin/hello
// (executable) and usr/share/doc/hello.txt (not), and returns the .deb
// and the candidate that describes it.
func buildDeb(t *testing.T) (string, candidate) {
	t.Helper()
	src := t.TempDir()
	write := func(name, data string, perm os.FileMode) {
		p := filepath.Join(src, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), perm); err != nil {
			t.Fatal(err)
		}
	}
	write("DEBIAN/control", "Package: bankdoor-debpkg-test\nVersion: 1.0-1\nArchitecture: all\nMaintainer: bankdoor <bankdoor@example.com>\nDescription: a package of debpkg's tests\n", 0o644)
	write("usr/bin/hello", "#!/bin/sh\necho hello\n", 0o755)
	write("usr/share/doc/hello.txt", "hello\n", 0o644)
	deb := filepath.Join(t.TempDir(), "bankdoor-debpkg-test_1.0-1_all.deb")
	if out, err := exec.Command("dpkg-deb", "--root-owner-group", "--build", src, deb).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb --build: %v:\n%s", err, out)
	}
	b, err := os.ReadFile(deb)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return deb, candidate{"bankdoor-debpkg-test", "1.0-1", "all", hex.EncodeToString(sum[:])}
}

// TestVerify: a .deb passes only if its SHA-256 and its control file's
// Package, Version and Architecture are the candidate's.
func TestVerify(t *testing.T) {
	deb, c := buildDeb(t)
	if err := verify(context.Background(), deb, c); err != nil {
		t.Fatalf("verify of the package as built: %v", err)
	}
	otherSum := c
	otherSum.SHA256 = strings.Repeat("0", 64)
	for _, tc := range []struct {
		name string
		c    candidate
		want string
	}{
		{"sha256", otherSum, "SHA-256"},
		{"package", candidate{"other", c.Version, c.Architecture, c.SHA256}, "want other 1.0-1 all"},
		{"version", candidate{c.Package, "1.0-2", c.Architecture, c.SHA256}, "want bankdoor-debpkg-test 1.0-2 all"},
		{"architecture", candidate{c.Package, c.Version, "amd64", c.SHA256}, "want bankdoor-debpkg-test 1.0-1 amd64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := verify(context.Background(), deb, tc.c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("verify = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestProgram: program finds an executable file in an unpacked tree and
// refuses a missing or non-executable one.
func TestProgram(t *testing.T) {
	deb, c := buildDeb(t)
	dir := filepath.Join(t.TempDir(), c.dirName())
	if out, err := exec.Command("dpkg-deb", "-x", deb, dir).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -x: %v:\n%s", err, out)
	}
	p, err := program(dir, c, "usr/bin/hello")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "usr", "bin", "hello"); p.Path != want || p.Package != c.Package || p.Version != c.Version || p.FromPATH {
		t.Errorf("program = %+v, want %s of %s %s", p, want, c.Package, c.Version)
	}
	if out, err := exec.Command(p.Path).Output(); err != nil || string(out) != "hello\n" {
		t.Errorf("running %s: %q, %v", p.Path, out, err)
	}
	for file, want := range map[string]string{
		"usr/bin/absent":          "has no program usr/bin/absent",
		"usr/share/doc/hello.txt": "not an executable file",
		"usr/bin":                 "not an executable file",
	} {
		if _, err := program(dir, c, file); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("program(%s) = %v, want an error saying %q", file, err, want)
		}
	}
}

// TestControl: control reads the first stanza's fields, not its
// continuation lines nor a later stanza.
func TestControl(t *testing.T) {
	got := control([]byte("Package: p\nDescription: short\n long: not a field\n .\nVersion: 1:2.0-1\n\nPackage: q\n"))
	if len(got) != 3 || got["Package"] != "p" || got["Version"] != "1:2.0-1" || got["Description"] != "short" {
		t.Errorf("control = %v", got)
	}
	if n := (candidate{"p", "1:2.0-1", "amd64", ""}).dirName(); n != "p_1%3a2.0-1_amd64" {
		t.Errorf("dirName = %q", n)
	}
}
