package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectTimeout bounds starting the bank server and its first answer.
const connectTimeout = 30 * time.Second

// startServer starts CMD ARGS... as an MCP stdio server whose stderr is
// ours, and returns the SDK connection to it.
func startServer(ctx context.Context, argv []string) (mcp.Connection, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("no server command: give it after --, e.g. -- npx -y bankmcp")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	t := &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	conn, err := t.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("starting the server %q: %w", argv[0], err)
	}
	return conn, nil
}
