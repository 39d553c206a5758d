// Package events writes bankdoor's receipt event stream: one line of JSON
// per durable receipt, for the log shipper of a SIEM to tail. The stream
// is JSON Lines (https://jsonlines.org, also called NDJSON): one JSON
// object (RFC 8259) per line, which Filebeat, Elastic Agent, Fluent Bit,
// Vector and the Splunk Universal Forwarder read as one event each.
//
// # Line Format
//
// A line is the receipt file's bytes (see package ledger/receipt: one
// JSON object in RFC 8785 canonical form, members sorted, no white space,
// no trailing newline) with its closing "}" replaced by
//
//	,"file":"NAME","receipt_sha256":"HASH"}
//
// or, for a receipt that a ledger committed to its log,
//
//	,"file":"NAME","index":INDEX,"receipt_sha256":"HASH"}
//
// and followed by one line feed (0x0A). NAME is the receipt's file name,
// the receipt.FileName of its seq (000001.json for seq 1); INDEX is its
// leaf index in the log, in plain decimal; HASH is the receipt hash, the
// SHA-256 of the receipt file's bytes in 64 lower-case hex digits (the
// prev of the receipt that follows it).
//
// So a line holds at top level the receipt's fifteen members (arg_names,
// args_sha256, decision, key_id, policy_id, policy_sha256, prev, reason,
// rule, seq, server, sig, time, tool, v) exactly as the file has them,
// then file, index (ledger only) and receipt_sha256. The receipt file
// is the line up to its first `,"file":` (never inside a string, where a
// quotation mark is always escaped), plus "}"; its SHA-256 is
// receipt_sha256 and its signature checks as the receipt package says. A line is UTF-8 and holds no line feed but its
// last byte: JSON escapes control characters inside strings. Like a
// receipt, a line never holds an argument value, only the argument
// names (arg_names) and the SHA-256 of the arguments (args_sha256).
// Member tool and arg_names are what the agent sent, so a SIEM should
// treat them as untrusted text.
//
// # Example
//
// The receipt of seq 1 signed by the Ed25519 key whose seed is 32 zero
// bytes, denying pay_bill at 2026-01-02T03:04:05.678Z (args_sha256 is
// the SHA-256 of {"amount_cents":5000,"payee":"acc_mallory"}, whose
// values appear nowhere else; policy_sha256 that of the 6 bytes
// "policy"), written by a proxy, is this line (one line, no line breaks
// inside):
//
//	{"arg_names":["amount_cents","payee"],"args_sha256":"4767470b860ccab7e46f9e1103a1195d3aedfe6e8f9c3167f3594f6ba8c4b71b","decision":"deny","key_id":"139e3940e64b5491","policy_id":"bankdoor-fixture-readonly","policy_sha256":"823412d1eacb67956220e532959f0104603057c88704863ca38e7cd188fda812","prev":"0000000000000000000000000000000000000000000000000000000000000000","reason":"tool name \"pay_bill\" spells the payment/write word \"pay\"","rule":"name.write_word","seq":1,"server":"bank","sig":"HoJd7irNSdQwodt2qwDG5ZYZs1kmNo7ZGGydhHtcr5brHZA6Io76Z9wAQBTU3LZLtNsG+E5jrln2qNblcmFrBg==","time":"2026-01-02T03:04:05.678Z","tool":"pay_bill","v":1,"file":"000001.json","receipt_sha256":"2f649db90167b6315af7c53e2de3f01ec080e18e24ba0e983650959b9437c16d"}
//
// A ledger that committed it at leaf index 41 writes the same line with
// "index":41 between file and receipt_sha256.
//
// # Delivery
//
// A [Stream] never slows or stops its caller, the gate or the ledger's
// committer: [Stream.Receipt] and [Stream.Committed] only queue, and one
// goroutine encodes and writes. When the queue is full the line is
// dropped; when a write fails (a full disk, a reader that went away) the
// line is lost and the stream goes on with the next one. Both are counted
// ([Stream.Dropped]) and logged as warnings, at most one of each kind per
// Options.WarnEvery. Lines are written in the order they were queued,
// each with one write call, so a file opened with [OpenFile] (O_APPEND)
// never holds half a line from us between two of ours, and a tailer
// sees each line whole once it ends in its line feed.
package events

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bankdoor/bankdoor/ledger/receipt"
)

// Defaults of Options.
const (
	DefaultQueue     = 4096
	DefaultWarnEvery = time.Minute
)

// Line returns the event line of the receipt file b, written by a proxy
// (no index). It fails if b is not a receipt receipt.Parse accepts.
func Line(b []byte) ([]byte, error) { return line(b, 0, false) }

// IndexedLine returns the event line of the receipt file b that a ledger
// committed at leaf index.
func IndexedLine(b []byte, index uint64) ([]byte, error) { return line(b, index, true) }

func line(b []byte, index uint64, indexed bool) ([]byte, error) {
	r, err := receipt.Parse(b)
	if err != nil {
		return nil, err
	}
	sum := receipt.Hash(b)
	out := make([]byte, 0, len(b)+160)
	out = append(out, b[:len(b)-1]...) // Parse accepted b: it ends in "}"
	out = append(out, `,"file":"`...)
	out = append(out, receipt.FileName(r.Seq)...)
	out = append(out, '"')
	if indexed {
		out = append(out, `,"index":`...)
		out = strconv.AppendUint(out, index, 10)
	}
	out = append(out, `,"receipt_sha256":"`...)
	out = hex.AppendEncode(out, sum[:])
	return append(out, "\"}\n"...), nil
}

