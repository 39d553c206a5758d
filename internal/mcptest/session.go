package mcptest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ProtocolVersion is the MCP version the client asks for. Naming it keeps
// the v1.8 SDK client from probing server/discover first, which bankdoor
// does not relay.
const ProtocolVersion = "2025-11-25"

// Options configure Start. The zero value is usable.
type Options struct {
	// ConnectTimeout bounds starting the program and the initialize
	// handshake; 0 means 30 seconds.
	ConnectTimeout time.Duration
	// Client configures the SDK client, e.g. its ToolListChangedHandler.
	Client *mcp.ClientOptions
	// CloseTimeout is how long Close waits for the program to exit after
	// its stdin closed before it kills it; 0 means 10 seconds.
	CloseTimeout time.Duration
}

// Session is one MCP stdio session with a child process.
type Session struct {
	cmd    *exec.Cmd
	stdin  *lineWriter
	client *mcp.ClientSession
	stderr SyncBuffer

	ids         atomic.Int64
	rawMu       sync.Mutex // one raw exchange at a time; guards unsolicited
	raw         *rawQueue
	unsolicited [][]byte

	closeTimeout time.Duration
	closeOnce    sync.Once
	exited       chan struct{} // closed once the process has been reaped
	waitErr      error         // set before exited is closed
}

// Start starts cmd, which must not have Stdin or Stdout set, and connects
// the SDK client to it. The child's stderr is captured (see Stderr) and
// also copied to cmd.Stderr if that is set. On error the process is
// killed and reaped, and the error includes its stderr.
func Start(ctx context.Context, cmd *exec.Cmd, opts *Options) (*Session, error) {
	if opts == nil {
		opts = &Options{}
	}
	s := &Session{cmd: cmd, raw: newRawQueue(), exited: make(chan struct{}),
		closeTimeout: orDefault(opts.CloseTimeout, 10*time.Second)}
	stdout, err := s.startProcess()
	if err != nil {
		return nil, err
	}
	toClient, fromDemux := io.Pipe()
	go s.demux(stdout, fromDemux)

	cctx, cancel := context.WithTimeout(ctx, orDefault(opts.ConnectTimeout, 30*time.Second))
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "bankdoor-mcptest", Version: "1.0.0"}, opts.Client)
	cs, err := client.Connect(cctx, &mcp.IOTransport{Reader: toClient, Writer: s.stdin},
		&mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	if err != nil {
		s.kill()
		return nil, fmt.Errorf("connecting the MCP client to %s: %w%s", cmd.Path, err, s.stderrTail())
	}
	s.client = cs
	return s, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// startProcess wires the pipes and starts the child.
func (s *Session) startProcess() (io.Reader, error) {
	stdin, err := s.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if s.cmd.Stderr != nil {
		s.cmd.Stderr = io.MultiWriter(s.cmd.Stderr, &s.stderr)
	} else {
		s.cmd.Stderr = &s.stderr
	}
	if s.cmd.WaitDelay == 0 {
		// A grandchild (the bank behind the proxy) holding our stderr
		// open must not make Wait hang.
		s.cmd.WaitDelay = 5 * time.Second
	}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", s.cmd.Path, err)
	}
	s.stdin = &lineWriter{w: stdin}
	return stdout, nil
}

// Client returns the SDK client session.
func (s *Session) Client() *mcp.ClientSession { return s.client }

// Stderr returns everything the child wrote to stderr so far.
func (s *Session) Stderr() string { return s.stderr.String() }

// Exited is closed once the child has exited and been reaped.
func (s *Session) Exited() <-chan struct{} { return s.exited }

// Wait waits for the child to exit and returns its exit status (-1 if it
// was killed by a signal); the error is ctx's if it is done first.
func (s *Session) Wait(ctx context.Context) (int, error) {
	select {
	case <-s.exited:
		return s.cmd.ProcessState.ExitCode(), nil
	case <-ctx.Done():
		return 0, fmt.Errorf("waiting for %s to exit: %w", s.cmd.Path, ctx.Err())
	}
}

// Close ends the session: it closes the SDK client, and with it the
// child's stdin, then waits for the child to exit, killing it after
// Options.CloseTimeout. It returns the child's exit error (nil for
// status 0), an error saying it had to be killed, or an error if the
// child's stderr reports a data race (the race detector's report, from
// the program or from a program it started, such as the bank behind the
// proxy).
func (s *Session) Close() error {
	var err error
	s.closeOnce.Do(func() {
		if s.client != nil {
			s.client.Close()
		}
		s.stdin.Close()
		select {
		case <-s.exited:
			err = s.waitErr
		case <-time.After(s.closeTimeout):
			s.kill()
			err = fmt.Errorf("%s did not exit within %v of its stdin closing; killed it%s", s.cmd.Path, s.closeTimeout, s.stderrTail())
		}
		if err == nil && strings.Contains(s.Stderr(), "WARNING: DATA RACE") {
			err = fmt.Errorf("%s or a program it started reported a data race%s", s.cmd.Path, s.stderrTail())
		}
	})
	return err
}

// kill kills the child and waits until it has been reaped.
func (s *Session) kill() {
	s.cmd.Process.Kill()
	s.stdin.Close()
	<-s.exited
}

// stderrTail is the end of the child's stderr, for error messages.
func (s *Session) stderrTail() string { return tail(s.Stderr()) }

// lineWriter writes whole lines to the child's stdin, one writer at a time.
type lineWriter struct {
	mu     sync.Mutex
	w      io.WriteCloser
	closed bool
}

// Write is used by the SDK, which writes one message per call.
func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, errors.New("stdin of the program is closed")
	}
	return l.w.Write(p)
}

// writeLine writes line and a newline in one write.
func (l *lineWriter) writeLine(line []byte) error {
	if bytes.IndexByte(line, '\n') >= 0 {
		return errors.New("a raw frame must be one line: it contains a newline byte")
	}
	buf := make([]byte, 0, len(line)+1)
	buf = append(append(buf, line...), '\n')
	_, err := l.Write(buf)
	return err
}

// Close closes the child's stdin; closing twice is not an error.
func (l *lineWriter) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	return l.w.Close()
}

// SyncBuffer is a bytes.Buffer safe for concurrent use: a child process's
// output copier writes while a test reads.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
