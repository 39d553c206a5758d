package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectTimeout bounds starting the bank server and its first answer.
const connectTimeout = 30 * time.Second

var errNoCommand = errors.New("no bank server command")

// checkCommand checks that the bank server's command argv can be
// started, before anything else is done.
func checkCommand(argv []string) error {
	if len(argv) == 0 {
		return errNoCommand
	}
	if _, err := exec.LookPath(argv[0]); err != nil {
		return hint(fmt.Errorf("bank server command: %w", err), "give the command that starts the bank's MCP server over stdio after --")
	}
	return nil
}

// startServer starts CMD ARGS... as an MCP stdio server whose stderr is
// ours, and returns the SDK connection to it.
func startServer(ctx context.Context, argv []string) (mcp.Connection, error) {
	if err := checkCommand(argv); err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	t := &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	conn, err := t.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("starting the bank server %q: %w", argv[0], err)
	}
	return conn, nil
}
