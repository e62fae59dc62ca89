//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Final refusals: the call will never run on this handle.
var final = map[string]bool{
	"channel_denied": true, "declined": true, "token_spent": true, "token_expired": true, "token_invalid": true,
	"arguments_changed": true, "target_changed": true, "not_found": true, "policy_denied": true, "timeout": true,
}

// outcome is what one client saw of one path.
type outcome struct {
	path      string
	handle    bool   // it held an approval_pending handle
	result    string // executed, refused:REASON, orphan (no handle), abandoned (still pending at the end)
	transport int    // transport errors while it held the handle (a gate killed under it)
	last      string // the last non-final answer, for the report
}

type workload struct {
	s   *system
	rng func() *rand.Rand

	mu        sync.Mutex
	outcomes  []outcome
	decisions map[string]string // path -> approve | deny, from the API's 200s
	twice     []string          // requests decided twice (two 200s)
	calls     int
}

func (w *workload) gate(r *rand.Rand) string { return w.s.gateURLs[r.IntN(len(w.s.gateURLs))] }

// session connects to a random gate replica.
func (w *workload) session(ctx context.Context, r *rand.Rand) (*mcp.ClientSession, error) {
	cl := mcp.NewClient(&mcp.Implementation{Name: "chaos-client", Version: "1"}, nil)
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return cl.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: w.gate(r), MaxRetries: -1}, nil)
}

// call makes one tools/call on a fresh session of a random replica.
func (w *workload) call(ctx context.Context, r *rand.Rand, args map[string]any) (status, reason, handle string, err error) {
	cs, err := w.session(ctx, r)
	if err != nil {
		return "", "", "", err
	}
	defer cs.Close()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "delete_file", Arguments: args})
	if err != nil {
		return "", "", "", err
	}
	var sc struct {
		Status        string `json:"status"`
		Reason        string `json:"reason"`
		ApprovalToken string `json:"approval_token"`
	}
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &sc)
	}
	switch {
	case !res.IsError && sc.Status == "":
		return "executed", "", "", nil
	case sc.Status == "approval_pending":
		return "pending", "", sc.ApprovalToken, nil
	case sc.Status == "refused":
		return "refused", sc.Reason, "", nil
	}
	return "failed", "", "", nil
}

// client deletes files of its own until stop, then finishes the one it
// holds (retrying its handle until drain ends).
func (w *workload) client(ctx, stop, drain context.Context, id int) {
	r := w.rng()
	for n := 0; stop.Err() == nil; n++ {
		path := fmt.Sprintf("c%03d-%05d.txt", id, n)
		if err := os.WriteFile(filepath.Join(w.s.root, path), []byte(path), 0o644); err != nil {
			w.record(outcome{path: path, result: "setup:" + err.Error()})
			return
		}
		o := outcome{path: path}
		args := map[string]any{"path": path}
		status, reason, handle, err := w.call(ctx, r, args)
		w.count()
		switch {
		case err != nil:
			o.result = "orphan" // the gate died under the first call: no handle
		case status == "pending":
			o.handle = true
			o.result = w.follow(drain, r, path, handle, &o)
		case status == "refused":
			o.result = "refused:" + reason
		default:
			o.result = status
		}
		w.record(o)
		time.Sleep(time.Duration(r.IntN(100)) * time.Millisecond)
	}
}

// follow calls again with the handle, on random replicas, until the call
// has a final outcome or drain ends.
func (w *workload) follow(drain context.Context, r *rand.Rand, path, handle string, o *outcome) string {
	args := map[string]any{"path": path, "approval_token": handle}
	for drain.Err() == nil {
		status, reason, _, err := w.call(drain, r, args)
		w.count()
		switch {
		case err != nil:
			o.transport++
		case status == "executed":
			return "executed"
		case status == "refused" && final[reason]:
			return "refused:" + reason
		default:
			o.last = status + ":" + reason
		}
		time.Sleep(time.Duration(200+r.IntN(300)) * time.Millisecond)
	}
	return "abandoned"
}

func (w *workload) record(o outcome) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.outcomes = append(w.outcomes, o)
}

func (w *workload) count() {
	w.mu.Lock()
	w.calls++
	w.mu.Unlock()
}

// approver decides what is pending, through the API of random replicas,
// until done.
func (w *workload) approver(ctx context.Context, done <-chan struct{}) {
	r := w.rng()
	for {
		select {
		case <-done:
			return
		case <-time.After(time.Duration(50+r.IntN(150)) * time.Millisecond):
		}
		base := w.s.apiURLs[r.IntN(len(w.s.apiURLs))]
		code, body, err := api(ctx, "GET", base+"/api/requests")
		if err != nil || code != 200 {
			continue
		}
		var list struct {
			Requests []struct {
				ID        string          `json:"id"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"requests"`
		}
		if json.Unmarshal(body, &list) != nil || len(list.Requests) == 0 {
			continue
		}
		req := list.Requests[r.IntN(len(list.Requests))]
		var a struct{ Path string }
		json.Unmarshal(req.Arguments, &a)
		action := "approve"
		if r.IntN(100) < 15 {
			action = "deny"
		}
		base = w.s.apiURLs[r.IntN(len(w.s.apiURLs))] // another replica decides
		code, _, err = api(ctx, "POST", base+"/api/requests/"+req.ID+"/"+action)
		if err != nil || code != 200 {
			continue // decided elsewhere, withdrawn, or the replica is down
		}
		w.mu.Lock()
		if prev, ok := w.decisions[a.Path]; ok {
			w.twice = append(w.twice, fmt.Sprintf("%s: %s then %s", a.Path, prev, action))
		}
		w.decisions[a.Path] = action
		w.mu.Unlock()
	}
}
