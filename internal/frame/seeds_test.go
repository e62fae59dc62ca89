package frame

// seedFrames are the fuzz target's seeds and the corpus of recorded
// JavaScript and Python readings: every parser-differential attack the
// project fixed (proxy tests name them), each with its exact twin, and
// the traffic of an ordinary session (handshake, calls, progress,
// logging, the upstream's own requests).
var seedFrames = []string{
	// Ordinary traffic.
	`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{}},"sampling":{},"roots":{"listChanged":true}},"clientInfo":{"name":"conformance","version":"0.2.0"}}}` + "\n",
	`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"logging":{}},"serverInfo":{"name":"everything","version":"1"}}}` + "\n",
	`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n",
	`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}` + "\n",
	`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_tool_with_progress","arguments":{},"_meta":{"progressToken":2}}}` + "\n",
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":2,"progress":50,"total":100,"message":"half"}}` + "\n",
	`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"done"}]}}` + "\n",
	`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"test","data":"Tool execution started"}}` + "\n",
	`{"jsonrpc":"2.0","id":"mcpsafe-sdk-1","method":"elicitation/create","params":{"message":"Please provide your information","requestedSchema":{"type":"object","properties":{"name":{"type":"string","default":"John Doe"}}}}}` + "\n",
	`{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":100}}` + "\n",
	`{"jsonrpc":"2.0","id":4,"method":"roots/list"}` + "\n",
	`{"jsonrpc":"2.0","id":4,"result":{"roots":[{"uri":"file:///tmp","name":"tmp"}]}}` + "\n",
	`{"jsonrpc":"2.0","id":5,"error":{"code":-32601,"message":"Method not found"}}` + "\n",
	`{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"echo","arguments":{"text":"héllo ✓ 😀"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
	`{"jsonrpc":"2.0","id":6,"result":{"resultType":"input_required","inputRequests":{"q":{"method":"elicitation/create","params":{"message":"ok?"}}},"requestState":"s"}}`,
	`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"user"}}` + "\n",
	"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}\r\n",

	// The upstream line read as progress by encoding/json and as an
	// elicitation/create with the gate's request id by JS and Python.
	`{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"progressToken":"p1","message":"Show more?","requestedSchema":{"type":"object"}},"Method":"notifications/progress"}` + "\n",
	`{"jsonrpc":"2.0","id":8,"method":"elicitation/create","params":{"message":"Show more?"},"METHOD":null}` + "\n",
	`{"jsonrpc":"2.0","id":1,"method":"notifications/progress","params":{"progressToken":"p1","progress":1}}` + "\n",
	`{"jsonrpc":"2.0","id":7,"result":{},"method":"elicitation/create"}` + "\n",
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"other","progressToken":"p1","progress":1}}` + "\n",
	// Params / paramſ, method beside Method, extra members.
	`{"jsonrpc":"2.0","id":9,"method":"x-vendor/run","Params":{"tool":"delete_thing"}}` + "\n",
	`{"jsonrpc":"2.0","id":9,"method":"x-vendor/run","paramſ":{"tool":"delete_thing"}}` + "\n",
	`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"},"Params":{"name":"delete_thing"}}` + "\n",
	`{"jsonrpc":"2.0","id":9,"method":"x-vendor/run","params":{"tool":"echo"},"extra":1}` + "\n",
	`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","task":{"ttl":1}}}` + "\n",
	// toolſ/call and x-acme/fs.delete (the unknown-method relay's cases).
	`{"jsonrpc":"2.0","id":9,"method":"x-vendor/wrap","params":{"inner":{"method":"toolſ/call","params":{"name":"echo"}}}}` + "\n",
	`{"jsonrpc":"2.0","id":9,"method":"toolſ/call","params":{"name":"delete_thing"}}` + "\n",
	`{"jsonrpc":"2.0","id":9,"method":"x-acme/fs.delete","params":{"path":"/"}}` + "\n",
	`{"jsonrpc":"2.0","id":9,"method":"Tools/Call","params":{"name":"delete_thing","arguments":{}}}` + "\n",
	// Duplicate and folded keys.
	`{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"echo"}}` + "\n",
	`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","name":"delete_thing"}}` + "\n",
	`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"delete_thing","NAME":"echo"}}` + "\n",
	`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","n\u0061me":"delete_thing"}}` + "\n",
	`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","_meta":{"progressToken":1,"progressTo\u212Aen":2}}}` + "\n",
	`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"source":"a","ſource":"b"}}}` + "\n",
	`{"jsonrpc":"2.0","id":6,"result":{"resultType":"input_required","inputRequests":{"q":{"method":"roots/list","Method":"elicitation/create","params":{}}},"requestState":"s"}}`,
	`{"jsonrpc":"2.0","id":6,"result":{"resultType":"input_required","InputRequests":{"q":{"method":"roots/list","params":{}}},"requestState":"s"}}`,
	`{"jsonrpc":"2.0","id":6,"method":"roots/list","METHOD":null,"result":{"content":[]}}`,
	`{"jsonrpc":"2.0","id":6,"method":"roots/list","params":{}}`,
	// Line ends, byte-order mark, encoding, trailing data.
	"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\",\"params\":\r{\"jsonrpc\":\"2.0\",\"id\":6,\"result\":{}}}\n",
	"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}\r\r\n",
	"\ufeff{\"jsonrpc\":\"2.0\",\"id\":6,\"result\":{\"content\":[]}}",
	"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\",\"params\":{\"a\":\"\xff\"}}",
	`{"jsonrpc":"2.0","method":"notifications/x","params":{"\ud800":1,"\ud801":2}}`,
	`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}} {"x":1}`,
	`[{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}]`,
	// Case variants: read alike inside structuredContent (a map to every
	// reader), not in a content item.
	`{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"env":{"PATH":"/bin","path":"x"}}}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a","Text":"b"}],"structuredContent":{}}}`,
	// Ids.
	`{"jsonrpc":"2.0","id":"\u006dcpsafe-sdk-3","method":"tools/call","params":{"name":"echo"}}`,
	`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"echo"}}`,
	`{"jsonrpc":"2.0","id":7.0,"method":"tools/call","params":{"name":"echo"}}`,
	`{"jsonrpc":"2.0","id":1e0,"result":{}}`,
	`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`,
	`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/call","params":{"name":"echo"}}`,
}
