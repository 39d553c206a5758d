package pin

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestFetchDeclaresCapabilities: a server (the Go SDK's) that offers a
// tool only to clients that can answer elicitation lists it to Fetch,
// which declares roots, sampling and elicitation.
func TestFetchDeclaresCapabilities(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var srv *mcp.Server
	srv = mcp.NewServer(&mcp.Implementation{Name: "gated", Version: "1"}, &mcp.ServerOptions{
		InitializedHandler: func(ctx context.Context, req *mcp.InitializedRequest) {
			// The capabilities as the client sent them (the SDK's fields for
			// roots and sampling are deprecated, their JSON is not).
			raw, _ := json.Marshal(req.Session.InitializeParams().Capabilities)
			var caps map[string]json.RawMessage
			json.Unmarshal(raw, &caps)
			if caps["elicitation"] != nil && caps["sampling"] != nil && strings.Contains(string(caps["roots"]), `"listChanged":true`) {
				srv.AddTool(&mcp.Tool{Name: "ask_user", InputSchema: map[string]any{"type": "object"}},
					func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
						return &mcp.CallToolResult{}, nil
					})
			}
		},
	})
	srv.AddTool(&mcp.Tool{Name: "list_accounts", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	conn, err := ct.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tools, err := Fetch(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"ask_user", "list_accounts"}) {
		t.Errorf("Fetch listed %q; want ask_user (offered to clients with elicitation) and list_accounts", names)
	}
}
