'use strict';
// Loaded with `node --require observe.js` before Stripe's MCP server, this
// records what the server does, one JSON line per event appended to the
// file named by STRIPE_MCP_OBSERVE (nothing at all when it is unset):
//
//   {"event":"rpc","method":"tools/call","tool":"create_customer"}
//       a JSON-RPC message the server read on its stdin (the tool for
//       tools/call; "method" is empty for an answer to a server request,
//       "(unparsed)" for a line that is not JSON)
//   {"event":"http","phase":"error","method":"POST","host":"api.stripe.com","path":"/v1/customers"}
//       a request of node's http/https client (the Stripe SDK's), from the
//       channels http.client.request.start (the request was sent) and
//       http.client.request.error (it failed, e.g. the host did not resolve)
//   {"event":"fetch","method":"POST","host":"ai.stripe.com","path":"/search"}
//       a request of node's fetch (undici:request:create)
//   {"event":"socket"}
//       a TCP connection opened with net.connect (net.client.socket)
//
// It only listens: diagnostics_channel is node's read-only hook for
// observability tools, and a second 'data' listener on stdin gets the same
// chunks as the server's own. Attaching it here starts stdin flowing on the
// next tick; the MCP SDK's StdioServerTransport attaches its listener while
// the main module runs, before that tick, so it misses nothing (if it ever
// did, the server would never answer initialize and the test would fail,
// not pass).
const file = process.env.STRIPE_MCP_OBSERVE;
if (file) {
  const dc = require('node:diagnostics_channel');
  const fs = require('node:fs');
  const record = (ev) => fs.appendFileSync(file, JSON.stringify(ev) + '\n');

  const http = (phase) => ({ request }) =>
    record({ event: 'http', phase, method: request.method, host: request.host, path: request.path });
  dc.subscribe('http.client.request.start', http('start'));
  dc.subscribe('http.client.request.error', http('error'));
  dc.subscribe('undici:request:create', ({ request }) => {
    let host = String(request.origin);
    try {
      host = new URL(host).host;
    } catch {}
    record({ event: 'fetch', method: request.method, host, path: request.path });
  });
  dc.subscribe('net.client.socket', () => record({ event: 'socket' }));

  const rpc = (line) => {
    if (line.length === 0) return;
    let msg;
    try {
      msg = JSON.parse(line.toString('utf8'));
    } catch {
      record({ event: 'rpc', method: '(unparsed)' });
      return;
    }
    const method = typeof msg?.method === 'string' ? msg.method : '';
    const tool = method === 'tools/call' ? String(msg.params?.name ?? '') : undefined;
    record({ event: 'rpc', method, tool });
  };
  let buf = Buffer.alloc(0);
  process.stdin.on('data', (chunk) => {
    buf = Buffer.concat([buf, chunk]);
    for (let i = buf.indexOf(10); i >= 0; i = buf.indexOf(10)) {
      rpc(buf.subarray(0, i));
      buf = buf.subarray(i + 1);
    }
  });
}
