// Package httpserve serves agents over MCP streamable HTTP
// (https://modelcontextprotocol.io/specification/2025-11-25/basic/transports),
// one proxy.Relay per agent session, so that many agents share one gateway
// and each still gets every check of the gate.
//
// # Requests and refusals
//
// Every request is checked in this order, and refused when a check fails.
// The body of a refusal is one line of text starting "bankdoor: " that
// says what was wrong and how to fix it, and a refused request never
// reaches a relay, let alone the bank server; the two refusals marked *
// are the exception described below.
//
//	over mTLS, a client certificate the agents' CA did
//	  not issue (see mTLS identities)                   the TLS handshake fails
//	Origin header present and not in Config.Origins     403 Forbidden (DNS rebinding)
//	verified client certificate whose Subject
//	  CommonName is not an agent name                   401 Unauthorized, WWW-Authenticate: Bearer
//	neither a verified client certificate nor an
//	  Authorization header                              401 Unauthorized, WWW-Authenticate: Bearer
//	Authorization not "Bearer TOKEN" of the tokens file  401 Unauthorized, WWW-Authenticate: Bearer
//	client certificate and bearer token of two agents   401 Unauthorized, WWW-Authenticate: Bearer
//	method other than POST, GET, DELETE                 405 Method Not Allowed
//	POST: Content-Type not application/json             415 Unsupported Media Type
//	POST: body longer than Config.MaxBody               413 Content Too Large *
//	POST: body not one JSON-RPC message the relay can
//	  read (not JSON, trailing bytes, a batch, a
//	  duplicate or unknown member, a bad id)            400 Bad Request *
//	POST/GET/DELETE without Mcp-Session-Id, except
//	  the POST of initialize that starts a session      400 Bad Request
//	Mcp-Session-Id unknown, ended, idled out, or
//	  another agent's                                   404 Not Found
//	POST of initialize inside a session                 400 Bad Request
//	POST of initialize past Config.MaxSessions open
//	  sessions of this agent                            429 Too Many Requests
//	POST of a request whose id is open in the session   409 Conflict
//	GET without Accept: text/event-stream               406 Not Acceptable
//	GET while the session has a stream open             409 Conflict
//	the session's relay ended (bank server gone)        502 Bad Gateway
//
// The checks up to the Content-Type come before the body is read, and the
// body is never read past Config.MaxBody. Whether a body is a message the
// relay can read is decided by the relay's own reader
// ([proxy.ReadEnvelope]), not by a second parser here.
//
// * Within a valid session (an Mcp-Session-Id of this agent's open
// sessions), a body the relay cannot read goes to the session's relay as a
// line of the stdio transport would (a body too large, as the relay's
// FrameTooLargeError: its bytes past the limit are never read). The relay's
// frame checks deny it with frame.parse, frame.invalid or frame.too_large
// and write a receipt, as over stdio, and the refusal (400 or 413) carries
// the relay's answer as its application/json body: a JSON-RPC error with id
// null naming the rule and the receipt, which the transport spec allows in
// a 400. Each such body gets its own key, and the relay answers every frame
// it cannot read before it reads the next, so each answer goes back on the
// request that sent its body even when several are in flight. Without a
// valid session the refusal is the text one.
//
// A POSTed request is answered with 200 and its JSON-RPC answer as
// application/json, including the gate's denials (a JSON-RPC error naming
// the rule and the receipt); a POSTed notification or answer with 202 and
// no body. The answer to initialize carries the new session's
// Mcp-Session-Id (128 random bits, hex).
//
// When the bank server sends messages related to a POSTed request before
// answering it (the relay decides which, see "Related messages" in
// package proxy: progress carrying the request's progressToken; a log
// message or a request of the server while it is the session's only
// request at the bank server), and the POST's Accept lists
// text/event-stream, the POST is answered with 200 as text/event-stream
// instead (transport spec, "Sending Messages to the Server"): each related
// message as it comes, then the JSON-RPC answer, each one "message" event,
// and the stream ends after the answer. The answer to the agent therefore
// comes after everything the bank server sent about its request, in the
// order sent, as over stdio. A request with no related message, a denied
// one included, stays application/json: the choice is made by the first
// message for the POST. If the POST's Accept lacks text/event-stream, its
// related messages go to the GET stream, as do those of a POST that has
// already returned. Up to 64 related messages wait for a POST's stream;
// past that the relay waits for the POST to take them (over stdio it
// would wait for the agent to read them). Streams are not resumable: no
// event has an id, so there is no priming event and no Last-Event-ID
// replay. A POST that disconnects does not cancel its request (the agent
// sends notifications/cancelled for that); its answer, having no stream
// to go to, is dropped, never sent on the GET stream.
//
// GET opens the session's notification stream (text/event-stream; each
// message one "message" event): the bank server's notifications and
// requests relayed by the gate that relate to no open request (list
// changes, resource updates, and the messages above that found no POST
// stream). Up to 64 wait while no stream is open; later ones are dropped.
// DELETE ends the session (204): its relay drains and closes the bank
// server's session.
//
// A session without a POST for Config.IdleTimeout is closed as by DELETE.
//
// # Tokens file
//
// One agent a line, "AGENT TOKEN"; # starts a comment line. The file must
// have mode 0600. For example:
//
//	# agents of the treasury team
//	reconciler 6f1d0c3a9b2e4f7a8c5d1e0b3a6f9c2d4e7b0a3c6f9d2e5b8a1c4f7e0d3b6a9c
//	reporting  0e5c8b1a4d7f0c3e6b9a2d5f8c1e4b7a0d3f6c9b2e5a8d1c4f7b0e3a6d9c2f5b
//
// AGENT names the agent's signing key directory and receipts directory, so
// that each agent's receipts form their own chain under their own key.
//
// # mTLS identities
//
// Over HTTPS, an agent may instead authenticate with a client
// certificate. The server's tls.Config names the CA certificates that
// issue agents' certificates (ClientCAs) and asks for a certificate
// without requiring one (tls.VerifyClientCertIfGiven), so that agents
// with tokens connect too; a certificate that is given is always
// verified, and one the CA did not issue, expired, or not for client
// authentication fails the handshake. With Config.ClientCerts, the
// agent of a verified certificate is its Subject CommonName, which must
// be an agent name as in the tokens file, else the request is refused
// with 401 naming it (never served as if no certificate were given). The
// agent is the same whichever way it authenticates: a session it opened
// with its certificate is its own, unknown (404) to any other agent. A
// request with both a certificate and a bearer token is served only if
// both name the same agent; a token that is unknown, or not given in the
// "Bearer TOKEN" form, is refused even alongside a good certificate.
//
// Use a CA that issues only agents' certificates: any certificate it
// issues for client authentication whose CommonName is an agent name is
// that agent. Certificates are not checked for revocation (no CRL or
// OCSP); shutting an agent out before its certificate expires takes a new
// CA.
package httpserve
