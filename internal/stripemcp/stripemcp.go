// Package stripemcp installs and runs Stripe's MCP server, the npm package
// @stripe/mcp at Version, the last version that defines its 22 tools in
// the package itself: a real third-party payment server for bankdoor's
// end-to-end tests and for the pins of policies/stripe.yaml.
//
// # The npm project
//
// npm/package.json asks for exactly @stripe/mcp 0.2.5, and
// npm/package-lock.json, committed beside it, pins every package under it
// by version and sha512 integrity (the tool definitions the server lists
// depend on the versions of the MCP SDK and zod, not only on Stripe's
// package). npm/.npmrc sets legacy-peer-deps, so npm leaves out the peer
// dependencies @stripe/agent-toolkit declares for its other entry points
// (openai, langchain, ai, agents), which the MCP server never loads.
// Regenerate the lock, after changing package.json, with
//
//	npm install --package-lock-only --ignore-scripts
//
// run in npm/.
//
// # Install
//
// [Install] copies the three files and observe.js into
// TMP/bankdoor-stripe-mcp-UID/HASH (HASH: of those four files, so a
// changed lock gets a directory of its own) and runs there
//
//	npm ci --ignore-scripts --prefer-offline --no-audit --no-fund --cache TMP/bankdoor-stripe-mcp-UID/npm-cache
//
// which installs exactly what the lock says, checking each tarball's
// integrity, and runs no package's install scripts. The npm cache is that
// fixed directory, not the user's, so the install works with an empty
// HOME; it needs the npm registry once, and no network afterwards. An
// exclusive lock on TMP/bankdoor-stripe-mcp-UID/.lock (package
// internal/flock) is held throughout, so test binaries installing at once
// run npm once; a file named "installed" is written last, and an install
// without it is done again from the start.
//
// # Observing the server
//
// [Server.ObservedArgv] starts node with observe.js preloaded: with
// ObserveEnv naming a file, it appends one JSON line per event (see
// [Event]): each JSON-RPC message the server reads on stdin, and each
// request its HTTP clients start or fail to make (node's diagnostics
// channels for http/https, fetch and net). That is how a test sees, with no
// network, that a direct write call makes Stripe's client try to reach
// api.stripe.com, and that the same call through bankdoor never reaches
// the server at all.
package stripemcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bankdoor/bankdoor/internal/atomicfile"
	"github.com/bankdoor/bankdoor/internal/flock"
)

const (
	// Package and Version are what npm/package.json asks for; a test
	// holds them equal.
	Package = "@stripe/mcp"
	Version = "0.2.5"
	// DummyKey is the API key the server is started with. The server
	// only checks that it starts with sk_ or rk_; Stripe would refuse it.
	DummyKey = "sk_test_bankdoor_dummy_not_a_key"
	// ObserveEnv names the file observe.js appends its events to.
	ObserveEnv = "STRIPE_MCP_OBSERVE"
	// minNode is the oldest node major version the locked packages run on
	// (@hono/node-server, under the MCP SDK, needs 20).
	minNode = 20
)

//go:embed npm/package.json npm/package-lock.json npm/.npmrc observe.js
var project embed.FS

// projectFiles are the files Install copies, by their name in the
// install directory.
var projectFiles = map[string]string{
	"package.json":      "npm/package.json",
	"package-lock.json": "npm/package-lock.json",
	".npmrc":            "npm/.npmrc",
	"observe.js":        "observe.js",
}

// Server is an installed @stripe/mcp.
type Server struct {
	Dir string // the install directory, holding node_modules
}

// Bin is the server's script, which node runs.
func (s *Server) Bin() string {
	return filepath.Join(s.Dir, "node_modules", "@stripe", "mcp", "dist", "index.js")
}

// Argv is the command that starts the server over stdio with all its
// tools and DummyKey, as a user would start it with npx:
//
//	node DIR/node_modules/@stripe/mcp/dist/index.js --tools=all --api-key=DummyKey
func (s *Server) Argv() []string {
	return []string{"node", s.Bin(), "--tools=all", "--api-key=" + DummyKey}
}

// ObservedArgv is Argv with observe.js preloaded (node --require), which
// records the server's events in the file named by ObserveEnv in its
// environment.
func (s *Server) ObservedArgv() []string {
	return append([]string{"node", "--require", filepath.Join(s.Dir, "observe.js")}, s.Argv()[1:]...)
}

// Install installs the package, once per machine and user, under
// os.TempDir() (see the package doc) and returns it.
func Install(ctx context.Context) (*Server, error) {
	return InstallIn(ctx, filepath.Join(os.TempDir(), "bankdoor-stripe-mcp-"+strconv.Itoa(os.Getuid())))
}

