package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/bankdoor/bankdoor/internal/events"
	"github.com/bankdoor/bankdoor/internal/metrics"
	"github.com/bankdoor/bankdoor/ledger"
	"github.com/bankdoor/bankdoor/ledger/receipt"
)

// eventsFlag is --events FILE|- of proxy and ledger serve.
type eventsFlag struct{ path string }

func (f *eventsFlag) register(fs *flag.FlagSet) {
	fs.StringVar(&f.path, "events", "", "append one JSON line per durable receipt to FILE (created with mode 0600), or write them to standard output with -, for a SIEM to tail")
}

// eventsHint says how to fix an --events file that cannot be opened.
const eventsHint = "give --events a file in an existing directory that this user can write, or - for standard output"

// checkStdio refuses --events - for the stdio proxy, whose standard
// output is the agent's MCP stream.
func (f *eventsFlag) checkStdio() error {
	if f.path != "-" {
		return nil
	}
	return hint(errors.New("--events -: standard output is the MCP stream to the agent"),
		"give --events a file, e.g. --events bankdoor-events.jsonl (- is for proxy --listen and ledger serve)")
}

// eventsCloseWait bounds how long a stopping command waits for queued
// event lines to be written.
const eventsCloseWait = 5 * time.Second

// eventSink is the running event stream of --events, and what it writes
// to; a nil *eventSink is no --events.
type eventSink struct {
	stream *events.Stream
	file   *os.File       // nil for standard output
	sigs   chan os.Signal // SIGPIPE, caught while writing to standard output
	logger *slog.Logger
}

// open opens --events and starts its stream; it returns nil without
// --events. Writing to standard output, SIGPIPE is caught so that a
// reader that goes away makes writes fail (and the stream warn) instead
// of killing the process.
func (f *eventsFlag) open(stdout io.Writer, logger *slog.Logger) (*eventSink, error) {
	if f.path == "" {
		return nil, nil
	}
	k := &eventSink{logger: logger}
	w := stdout
	if f.path == "-" {
		k.sigs = make(chan os.Signal, 1)
		signal.Notify(k.sigs, syscall.SIGPIPE)
	} else {
		var err error
		if k.file, err = events.OpenFile(f.path); err != nil {
			return nil, hint(fmt.Errorf("--events: %w", err), eventsHint)
		}
		w = k.file
	}
	k.stream = events.New(w, events.Options{Logger: logger})
	return k, nil
}

// count registers the stream's lost lines with reg, if both exist.
func (k *eventSink) count(reg *metrics.Registry) {
	if k != nil && reg != nil {
		reg.EventsDropped(k.stream.Dropped)
	}
}

// durable is the proxy.ReceiptRecorder.Durable of the sink, nil for none.
func (k *eventSink) durable() func(*receipt.Receipt, [32]byte) {
	if k == nil {
		return nil
	}
	return k.stream.Receipt
}

// onCommit returns a ledger.Options.OnCommit that calls next (if not
// nil) and then queues the commit's lines; without --events it is next.
func (k *eventSink) onCommit(next func(ledger.Commit)) func(ledger.Commit) {
	if k == nil {
		return next
	}
	return func(c ledger.Commit) {
		if next != nil {
			next(c)
		}
		k.stream.Committed(c.First, c.Entries)
	}
}

// close writes what is queued, waiting at most eventsCloseWait, and
// closes the file.
func (k *eventSink) close() {
	if k == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), eventsCloseWait)
	defer cancel()
	if err := k.stream.Close(ctx); err != nil {
		k.logger.Warn("closing --events", "err", err)
		return // the writer may still be in a write to the file
	}
	if n := k.stream.Dropped(); n > 0 {
		k.logger.Warn("--events: events were lost", "dropped_total", n, "written_total", k.stream.Written())
	}
	if k.file != nil {
		if err := k.file.Close(); err != nil {
			k.logger.Warn("closing --events", "err", err)
		}
	}
	if k.sigs != nil {
		signal.Stop(k.sigs)
	}
}
