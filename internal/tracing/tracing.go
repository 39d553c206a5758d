// Package tracing builds the OpenTelemetry tracer provider of a bankdoor
// process from the standard OTEL_* environment variables
// (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/
// and https://opentelemetry.io/docs/specs/otel/protocol/exporter/). It
// never touches otel's global state: the provider is returned to the
// caller, who passes it down, and export errors go to the caller's
// slog.Logger, never to otel's global error handler.
//
// # When it is on
//
// Tracing is off unless OTEL_TRACES_EXPORTER is otlp, or it is unset and
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set.
// OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none turn it off. Off, the
// provider is a no-op and Enabled reports false.
//
// # Variables honoured
//
//	OTEL_SDK_DISABLED                      true turns tracing off (false, the default, does not)
//	OTEL_TRACES_EXPORTER                   otlp or none (no other exporter is built in)
//	OTEL_EXPORTER_OTLP_ENDPOINT            base URL; spans go to its /v1/traces
//	OTEL_EXPORTER_OTLP_TRACES_ENDPOINT     the full URL spans are POSTed to
//	OTEL_EXPORTER_OTLP_PROTOCOL,
//	OTEL_EXPORTER_OTLP_TRACES_PROTOCOL     http/protobuf only (the default)
//	OTEL_EXPORTER_OTLP_HEADERS,
//	OTEL_EXPORTER_OTLP_TRACES_HEADERS      key=value,... added to each export
//	OTEL_EXPORTER_OTLP_TIMEOUT,
//	OTEL_EXPORTER_OTLP_TRACES_TIMEOUT      milliseconds per export (default 10000)
//	OTEL_EXPORTER_OTLP_COMPRESSION,
//	OTEL_EXPORTER_OTLP_TRACES_COMPRESSION  gzip or none
//	OTEL_EXPORTER_OTLP_CERTIFICATE, …_CLIENT_CERTIFICATE, …_CLIENT_KEY
//	                                       TLS files (read by the exporter)
//	OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES  the resource (service.name
//	                                       defaults to Options.ServiceName)
//	OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG  the sampler (default
//	                                       parentbased_always_on)
//	OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_EXPORT_TIMEOUT,
//	OTEL_BSP_MAX_QUEUE_SIZE, OTEL_BSP_MAX_EXPORT_BATCH_SIZE  the batch span processor
//
// FromEnv checks every one of them it reads and names the variable of a
// bad value. Only OTLP over HTTP with protobuf bodies is built in (the
// exporter of go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp):
// grpc and http/json are refused with an error that says so, rather than
// exporting in a protocol other than the one asked for.
//
// # What it never does
//
// Spans are exported by a batch span processor: ending a span only puts
// it on a bounded queue (OTEL_BSP_MAX_QUEUE_SIZE, default 2048), and when
// the queue is full the span is dropped, so a slow or unreachable
// endpoint never blocks or slows the caller. A failed export is logged as
// one warning at once, then at most one a minute (WarnInterval) with the
// number of failed exports since, and a line when exports work again.
// Shutdown flushes what is queued within ShutdownTimeout.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// WarnInterval is the least time between two warnings of failed exports.
const WarnInterval = time.Minute

// ShutdownTimeout bounds how long Shutdown waits to flush queued spans.
const ShutdownTimeout = 5 * time.Second

// Options are what the caller knows that the environment does not.
type Options struct {
	ServiceName    string       // service.name unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES sets it
	ServiceVersion string       // service.version, if not ""
	Logger         *slog.Logger // export failures; nil discards them
}

// Provider is a tracer provider built from the environment, with its
// shutdown.
type Provider struct {
	sdk *sdktrace.TracerProvider // nil when tracing is off
	tp  trace.TracerProvider
	// Endpoint is the URL spans are exported to; "" when off.
	Endpoint string
}

// Enabled reports whether spans are exported.
func (p *Provider) Enabled() bool { return p.sdk != nil }

// TracerProvider returns the provider; a no-op one when tracing is off.
func (p *Provider) TracerProvider() trace.TracerProvider { return p.tp }

// Shutdown ends the exporter after flushing the queued spans, waiting at
// most ShutdownTimeout (or until ctx is done). Off, it does nothing.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p.sdk == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, ShutdownTimeout)
	defer cancel()
	if err := p.sdk.Shutdown(ctx); err != nil {
		return fmt.Errorf("flushing traces to %s: %w", p.Endpoint, err)
	}
	return nil
}

// FromEnv builds the provider the OTEL_* variables of the process ask for
// (see the package doc). A bad value is an error naming its variable.
func FromEnv(ctx context.Context, opts Options) (*Provider, error) {
	on, err := enabled(os.Getenv)
	if err != nil || !on {
		return &Provider{tp: noop.NewTracerProvider()}, err
	}
	if err := checkEnv(os.Getenv); err != nil {
		return nil, err
	}
	res, err := newResource(ctx, opts)
	if err != nil {
		return nil, err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("the OTLP/HTTP trace exporter: %w", err)
	}
	endpoint := endpointOf(os.Getenv)
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &warnExporter{next: exp, log: log, endpoint: endpoint, every: WarnInterval, now: time.Now}
	sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(w), sdktrace.WithResource(res))
	return &Provider{sdk: sdk, tp: sdk, Endpoint: endpoint}, nil
}

// enabled applies the rules of "When it is on".
func enabled(getenv func(string) string) (bool, error) {
	switch v := strings.ToLower(strings.TrimSpace(getenv("OTEL_SDK_DISABLED"))); v {
	case "true":
		return false, nil
	case "", "false":
	default:
		return false, fmt.Errorf("OTEL_SDK_DISABLED=%q: want true or false", v)
	}
	switch v := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))); v {
	case "none":
		return false, nil
	case "otlp":
		return true, nil
	case "":
		return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "", nil
	default:
		return false, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: want otlp or none (no other trace exporter is built in)", v)
	}
}

