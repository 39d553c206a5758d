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
//	Authorization not "Bearer TOKEN" of the tokens file
//	  nor, with Config.OAuth, an access token it accepts 401 Unauthorized, WWW-Authenticate: Bearer
//	with Config.OAuth, an access token without a
//	  required scope or whose claim names no agent      403 Forbidden, WWW-Authenticate: Bearer
//	client certificate and bearer token of two agents   401 Unauthorized, WWW-Authenticate: Bearer
//	method other than POST, GET, DELETE                 405 Method Not Allowed
//	POST past Config.MaxRequests POSTs of this agent
//	  in flight                                         429 Too Many Requests
//	POST: Content-Type not application/json             415 Unsupported Media Type
//	POST: body longer than Config.MaxBody               413 Content Too Large *
//	POST: body not read whole within Config.BodyTimeout 408 Request Timeout
//	POST: body not one JSON-RPC message the relay can
//	  read (not JSON, trailing bytes, a batch, a
//	  duplicate or unknown member, a bad id)            400 Bad Request *
//	POST/GET/DELETE without Mcp-Session-Id, except
//	  the POST of initialize that starts a session      400 Bad Request, receipt session.missing
//	Mcp-Session-Id unknown, ended, idled out, evicted,
//	  or another agent's                                404 Not Found, receipt session.unknown
//	POST of initialize inside a session                 400 Bad Request
//	POST of initialize with Config.MaxSessions sessions
//	  of this agent open, each busy                     429 Too Many Requests
//	POST of initialize with Config.MaxBankSessions
//	  sessions open in all, each busy                   503 Service Unavailable
//	POST of a request whose id is open in the session   409 Conflict
//	GET without Accept: text/event-stream               406 Not Acceptable
//	GET while the session has a stream open             409 Conflict
//	the session's relay ended (bank server gone)        502 Bad Gateway
//
// The checks up to the Content-Type come before the body is read, and the
// body is never read past Config.MaxBody nor after Config.BodyTimeout.
// The two refusals with a receipt are those of an authenticated agent's
// request outside a session: the receipt (rule session.missing or
// session.unknown; reason the HTTP method and the message; args_sha256 the
// SHA-256 of the body, empty for GET and DELETE) is written in that
// agent's chain by Config.Recorder, as the gate's denials are, and the
// message names it: "bankdoor: session.missing: missing Mcp-Session-Id
// header; start a session with initialize (receipt 000012.json)". Whether a body is a message the
// relay can read is decided by the relay's own reader
// ([proxy.ReadEnvelope]), not by a second parser here.
//
// * Within a valid session (an Mcp-Session-Id of this agent's open
// sessions), a body the relay cannot read goes to the session's relay as a
// line of the stdio transport would (a body too large, as the relay's
// FrameTooLargeError: its bytes past the limit are never read). The relay's
// frame checks deny it with frame.parse, frame.invalid or frame.too_large
// and write a receipt, as over stdio, and the refusal (400 or 413) carries
// the relay's answer as its application/json body: a JSON-RPC error naming
// the rule and the receipt, with the body's id where the relay could read
// it and else id null, which the transport spec allows in a 400. Such a
// body never opens a session, an initialize included. Each body without a
// readable id gets its own key, and the relay answers every frame
// it cannot read before it reads the next, so each answer goes back on the
// request that sent its body even when several are in flight. Without a
// valid session the refusal is the text one, with a receipt
// session.missing or session.unknown in the agent's chain (args_sha256
// that of the body read, of nothing for a body too large), as for any
// request of an authenticated agent outside a session.
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
// replay. A POST that goes away before its answer cancels its request,
// as if the agent had sent notifications/cancelled for it (the relay
// forwards the cancellation and goes on with the session's next call);
// an answer that comes anyway, having no stream to go to, is dropped,
// never sent on the GET stream.
//
// GET opens the session's notification stream (text/event-stream; each
// message one "message" event): the bank server's notifications and
// requests relayed by the gate that relate to no open request (list
// changes, resource updates, and the messages above that found no POST
// stream). Up to 64 wait while no stream is open; later ones are dropped.
// DELETE ends the session (204): its relay drains and closes the bank
// server's session.
//
// # Sessions and limits
//
// A session is busy while a request of the agent in it is being served
// (a POST until its answer, a GET for as long as its stream is open) and
// idle otherwise. Each open session holds one bank server session (with
// a command after --, one process), so the limits below bound the bank
// processes; the defaults (Default* constants) are:
//
//	Config.IdleTimeout      2 minutes   a session idle this long is closed, as by DELETE
//	Config.MaxSessions      16          open sessions per agent
//	Config.MaxBankSessions  64          open sessions of all agents, so bank server sessions
//	Config.MaxRequests      16          POSTs in flight per agent
//	Config.BodyTimeout      10 seconds  to read a POST body whole
//	Config.MaxBody          4 MiB       largest POST body (proxy.DefaultMaxFrame)
//
// Real clients rarely end their sessions: the TypeScript SDK's close() and
// the MCP conformance runner send no DELETE, they just stop. A connected
// SDK client keeps its GET stream open (the TypeScript SDK 1.32.2 opens it
// once notifications/initialized is accepted, and close() aborts it with
// its requests), so its session never idles however long the agent
// thinks between calls, and once it stops, the stream breaks and the
// session is idle from that moment (measured with that client by
// TestTypeScriptClientSession in internal/conformance: a 6-second pause
// with a 2-second idle timeout kept the session; after close() the
// stream broke within milliseconds and the session closed 2.06 s later); clients without a
// stream send the requests of one task seconds apart. Two minutes of
// idleness therefore ends abandoned sessions quickly without ending live
// ones; a session closed under a client gets 404, on which the transport
// spec has the client start a new one.
//
// An initialize past Config.MaxSessions does not refuse the new session:
// it closes the agent's least recently used idle session (idle the
// longest) and, once that session's relay has returned (its bank server
// session ended), opens the new one; only when all the agent's sessions
// are busy is the new one refused (429). Past Config.MaxBankSessions the
// same is done with the least recently used idle session of any agent
// (503 when all are busy). Waiting for the evicted session is bounded
// (10 seconds, then 503), and a session counts against both limits until
// its relay has returned, so there are never more than
// Config.MaxBankSessions bank server sessions, nor more than
// Config.MaxSessions of one agent. With the defaults an agent buffers at
// most 16 bodies of 4 MiB (64 MiB) and a client trickling a body holds it
// for 10 seconds at most, after which the connection is closed.
//
// Measured (Go 1.26, linux/amd64, without -race): a session costs this
// package about 4 KB of heap idle and 34 KB with its GET stream open
// (TestSessionMemory, client side included); the bankdoor proxy about
// 170 KiB of resident memory per session, idle or streaming, with its
// relay, and each bank process of the fixture about 10 MiB
// (TestE2EListenSessionMemory in cmd/bankdoor). The bank processes, not
// the gateway, are what Config.MaxBankSessions is for.
//
// # Tokens file
//
// One agent a line, "NAME TOKEN", in the token file format of package
// secretfile (the format ledger serve's token file has too): TOKEN at
// least 32 characters of the RFC 6750 b64token alphabet; # starts a
// comment line. The file must have mode 0600. For example:
//
//	# agents of the treasury team
//	reconciler 6f1d0c3a9b2e4f7a8c5d1e0b3a6f9c2d4e7b0a3c6f9d2e5b8a1c4f7e0d3b6a9c
//	reporting  0e5c8b1a4d7f0c3e6b9a2d5f8c1e4b7a0d3f6c9b2e5a8d1c4f7b0e3a6d9c2f5b
//
// NAME is the agent: it names the agent's signing key directory and receipts directory, so
// that each agent's receipts form their own chain under their own key.
//
// # OAuth access tokens
//
// With Config.OAuth, the gateway is also an OAuth 2.1 resource server
// (package oauth): a bearer token that is not in the tokens file is
// checked as an access token, and the agent is the one its claim value
// is mapped to (never a value by being an agent's name). Every 401 and
// 403 of authentication then carries the challenge package oauth makes,
// with the URL of the protected resource metadata (RFC 9728) and the
// scopes needed, and the RFC 6750 error code (invalid_token,
// insufficient_scope) when a token was refused. The token authenticates
// the agent and goes no further: a session's relay gets the messages of
// the POST bodies, never a header, so the bank server sees only what the
// gateway itself sends it.
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
