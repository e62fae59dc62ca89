// A minimal MCP Apps host for the approval card's browser test: the real
// @modelcontextprotocol/ext-apps AppBridge renders the server's ui://
// resource in a sandboxed iframe and proxies the card's tool calls to the
// server through a real @modelcontextprotocol/client Client (streamable
// HTTP, same origin: the test server forwards /mcp to `mcpsafe files`).
// esbuild bundles this file for the browser at test time.
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const host = { messages: [], calls: [], log: [] };
window.host = host;

host.connect = async () => {
  const client = new Client({ name: "card-test-host", version: "1" }, {
    capabilities: { extensions: { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } } },
  });
  await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", location.href)));
  host.client = client;
  const { tools } = await client.listTools();
  host.tools = tools;
  return tools.map((t) => ({ name: t.name, meta: t._meta || null, description: t.description || "" }));
};

// call is the model's call of a tool.
host.call = async (name, args) => {
  const res = await host.client.callTool({ name, arguments: args });
  host.calls.push({ name, args, res });
  return res;
};

// render shows the card for a tool call's result, as a host does.
host.render = async (name, args, result) => {
  const tool = host.tools.find((t) => t.name === name);
  const uri = tool && tool._meta && tool._meta.ui && tool._meta.ui.resourceUri;
  if (!uri) throw new Error("tool " + name + " names no ui:// resource");
  const read = await host.client.readResource({ uri });
  const html = read.contents[0].text;
  const old = document.getElementById("card");
  if (old) old.remove();
  const frame = document.createElement("iframe");
  frame.id = "card";
  frame.setAttribute("sandbox", "allow-scripts");
  frame.style.cssText = "width: 760px; height: 640px; border: 1px solid #ccc; border-radius: 8px;";
  document.getElementById("chat").appendChild(frame);
  const bridge = new AppBridge(host.client, { name: "card-test-host", version: "1" },
    { serverTools: {}, serverResources: {}, message: { text: {} } });
  bridge.onmessage = async (params) => { host.messages.push(params); return {}; };
  bridge.oninitialized = () => {
    bridge.sendToolInput({ arguments: args });
    bridge.sendToolResult(result);
  };
  bridge.addEventListener("sizechange", ({ height }) => { if (height) frame.style.height = Math.min(height + 4, 900) + "px"; });
  await bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow));
  frame.srcdoc = html;
  host.bridge = bridge;
  return true;
};

// stress runs n rounds of what a host does for a card (a new session:
// initialize, tools/list, resources/read of the card, the gated call,
// DELETE) through the same relay, each request given timeoutMs to be
// answered; it returns what went wrong (approval_card_relay_test.go).
host.stress = async (n, timeoutMs) => {
  const failed = [];
  for (let i = 0; i < n; i++) {
    const client = new Client({ name: "card-test-stress", version: "1" }, {
      capabilities: { extensions: { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } } },
    });
    const opts = { timeout: timeoutMs };
    const step = async (what, f) => {
      const t0 = performance.now();
      try {
        return await f();
      } catch (e) {
        failed.push(`round ${i}: ${what} failed after ${Math.round(performance.now() - t0)} ms: ${e}`);
        throw e;
      }
    };
    try {
      await step("initialize", () => client.connect(new StreamableHTTPClientTransport(new URL("/mcp", location.href)), opts));
      await step("tools/list", () => client.listTools(undefined, opts));
      await step("resources/read", () => client.readResource({ uri: "ui://mcpsafe/approval-card" }, opts));
      await step("tools/call", () => client.callTool({ name: "delete_file", arguments: { path: "keep.txt" } }, opts));
      await step("DELETE", () => client.transport.terminateSession());
    } catch (e) {
      // recorded by step
    }
    await client.close();
  }
  return failed;
};
