package npmproject

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

func project(lock string) *Project {
	return &Project{Name: "test", Package: "p", Version: "1.0.0",
		FS:    fstest.MapFS{"npm/package.json": {Data: []byte(`{}`)}, "npm/package-lock.json": {Data: []byte(lock)}},
		Files: []File{{Name: "package.json", Src: "npm/package.json"}, {Name: "package-lock.json", Src: "npm/package-lock.json"}}}
}

// TestKey: a changed lock gets a directory of its own.
func TestKey(t *testing.T) {
	a, err := project("a").Key()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := project("b").Key()
	a2, _ := project("a").Key()
	if a == b || a != a2 || len(a) != 16 {
		t.Errorf("keys %q, %q, %q: want 16 characters, equal for equal files only", a, b, a2)
	}
}

// TestInstallInRefusesSharedRoot: a root others may write to could hold
// someone else's node_modules; nothing is installed there.
func TestInstallInRefusesSharedRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	if err := os.Mkdir(root, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o777); err != nil {
		t.Fatal(err)
	}
	_, err := project("a").InstallIn(context.Background(), root)
	if err == nil || !strings.Contains(err.Error(), "only its owner may write to") {
		t.Errorf("InstallIn of a world-writable root: %v, want a refusal", err)
	}
}

func TestNodeMajor(t *testing.T) {
	for v, want := range map[string]int{"v24.22.3\n": 24, "v20.1.0": 20} {
		if n, err := NodeMajor(v); err != nil || n != want {
			t.Errorf("NodeMajor(%q) = %d, %v; want %d", v, n, err, want)
		}
	}
	if _, err := NodeMajor("node"); err == nil {
		t.Error(`NodeMajor("node"): no error`)
	}
}

// TestCheckVersion reads node_modules/PKG/package.json.
func TestCheckVersion(t *testing.T) {
	dir := t.TempDir()
	pkg := filepath.Join(dir, "node_modules", "@s", "p")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name":"@s/p","version":"1.2.3"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckVersion(dir, "@s/p", "1.2.3"); err != nil {
		t.Error(err)
	}
	if err := CheckVersion(dir, "@s/p", "1.2.4"); err == nil {
		t.Error("CheckVersion of another version: no error")
	}
}
