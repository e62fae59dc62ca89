// One JavaScript reading per frame, for FuzzFrameReadsAlike: a base64 frame
// per input line, one JSON answer per output line (see reading.go).
const readline = require('readline');
const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
const own = (o, k) => Object.prototype.hasOwnProperty.call(o, k);
const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
rl.on('line', (line) => {
  let out;
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(line, 'base64'));
    const m = JSON.parse(text);
    out = { ok: true, kind: 'invalid' };
    if (isObj(m)) {
      out.keys = Object.keys(m).sort();
      if (isObj(m.params)) out.params = Object.keys(m.params).sort();
      if (isObj(m.params) && isObj(m.params._meta)) out.meta = Object.keys(m.params._meta).sort();
      if (isObj(m.result)) out.result = Object.keys(m.result).sort();
      if (m.jsonrpc === '2.0') {
        if (own(m, 'method') && typeof m.method === 'string') {
          out.kind = own(m, 'id') ? 'request' : 'notification';
          out.method = m.method;
        } else if (!own(m, 'method') && own(m, 'id') && (own(m, 'result') || own(m, 'error'))) {
          out.kind = 'response';
        }
        if (own(m, 'id')) out.id = m.id;
        if (isObj(m.params)) {
          if (out.kind === 'request' && m.method === 'tools/call' && typeof m.params.name === 'string') out.tool = m.params.name;
          if (out.kind === 'notification' && m.method === 'notifications/progress' && own(m.params, 'progressToken')) out.progress = m.params.progressToken;
          if (out.kind === 'request' && isObj(m.params._meta) && own(m.params._meta, 'progressToken')) out.progress = m.params._meta.progressToken;
        }
      }
    }
  } catch (e) {
    out = { ok: false, error: String(e.message).slice(0, 80) };
  }
  process.stdout.write(JSON.stringify(out) + '\n');
});
