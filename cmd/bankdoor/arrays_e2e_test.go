package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/internal/attacks"
	"github.com/bankdoor/bankdoor/internal/mcptest"
)

// cataloguePolicy returns the policy the attack catalogue runs against
// (attacks.Policy: w's policy with the arrays variant's
// get_transactions_by_ids), pinned against the fixture.
func (w *world) cataloguePolicy() string {
	w.t.Helper()
	base, err := os.ReadFile(w.policy)
	if err != nil {
		w.t.Fatal(err)
	}
	dir := w.t.TempDir()
	path := filepath.Join(dir, "catalogue.yaml")
	f := mcptest.Fixture{Bin: built.bankServer, State: filepath.Join(dir, "pin-state.json")}
	if err := attacks.PinPolicy(testContext(w.t, time.Minute), built.bankdoor, f, base, path); err != nil {
		w.t.Fatal(err)
	}
	return path
}

// TestE2EArrayForwarded: an allowed call with an array argument, sent
// with insignificant whitespace, escapes and its members out of order,
// reaches the bank as exactly what the gate checked: its RFC 8785 form,
// items in order, a repeated id kept. The bank's answer comes back.
func TestE2EArrayForwarded(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.policy = w.cataloguePolicy()
	ctx := testContext(t, 2*time.Minute)
	f := w.fixture(variantEnv(attacks.ArraysVariant)...)
	s := start(t, w.proxy(f).Command(), nil)
	frame := `{"jsonrpc":"2.0","id":` + s.NextID() + `,"method":"tools/call","params":{"name":"get_transactions_by_ids","arguments":` +
		`{ "ids" : [ "acc_checking_t03", "acc_checking_t\u0030\u0031" ,"acc_checking_t03"], "account_id":"acc_checking" }}}`
	resp, err := s.Raw(ctx, []byte(frame))
	if err != nil {
		t.Fatal(err)
	}
	var answer struct {
		Result struct {
			IsError bool
			Content []struct{ Text string }
		}
		Error json.RawMessage
	}
	if err := json.Unmarshal(resp, &answer); err != nil || answer.Error != nil || answer.Result.IsError || len(answer.Result.Content) != 1 {
		t.Fatalf("answer %s (%v); want the bank's result", resp, err)
	}
	if text := answer.Result.Content[0].Text; strings.Count(text, `"id":"acc_checking_t03"`) != 2 || !strings.Contains(text, `"id":"acc_checking_t01"`) {
		t.Errorf("the bank answered %s; want transactions t03, t01, t03", text)
	}
	st, err := mcptest.ReadState(f.State)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"account_id":"acc_checking","ids":["acc_checking_t03","acc_checking_t01","acc_checking_t03"]}`
	if n := len(st.Log); n == 0 || st.Log[n-1].Tool == nil || *st.Log[n-1].Tool != "get_transactions_by_ids" || string(st.Log[n-1].Arguments) != want {
		t.Errorf("the bank's log ends %v; want get_transactions_by_ids %s", st.Log, want)
	}
	if names, _ := mcptest.Receipts(w.receipts); len(names) != 0 {
		t.Errorf("an allowed call left receipts %q", names)
	}
}
