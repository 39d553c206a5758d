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
// [Install] installs the three files and observe.js with package
// internal/npmproject, into TMP/bankdoor-stripe-mcp-UID/HASH (npm ci, no
// install scripts, a private npm cache: the npm registry is needed once,
// never afterwards).
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
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bankdoor/bankdoor/internal/npmproject"
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
var files embed.FS

// project is the npm project Install installs.
func project() *npmproject.Project {
	return &npmproject.Project{
		Name: "stripe-mcp", FS: files, Package: Package, Version: Version, MinNode: minNode,
		Files: []npmproject.File{
			{Name: "package.json", Src: "npm/package.json"},
			{Name: "package-lock.json", Src: "npm/package-lock.json"},
			{Name: ".npmrc", Src: "npm/.npmrc"},
			{Name: "observe.js", Src: "observe.js"},
		},
	}
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
	dir, err := project().Install(ctx)
	if err != nil {
		return nil, err
	}
	return &Server{Dir: dir}, nil
}

// InstallIn is Install with root in place of
// TMP/bankdoor-stripe-mcp-UID (see npmproject.Project.InstallIn).
func InstallIn(ctx context.Context, root string) (*Server, error) {
	dir, err := project().InstallIn(ctx, root)
	if err != nil {
		return nil, err
	}
	return &Server{Dir: dir}, nil
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