// OpenFile opens path for a Stream: created with mode 0600 if it does not
// exist, appended to if it does. It fails at once on a directory, a
// directory that does not exist or a file that cannot be written, and on
// a FIFO that nobody reads (rather than waiting for a reader).
func OpenFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NONBLOCK, 0o600)
	if errors.Is(err, syscall.ENXIO) {
		return nil, fmt.Errorf("open %s: a FIFO that no process reads", path)
	}
	return f, err
}

// Options configure a Stream.
type Options struct {
	// Queue is how many lines may wait to be written; 0 or less means
	// DefaultQueue. A line queued while it is full is dropped.
	Queue int
	// Logger gets the warnings about lost lines; nil discards them.
	Logger *slog.Logger
	// WarnEvery is the least time between two warnings of one kind
	// (dropped, write failed); 0 means DefaultWarnEvery.
	WarnEvery time.Duration
}

// item is one queued line: a signed receipt with its hash (from a proxy)
// or a receipt file with its index (from a ledger).
type item struct {
	r       *receipt.Receipt
	sum     [32]byte
	file    []byte
	index   uint64
	indexed bool
}

// Stream writes event lines to one io.Writer. Its methods are safe for
// concurrent use.
type Stream struct {
	w       io.Writer
	logger  *slog.Logger
	every   time.Duration
	queue   chan item
	done    chan struct{}
	dropped atomic.Uint64 // lines lost: queue full, write failed, not a receipt
	written atomic.Uint64

	mu     sync.RWMutex // orders sends on queue before Close closes it
	closed bool

	dropWarn   rateLimit // queue full, on the callers' goroutines
	writeWarn  rateLimit // on the writer goroutine
	resumeWarn rateLimit // on the writer goroutine
	failing    bool      // the last write failed; writer goroutine only
}

// New starts a Stream writing to w. Close stops it; New never closes w.
func New(w io.Writer, opts Options) *Stream {
	n := opts.Queue
	if n <= 0 {
		n = DefaultQueue
	}
	s := &Stream{w: w, logger: opts.Logger, every: opts.WarnEvery, queue: make(chan item, n), done: make(chan struct{})}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if s.every == 0 {
		s.every = DefaultWarnEvery
	}
	go s.run()
	return s
}

// Receipt queues the line of r, a receipt a proxy has just made durable,
// whose file hashes to sum (receipt.Writer.Write returns both). The
// Stream keeps a copy of r. It never blocks.
func (s *Stream) Receipt(r *receipt.Receipt, sum [32]byte) {
	c := *r
	s.add(item{r: &c, sum: sum})
}

// Committed queues the lines of receipt files a ledger committed at leaf
// indexes first, first+1, ... (a ledger.Commit's First and Entries). It
// copies files and never blocks.
func (s *Stream) Committed(first uint64, files [][]byte) {
	for i, f := range files {
		s.add(item{file: bytes.Clone(f), index: first + uint64(i), indexed: true})
	}
}

func (s *Stream) add(it item) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		s.lost(1)
		return
	}
	select {
	case s.queue <- it:
	default:
		n := s.lost(1)
		if s.dropWarn.allow(s.every) {
			s.logger.Warn("event stream: queue full, events dropped; the sink is slower than the decisions",
				"queue", cap(s.queue), "dropped_total", n)
		}
	}
}

func (s *Stream) lost(n uint64) uint64 { return s.dropped.Add(n) }

// Dropped returns the number of lines lost since New: dropped while the
// queue was full or the Stream closed, not written because a write
// failed, or not made because the receipt did not encode.
func (s *Stream) Dropped() uint64 { return s.dropped.Load() }

// Written returns the number of lines written since New.
func (s *Stream) Written() uint64 { return s.written.Load() }

// run is the writer goroutine.
func (s *Stream) run() {
	defer close(s.done)
	for it := range s.queue {
		s.write(it)
	}
}

func (s *Stream) write(it item) {
	b, err := it.line()
	if err != nil {
		n := s.lost(1)
		s.logger.Warn("event stream: receipt not encoded, event dropped", "err", err, "dropped_total", n)
		return
	}
	if _, err := s.w.Write(b); err != nil {
		n := s.lost(1)
		if s.writeWarn.allow(s.every) {
			s.logger.Warn("event stream: write failed, events are being lost", "err", err, "dropped_total", n)
		}
		s.failing = true
		return
	}
	if s.failing {
		s.failing = false
		if s.resumeWarn.allow(s.every) {
			s.logger.Warn("event stream: writing again", "dropped_total", s.dropped.Load())
		}
	}
	s.written.Add(1)
}

func (it item) line() ([]byte, error) {
	if it.r == nil {
		return line(it.file, it.index, it.indexed)
	}
	file, err := it.r.Marshal()
	if err != nil {
		return nil, err
	}
	if receipt.Hash(file) != it.sum {
		return nil, fmt.Errorf("receipt seq %d encodes to bytes that do not hash to the written file's %x", it.r.Seq, it.sum)
	}
	return line(file, 0, false)
}

// Close stops taking lines and waits until the queued ones are written
// or ctx ends. If ctx ends first, Close returns an error saying how many
// lines were still queued; the writer goroutine, stuck in a write, is
// left behind. Close does not close the Stream's writer.
func (s *Stream) Close(ctx context.Context) error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.queue)
	}
	s.mu.Unlock()
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("event stream: %d events not written: %w", len(s.queue), ctx.Err())
	}
}

// rateLimit lets one event through per interval.
type rateLimit struct{ last atomic.Int64 } // unix nanoseconds; 0 never

func (l *rateLimit) allow(every time.Duration) bool {
	now := time.Now().UnixNano()
	last := l.last.Load()
	if last != 0 && now-last < int64(every) {
		return false
	}
	return l.last.CompareAndSwap(last, now)
}
