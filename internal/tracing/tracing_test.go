package tracing

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestEnabled(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
		err  string
	}{
		{env: nil, want: false},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, want: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, want: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, want: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, want: false},
		{env: map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, want: false},
		{env: map[string]string{"OTEL_SDK_DISABLED": "TRUE", "OTEL_TRACES_EXPORTER": "otlp"}, want: false},
		{env: map[string]string{"OTEL_SDK_DISABLED": "yes"}, err: `OTEL_SDK_DISABLED="yes": want true or false`},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, err: `OTEL_TRACES_EXPORTER="zipkin": want otlp or none`},
	} {
		got, err := enabled(env(c.env))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("enabled(%v) = %v, want error %q", c.env, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("enabled(%v) = %v, %v; want %v", c.env, got, err, c.want)
		}
	}
}

func TestCheckEnv(t *testing.T) {
	for _, c := range []struct{ name, value, err string }{
		{"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "only http/protobuf is built in"},
		{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json", "only http/protobuf is built in"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318", "want an http:// or https:// URL"},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "ftp://c/", "want an http:// or https:// URL"},
		{"OTEL_EXPORTER_OTLP_COMPRESSION", "zstd", "want gzip or none"},
		{"OTEL_EXPORTER_OTLP_HEADERS", "a=b,c", `"c" is not key=value`},
		{"OTEL_EXPORTER_OTLP_TIMEOUT", "10s", "want a whole number"},
		{"OTEL_BSP_SCHEDULE_DELAY", "0", "want a whole number greater than 0"},
		{"OTEL_BSP_MAX_QUEUE_SIZE", "-1", "want a whole number greater than 0"},
		{"OTEL_TRACES_SAMPLER", "sometimes", "want one of always_on"},
		{"OTEL_RESOURCE_ATTRIBUTES", "a=%zz", "is not key=value"},
		{"OTEL_RESOURCE_ATTRIBUTES", "a=b,c", "is not key=value"},
	} {
		err := checkEnv(env(map[string]string{c.name: c.value}))
		if err == nil || !strings.Contains(err.Error(), c.name) || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s=%s: got %v, want an error naming it with %q", c.name, c.value, err, c.err)
		}
	}
	err := checkEnv(env(map[string]string{"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"}))
	if err == nil || !strings.Contains(err.Error(), "OTEL_TRACES_SAMPLER_ARG") {
		t.Errorf("ratio 2: got %v, want an error naming OTEL_TRACES_SAMPLER_ARG", err)
	}
	good := map[string]string{
		"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_ENDPOINT": "https://c:4318",
		"OTEL_EXPORTER_OTLP_HEADERS": "a=b, c=d", "OTEL_BSP_SCHEDULE_DELAY": "50", "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=prod,x=a%20b",
		"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.5",
	}
	if err := checkEnv(env(good)); err != nil {
		t.Errorf("good values: %v", err)
	}
}

// TestFromEnvOff checks that no variable means a no-op provider.
func TestFromEnvOff(t *testing.T) {
	for _, k := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		t.Setenv(k, "")
	}
	p, err := FromEnv(t.Context(), Options{ServiceName: "bankdoor"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Enabled() {
		t.Fatal("tracing on with no OTEL_* variable")
	}
	_, span := p.TracerProvider().Tracer("t").Start(t.Context(), "x")
	if span.SpanContext().IsValid() {
		t.Error("the off provider made a real span")
	}
	if err := p.Shutdown(t.Context()); err != nil {
		t.Error(err)
	}
}

// TestFromEnvExports checks that spans reach an OTLP/HTTP endpoint named
// by OTEL_EXPORTER_OTLP_ENDPOINT, with the service name of the options.
func TestFromEnvExports(t *testing.T) {
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		b.ReadFrom(r.Body)
		got.Store(r.Method + " " + r.URL.Path + " " + r.Header.Get("Content-Type") + " " + b.String())
	}))
	defer srv.Close()
	t.Setenv("OTEL_SDK_DISABLED", "")
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	p, err := FromEnv(t.Context(), Options{ServiceName: "bankdoor-test"})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Enabled() || p.Endpoint != srv.URL+"/v1/traces" {
		t.Fatalf("enabled %v, endpoint %q", p.Enabled(), p.Endpoint)
	}
	_, span := p.TracerProvider().Tracer("t").Start(t.Context(), "the-span")
	span.End()
	if err := p.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	s, _ := got.Load().(string)
	for _, want := range []string{"POST /v1/traces application/x-protobuf", "the-span", "bankdoor-test"} {
		if !strings.Contains(s, want) {
			t.Errorf("the endpoint got %q, want %q in it", s, want)
		}
	}
}

// TestFromEnvBadValue checks that a bad value stops FromEnv with its name.
func TestFromEnvBadValue(t *testing.T) {
	t.Setenv("OTEL_SDK_DISABLED", "")
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	if _, err := FromEnv(t.Context(), Options{}); err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_PROTOCOL") {
		t.Fatalf("got %v, want an error naming OTEL_EXPORTER_OTLP_PROTOCOL", err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "a=%zz")
	if _, err := FromEnv(t.Context(), Options{}); err == nil || !strings.Contains(err.Error(), "OTEL_RESOURCE_ATTRIBUTES") {
		t.Fatalf("got %v, want an error naming OTEL_RESOURCE_ATTRIBUTES", err)
	}
}

// TestWarnExporter checks the warnings of failed exports against a real
// OTLP/HTTP exporter whose endpoint refuses, then accepts: one warning at
// once, none for failures within the interval, one after it with the
// count, one when exports work again; and no error to the caller.
func TestWarnExporter(t *testing.T) {
	var refuse atomic.Bool
	refuse.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuse.Load() {
			http.Error(w, "no", http.StatusBadRequest) // not retried
		}
	}))
	defer srv.Close()
	exp, err := otlptracehttp.New(t.Context(), otlptracehttp.WithEndpointURL(srv.URL+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	now := time.Unix(0, 0)
	w := &warnExporter{next: exp, log: slog.New(slog.NewTextHandler(&logs, nil)), endpoint: srv.URL,
		every: time.Minute, now: func() time.Time { return now }}
	spans := spansOf(t, 2)
	export := func() {
		t.Helper()
		if err := w.ExportSpans(context.Background(), spans); err != nil {
			t.Fatalf("ExportSpans returned %v; it must never return an error", err)
		}
	}
	count := func(s string) int { return strings.Count(logs.String(), s) }

	export()
	if count("cannot export traces") != 1 || count("failed_exports=1 dropped_spans=2") != 1 {
		t.Fatalf("after one failure:\n%s", logs.String())
	}
	now = now.Add(30 * time.Second)
	export()
	export()
	if count("cannot export traces") != 1 {
		t.Fatalf("warned again within the interval:\n%s", logs.String())
	}
	now = now.Add(31 * time.Second)
	export()
	if count("cannot export traces") != 2 || count("failed_exports=3 dropped_spans=6") != 1 {
		t.Fatalf("after the interval:\n%s", logs.String())
	}
	refuse.Store(false)
	export()
	export()
	if count("exporting traces works again") != 1 {
		t.Fatalf("after recovery:\n%s", logs.String())
	}
}

func spansOf(t *testing.T, n int) []sdktrace.ReadOnlySpan {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	for range n {
		_, s := tp.Tracer("t").Start(t.Context(), "s")
		s.End()
	}
	return rec.Ended()
}
