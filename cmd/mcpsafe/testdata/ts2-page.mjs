// A real TypeScript SDK 2.x client (@modelcontextprotocol/client 2.4.0),
// pinned to protocol 2026-07-28 (multi-round-trip requests), calling
// delete_file on a server started with --approval-page. It declares
// elicitation {form, url} and answers every URL elicitation "accept" (the
// user agreed to open the link) after printing it; the SDK then retries the
// call with the server's requestState (inputRequired.autoFulfill).
// Used by approval_page_ts2_e2e_test.go, which reads the JSON lines.
//
// env: CLIENT_DIR (the package's directory), SERVER (JSON array: command
// and args), TARGET, HOLD (set: wait for a line on stdin before closing).
const dir = process.env.CLIENT_DIR;
const { Client } = await import(dir + "/dist/index.mjs");
const { StdioClientTransport } = await import(dir + "/dist/stdio.mjs");

const [command, ...args] = JSON.parse(process.env.SERVER);
const out = (o) => console.log(JSON.stringify(o));

const client = new Client({ name: "ts2-page", version: "1" }, {
  capabilities: { elicitation: { form: {}, url: {} } },
  versionNegotiation: { mode: { pin: "2026-07-28" } },
  inputRequired: { autoFulfill: true },
});
client.setRequestHandler("elicitation/create", async (req) => {
  out({ step: "elicit", mode: req.params.mode, url: req.params.url, message: req.params.message });
  return { action: "accept" };
});
try {
  await client.connect(new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" }));
  out({ step: "connected", protocol: client.getNegotiatedProtocolVersion ? client.getNegotiatedProtocolVersion() : undefined });
  const res = await client.callTool({ name: "delete_file", arguments: { path: process.env.TARGET } }, { timeout: 120000, resetTimeoutOnProgress: true, onprogress: () => {} });
  out({ step: "result", result: res });
} catch (e) {
  out({ step: "error", message: String(e.message) });
}
if (process.env.HOLD) {
  // Keep the server up until the test says "go" (its pages stay open).
  out({ step: "holding" });
  await new Promise((resolve) => process.stdin.once("data", resolve));
}
await client.close();
