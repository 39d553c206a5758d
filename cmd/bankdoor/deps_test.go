package main_test

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// modulePath is this module's path, the prefix of its packages.
const modulePath = "github.com/bankdoor/bankdoor/"

// harness are the packages of the measured report (cmd/bankdoor-report)
// and of the tests: code that runs the go command, starts fixtures and
// rewrites README.md, which the shipped binary must not carry.
var harness = []string{
	modulePath + "internal/report",
	modulePath + "internal/agentchain",
	modulePath + "internal/loadgen",
	modulePath + "internal/attacks",
	modulePath + "internal/debpkg",
	modulePath + "internal/fleet",
	modulePath + "internal/mcptest",
	modulePath + "internal/omniwitness",
	modulePath + "internal/perf",
	modulePath + "internal/privatedir",
	modulePath + "internal/promserver",
	modulePath + "internal/scratchlog",
	modulePath + "internal/stripemcp",
}

// harnessDeps lists the packages that pkg links which are harness or test
// code: those of harness (and below them), the standard library's testing
// and testing/..., and any package whose last element ends in "test"
// (mcptest, anchortest, net/http/httptest, …). The standard library's own
// internal packages are not counted: sync links internal/synctest into
// every Go program.
func harnessDeps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	var bad []string
	for line := range strings.Lines(string(out)) {
		p, std, _ := strings.Cut(strings.TrimSpace(line), " ")
		stdInternal := std == "true" && (strings.HasPrefix(p, "internal/") || strings.Contains(p, "/internal/"))
		switch {
		case p == "testing", strings.HasPrefix(p, "testing/"),
			slices.ContainsFunc(harness, func(h string) bool { return p == h || strings.HasPrefix(p, h+"/") }),
			strings.HasSuffix(path.Base(p), "test") && !stdInternal:
			bad = append(bad, p)
		}
	}
	return bad
}

// TestBinaryLinksNoHarness: the shipped bankdoor binary links neither the
// report's harness nor test code (the testing package, mcptest,
// anchortest, …), which would put code that builds programs and rewrites
// files, and test flags, into a security binary.
func TestBinaryLinksNoHarness(t *testing.T) {
	t.Parallel()
	if bad := harnessDeps(t, "."); len(bad) != 0 {
		t.Errorf("go list -deps ./cmd/bankdoor shows %q; move what bankdoor needs into a package of its own, and the rest to cmd/bankdoor-report", bad)
	}
	// The check sees the harness and test code where they are.
	for pkg, want := range map[string][]string{
		"../bankdoor-report":      {modulePath + "internal/report", modulePath + "internal/mcptest", modulePath + "internal/attacks"},
		"../../anchor/anchortest": {"testing", modulePath + "anchor/anchortest"},
	} {
		bad := harnessDeps(t, pkg)
		for _, w := range want {
			if !slices.Contains(bad, w) {
				t.Errorf("harnessDeps(%s) = %q, want it to include %s", pkg, bad, w)
			}
		}
	}
}

// TestOneEd25519: receipts, checkpoints and cosignatures are verified by
// crypto/ed25519, the implementation auditors use, and by no second one
// that could accept a signature it refuses (or refuse one it accepts).
// A module outside the standard library with a package whose path names
// the curve is a second implementation.
func TestOneEd25519(t *testing.T) {
	t.Parallel()
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", "-f", "{{.ImportPath}} {{with .Module}}{{.Path}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/bankdoor: %v", err)
	}
	var std bool
	var bad []string
	for line := range strings.Lines(string(out)) {
		p, mod, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch {
		case p == "crypto/ed25519":
			std = true
		case strings.Contains(p, "25519") && mod != "" && !slices.Contains(bad, mod):
			bad = append(bad, mod)
		}
	}
	if len(bad) != 0 {
		t.Errorf("bankdoor links %q beside crypto/ed25519; verify with crypto/ed25519 only", bad)
	}
	if !std { // the check sees crypto/ed25519 where it is
		t.Error("go list -deps ./cmd/bankdoor shows no crypto/ed25519")
	}
}

// TestCrossBuild: bankdoor builds for the laptops auditors verify on,
// macOS and Windows on amd64 and arm64, not only where the tests run.
func TestCrossBuild(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"darwin/amd64", "darwin/arm64", "windows/amd64", "windows/arm64"} {
		goos, goarch, _ := strings.Cut(target, "/")
		cmd := exec.CommandContext(t.Context(), "go", "build", "-o", filepath.Join(t.TempDir(), "bankdoor"), ".")
		cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("GOOS=%s GOARCH=%s go build ./cmd/bankdoor: %v\n%s", goos, goarch, err, out)
		}
	}
}

