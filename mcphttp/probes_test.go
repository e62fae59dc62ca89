package mcphttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// /healthz says the process serves; /readyz whether it wants traffic:
// not once Ready reports an error (the server is stopping), again when it
// does not. Neither needs a token, even when /mcp does not either.
func TestHealthAndReadiness(t *testing.T) {
	var stopping atomic.Bool
	h := HTTP{Addr: "127.0.0.1:0", Ready: func() error {
		if stopping.Load() {
			return errors.New("stopping")
		}
		return nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- h.Serve(ctx, mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil), pw) }()
	buf := make([]byte, 256)
	n, _ := pr.Read(buf)
	go io.Copy(io.Discard, pr)
	base := regexp.MustCompile(`http://[^/]+`).FindString(string(buf[:n]))
	if base == "" {
		t.Fatalf("no address in %q", buf[:n])
	}
	get := func(path string) int {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if get("/healthz") != 200 || get("/readyz") != 200 {
		t.Fatal("a serving server is not alive and ready")
	}
	stopping.Store(true)
	if get("/readyz") != http.StatusServiceUnavailable || get("/healthz") != 200 {
		t.Fatal("a stopping server still asks for traffic, or says it is dead")
	}
	stopping.Store(false)
	if get("/readyz") != 200 {
		t.Fatal("control: ready again")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
}
