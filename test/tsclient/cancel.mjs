// Calls the "wait" tool of the MCP server at URL (argv[2]) with the bearer
// token argv[3] through the official TypeScript SDK client, over
// streamable HTTP, and aborts the call after argv[4] milliseconds, as a
// user pressing "stop" does; the client stays connected argv[5]
// milliseconds more (closing it would end the call's HTTP request too).
// Prints one JSON line: how the call ended.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token, abortAfter, holdAfter] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "toolroute-tsclient", version: "1.0.0" });
await client.connect(transport);
const abort = new AbortController();
setTimeout(() => abort.abort(new Error("stopped by the user")), Number(abortAfter));
let outcome;
try {
  const result = await client.callTool({ name: "wait", arguments: {} }, undefined, { signal: abort.signal });
  outcome = { outcome: "result", result };
} catch (err) {
  outcome = { outcome: "aborted", error: String(err) };
}
await new Promise((resolve) => setTimeout(resolve, Number(holdAfter)));
await client.close();
console.log(JSON.stringify({ ...outcome, protocolVersion: transport.protocolVersion ?? null }));
