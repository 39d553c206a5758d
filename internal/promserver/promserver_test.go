package promserver_test

import (
	"context"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/model"

	"github.com/bankdoor/bankdoor/internal/promserver"
)

// TestScrape: Prometheus scrapes a server of the test that counts with
// client_golang (in a registry of its own), sees it up, and reports the
// counter's value, per label, once the test has counted a known burst;
// queries that are not an instant vector, or not PromQL, are errors.
func TestScrape(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	reg := prometheus.NewRegistry()
	calls := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "promserver_test_calls_total",
		Help: "Calls the test made, by decision.",
	}, []string{"decision"})
	reg.MustRegister(calls)
	target := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer target.Close()
	addr := strings.TrimPrefix(target.URL, "http://")

	s := promserver.StartTest(t, promserver.Job{Name: "counter", Targets: []string{addr}})
	if err := s.WaitUp(ctx); err != nil {
		t.Fatal(err)
	}
	for range 7 {
		calls.WithLabelValues("deny").Inc()
	}
	calls.WithLabelValues("allow").Add(3)

	q := `promserver_test_calls_total{job="counter",decision="deny"}`
	vec, err := s.WaitFor(ctx, q, func(v model.Vector) bool { return len(v) == 1 && v[0].Value == 7 })
	if err != nil {
		t.Fatal(err)
	}
	if got := vec[0].Metric["instance"]; got != model.LabelValue(addr) {
		t.Errorf("%s: instance %q, want %q", q, got, addr)
	}
	sum, err := s.Query(ctx, `sum by (job) (promserver_test_calls_total)`)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum) != 1 || sum[0].Value != 10 || sum[0].Metric["job"] != "counter" {
		t.Errorf("sum by (job) = %v, want {job=\"counter\"} => 10", sum)
	}
	if _, err := s.Query(ctx, `1 + 1`); err == nil || !strings.Contains(err.Error(), "not a vector") {
		t.Errorf("a scalar query = %v, want an error saying not a vector", err)
	}
	if _, err := s.Query(ctx, `sum(`); err == nil || !strings.Contains(err.Error(), "bad_data") {
		t.Errorf("a malformed query = %v, want the API's bad_data error", err)
	}
}

// TestDownTarget: a target nothing listens on is reported down, with
// its error, and WaitUp fails at its deadline naming it.
func TestDownTarget(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: every scrape is refused
	s := promserver.StartTest(t, promserver.Job{Name: "gone", Targets: []string{addr}})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var down promserver.Target
	for down.Health != "down" {
		targets, err := s.Targets(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(targets) == 1 {
			down = targets[0]
		}
		select {
		case <-ctx.Done():
			t.Fatalf("target %s never reported down; targets: %+v", addr, targets)
		case <-tick.C:
		}
	}
	if down.Labels["job"] != "gone" || down.Labels["instance"] != model.LabelValue(addr) || !strings.Contains(down.LastError, "connection refused") {
		t.Errorf("target = %+v, want job gone, instance %s, a connection refused", down, addr)
	}
	short, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	if err := s.WaitUp(short); err == nil || !strings.Contains(err.Error(), "gone/"+addr) {
		t.Errorf("WaitUp = %v, want an error naming gone/%s", err, addr)
	}
}

// TestStartFails: a configuration Prometheus refuses ends Start with
// Prometheus's own complaint, and a job without targets is refused
// before it runs.
func TestStartFails(t *testing.T) {
	t.Parallel()
	prog, err := promserver.Binary(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	_, err = promserver.Start(t.Context(), prog.Path, dir,
		promserver.Job{Name: "twice", Targets: []string{"127.0.0.1:1"}},
		promserver.Job{Name: "twice", Targets: []string{"127.0.0.1:2"}})
	if err == nil || !strings.Contains(err.Error(), `found multiple scrape configs with job name \"twice\"`) {
		t.Errorf("Start with a job name twice = %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "prometheus.yml")); err != nil || !strings.Contains(string(b), "scrape_interval: 1s") {
		t.Errorf("prometheus.yml = %q, %v", b, err)
	}
	_, err = promserver.Start(t.Context(), prog.Path, t.TempDir(), promserver.Job{Name: "empty"})
	if err == nil || !strings.Contains(err.Error(), "needs a name and targets") {
		t.Errorf("Start with a job without targets = %v", err)
	}
}
