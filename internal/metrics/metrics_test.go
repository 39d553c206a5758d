package metrics

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/bankdoor/bankdoor/anchor"
	"github.com/bankdoor/bankdoor/anchor/tlogwitness"
	"github.com/bankdoor/bankdoor/internal/agentchain/chaintest"
	"github.com/bankdoor/bankdoor/internal/scratchlog"
	"github.com/bankdoor/bankdoor/ledger"
)

func TestProxyCounts(t *testing.T) {
	r := New()
	p := r.Proxy([]string{"get_balances", "list_accounts"})
	p.Decided("allow", "allow", "get_balances", 2*time.Millisecond)
	p.Decided("deny", "name.write_word", "transfer", time.Microsecond)
	p.Decided("deny", "name.write_word", "pay_bill", time.Microsecond)
	p.Decided("deny", "method.unknown", "", 0)
	p.Recorded("deny", 3*time.Millisecond, nil)
	p.Recorded("deny", time.Millisecond, errors.New("disk full"))
	p.Answered("tools/call", 10*time.Millisecond)

	for _, c := range []struct {
		labels []string
		want   float64
	}{
		{[]string{"allow", "allow"}, 1},
		{[]string{"deny", "name.write_word"}, 2},
		{[]string{"deny", "method.unknown"}, 1},
	} {
		if got := testutil.ToFloat64(p.calls.WithLabelValues(c.labels...)); got != c.want {
			t.Errorf("bankdoor_calls_total%v = %v, want %v", c.labels, got, c.want)
		}
	}
	// Tools outside the policy share one label: an agent cannot add series.
	for _, c := range []struct {
		tool, decision string
		want           float64
	}{
		{"get_balances", "allow", 1}, {"other", "deny", 2}, {"none", "deny", 1}, {"list_accounts", "allow", 0},
	} {
		if got := testutil.ToFloat64(p.toolCalls.WithLabelValues(c.tool, c.decision)); got != c.want {
			t.Errorf("bankdoor_tool_calls_total{tool=%q,decision=%q} = %v, want %v", c.tool, c.decision, got, c.want)
		}
	}
	if n := testutil.CollectAndCount(p.toolCalls); n != 8 {
		t.Errorf("bankdoor_tool_calls_total has %d series, want 8 (2 tools, other and none; allow and deny)", n)
	}
	if got := testutil.ToFloat64(p.receipts.WithLabelValues("deny")); got != 1 {
		t.Errorf("receipts written = %v, want 1", got)
	}
	if got := testutil.ToFloat64(p.writeErrs); got != 1 {
		t.Errorf("receipt write errors = %v, want 1", got)
	}
	if got := testutil.CollectAndCount(p.roundTrip); got != 1 {
		t.Errorf("round-trip series = %d, want 1", got)
	}
}

func TestHandlerServesExposition(t *testing.T) {
	r := New()
	r.Proxy(nil).Decided("deny", "tool.not_allowed", "x", 0)
	r.Sessions(func() map[string]int { return map[string]int{"alice": 2, "bob": 1} })
	r.Backlog(func() map[string]uint64 { return map[string]uint64{"0123456789abcdef": 7} })
	r.EventsDropped(func() uint64 { return 3 })
	r.HolderLapse(func() bool { return true })
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`bankdoor_calls_total{decision="deny",rule="tool.not_allowed"} 1`,
		`bankdoor_sessions_open{agent="alice"} 2`,
		`bankdoor_sessions_open{agent="bob"} 1`,
		`bankdoor_spool_backlog_receipts{key_id="0123456789abcdef"} 7`,
		"bankdoor_events_dropped_total 3",
		"bankdoor_ledger_holder_lapse 1",
		"go_goroutines ",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the exposition lacks %q", want)
		}
	}
}

// TestLedger feeds the ledger metrics from a real ledger's hooks.
func TestLedger(t *testing.T) {
	r := New()
	m := r.Ledger()
	a := chaintest.Generate(t, time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC))
	keys := &ledger.AgentKeys{}
	keys.Enroll(a.Public())
	l, err := scratchlog.Open(filepath.Join(t.TempDir(), "l.db"), ledger.Options{Origin: "metrics.test/log", Agents: keys, OnCommit: m.Committed})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var held *ledger.Log
	m.Watch(func() *ledger.Log { return held }, []string{"w1"})
	if n := testutil.CollectAndCount(r.reg, "bankdoor_ledger_tree_size"); n != 0 {
		t.Errorf("a ledger not held reports %d tree sizes, want none", n)
	}
	held = l.Log
	if _, err := l.Append(context.Background(), a.Chain(t, 5)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(context.Background(), [][]byte{a.Next(t)}); err != nil {
		t.Fatal(err)
	}
	if got := testutil.CollectAndCount(m.commitSize); got != 1 {
		t.Fatalf("commit histogram series = %d", got)
	}
	const want = `
# HELP bankdoor_ledger_tree_size Entries in the log: the latest checkpoint's size.
# TYPE bankdoor_ledger_tree_size gauge
bankdoor_ledger_tree_size 6
# HELP bankdoor_witness_cosigned_size The largest tree size the witness has cosigned.
# TYPE bankdoor_witness_cosigned_size gauge
bankdoor_witness_cosigned_size{witness="w1"} 0
# HELP bankdoor_witness_lag_entries The log's size minus the witness's cosigned size.
# TYPE bankdoor_witness_lag_entries gauge
bankdoor_witness_lag_entries{witness="w1"} 6
`
	if err := testutil.GatherAndCompare(r.reg, strings.NewReader(want), "bankdoor_ledger_tree_size", "bankdoor_witness_cosigned_size", "bankdoor_witness_lag_entries"); err != nil {
		t.Error(err)
	}
	mf, err := r.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range mf {
		switch f.GetName() {
		case "bankdoor_ledger_commit_receipts":
			h := f.GetMetric()[0].GetHistogram()
			if h.GetSampleCount() != 2 || h.GetSampleSum() != 6 {
				t.Errorf("commit receipts: %d commits, %v receipts; want 2 and 6", h.GetSampleCount(), h.GetSampleSum())
			}
		case "bankdoor_ledger_checkpoint_age_seconds":
			if age := f.GetMetric()[0].GetGauge().GetValue(); age < 0 || age > 60 {
				t.Errorf("checkpoint age %v s, want a few seconds at most", age)
			}
		}
	}
}

func TestAnchorFailures(t *testing.T) {
	m := New().Ledger()
	m.Anchored("w1", 5, nil)
	m.Anchored("w1", 5, tlogwitness.ErrUnavailable)
	m.Anchored("w1", 6, errors.Join(anchor.ErrPossibleRollback, tlogwitness.ErrInconsistent))
	m.Anchored("w2", 6, errors.New("something new"))
	for _, c := range []struct {
		witness, reason string
		want            float64
	}{
		{"w1", "unavailable", 1}, {"w1", "rollback", 1}, {"w2", "other", 1},
	} {
		if got := testutil.ToFloat64(m.failures.WithLabelValues(c.witness, c.reason)); got != c.want {
			t.Errorf("failures{%s,%s} = %v, want %v", c.witness, c.reason, got, c.want)
		}
	}
	if n := testutil.CollectAndCount(m.failures); n != 3 {
		t.Errorf("%d failure series, want 3 (a success counts none)", n)
	}
}
