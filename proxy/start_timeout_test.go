package proxy

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/internal/serverconf"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An upstream that accepts the connection but never answers initialize
// (or answers initialize but never tools/list) ends NewServer with an
// error naming the flag, instead of hanging the proxy.
func TestStartTimeout(t *testing.T) {
	// stop releases the handlers that never answer, so that the test
	// server can close.
	quiet := func(block string, stop chan struct{}) http.Handler {
		real := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
			return mcp.NewServer(&mcp.Implementation{Name: "slow"}, nil)
		}, &mcp.StreamableHTTPOptions{Stateless: true})
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if block == "" || strings.Contains(readBody(r), block) {
				select {
				case <-r.Context().Done():
				case <-stop:
				}
				return
			}
			real.ServeHTTP(w, r)
		})
	}
	for _, tc := range []struct{ name, block, want string }{
		{"silent", "", "did not answer initialize within"},
		{"no tools/list answer", `"tools/list"`, "did not answer tools/list within"},
		{"control: answers", "never-sent", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stop := make(chan struct{})
			hs := httptest.NewServer(quiet(tc.block, stop))
			defer hs.Close()
			defer close(stop)
			s, err := NewServer(context.Background(), Config{
				Upstream:     &mcp.StreamableClientTransport{Endpoint: hs.URL},
				Gate:         stores(t, serverconf.Config{JournalPath: filepath.Join(t.TempDir(), "journal.jsonl")}),
				StartTimeout: 500 * time.Millisecond,
			})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				s.Close()
				return
			}
			if err == nil {
				s.Close()
				t.Fatal("started")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--upstream-timeout") {
				t.Fatalf("error %q lacks %q", err, tc.want)
			}
		})
	}
}

// readBody returns r's body and puts it back for the next handler.
func readBody(r *http.Request) string {
	b, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	return string(b)
}
