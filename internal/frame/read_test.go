package frame

import (
	"errors"
	"testing"
)

// TestReadRule: each attack the project fixed, beside its control, and
// the reader's verdict on it.
func TestReadRule(t *testing.T) {
	for _, c := range []struct {
		name, frame string
		alike       bool
		kind        Kind
	}{
		{"control: a tools/call", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"a":1},"_meta":{"progressToken":3}}}` + "\n", true, Request},
		{"control: CRLF line end", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}` + "\r\n", true, Request},
		{"control: a notification", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p1","progress":1}}`, true, Notification},
		{"control: a response", `{"jsonrpc":"2.0","id":"x","result":{"content":[]}}`, true, Response},
		{"control: an error response", `{"jsonrpc":"2.0","id":-9007199254740991,"error":{"code":-1,"message":"m"}}`, true, Response},
		{"control: a vendor method with any params", `{"jsonrpc":"2.0","id":9,"method":"x-acme/fs.delete","params":{"tool":"fs.delete","Tool":1}}`, false, Request},
		{"control: a vendor method", `{"jsonrpc":"2.0","id":9,"method":"x-acme/fs.delete","params":{"path":"/"}}`, true, Request},
		{"control: case variants in structuredContent (a map to every reader)", `{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"env":{"PATH":"/bin","path":"x","a":[{"K":1,"k":2}]}}}}`, true, Response},
		{"a duplicate in structuredContent", `{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"env":{"PATH":"/bin","PATH":"x"}}}}`, false, Response},
		{"case variants in a content item", `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a","Text":"b"}],"structuredContent":{}}}`, false, Response},
		{"case variants in structuredContent beside ones in content", `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","Type":"image"}],"structuredContent":{"a":1,"A":2}}}`, false, Response},
		{"case variants in structuredContent of a request's params", `{"jsonrpc":"2.0","id":1,"method":"x/y","params":{"structuredContent":{"a":1,"A":2}}}`, false, Request},
		{"control: folding-distinct keys deep down (ß, ss)", `{"jsonrpc":"2.0","id":1,"result":{"x":{"ß":1,"ss":2}}}`, true, Response},

		{"an extra member", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"},"extra":1}`, false, Request},
		{"Params beside params", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"},"Params":{"name":"delete_thing"}}`, false, Invalid},
		{"paramſ (U+017F) alone", `{"jsonrpc":"2.0","id":9,"method":"x-vendor/run","paramſ":{"tool":"delete_thing"}}`, false, Request},
		{"method beside Method", `{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"progressToken":"p1"},"Method":"notifications/progress"}`, false, Invalid},
		{"METHOD null on a request", `{"jsonrpc":"2.0","id":8,"method":"elicitation/create","params":{},"METHOD":null}`, false, Invalid},
		{"a response with a method", `{"jsonrpc":"2.0","id":7,"result":{},"method":"elicitation/create"}`, false, Request},
		{"duplicate id", `{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"echo"}}`, false, Invalid},
		{"duplicate progressToken", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"other","progressToken":"p1"}}`, false, Notification},
		{"duplicate escaped name", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","n\u0061me":"delete_thing"}}`, false, Request},
		{"folded keys deep down (ſ)", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"source":1,"ſource":2}}}`, false, Request},
		{"folded keys deep down (Kelvin)", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","_meta":{"progressToken":1,"progressTo\u212Aen":2}}}`, false, Request},
		{"a folded ask in a result", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{"q":{"method":"roots/list","Method":"elicitation/create"}}}}`, false, Response},
		{"InputRequests alone", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","InputRequests":{}}}`, false, Response},
		{"inputRequeſts (U+017F) alone", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequeſts":{}}}`, false, Response},
		{"progressTo\u212Aen (Kelvin) alone", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","_meta":{"progressTo\u212Aen":2}}}`, false, Request},
		{"progressToken in another case", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"PROGRESSTOKEN":"p1"}}`, false, Notification},
		{"a lone CR", "{\"jsonrpc\":\"2.0\",\r\"method\":\"notifications/x\"}\n", false, Notification},
		{"a CR before CRLF", "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}\r\r\n", false, Notification},
		{"a byte-order mark", "\ufeff{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}", false, Invalid},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\",\"params\":{\"a\":\"\xff\"}}", false, Invalid},
		{"a lone surrogate", `{"jsonrpc":"2.0","method":"notifications/x","params":{"\ud800":1,"\ud801":2}}`, false, Invalid},
		{"trailing data", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}} {"x":1}`, false, Invalid},
		{"a batch", `[{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}]`, false, Invalid},
		{"toolſ/call", `{"jsonrpc":"2.0","id":7,"method":"toolſ/call","params":{"name":"echo","extra":1}}`, true, Request},
		{"a tools/call member the SDK drops", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","task":{}}}`, false, Request},
		{"a fractional id", `{"jsonrpc":"2.0","id":7.0,"method":"tools/call","params":{"name":"echo"}}`, false, Request},
		{"an id beyond 2^53", `{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"echo"}}`, false, Request},
		{"an escaped string id", `{"jsonrpc":"2.0","id":"\u006dcpsafe-sdk-3","method":"tools/call","params":{"name":"echo"}}`, false, Request},
		{"null id", `{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"x"}}`, false, Response},
		{"result and error", `{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}`, false, Response},
		{"jsonrpc escaped", `{"jsonrpc":"2\u002e0","method":"notifications/x"}`, false, Invalid},
		{"array params", `{"jsonrpc":"2.0","method":"notifications/x","params":[1]}`, false, Notification},
		{"an error code that is a string (the SDK fails)", `{"jsonrpc":"2.0","id":0,"error":{"code":"","message":"m"}}`, false, Response},
		{"method null (encoding/json reads \"\", JavaScript no method)", `{"jsonrpc":"2.0","id":1,"method":null}`, false, Invalid},
	} {
		f := Read([]byte(c.frame))
		if f.Alike != c.alike {
			t.Errorf("%s: alike = %v (%s), want %v", c.name, f.Alike, f.Why, c.alike)
		}
		if c.kind <= Response && f.Kind != c.kind {
			t.Errorf("%s: kind = %v, want %v", c.name, f.Kind, c.kind)
		}
	}
}

