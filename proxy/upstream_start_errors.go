package proxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// upstreamStartError says what an upstream did when the connection failed
// before it answered initialize, in place of the SDK's "client is closing:
// EOF" or "invalid character 'h'": it wrote something that is not JSON-RPC
// on its standard output, or it exited (with its status), and where to
// look (its standard error, which the proxy passes through). Other
// failures keep their own words.
func upstreamStartError(t mcp.Transport, err error) error {
	if _, ok := errors.AsType[*json.SyntaxError](err); ok || strings.Contains(err.Error(), "invalid character") {
		return fmt.Errorf("proxy: the upstream wrote something that is not a JSON-RPC message to its standard output before it answered initialize (%v): an MCP server on stdio writes only JSON-RPC there (logs go to its standard error); is the command an MCP server on stdio?", syntaxCause(err))
	}
	u, ok := t.(*UpstreamPipe)
	if !ok {
		return err
	}
	select {
	case <-u.exited:
	case <-time.After(2 * time.Second):
		return err // still running: the error is about something else
	}
	status := "exit status unknown"
	if ps := u.cmd.ProcessState; ps != nil {
		status = ps.String()
	}
	return fmt.Errorf("proxy: the upstream command exited (%s) before it answered initialize: its standard error, passed through above, says why", status)
}

// syntaxCause is the JSON decoder's own words in err ("invalid character
// 'h' looking for beginning of value"), without the wrapping around them.
func syntaxCause(err error) string {
	s := err.Error()
	if i := strings.Index(s, "invalid character"); i >= 0 {
		return s[i:]
	}
	return s
}
