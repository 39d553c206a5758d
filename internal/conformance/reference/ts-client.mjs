// A client of the official TypeScript MCP SDK (the version the
// conformance project's lock file pins), driven line by line on stdin, so
// that a Go test can see what the gateway does with a real client's
// session: "call" calls test_simple_text, "close" calls close() (which
// sends no DELETE) and exits. It prints "connected SESSION-ID", "called"
// and "closed" as each step ends, and any error on stderr.
//
// Usage: node ts-client.mjs URL
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const transport = new StreamableHTTPClientTransport(new URL(process.argv[2]));
const client = new Client({ name: "bankdoor-ts-client", version: "1" });
try {
  await client.connect(transport);
  await client.listTools();
  console.log(`connected ${transport.sessionId}`);
  for await (const line of createInterface({ input: process.stdin })) {
    if (line === "call") {
      const res = await client.callTool({ name: "test_simple_text", arguments: {} });
      console.log(res.isError ? `call error ${JSON.stringify(res)}` : "called");
    } else if (line === "close") {
      await client.close();
      console.log("closed");
      process.exit(0);
    }
  }
} catch (err) {
  console.error(`ts-client: ${err}`);
  process.exit(1);
}
