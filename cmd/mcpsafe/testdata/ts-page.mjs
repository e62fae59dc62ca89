// A real TypeScript SDK client (@modelcontextprotocol/sdk 1.32.2, protocol
// 2025-11-25) calling delete_file on a server started with --approval-page.
// Used by approval_page_e2e_test.go, which reads the JSON lines this prints.
//
// env: SDK_DIR, SERVER (JSON array: command and args), TOOL (default
// delete_file), ARGS (JSON arguments; default {"path": TARGET}), TARGET, TARGETS
// (comma-separated paths: one call each, concurrently), ELICIT
// ("url": declares elicitation {form, url} and answers every URL
// elicitation "accept" after printing its URL; "none": declares nothing),
// HOLD (set: wait for a line on stdin before closing, so the server stays up).
const sdk = process.env.SDK_DIR;
const { Client } = await import(sdk + "/dist/esm/client/index.js");
const { StdioClientTransport } = await import(sdk + "/dist/esm/client/stdio.js");
const { ElicitRequestSchema, ElicitationCompleteNotificationSchema } = await import(sdk + "/dist/esm/types.js");

const [command, ...args] = JSON.parse(process.env.SERVER);
const out = (o) => console.log(JSON.stringify(o));
const url = process.env.ELICIT === "url";

const client = new Client({ name: "ts-page", version: "1" },
  { capabilities: url ? { elicitation: { form: {}, url: {} } } : {} });
if (url) {
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    out({ step: "elicit", mode: req.params.mode, url: req.params.url, message: req.params.message, id: req.params.elicitationId });
    return { action: "accept" };
  });
  client.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) => {
    out({ step: "complete", id: n.params.elicitationId });
  });
}
try {
  await client.connect(new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" }));
  const call = (callArgs) => client.callTool({ name: process.env.TOOL || "delete_file", arguments: callArgs }, undefined,
    { timeout: 120000, resetTimeoutOnProgress: true, onprogress: () => {} });
  if (process.env.TARGETS) {
    // Several calls at once, one result line each, named by target.
    await Promise.all(process.env.TARGETS.split(",").map(async (target) => {
      out({ step: "result", target, result: await call({ path: target }) });
    }));
  } else {
    const res = await call(process.env.ARGS ? JSON.parse(process.env.ARGS) : { path: process.env.TARGET });
    out({ step: "result", result: res });
  }
} catch (e) {
  out({ step: "error", message: String(e.message) });
}
if (process.env.HOLD) {
  // Keep the server up until the test says "go" (its pages stay open).
  out({ step: "holding" });
  await new Promise((resolve) => process.stdin.once("data", resolve));
}
await client.close();
