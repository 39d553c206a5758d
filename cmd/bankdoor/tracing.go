package main

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"

	"connectrpc.com/connect"
	"connectrpc.com/otelconnect"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/bankdoor/bankdoor/internal/tracing"
)

// startTracing builds the tracer provider the OTEL_* environment asks
// for (package internal/tracing; off unless an OTLP endpoint is set). A
// bad value stops the command; an endpoint that cannot be reached is only
// warned about, on logger, while the command goes on.
func startTracing(service string, logger *slog.Logger) (*tracing.Provider, error) {
	version := ""
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "(devel)" {
		version = bi.Main.Version
	}
	p, err := tracing.FromEnv(context.Background(), tracing.Options{ServiceName: service, ServiceVersion: version, Logger: logger})
	if err != nil {
		return nil, hint(fmt.Errorf("tracing: %w", err),
			"fix or unset the OTEL_* variable named; tracing is off unless OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_TRACES_EXPORTER=otlp) is set")
	}
	return p, nil
}

// stopTracing flushes the spans still queued, for at most
// tracing.ShutdownTimeout.
func stopTracing(e *env, p *tracing.Provider) {
	if err := p.Shutdown(context.Background()); err != nil {
		e.warningf("tracing: %v", err)
	}
}

// proxyTracer is the relay's tracer, nil (no tracing at all) when off.
func proxyTracer(p *tracing.Provider) trace.Tracer {
	if !p.Enabled() {
		return nil
	}
	return p.TracerProvider().Tracer("github.com/bankdoor/bankdoor/proxy")
}

// connectTracing is the otelconnect interceptor for the ledger's Connect
// server or client as an option, none when tracing is off. Trace context
// travels in the W3C traceparent header; metrics are left to the
// process's own metrics.
func connectTracing(p *tracing.Provider) ([]connect.Option, error) {
	if !p.Enabled() {
		return nil, nil
	}
	i, err := otelconnect.NewInterceptor(otelconnect.WithTracerProvider(p.TracerProvider()),
		otelconnect.WithPropagator(propagation.TraceContext{}), otelconnect.WithoutMetrics())
	if err != nil {
		return nil, fmt.Errorf("tracing the ledger's RPCs: %w", err)
	}
	return []connect.Option{connect.WithInterceptors(i)}, nil
}

// handlerOptions are opts as a Connect handler's options.
func handlerOptions(opts []connect.Option) []connect.HandlerOption {
	out := make([]connect.HandlerOption, len(opts))
	for i, o := range opts {
		out[i] = o
	}
	return out
}
