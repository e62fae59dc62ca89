"use strict";
// The mcpsafe approval card: an MCP Apps view. It speaks the apps
// protocol (JSON-RPC over postMessage with the host), shows the plan the
// gate put in the tool result's _meta as text only (textContent, never
// markup), and sends the person's decision to the app-only decision tool.
(function () {
  var META = "io.mcpsafe/approval-card";
  var nextId = 1, waiting = {}, hostCaps = {};
  var args = null, card = null, decided = false, expired = false, timer = 0;
  var $ = function (id) { return document.getElementById(id); };

  function send(m) { window.parent.postMessage(m, "*"); }
  function request(method, params) {
    var id = nextId++;
    send({ jsonrpc: "2.0", id: id, method: method, params: params });
    return new Promise(function (ok, fail) { waiting[id] = { ok: ok, fail: fail }; });
  }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = String(text);
    return e;
  }
  function status(text, cls) {
    var s = $("status");
    s.textContent = text;
    s.className = "status " + (cls || "");
    resized();
  }
  function resized() {
    send({ jsonrpc: "2.0", method: "ui/notifications/size-changed",
      params: { width: Math.ceil(document.body.getBoundingClientRect().width), height: Math.ceil(document.body.getBoundingClientRect().height) } });
  }
  function buttons(on) { $("approve").disabled = !on; $("deny").disabled = !on; }
  function text(result) {
    var out = [];
    (result && result.content || []).forEach(function (c) { if (c && c.type === "text") out.push(String(c.text)); });
    return out.join("\n");
  }

  function render() {
    if (!card) return;
    $("tool").textContent = "Approve " + card.tool + (card.server ? " on " + card.server : "") + "?";
    document.title = "Approve " + card.tool + (card.server ? " on " + card.server : "") + "? · mcpsafe";
    $("summary").textContent = card.summary;
    var plan = $("plan");
    plan.textContent = "";
    if (card.details && card.details.length) {
      var ul = el("ul");
      card.details.forEach(function (d) { ul.appendChild(el("li", "", d)); });
      plan.appendChild(ul);
    }
    if (card.targets && card.targets.length) {
      plan.appendChild(el("div", "muted", "Targets"));
      var tl = el("ul");
      card.targets.forEach(function (t) { tl.appendChild(el("li", "", t.state ? t.name + ": " + t.state : t.name)); });
      plan.appendChild(tl);
    }
    (card.parts || []).forEach(function (p, i) {
      var box = el("div", "part");
      var head = p.title || (p.kind === "diff" ? "Change" + (p.path ? " to " + p.path : "") : "Table");
      if (p.kind === "diff") head += " (+" + (p.added || 0) + " −" + (p.removed || 0) + ")";
      box.appendChild(el("h2", "", (i + 1) + ". " + head));
      if (p.kind === "diff") {
        var pre = el("pre");
        (p.lines || []).forEach(function (l) {
          var cls = l.op === "+" ? "add" : l.op === "-" ? "del" : l.op === "@@" ? "hunk" : "";
          var mark = l.op === "@@" ? "@@ " : l.op + " ";
          pre.appendChild(el("span", "line " + cls, mark + l.text));
        });
        box.appendChild(pre);
      } else {
        var table = el("table"), tr = el("tr");
        (p.columns || []).forEach(function (c) { tr.appendChild(el("th", "", c)); });
        table.appendChild(tr);
        (p.rows || []).forEach(function (r) {
          var row = el("tr");
          r.forEach(function (c) { row.appendChild(el("td", "", c)); });
          table.appendChild(row);
        });
        box.appendChild(table);
      }
      plan.appendChild(box);
    });
    plan.appendChild(el("div", "muted", "Arguments (in full; sensitive values redacted)"));
    var al = el("ul");
    (card.arguments || []).forEach(function (a) { al.appendChild(el("li", "", a)); });
    plan.appendChild(al);
    $("decide").hidden = false;
    tick();
    timer = setInterval(tick, 1000);
    resized();
  }

  function tick() {
    if (!card || decided) return;
    var left = Date.parse(card.expires_at) - Date.now();
    if (!(left > 0)) {
      expired = true;
      clearInterval(timer);
      buttons(false);
      $("left").textContent = "";
      status("This approval request expired; nothing ran. Ask for the action again to get a new card.", "no");
      return;
    }
    var s = Math.ceil(left / 1000);
    $("left").textContent = "Expires in " + Math.floor(s / 60) + ":" + ("0" + (s % 60)).slice(-2);
    buttons(args !== null);
  }

  function decide(approve) {
    if (decided || expired || !card || args === null) return;
    decided = true;
    clearInterval(timer);
    buttons(false);
    $("left").textContent = "";
    status(approve ? "Approving…" : "Denying…");
    request("tools/call", { name: card.decision_tool, arguments: { decision: card.decision, arguments: args, approve: approve } })
      .then(function (res) {
        var said = text(res);
        if (res && res.isError) {
          status((approve ? "Not run: " : "Denied: ") + said, "no");
        } else {
          status("Approved; " + card.tool + " ran.\n" + said, "ok");
        }
        if (hostCaps.message) {
          var words = (res && res.isError ? (approve ? "The approval card did not run " : "I denied ") : "I approved ") +
            card.tool + " in the approval card. Result:\n" + said;
          request("ui/message", { role: "user", content: [{ type: "text", text: words }] }).catch(function () {});
        }
      }, function (err) {
        status("The card got no answer to the decision (" + (err && err.message || "error") + "); look at the conversation before asking again.", "no");
      });
  }

  function onResult(result) {
    var c = result && result._meta && result._meta[META];
    if (!c || typeof c.decision !== "string") {
      $("tool").textContent = "No approval needed here";
      status(text(result) || "This call did not ask for approval in this card.");
      return;
    }
    card = c;
    render();
  }

  window.addEventListener("message", function (ev) {
    if (ev.source !== window.parent) return;
    var m = ev.data;
    if (!m || m.jsonrpc !== "2.0") return;
    if (m.method === undefined && m.id !== undefined && waiting[m.id]) {
      var w = waiting[m.id];
      delete waiting[m.id];
      if (m.error) w.fail(m.error); else w.ok(m.result);
      return;
    }
    switch (m.method) {
      case "ui/notifications/tool-input":
        args = (m.params && m.params.arguments) || {};
        tick();
        return;
      case "ui/notifications/tool-result":
        onResult(m.params);
        return;
      case "ui/resource-teardown":
      case "ping":
        send({ jsonrpc: "2.0", id: m.id, result: {} });
        return;
    }
    if (m.id !== undefined && m.method) {
      send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "not supported by the approval card" } });
    }
  });

  $("approve").addEventListener("click", function () { decide(true); });
  $("deny").addEventListener("click", function () { decide(false); });
  request("ui/initialize", {
    appInfo: { name: "mcpsafe-approval-card", version: "1" },
    appCapabilities: {},
    protocolVersion: "2026-01-26"
  }).then(function (r) {
    hostCaps = (r && r.hostCapabilities) || {};
    send({ jsonrpc: "2.0", method: "ui/notifications/initialized", params: {} });
    resized();
  });
})();
