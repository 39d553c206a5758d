package main_test

import (
	"compress/gzip"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	ledgerv1 "github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1"
)

// otlpReceiver is an OTLP/HTTP trace endpoint (POST /v1/traces,
// application/x-protobuf), as a collector serves it, keeping every span
// with its resource's service.name.
type otlpReceiver struct {
	t  *testing.T
	mu sync.Mutex
	// spans by service.name
	spans map[string][]*tracepb.Span
}

func newOTLPReceiver(t *testing.T) (*otlpReceiver, string) {
	rcv := &otlpReceiver{t: t, spans: make(map[string][]*tracepb.Span)}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	return rcv, srv.URL
}

func (rcv *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		rcv.t.Errorf("the OTLP endpoint got %s %s (%s), want POST /v1/traces application/x-protobuf", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
		http.Error(w, "want POST /v1/traces", http.StatusBadRequest)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	var req coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(b, &req)
	}
	if err != nil {
		rcv.t.Errorf("the OTLP endpoint got a body it cannot decode: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rcv.mu.Lock()
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			rcv.spans[service] = append(rcv.spans[service], ss.GetSpans()...)
		}
	}
	rcv.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func (rcv *otlpReceiver) of(service string) []*tracepb.Span {
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	return slices.Clone(rcv.spans[service])
}

// serverSpan returns the one SERVER span named name.
func serverSpan(t *testing.T, spans []*tracepb.Span, name string) *tracepb.Span {
	t.Helper()
	var found []*tracepb.Span
	for _, s := range spans {
		if s.GetName() == name && s.GetKind() == tracepb.Span_SPAN_KIND_SERVER {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d SERVER spans %q among %q, want 1", len(found), name, spanNames(spans))
	}
	return found[0]
}

func spanNames(spans []*tracepb.Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.GetKind().String()+" "+s.GetName())
	}
	return out
}

// childNames are the kinds and names of the children of parent, sorted.
func childNames(parent *tracepb.Span, spans []*tracepb.Span) []string {
	var out []string
	for _, s := range spans {
		if string(s.GetParentSpanId()) == string(parent.GetSpanId()) && string(s.GetTraceId()) == string(parent.GetTraceId()) {
			out = append(out, strings.TrimPrefix(s.GetKind().String(), "SPAN_KIND_")+" "+s.GetName())
		}
	}
	slices.Sort(out)
	return out
}