// InstallIn is Install with root in place of
// TMP/bankdoor-stripe-mcp-UID. It creates root (mode 0700) if needed and
// refuses one that others may write to.
func InstallIn(ctx context.Context, root string) (*Server, error) {
	if err := privateDir(root); err != nil {
		return nil, err
	}
	lock, err := flock.Open(filepath.Join(root, ".lock"))
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	if err := lock.Lock(); err != nil {
		return nil, err
	}
	key, err := projectKey()
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: filepath.Join(root, key)}
	if b, err := os.ReadFile(filepath.Join(s.Dir, "installed")); err == nil && string(b) == key {
		return s, nil
	}
	if err := checkNode(ctx); err != nil {
		return nil, err
	}
	if err := s.install(ctx, filepath.Join(root, "npm-cache")); err != nil {
		return nil, err
	}
	return s, atomicfile.Write(filepath.Join(s.Dir, "installed"), []byte(key), 0o600)
}

// privateDir creates dir with mode 0700 if it does not exist, and checks
// that it is a directory, not a symbolic link, that only its owner may
// write to.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() || fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s is %v, not a directory only its owner may write to; remove it", dir, fi.Mode())
	}
	return nil
}

// projectKey is the hex SHA-256 of the project files, names and contents,
// shortened to 16 characters.
func projectKey() (string, error) {
	h := sha256.New()
	for _, name := range []string{"package.json", "package-lock.json", ".npmrc", "observe.js"} {
		b, err := project.ReadFile(projectFiles[name])
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", name, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// checkNode checks that node is on PATH and new enough.
func checkNode(ctx context.Context) error {
	out, err := exec.CommandContext(ctx, "node", "--version").Output()
	if err != nil {
		return fmt.Errorf("running node --version: %w (%s %s needs Node.js %d or later on PATH)", err, Package, Version, minNode)
	}
	v := strings.TrimSpace(string(out))
	major, _, _ := strings.Cut(strings.TrimPrefix(v, "v"), ".")
	if n, err := strconv.Atoi(major); err != nil || n < minNode {
		return fmt.Errorf("node is %s; %s %s and its locked dependencies need Node.js %d or later", v, Package, Version, minNode)
	}
	return nil
}

// install writes the project files into s.Dir, emptied first, and runs
// npm ci there with cache as its cache.
func (s *Server) install(ctx context.Context, cache string) error {
	if err := os.RemoveAll(s.Dir); err != nil {
		return err
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return err
	}
	for name, src := range projectFiles {
		b, err := project.ReadFile(src)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(s.Dir, name), b, 0o600); err != nil {
			return err
		}
	}
	cmd := exec.CommandContext(ctx, "npm", "ci", "--ignore-scripts", "--prefer-offline",
		"--no-audit", "--no-fund", "--no-update-notifier", "--cache", cache)
	cmd.Dir = s.Dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("installing %s %s with npm ci in %s: %w; the npm registry (npm config get registry) must be reachable for a first install:\n%s",
			Package, Version, s.Dir, err, bytes.TrimSpace(out))
	}
	return s.checkVersion()
}

// checkVersion checks that node_modules holds Package at Version.
func (s *Server) checkVersion() error {
	b, err := os.ReadFile(filepath.Join(s.Dir, "node_modules", filepath.FromSlash(Package), "package.json"))
	if err != nil {
		return err
	}
	var pkg struct{ Name, Version string }
	if err := json.Unmarshal(b, &pkg); err != nil {
		return err
	}
	if pkg.Name != Package || pkg.Version != Version {
		return fmt.Errorf("npm ci installed %s %s, want %s %s", pkg.Name, pkg.Version, Package, Version)
	}
	return nil
}

// Event is one line observe.js wrote.
type Event struct {
	Kind   string `json:"event"`            // rpc, http, fetch or socket
	Phase  string `json:"phase,omitempty"`  // http: start or error
	Method string `json:"method,omitempty"` // JSON-RPC method (rpc), HTTP method (http, fetch)
	Tool   string `json:"tool,omitempty"`   // rpc of tools/call: the tool's name
	Host   string `json:"host,omitempty"`   // http, fetch
	Path   string `json:"path,omitempty"`   // http, fetch: the path and query
}

// Outbound reports whether e is an attempt to reach the network.
func (e Event) Outbound() bool { return e.Kind != "rpc" }

// String is how a test prints e.
func (e Event) String() string {
	if e.Kind == "rpc" {
		return strings.TrimSpace("rpc " + e.Method + " " + e.Tool)
	}
	return strings.TrimSpace(strings.Join([]string{e.Kind, e.Phase, e.Method, e.Host + e.Path}, " "))
}

// ReadEvents reads the events observe.js appended to path; a file that
// does not exist holds none.
func ReadEvents(path string) ([]Event, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var evs []Event
	for line := range bytes.Lines(b) {
		var e Event
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("%s: %q: %w", path, line, err)
		}
		evs = append(evs, e)
	}
	return evs, nil
}