func TestReadFields(t *testing.T) {
	f := Read([]byte(`{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"fs.delete","_meta":{"progressToken":"t"}}}` + "\n"))
	if !f.Alike || f.ID != `"a-1"` || f.Method != "tools/call" || f.Tool != "fs.delete" || f.Progress != `"t"` {
		t.Fatalf("%+v", f)
	}
	f = Read([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":12,"progress":1}}`))
	if !f.Alike || f.Kind != Notification || f.ID != "" || f.Progress != "12" {
		t.Fatalf("%+v", f)
	}
}

// TestCheckRules: the strict reading's rules, each beside its control.
func TestCheckRules(t *testing.T) {
	for _, c := range []struct {
		in   string
		kind ErrKind
		ok   bool
	}{
		{`{"a":1,"b":{"a":2}}`, 0, true},
		{`{"a":1,"a":2}`, ErrDuplicate, false},
		{`{"x":[{"a":1,"\u0061":2}]}`, ErrDuplicate, false},
		{`{"source":1,"ſource":2}`, ErrFolded, false},
		{`{"Path":1,"path":2}`, ErrFolded, false},
		{`{"ß":1,"ss":2}`, 0, true},
		{`{"a":1} {}`, ErrInvalid, false},
		{`"\ud800"`, ErrInvalid, false},
		{`"\ud83d\ude00"`, 0, true},
		{"\"\xff\"", ErrInvalid, false},
		{`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`, ErrTooDeep, false},
	} {
		err := Check([]byte(c.in), Rules{})
		var e *Error
		if (err == nil) != c.ok || (err != nil && (!errors.As(err, &e) || e.Kind != c.kind)) {
			t.Errorf("%q: %v", c.in, err)
		}
	}
	// Many keys: the map path finds folded keys too.
	many := `{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":0,"k11":1,"k12":2,"k13":3,"k14":4,"k15":5,"k16":6,"k17":7,`
	if err := Check([]byte(many+`"K3":1}`), Rules{}); err == nil {
		t.Errorf("a folded key among many passed")
	}
	if err := Check([]byte(many+`"k18":1}`), Rules{}); err != nil {
		t.Errorf("control: %v", err)
	}
}

// TestDecodeExact: Decode refuses what encoding/json would take quietly.
func TestDecodeExact(t *testing.T) {
	type inner struct {
		Name string `json:"name"`
	}
	type outer struct {
		Version int     `json:"v"`
		In      inner   `json:"in"`
		List    []inner `json:"list"`
	}
	var o outer
	if err := Decode([]byte(`{"v":1,"in":{"name":"a"},"list":[{"name":"b"}]}`), &o); err != nil || o.In.Name != "a" {
		t.Fatalf("control: %v %+v", err, o)
	}
	for _, bad := range []string{
		`{"v":1,"V":2}`, `{"V":1}`, `{"v":1,"in":{"NAME":"a"}}`, `{"v":1,"list":[{"ſ":1,"name":"b","Name":"c"}]}`,
		`{"v":1,"list":[{"nAme":"b"}]}`, `{"v":1,"other":1}`, `{"v":1} {}`, `{"v":1,"v":1}`,
	} {
		if err := Decode([]byte(bad), &o); err == nil {
			t.Errorf("%s: decoded", bad)
		}
	}
}

// TestCheckGrammar: Check reads the grammar as encoding/json does.
func TestCheckGrammar(t *testing.T) {
	for _, in := range []string{
		`{"a":}`, `[1,]`, `01`, `1.`, `.5`, `"\x"`, `tru`, `{"a" 1}`, `{,}`, `"\u12"`, `"ab`, "\"a\tb\"", "\"a\x01b\"",
		`-`, `1e`, `+1`, `NaN`, `[1 2]`, `{"a":1,}`, `{"a":1`, `[`, ``, ` `, `nul`, `truex`, `{"a":1}}`, `{1:2}`, `[1,2]]`, `"\u00e9"`,
		`{"a":[1,2,{"b":null}],"c":-0.5e+10,"d":"\ud83d\ude00","e":true,"f":false}`, ` [ ] `, `0`, `-0`, `1E5`, `1e-5`, `"\/"`,
	} {
		if why := grammarDiffers([]byte(in)); why != "" {
			t.Errorf("%q: %s", in, why)
		}
	}
}
