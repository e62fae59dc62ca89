package main

import (
	"bytes"
	"slices"
	"strconv"
	"testing"
)

// Through the built binary on stdio (the stdio lane open, a command
// upstream): a line the SDK could not decode is answered with a parse
// error and the session goes on; an id the SDK would read as another is
// refused before it does, and the tool does not run. Controls: a ping
// after each bad line, and the largest plain id, which runs the tool.
func TestProxyBinaryStdioBadLinesAndUnclearIDs(t *testing.T) {
	c, ran := startRawProxy(t, "mode: token\n")
	for i, line := range []string{
		"\ufeff" + `{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":2,"method":"ping"} {"jsonrpc":"2.0","id":3,"method":"ping"}`,
	} {
		c.send(line)
		if got := c.await(`"error"`); !bytes.Contains(got, []byte(`"id":null`)) || !bytes.Contains(got, []byte("-32700")) {
			t.Errorf("%q: answered %s", line, got)
		}
		id := strconv.Itoa(100 + i)
		c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
		c.await(`"id":` + id + `,"result"`)
	}
	for _, id := range []string{"9007199254740993", "1.5"} {
		c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)
		if got := c.await(`"id":` + id + `,`); !bytes.Contains(got, []byte("-32600")) {
			t.Errorf("id %s: answered %s", id, got)
		}
	}
	if got := ranTools(t, ran); len(got) != 0 {
		t.Fatalf("the upstream ran %v for refused ids", got)
	}
	c.send(`{"jsonrpc":"2.0","id":9007199254740991,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)
	if got := c.await(`"id":9007199254740991,`); !bytes.Contains(got, []byte(`"result"`)) || !slices.Equal(ranTools(t, ran), []string{"echo"}) {
		t.Fatalf("plain id: %s, ran %v", got, ranTools(t, ran))
	}
}
