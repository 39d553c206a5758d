// Package proto holds the bankdoor protobuf definitions; the Go code
// generated from them lives in proto/gen. This test fails when the .proto
// files break buf's STANDARD lint rules or when the committed generated code
// is not what buf.gen.yaml produces from them today: regenerate with
//
//	go tool -modfile=tools/go.mod buf generate
//
// from the module root and commit the result. buf and the plugins are tools
// of the tools module (tools/go.mod), which the go command builds, fetching
// what the module cache lacks from the module proxy.
package proto_test

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestBufLint(t *testing.T) {
	buf(t, "lint")
}

func TestGeneratedCodeIsCurrent(t *testing.T) {
	out := t.TempDir()
	buf(t, "generate", "--output", out)
	want := readTree(t, filepath.Join(out, "proto", "gen"))
	got := readTree(t, "gen")
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("proto/gen/%s is missing: run `go tool -modfile=tools/go.mod buf generate` and commit it", name)
		case !bytes.Equal(g, w):
			t.Errorf("proto/gen/%s differs from what buf generates: run `go tool -modfile=tools/go.mod buf generate` and commit it", name)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("proto/gen/%s is not generated from any .proto: delete it", name)
		}
	}
}

// buf runs `go tool -modfile=tools/go.mod buf ARGS...` in the module root.
func buf(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command("go", append([]string{"tool", "-modfile=tools/go.mod", "buf"}, args...)...)
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
}

// readTree returns the files under dir by slash-separated relative path.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := make(map[string][]byte)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		files[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
