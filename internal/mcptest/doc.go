// Package mcptest drives MCP stdio programs the way an agent does, for
// bankdoor's end-to-end tests and report: it builds the binaries, starts a
// program (the proxy with the fixture bank behind it, or the fixture
// alone), connects the Go SDK's MCP client to the program's real stdin and
// stdout, and lets a test inject raw JSON-RPC lines into the same session.
//
// # Raw Frames
//
// One child process, one stdin, one stdout: the SDK client and the raw
// side share them. Writes are whole lines under one mutex, so a raw line
// never lands inside an SDK message. A goroutine reads stdout line by line
// and routes each line by its "id" member:
//
//	"id":"raw-N"   (a string starting with raw-)   to the raw side
//	"id":null                                       to the raw side
//	anything else (integer ids, "bankdoor-N" server requests, notifications)
//	                                                to the SDK client
//	a line that is not a JSON object                to the raw side
//
// [Session.NextID] returns a fresh raw id as JSON text ("raw-1", "raw-2",
// ... with the quotes), for the caller to place in its line. The SDK
// client only ever uses integer ids, so the two sides cannot collide.
// [Session.Raw] sends one line and returns the next line routed to the raw
// side: the answer to a line carrying a raw id, or the id-null answer to a
// line that could not be read. Raw exchanges are serialised. Lines that
// arrive on the raw side while no Raw call waits (for instance an answer
// to a notification, which JSON-RPC forbids) are kept, and
// [Session.Unsolicited] returns them.
//
// # HTTP Sessions
//
// [HTTPSession] is the same for an agent of an MCP streamable HTTP server
// that takes bearer tokens (bankdoor proxy --listen): [DialHTTP] connects
// the SDK client with "Authorization: Bearer TOKEN", and the raw side
// POSTs each frame with the session's Mcp-Session-Id. [HTTPSession.Raw]
// returns the JSON-RPC message of the response (an application/json body,
// or the first answer of a text/event-stream one), whatever its status: a
// 400 may carry an error with id null. A notification must get 202 and no
// body; [HTTPSession.RawNoReply] keeps any other response as an answer,
// and [HTTPSession.Unsolicited] returns those. Each POST is its own
// exchange, so raw frames need no serialising.
//
// # Example
//
//	sess, err := mcptest.Start(ctx, proxy.Command(), nil)
//	...
//	res, err := sess.Client().CallTool(ctx, &mcp.CallToolParams{Name: "list_accounts"})
//	line := []byte(`{"jsonrpc":"2.0","id":` + sess.NextID() + `,"method":"bank/transfer"}`)
//	resp, err := sess.Raw(ctx, line)
//	// resp: {"jsonrpc":"2.0","id":"raw-1","error":{"code":-32601,"message":"bankdoor denied request: method.unknown: …"}}
//	err = sess.Close() // closes stdin; the proxy exits and takes the fixture with it
//
// # Fixture State
//
// [ReadState] reads the fixture bank's state file (its format is in the
// doc of fixtures/bank-server): balances in cents and the log of every
// message the bank received. [Moved] sums the absolute balance changes
// between two states, so a test knows whether money moved.
package mcptest
