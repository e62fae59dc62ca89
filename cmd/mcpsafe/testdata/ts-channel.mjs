// A real TypeScript SDK client (@modelcontextprotocol/sdk 1.32.2) calling
// `mcpsafe files --mode channel` over stdio while a human decides at the
// approval service. Used by channel_wait_e2e_test.go, which reads the JSON
// lines this prints and answers "go" lines on stdin when it has acted.
//
// env: SDK_DIR, SERVER (JSON array: command and args), SCENARIO, TARGET,
// OTHER (a second file in the root), TIMEOUT_MS (the client's request timeout).
//
// Scenarios:
//   progress   short timeout + resetTimeoutOnProgress: the call waits
//   cancel     short timeout without reset: the client gives up
//   disconnect long timeout; the test kills this process while it waits
//   async      no progress token: approval_pending, then call again with the handle
const sdk = process.env.SDK_DIR;
const { Client } = await import(sdk + "/dist/esm/client/index.js");
const { StdioClientTransport } = await import(sdk + "/dist/esm/client/stdio.js");
import readline from "node:readline";

const [command, ...args] = JSON.parse(process.env.SERVER);
const scenario = process.env.SCENARIO;
const target = process.env.TARGET;
const timeout = Number(process.env.TIMEOUT_MS);
const out = (o) => console.log(JSON.stringify(o));

const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const waitGo = async () => { await lines.next(); };

const client = new Client({ name: "ts-channel", version: "1" }, { capabilities: {} });
await client.connect(new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" }));
const call = (path, extra = {}, options = {}) =>
  client.callTool({ name: "delete_file", arguments: { path, ...extra } }, undefined, options);

let progress = 0;
try {
  switch (scenario) {
    case "progress": {
      const res = await call(target, {}, { timeout, resetTimeoutOnProgress: true, onprogress: () => { progress++; } });
      out({ step: "result", result: res, progress });
      break;
    }
    case "cancel":
    case "disconnect": {
      out({ step: "calling" });
      try {
        const res = await call(target, {}, { timeout, onprogress: () => { progress++; } });
        out({ step: "result", result: res, progress });
      } catch (e) {
        out({ step: "gave_up", message: String(e.message), progress });
      }
      await waitGo(); // the test checked the service and the journal
      break;
    }
    case "async": {
      const first = await call(target, {}, { timeout });
      out({ step: "first", result: first });
      const handle = first.structuredContent?.approval_token;
      const swapped = await call(process.env.OTHER, { approval_token: handle }, { timeout });
      out({ step: "swapped", result: swapped });
      await waitGo(); // an approver approved
      const second = await call(target, { approval_token: handle }, { timeout });
      out({ step: "second", result: second });
      const replay = await call(target, { approval_token: handle }, { timeout });
      out({ step: "replay", result: replay });
      break;
    }
    default:
      throw new Error("unknown scenario " + scenario);
  }
} catch (e) {
  out({ step: "error", message: String(e.message) });
}
await client.close();
process.exit(0);
