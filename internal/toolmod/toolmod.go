// Package toolmod builds the third-party programs that bankdoor's tests and
// report run (the witness, the authorization server, the transparency log
// it is compared with) from the Go modules that pin them: each program is
// named by a tool directive of a go.mod of bankdoor's own (tools/go.mod, or
// a module of its own under tools/ when its dependencies clash with the
// others'), so that its version, and every module it links, is fixed by a
// go.sum in this repository and fetched through the go command's usual
// GOPROXY like any dependency.
package toolmod

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/mod/modfile"
)

// Tool is a program pinned by a tool directive.
type Tool struct {
	// Pkg is its main package, as the tool directive names it.
	Pkg string
	// ModFile is the go.mod that pins it, relative to the root of the
	// bankdoor module (tools/go.mod, tools/hydra/go.mod, ...).
	ModFile string
	// Cgo builds it with cgo (CGO_ENABLED=1); otherwise without.
	Cgo bool
	// Tags are build tags.
	Tags []string
}

// Build compiles t into the file out, as
//
//	go build -modfile=ROOT/MODFILE [-tags TAGS] -o OUT PKG
//
// run in ROOT, the root of the bankdoor module that holds moduleDir (""
// is the current directory). The go command downloads the modules the
// module cache lacks, as any build does.
func (t Tool) Build(ctx context.Context, moduleDir, out string) error {
	root, err := t.root(ctx, moduleDir)
	if err != nil {
		return err
	}
	if out, err = filepath.Abs(out); err != nil {
		return err
	}
	args := []string{"build", "-modfile=" + filepath.Join(root, filepath.FromSlash(t.ModFile))}
	if len(t.Tags) > 0 {
		args = append(args, "-tags", strings.Join(t.Tags, ","))
	}
	cmd := exec.CommandContext(ctx, "go", append(args, "-o", out, t.Pkg)...)
	cmd.Dir = root
	cgo := "CGO_ENABLED=0"
	if t.Cgo {
		cgo = "CGO_ENABLED=1"
	}
	cmd.Env = append(os.Environ(), cgo)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v: %s", cmd, err, bytes.TrimSpace(msg))
	}
	return nil
}

// root returns the root directory of the bankdoor module that holds dir,
// as the go command finds it.
func (t Tool) root(ctx context.Context, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "env", "GOMOD")
	cmd.Dir = dir
	gomod, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s: %w", cmd, err)
	}
	path := string(bytes.TrimSpace(gomod))
	if path == "" || path == os.DevNull {
		return "", fmt.Errorf("building %s: %q is not inside the bankdoor module, whose %s pins it", t.Pkg, dir, t.ModFile)
	}
	return filepath.Dir(path), nil
}

// Pinned reads ROOT/MODFILE, where root is the bankdoor module's root
// directory, and returns the version at which it requires the module that
// provides t.Pkg; it fails if the file has no tool directive for t.Pkg.
func (t Tool) Pinned(root string) (string, error) {
	path := filepath.Join(root, filepath.FromSlash(t.ModFile))
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	f, err := modfile.Parse(path, data, nil)
	if err != nil {
		return "", err
	}
	tool := false
	for _, tl := range f.Tool {
		tool = tool || tl.Path == t.Pkg
	}
	if !tool {
		return "", fmt.Errorf("%s has no tool directive for %s", path, t.Pkg)
	}
	var mod, version string
	for _, r := range f.Require {
		if (t.Pkg == r.Mod.Path || strings.HasPrefix(t.Pkg, r.Mod.Path+"/")) && len(r.Mod.Path) > len(mod) {
			mod, version = r.Mod.Path, r.Mod.Version
		}
	}
	if mod == "" {
		return "", fmt.Errorf("%s requires no module that provides %s", path, t.Pkg)
	}
	return version, nil
}
