// Package proxy relays one MCP session between an agent and a bank server
// and puts the gate (package proxy/gate) on every tools/call: a denied call
// never reaches the server and leaves a signed receipt.
//
// # Transports
//
// The agent's side is an AgentSide: one JSON-RPC message per frame. Run
// reads newline-delimited messages (the MCP stdio transport) through
// LineAgent; package proxy/httpserve gives each agent session over
// streamable HTTP its own AgentSide and calls RunAgent. The relay is the
// same for both.
//
// The bank server's side is an mcp.Connection: a child process over stdio
// (mcp.CommandTransport), or a remote server over MCP streamable HTTP
// (DialHTTP). Either way each jsonrpc.Response.Result is relayed as the
// bytes the server sent, so pins hash what the server sent.
//
// # Streamable HTTP to the bank
//
// DialHTTP speaks the streamable HTTP transport of MCP 2025-03-26 and
// later (https://modelcontextprotocol.io/specification/2025-11-25/basic/transports)
// through the Go SDK's StreamableClientTransport: every message is a POST
// to HTTPServer.URL, answered with application/json or text/event-stream,
// with the Mcp-Session-Id the server gave in its answer to initialize. The
// HTTP client verifies TLS (TLS 1.2 or later; HTTPServer.RootCAs for a
// private CA), refuses every redirect, bounds dial (10 s), TLS handshake
// (10 s) and waiting for response headers (60 s), closes idle keep-alive
// connections after 90 s, and adds HTTPServer.Header to every request.
// Plain http is accepted only to a loopback address (CheckURL).
//
// After the relay sends notifications/initialized, DialHTTP's connection
// opens the standalone notification stream itself (the SDK opens it only
// for its own client sessions):
//
//	GET /mcp HTTP/1.1
//	Accept: text/event-stream
//	Mcp-Session-Id: 5f2c…
//	Mcp-Protocol-Version: 2025-11-25
//
//	HTTP/1.1 200 OK
//	Content-Type: text/event-stream
//
//	event: message
//	data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}
//
// Each event's data is one JSON-RPC message for the relay. A 405 means
// the server offers no stream (as a stdio server that never notifies);
// any other failure, or the end of an open stream, ends the session: a
// gate that could miss notifications/tools/list_changed does not go on.
package proxy
