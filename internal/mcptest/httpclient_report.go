package mcptest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bankdoor/bankdoor/proxy"
)

// The lines on stderr by which the servers name their endpoint: the
// fixture with --http and bankdoor proxy with --listen.
var (
	FixtureServing = regexp.MustCompile(`^bank-server: serving (http://\S+)$`)
	ProxyServing   = regexp.MustCompile(`^bankdoor: serving agents at (https?://\S+)$`)
)

// Server is a child process serving MCP over streamable HTTP.
type Server struct {
	URL    string // the endpoint the program named on stderr
	cmd    *exec.Cmd
	stderr SyncBuffer
	copied chan struct{} // closed once stderr is at EOF
}

// Serve starts cmd, which must not have Stderr set, and waits until a
// line of its stderr matches serving, whose first submatch is the URL
// it serves (FixtureServing, ProxyServing). Its stderr stays captured
// (see Stderr). On error the process is killed and reaped, and the error
// includes its stderr.
func Serve(ctx context.Context, cmd *exec.Cmd, serving *regexp.Regexp) (*Server, error) {
	pipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	s := &Server{cmd: cmd, copied: make(chan struct{})}
	url := make(chan string, 1)
	go func() {
		defer close(s.copied)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			s.stderr.Write([]byte(sc.Text() + "\n"))
			if m := serving.FindStringSubmatch(sc.Text()); len(m) > 1 {
				select {
				case url <- m[1]:
				default:
				}
			}
		}
		io.Copy(&s.stderr, pipe) // a line too long for the scanner
	}()
	select {
	case s.URL = <-url:
		return s, nil
	case <-s.copied:
		err = fmt.Errorf("%s exited before serving", cmd.Path)
	case <-ctx.Done():
		err = fmt.Errorf("waiting for %s to serve: %w", cmd.Path, ctx.Err())
	case <-time.After(30 * time.Second):
		err = fmt.Errorf("%s printed no line matching %q on stderr within 30s", cmd.Path, serving)
	}
	cmd.Process.Kill()
	<-s.copied
	cmd.Wait()
	return nil, fmt.Errorf("%w%s", err, tail(s.Stderr()))
}

// Stderr returns everything the program wrote to stderr so far.
func (s *Server) Stderr() string { return s.stderr.String() }

// Pid returns the program's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Kill kills the program at once, as a crash would; Stop still reaps it.
func (s *Server) Kill() { s.cmd.Process.Kill() }

// Stop sends SIGTERM and waits for the program to exit, killing it after
// 10 seconds. It returns an error if it had to be killed, if it exited
// with a status other than 0, or if its stderr reports a data race.
func (s *Server) Stop() error {
	s.cmd.Process.Signal(syscall.SIGTERM)
	var err error
	select {
	case <-s.copied:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-s.copied
		err = fmt.Errorf("%s did not exit within 10s of SIGTERM; killed it", s.cmd.Path)
	}
	if werr := s.cmd.Wait(); err == nil && werr != nil {
		err = fmt.Errorf("%s after SIGTERM: %w", s.cmd.Path, werr)
	}
	if err == nil && strings.Contains(s.Stderr(), "WARNING: DATA RACE") {
		err = fmt.Errorf("%s reported a data race", s.cmd.Path)
	}
	if err != nil {
		return fmt.Errorf("%w%s", err, tail(s.Stderr()))
	}
	return nil
}

// ConnectHTTP connects the SDK client to the streamable HTTP endpoint
// url, sending "Authorization: Bearer TOKEN" with every request if token
// is not empty (an agent of bankdoor proxy --listen).
func ConnectHTTP(ctx context.Context, url, token string) (*mcp.ClientSession, error) {
	hs := &proxy.HTTPServer{URL: url}
	if token != "" {
		hs.Header = http.Header{"Authorization": {"Bearer " + token}}
	}
	return ConnectHTTPClient(ctx, url, hs.Client())
}

// ConnectHTTPClient connects the SDK client to the streamable HTTP
// endpoint url with hc, e.g. a client that presents a TLS client
// certificate (an agent of bankdoor proxy --listen --agent-ca).
func ConnectHTTPClient(ctx context.Context, url string, hc *http.Client) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "bankdoor-mcptest", Version: "1.0.0"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc},
		&mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	if err != nil {
		return nil, fmt.Errorf("connecting the MCP client to %s: %w", url, err)
	}
	return cs, nil
}

// tail is the end of a program's stderr, for error messages.
func tail(stderr string) string {
	const max = 2000
	if stderr == "" {
		return ""
	}
	if len(stderr) > max {
		stderr = "…" + stderr[len(stderr)-max:]
	}
	return "\nstderr of the program:\n" + stderr
}
