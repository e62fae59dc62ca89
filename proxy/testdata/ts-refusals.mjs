// A real TypeScript SDK client driving the proxy over stdio, to show that
// every answer of a gated tool reaches it as a result: GEN=1 is
// @modelcontextprotocol/sdk 1.x (2025-11-25), GEN=2 @modelcontextprotocol/client
// 2.x (whatever it negotiates). Both validate a tool's structured content
// against the output schema tools/list advertised. Used by
// ts_refusals_e2e_test.go.
//
// env: SDK_DIR (the package), GEN, PROXY (JSON array: command and args),
// ANSWER (accept | decline | cancel | never), TARGET (file to write).
const dir = process.env.SDK_DIR;
const gen = process.env.GEN;
let Client, StdioClientTransport, ElicitRequestSchema;
if (gen === "1") {
  ({ Client } = await import(dir + "/dist/esm/client/index.js"));
  ({ StdioClientTransport } = await import(dir + "/dist/esm/client/stdio.js"));
  ({ ElicitRequestSchema } = await import(dir + "/dist/esm/types.js"));
} else {
  ({ Client } = await import(dir + "/dist/index.mjs"));
  ({ StdioClientTransport } = await import(dir + "/dist/stdio.mjs"));
}
const [command, ...args] = JSON.parse(process.env.PROXY);
const answer = process.env.ANSWER;
const out = (o) => console.log(JSON.stringify(o));
const opts = { capabilities: { elicitation: { form: {} } } };
if (gen !== "1") opts.inputRequired = { autoFulfill: true };
const client = new Client({ name: "ts-refusals", version: "1" }, opts);
const handler = async () => {
  switch (answer) {
    case "accept": return { action: "accept", content: { approve: true } };
    case "cancel": return { action: "cancel" };
    case "never": return new Promise(() => {});
    default: return { action: "decline" };
  }
};
client.setRequestHandler(gen === "1" ? ElicitRequestSchema : "elicitation/create", handler);
try {
  await client.connect(new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" }));
  const { tools } = await client.listTools();
  const w = tools.find((t) => t.name === "write_file");
  out({ step: "listed", outputSchema: w && w.outputSchema ? w.outputSchema : null });
  const res = await client.callTool({ name: "write_file", arguments: { path: process.env.TARGET, content: "from ts" } });
  out({ step: "result", result: res });
} catch (e) {
  out({ step: "error", message: String(e.message) });
}
await client.close();
