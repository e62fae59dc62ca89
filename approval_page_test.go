package mcpsafe_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approvalpage"
	"github.com/mcpsafe/mcpsafe/approvalpage/pagetest"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pageEnv is a gate whose approval page opens links into a channel (the
// "browser"), and a client declaring the elicitation modes given.
type pageEnv struct {
	*env
	opened chan string
	obs    *approvals // what the gate tells metrics
}

func newPageEnv(t *testing.T, adjust func(*mcpsafe.Options, *[]mcpsafe.Tool)) *pageEnv {
	t.Helper()
	pe := &pageEnv{opened: make(chan string, 8), obs: &approvals{}}
	pe.env = newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
		o.Observer = pe.obs
		p, err := approvalpage.Listen(approvalpage.Options{Addr: "127.0.0.1:0", Clock: o.Clock,
			Open: func(link string) error { pe.opened <- link; return nil }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		o.Page = p
		o.TTL, o.ChannelWait = time.Minute, 30*time.Second
		if adjust != nil {
			adjust(o, tools)
		}
	})
	return pe
}

// pageClient connects a client of protocol (""= the latest) that declares
// the elicitation modes given, sends the URL elicitations it gets to urls
// and answers them with action.
func (pe *pageEnv) pageClient(t *testing.T, protocol string, form, url bool, action string, urls chan<- string, completed chan<- string) *mcp.ClientSession {
	t.Helper()
	caps := &mcp.ClientCapabilities{}
	if form || url {
		caps.Elicitation = &mcp.ElicitationCapabilities{}
		if form {
			caps.Elicitation.Form = &mcp.FormElicitationCapabilities{}
		}
		if url {
			caps.Elicitation.URL = &mcp.URLElicitationCapabilities{}
		}
	}
	opts := &mcp.ClientOptions{Capabilities: caps,
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if r.Params.Mode != "url" {
				t.Errorf("the gate asked for a form although the approval page is configured: %q", r.Params.Message)
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			urls <- r.Params.URL
			return &mcp.ElicitResult{Action: action}, nil
		},
		ElicitationCompleteHandler: func(_ context.Context, r *mcp.ElicitationCompleteNotificationRequest) {
			if completed != nil {
				completed <- r.Params.ElicitationID
			}
		},
	}
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := pe.server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "page-client", Version: "1"}, opts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func receive(t *testing.T, c <-chan string, what string) string {
	t.Helper()
	select {
	case s := <-c:
		return s
	case <-time.After(20 * time.Second):
		t.Fatalf("no %s", what)
		return ""
	}
}

// callAsync calls delete_note in the background.
func callAsync(t *testing.T, cs *mcp.ClientSession, path string) <-chan *mcp.CallToolResult {
	out := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_note", Arguments: map[string]any{"path": path}})
		if err != nil {
			t.Errorf("CallTool: %v", err)
			res = &mcp.CallToolResult{IsError: true}
		}
		out <- res
	}()
	return out
}

func (pe *pageEnv) lastAssurance() string {
	recs := pe.journal.records()
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Decision == journal.PageApproved {
			return recs[i].Assurance
		}
	}
	return ""
}

// A client that takes URL elicitations is sent the page's link, on both
// protocol generations; its "accept" approves nothing; a click on the
// page runs the call once and the journal says page-approved at the local
// page's assurance, not client-accepted.
func TestURLElicitationSendsThePersonToThePage(t *testing.T) {
	for _, protocol := range []string{"2025-11-25", ""} {
		name := protocol
		if name == "" {
			name = "2026-07-28"
		}
		t.Run(name, func(t *testing.T) {
			pe := newPageEnv(t, nil)
			urls, completed := make(chan string, 4), make(chan string, 4)
			cs := pe.pageClient(t, protocol, true, true, "accept", urls, completed)
			res := callAsync(t, cs, "cache.txt")
			link := receive(t, urls, "URL elicitation")
			if !strings.HasPrefix(link, "http://127.0.0.1:") {
				t.Fatalf("link %q", link)
			}
			// The client accepted (agreed to open the page): nothing ran.
			select {
			case r := <-res:
				t.Fatalf("the call ended on the client's accept alone: %s", text(r))
			case <-time.After(100 * time.Millisecond):
			}
			if !pe.notes.has("cache.txt") || len(pe.opened) != 0 {
				t.Fatal("ran on the client's accept, or opened a browser as well")
			}
			if err := pagetest.Decide(link, "approve"); err != nil {
				t.Fatal(err)
			}
			wantExecuted(t, receive2(t, res))
			if pe.notes.has("cache.txt") || pe.notes.executions() != 1 {
				t.Fatalf("approved on the page, executions %d", pe.notes.executions())
			}
			if a := pe.lastAssurance(); a != "local_page" {
				t.Fatalf("journal assurance %q, decisions %v", a, pe.journal.decisions())
			}
			if got := pe.obs.list(); len(got) != 1 || got[0] != "delete_note page-approved local_page" {
				t.Fatalf("the observer (metrics) was told %q", got)
			}
			if slices.Contains(pe.journal.decisions(), journal.ClientAccepted) {
				t.Fatal("the journal says client-accepted for a page approval")
			}
			if protocol != "" {
				if id := receive(t, completed, "elicitation complete"); !strings.HasPrefix(id, "mcpsafe-") {
					t.Fatalf("completion for %q", id)
				}
			}
		})
	}
}

