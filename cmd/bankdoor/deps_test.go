package main_test

import (
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
)

// modulePath is this module's path, the prefix of its packages.
const modulePath = "github.com/bankdoor/bankdoor/"

// sharedHarness are the module's *test packages that bankdoor may link:
// internal/mcptest drives MCP programs for the end-to-end tests and for
// bankdoor report alike, and imports no testing.
var sharedHarness = []string{modulePath + "internal/mcptest"}

// testCodeDeps lists the packages that pkg links which are test code: the
// standard library's testing (and testing/...), and this module's *test
// packages other than sharedHarness.
func testCodeDeps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", "-f", "{{.ImportPath}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	var bad []string
	for p := range strings.FieldsSeq(string(out)) {
		switch {
		case p == "testing", strings.HasPrefix(p, "testing/"):
			bad = append(bad, p)
		case strings.HasPrefix(p, modulePath) && strings.HasSuffix(path.Base(p), "test") && !slices.Contains(sharedHarness, p):
			bad = append(bad, p)
		}
	}
	return bad
}

// TestBinaryLinksNoTestCode: the bankdoor binary does not link the
// testing package or this module's test helpers (anchortest, tlstest, …),
// which would add their flags and code to a production binary.
func TestBinaryLinksNoTestCode(t *testing.T) {
	if bad := testCodeDeps(t, "."); len(bad) != 0 {
		t.Errorf("bankdoor links test code: %q; move what it needs into a package of its own (see internal/omniwitness)", bad)
	}
	// The check sees test code where there is some.
	bad := testCodeDeps(t, "../../anchor/anchortest")
	if !slices.Contains(bad, "testing") || !slices.Contains(bad, modulePath+"anchor/anchortest") {
		t.Errorf("testCodeDeps(anchor/anchortest) = %q, want testing and anchortest itself", bad)
	}
}
