package proxy

import (
	"bufio"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// A stdio client's generation is read from its first line, which stays
// there to be served: an initialize request is 2025-11-25, anything else
// 2026-07-28, and input that ends before a line says nothing. The reader
// returns once the line is there, with the client still connected.
func TestClientProtocolReadFromTheFirstLine(t *testing.T) {
	initialize := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}` + "\n"
	discover := `{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}` + "\n"
	for _, c := range []struct {
		name, in, want string
	}{
		{"initialize", initialize, "2025-11-25"},
		{"initialize of an older version", strings.Replace(initialize, "2025-11-25", "2025-06-18", 1), "2025-11-25"},
		{"initialize, no line end before the input ends", strings.TrimSuffix(initialize, "\n"), "2025-11-25"},
		{"server/discover", discover, "2026-07-28"},
		{"a request of 2026-07-28", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{}}}` + "\n", "2026-07-28"},
		{"initialize as a notification", `{"jsonrpc":"2.0","method":"initialize","params":{}}` + "\n", "2026-07-28"},
		{"initialize named inside another request", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"method":"initialize"}}` + "\n", "2026-07-28"},
		{"not JSON", "hello\n", "2026-07-28"},
		{"a line longer than the buffer", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"x":"` + strings.Repeat("a", 70<<10) + `"}}` + "\n", "2026-07-28"},
		{"no input", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := bufio.NewReaderSize(strings.NewReader(c.in), 64<<10)
			if got := ReadClientProtocol(r); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
			rest, err := io.ReadAll(r)
			if err != nil || string(rest) != c.in {
				t.Fatalf("the input left to serve is not the client's: %d of %d bytes, %v", len(rest), len(c.in), err)
			}
		})
	}

	// The client keeps its end open after its first line, written at
	// once or a byte at a time, and waits for the answer (in a bubble: the
	// wait for the reader takes no real time).
	for _, chunk := range []int{len(initialize), 1} {
		synctest.Test(t, func(t *testing.T) {
			pr, pw := io.Pipe()
			defer pw.Close()
			go func() {
				for b := []byte(initialize); len(b) > 0; b = b[min(chunk, len(b)):] {
					if _, err := pw.Write(b[:min(chunk, len(b))]); err != nil {
						return
					}
				}
			}()
			got := make(chan string, 1)
			go func() { got <- ReadClientProtocol(bufio.NewReaderSize(pr, 64<<10)) }()
			select {
			case v := <-got:
				if v != "2025-11-25" {
					t.Fatalf("an open client's initialize, in chunks of %d: %q", chunk, v)
				}
			case <-time.After(time.Minute):
				t.Fatalf("the first line was there whole (in chunks of %d), yet ReadClientProtocol waits for more input", chunk)
			}
		})
	}
}
