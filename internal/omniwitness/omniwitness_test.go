package omniwitness_test

import (
	"crypto/rand"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/internal/omniwitness"
)

// TestVersionIsToolsGoMod: Version and Pkg say what tools/go.mod pins,
// so the package doc does not drift from the witness really built.
func TestVersionIsToolsGoMod(t *testing.T) {
	version, err := omniwitness.Tool.Pinned(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if version != omniwitness.Version {
		t.Errorf("%s pins the witness at %q, Version is %q: update Version and the package doc", omniwitness.ToolsModFile, version, omniwitness.Version)
	}
}

// TestBuildAndStart builds the real witness, runs it for a new log, and
// checks it answers HTTP on its URL, writes its files where the package
// doc says, and is gone after Stop.
func TestBuildAndStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs omniwitness; skipped in -short mode")
	}
	// A relative output path and a module directory below the root, as
	// the interop tests of other packages build it.
	moduleDir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	if err := omniwitness.Build(t.Context(), moduleDir, "omniwitness"); err != nil {
		t.Fatal(err)
	}
	_, logVKey, err := note.GenerateKey(rand.Reader, "omniwitness.test/log")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin, err := filepath.Abs("omniwitness")
	if err != nil {
		t.Fatal(err)
	}
	w, err := omniwitness.Start(bin, dir, "witness.test", logVKey)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(w.VKey, "witness.test+") || !strings.HasPrefix(w.URL, "http://127.0.0.1:") {
		t.Errorf("VKey %q, URL %q; want a witness.test key and a loopback URL", w.VKey, w.URL)
	}
	resp, err := http.Post(w.URL+"/add-checkpoint", "text/plain", strings.NewReader("not a request\n"))
	if err != nil {
		t.Fatalf("POST /add-checkpoint: %v\n%s", err, w.Output())
	}
	resp.Body.Close()
	if resp.StatusCode < 400 || resp.StatusCode >= 500 {
		t.Errorf("POST /add-checkpoint of garbage: %s, want a 4xx refusal", resp.Status)
	}
	logs, err := os.ReadFile(filepath.Join(dir, "logs.yaml"))
	if err != nil || !strings.Contains(string(logs), `Origin: "omniwitness.test/log"`) {
		t.Errorf("logs.yaml = %q, %v; want the log's origin", logs, err)
	}
	w.Stop()
	if _, err := http.Get(w.URL); err == nil {
		t.Errorf("the witness still answers on %s after Stop", w.URL)
	}
}

// TestStartNamesMissingBinary: a binary that is not there is named.
func TestStartNamesMissingBinary(t *testing.T) {
	_, logVKey, err := note.GenerateKey(rand.Reader, "omniwitness.test/log")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "no-such-omniwitness")
	if _, err := omniwitness.Start(bin, t.TempDir(), "witness.test", logVKey); err == nil || !strings.Contains(err.Error(), bin) {
		t.Errorf("Start with a missing binary = %v, want an error naming %s", err, bin)
	}
}

// TestBuildOutsideTheModule: Build from a directory outside any module
// says that it needs the bankdoor module, before running go build.
func TestBuildOutsideTheModule(t *testing.T) {
	err := omniwitness.Build(t.Context(), t.TempDir(), filepath.Join(t.TempDir(), "omniwitness"))
	if err == nil || !strings.Contains(err.Error(), "not inside the bankdoor module") {
		t.Errorf("Build outside a module = %v, want an error saying it needs the bankdoor module", err)
	}
}
