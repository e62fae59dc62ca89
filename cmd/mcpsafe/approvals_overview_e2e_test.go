package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The built `mcpsafe files` gates calls and writes its journal; the built
// `mcpsafe approvals serve --journal` reads that journal while the gate
// still holds it open, and its overview API counts what the gate did.
func TestApprovalsOverviewReadsARunningGatesJournal(t *testing.T) {
	w := newWorkspace(t)
	answer := "accept"
	cs := w.serve(&mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if answer == "accept" {
			return acceptAll(ctx, r)
		}
		return &mcp.ElicitResult{Action: answer}, nil
	}})
	if res := call(t, cs, "delete_file", map[string]any{"path": "cache.txt"}); res.IsError {
		t.Fatalf("delete: %v", res.Content)
	}
	answer = "decline"
	call(t, cs, "delete_file", map[string]any{"path": "thesis.txt"})
	call(t, cs, "delete_file", map[string]any{"path": "../outside/secret.txt"})

	sf, af := approvalsFiles(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "approvals", "serve", "--listen", "127.0.0.1:0", "--secret-file", sf, "--approvers-file", af, "--journal", w.journal)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	stderr := &lockedBuffer{} // the process writes it while the test reads
	cmd.Stderr = stderr
	must(t, cmd.Start())
	defer func() { cancel(); cmd.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("no banner: %v %s", err, stderr.String())
	}
	go io.Copy(io.Discard, stdout)
	base := regexp.MustCompile(`http://127\.0\.0\.1:\d+`).FindString(line)
	req, _ := http.NewRequest("GET", base+"/api/overview", nil)
	req.Header.Set("Authorization", "Bearer alice-token-0123456789")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	var out struct {
		Journal struct {
			Sources []struct {
				State   string `json:"state"`
				Records int    `json:"records"`
			} `json:"sources"`
			Totals  map[string]int `json:"totals"`
			Reasons map[string]int `json:"refusals_by_reason"`
		} `json:"journal"`
	}
	must(t, json.NewDecoder(resp.Body).Decode(&out))
	j := out.Journal
	if resp.StatusCode != 200 || len(j.Sources) != 1 || j.Sources[0].State != "intact" {
		t.Fatalf("HTTP %d, sources %+v", resp.StatusCode, j.Sources)
	}
	if j.Totals["executed"] != 1 || j.Totals["refused"] != 2 || j.Reasons["declined"] != 1 || j.Reasons["outside_roots"] != 1 {
		t.Fatalf("totals %v, reasons %v: want 1 executed, 2 refused (declined, outside_roots)", j.Totals, j.Reasons)
	}
	if strings.Contains(stderr.String(), "in use") {
		t.Fatalf("the reader contended for the writer's lock: %s", stderr.String())
	}
}
