package rpc_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

	"connectrpc.com/connect"

	ledgerv1 "github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1"
	"github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1/ledgerv1connect"
)

// BenchmarkAppend appends batches of fresh receipts over each protocol to
// a real ledger file (each call waits for its group commit to be synced).
// Concurrent callers share group commits: see the parallel variant.
func BenchmarkAppend(b *testing.B) {
	for _, p := range protocols {
		for _, batch := range []int{1, 100} {
			b.Run(fmt.Sprintf("%s/batch=%d", p.name, batch), func(b *testing.B) {
				a := newAgent(b)
				l := newTestLedger(b, nil, a)
				c := p.client(l)
				rs := a.Chain(b, b.N*batch)
				b.ResetTimer()
				for i := range b.N {
					if _, err := c.Append(b.Context(), appendReq(rs[i*batch:(i+1)*batch]...)); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "receipts/s")
			})
		}
	}
}

// BenchmarkAppendConcurrent: 16 agents each append their share of b.N
// receipts, one per call, over gRPC at the same time, so that the log's
// group commit batches them.
func BenchmarkAppendConcurrent(b *testing.B) {
	const agents = 16
	as := make([]*agent, agents)
	for i := range as {
		as[i] = newAgent(b)
	}
	l := newTestLedger(b, nil, as...)
	chains := make([][][]byte, agents)
	for i, a := range as {
		chains[i] = a.Chain(b, (b.N+agents-1)/agents)
	}
	b.ResetTimer()
	var wg sync.WaitGroup
	for _, rs := range chains {
		c := l.grpc()
		wg.Go(func() {
			for _, r := range rs {
				if _, err := c.Append(b.Context(), appendReq(r)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(agents*len(chains[0]))/b.Elapsed().Seconds(), "receipts/s")
}

// BenchmarkGetInclusionProof proves leaves of a 4096-leaf log by hash.
func BenchmarkGetInclusionProof(b *testing.B) {
	a := newAgent(b)
	l := newTestLedger(b, nil, a)
	c := l.grpc()
	rs := a.Chain(b, 4096)
	for i := 0; i < len(rs); i += 1000 {
		if _, err := c.Append(b.Context(), appendReq(rs[i:min(i+1000, len(rs))]...)); err != nil {
			b.Fatal(err)
		}
	}
	i := 0
	for b.Loop() {
		req := &ledgerv1.GetInclusionProofRequest{Leaf: &ledgerv1.GetInclusionProofRequest_LeafHash{LeafHash: leafHash(rs[i%len(rs)])}}
		if _, err := c.GetInclusionProof(b.Context(), connect.NewRequest(req)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkAppendManyWriters: 256 agents each append their share of b.N
// receipts, one per call, over the Connect protocol (binary) on HTTP/1.1,
// one connection each, as internal/loadgen drives ledger serve.
func BenchmarkAppendManyWriters(b *testing.B) {
	const agents = 256
	as := make([]*agent, agents)
	for i := range as {
		as[i] = newAgent(b)
	}
	l := newTestLedger(b, nil, as...)
	chains := make([][][]byte, agents)
	for i, a := range as {
		chains[i] = a.Chain(b, (b.N+agents-1)/agents)
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: agents + 1}}
	b.Cleanup(hc.CloseIdleConnections)
	c := ledgerv1connect.NewLedgerServiceClient(hc, l.srv.URL)
	b.ResetTimer()
	var wg sync.WaitGroup
	for _, rs := range chains {
		wg.Go(func() {
			for _, r := range rs {
				if _, err := c.Append(b.Context(), appendReq(r)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(agents*len(chains[0]))/b.Elapsed().Seconds(), "receipts/s")
	if st := l.log.Stats(); st.Commits > 0 {
		b.ReportMetric(float64(st.Receipts)/float64(st.Commits), "receipts/commit")
		b.ReportMetric(float64(st.Total.Microseconds())/float64(st.Commits), "µs/commit")
	}
}
