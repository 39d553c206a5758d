package main_test

// bankdoor init against live servers: the fixture bank, whose draft is the
// shipped policy's allowlist, and the real @stripe/mcp package.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/bankdoor/bankdoor/internal/mcptest"
	"github.com/bankdoor/bankdoor/proxy/policy"
)

// initPolicy runs bankdoor init with args and parses what it prints.
func initPolicy(t *testing.T, env []string, args ...string) (*policy.Policy, string) {
	t.Helper()
	code, stdout, stderr := runBankdoorSplit(t, mcptest.Env(env...), append([]string{"init"}, args...)...)
	if code != 0 {
		t.Fatalf("bankdoor init: exit status %d\n%s", code, stderr)
	}
	p, err := policy.Parse("init.yaml", []byte(stdout))
	if err != nil {
		t.Fatalf("bankdoor init printed a policy that does not parse: %v\n%s", err, stdout)
	}
	return p, stdout
}

// toolsDiff compares two servers' allowlists: names, pins, acknowledgements
// and argument specs, not positions.
func toolsDiff(want, got map[string]*policy.Tool) string {
	return cmp.Diff(want, got, cmpopts.IgnoreFields(policy.Tool{}, "Line", "Column"),
		cmpopts.IgnoreFields(policy.Arg{}, "Re", "Line", "Column"))
}

// TestE2EInitFixture: init against the fixture bank writes, up to comments,
// formatting and never_allow, the shipped read-only policy: the same three
// reads with the same pins and argument specs, and the two writes as
// comments naming their rule. The draft passes lint.
func TestE2EInitFixture(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	f := w.fixture()
	p, out := initPolicy(t, f.Environ(), "--id", "bankdoor-fixture-readonly", "--", f.Bin)
	shipped, err := policy.Load("../../policies/bankdoor.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if d := toolsDiff(shipped.Servers["bank"].Tools, p.Servers["bank"].Tools); d != "" {
		t.Errorf("init's allowlist is not policies/bankdoor.yaml's (-shipped +init):\n%s\n%s", d, out)
	}
	for _, want := range []string{"      # pay_bill: denied (name.write_word): ", "      # transfer: denied (name.write_word): "} {
		if !strings.Contains(out, want) {
			t.Errorf("the draft lacks %q:\n%s", want, out)
		}
	}
	path := filepath.Join(t.TempDir(), "init.yaml")
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	w.bankdoor(0, "lint", "--policy", path)
}

// TestE2EInitStripe: init against the real @stripe/mcp lists every one of
// its 22 tools: the reads the shipped preset allows are in the draft with
// the same pins, allowed or (list_payment_intents) commented out with the
// acknowledgement the preset makes; every tool the draft allows is one the
// preset allows; the writes are comments. The draft passes lint: a
// free-text argument the schema leaves unbounded gets a max_length.
func TestE2EInitStripe(t *testing.T) {
	t.Parallel()
	srv := installStripe(t)
	p, out := initPolicy(t, nil, append([]string{"--server", "stripe", "--"}, srv.Argv()...)...)
	preset, err := policy.Load(stripePolicy)
	if err != nil {
		t.Fatal(err)
	}
	allowed, drafted := preset.Servers["stripe"].Tools, p.Servers["stripe"].Tools
	for name, dt := range drafted {
		pt := allowed[name]
		if pt == nil {
			t.Errorf("the draft allows %s, which the preset does not", name)
			continue
		}
		if dt.SchemaSHA256 != pt.SchemaSHA256 || dt.DefinitionSHA256 != pt.DefinitionSHA256 {
			t.Errorf("%s: the draft's pins differ from the preset's", name)
		}
	}
	for name, pt := range allowed {
		if drafted[name] != nil {
			continue
		}
		commented := "      # " + name + ":\n      #   schema_sha256: " + pt.SchemaSHA256 + "\n"
		if !strings.Contains(out, commented) || !strings.Contains(out, "#   acknowledge: ["+strings.Join(pt.Acknowledge, ", ")+"]") {
			t.Errorf("the preset allows %s, but the draft neither allows it nor offers it commented out with acknowledge: %v:\n%s", name, pt.Acknowledge, out)
		}
	}
	if n := strings.Count(out, ": denied ("); n+len(allowed) != 22 {
		t.Errorf("the draft names %d denied tools and the preset allows %d; @stripe/mcp 0.2.5 has 22:\n%s", n, len(allowed), out)
	}
	path := filepath.Join(t.TempDir(), "init.yaml")
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, lint := runBankdoor(t, t.TempDir(), "lint", "--policy", path); code != 0 || !strings.Contains(lint, path+": ok (policy stripe-readonly, ") {
		t.Errorf("lint of the draft: exit status %d\n%s", code, lint)
	}
}

// runBankdoorSplit runs the bankdoor binary with env and returns its exit
// status, stdout and stderr.
func runBankdoorSplit(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(built.bankdoor, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if _, isExit := err.(*exec.ExitError); err != nil && !isExit {
		t.Fatalf("running bankdoor %s: %v", strings.Join(args, " "), err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}
