// Drives Evidencia's /mcp with the official TypeScript SDK client: lists the tools, then
// makes each call given on the command line, and prints what the client got as JSON.
//   node client.mjs URL TOKEN '[{"name": "whoami", "arguments": {}}, ...]'
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token, calls] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "evidencia-typescript-test", version: "1.0.0" });
await client.connect(transport);
const { tools } = await client.listTools();
const results = [];
for (const { name, arguments: args } of JSON.parse(calls)) {
  results.push(await client.callTool({ name, arguments: args }));
}
await client.close();
console.log(JSON.stringify({ server: client.getServerVersion(), tools, results }));
