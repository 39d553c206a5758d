package metrics

import (
	"maps"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// labelledGauge is a gauge whose values, one per label value, are read
// when the registry is scraped.
type labelledGauge struct {
	desc *prometheus.Desc
	read func() map[string]float64
}

func (g labelledGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

func (g labelledGauge) Collect(ch chan<- prometheus.Metric) {
	vals := g.read()
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, vals[k], k)
	}
}

// Sessions registers bankdoor_sessions_open{agent}, read from open (the
// open sessions by agent, e.g. httpserve.Server.Sessions).
func (r *Registry) Sessions(open func() map[string]int) {
	r.reg.MustRegister(labelledGauge{
		desc: prometheus.NewDesc("bankdoor_sessions_open", "Open MCP sessions per authenticated agent (--listen).", []string{"agent"}, nil),
		read: func() map[string]float64 { return floats(open()) },
	})
}

// Backlog registers bankdoor_spool_backlog_receipts{key_id}, read from
// backlog (receipts not yet in the ledger by key_id, e.g.
// station.Station.Backlog; nil while another process ships them, those
// written since a lapse began while none does).
func (r *Registry) Backlog(backlog func() map[string]uint64) {
	r.reg.MustRegister(labelledGauge{
		desc: prometheus.NewDesc("bankdoor_spool_backlog_receipts",
			"Receipts written and not yet confirmed by the ledger, per agent key, in the process that ships them (or, while none does, in every process: those written since).", []string{"key_id"}, nil),
		read: func() map[string]float64 { return floats(backlog()) },
	})
}

// HolderLapse registers bankdoor_ledger_holder_lapse, read from lapsed
// (e.g. station.Station.Lapsed): 1 while a process that ships nothing
// holds the embedded ledger's file, so no proxy ships the receipts
// directory, else 0.
func (r *Registry) HolderLapse(lapsed func() bool) {
	r.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "bankdoor_ledger_holder_lapse",
		Help: "1 while the embedded ledger's file is held by a process that ships nothing, so no proxy ships the receipts directory; else 0.",
	}, func() float64 {
		if lapsed() {
			return 1
		}
		return 0
	}))
}

// EventsDropped registers bankdoor_events_dropped_total, read from
// dropped (the --events lines lost, e.g. events.Stream.Dropped).
func (r *Registry) EventsDropped(dropped func() uint64) {
	r.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "bankdoor_events_dropped_total",
		Help: "Lines of the --events stream lost (queue full or write failed); the receipts themselves are on disk.",
	}, func() float64 { return float64(dropped()) }))
}

func floats[N int | uint64](m map[string]N) map[string]float64 {
	f := make(map[string]float64, len(m))
	for k, v := range m {
		f[k] = float64(v)
	}
	return f
}
