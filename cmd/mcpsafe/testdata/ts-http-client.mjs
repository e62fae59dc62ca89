// A real TypeScript SDK client (@modelcontextprotocol/sdk, protocol
// 2025-11-25) over streamable HTTP, as a user points one at `mcpsafe files
// --http`. It declares form elicitation and answers ANSWER (accept or
// decline). Used by defaults_e2e_test.go.
//
// env: SDK_DIR (the SDK package), URL (the /mcp endpoint), ANSWER,
// TOOL and ARGS (JSON) of the one call it makes.
const sdk = process.env.SDK_DIR;
const { Client } = await import(sdk + "/dist/esm/client/index.js");
const { StreamableHTTPClientTransport } = await import(sdk + "/dist/esm/client/streamableHttp.js");
const { ElicitRequestSchema } = await import(sdk + "/dist/esm/types.js");

const client = new Client({ name: "ts-http-e2e", version: "1" }, { capabilities: { elicitation: { form: {} } } });
let asked = 0;
client.setRequestHandler(ElicitRequestSchema, async () => {
  asked++;
  return process.env.ANSWER === "accept" ? { action: "accept", content: { approve: true } } : { action: "decline" };
});
const out = (o) => console.log(JSON.stringify(o));
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(process.env.URL)));
  const result = await client.callTool({ name: process.env.TOOL, arguments: JSON.parse(process.env.ARGS) });
  out({ protocol: client.transport.protocolVersion ?? "", asked, result });
} catch (e) {
  out({ error: String(e.message) });
}
await client.close();
