package hydra_test

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/mod/modfile"

	"github.com/bankdoor/bankdoor/internal/hydra"
)

// TestVersionIsToolsGoMod: Version and Pkg say what tools/hydra/go.mod
// pins, so the package doc does not drift from the Hydra really built; and
// the module keeps ory's fork of pop, without which Hydra does not build.
func TestVersionIsToolsGoMod(t *testing.T) {
	version, err := hydra.Tool.Pinned(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if version != hydra.Version {
		t.Errorf("%s pins %s at %q, Version is %q: update Version and the package doc", hydra.ModFile, hydra.Pkg, version, hydra.Version)
	}
	path := filepath.Join("..", "..", filepath.FromSlash(hydra.ModFile))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse(path, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	fork := false
	for _, r := range f.Replace {
		fork = fork || r.Old.Path == "github.com/gobuffalo/pop/v6" && r.New.Path == "github.com/ory/pop/v6"
	}
	if !fork {
		t.Errorf("%s does not replace github.com/gobuffalo/pop/v6 with ory's fork, as Hydra's own go.mod does", path)
	}
}
