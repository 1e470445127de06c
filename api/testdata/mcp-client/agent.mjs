// agent.mjs: the official TypeScript MCP SDK's client acting as an agent
// (docs/agents.md). e2e/agents_test.go runs it against svc dev. It connects
// with the clientInfo in SVC_MCP_CLIENT ({"name", "title"}), the extra HTTP
// headers in SVC_MCP_HEADERS (a JSON object, say X-Svc-Agent-Id) and, when
// set, SVC_MCP_KEY as its bearer; calls the tools in SVC_MCP_CALLS (a JSON
// array of [name, arguments]) in order, and prints one JSON object:
// {"sessionId": ..., "calls": [{name, isError, result}]}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = process.env.SVC_MCP_URL;
if (!url) {
  console.error("set SVC_MCP_URL (the /mcp endpoint)");
  process.exit(2);
}
const info = JSON.parse(process.env.SVC_MCP_CLIENT || '{"name":"svc-agent"}');
const headers = JSON.parse(process.env.SVC_MCP_HEADERS || "{}");
if (process.env.SVC_MCP_KEY) headers.Authorization = `Bearer ${process.env.SVC_MCP_KEY}`;
const calls = JSON.parse(process.env.SVC_MCP_CALLS || "[]");

const client = new Client({ version: "1.0.0", ...info });
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
await client.connect(transport);

const out = [];
for (const [name, args] of calls) {
  const res = await client.callTool({ name, arguments: args });
  const text = res.content?.find((c) => c.type === "text")?.text ?? "";
  let result;
  try {
    result = JSON.parse(text);
  } catch {
    result = text;
  }
  out.push({ name, isError: res.isError === true, result });
}
console.log(JSON.stringify({ sessionId: transport.sessionId, calls: out }));
await client.close();
