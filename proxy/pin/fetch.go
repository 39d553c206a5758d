package pin

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bankdoor/bankdoor/internal/jsonobj"
)

// ProtocolVersion is the MCP version bankdoor speaks to servers.
const ProtocolVersion = "2025-11-25"

// MaxPages bounds a walk of a paginated tools/list.
const MaxPages = 100

// A Caller sends one request and returns the raw result of its response.
type Caller func(ctx context.Context, method string, params []byte) (result []byte, err error)

// ListAll walks every page of tools/list and returns the tools in order.
// A name listed twice is an error: a server that does so could show one
// definition and serve another.
func ListAll(ctx context.Context, call Caller) ([]Tool, error) {
	var tools []Tool
	seen := make(map[string]bool)
	params := []byte("{}")
	for range MaxPages {
		result, err := call(ctx, "tools/list", params)
		if err != nil {
			return nil, err
		}
		l, err := ParseList(result)
		if err != nil {
			return nil, err
		}
		for _, t := range l.Tools {
			if seen[t.Name] {
				return nil, fmt.Errorf("tools/list names tool %q twice", t.Name)
			}
			seen[t.Name] = true
		}
		tools = append(tools, l.Tools...)
		if l.NextCursor == nil || string(l.NextCursor) == "null" {
			return tools, nil
		}
		params = jsonobj.Object{{Name: "cursor", Value: l.NextCursor}}.Marshal()
	}
	return nil, fmt.Errorf("tools/list has more than %d pages", MaxPages)
}

// FetchCapabilities are the client capabilities Fetch declares: roots,
// sampling and elicitation, so that a server that offers some tools only
// to clients with them lists every tool it has. Fetch itself answers any
// request the server sends with an error.
const FetchCapabilities = `{"roots":{"listChanged":true},"sampling":{},"elicitation":{}}`

// Fetch performs the MCP initialize handshake on conn, declaring
// FetchCapabilities, and lists every tool the server offers, with
// definitions exactly as sent. It is what `bankdoor pin` and `bankdoor
// init` run; ctx should carry a timeout.
func Fetch(ctx context.Context, conn mcp.Connection) ([]Tool, error) {
	c := &seqCaller{conn: conn}
	initParams := `{"protocolVersion":"` + ProtocolVersion + `","capabilities":` + FetchCapabilities + `,"clientInfo":{"name":"bankdoor-pin","version":"1"}}`
	if _, err := c.call(ctx, "initialize", []byte(initParams)); err != nil {
		return nil, err
	}
	if err := conn.Write(ctx, &jsonrpc.Request{Method: "notifications/initialized", Params: []byte("{}")}); err != nil {
		return nil, fmt.Errorf("writing to the server: %w", err)
	}
	return ListAll(ctx, c.call)
}

// seqCaller sends one request at a time and reads until its response,
// refusing any request the server makes meanwhile.
type seqCaller struct {
	conn mcp.Connection
	id   int64
}

func (c *seqCaller) call(ctx context.Context, method string, params []byte) ([]byte, error) {
	c.id++
	if err := c.conn.Write(ctx, &jsonrpc.Request{ID: mustID(c.id), Method: method, Params: params}); err != nil {
		return nil, fmt.Errorf("writing %s to the server: %w", method, err)
	}
	for {
		msg, err := c.conn.Read(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading the server's answer to %s: %w", method, err)
		}
		switch m := msg.(type) {
		case *jsonrpc.Request:
			if m.ID.IsValid() {
				c.conn.Write(ctx, &jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "bankdoor pin answers no requests"}})
			}
		case *jsonrpc.Response:
			if id, ok := m.ID.Raw().(int64); !ok || id != c.id {
				continue
			}
			if m.Error != nil {
				return nil, fmt.Errorf("the server answered %s with an error: %w", method, m.Error)
			}
			if m.Result == nil {
				return nil, errors.New("the server answered " + method + " with no result")
			}
			return m.Result, nil
		}
	}
}

// mustID returns the JSON-RPC id n; MakeID cannot fail for a float64.
func mustID(n int64) jsonrpc.ID {
	id, _ := jsonrpc.MakeID(float64(n))
	return id
}