// goList runs go list -f format on patterns and returns its lines.
func goList(t *testing.T, format string, patterns ...string) []string {
	t.Helper()
	args := append([]string{"list", "-f", format}, patterns...)
	out, err := exec.CommandContext(t.Context(), "go", args...).Output()
	if err != nil {
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	return strings.Fields(string(out))
}

// layerViolations returns "pkg->dep" for each package of patterns that
// links (deps true) or imports a package dep for which forbidden is true,
// leaving out the packages pkg for which exempt is true.
func layerViolations(t *testing.T, deps bool, exempt, forbidden func(string) bool, patterns ...string) []string {
	t.Helper()
	field := "Imports"
	if deps {
		field = "Deps"
	}
	var bad []string
	for _, line := range goList(t, `{{range .`+field+`}}{{$.ImportPath}}->{{.}} {{end}}`, patterns...) {
		if pkg, dep, _ := strings.Cut(line, "->"); !exempt(pkg) && forbidden(dep) {
			bad = append(bad, line)
		}
	}
	return bad
}

// under reports whether p is pkg or a package below it.
func under(p, pkg string) bool { return p == pkg || strings.HasPrefix(p, pkg+"/") }

// TestLayering holds DESIGN §2's layering: packages depend downward. The
// offline verifier links no database driver and no proxy code, so an
// auditor's trust base is the verifier and the formats it reads; no
// package imports cmd. Each rule is checked on what go list reports, and
// seen to catch a package that does what it forbids where one may (so a
// renamed module path cannot make it pass by matching nothing).
func TestLayering(t *testing.T) {
	t.Parallel()
	root := "../../..."
	for _, rule := range []struct {
		name      string
		deps      bool // the rule is on what packages link, not only import
		patterns  []string
		exempt    func(string) bool // packages of patterns the rule leaves out; nil: none
		forbidden func(string) bool
		seen      string // a package that links or imports what is forbidden; "" if none may
		hint      string
	}{{
		name: "verifier links no database driver", deps: true, patterns: []string{"../../verifier/..."},
		forbidden: func(p string) bool { return under(p, "github.com/jackc/pgx/v5") || under(p, "go.etcd.io/bbolt") },
		seen:      "../../ledger",
		hint:      "read a store behind verifier/bundle.Source, implemented outside verifier/",
	}, {
		name: "verifier links no proxy code", deps: true, patterns: []string{"../../verifier/..."},
		forbidden: func(p string) bool { return under(p, modulePath+"proxy") },
		seen:      ".",
		hint:      "the verifier reads receipts, not the gate",
	}, {
		name: "no package imports cmd", patterns: []string{root},
		forbidden: func(p string) bool { return under(p, modulePath+"cmd") },
		hint:      "move what both need into a package below cmd",
	}, {
		// Metrics observe the ledger and the anchor from above: a package
		// below cmd that linked them would link Prometheus with them.
		name: "only cmd imports internal/metrics", patterns: []string{root},
		exempt:    func(p string) bool { return under(p, modulePath+"cmd") },
		forbidden: func(p string) bool { return p == modulePath+"internal/metrics" },
		seen:      ".",
		hint:      "give the package a hook (a func field) that cmd/bankdoor points at the metrics",
	}, {
		// The station runs the embedded ledger's anchoring loop: it is
		// the one ledger package above anchor.
		name: "ledger links no anchor code but the cosignature format", deps: true, patterns: []string{"../../ledger/..."},
		exempt:    func(p string) bool { return p == modulePath+"ledger/station" },
		forbidden: func(p string) bool { return under(p, modulePath+"anchor") && p != modulePath+"anchor/cosignature" },
		seen:      "../../ledger/station",
		hint:      "the ledger stores and serves cosignatures with anchor/cosignature; the anchoring loop sits above it",
	}} {
		none := func(string) bool { return false }
		exempt := rule.exempt
		if exempt == nil {
			exempt = none
		}
		if bad := layerViolations(t, rule.deps, exempt, rule.forbidden, rule.patterns...); len(bad) != 0 {
			t.Errorf("%s: go list shows %q; %s", rule.name, bad, rule.hint)
		}
		if rule.seen != "" && len(layerViolations(t, rule.deps, none, rule.forbidden, rule.seen)) == 0 {
			t.Errorf("%s: the check finds nothing forbidden in %s, which has it", rule.name, rule.seen)
		}
	}
}