func spanAttr(s *tracepb.Span, key string) string {
	for _, kv := range s.GetAttributes() {
		if kv.GetKey() == key {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

// TestE2ETraces runs the built proxy in front of the fixture bank with
// OTEL_EXPORTER_OTLP_ENDPOINT at a real OTLP/HTTP endpoint and checks the
// span trees of an allowed call and a denied one.
func TestE2ETraces(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rcv, url := newOTLPReceiver(t)
	cmd := w.proxy(w.fixture()).Command()
	cmd.Env = append(cmd.Env, "OTEL_EXPORTER_OTLP_ENDPOINT="+url, "OTEL_BSP_SCHEDULE_DELAY=20", "OTEL_SERVICE_NAME=bankdoor-e2e")
	s := start(t, cmd, nil)
	ctx := testContext(t, time.Minute)
	if _, err := s.Client().CallTool(ctx, &mcp.CallToolParams{Name: "get_balances"}); err != nil {
		t.Fatalf("allowed call: %v", err)
	}
	_, err := s.Client().CallTool(ctx, &mcp.CallToolParams{Name: "pay_bill", Arguments: map[string]any{"payee": "x", "amount_cents": 1}})
	receipt := deniedWith(t, w, err, "name.write_word")
	if err := s.Close(); err != nil { // the proxy flushes its spans as it exits
		t.Fatal(err)
	}
	spans := rcv.of("bankdoor-e2e")

	allowed := serverSpan(t, spans, "tools/call get_balances")
	if got, want := childNames(allowed, spans), []string{"CLIENT tools/call get_balances", "INTERNAL bankdoor.gate", "INTERNAL bankdoor.gate"}; !slices.Equal(got, want) {
		t.Errorf("children of the allowed call's span = %q, want %q", got, want)
	}
	for k, v := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "get_balances", "bankdoor.decision": "allow", "mcp.protocol.version": "2025-11-25"} {
		if got := spanAttr(allowed, k); got != v {
			t.Errorf("allowed call: %s = %q, want %q", k, got, v)
		}
	}

	denied := serverSpan(t, spans, "tools/call pay_bill")
	if got, want := childNames(denied, spans), []string{"INTERNAL bankdoor.gate", "INTERNAL bankdoor.receipt.write"}; !slices.Equal(got, want) {
		t.Errorf("children of the denied call's span = %q, want %q", got, want)
	}
	for k, v := range map[string]string{"bankdoor.decision": "deny", "bankdoor.rule": "name.write_word", "bankdoor.receipt": receipt, "error.type": "-32001"} {
		if got := spanAttr(denied, k); got != v {
			t.Errorf("denied call: %s = %q, want %q", k, got, v)
		}
	}
	if st := denied.GetStatus(); st.GetCode() != tracepb.Status_STATUS_CODE_ERROR || st.GetMessage() != "name.write_word" {
		t.Errorf("denied call: status %v, want ERROR name.write_word", st)
	}
}

// TestE2ETracesUnreachable: with OTEL_EXPORTER_OTLP_ENDPOINT at a closed
// port the proxy answers every call, warns on stderr, and exits cleanly.
func TestE2ETracesUnreachable(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	cmd := w.proxy(w.fixture()).Command()
	cmd.Env = append(cmd.Env, "OTEL_EXPORTER_OTLP_ENDPOINT="+closed, "OTEL_BSP_SCHEDULE_DELAY=20")
	s := start(t, cmd, nil)
	ctx := testContext(t, time.Minute)
	for range 20 {
		if _, err := s.Client().CallTool(ctx, &mcp.CallToolParams{Name: "get_balances"}); err != nil {
			t.Fatalf("allowed call with tracing unreachable: %v", err)
		}
		_, err := s.Client().CallTool(ctx, &mcp.CallToolParams{Name: "pay_bill"})
		var we *jsonrpc.Error
		if !errors.As(err, &we) || !strings.Contains(we.Message, "name.write_word") {
			t.Fatalf("denied call with tracing unreachable: %v", err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	stderr := s.Stderr()
	if !strings.Contains(stderr, "cannot export traces") || !strings.Contains(stderr, closed+"/v1/traces") {
		t.Errorf("stderr = %q, want a warning that traces cannot be exported to %s/v1/traces", stderr, closed)
	}
	if n := strings.Count(stderr, "cannot export traces"); n > 1 {
		t.Errorf("%d warnings within a minute, want 1:\n%s", n, stderr)
	}
}

// TestE2ELedgerTraces: ledger serve with OTEL_EXPORTER_OTLP_ENDPOINT set
// traces its Connect RPCs (otelconnect) and flushes them as it stops.
func TestE2ELedgerTraces(t *testing.T) {
	t.Parallel()
	rcv, url := newOTLPReceiver(t)
	w := newLedgerWorld(t)
	w.env = []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + url, "OTEL_BSP_SCHEDULE_DELAY=20"}
	s := w.serve()
	if _, err := s.jsonClient().GetCheckpoint(t.Context(), connect.NewRequest(&ledgerv1.GetCheckpointRequest{})); err != nil {
		t.Fatal(err)
	}
	if code := s.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("ledger serve exited %d:\n%s", code, s.output())
	}
	spans := rcv.of("bankdoor-ledger")
	rpc := serverSpan(t, spans, "bankdoor.ledger.v1.LedgerService/GetCheckpoint")
	if got := spanAttr(rpc, "rpc.system.name") + spanAttr(rpc, "rpc.system"); got == "" {
		t.Errorf("the RPC span has no rpc.system attribute: %v", rpc.GetAttributes())
	}
}
