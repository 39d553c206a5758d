package main_test

// End-to-end anchoring: the built bankdoor binary, a real bbolt ledger and
// the real omniwitness (github.com/transparency-dev/witness, the version
// tools/go.mod pins), started by anchor/anchortest.

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/bankdoor/bankdoor/anchor/anchortest"
	"github.com/bankdoor/bankdoor/anchor/cosignature"
	"github.com/bankdoor/bankdoor/internal/mcptest"
	ledgerv1 "github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1"
	"github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1/ledgerv1connect"
)

const (
	possibleRollback = "possible rollback"
	// witnessRollback starts the anchor's report of a witness's refusal.
	witnessRollback = `msg="witness refused the checkpoint" witness=witness.test`
)

// logVKey returns the ledger's verifier key, from the .vkey file keygen wrote.
func (w *ledgerWorld) logVKey() string {
	w.t.Helper()
	b, err := os.ReadFile(w.key + ".vkey")
	if err != nil {
		w.t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// waitCosigned waits until GetCheckpoint, over c, serves the checkpoint of
// size with a cosignature by the witness that verifies, and returns it.
func waitCosigned(t *testing.T, c ledgerv1connect.LedgerServiceClient, policy *cosignature.Policy, size uint64, stderr func() string) []byte {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var lastErr error
	for time.Now().Before(deadline) {
		resp, err := c.GetCheckpoint(t.Context(), connect.NewRequest(&ledgerv1.GetCheckpointRequest{}))
		if err == nil {
			var v *cosignature.Verified
			v, err = policy.Verify(resp.Msg.Checkpoint)
			if err == nil && v.Checkpoint.Size == size {
				return resp.Msg.Checkpoint
			}
		}
		lastErr = err
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no cosigned checkpoint of size %d within 30s (last: %v); output:\n%s", size, lastErr, stderr())
	return nil
}

// newAnchorWorld is a ledger world, a running omniwitness that knows its
// log, and the policy that trusts that witness alone (quorum 1).
func newAnchorWorld(t *testing.T) (*ledgerWorld, *anchortest.Omniwitness, *cosignature.Policy) {
	t.Helper()
	w := newLedgerWorld(t)
	wit := anchortest.NewOmniwitness(t, w.logVKey())
	return w, wit, newPolicy(t, w.logVKey(), wit.VKey)
}

func newPolicy(t *testing.T, logVKey string, witnessVKeys ...string) *cosignature.Policy {
	t.Helper()
	p, err := cosignature.NewPolicy(logVKey, witnessVKeys, len(witnessVKeys))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLedgerServeWitness runs bankdoor ledger serve --witness with the
// real omniwitness: each batch's checkpoint comes back cosigned over
// Connect JSON and gRPC, and the cosignatures are still served after a
// restart without --witness (they are in the ledger's file).
func TestLedgerServeWitness(t *testing.T) {
	t.Parallel()
	w, wit, policy := newAnchorWorld(t)
	rs := newChainAgent(t, w).receipts(t, 12)
	srv := w.serve("--witness", wit.URL, "--witness-key", wit.VKey, "--witness-interval", "0")
	for _, end := range []int{3, 4, 12} {
		if _, err := srv.client().Append(t.Context(), appendRequest(rs[:end]...)); err != nil {
			t.Fatalf("Append up to %d: %v", end, err)
		}
		waitCosigned(t, srv.jsonClient(), policy, uint64(end), srv.output)
		waitCosigned(t, srv.client(), policy, uint64(end), srv.output)
	}
	if code := srv.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d after SIGTERM:\n%s", code, srv.output())
	}
	again := w.serve()
	waitCosigned(t, again.jsonClient(), policy, 12, again.output)
}

// TestLedgerServeWitnessRollback recreates the ledger from scratch, same
// key, fewer receipts: the witness refuses it, the ledger names a possible
// rollback once per checkpoint (no retry loop), serves no cosignature and
// keeps serving.
func TestLedgerServeWitnessRollback(t *testing.T) {
	t.Parallel()
	w, wit, policy := newAnchorWorld(t)
	rs := newChainAgent(t, w).receipts(t, 6)
	srv := w.serve("--witness", wit.URL, "--witness-key", wit.VKey, "--witness-interval", "0")
	if _, err := srv.client().Append(t.Context(), appendRequest(rs...)); err != nil {
		t.Fatal(err)
	}
	waitCosigned(t, srv.client(), policy, 6, srv.output)
	srv.stop(syscall.SIGTERM)
	if err := os.Remove(w.db); err != nil {
		t.Fatal(err)
	}

	again := w.serve("--witness", wit.URL, "--witness-key", wit.VKey, "--witness-interval", "0")
	waitFor(t, again, possibleRollback) // the new log's checkpoint of size 0
	for i, end := range []int{2, 3} {
		if _, err := again.client().Append(t.Context(), appendRequest(rs[:end]...)); err != nil {
			t.Fatal(err)
		}
		waitCount(t, again, possibleRollback, i+2)
	}
	if n := strings.Count(again.output(), possibleRollback); n != 3 {
		t.Errorf("%d reports of a possible rollback for 3 checkpoints; want one each:\n%s", n, again.output())
	}
	if _, err := policy.Verify(getServed(t, again.client())); err == nil {
		t.Error("the recreated ledger serves a cosigned checkpoint")
	}
}

// TestAnchorCommand runs bankdoor anchor against a remote bankdoor ledger
// serve that accepts the witness's key: cosignatures are handed back over
// AddCosignature and served; then the ledger is recreated with fewer
// receipts at the same address, and the anchor reports a possible
// rollback.
func TestAnchorCommand(t *testing.T) {
	t.Parallel()
	w, wit, policy := newAnchorWorld(t)
	// The anchor is given the front's address; the ledger behind it
	// listens on a port of its own, a new one when it is recreated.
	ledger := newFront(t)
	a := newChainAgent(t, w)
	rs := a.receipts(t, 9)
	srv := w.serve("--witness-key", wit.VKey)
	ledger.up(t, srv.url)
	anc := startProcess(t, nil, "anchor", "--ledger", ledger.url(), "--log-key", w.logVKey(), "--witness", wit.URL, "--witness-key", wit.VKey, "--witness-interval", "0")
	both := func() string { return srv.output() + anc.output() }
	for _, end := range []int{1, 5, 9} {
		if _, err := srv.jsonClient().Append(t.Context(), appendRequest(rs[:end]...)); err != nil {
			t.Fatal(err)
		}
		waitCosigned(t, srv.client(), policy, uint64(end), both)
	}
	ledger.down()
	srv.stop(syscall.SIGTERM)
	if err := os.Remove(w.db); err != nil {
		t.Fatal(err)
	}
	again := w.serve("--witness-key", wit.VKey)
	ledger.up(t, again.url)
	if _, err := again.client().Append(t.Context(), appendRequest(rs[:2]...)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, anc, "the ledger's checkpoint went back: possible rollback of the log\" was=9")
	waitFor(t, anc, witnessRollback)
	if code := anc.stop(syscall.SIGTERM); code != 0 {
		t.Errorf("bankdoor anchor exited %d after SIGTERM:\n%s", code, anc.output())
	}
}

func getServed(t *testing.T, c ledgerv1connect.LedgerServiceClient) []byte {
	t.Helper()
	resp, err := c.GetCheckpoint(t.Context(), connect.NewRequest(&ledgerv1.GetCheckpointRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Msg.Checkpoint
}

// waitCount waits until the process's stderr holds s at least n times.
func waitCount(t *testing.T, p *ledgerServer, s string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(p.output(), s) < n {
		if time.Now().After(deadline) {
			t.Fatalf("stderr did not say %q %d times within 30s:\n%s", s, n, p.output())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startProcess runs bankdoor ARGS... in the background with the test's
// environment and env (KEY=VALUE), its stderr collected; it is killed at
// the end of the test if still running.
func startProcess(t *testing.T, env []string, args ...string) *ledgerServer {
	t.Helper()
	p := &ledgerServer{t: t, cmd: exec.Command(built.bankdoor, args...), exited: make(chan struct{})}
	p.cmd.Env = mcptest.Env(env...)
	p.cmd.Dir = t.TempDir()
	pipe, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.exited
	})
	go p.readStderr(pipe, make(chan string, 1))
	return p
}

// TestAnchorCommandToken runs bankdoor anchor against a ledger that wants
// a bearer token for every call (--auth-reads): the watch stream and
// AddCosignature both carry it.
func TestAnchorCommandToken(t *testing.T) {
	t.Parallel()
	w, wit, policy := newAnchorWorld(t)
	const token = "anchor-e2e-token-0123456789abcdef"
	tokens := filepath.Join(w.dir, "tokens")
	if err := os.WriteFile(tokens, []byte("anchor "+token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := newChainAgent(t, w)
	srv := w.serve("--witness-key", wit.VKey, "--token-file", tokens, "--auth-reads")
	anc := startProcess(t, []string{"ANCHOR_TOKEN=" + token}, "anchor", "--ledger", srv.url, "--ledger-token-env", "ANCHOR_TOKEN",
		"--log-key", w.logVKey(), "--witness", wit.URL, "--witness-key", wit.VKey, "--witness-interval", "0")
	withToken := connect.WithInterceptors(connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			req.Header().Set("Authorization", "Bearer "+token)
			return next(ctx, req)
		}
	}))
	c := ledgerv1connect.NewLedgerServiceClient(http.DefaultClient, srv.url, withToken)
	if _, err := c.Append(t.Context(), appendRequest(a.receipts(t, 4)...)); err != nil {
		t.Fatal(err)
	}
	waitCosigned(t, c, policy, 4, func() string { return srv.output() + anc.output() })
}
