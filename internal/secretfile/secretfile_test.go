package secretfile

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	file := func(name string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("secret"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	link := func(name, target string) string {
		p := filepath.Join(dir, name)
		if err := os.Symlink(target, p); err != nil {
			t.Skipf("no symbolic links: %v", err)
		}
		return p
	}
	tests := []struct {
		name string
		path func() string
		max  int64
		want string // "" = read; else a part of the error
		unix bool   // the refusal rests on Unix modes
	}{
		{"0600", func() string { return file("a", 0o600) }, 64, "", false},
		{"0400", func() string { return file("b", 0o400) }, 64, "", false},
		{"0644", func() string { return file("c", 0o644) }, 64, "has mode 0644, which lets group or others read it; run chmod 600 ", true},
		{"0640", func() string { return file("d", 0o640) }, 64, "has mode 0640", true},
		{"0604", func() string { return file("e", 0o604) }, 64, "has mode 0604", true},
		{"directory", func() string { return dir }, 64, "is not a regular file", false},
		{"link to 0600", func() string { return link("l1", file("f", 0o600)) }, 64, "", false},
		{"link to 0644", func() string { return link("l2", file("g", 0o644)) }, 64, "has mode 0644", true},
		{"too large", func() string { return file("h", 0o600) }, 5, "larger than 5 bytes", false},
		{"missing", func() string { return filepath.Join(dir, "missing") }, 64, "no such file", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.unix && runtime.GOOS == "windows" {
				t.Skip("no Unix modes")
			}
			if tc.name == "missing" && runtime.GOOS == "windows" {
				t.Skip("another error text")
			}
			path := tc.path()
			b, err := Read(path, tc.max)
			if tc.want == "" {
				if err != nil || string(b) != "secret" {
					t.Fatalf("Read = %q, %v; want \"secret\"", b, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("Read error %v; want one naming %s and saying %q", err, path, tc.want)
			}
		})
	}
}
