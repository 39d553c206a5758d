package toolmod_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bankdoor/bankdoor/internal/toolmod"
)

// TestPinned reads the version of the module that provides a tool's
// package, the longest module path that is a prefix of it, and refuses a
// go.mod without the tool directive or without the module.
func TestPinned(t *testing.T) {
	root := t.TempDir()
	gomod := `module example.com/tools

go 1.26

tool (
	example.com/a/cmd/x
	example.com/b/cmd/y
)

require (
	example.com/a v1.2.3
	example.com/a/cmd v0.9.0
	example.com/c v1.0.0
)
`
	if err := os.MkdirAll(filepath.Join(root, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "tools", "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pkg, want, err string
	}{
		{"example.com/a/cmd/x", "v0.9.0", ""},
		{"example.com/c/cmd/z", "", "no tool directive"},
		{"example.com/b/cmd/y", "", "requires no module that provides"},
	} {
		got, err := toolmod.Tool{Pkg: tc.pkg, ModFile: "tools/go.mod"}.Pinned(root)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("Pinned(%s) = %q, %v; want %q, %q", tc.pkg, got, err, tc.want, tc.err)
		}
	}
}
