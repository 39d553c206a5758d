package main_test

import (
	"syscall"
	"testing"

	"github.com/bankdoor/bankdoor/anchor/anchortest"
)

// TestLedgerServeMixedWitnesses runs bankdoor ledger serve with two real
// omniwitnesses, one cosigning with Ed25519 and one with ML-DSA-44
// (cosignature/v1 type 0x06), and a 500 ms --witness-interval: each
// batch's checkpoint comes back cosigned by both, a quorum of 2.
func TestLedgerServeMixedWitnesses(t *testing.T) {
	t.Parallel()
	w, ed, _ := newAnchorWorld(t)
	pq := anchortest.NewOmniwitnessMLDSA(t, w.logVKey())
	policy := newPolicy(t, w.logVKey(), ed.VKey, pq.VKey)
	rs := newChainAgent(t, w).receipts(t, 6)
	srv := w.serve("--witness", ed.URL, "--witness-key", ed.VKey, "--witness", pq.URL, "--witness-key", pq.VKey, "--witness-interval", "500ms")
	for _, end := range []int{2, 6} {
		if _, err := srv.client().Append(t.Context(), appendRequest(rs[:end]...)); err != nil {
			t.Fatalf("Append up to %d: %v", end, err)
		}
		waitCosigned(t, srv.jsonClient(), policy, uint64(end), srv.output)
	}
	if code := srv.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d after SIGTERM:\n%s", code, srv.output())
	}
}

// TestAnchorCommandMLDSA runs bankdoor anchor with an ML-DSA-44
// omniwitness against a ledger serve that accepts that witness's key: the
// ML-DSA-44 cosignatures are handed back over AddCosignature, verified by
// the ledger and served.
func TestAnchorCommandMLDSA(t *testing.T) {
	t.Parallel()
	w := newLedgerWorld(t)
	pq := anchortest.NewOmniwitnessMLDSA(t, w.logVKey())
	policy := newPolicy(t, w.logVKey(), pq.VKey)
	rs := newChainAgent(t, w).receipts(t, 5)
	srv := w.serve("--witness-key", pq.VKey)
	anc := startProcess(t, nil, "anchor", "--ledger", srv.url, "--log-key", w.logVKey(), "--witness", pq.URL, "--witness-key", pq.VKey, "--witness-interval", "200ms")
	both := func() string { return srv.output() + anc.output() }
	for _, end := range []int{1, 5} {
		if _, err := srv.jsonClient().Append(t.Context(), appendRequest(rs[:end]...)); err != nil {
			t.Fatal(err)
		}
		waitCosigned(t, srv.client(), policy, uint64(end), both)
	}
	if code := anc.stop(syscall.SIGTERM); code != 0 {
		t.Errorf("bankdoor anchor exited %d after SIGTERM:\n%s", code, anc.output())
	}
}
