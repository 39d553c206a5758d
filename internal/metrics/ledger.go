package metrics

import (
	"context"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bankdoor/bankdoor/anchor"
	"github.com/bankdoor/bankdoor/ledger"
	"github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1/ledgerv1connect"
)

// Ledger is a ledger's metrics.
type Ledger struct {
	reg        *prometheus.Registry
	commitSize prometheus.Histogram
	commitTime prometheus.Histogram
	appends    *prometheus.HistogramVec
	failures   *prometheus.CounterVec
}

// Ledger registers a ledger's metrics; those read from the ledger itself
// are registered by Watch.
func (r *Registry) Ledger() *Ledger {
	l := &Ledger{
		reg: r.reg,
		commitSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "bankdoor_ledger_commit_receipts",
			Help:    "Receipts per group commit (one signed checkpoint each).",
			Buckets: prometheus.ExponentialBuckets(1, 2, 13),
		}),
		commitTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "bankdoor_ledger_commit_seconds",
			Help:    "Time of a group commit, from the start of its transaction until durable.",
			Buckets: secondsBuckets,
		}),
		appends: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "bankdoor_ledger_append_seconds",
			Help:    `Append RPCs served, by Connect code ("ok" when it succeeded).`,
			Buckets: secondsBuckets,
		}, []string{"code"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bankdoor_witness_failures_total",
			Help: "Failed attempts to have a witness cosign a checkpoint, by reason.",
		}, []string{"witness", "reason"}),
	}
	r.reg.MustRegister(l.commitSize, l.commitTime, l.appends, l.failures)
	return l
}

// Watch registers the metrics read from the ledger when the registry is
// scraped: its size, its checkpoint's age and the witnesses' cosigned
// sizes. log returns the ledger, or nil while the process does not hold
// it (a proxy standing by for another's embedded ledger); witnesses are
// the names of the witnesses it anchors to.
func (l *Ledger) Watch(log func() *ledger.Log, witnesses []string) {
	l.reg.MustRegister(newLogCollector(log, witnesses))
}

// Committed is for ledger.Options.OnCommit.
func (l *Ledger) Committed(c ledger.Commit) {
	l.commitSize.Observe(float64(len(c.Entries)))
	l.commitTime.Observe(c.Took.Seconds())
}

// Anchored is for anchor.Options.OnResult.
func (l *Ledger) Anchored(witness string, _ uint64, err error) {
	if err != nil {
		l.failures.WithLabelValues(witness, anchor.FailureReason(err)).Inc()
	}
}

// Interceptor times the Append RPCs a Connect handler serves.
func (l *Ledger) Interceptor() connect.Interceptor { return appendTimer{l.appends} }

type appendTimer struct{ h *prometheus.HistogramVec }

func (t appendTimer) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if req.Spec().Procedure != ledgerv1connect.LedgerServiceAppendProcedure {
			return next(ctx, req)
		}
		start := time.Now()
		resp, err := next(ctx, req)
		code := "ok"
		if err != nil {
			code = connect.CodeOf(err).String()
		}
		t.h.WithLabelValues(code).Observe(time.Since(start).Seconds())
		return resp, err
	}
}

func (appendTimer) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (appendTimer) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// logCollector reads the log's size, its checkpoint's age and the
// witnesses' cosigned sizes when the registry is scraped.
type logCollector struct {
	log       func() *ledger.Log
	witnesses []string

	treeSize, cpAge, cosigned, lag *prometheus.Desc
}

func newLogCollector(log func() *ledger.Log, witnesses []string) *logCollector {
	return &logCollector{log: log, witnesses: witnesses,
		treeSize: prometheus.NewDesc("bankdoor_ledger_tree_size", "Entries in the log: the latest checkpoint's size.", nil, nil),
		cpAge: prometheus.NewDesc("bankdoor_ledger_checkpoint_age_seconds",
			"Seconds since the latest checkpoint was signed, or loaded at start; an idle log's checkpoint ages too.", nil, nil),
		cosigned: prometheus.NewDesc("bankdoor_witness_cosigned_size", "The largest tree size the witness has cosigned.", []string{"witness"}, nil),
		lag:      prometheus.NewDesc("bankdoor_witness_lag_entries", "The log's size minus the witness's cosigned size.", []string{"witness"}, nil),
	}
}

func (c *logCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.treeSize
	ch <- c.cpAge
	ch <- c.cosigned
	ch <- c.lag
}

func (c *logCollector) Collect(ch chan<- prometheus.Metric) {
	l := c.log()
	if l == nil {
		return
	}
	size := l.Size()
	ch <- prometheus.MustNewConstMetric(c.treeSize, prometheus.GaugeValue, float64(size))
	ch <- prometheus.MustNewConstMetric(c.cpAge, prometheus.GaugeValue, time.Since(l.CheckpointTime()).Seconds())
	store := l.CosignatureStore()
	for _, w := range c.witnesses {
		cosigned, _, err := store.Latest(w)
		if err != nil {
			ch <- prometheus.NewInvalidMetric(c.cosigned, err)
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.cosigned, prometheus.GaugeValue, float64(cosigned), w)
		ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, float64(size-min(cosigned, size)), w)
	}
}
