// A real TypeScript SDK client (@modelcontextprotocol/sdk, protocol
// 2025-11-25) driving the proxy over stdio. Used by ts_e2e_test.go.
//
// env: SDK_DIR (the SDK package), PROXY (JSON array: command and args),
// SCENARIO (token | accept | decline), TARGET (file to write).
const sdk = process.env.SDK_DIR;
const { Client } = await import(sdk + "/dist/esm/client/index.js");
const { StdioClientTransport } = await import(sdk + "/dist/esm/client/stdio.js");
const { ElicitRequestSchema } = await import(sdk + "/dist/esm/types.js");

const [command, ...args] = JSON.parse(process.env.PROXY);
const scenario = process.env.SCENARIO;
const target = process.env.TARGET;
const canElicit = scenario !== "token";
const client = new Client({ name: "ts-e2e", version: "1" },
  { capabilities: canElicit ? { elicitation: { form: {} } } : {} });
if (canElicit) {
  client.setRequestHandler(ElicitRequestSchema, async () =>
    scenario === "accept" ? { action: "accept", content: { approve: true } } : { action: "decline" });
}
const out = (o) => console.log(JSON.stringify(o));
await client.connect(new StdioClientTransport({ command, args, env: process.env, stderr: "ignore" }));
try {
  const call = { name: "write_file", arguments: { path: target, content: "from ts" } };
  const first = await client.callTool(call);
  out({ step: "first", result: first });
  if (scenario === "token") {
    const token = first.structuredContent.approval_token;
    const second = await client.callTool({ name: "write_file", arguments: { ...call.arguments, approval_token: token } });
    out({ step: "second", result: second });
  }
} catch (e) {
  out({ step: "error", message: String(e.message) });
}
await client.close();
