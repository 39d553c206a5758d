// Package metrics defines the Prometheus metrics bankdoor exports on
// --metrics-addr (http://HOST:PORT/metrics, the Prometheus text exposition
// format), and feeds them from the hooks of packages proxy, proxy/httpserve,
// ledger, ledger/station and anchor. Each process has its own registry:
// nothing is registered on the global default one.
//
// # The metrics
//
// Of the proxy (stdio and --listen):
//
//	bankdoor_calls_total{decision,rule}            counter   decisions on agents' requests: "allow" (rule "allow": a tools/call forwarded after the six checks) or "deny" (the rule that refused it)
//	bankdoor_tool_calls_total{tool,decision}       counter   the same by tool: a tool the policy allows for the server, "other" for any other name, "none" when no tool was named
//	bankdoor_gate_decision_seconds{decision}       histogram from reading a request to deciding it (a tools/call's wait for its turn and the relay's listing of the server included)
//	bankdoor_proxied_request_seconds{method}       histogram from reading a forwarded request to relaying the server's answer
//	bankdoor_receipts_written_total{decision}      counter   receipts made durable
//	bankdoor_receipt_write_errors_total            counter   receipt writes that failed (the relay stops forwarding)
//	bankdoor_receipt_write_seconds                 histogram time to make a receipt durable (file and directory synced)
//	bankdoor_spool_backlog_receipts{key_id}        gauge     receipts written and not yet confirmed by the ledger, per agent key, in the process that ships them; while none does (a lapse), in every process, those written since it began
//	bankdoor_ledger_holder_lapse                   gauge     1 while the embedded ledger's file is held by a process that ships nothing (a lapse: no proxy ships the receipts directory), else 0
//	bankdoor_sessions_open{agent}                  gauge     --listen: open MCP sessions per authenticated agent
//	bankdoor_events_dropped_total                  counter   --events: lines lost (queue full, write failed); also of ledger serve
//
// Of a ledger (ledger serve, and a proxy's embedded ledger while its
// process holds it):
//
//	bankdoor_ledger_tree_size                      gauge     entries in the log (the latest checkpoint's size)
//	bankdoor_ledger_checkpoint_age_seconds         gauge     since the latest checkpoint was signed (or loaded at start; an idle log's checkpoint ages too)
//	bankdoor_ledger_commit_receipts                histogram receipts per group commit (one checkpoint each)
//	bankdoor_ledger_commit_seconds                 histogram time of a group commit, until durable
//	bankdoor_ledger_append_seconds{code}           histogram ledger serve: Append RPCs, by Connect code ("ok" when it succeeded)
//	bankdoor_witness_cosigned_size{witness}        gauge     the largest tree size the witness has cosigned (stored cosignatures)
//	bankdoor_witness_lag_entries{witness}          gauge     tree size minus the witness's cosigned size
//	bankdoor_witness_failures_total{witness,reason} counter  failed anchoring attempts, by anchor.FailureReason
//
// and the Go runtime's and the process's standard collectors (go_*,
// process_*).
//
// No label takes a value an agent chooses freely: tools are bounded by the
// policy, rules and methods by the code, agents and key_ids by those the
// operator enrolled, witnesses by the configuration.
package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Registry is one process's metrics.
type Registry struct {
	reg *prometheus.Registry
}

// New returns a registry holding the Go runtime's and the process's
// collectors.
func New() *Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return &Registry{reg: reg}
}

// Handler serves the registry's metrics in the Prometheus exposition
// formats.
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{Registry: r.reg})
}

// Gatherer returns the registry, to read its metrics in tests.
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg }

// secondsBuckets span a gate decision in microseconds to a slow bank
// answer in seconds.
var secondsBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
