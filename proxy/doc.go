// Package proxy relays one MCP session between an agent and a bank server
// and puts the gate (package proxy/gate) on every tools/call: a denied call
// never reaches the server and leaves a signed receipt.
//
// # The pin invariant
//
// A tools/call is forwarded only after its tool's definition, in a listing
// the server returned after the previous forwarded call on that session was
// answered, matched its pin. Safety rests on nothing the server or the
// agent may leave out: not on notifications/tools/list_changed, not on the
// agent's protocol version, not on the agent sending
// notifications/initialized.
//
// How the relay holds it:
//
//   - Calls on one session are forwarded one at a time (callLoop, in
//     agent.go): the next waits until the server has answered the previous.
//     Every other method goes through at once.
//   - A forwarded call the agent cancels (notifications/cancelled), or
//     that the server has not answered within Config.CallTimeout (then
//     the relay cancels it at the server and answers the agent with an
//     error), ends for the relay: the server may never answer it, as MCP
//     allows, and a late answer is dropped. It counts as answered: the
//     next call is decided on a listing sent after the cancellation.
//   - A listing (listing.go) is fresh while no forwarded call has been
//     answered since it began and the server has not said its list changed;
//     a notification can make a listing stale, never fresh. A call is
//     decided only with a fresh listing, walked again if need be.
//   - Of a listing of several pages, the page holding the called tool must
//     be the last one the server answered: if the server answered another
//     page after it, that page is read again. A definition changed between
//     pages is therefore seen, with or without a notification.
//   - A listing that cannot be read (an error, or no answer within
//     Config.ListTimeout for a page) denies the call with pin.unavailable.
//
// What it costs: one tools/list round trip (all its pages, plus at most one
// page read again) per forwarded call. The relay asks for it the moment a
// call's answer arrives, while the answer travels to the agent and the
// agent writes its next call, so an agent that thinks between calls waits
// for nothing, and one that sends its next call at once waits for the
// remainder of one listing round trip. Pipelined calls are serialised. The
// listing cannot start earlier: a tools/list sent before the answer arrives
// may be answered before it (servers handle requests concurrently, and over
// HTTP each answer has its own response), and then shows nothing of a
// change made while answering. What it costs the relay itself is small: a
// page whose bytes did not change since it was last read is not parsed or
// hashed again. What no proxy can stop is a server that changes a definition after the listing
// and before the call it then answers: that call runs, and the next one is
// denied; such a server is one whose behaviour differs from its definition,
// which pins do not promise to catch.
//
// # Answers that ask the user to act
//
// An answer to one of the agent's requests that asks the user or the agent
// to act, a -32042 URL-elicitation error or requests embedded in a result
// (inputRequests), is under the expose rule of the feature it would use,
// like a server's own elicitation/create: not exposed, it is not relayed,
// and the request is denied with a receipt (response.not_exposed).
//
// # Answers that are not strict JSON
//
// What the relay passes on of a server's message, a result, an error's
// data, a request's or notification's params, must be strict JSON (RFC
// 7493: no member name twice at any depth, valid UTF-8, no lone
// surrogates, nothing after the value); the SDK's decoder is not, so the
// relay checks before anything else looks at the message. An answer that
// fails is not relayed: the request is denied with a receipt
// (response.malformed). A notification or request of the server that
// fails is dropped with a log line, a request answered with an error. An
// answer to the relay's own initialize or tools/list that fails is an
// error like any other (pin.unavailable for the call waiting on it).
//
// # Protocol versions
//
// The relay speaks one protocol version to the server, negotiated by
// itself: its initialize asks for pin.ProtocolVersion (2025-11-25), with
// the agent's clientInfo and the agent's capabilities the policy relays;
// the server may answer with any of Versions, and a session it answers
// with another version ends. The agent's initialize is answered with the
// server's result, its capabilities filtered, and with the agent's own
// version if it is one of Versions, else with 2025-11-25. So what the
// agent asks for (2026-07-28, 9999-12-31) never changes what the server
// sends: not whether it notifies, not the shape of its results.
//
// # Transports
//
// The agent's side is an AgentSide: one JSON-RPC message per frame. Run
// reads newline-delimited messages (the MCP stdio transport) through
// LineAgent, which writes a raw CR or LF between the tokens of a message
// (a server over HTTP may send them) as a space, the same whitespace to a
// JSON parser, so that no message spans two lines; package proxy/httpserve gives each agent session over
// streamable HTTP its own AgentSide and calls RunAgent. The relay is the
// same for both.
//
// The bank server's side is an mcp.Connection: a child process over stdio
// (mcp.CommandTransport), or a remote server over MCP streamable HTTP
// (DialHTTP). Either way each jsonrpc.Response.Result is relayed as the
// bytes the server sent, so pins hash what the server sent.
//
// # Related messages
//
// Over streamable HTTP an agent's request may be answered with a stream
// that carries, before the answer, the messages of the server related to
// that request. The relay decides which request, if any, each message of
// the server relates to, as it reads them, in order, and writes a related
// message with RelatedWriter.WriteRelated when the AgentSide has it:
//
//   - notifications/progress relates to the agent's request open at the
//     server whose _meta.progressToken it carries (compared in canonical
//     JSON, RFC 8785), if exactly one has it;
//   - notifications/message, and a request of the server (sampling,
//     elicitation, roots), relates to the agent's request open at the
//     server if there is exactly one: the server sent it while handling
//     that request (a server over HTTP, such as the Go SDK's, relates a
//     message by the request whose handler sends it; over stdio nothing
//     says which), so with two or more open it relates to none;
//   - anything else (list changes, resource updates), a message of an
//     unknown or answered progress token, and a message while none of the
//     agent's requests is open, relates to none.
//
// Open at the server means sent to it and not yet answered: tools/calls
// waiting for their turn and the relay's own requests do not count. The
// answer to a request is written after every message the server sent
// before it, since both are written from the one goroutine that reads
// the server. Over stdio every message goes to the one output, in that
// same order. A bank server over HTTP (DialHTTP) is no different: the
// SDK's connection hands the relay the messages of all its streams as
// one sequence, so the rules above decide there too.
//
// # Tracing
//
// With Config.Tracer set, every request of the agent is a SERVER span
// after the OpenTelemetry conventions for MCP, ended once, when its answer
// is written to the agent (or the session ends), with children for the
// gate, the receipt's write and the CLIENT request to the bank (trace.go).
// It continues the trace of the W3C traceparent in the request's
// params._meta. Whatever the tracer, the agent's traceparent, tracestate
// and baggage never reach the bank: they are removed from the _meta of
// every message forwarded (tools/call params are rebuilt anyway); a server
// with trace_context: forward in the policy gets the CLIENT span's
// traceparent instead. Params without them are forwarded byte for byte.
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
// The relay makes the initialize handshake itself and sends
// notifications/initialized as soon as the server has answered, whatever
// the agent does; then DialHTTP's connection opens the standalone
// notification stream itself (the SDK opens it only for its own client
// sessions):
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
