# One Python reading per frame, for FuzzFrameReadsAlike: a base64 frame per
# input line, one JSON answer per output line (see reading.go).
import base64, json, sys

def is_obj(v):
    return isinstance(v, dict)

def read(line):
    m = json.loads(base64.b64decode(line).decode('utf-8'))
    out = {'ok': True, 'kind': 'invalid'}
    if not is_obj(m):
        return out
    out['keys'] = sorted(m.keys())
    p = m.get('params')
    if is_obj(p):
        out['params'] = sorted(p.keys())
        if is_obj(p.get('_meta')):
            out['meta'] = sorted(p['_meta'].keys())
    if is_obj(m.get('result')):
        out['result'] = sorted(m['result'].keys())
    if m.get('jsonrpc') == '2.0':
        if 'method' in m and isinstance(m['method'], str):
            out['kind'] = 'request' if 'id' in m else 'notification'
            out['method'] = m['method']
        elif 'method' not in m and 'id' in m and ('result' in m or 'error' in m):
            out['kind'] = 'response'
        if 'id' in m:
            out['id'] = m['id']
        if is_obj(p):
            if out['kind'] == 'request' and m.get('method') == 'tools/call' and isinstance(p.get('name'), str):
                out['tool'] = p['name']
            if out['kind'] == 'notification' and m.get('method') == 'notifications/progress' and 'progressToken' in p:
                out['progress'] = p['progressToken']
            if out['kind'] == 'request' and is_obj(p.get('_meta')) and 'progressToken' in p['_meta']:
                out['progress'] = p['_meta']['progressToken']
    return out

for line in sys.stdin:
    try:
        out = read(line.strip())
    except Exception as e:  # a frame Python refuses
        out = {'ok': False, 'error': str(e)[:80]}
    sys.stdout.write(json.dumps(out, sort_keys=True) + '\n')
    sys.stdout.flush()
