// Connects the official MCP TypeScript SDK client to an MCP server that
// is an OAuth resource server: the first request gets 401 with a
// WWW-Authenticate challenge naming the protected resource metadata; the
// SDK reads it, discovers the authorization server, gets a token by the
// client credentials grant and retries. Then it lists the tools and
// calls whoami, and prints both as one JSON line.
//
// Usage: node e2e.mjs MCP_URL CLIENT_ID CLIENT_SECRET
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';

const [url, clientId, clientSecret] = process.argv.slice(2);
if (!url || !clientId || !clientSecret) {
  console.error('usage: node e2e.mjs MCP_URL CLIENT_ID CLIENT_SECRET');
  process.exit(2);
}
const authProvider = new ClientCredentialsProvider({ clientId, clientSecret });
const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider });
const client = new Client({ name: 'toolroute-tsclient', version: '1.0.0' });
await client.connect(transport);
const { tools } = await client.listTools();
const whoami = await client.callTool({ name: 'whoami', arguments: {} });
console.log(JSON.stringify({ tools: tools.map((t) => t.name).sort(), whoami: whoami.structuredContent, protocol: transport.protocolVersion ?? null }));
await client.close();
