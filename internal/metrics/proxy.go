package metrics

import (
	"maps"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Tool labels for names outside the policy's tools, and for none.
const (
	OtherTool = "other"
	NoTool    = "none"
)

// Proxy is the proxy's metrics; it implements proxy.Observer.
type Proxy struct {
	tools      map[string]bool
	calls      *prometheus.CounterVec
	toolCalls  *prometheus.CounterVec
	decide     *prometheus.HistogramVec
	roundTrip  *prometheus.HistogramVec
	receipts   *prometheus.CounterVec
	writeErrs  prometheus.Counter
	writeTimes prometheus.Histogram
}

// Proxy registers the proxy's metrics. tools are the tool names the policy
// names for the server: they are the values of the tool label, with
// OtherTool and NoTool.
func (r *Registry) Proxy(tools []string) *Proxy {
	p := &Proxy{
		tools: make(map[string]bool, len(tools)),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bankdoor_calls_total",
			Help: `Decisions on agents' requests: decision "allow" (rule "allow") or "deny" (the refusing rule).`,
		}, []string{"decision", "rule"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bankdoor_tool_calls_total",
			Help: `Decisions by tool: a tool of the policy, "other" for any other name, "none" when no tool was named.`,
		}, []string{"tool", "decision"}),
		decide: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "bankdoor_gate_decision_seconds",
			Help:    "From reading a request to deciding it, a tools/call's wait for its turn and listing of the server included.",
			Buckets: secondsBuckets,
		}, []string{"decision"}),
		roundTrip: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "bankdoor_proxied_request_seconds",
			Help:    "From reading a forwarded request to relaying the bank server's answer.",
			Buckets: secondsBuckets,
		}, []string{"method"}),
		receipts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bankdoor_receipts_written_total",
			Help: "Receipts made durable in a receipts directory.",
		}, []string{"decision"}),
		writeErrs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bankdoor_receipt_write_errors_total",
			Help: "Receipt writes that failed; the relay forwards nothing more after one.",
		}),
		writeTimes: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "bankdoor_receipt_write_seconds",
			Help:    "Time to make a receipt durable (file and directory synced).",
			Buckets: secondsBuckets,
		}),
	}
	for _, t := range tools {
		p.tools[t] = true
	}
	r.reg.MustRegister(p.calls, p.toolCalls, p.decide, p.roundTrip, p.receipts, p.writeErrs, p.writeTimes)
	// The allow and deny series of each tool exist from the start, so a
	// rate over them is defined before the first call.
	for _, t := range append(slices.Sorted(maps.Keys(p.tools)), OtherTool, NoTool) {
		for _, d := range []string{"allow", "deny"} {
			p.toolCalls.WithLabelValues(t, d)
		}
	}
	return p
}

// Decided implements proxy.Observer.
func (p *Proxy) Decided(decision, rule, tool string, took time.Duration) {
	p.calls.WithLabelValues(decision, rule).Inc()
	p.toolCalls.WithLabelValues(p.toolLabel(tool), decision).Inc()
	p.decide.WithLabelValues(decision).Observe(took.Seconds())
}

// toolLabel bounds the tool label to the policy's tools.
func (p *Proxy) toolLabel(tool string) string {
	switch {
	case tool == "":
		return NoTool
	case p.tools[tool]:
		return tool
	}
	return OtherTool
}

// Answered implements proxy.Observer.
func (p *Proxy) Answered(method string, took time.Duration) {
	p.roundTrip.WithLabelValues(method).Observe(took.Seconds())
}

// Recorded implements proxy.Observer.
func (p *Proxy) Recorded(decision string, took time.Duration, err error) {
	if err != nil {
		p.writeErrs.Inc()
		return
	}
	p.receipts.WithLabelValues(decision).Inc()
	p.writeTimes.Observe(took.Seconds())
}
