package stripemcp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/internal/npmproject"
)

// TestProjectPinsVersion: package.json asks for exactly Package at
// Version, and the lock pins it and every package under it with an
// integrity hash, so npm ci installs nothing it has not checked.
func TestProjectPinsVersion(t *testing.T) {
	var pkg struct{ Dependencies map[string]string }
	readJSON(t, "npm/package.json", &pkg)
	if len(pkg.Dependencies) != 1 || pkg.Dependencies[Package] != Version {
		t.Errorf("npm/package.json dependencies %v, want only %s: %s", pkg.Dependencies, Package, Version)
	}
	var lock struct {
		LockfileVersion int `json:"lockfileVersion"`
		Packages        map[string]struct {
			Version, Integrity string
			Dependencies       map[string]string
		}
	}
	readJSON(t, "npm/package-lock.json", &lock)
	if lock.LockfileVersion != 3 {
		t.Errorf("lockfileVersion %d, want 3", lock.LockfileVersion)
	}
	if root := lock.Packages[""]; !cmpMap(root.Dependencies, pkg.Dependencies) {
		t.Errorf("the lock's root asks for %v, package.json for %v: regenerate the lock (see the package doc)", root.Dependencies, pkg.Dependencies)
	}
	if got := lock.Packages["node_modules/"+Package].Version; got != Version {
		t.Errorf("the lock has %s %q, want %s", Package, got, Version)
	}
	for path, p := range lock.Packages {
		if path != "" && (p.Version == "" || !strings.HasPrefix(p.Integrity, "sha512-")) {
			t.Errorf("lock entry %s: version %q integrity %q; want both, sha512", path, p.Version, p.Integrity)
		}
	}
	if len(lock.Packages) < 50 {
		t.Errorf("the lock has %d packages; has it lost the tree?", len(lock.Packages))
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func cmpMap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// install is Install, failing t with the error (a missing registry is a
// failure, not a skip: CI has it).
func install(t *testing.T) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	s, err := Install(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestInstall installs from several goroutines at once (each its own
// lock file description, as separate processes would be): all get the
// same directory, holding Version, marked installed.
func TestInstall(t *testing.T) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	dirs := make([]string, 3)
	errs := make([]error, len(dirs))
	for i := range dirs {
		wg.Go(func() {
			s, err := Install(ctx)
			if err == nil {
				dirs[i] = s.Dir
			}
			errs[i] = err
		})
	}
	wg.Wait()
	t.Logf("Install: %v", time.Since(start))
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if dirs[0] == "" || dirs[1] != dirs[0] || dirs[2] != dirs[0] {
		t.Fatalf("installs in %q, want one directory", dirs)
	}
	s := &Server{Dir: dirs[0]}
	if err := npmproject.CheckVersion(s.Dir, Package, Version); err != nil {
		t.Error(err)
	}
	key, _ := project().Key()
	if filepath.Base(s.Dir) != key {
		t.Errorf("install directory %s is not named by the project key %s", s.Dir, key)
	}
	if b, err := os.ReadFile(filepath.Join(s.Dir, "installed")); err != nil || string(b) != key {
		t.Errorf("installed marker: %q, %v", b, err)
	}
	if _, err := os.Stat(s.Bin()); err != nil {
		t.Error(err)
	}
}

// TestInstallRefusesSharedRoot: a root others may write to could hold
// someone else's node_modules, which node would then run.
func TestInstallRefusesSharedRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o777); err != nil {
		t.Fatal(err)
	}
	_, err := InstallIn(t.Context(), root)
	if err == nil || !strings.Contains(err.Error(), "only its owner may write to") {
		t.Errorf("InstallIn on a world-writable root: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, ".lock")); err == nil {
		t.Error("InstallIn wrote into the refused root")
	}
}

// TestObserve runs the server with observe.js and sends it, as raw lines,
// initialize and a call of create_customer: the events show the call
// arriving and Stripe's client trying to reach api.stripe.com (with no
// network it fails; with network Stripe refuses the dummy key), and the
// answer is the server's own.
func TestObserve(t *testing.T) {
	s := install(t)
	log := filepath.Join(t.TempDir(), "events")
	argv := s.ObservedArgv()
	cmd := exec.CommandContext(t.Context(), argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), ObserveEnv+"="+log)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"stripemcp-test","version":"1"}}}`)
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"create_customer","arguments":{"name":"Mallory"}}}`)
	lines := bufio.NewScanner(stdout)
	var answer string
	for lines.Scan() {
		if strings.Contains(lines.Text(), `"id":2`) {
			answer = lines.Text()
			break
		}
	}
	if !strings.Contains(answer, "Failed to create customer") {
		t.Errorf("create_customer answered %q, want Stripe's own failure", answer)
	}
	evs, err := ReadEvents(log)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, e.String())
	}
	want := []string{"rpc initialize", "rpc notifications/initialized", "rpc tools/call create_customer"}
	if len(got) < 4 || !slices.Equal(got[:3], want) {
		t.Fatalf("events %q, want %q then Stripe's requests", got, want)
	}
	for _, e := range evs[3:] {
		if e.Kind != "http" || e.Method != "POST" || e.Host != "api.stripe.com" || e.Path != "/v1/customers" {
			t.Errorf("event %v, want only attempts of POST api.stripe.com/v1/customers", e)
		}
	}
}

func TestReadEvents(t *testing.T) {
	dir := t.TempDir()
	if evs, err := ReadEvents(filepath.Join(dir, "none")); evs != nil || err != nil {
		t.Errorf("a missing file: %v, %v; want no events", evs, err)
	}
	path := filepath.Join(dir, "events")
	os.WriteFile(path, []byte(`{"event":"rpc","method":"tools/call","tool":"x"}`+"\n"+`{"event":"http","phase":"error","method":"GET","host":"h","path":"/p"}`+"\n"), 0o600)
	evs, err := ReadEvents(path)
	if err != nil || len(evs) != 2 || evs[0].String() != "rpc tools/call x" || evs[1].String() != "http error GET h/p" ||
		evs[0].Outbound() || !evs[1].Outbound() {
		t.Errorf("ReadEvents = %v, %v", evs, err)
	}
	os.WriteFile(path, []byte("{\"event\":\"rpc\"}\nnot json\n"), 0o600)
	if _, err := ReadEvents(path); err == nil {
		t.Error("a line that is not JSON was accepted")
	}
}