// checkEnv checks the variables the exporter, the sampler and the batch
// span processor read, which would otherwise fall back to defaults with
// a message on otel's global logger.
func checkEnv(getenv func(string) string) error {
	var errs []error
	for _, name := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		if v := strings.TrimSpace(getenv(name)); v != "" && v != "http/protobuf" {
			errs = append(errs, fmt.Errorf("%s=%q: only http/protobuf is built in; set it to http/protobuf and point the endpoint at the collector's OTLP/HTTP port (4318)", name, v))
		}
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		if v := getenv(name); v != "" {
			if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				errs = append(errs, fmt.Errorf("%s=%q: want an http:// or https:// URL with a host, e.g. http://localhost:4318", name, v))
			}
		}
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_COMPRESSION", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION"} {
		if v := strings.TrimSpace(getenv(name)); v != "" && v != "gzip" && v != "none" {
			errs = append(errs, fmt.Errorf("%s=%q: want gzip or none", name, v))
		}
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		for h := range strings.SplitSeq(getenv(name), ",") {
			if k, _, ok := strings.Cut(h, "="); strings.TrimSpace(h) != "" && (!ok || strings.TrimSpace(k) == "") {
				errs = append(errs, fmt.Errorf("%s: %q is not key=value; write key1=value1,key2=value2", name, h))
			}
		}
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
		"OTEL_BSP_SCHEDULE_DELAY", "OTEL_BSP_EXPORT_TIMEOUT", "OTEL_BSP_MAX_QUEUE_SIZE", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"} {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			if n, err := strconv.Atoi(v); err != nil || n <= 0 {
				errs = append(errs, fmt.Errorf("%s=%q: want a whole number greater than 0", name, v))
			}
		}
	}
	for kv := range strings.SplitSeq(getenv("OTEL_RESOURCE_ATTRIBUTES"), ",") {
		k, v, ok := strings.Cut(kv, "=")
		if _, err := url.PathUnescape(strings.TrimSpace(v)); strings.TrimSpace(kv) != "" && (!ok || strings.TrimSpace(k) == "" || err != nil) {
			errs = append(errs, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %q is not key=value with the value percent-encoded; write key1=value1,key2=value2", kv))
		}
	}
	errs = append(errs, checkSampler(getenv))
	return errors.Join(errs...)
}

// samplers are the values of OTEL_TRACES_SAMPLER, and whether each takes
// OTEL_TRACES_SAMPLER_ARG (a ratio).
var samplers = map[string]bool{
	"always_on": false, "always_off": false, "traceidratio": true,
	"parentbased_always_on": false, "parentbased_always_off": false, "parentbased_traceidratio": true,
}

func checkSampler(getenv func(string) string) error {
	s := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER")))
	if s == "" {
		return nil
	}
	ratio, known := samplers[s]
	if !known {
		return fmt.Errorf("OTEL_TRACES_SAMPLER=%q: want one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio", s)
	}
	arg := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER_ARG"))
	if !ratio || arg == "" {
		return nil
	}
	if v, err := strconv.ParseFloat(arg, 64); err != nil || v < 0 || v > 1 {
		return fmt.Errorf("OTEL_TRACES_SAMPLER_ARG=%q: want a ratio from 0 to 1, e.g. 0.25", arg)
	}
	return nil
}

// newResource is service.name and service.version, then what
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES say, which win.
func newResource(ctx context.Context, opts Options) (*resource.Resource, error) {
	attrs := []attribute.KeyValue{attribute.String("service.name", opts.ServiceName)}
	if opts.ServiceVersion != "" {
		attrs = append(attrs, attribute.String("service.version", opts.ServiceVersion))
	}
	res, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithAttributes(attrs...), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES or OTEL_SERVICE_NAME: %w; write key1=value1,key2=value2 with values percent-encoded", err)
	}
	return res, nil
}

// endpointOf is the URL the exporter POSTs spans to, for messages.
func endpointOf(getenv func(string) string) string {
	if v := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); v != "" {
		return v
	}
	if v := getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); v != "" {
		return strings.TrimSuffix(v, "/") + "/v1/traces"
	}
	return "http://localhost:4318/v1/traces"
}

// warnExporter passes spans on and turns failed exports into rate-limited
// warnings. It never returns an export's error: the batch span processor
// would hand it to otel's global error handler.
type warnExporter struct {
	next     sdktrace.SpanExporter
	log      *slog.Logger
	endpoint string
	every    time.Duration
	now      func() time.Time

	mu      sync.Mutex
	warned  time.Time // of the last warning
	failed  int       // failed exports since the last warning
	dropped int       // spans in them
	failing bool      // the last export failed
}

func (w *warnExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	w.note(w.next.ExportSpans(ctx, spans), len(spans))
	return nil
}

func (w *warnExporter) Shutdown(ctx context.Context) error { return w.next.Shutdown(ctx) }

// note logs the outcome of one export if it is news: the first failure,
// a failure a WarnInterval after the last warning, or the first success
// after failures.
func (w *warnExporter) note(err error, spans int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil {
		if w.failing {
			w.log.Warn("exporting traces works again", "endpoint", w.endpoint)
		}
		w.failing, w.failed, w.dropped = false, 0, 0
		return
	}
	w.failed++
	w.dropped += spans
	now := w.now()
	if w.failing && now.Sub(w.warned) < w.every {
		return
	}
	w.log.Warn("cannot export traces; spans are dropped, the proxy goes on",
		"endpoint", w.endpoint, "err", err, "failed_exports", w.failed, "dropped_spans", w.dropped)
	w.failing, w.warned, w.failed, w.dropped = true, now, 0, 0
}
