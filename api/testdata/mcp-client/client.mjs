// client.mjs: the official TypeScript MCP SDK's client against svc's /mcp.
// api/mcp_sdk_test.go runs it against a real server; by hand:
//
//   ./install.sh                 # the SDK into ${SVC_NPM_CACHE:-/tmp/svc-mcp-client}
//   cp client.mjs /tmp/svc-mcp-client/ && \
//   SVC_MCP_URL=http://localhost:8080/mcp SVC_MCP_KEY=ak_... node /tmp/svc-mcp-client/client.mjs
//
// (Node resolves the SDK from the node_modules beside the script.) It
// connects over streamable HTTP with the key as a bearer token, lists the
// tools, calls a sample across resources, and prints one JSON object:
// {"server": ..., "tools": [names], "calls": [{name, isError, result}]}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = process.env.SVC_MCP_URL;
const key = process.env.SVC_MCP_KEY;
if (!url || !key) {
  console.error("set SVC_MCP_URL (the /mcp endpoint) and SVC_MCP_KEY (an ak_ key)");
  process.exit(2);
}

const dataset = {
  id: "mcp-sdk-ds",
  version: "1.0.0",
  cases: [
    { id: "a", task: "do a", graders: [{ id: "g", kind: "exit_code" }] },
    { id: "b", task: "do b", graders: [{ id: "g", kind: "exit_code" }] },
  ],
};

// One call per resource family: registries, runs, scorecards, identity,
// notifications; one is refused (a scorecard that does not exist).
const sample = [
  ["get_me", {}],
  ["create_dataset", { body: dataset, origin: { note: "typescript sdk" } }],
  ["list_datasets", {}],
  ["get_dataset", { id: dataset.id, version: "latest" }],
  ["set_dataset_version_tags", { id: dataset.id, version: "1.0.0", body: ["stable"] }],
  ["create_judge", { body: { id: "mcp-sdk-judge", version: "1.0.0", kind: "code", language: "python", code: "print(1)" } }],
  ["list_judges", {}],
  ["get_scorecard", { id: "sc_does_not_exist" }],
  ["list_runs", { limit: 5 }],
  ["list_scorecards", {}],
  ["list_notifications", { unread: true }],
];

const client = new Client({ name: "svc-mcp-sdk-test", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
});
await client.connect(transport);

const tools = [];
let cursor;
do {
  const page = await client.listTools(cursor ? { cursor } : {});
  tools.push(...page.tools);
  cursor = page.nextCursor;
} while (cursor);

const calls = [];
for (const [name, args] of sample) {
  const res = await client.callTool({ name, arguments: args });
  const text = res.content?.find((c) => c.type === "text")?.text ?? "";
  let result;
  try {
    result = JSON.parse(text);
  } catch {
    result = text;
  }
  calls.push({ name, isError: res.isError === true, result, structured: res.structuredContent ?? null });
}

console.log(JSON.stringify({ server: client.getServerVersion(), tools: tools.map((t) => t.name).sort(), calls }));
await client.close();
