package proxy

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioSession serves a proxy in front of an in-memory upstream (read-only
// echo) on the stdio lane, with a client that writes raw lines.
func stdioSession(t *testing.T) *lineSession {
	t.Helper()
	up := newSquatter("echo")
	ct, st := mcp.NewInMemoryTransports()
	if _, err := up.srv.Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	s := newProxy(t, ct, nil)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	go s.ServeStdio(ctx, inR, outW)
	t.Cleanup(func() { cancel(); inW.Close(); outR.Close() })
	ls := &lineSession{t: t, in: inW, lines: make(chan []byte, 100)}
	go func() {
		br := bufio.NewReader(outR)
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				close(ls.lines)
				return
			}
			ls.lines <- line
		}
	}()
	ls.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	ls.await(`"id":0`)
	ls.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return ls
}

// A line the SDK could not decode (a byte-order mark, two values on one
// line, a message that is not JSON-RPC 2.0) used to end the client's stdio
// session. It is answered (a parse error or an invalid request, id null)
// and the session goes on: the ping after each is answered.
func TestStdioBadLineKeepsSession(t *testing.T) {
	ls := stdioSession(t)
	for i, tc := range []struct{ line, code string }{
		{"\ufeff" + `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "-32700"},
		{`{"jsonrpc":"2.0","id":2,"method":"ping"} {"jsonrpc":"2.0","id":3,"method":"ping"}`, "-32700"},
		{`{"jsonrpc":"2.0","id":4,"method":"ping"}{"jsonrpc":"2.0","id":5,"method":"ping"}`, "-32700"},
		{`{"jsonrpc":"2.0","id":6,"method":"ping"`, "-32700"},
		{`{"jsonrpc":"1.0","id":7,"method":"ping"}`, "-32600"},
		{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, "-32600"},
	} {
		ls.send(tc.line)
		got := string(ls.await(`"error"`))
		if !strings.Contains(got, `"id":null`) || !strings.Contains(got, tc.code) {
			t.Errorf("%q: answered %s, want %s with id null", tc.line, got, tc.code)
		}
		// Control: the session is still there.
		id := 100 + i
		ls.send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"ping"}`)
		ls.await(`"id":` + strconv.Itoa(id) + `,"result"`)
	}
	// A tab after the value (which the SDK's reader would take for a
	// second value) is only white space.
	ls.send(`{"jsonrpc":"2.0","id":200,"method":"ping"}` + "\t")
	ls.await(`"id":200,"result"`)
}

// An id that parsers may read as another (beyond ±(2^53−1), a fraction,
// an exponent, -0) is refused before the SDK decodes it, with the id as
// the client wrote it; the SDK would have read 9007199254740993 as
// 9007199254740992, and answered, tracked and cancelled it as that. Control:
// the largest plain id, and a string id, work.
func TestStdioUnclearIDRefused(t *testing.T) {
	ls := stdioSession(t)
	for _, id := range []string{"9007199254740993", "9007199254740992", "-9007199254740993", "1.5", "1e3", "1.0", "-0", "18446744073709551617"} {
		ls.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)
		got := string(ls.await(`"error"`))
		if !strings.Contains(got, `"id":`+id+`,`) || !strings.Contains(got, "-32600") || strings.Contains(got, "echo answered") {
			t.Errorf("id %s: answered %s", id, got)
		}
	}
	for _, id := range []string{"9007199254740991", "-9007199254740991", `"9007199254740993"`} {
		ls.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)
		if got := string(ls.await(`"id":` + id + `,`)); !strings.Contains(got, "echo answered") {
			t.Errorf("id %s: answered %s", id, got)
		}
	}
}

// Over HTTP the SDK handler reads ids as on stdio: an unclear one is
// refused (400, the id as written) before it does. Control: a plain id.
func TestHTTPUnclearIDRefused(t *testing.T) {
	_, up := laneUpstream(t)
	_, url := laneProxy(t, up, nil)
	post := func(id string) (int, string) {
		body := `{"jsonrpc":"2.0","id":` + id + `,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, id := range []string{"9007199254740993", "1.5", "-0"} {
		if code, got := post(id); code != http.StatusBadRequest || !strings.Contains(got, `"id":`+id+`,`) || !strings.Contains(got, "-32600") {
			t.Errorf("id %s: HTTP %d %s", id, code, got)
		}
	}
	if code, got := post("9007199254740991"); code != http.StatusOK || !strings.Contains(got, `"id":9007199254740991,"result"`) {
		t.Errorf("plain id: HTTP %d %s", code, got)
	}
}