func receive2(t *testing.T, c <-chan *mcp.CallToolResult) *mcp.CallToolResult {
	t.Helper()
	select {
	case r := <-c:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("the call never ended")
		return nil
	}
}

// Accepting the URL elicitation without deciding on the page runs nothing:
// the call ends refused when the wait ends.
func TestURLElicitationAcceptAloneRunsNothing(t *testing.T) {
	for _, protocol := range []string{"2025-11-25", ""} {
		t.Run("protocol="+protocol, func(t *testing.T) {
			pe := newPageEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) {
				o.ChannelTimeout, o.ChannelWait = 300*time.Millisecond, 300*time.Millisecond
			})
			urls := make(chan string, 4)
			cs := pe.pageClient(t, protocol, true, true, "accept", urls, nil)
			res := receive2(t, callAsync(t, cs, "cache.txt"))
			if !res.IsError && structured(t, res)["status"] != "approval_pending" {
				t.Fatalf("ran on the accept alone: %s", text(res))
			}
			if !pe.notes.has("cache.txt") || pe.notes.executions() != 0 {
				t.Fatal("the tool ran without a decision on the page")
			}
		})
	}
}

// A client that cannot elicit at all: the page opens in the user's
// browser, and the click there runs the call; Deny runs nothing.
func TestPageOpensInTheBrowserForClientsWithoutElicitation(t *testing.T) {
	for _, decision := range []string{"approve", "deny"} {
		t.Run(decision, func(t *testing.T) {
			pe := newPageEnv(t, nil)
			cs := pe.pageClient(t, "2025-11-25", false, false, "", nil, nil)
			res := callAsync(t, cs, "todo.txt")
			link := receive(t, pe.opened, "browser opening the page")
			if err := pagetest.Decide(link, decision); err != nil {
				t.Fatal(err)
			}
			r := receive2(t, res)
			if decision == "deny" {
				wantRefused(t, r, mcpsafe.ReasonPageDenied)
				if !pe.notes.has("todo.txt") {
					t.Fatal("denied on the page, but the tool ran")
				}
				// The journal names the page's Deny, not the channel's.
				recs := pe.journal.records()
				if last := recs[len(recs)-1]; last.Reason != mcpsafe.ReasonPageDenied || last.Decision != journal.Refused {
					t.Fatalf("the page's Deny journaled as %+v", last)
				}
				return
			}
			wantExecuted(t, r)
			if pe.notes.has("todo.txt") {
				t.Fatal("approved on the page, but the tool did not run")
			}
			// The second click changes nothing, and the call ran once.
			_, form, _ := pagetest.Open(link)
			if form != "" || pe.notes.executions() != 1 {
				t.Fatalf("after the decision the page still offers buttons (%v) or executions %d", form != "", pe.notes.executions())
			}
		})
	}
}

// A tool whose minimum is the channel's assurance cannot be registered
// where only the page could approve it; one whose minimum is the page's
// refuses a client-relayed path and is approved on the page.
func TestMinimumAssuranceAndThePage(t *testing.T) {
	_, err := mcpsafe.New(mcpsafe.Options{Audience: "a", Journal: journal.Discard, Mode: mcpsafe.ModePage})
	if err == nil || !strings.Contains(err.Error(), "Options.Page") {
		t.Fatalf("mode page without a page: %v", err)
	}
	pe := newPageEnv(t, func(_ *mcpsafe.Options, tools *[]mcpsafe.Tool) {
		(*tools)[0].MinAssurance = mcpsafe.AssuranceLocalPage
	})
	cs := pe.pageClient(t, "2025-11-25", true, false, "", nil, nil)
	res := callAsync(t, cs, "thesis.txt")
	link := receive(t, pe.opened, "browser opening the page")
	if err := pagetest.Decide(link, "approve"); err != nil {
		t.Fatal(err)
	}
	wantExecuted(t, receive2(t, res))

	g, err := mcpsafe.New(mcpsafe.Options{Audience: "a", Journal: journal.Discard, Page: pe.gatePage(t)})
	if err != nil {
		t.Fatal(err)
	}
	tool := newNotes("x").deleteTool()
	tool.MinAssurance = mcpsafe.AssuranceChannel
	if err := g.Register(mcp.NewServer(&mcp.Implementation{Name: "s"}, nil), tool); err == nil || !strings.Contains(err.Error(), "reaches only local_page") {
		t.Fatalf("a channel minimum with only the page: %v", err)
	}
}

func (pe *pageEnv) gatePage(t *testing.T) approver.Page {
	p, err := approvalpage.Listen(approvalpage.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func (r *recorder) records() []journal.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.recs)
}
