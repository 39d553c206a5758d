package main_test

import (
	"context"
	"maps"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bankdoor/bankdoor/internal/mcptest"
)

// startHTTPFixture starts f serving streamable HTTP on a free loopback
// port, with env added to its settings, and stops it (SIGTERM) at the end
// of the test.
func startHTTPFixture(t *testing.T, f mcptest.Fixture, env ...string) *mcptest.Server {
	t.Helper()
	cmd := exec.Command(f.Bin, "--http", "127.0.0.1:0")
	cmd.Env = mcptest.Env(append(f.Environ(), env...)...)
	h, err := mcptest.Serve(context.Background(), cmd, mcptest.FixtureServing)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Stop() }) // its exit status is not the test's business
	return h
}

// newHTTPWorld is newWorld whose proxies reach each fixture over
// streamable HTTP (--url). The policy is pinned from the fixture over
// stdio: the pins match only if the definitions relayed over HTTP are the
// very bytes the server sent.
func newHTTPWorld(t *testing.T) *world {
	w := newWorld(t)
	w.http = true
	return w
}

// TestE2EHTTPAttacks: the whole catalogue through the built proxy to the
// fixture over streamable HTTP; every attack denied with its rule, none
// reaching the bank, no money moved.
func TestE2EHTTPAttacks(t *testing.T) {
	t.Parallel()
	testAttacks(t, newHTTPWorld(t))
}

// TestE2EHTTPAllowedReads: reads over HTTP give the same results, byte for
// byte, as the fixture over stdio, and tools/list the same definitions.
func TestE2EHTTPAllowedReads(t *testing.T) {
	t.Parallel()
	testAllowedReads(t, newHTTPWorld(t))
}

// TestE2EHTTPListChanged: notifications/tools/list_changed, which the
// server sends on the standalone notification stream, reaches the relay,
// and the changed tool is denied on its pin.
func TestE2EHTTPListChanged(t *testing.T) {
	t.Parallel()
	testListChanged(t, newHTTPWorld(t))
}

// TestE2EHTTPHeaderFromEnv: a header whose value comes from an environment
// variable named by --header-env reaches the server; without it the
// server refuses the session and the proxy says why.
func TestE2EHTTPHeaderFromEnv(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := testContext(t, time.Minute)
	const secret = "fixture-secret-4d1c"
	f := w.fixture()
	h := startHTTPFixture(t, f, "BANK_FIXTURE_HTTP_TOKEN="+secret)

	p := w.proxy(f)
	p.URL = h.URL
	p.Flags = []string{"--header-env", "Authorization=BANK_TOKEN"}
	cmd := p.Command()
	cmd.Env = append(cmd.Env, "BANK_TOKEN=Bearer "+secret)
	s := start(t, cmd, nil)
	if _, err := s.Client().CallTool(ctx, &mcp.CallToolParams{Name: "list_accounts"}); err != nil {
		t.Fatalf("list_accounts with the token: %v\nfixture:\n%s", err, h.Stderr())
	}
	if !strings.Contains(h.Stderr(), "Authorization header present=true, token matches") {
		t.Errorf("the fixture did not see the token:\n%s", h.Stderr())
	}
	if strings.Contains(s.Stderr(), secret) || strings.Contains(strings.Join(cmd.Args, " "), secret) {
		t.Errorf("the secret shows in the proxy's arguments or stderr")
	}

	p.Flags = nil // no header: the server refuses, the agent hears why
	p.Receipts = t.TempDir()
	_, err := mcptest.Start(ctx, p.Command(), nil)
	if err == nil {
		t.Fatal("initialize without the token succeeded")
	}
	// The agent's own answer names the refusal: what the proxy logged
	// (which Start appends) may come after the agent had its answer.
	answer, _, _ := strings.Cut(err.Error(), "\nstderr of the program:")
	if !strings.Contains(answer, "Unauthorized") {
		t.Errorf("initialize without the token: %v, want an answer naming the refusal (Unauthorized)", err)
	}
	if !strings.Contains(h.Stderr(), "Authorization header present=false") {
		t.Errorf("the fixture did not refuse a request without the header:\n%s", h.Stderr())
	}
}

// TestE2EHTTPServerDies: the remote bank goes away mid-session. The
// broken notification stream, or the proxy's next request, ends the
// session at once (fail closed): the proxy exits 1 naming it, and a call
// after that gets an error, not a hang.
func TestE2EHTTPServerDies(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := testContext(t, time.Minute)
	f := w.fixture()
	h := startHTTPFixture(t, f)
	p := w.proxy(f)
	p.URL = h.URL
	s, err := mcptest.Start(ctx, p.Command(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// A call first: by its answer the stream is open (it opens before the
	// relay handles the next message after notifications/initialized).
	if _, err := s.Client().CallTool(ctx, &mcp.CallToolParams{Name: "list_accounts"}); err != nil {
		t.Fatal(err)
	}
	h.Kill()
	// Whichever the proxy meets first ends the session: the notification
	// stream's end, or its own tools/list after the answer (see the pin
	// invariant in package proxy) failing.
	code, err := s.Wait(ctx)
	if err != nil || code != 1 || !strings.Contains(s.Stderr(), "notification stream (GET "+h.URL+") ended") && !strings.Contains(s.Stderr(), "writing to the bank server") {
		t.Errorf("proxy after the bank died: exit %d, %v; want 1 naming the notification stream or the failed write\n%s", code, err, s.Stderr())
	}
	if _, err := s.Client().CallTool(ctx, &mcp.CallToolParams{Name: "list_accounts"}); err == nil {
		t.Errorf("a call after the bank died succeeded")
	}
}

// TestE2EPinURL: bankdoor pin --url lists the fixture over streamable HTTP
// with the very pins the same server has over stdio, and prints its
// definitions.
func TestE2EPinURL(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	f := w.fixture()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stdio, err := mcptest.LivePins(ctx, built.bankdoor, f)
	if err != nil {
		t.Fatal(err)
	}
	h := startHTTPFixture(t, f)
	out := w.bankdoor(0, "pin", "--hashes", "--url", h.URL)
	overHTTP := map[string]string{}
	for line := range strings.Lines(strings.TrimSpace(out)) {
		sum, name, _ := strings.Cut(strings.TrimSpace(line), " ")
		overHTTP[name] = sum
	}
	if len(stdio) != 5 || !maps.Equal(stdio, overHTTP) {
		t.Errorf("pins over --url %v; over stdio %v; want the same five", overHTTP, stdio)
	}
	long := w.bankdoor(0, "pin", "--url", h.URL)
	if !strings.Contains(long, "# get_transactions\nschema_sha256: "+stdio["get_transactions"]+"\n") ||
		!strings.Contains(long, `  "name": "get_transactions",`) {
		t.Errorf("pin --url does not print get_transactions' definition with its pin:\n%s", long)
	}
}
