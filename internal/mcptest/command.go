package mcptest

import (
	"os"
	"os/exec"
	"strings"
)

// Env returns the current environment without the variables that steer
// bankdoor and the fixture (BANKDOOR_*, BANK_FIXTURE_* and OTEL_*, so that
// no test exports spans unless it says so), followed by kv
// ("NAME=value" pairs). A test's own settings then never leak in from the
// developer's shell. GORACE gets atexit_sleep_ms=0, so that programs built
// with -race exit at once instead of a second later.
func Env(kv ...string) []string {
	var env []string
	gorace := "atexit_sleep_ms=0"
	for _, e := range os.Environ() {
		switch {
		case strings.HasPrefix(e, "BANKDOOR_"), strings.HasPrefix(e, "BANK_FIXTURE_"), strings.HasPrefix(e, "OTEL_"):
		case strings.HasPrefix(e, "GORACE="):
			gorace = strings.TrimPrefix(e, "GORACE=") + " " + gorace
		default:
			env = append(env, e)
		}
	}
	return append(append(env, "GORACE="+gorace), kv...)
}

// Fixture is one fake bank process (fixtures/bank-server).
type Fixture struct {
	Bin   string   // the bank-server binary
	State string   // BANK_FIXTURE_STATE, the state file
	Env   []string // more settings, e.g. "BANK_FIXTURE_VARIANT=rugpull"
}

// Environ returns the fixture's BANK_FIXTURE_* settings.
func (f Fixture) Environ() []string {
	return append([]string{"BANK_FIXTURE_STATE=" + f.State}, f.Env...)
}

// Command returns the fixture run on its own, with no proxy in front: a
// control run.
func (f Fixture) Command() *exec.Cmd {
	cmd := exec.Command(f.Bin)
	cmd.Env = Env(f.Environ()...)
	return cmd
}

// Proxy is `bankdoor proxy` with a fixture behind it.
type Proxy struct {
	Bin      string // the bankdoor binary
	Policy   string // --policy
	Server   string // --server
	Receipts string // --receipts
	Home     string // BANKDOOR_HOME: the signing key's directory
	Flags    []string
	Fixture  Fixture
	// URL, if set, is the fixture's endpoint when it serves streamable
	// HTTP on its own (bank-server --http): the proxy gets --url URL and
	// no command after --.
	URL string
}

// Command returns the proxy command. The fixture's settings are in the
// proxy's environment, which the fixture inherits.
func (p Proxy) Command() *exec.Cmd {
	args := []string{"proxy", "--policy", p.Policy, "--server", p.Server, "--receipts", p.Receipts}
	args = append(args, p.Flags...)
	if p.URL != "" {
		args = append(args, "--url", p.URL)
	} else {
		args = append(args, "--", p.Fixture.Bin)
	}
	cmd := exec.Command(p.Bin, args...)
	cmd.Env = Env(append([]string{"BANKDOOR_HOME=" + p.Home}, p.Fixture.Environ()...)...)
	return cmd
}
